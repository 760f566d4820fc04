"""Helpers for the CTyun bootstrap/service tests: real sshd + real 4-node Slurm on this machine.

The fixtures that start them and give each test a directory (`services`, `workspace`) are in
tests/integration/conftest.py; this module holds the helpers the test modules import by name
(inputs of the SSH resources, the doubles' calls and faults, the rendered scripts).

It is also the rig of the figures on these services: bench/ctyun_bootstrap.py and
bench/ctyun_day2.py import `services_env` and the input helpers from here (no test double is
among them: sshd and Slurm are real), so a change here is a change to those scripts too.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from pathlib import Path
from typing import Dict


from components.inference.launch import Runtime, launch
from components.inference.planner import PlanRequest, plan
from components.ctyun_hcc.scripts import API_GUARD_FILE, SlurmLayout, api_guard_files, render_all
from components.ctyun_hcc.service import fingerprint

ROOT = Path(__file__).resolve().parents[2]
START = ROOT / ".ci" / "services" / "start.sh"
IMAGE = "quay.io/ascend/vllm-ascend:kimi-k3-a3"
#: how often the steps poll the test cluster (pollIntervalS): a remote command costs ~0.05 s
#: here, so a short interval only trims the wait past the moment a job or node is ready
POLL_S = 0.25


def services_env(ci_dir: str = "") -> Dict[str, str]:
    """The running services' settings, `export K=V` lines of `<ci dir>/env.sh` (written by
    .ci/services/start.sh; the directory is `ci_dir`, else $KK3_CI_DIR, else /tmp/kimi-k3-ci),
    as a dict: what the `services` fixture gives a test and the bench scripts read."""
    return _env_file(Path(ci_dir or os.environ.get("KK3_CI_DIR", "/tmp/kimi-k3-ci")) / "env.sh")


def _env_file(path: Path) -> Dict[str, str]:
    env = {}
    for line in path.read_text().splitlines():
        if line.startswith("export "):
            k, _, v = line[len("export "):].partition("=")
            env[k] = v.strip('"')
    return env


def sh(cmd: str, check: bool = True) -> subprocess.CompletedProcess:
    """Run a local shell command against the test cluster (the test's own view)."""
    return subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, check=check)


def ssh_props(env: Dict[str, str], **extra) -> Dict:
    """SSH inputs of a dynamic resource pointing at the test master."""
    props = {"sshHost": env["KK3_SSH_HOST"], "sshPort": int(env["KK3_SSH_PORT"]),
             "sshUser": env["KK3_SSH_USER"],
             "sshPrivateKey": Path(env["KK3_SSH_KEY"]).read_text(),
             "commandTimeoutS": 120, "connectTimeoutS": 10}
    props.update(extra)
    return props


def password_props(env: Dict[str, str], **extra) -> Dict:
    """SSH inputs logging in as the password-only user (E-HPC's default: the root password)."""
    props = {"sshHost": env["KK3_SSH_HOST"], "sshPort": int(env["KK3_SSH_PORT"]),
             "sshUser": env["KK3_SSH_PASSWORD_USER"],
             "sshPassword": Path(env["KK3_SSH_PASSWORD_FILE"]).read_text().strip(),
             "commandTimeoutS": 60, "connectTimeoutS": 10}
    props.update(extra)
    return props


def sshd_log_lines(env: Dict[str, str], fragment: str) -> int:
    """How many lines of the test sshd's log contain `fragment` (e.g. 'password for kk3pw')."""
    path = Path(env.get("KK3_SSHD_LOG") or Path(env["KK3_CI_DIR"]) / "log" / "sshd.log")
    return sum(fragment in line for line in path.read_text(errors="replace").splitlines()) \
        if path.exists() else 0


def host_key(env: Dict[str, str]) -> str:
    return " ".join(Path(env["KK3_SSH_HOST_PUB"]).read_text().split()[:2])


def layout_for(base: Path, **kw) -> SlurmLayout:
    return SlurmLayout(work_dir=str(base / "home" / "kimi-k3"),
                       model_dir=str(base / "nvme1" / "model" / "Kimi-K3-w4a8"),
                       sif_dir=str(base / "nvme0" / "apptainer"), binds=(),
                       bcast_modules=(), bcast_mpi="", **kw)


def default_plan_spec(nodes: int = 4, **runtime):
    p = plan(PlanRequest("w4a8", "atlas-800-a3", nodes, max_model_len=131072))
    return p, launch(p, Runtime(image=IMAGE, port=11025, **runtime))


def rendered(base: Path, **runtime):
    p, spec = default_plan_spec(**runtime)
    lay = layout_for(base)
    return p, spec, lay, render_all(p, spec, lay)


def doubles_calls(env: Dict[str, str], tool: str):
    path = Path(env["KK3_DOUBLES_LOG"])
    if not path.exists():
        return []
    calls = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [c for c in calls if c["tool"] == tool]


def inject_fault(env: Dict[str, str], name: str, value: str = "1") -> None:
    d = Path(env["KK3_DOUBLES_STATE"]) / "faults"
    d.mkdir(parents=True, exist_ok=True)
    (d / name).write_text(value)


def clear_faults(env: Dict[str, str]) -> None:
    d = Path(env["KK3_DOUBLES_STATE"]) / "faults"
    for f in d.glob("*") if d.exists() else []:
        f.unlink()


def instances(env: Dict[str, str]) -> Dict[str, list]:
    """Apptainer instances the double knows, per host."""
    root = Path(env["KK3_DOUBLES_STATE"]) / "apptainer"
    return {h.name: sorted(p.stem for p in h.glob("*.json")) for h in root.glob("*")} \
        if root.exists() else {}


def ensure_master_in_queue(env: Dict[str, str]) -> None:
    """The bootstrap order: the master node joins the queue before anything runs on 4 nodes."""
    from components.ctyun_hcc.bootstrap import MasterInQueueProvider
    MasterInQueueProvider().create(ssh_props(
        env, nodeName="kk3n0", queueName="batch", launcherConf=env["KK3_LAUNCHER_CONF"],
        timeoutS=60, pollIntervalS=POLL_S))


def squeue_names() -> str:
    return sh("squeue -h -o '%i %j %T'").stdout


def quote(s: str) -> str:
    return shlex.quote(s)


API_KEY = "sk-kk3-test-8c1f0e2b"
HF_TOKEN = "hf_kk3_test_5d7e"


def prepare(services, base: Path, model_ok: bool = True, nodes: int = 4, **runtime):
    """Weights and SIF in place (as the bootstrap leaves them) and the service inputs."""
    ensure_master_in_queue(services)
    p, spec = default_plan_spec(nodes, **runtime)
    lay = layout_for(base)
    Path(lay.model_dir).mkdir(parents=True, exist_ok=True)
    if model_ok:
        (Path(lay.model_dir) / "config.json").write_text("{}")
    Path(lay.sif_dir).mkdir(parents=True, exist_ok=True)
    (Path(lay.sif_dir) / lay.sif_file).write_bytes(b"SIF")
    files = render_all(p, spec, lay)
    props = ssh_props(
        services, hostKey=host_key(services), workDir=lay.work_dir, jobName=lay.job_name,
        partition="batch", srunSh=files["srun.sh"], nodeSh=files["node.sh"],
        checkSh=files["check.sh"], apiGuardPy=api_guard_files(spec).get(API_GUARD_FILE, ""),
        preflightSh=files["preflight.sh"], watchdogSh=files["watchdog.sh"], rpcPort=spec.rpc_port,
        preflightWaitS=10,
        launchFingerprint=fingerprint(spec.to_dict()),
        devicesPerNode=p.devices_per_node, nodeCount=spec.nodes, port=spec.port,
        servedModelName=spec.served_model_name,
        apiKey=API_KEY if "VLLM_API_KEY" in spec.secret_env else "",
        hfToken=HF_TOKEN if "HF_TOKEN" in spec.secret_env else "",
        headHost="kk3n0", publicHost="127.0.0.1", publicInnerIp="10.77.0.10",
        startupTimeoutS=90, pollIntervalS=POLL_S, cancelTimeoutS=60)
    return props


def no_leftovers(services, job_name="kimi-k3"):
    assert job_name not in squeue_names()
    assert all(not names for names in instances(services).values()), instances(services)
    assert sh("pgrep -f 'doubles/bin/vllm serve'", check=False).stdout.strip() == ""
