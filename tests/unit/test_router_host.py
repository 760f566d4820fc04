"""The router as a service on the CTyun master (components/router/host.py, ctyun_hcc/router_service.py):
the rendered units and scripts, and the guards on every word they carry."""

import subprocess

import pytest

from components.ctyun_hcc.router_service import STEP_INPUTS, RouterServiceProvider, files_of
from components.router import host
from components.router.settings import ROUTER_REQUIREMENTS

URLS = ["http://10.0.0.2:11026", "http://10.0.0.6:11026"]


def _files(**kw):
    return files_of({**STEP_INPUTS, "workerUrls": URLS, **kw})


def test_units_restart_for_ever_and_run_the_router_on_loopback():
    f = _files()
    router, front = f["kimi-k3-router.service"], f["kimi-k3-front.service"]
    for unit in (router, front):
        assert "Restart=always\n" in unit and "RestartSec=2\n" in unit
        assert "StartLimitIntervalSec=0\n" in unit  # never gives up after quick exits
        assert "Environment=PYTHONPATH=/home/kimi-k3/router/site PYTHONUNBUFFERED=1\n" in unit
    exec_router = next(l for l in router.splitlines() if l.startswith("ExecStart="))
    assert exec_router.startswith("ExecStart=/usr/bin/python3 -m vllm_router.launch_router "
                                  "--host 127.0.0.1 --port 30000 --policy cache_aware "
                                  "--worker-urls http://10.0.0.2:11026 http://10.0.0.6:11026 "
                                  "--worker-startup-timeout-secs 7200 ")
    assert "--prometheus-host 127.0.0.1" in exec_router
    assert f["front.argv"] == ("/usr/bin/python3 /home/kimi-k3/router/kk3_front.py --listen "
                               "0.0.0.0:11025 --upstream http://127.0.0.1:30000\n")
    assert f["requirements.txt"].splitlines() == list(ROUTER_REQUIREMENTS)
    assert f["kk3_front.py"] == host.front_source()


def test_scripts_are_valid_bash():
    for name in ("install.sh", "supervise.sh", "service.sh"):
        res = subprocess.run(["bash", "-n"], input=_files()[name], text=True, capture_output=True)
        assert res.returncode == 0, (name, res.stderr)


@pytest.mark.parametrize("urls", [
    [], ["http://10.0.0.2:11026; rm -rf /"], ["http://10.0.0.2:11026\nExecStartPre=/bin/sh"],
    ["http://$(id):1"], ["https://10.0.0.2:1"], ["http://10.0.0.2"], ["http://a b:1"],
    ["http://10.0.0.2:11026/v1"], ["http://user@10.0.0.2:1"],
])
def test_hostile_replica_urls_are_refused(urls):
    with pytest.raises(ValueError):
        _files(workerUrls=urls)
    if urls:
        (failure,) = RouterServiceProvider().check_inputs({**STEP_INPUTS, "workerUrls": urls})
        assert failure.property == "workerUrls"


@pytest.mark.parametrize("key,value", [
    ("routerDir", "/home/kimi k3/router"), ("routerDir", "relative/router"),
    ("routerDir", "/home/../etc"), ("routerDir", "/home/$(id)"), ("routerDir", "/home/a\nb"),
    ("python", "python3; id"), ("python", "/usr/bin/python3 -c x"),
    ("jobName", "kimi k3"), ("jobName", "a\n[Service]"),
])
def test_hostile_words_never_reach_a_unit_or_a_shell(key, value):
    with pytest.raises(ValueError):
        _files(**{key: value})


@pytest.mark.parametrize("port", [30000, 29000])
def test_the_front_cannot_take_the_routers_ports(port):
    with pytest.raises(ValueError, match="also the router's"):
        _files(port=port)


def test_replica_url_from_a_node_address():
    assert host.worker_url("10.77.0.12", 11026) == "http://10.77.0.12:11026"
    for bad in ("10.0.0.1:1", "a b", "", "x/y", "[::1]"):
        with pytest.raises(ValueError):
            host.worker_url(bad, 11026)
