"""Shared pieces of the CTyun integration tests: the emulator fixture and standard inputs.

The emulator (tests/emulators/ctyun, built from tests/contracts/ctyun, never from the client) runs as a
separate process for the module; each test gets it reset, with this process's CTYUN_* pointing
at it. `stack(...)` is a fresh `ctyun_stack.Stack` (the engine's view of the resource chain).
"""

from __future__ import annotations

import pytest

from tests.emulators.ctyun.harness import EmulatorProcess
from tests.integration.ctyun_stack import MASTER_SPEC, PASSWORD, Stack  # noqa: F401

JOB_S = 0.08


@pytest.fixture(scope="module")
def emulator():
    emu = EmulatorProcess(job_seconds=JOB_S).start()
    try:
        yield emu
    finally:
        emu.stop()


@pytest.fixture
def emu(emulator, monkeypatch):
    """The module's emulator, reset, with this process's CTYUN_* pointing at it."""
    emulator.reset()
    emulator.settings(job_seconds=JOB_S)
    for key, value in emulator.env().items():
        monkeypatch.setenv(key, value)
    return emulator


def clean(emu) -> dict:
    """The emulator's report, asserting the ownership invariants every test shares."""
    report = emu.report()
    assert report["foreignTouched"] == [], report["foreignTouched"]
    return report
