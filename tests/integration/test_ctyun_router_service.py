"""RouterService (ctyun_hcc/router_service.py) over the real local sshd: the pip-installed
vllm-router and kimi-k3's front as services on the "master", in front of two vLLM doubles.

The test master has no systemd, so the services run under the restart loop (supervise.sh), as
uid 65534 (setpriv), not root: a killed router comes back by itself; a second `pulumi up` that
adds or removes a replica tells the running router (no restart, no request lost) and a later
restart keeps that set; `delete` stops both and nothing of theirs is left.
"""

import json
import os
import signal
import sys
import threading
import time
from pathlib import Path

import dill
import pytest

from components.ctyun_hcc.router_service import RouterServiceProvider
from tests.doubles.router_rig import free_port, get, post
from tests.doubles.vllm_openai import DoubleConfig, VllmOpenAIDouble
from tests.integration.slurm_env import host_key, ssh_props


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"


def _wait(ok, what: str, timeout_s: float = 30.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = ok()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"{what} not reached within {timeout_s} s")


def _uids(pid: int):
    """Real, effective, saved and filesystem uid of `pid` (proc(5), /proc/PID/status `Uid:`)."""
    line = next(x for x in Path(f"/proc/{pid}/status").read_text().splitlines() if x.startswith("Uid:"))
    return [int(v) for v in line.split()[1:]]


def _pid(d: Path, name: str):
    try:
        return int((d / f"{name}.child").read_text())
    except (OSError, ValueError):
        return None


@pytest.fixture
def doubles():
    ds = [VllmOpenAIDouble(DoubleConfig(enable_scale_out=True, tpot_s=0.05), port=free_port()).start()
          for _ in range(3)]
    yield ds
    for d in ds:
        d.stop()


def test_provider_pickles_without_state():
    assert isinstance(dill.loads(dill.dumps(RouterServiceProvider())), RouterServiceProvider)


def test_router_and_front_on_the_master_restart_and_stop(services, workspace, doubles):
    d = workspace / "router"
    port, router_port = free_port(), free_port()
    urls = [f"http://127.0.0.1:{x.port}" for x in doubles]
    props = ssh_props(services, hostKey=host_key(services), routerDir=str(d),
                      workerUrls=urls[:2], port=port,
                      routerPort=router_port, metricsPort=free_port(), python=sys.executable,
                      restartS=0, startupTimeoutS=30, readyTimeoutS=60, pollIntervalS=0.2)
    prov = RouterServiceProvider()
    created = prov.create(props)
    pids = {}
    try:
        assert created.outs["supervisor"] == "loop"
        front = f"http://127.0.0.1:{port}"
        assert get(front + "/health")[0] == 200
        # both replicas are the router's workers; a chat goes through the front
        workers = get(f"http://127.0.0.1:{router_port}/list_workers")[1]
        assert all(f"127.0.0.1:{x.port}" in str(workers) for x in doubles[:2]), workers
        code, body = post(front + "/v1/chat/completions",
                          {"model": "Kimi-K3", "max_tokens": 8,
                           "messages": [{"role": "user", "content": "hello"}]})
        assert code == 200 and sum(x.chat_requests for x in doubles) == 1
        # the router's admin routes are not reachable through the public port
        assert post(front + f"/add_worker?url=http://127.0.0.1:{free_port()}")[0] in (404, 405)
        # a router that dies is started again by its supervisor
        pids = {s: _pid(d, s) for s in ("router", "front")}
        assert all(pids.values()) and all(_alive(p) for p in pids.values())
        # neither runs as root: the loop setpriv'd both to 65534 (components/router/host.py)
        assert {s: _uids(p) for s, p in pids.items()} == {"router": [65534] * 4, "front": [65534] * 4}
        os.kill(pids["router"], signal.SIGKILL)
        _wait(lambda: (_pid(d, "router") not in (None, pids["router"])), "a new router")
        _wait(lambda: get(front + "/health")[0] == 200, "the front healthy again")
        assert "restarting in 0 s" in (d / "logs" / "router.log").read_text()
        pids["router"] = _pid(d, "router")
        # status as the master reports it
        status = prov.read("id", created.outs).outs["status"]
        assert "router active" in status and "front active" in status
        created = _resize_without_restart(prov, created.outs, d, front, router_port, urls, doubles)
    finally:
        prov.delete("id", created.outs)
    _wait(lambda: not any(_alive(p) for p in pids.values() if p), "both services stopped", 10)
    assert get(f"http://127.0.0.1:{port}/health")[0] != 200
    assert all(not (d / f"{s}.loop").exists() for s in ("router", "front"))


def _listed(router_port: int):
    return sorted(json.loads(get(f"http://127.0.0.1:{router_port}/list_workers")[1])["urls"])


def _burst(front: str, i: int, width: int = 3) -> None:
    """`width` distinct prompts at once. The cache-aware policy sends a prompt it has no prefix
    for to the replica with the least cached text, but a prompt whose render misses the
    router's time budget (a loaded machine) is routed by load instead, and sent one at a time
    every replica has the same load of 0: requests that overlap (the doubles' tpot_s) give the
    idle new replica the lowest load, so either way it is chosen."""
    threads = [threading.Thread(target=post, args=(front + "/v1/chat/completions", {
        "model": "Kimi-K3", "max_tokens": 4,
        "messages": [{"role": "user", "content": f"{i}.{j} distinct " * 40}]}))
        for j in range(width)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def _resize_without_restart(prov, outs, d, front, router_port, urls, doubles):
    """A second `pulumi up` with a third replica, then without the first: the running router
    is told (same pids, every chat meanwhile answered 200), the units' files hold the new set,
    and a router restarted afterwards by its supervisor serves that set (when an update
    restarts instead: tests/unit/test_router_host.py)."""
    pids = {s: _pid(d, s) for s in ("router", "front")}
    codes, stop = [], threading.Event()

    def traffic():
        while not stop.is_set():
            codes.append(post(front + "/v1/chat/completions",
                              {"model": "Kimi-K3", "max_tokens": 4,
                               "messages": [{"role": "user", "content": f"q{len(codes)}"}]})[0])

    t = threading.Thread(target=traffic)
    t.start()
    try:
        grown = prov.update("id", outs, {**outs, "workerUrls": urls})
        assert grown.outs["workersUpdate"] == "live" and _listed(router_port) == sorted(urls)
        for i in range(30):  # distinct prompts spread over the replicas, the new one too
            if doubles[2].chat_requests:
                break
            _burst(front, i)
        shrunk = prov.update("id", grown.outs, {**grown.outs, "workerUrls": urls[1:]})
        assert shrunk.outs["workersUpdate"] == "live" and _listed(router_port) == sorted(urls[1:])
    finally:
        stop.set()
        t.join()
    assert {s: _pid(d, s) for s in pids} == pids  # nothing restarted
    assert codes and set(codes) == {200}, codes
    assert doubles[2].chat_requests > 0  # the added replica served through the router
    assert f"127.0.0.1:{doubles[0].port}" not in (d / "router.argv").read_text()
    os.kill(pids["router"], signal.SIGKILL)  # the supervisor's restart runs the new set
    _wait(lambda: _pid(d, "router") not in (None, pids["router"]), "a new router")
    _wait(lambda: get(front + "/health")[0] == 200, "the front healthy again")
    assert _listed(router_port) == sorted(urls[1:])
    return shrunk
