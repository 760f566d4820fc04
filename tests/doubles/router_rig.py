"""The real vllm-router (pip-installed, pinned in requirements-dev.txt) in front of vLLM doubles,
on loopback, with kimi-k3's front (kk3_front.py) in front of it (tests and bench/router.py).

    with RouterRig(replicas=3, settings=FAST_SETTINGS) as rig:
        rig.front_url, rig.router_url          # OpenAI base URLs (.../v1)
        rig.kill(1); rig.revive(1)             # stop a replica's server; start it again

The doubles run in this process (tests/doubles/vllm_openai.py, with `--enable-scale-out` so the
render route the router's cache_aware policy needs answers); the router and the front are
processes of their own, started with kimi-k3's own command lines (components/router/settings.py
`RouterSettings.argv`, `front_argv`), so the tests exercise what the targets run. Only the
processes this rig started are stopped, by their pid.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import replace
from pathlib import Path
from typing import Dict, List, Optional

from components.router.settings import FRONT_KEY_ENV, RouterSettings, front_argv

from .vllm_openai import DoubleConfig, VllmOpenAIDouble

ROOT = Path(__file__).resolve().parents[2]
FRONT = ROOT / "components" / "router" / "kk3_front.py"

#: quick health checks so a test sees a replica dropped and taken back within seconds
FAST_SETTINGS = RouterSettings(startup_timeout_s=30, health_check_interval_s=1,
                               health_failure_threshold=2, health_success_threshold=1,
                               health_check_timeout_s=1, cb_failure_threshold=3,
                               cb_success_threshold=1, cb_timeout_s=3, log_level="warning")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def router_binary() -> str:
    """The `vllm-router` console script of this interpreter's environment."""
    here = Path(sys.executable).parent / "vllm-router"
    found = str(here) if here.exists() else shutil.which("vllm-router")
    if not found:
        raise RuntimeError("vllm-router is not installed: pip install -r requirements-dev.txt")
    return found


def get(url: str, timeout: float = 2.0):
    """(status, body text) of a GET; status None when nothing answered."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except OSError:
        return None, ""


def post(url: str, body=None, timeout: float = 10.0, headers: Optional[dict] = None):
    data = json.dumps(body).encode() if body is not None else b""
    req = urllib.request.Request(url, data=data, method="POST",
                                 headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except OSError:
        return None, ""


class RouterRig:
    def __init__(self, replicas: int = 3, settings: RouterSettings = FAST_SETTINGS,
                 double: Optional[DoubleConfig] = None, front: bool = True,
                 front_key: Optional[str] = None):
        self.cfg = double or DoubleConfig(enable_scale_out=True)
        self.n = replicas
        self.ports = [free_port() for _ in range(replicas)]
        self.doubles: List[Optional[VllmOpenAIDouble]] = [None] * replicas
        self.settings = replace(settings, port=free_port(), prometheus_port=free_port())
        self.front_port = free_port() if front else None
        self.front_key = front_key  # the front checks it too (--api-key-env), when given
        self.tmp = Path(tempfile.mkdtemp(prefix="kk3-router-rig-"))
        self.procs: Dict[str, subprocess.Popen] = {}

    # ---- URLs --------------------------------------------------------------------------------
    @property
    def router_root(self) -> str:
        return f"http://127.0.0.1:{self.settings.port}"

    @property
    def router_url(self) -> str:
        return self.router_root + "/v1"

    @property
    def front_root(self) -> str:
        return f"http://127.0.0.1:{self.front_port}"

    @property
    def front_url(self) -> str:
        return self.front_root + "/v1"

    def replica_url(self, i: int) -> str:
        return f"http://127.0.0.1:{self.ports[i]}"

    @property
    def metrics_url(self) -> str:
        return f"http://127.0.0.1:{self.settings.prometheus_port}/metrics"

    # ---- lifecycle -----------------------------------------------------------------------------
    def _start_double(self, i: int) -> None:
        self.doubles[i] = VllmOpenAIDouble(self.cfg, port=self.ports[i]).start()

    def start(self) -> "RouterRig":
        for i in range(self.n):
            self._start_double(i)
        argv = self.settings.argv([self.replica_url(i) for i in range(self.n)])
        argv[0] = router_binary()
        self._spawn("router", argv)
        self._wait(lambda: get(self.router_root + "/readiness")[0] == 200, "router readiness")
        if self.front_port:
            fa = front_argv(f"127.0.0.1:{self.front_port}", self.router_root,
                            python=sys.executable, script=str(FRONT),
                            api_key=self.front_key is not None)
            self._spawn("front", fa, {FRONT_KEY_ENV: self.front_key} if self.front_key else {})
            self._wait(lambda: get(self.front_root + "/health")[0] == 200, "front /health")
        return self

    def _spawn(self, name: str, argv: List[str], env: Optional[Dict[str, str]] = None) -> None:
        log = open(self.tmp / f"{name}.log", "wb")
        self.procs[name] = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL, cwd=ROOT,
                                            env={**os.environ, "PYTHONUNBUFFERED": "1",
                                                 **(env or {})})

    def _wait(self, ok, what: str, timeout_s: float = 30.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if ok():
                return
            for name, p in self.procs.items():
                if p.poll() is not None:
                    raise RuntimeError(f"{name} exited ({p.returncode}): {self.log(name)[-2000:]}")
            time.sleep(0.1)
        raise RuntimeError(f"{what} not reached in {timeout_s} s; router log: "
                           f"{self.log('router')[-2000:]}")

    def log(self, name: str) -> str:
        path = self.tmp / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def kill(self, i: int) -> None:
        """The replica's server goes away: its listening socket and every connection close."""
        d = self.doubles[i]
        if d is not None:
            d.stop()
            d._sock.close()
        self.doubles[i] = None

    def revive(self, i: int) -> None:
        self._start_double(i)

    def stop(self) -> None:
        for p in self.procs.values():
            if p.poll() is None:
                p.terminate()
        for p in self.procs.values():
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(5)
        for i in range(self.n):
            self.kill(i)
        shutil.rmtree(self.tmp, ignore_errors=True)

    def __enter__(self) -> "RouterRig":
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc) -> None:
        self.stop()

    # ---- what happened --------------------------------------------------------------------------
    def served(self, i: int) -> int:
        d = self.doubles[i]
        return d.chat_requests if d is not None else 0

    def workers(self) -> dict:
        """The router's own view (its admin route, on loopback: the operator's view)."""
        status, text = get(self.router_root + "/workers")
        return json.loads(text) if status == 200 else {}

    def router_metric(self, name: str) -> Dict[str, float]:
        """Samples of one of the router's Prometheus metrics: {label text: value}."""
        _, text = get(self.metrics_url)
        out = {}
        for line in text.splitlines():
            if line.startswith(name + "{") or line.startswith(name + " "):
                key, _, value = line.rpartition(" ")
                out[key[len(name):]] = float(value)
        return out


# ---- clients (async, httpx) ------------------------------------------------------------------
async def chat(client, base: str, messages, max_tokens: int = 8, stream: bool = False,
               key: Optional[str] = None) -> Dict[str, object]:
    """One chat completion: {"ok", "content", "error", "started", "ended"} (monotonic times).

    A stream counts as ok only when it ended with `data: [DONE]`."""
    import httpx

    body = {"model": "Kimi-K3", "messages": messages, "max_tokens": max_tokens,
            "temperature": 0, "stream": stream}
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    out: Dict[str, object] = {"ok": False, "content": "", "error": "", "started": time.monotonic()}
    try:
        if not stream:
            r = await client.post(base + "/chat/completions", json=body, headers=headers)
            if r.status_code == 200:
                out["content"] = r.json()["choices"][0]["message"]["content"] or ""
                out["ok"] = True
            else:
                out["error"] = f"HTTP {r.status_code}: {r.text[:120]}"
        else:
            async with client.stream("POST", base + "/chat/completions", json=body,
                                     headers=headers) as r:
                if r.status_code != 200:
                    out["error"] = f"HTTP {r.status_code}"
                else:
                    parts = []
                    async for line in r.aiter_lines():
                        if line == "data: [DONE]":
                            out["ok"] = True
                        elif line.startswith("data: {"):
                            ch = json.loads(line[6:]).get("choices") or [{}]
                            parts.append((ch[0].get("delta") or {}).get("content") or "")
                    out["content"] = "".join(parts)
                    if not out["ok"]:
                        out["error"] = "stream ended without [DONE]"
    except httpx.HTTPError as e:
        out["error"] = f"{type(e).__name__}: {e}"
    out["ended"] = time.monotonic()
    return out


def prefix_hit_ratio(doubles) -> Dict[str, float]:
    """Prefix-cache hit ratio (hit tokens / queried tokens) read from each double's /metrics as
    Prometheus would, summed over the replicas."""
    hits = queries = 0.0
    for d in doubles:
        if d is None:
            continue
        _, text = get(f"http://127.0.0.1:{d.port}/metrics")
        for line in text.splitlines():
            if line.startswith("vllm:prefix_cache_hits_total{"):
                hits += float(line.rsplit(" ", 1)[1])
            elif line.startswith("vllm:prefix_cache_queries_total{"):
                queries += float(line.rsplit(" ", 1)[1])
    return {"hits": hits, "queries": queries, "ratio": hits / queries if queries else 0.0}
