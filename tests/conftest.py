"""Test-wide settings.

Hypothesis: in CI (`CI=true`, set by .ci/run) the property tests are derandomized, so a landing
is judged on the same examples every time and cannot fail on luck; elsewhere they explore with
fresh random examples (run the suite locally to find new counterexamples, then pin each one as
an explicit test).

Golden files (tests/golden/): every comparison goes through the `golden` fixture, and one switch
rewrites them all (tests/golden_files.py): `KK3_UPDATE_GOLDEN=1 ./run test tests/unit`.

Parallel runs (`./run test` runs pytest-xdist workers, `--dist loadgroup`): every test is put in
an xdist group, so one worker runs a whole group in order: a test module is one group (its
module-scoped servers start once), and every module with a test on the shared sshd + Slurm
(the `services` fixture) is in the one group "services", so those tests never overlap. That
group goes first: it is the longest chain of waits in the suite.
"""

import os

import pytest
from hypothesis import settings

from tests.fake_clock import FakeClock
from tests.golden_files import Golden, update_golden

settings.register_profile("ci", derandomize=True, print_blob=True)
settings.register_profile("dev", print_blob=True)
settings.load_profile("ci" if os.environ.get("CI") else "dev")


def pytest_configure(config):
    update_golden()   # a misspelt or retired switch stops the run before any test


#: the xdist group of the tests that use the shared sshd + Slurm (one worker, one at a time)
SERVICES_GROUP = "services"


def _module(item) -> str:
    return item.nodeid.split("::", 1)[0]


@pytest.hookimpl(tryfirst=True)   # before xdist's own hook reads the marks
def pytest_collection_modifyitems(config, items):
    """xdist groups: a module per group, and all modules that touch the services in one.

    Marks only (a run without xdist ignores them), plus, on an xdist worker, the services
    modules moved to the front (`--no-loadscope-reorder` keeps that order)."""
    services = {_module(i) for i in items if "services" in getattr(i, "fixturenames", ())}
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            module = _module(item)
            item.add_marker(pytest.mark.xdist_group(
                SERVICES_GROUP if module in services else module))
    if hasattr(config, "workerinput"):
        items.sort(key=lambda i: _module(i) not in services)   # stable: order kept within


@pytest.fixture(scope="session")
def golden() -> Golden:
    return Golden(update_golden())


@pytest.fixture
def fake_clock() -> FakeClock:
    """Simulated time for code that takes clock/sleep/wait parameters (tests/fake_clock.py)."""
    return FakeClock()

