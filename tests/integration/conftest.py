"""Fixtures shared by the integration tests that talk to a real S3 API (moto's server on
loopback, tests/integration/local_s3.py)."""

import pytest

from tests.integration.local_s3 import LocalS3


@pytest.fixture(scope="module")
def s3():
    """One S3 server per test module; each test makes its own bucket (`s3.new_bucket()`)."""
    server = LocalS3().start()
    yield server
    server.stop()


@pytest.fixture
def s3_env(s3, monkeypatch):
    """The server's AWS_* settings in this process's environment, for boto3 inside providers."""
    for k, v in s3.env().items():
        if k.startswith("AWS_"):
            monkeypatch.setenv(k, v)
    return s3
