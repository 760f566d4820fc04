"""kimi-k3's API-key guard, for real: the shipped kk3_api_guard.py in a real ASGI server (uvicorn)
in front of the double of vLLM's app (tests/doubles/vllm_app_double.py: vLLM 0.33.0's route list
and middleware wiring), loaded the way `vllm serve --middleware` loads it: an import path found on
PYTHONPATH. Each server is a subprocess, like the API server process in the container.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
import websocket  # websocket-client

from components.inference import api_guard
from tests.doubles.vllm_app_double import MOUNTS, ROUTES

REPO = Path(__file__).resolve().parents[2]
KEY = "kk3-test-key-7f3a9c"
WRONG = "kk3-wrong-key-41d0e2"
GUARDED = "kk3_api_guard.ApiKeyGuard"
VLLM_401 = b'{"error":"Unauthorized"}'


class Server:
    """`python -m uvicorn --factory tests.doubles.vllm_app_double:from_env` on a socket we hold."""

    def __init__(self, tmp: Path, key, middleware=(), root_path: str = ""):
        guard_dir = tmp / "api-guard"
        guard_dir.mkdir(exist_ok=True)
        (guard_dir / api_guard.FILE_NAME).write_text(api_guard.source())  # the shipped text
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        env = {k: v for k, v in os.environ.items() if k not in ("VLLM_API_KEY", "PYTHONPATH")}
        env.update(PYTHONPATH=f"{guard_dir}{os.pathsep}{REPO}",
                   KK3_DOUBLE_MIDDLEWARE=",".join(middleware))
        if key is not None:
            env["VLLM_API_KEY"] = key
        cmd = [sys.executable, "-m", "uvicorn", "--factory", "tests.doubles.vllm_app_double:from_env",
               "--fd", str(self.sock.fileno()), "--log-level", "info"]
        if root_path:
            cmd += ["--root-path", root_path]
        self.log = tmp / f"uvicorn-{self.port}.log"
        self.proc = subprocess.Popen(cmd, cwd=tmp, env=env, pass_fds=[self.sock.fileno()],
                                     stdout=self.log.open("wb"), stderr=subprocess.STDOUT)
        self.url = f"http://127.0.0.1:{self.port}"

    def wait_up(self, timeout_s: float = 30) -> "Server":
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"uvicorn exited {self.proc.returncode}: {self.log.read_text()}")
            if "Application startup complete" in self.log.read_text():
                return self
            time.sleep(0.05)
        raise AssertionError(f"uvicorn did not start: {self.log.read_text()}")

    def stop(self) -> str:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
        self.sock.close()
        return self.log.read_text()


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    """guarded: vLLM's own key check + kimi-k3's guard; vllm: vLLM's check alone."""
    made = {
        "guarded": Server(tmp_path_factory.mktemp("guarded"), KEY, [GUARDED]),
        "vllm": Server(tmp_path_factory.mktemp("vllm"), KEY),
        "rooted": Server(tmp_path_factory.mktemp("rooted"), KEY, [GUARDED], root_path="/api"),
    }
    try:
        yield {name: s.wait_up() for name, s in made.items()}
    finally:
        logs = {name: s.stop() for name, s in made.items()}
        for name, text in logs.items():  # the key never reaches a log line, right or wrong
            assert KEY not in text and WRONG not in text, f"{name} logged a key"


def _call(base, method, path, key=None, headers=(), scheme="Bearer"):
    h = [("Content-Type", "application/json"), *headers]
    if key is not None:
        h.append(("Authorization", f"{scheme} {key}"))
    return httpx.request(method, base + path, headers=h, content=b"{}" if method == "POST" else None,
                         timeout=10)


def _concrete(path: str) -> str:
    return path.replace("{response_id}", "resp_123")


HTTP_ROUTES = [(m, _concrete(p)) for m, p, _ in ROUTES if m != "WEBSOCKET"] \
    + [("GET", path) for path, _ in MOUNTS] + [("GET", MOUNTS[0][0] + "/sub")]


def test_vllm_alone_leaves_serving_routes_open(servers):
    """The gap (vllm-project/vllm#58144), shown on the double: vLLM's own check skips these."""
    base = servers["vllm"].url
    for path in ("/invocations", "/tokenize", "/detokenize", "/generative_scoring",
                 "/scale_elastic_ep", "/pooling", "/classify", "/score", "/rerank"):
        r = _call(base, "POST", path)
        assert r.status_code == 200 and r.json() == {"route": path}, path
    assert _call(base, "POST", "/v1/chat/completions").status_code == 401


@pytest.mark.parametrize("method,path", [mp for mp in HTTP_ROUTES if mp != ("GET", "/health")],
                         ids=lambda x: x)
def test_every_route_but_health_needs_the_key(servers, method, path):
    base = servers["guarded"].url
    for key in (None, WRONG, KEY + "x", KEY[:-1]):
        r = _call(base, method, path, key)
        assert (r.status_code, r.content) == (401, VLLM_401), (method, path, key)
    r = _call(base, method, path, KEY)
    assert r.status_code == 200, (method, path, r.text)
    want = path if not path.startswith("/metrics") else "/metrics"
    assert r.json() == {"route": want if "resp_" not in path else path.replace("resp_123", "{response_id}")}


def test_the_refusal_is_vllms_own(servers):
    """Status, headers (but date/server) and body: the same as vLLM's own 401 on /v1."""
    ours = _call(servers["guarded"].url, "POST", "/invocations")
    theirs = _call(servers["vllm"].url, "POST", "/v1/chat/completions")

    def shape(r):
        return r.status_code, [(k, v) for k, v in r.headers.raw if k.lower() not in (b"date", b"server")], r.content

    assert shape(ours) == shape(theirs)
    assert ours.headers["content-type"] == "application/json" and "www-authenticate" not in ours.headers


def test_health_stays_open_and_only_health(servers):
    base = servers["guarded"].url
    assert _call(base, "GET", "/health").status_code == 200
    assert _call(base, "HEAD", "/health").status_code == 200
    for method, path in (("POST", "/health"), ("GET", "/health/"), ("GET", "/healthz"),
                         ("GET", "/v1/health"), ("GET", "/health/../invocations"),
                         ("GET", "/%68ealth/x"), ("GET", "/ping"), ("GET", "/metrics"),
                         ("GET", "/version"), ("GET", "/load")):
        assert _call(base, method, path).status_code == 401, (method, path)


def test_bearer_rule_is_vllms(servers):
    base = servers["guarded"].url
    assert _call(base, "POST", "/invocations", KEY, scheme="bearer").status_code == 200
    assert _call(base, "POST", "/invocations", KEY, scheme="BEARER").status_code == 200
    for scheme, key in (("Basic", KEY), ("Bearer", " " + KEY), ("Bearer", KEY + " x"),
                        ("Token", KEY), ("Bearer:", KEY)):
        assert _call(base, "POST", "/invocations", key, scheme=scheme).status_code == 401, scheme
    no_scheme = httpx.post(base + "/invocations", headers={"Authorization": KEY}, timeout=10)
    assert no_scheme.status_code == 401
    # the first Authorization header counts, as in vLLM (Starlette's Headers.get)
    two = httpx.post(base + "/invocations", timeout=10, headers=[
        ("Authorization", f"Bearer {WRONG}"), ("Authorization", f"Bearer {KEY}")])
    assert two.status_code == 401


def test_cors_preflight_is_answered_by_cors_and_reaches_no_route(servers):
    base = servers["guarded"].url
    pre = httpx.options(base + "/v1/chat/completions", timeout=10, headers={
        "Origin": "https://app.example", "Access-Control-Request-Method": "POST"})
    # vLLM 0.33.0 allows no origin by default: CORSMiddleware refuses, the route is never reached
    assert pre.status_code == 400 and "route" not in pre.text
    assert httpx.options(base + "/v1/chat/completions", timeout=10).status_code == 401
    assert httpx.options(base + "/invocations", timeout=10,
                         headers={"Origin": "https://app.example"}).status_code == 401


def test_websocket_needs_the_key(servers):
    url = servers["guarded"].url.replace("http://", "ws://") + "/v1/realtime"
    with pytest.raises(websocket.WebSocketBadStatusException) as refused:
        websocket.create_connection(url, timeout=10)
    assert refused.value.status_code == 401 and refused.value.resp_body == VLLM_401
    with pytest.raises(websocket.WebSocketBadStatusException):
        websocket.create_connection(url, timeout=10, header=[f"Authorization: Bearer {WRONG}"])
    ws = websocket.create_connection(url, timeout=10, header=[f"Authorization: Bearer {KEY}"])
    try:
        assert ws.recv() == "reached /v1/realtime"
    finally:
        ws.close()


def test_root_path_as_vllm_strips_it(servers):
    """Behind a path-routing proxy (`--root-path /api`): uvicorn puts the root path in front of
    the path it received (scope path `/api/health`); the guard strips it, as vLLM does."""
    base = servers["rooted"].url
    assert _call(base, "GET", "/health").status_code == 200
    assert _call(base, "POST", "/invocations").status_code == 401
    assert _call(base, "POST", "/invocations", KEY).status_code == 200
    assert _call(base, "GET", "/api/health").status_code == 401  # /api/api/health: not open


def test_no_key_stops_the_server_before_it_listens(tmp_path):
    """The guard is constructed while the app is built (as in vLLM): no key, no server."""
    s = Server(tmp_path, None, [GUARDED])
    try:
        assert s.proc.wait(30) != 0
        text = s.log.read_text()
        assert "VLLM_API_KEY is empty or unset" in text and "startup complete" not in text
    finally:
        s.stop()
