"""A real S3 API on loopback for the weights tests: moto's server (PyPI `moto[server]`), run as its
own process on 127.0.0.1, started once per test module and stopped after it.

The AWS CLI (PyPI `awscli`) and boto3 reach it through `AWS_ENDPOINT_URL`, the endpoint override
both read from the environment (AWS SDKs and Tools reference guide, "Service-specific endpoints"),
so the scripts under test run unchanged. Credentials are moto's dummy ones.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

REGION = "us-east-2"
VENV_BIN = str(Path(sys.executable).parent)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LocalS3:
    def __init__(self):
        self.port = _free_port()
        self.proc = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> "LocalS3":
        self.proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1",
                                      "-p", str(self.port)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return self
            except OSError:
                if self.proc.poll() is not None:
                    raise RuntimeError("moto server exited at start")
                time.sleep(0.1)
        raise RuntimeError("moto server did not listen within 30 s")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def env(self, **extra) -> dict:
        """Environment for a script that talks to this S3 (and finds the venv's `aws`)."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "HF_"))}
        env.update({
            "PATH": VENV_BIN + os.pathsep + env.get("PATH", "/usr/bin:/bin"),
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_REGION": REGION,
            "AWS_DEFAULT_REGION": REGION,
            "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
            "AWS_EC2_METADATA_DISABLED": "true",
        })
        env.update(extra)
        return env

    def client(self):
        import boto3

        return boto3.client("s3", endpoint_url=self.endpoint, region_name=REGION,
                            aws_access_key_id="testing", aws_secret_access_key="testing")

    def new_bucket(self) -> str:
        name = f"kk3-test-{uuid.uuid4().hex[:12]}"
        self.client().create_bucket(Bucket=name, CreateBucketConfiguration={"LocationConstraint": REGION})
        return name
