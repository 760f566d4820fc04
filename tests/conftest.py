"""Test-wide settings.

Hypothesis: in CI (`CI=true`, set by .ci/run) the property tests are derandomized, so a landing
is judged on the same examples every time and cannot fail on luck; elsewhere they explore with
fresh random examples (run the suite locally to find new counterexamples, then pin each one as
an explicit test).

Golden files (tests/golden/): every comparison goes through the `golden` fixture, and one switch
rewrites them all (tests/golden_files.py): `KK3_UPDATE_GOLDEN=1 ./run test tests/unit`.
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


@pytest.fixture(scope="session")
def golden() -> Golden:
    return Golden(update_golden())


@pytest.fixture
def fake_clock() -> FakeClock:
    """Simulated time for code that takes clock/sleep/wait parameters (tests/fake_clock.py)."""
    return FakeClock()

