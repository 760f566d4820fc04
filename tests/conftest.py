"""Test-wide settings.

Hypothesis: in CI (`CI=true`, set by .ci/run) the property tests are derandomized, so a landing
is judged on the same examples every time and cannot fail on luck; elsewhere they explore with
fresh random examples (run the suite locally to find new counterexamples, then pin each one as
an explicit test).

Golden files (tests/golden/): every comparison goes through the `golden` fixture, and one switch
rewrites them all (tests/golden_files.py): `KK3_UPDATE_GOLDEN=1 ./run test tests/unit`.

AWS answers (tests/botocore_fields.py): every field the code reads from a botocore answer must be
in the pinned service model's output shape, in every test.

Parallel runs (`./run test` runs pytest-xdist workers, `--dist loadscope`): a module per worker
at a time, and every module with a test on the shared sshd + Slurm on one worker, first, one
test after the other (tests/xdist_groups.py).
"""

import os

import pytest
from hypothesis import settings

from tests import botocore_fields, xdist_groups
from tests.fake_clock import FakeClock
from tests.golden_files import Golden, update_golden

settings.register_profile("ci", derandomize=True, print_blob=True)
settings.register_profile("dev", print_blob=True)
settings.load_profile("ci" if os.environ.get("CI") else "dev")


def pytest_configure(config):
    update_golden()   # a misspelt or retired switch stops the run before any test
    botocore_fields.install()  # every field read from an AWS answer is in the pinned model


@pytest.fixture(autouse=True)
def _aws_reads_are_modeled():
    """Fails a test whose code read a field an AWS answer's model does not have, also from a
    thread (tests/botocore_fields.py)."""
    botocore_fields.take()
    yield
    bad = botocore_fields.take()
    assert not bad, f"read fields the pinned AWS model does not have: {bad}"


def pytest_unconfigure(config):
    xdist_groups.remove_groups_file(config)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    xdist_groups.on_worker(config, items)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    """The controller names the file its workers write the services modules to."""
    node.workerinput[xdist_groups.KEY] = xdist_groups.groups_file(node.config)


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_make_scheduler(config, log):
    if config.getvalue("dist") == "loadscope":
        return xdist_groups.ServicesFirstScheduling(config, log)
    return None


@pytest.fixture(scope="session")
def golden() -> Golden:
    return Golden(update_golden())


@pytest.fixture
def fake_clock() -> FakeClock:
    """Simulated time for code that takes clock/sleep/wait parameters (tests/fake_clock.py)."""
    return FakeClock()

