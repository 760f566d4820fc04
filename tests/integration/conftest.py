"""Fixtures shared by the integration tests (pytest finds them here; test modules never import
fixtures): a real S3 API on loopback (tests/integration/local_s3.py), the local sshd + 4-node
Slurm (`services`, `workspace`; helpers in tests/integration/slurm_env.py) and the CTyun API
emulator (`emulator`, `emu`; tests/emulators/ctyun)."""

import os
import subprocess
import uuid
from pathlib import Path
from typing import Dict

import pytest

from tests.emulators.ctyun.harness import EmulatorProcess
from tests.integration.local_s3 import LocalS3
from tests.integration.slurm_env import START, services_env
from tests.missing import missing

#: the CTyun emulator's job duration for the tests that share `emulator` (seconds)
EMULATOR_JOB_S = 0.08


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


@pytest.fixture(scope="session")
def services() -> Dict[str, str]:
    """Start (or find running) sshd + Slurm; the env.sh values as a dict.

    `.ci/services/start.sh` starts them (idempotent; needs root). When they cannot start, the
    tests fail under CI=true and are skipped only on a developer machine without root."""
    problem = None
    if os.geteuid() != 0:
        problem = "needs root (network namespaces, sshd, slurmd)"
    else:
        res = subprocess.run(["bash", str(START)], capture_output=True, text=True, timeout=300)
        if res.returncode != 0:
            problem = f"start.sh failed:\n{res.stdout}\n{res.stderr}"
    if problem:
        missing(f"CTyun test services unavailable: {problem}")
    env = services_env()
    os.environ["SLURM_CONF"] = env["SLURM_CONF"]
    _new_doubles_log(Path(env["KK3_DOUBLES_LOG"]))
    return env


def _new_doubles_log(log: Path) -> None:
    """Each test session starts with an empty doubles log; the last session's is kept beside it
    (`doubles.log.1`) to read after a failure. The doubles append a line per call for as long as
    the services run, and a test reads the whole log each time it counts calls (it counts from
    a mark it takes itself, so nothing before the session matters); grown over sessions it cost
    every such read more. The doubles open the log for each line, so the next line of a double
    still running from before lands in the new one."""
    if log.exists():
        os.replace(log, log.with_name(log.name + ".1"))


@pytest.fixture
def workspace(services) -> Path:
    """A fresh directory (shared by all test nodes) for one test: work dir, disks, model."""
    base = Path(services["KK3_CI_DIR"]) / "t" / uuid.uuid4().hex[:8]
    base.mkdir(parents=True)
    return base


@pytest.fixture(scope="module")
def emulator():
    """The CTyun API emulator as a separate process, one per test module (a module may define
    its own, as tests/integration/test_ctyun_emulator.py does)."""
    emu = EmulatorProcess(job_seconds=EMULATOR_JOB_S).start()
    try:
        yield emu
    finally:
        emu.stop()


@pytest.fixture
def emu(emulator, monkeypatch):
    """The module's emulator, reset, with this process's CTYUN_* pointing at it."""
    emulator.reset()
    emulator.settings(job_seconds=EMULATOR_JOB_S)
    for key, value in emulator.env().items():
        monkeypatch.setenv(key, value)
    return emulator
