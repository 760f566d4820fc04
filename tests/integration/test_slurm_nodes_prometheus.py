"""The CTyun master's Prometheus config (components/ctyun_hcc/monitoring.py) with real parts: a
real Prometheus in the master's network namespace scraping the vLLM double on node 0's cluster
address (behind kimi-k3's API-key guard, the key from a credentials file) and an npu-exporter
double on each of the four test nodes' addresses, each inside that node's network namespace (the
4-node test cluster of .ci/services/start.sh): every Ascend dashboard query returns data."""

from __future__ import annotations

import math
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
import yaml

from components.ctyun_hcc import monitoring
from components.observability import alerts, dashboards
from tests.integration.prometheus_server import Prometheus

ROOT = Path(__file__).resolve().parents[2]
NODES = {"kk3n0": "10.77.0.10", "kk3n1": "10.77.0.11", "kk3n2": "10.77.0.12", "kk3n3": "10.77.0.13"}
PORT = 11025
KEY = "kk3-ctyun-metrics-key-6c1f0a"


def _in_node(node, *argv, env=None):
    return subprocess.Popen(["ip", "netns", "exec", node, sys.executable, *argv], cwd=ROOT,
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _wait_http(url, headers=None, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            httpx.get(url, headers=headers, timeout=1)
            return
        except httpx.HTTPError:
            time.sleep(0.2)
    raise AssertionError(f"{url} did not answer")


@pytest.fixture()
def nodes(services):
    import os
    procs = []
    try:
        env = {**os.environ, "KK3_DOUBLE_KEY": KEY, "PYTHONPATH": str(ROOT)}
        procs.append(_in_node("kk3n0", "-m", "tests.doubles.vllm_openai", "--host", NODES["kk3n0"],
                              "--port", str(PORT), "--metrics-version", "0.23.0", "--engines", "4",
                              "--api-key-env", "KK3_DOUBLE_KEY", "--ttft-s", "0.02", "--tpot-s", "0.002",
                              "--middleware", "components.inference.kk3_api_guard.ApiKeyGuard", env=env))
        for node, addr in NODES.items():
            procs.append(_in_node(node, "-m", "tests.doubles.exporter_doubles", "npu", "--host", addr,
                                  "--port", str(monitoring.NPU_EXPORTER_PORT), env=env))
        _wait_http(f"http://{NODES['kk3n0']}:{PORT}/health")
        # the guard covers /metrics: without the key nothing is scraped
        assert httpx.get(f"http://{NODES['kk3n0']}:{PORT}/metrics", timeout=5).status_code == 401
        for addr in NODES.values():
            _wait_http(f"http://{addr}:{monitoring.NPU_EXPORTER_PORT}/metrics")
        yield
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(5)


def test_the_masters_prometheus_sees_vllm_and_every_npu(nodes, tmp_path):
    doc = monitoring.prometheus_config(head_addr=NODES["kk3n0"], port=PORT,
                                       node_addrs=list(NODES.values()), key_file="key",
                                       scrape_interval="1s")
    with Prometheus(tmp_path, doc, {"alerts.yml": alerts.render(), "key": KEY}) as p:
        p.targets_up(5)  # vLLM + four npu-exporters (no node exporter runs here)
        headers = {"Authorization": f"Bearer {KEY}"}
        for text in ("hello", "hello", "the sea"):
            r = httpx.post(f"http://{NODES['kk3n0']}:{PORT}/v1/chat/completions", headers=headers,
                           json={"model": "Kimi-K3", "max_tokens": 8, "stream": True,
                                 "messages": [{"role": "user", "content": text}]}, timeout=10)
            assert r.status_code == 200
        p.scrapes(3, 1.0)
        empty = [e for e in dashboards.queries("ascend")
                 if not any(math.isfinite(float(s["value"][1]))
                            for s in p.query(dashboards.evaluable(e)))]
        up = {s["metric"]["instance"]: s["value"][1] for s in p.query('up{job="npu-exporter"}')}
        engines = {s["metric"]["engine"] for s in p.query("vllm:kv_cache_usage_perc")}
    assert empty == []
    assert up == {f"{a}:{monitoring.NPU_EXPORTER_PORT}": "1" for a in NODES.values()}
    assert engines == {"0", "1", "2", "3"}  # the API server reports every data-parallel engine


def test_the_config_and_units_are_what_prometheus_and_systemd_take(tmp_path):
    doc = monitoring.prometheus_config(head_addr="192.168.0.10", port=11025,
                                       node_addrs=["192.168.0.10", "192.168.0.11"], key_file="key")
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(doc))
    (tmp_path / "alerts.yml").write_text(alerts.render())
    (tmp_path / "key").write_text(KEY)
    check = subprocess.run(["promtool", "check", "config", "prometheus.yml"], cwd=tmp_path,
                           capture_output=True, text=True)
    assert check.returncode == 0 and "SUCCESS: 3 rules found" in check.stdout, check.stdout + check.stderr
    unit = monitoring.npu_exporter_unit("192.168.0.11")
    assert "-ip=192.168.0.11 -port=8082" in unit and "Restart=always" in unit
    assert monitoring.tunnel_command("203.0.113.5").startswith("ssh -N -L 9090:127.0.0.1:9090 root@203.0.113.5")


@pytest.mark.parametrize("bad", ["0.0.0.0/0", "10.0.0.1;id", "", "256.1.1.1", "10.0.0", "::1"])
def test_an_address_that_is_not_one_is_refused(bad):
    with pytest.raises(ValueError, match="is not an IPv4 address"):
        monitoring.prometheus_config(head_addr=bad, port=1, node_addrs=[])
    with pytest.raises(ValueError, match="is not an IPv4 address"):
        monitoring.npu_exporter_unit(bad)
