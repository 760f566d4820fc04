"""Shared pieces of the CTyun integration tests: the emulator fixture and standard inputs.

`cluster_inputs` speaks the cluster provider's input names (owned by the client side, ctapi):
adjust them there when the provider's inputs change. The values come from the emulator's
account (tests/emulators/ctyun/state.py, catalog.py).
"""

from __future__ import annotations

import pytest

from tests.emulators.ctyun.harness import EmulatorProcess
from tests.emulators.ctyun.catalog import CLUSTER_TYPE
from tests.emulators.ctyun.state import AZ, REGION, SUBNET, VPC

PASSWORD = "K3-Passw0rd!"


def cluster_inputs(**over):
    base = dict(regionID=REGION, azName=AZ, clusterName="k3-test", clusterType=CLUSTER_TYPE,
                vpcID=VPC, subnetID=SUBNET, securityGroupName="default", computeNodeCount=3,
                rootPassword=PASSWORD, pollIntervalS=0.05, createTimeoutS=60,
                updateTimeoutS=60, deleteTimeoutS=60)
    base.update(over)
    return base


@pytest.fixture(scope="module")
def emulator():
    emu = EmulatorProcess(job_seconds=0.15).start()
    try:
        yield emu
    finally:
        emu.stop()


@pytest.fixture
def emu(emulator, monkeypatch):
    """The module's emulator, reset, with this process's CTYUN_* pointing at it."""
    emulator.reset()
    emulator.settings(job_seconds=0.15)
    for key, value in emulator.env().items():
        monkeypatch.setenv(key, value)
    return emulator
