"""The ctyun-hcc metrics steps (components/ctyun_hcc/metrics_services.py) against the real local
sshd and 4-node Slurm (.ci/services/start.sh): the exporters are installed on the serving nodes
with one `srun -w` step each and keep answering on each node's cluster address after the step
ended (outside the job), one that dies comes back, a binary that is not there is reported and
nothing fails; the master's Prometheus (Debian's real one) comes up on loopback only, scrapes
every node's exporter, holds the API key in a 0600 file; a second run restarts nothing; deleting
both stops everything.

The test nodes run no systemd (no init system here at all), so this exercises the supervising
loop the install script falls back to; the systemd units themselves are checked with
`systemd-analyze verify` (tests/unit/test_ctyun_metrics_units.py). The npu-exporter is a double
(tests/doubles/exporter_doubles.py) behind a wrapper taking the MindX DL guide's flags."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from components.ctyun_hcc import monitoring
from components.ctyun_hcc.metrics_services import (MasterPrometheusProvider, NodeExportersProvider,
                                                    prometheus_yaml)
from components.observability import alerts
from tests.integration.prometheus_server import free_port
from tests.integration.slurm_env import host_key, ssh_props

ROOT = Path(__file__).resolve().parents[2]
NODES = {"kk3n1": "10.77.0.11", "kk3n2": "10.77.0.12"}
KEY = "kk3-ctyun-prom-key-0b9d2e7f41"

#: npu-exporter's command line as the MindX DL guide runs it (`-ip=... -port=... -logFile=...`),
#: serving the npu-exporter double on that address
NPU_WRAPPER = """#!/bin/sh
# (double) npu-exporter: takes the real one's flags, serves tests/doubles/exporter_doubles.py
ip=; port=
for a in "$@"; do case "$a" in -ip=*) ip=${{a#-ip=}};; -port=*) port=${{a#-port=}};; esac; done
cd {root} && exec {python} -m tests.doubles.exporter_doubles npu --host "$ip" --port "$port"
"""


def _until(what, fn, timeout_s=30.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        got = fn()
        if got:
            return got
        time.sleep(0.2)
    raise AssertionError(f"gave up waiting for {what}")


def _answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def _children(pid: int):
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout
    return [int(x) for x in out.split()]


@pytest.fixture()
def rig(services, workspace):
    bin_dir = workspace / "bin"
    bin_dir.mkdir()
    npu = bin_dir / "npu-exporter"
    npu.write_text(NPU_WRAPPER.format(root=ROOT, python=sys.executable))
    npu.chmod(0o755)
    base = ssh_props(services, hostKey=host_key(services), restartS=1, waitS=20,
                     unitDir=str(workspace / "units"))
    nodes = dict(base, nodes=[{"name": n, "addr": a} for n, a in NODES.items()], partition="batch",
                 stateDir=str(workspace / "state"),
                 npuExporterPaths=[str(npu)], nodeExporterPaths=["/nonexistent/node_exporter"])
    conf = workspace / "etc"
    port = free_port()
    # the program's config (metrics_services.prometheus_yaml: key and rules relative to it), with
    # a 1 s scrape interval; Prometheus runs from the login directory, not the config's
    config = prometheus_yaml([("10.77.0.11", list(NODES))], 11025, nodes["nodes"], True).replace(
        "scrape_interval: 15s", "scrape_interval: 1s")
    master = dict(base, config=config, rules=alerts.render(), apiKey=KEY,
                  listen=f"127.0.0.1:{port}", configDir=str(conf), dataDir=str(workspace / "data"),
                  stateDir=str(workspace / "state" / "master"))
    made = []
    try:
        yield {"nodes": nodes, "master": master, "made": made, "ws": workspace, "port": port}
    finally:
        for prov, props in reversed(made):
            prov.delete("x", props)


def test_exporters_and_prometheus_outlive_the_job_and_come_back(rig):
    ws, nodes_p, master_p = rig["ws"], rig["nodes"], rig["master"]
    exporters = NodeExportersProvider()
    rig["made"].append((exporters, nodes_p))  # removed at the end even if create fails half-way
    created = exporters.create(nodes_p)
    report = created.outs["exporters"]
    assert set(report) == set(NODES)
    for node in NODES:
        assert report[node]["npu-exporter"].startswith("up: ")
        assert report[node]["node-exporter"] == "missing: /nonexistent/node_exporter"
    # the srun steps are over: the exporters still answer, each on its node's address only
    for addr in NODES.values():
        assert _answers(f"http://{addr}:{monitoring.NPU_EXPORTER_PORT}/metrics")
    assert not _answers(f"http://127.0.0.1:{monitoring.NPU_EXPORTER_PORT}/metrics")

    # one that dies comes back (the loop's restart, like systemd's Restart=always)
    pidfile = ws / "state" / "kk3n1" / "kimi-k3-npu-exporter.pid"
    loop = int(pidfile.read_text())
    first = _until("the exporter process", lambda: _children(loop))
    for pid in first:
        os.kill(pid, signal.SIGKILL)
    _until("a new exporter process", lambda: [p for p in _children(loop) if p not in first])
    _until("the exporter answering again",
           lambda: _answers(f"http://{NODES['kk3n1']}:{monitoring.NPU_EXPORTER_PORT}/metrics"))

    # a second run changes nothing and restarts nothing
    again = exporters.create(nodes_p)
    assert int(pidfile.read_text()) == loop

    prom = MasterPrometheusProvider()
    rig["made"].append((prom, master_p))
    made = prom.create(master_p)
    # not as root: its own system user (created here), which alone reads the key file and
    # owns the data directory; the npu-exporter double stays root (no hwMindX user here)
    assert made.outs["prometheus"] == f"up: /usr/bin/prometheus as {monitoring.METRICS_USER}"
    assert report["kk3n1"]["npu-exporter"].endswith("as root (no hwMindX user (the MindX DL "
                                                   "install's): the NPU driver's devices may "
                                                   "need root)"), report
    import pwd
    uid = pwd.getpwnam(monitoring.METRICS_USER).pw_uid
    key = ws / "etc" / "key"
    assert key.read_text() == KEY and key.stat().st_mode & 0o777 == 0o600
    assert key.stat().st_uid == uid and (ws / "data").stat().st_uid == uid
    ploop0 = int((ws / "state" / "master" / "kimi-k3-prometheus.pid").read_text())
    server = _until("the Prometheus process", lambda: [
        c for p in _children(ploop0) for c in [p, *_children(p)]
        if Path(f"/proc/{c}/exe").resolve().name == "prometheus"])
    uids = Path(f"/proc/{server[0]}/status").read_text().split("Uid:")[1].split()[:4]
    assert set(uids) == {str(uid)}, uids  # real, effective, saved and filesystem uid
    url = f"http://127.0.0.1:{rig['port']}"

    def npu_up():
        r = httpx.get(f"{url}/api/v1/query", params={"query": 'up{job="npu-exporter"} == 1'}).json()
        return {s["metric"]["instance"] for s in r["data"]["result"]} == \
            {f"{a}:{monitoring.NPU_EXPORTER_PORT}" for a in NODES.values()}

    _until("Prometheus scraping both nodes' npu-exporter", npu_up)
    # the key file is found next to the config (nothing listens on the vLLM port here: the
    # scrape fails on the connection, not on reading the credentials)
    vllm = _until("a vLLM scrape attempt", lambda: [
        t for t in httpx.get(f"{url}/api/v1/targets").json()["data"]["activeTargets"]
        if t["labels"]["job"] == "vllm" and t["lastError"]])
    assert "credentials" not in vllm[0]["lastError"] and "refused" in vllm[0]["lastError"], vllm
    rules = httpx.get(f"{url}/api/v1/rules").json()["data"]["groups"][0]["rules"]
    assert {r["name"] for r in rules} == {r["alert"] for r in alerts.RULES}
    # the same inputs again: Prometheus keeps running
    ploop = int((ws / "state" / "master" / "kimi-k3-prometheus.pid").read_text())
    prom.create(master_p)
    assert int((ws / "state" / "master" / "kimi-k3-prometheus.pid").read_text()) == ploop

    # delete: everything stops
    prom.delete("x", made.outs)
    exporters.delete("x", again.outs)
    rig["made"].clear()
    _until("Prometheus gone", lambda: not _answers(f"{url}/-/ready"))
    for addr in NODES.values():
        _until("exporter gone", lambda: not _answers(f"http://{addr}:{monitoring.NPU_EXPORTER_PORT}/metrics"))


def test_a_prometheus_that_cannot_start_fails_the_step_with_its_log(rig):
    master_p = dict(rig["master"], config="scrape_configs: [{job_name: x, static_configs: oops}]\n",
                    waitS=3)
    prom = MasterPrometheusProvider()
    rig["made"].append((prom, master_p))
    with pytest.raises(RuntimeError, match="did not come up") as e:
        prom.create(master_p)
    assert "oops" in str(e.value) or "yaml" in str(e.value).lower(), str(e.value)
    assert KEY not in str(e.value)


def test_a_node_srun_cannot_reach_is_reported_and_nothing_fails(rig):
    """A node whose srun step fails (here: no such node) is reported; the deploy goes on."""
    props = dict(rig["nodes"], nodes=[{"name": "kk3n9", "addr": "10.77.0.19"}])
    out = NodeExportersProvider().create(props).outs["exporters"]
    assert list(out) == ["kk3n9"] and out["kk3n9"]["srun"].startswith("down: exit "), out
