"""The router front against clients without the API key that send big bodies: its peak memory
and the time to their answer, with the key checked by the front (`--api-key-env`, what kimi-k3
runs) and without (the replicas alone check it, as before).

    .venv/bin/python bench/hostile_front.py [--clients 16] [--body-mib 60]

Each client announces and sends a `--body-mib` MiB chat request without Authorization. The
front (components/router/kk3_front.py, its own process) forwards to an upstream on loopback
that answers every request 401 as vLLM does (standing in for router + replicas, so only the
front's cost is measured). Printed per mode: answers by status, the slowest answer, the
front's peak RSS (VmHWM) and how many body bytes the clients got to send.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from components.router.settings import FRONT_KEY_ENV, front_argv  # noqa: E402

FRONT = ROOT / "components" / "router" / "kk3_front.py"
KEY = "bench-hostile-front-key-0123456789abcdef"


class Upstream(BaseHTTPRequestHandler):
    """401 for everything, body drained first (what vLLM answers a request without the key)."""

    def do_POST(self):
        left = int(self.headers.get("Content-Length") or 0)
        while left:
            left -= len(self.rfile.read(min(left, 1 << 20)) or b"x" * left)
        body = b'{"error":"Unauthorized"}'
        self.send_response(401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST

    def log_message(self, *a):
        pass


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def peak_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def client(port: int, body_mib: int) -> tuple:
    """(status, seconds to the answer, body bytes sent)."""
    started = time.monotonic()
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    total = body_mib << 20
    writer.write(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: "
                 b"application/json\r\nContent-Length: %d\r\n\r\n" % total)
    chunk, sent = b"a" * (1 << 20), 0

    async def send():
        nonlocal sent
        try:
            while sent < total:
                writer.write(chunk)
                await writer.drain()
                sent += len(chunk)
        except (ConnectionError, OSError):
            pass

    sender = asyncio.ensure_future(send())
    try:
        line = await asyncio.wait_for(reader.readline(), 120)
    except (ConnectionError, asyncio.TimeoutError):
        line = b""
    took = time.monotonic() - started
    sender.cancel()
    writer.close()
    status = int(line.split()[1]) if line.startswith(b"HTTP/1.1 ") else 0
    return status, took, sent


def run(mode: str, clients: int, body_mib: int, upstream_port: int) -> dict:
    port = free_port()
    checked = mode == "front checks the key"
    argv = front_argv(f"127.0.0.1:{port}", f"http://127.0.0.1:{upstream_port}",
                      python=sys.executable, script=str(FRONT), api_key=checked)
    env = {**os.environ, **({FRONT_KEY_ENV: KEY} if checked else {})}
    front = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        base = peak_rss_mib(front.pid)

        async def all_clients():
            return await asyncio.gather(*[client(port, body_mib) for _ in range(clients)])

        started = time.monotonic()
        results = asyncio.run(all_clients())
        wall = time.monotonic() - started
        statuses = {}
        for status, _, _ in results:
            statuses[status] = statuses.get(status, 0) + 1
        return {"mode": mode, "statuses": statuses, "slowest_s": max(r[1] for r in results),
                "wall_s": wall, "peak_rss_mib": peak_rss_mib(front.pid), "idle_rss_mib": base,
                "sent_mib": sum(r[2] for r in results) / (1 << 20)}
    finally:
        front.terminate()
        try:
            front.wait(10)
        except subprocess.TimeoutExpired:  # aiohttp's graceful shutdown waits for connections
            front.kill()
            front.wait(10)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--clients", type=int, default=16)
    p.add_argument("--body-mib", type=int, default=60)
    a = p.parse_args()
    upstream = ThreadingHTTPServer(("127.0.0.1", 0), Upstream)
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    print(f"{a.clients} clients without the key, each sending a {a.body_mib} MiB body "
          f"(load average {os.getloadavg()[0]:.1f})")
    for mode in ("front checks the key", "replicas alone check it"):
        r = run(mode, a.clients, a.body_mib, upstream.server_address[1])
        print(f"{r['mode']:<24} answers {r['statuses']}  slowest {r['slowest_s']:.2f} s  "
              f"front peak RSS {r['peak_rss_mib']:.0f} MiB (idle {r['idle_rss_mib']:.0f})  "
              f"body sent {r['sent_mib']:.0f} MiB")
    upstream.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
