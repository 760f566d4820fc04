"""The accept command's own overhead, against the vLLM server double on this machine.

Prints (1) requests per second the load part can drive when the double answers at once
(TTFT 0, TPOT 0, 4 tokens: 7 SSE events per request), per concurrency, with the client
process's own CPU time per request (so 1000 / that = what one core of client could drive), and
(2) the error between the TTFT/TPOT the load part measures and the double's configured ones,
per concurrency. The double runs in its own process; client and double share the machine's
two cores (and whatever else runs on them: the load average is printed first).

    .venv/bin/python bench/accept_overhead.py [--requests 400] [--repeat 3]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from components.accept.client import Client  # noqa: E402
from components.accept.load import run_load  # noqa: E402
ROOT = Path(__file__).resolve().parents[1]


@contextmanager
def double_process(ttft_s: float, tpot_s: float, reasoning_tokens: int = 3):
    """The double in its own process (its own interpreter lock, as a real server has)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    p = subprocess.Popen([sys.executable, "-m", "tests.doubles.vllm_openai", "--port", str(port),
                          "--ttft-s", str(ttft_s), "--tpot-s", str(tpot_s),
                          "--reasoning-tokens", str(reasoning_tokens)], cwd=ROOT,
                         stdout=subprocess.DEVNULL)
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        p.terminate()
        p.wait(10)


async def _load(url, requests, concurrency, max_tokens):
    async with Client(url, None, timeout_s=120, max_connections=concurrency + 2) as c:
        return await run_load(c, "Kimi-K3", requests, concurrency, max_tokens)


def throughput(requests: int, repeat: int) -> None:
    print("## requests per second the load part drives (double answers at once, 4 tokens)")
    print("| concurrency | requests | req/s median | req/s min | req/s max | client CPU ms/request "
          "| errors |")
    print("|---|---|---|---|---|---|---|")
    with double_process(0, 0, 0) as url:
        for conc in (1, 4, 16, 64):
            rates, cpu, errors = [], [], 0
            for _ in range(repeat):
                t, c0 = time.perf_counter(), time.process_time()
                r = asyncio.run(_load(url, requests, conc, 4))
                rates.append(requests / (time.perf_counter() - t))
                cpu.append((time.process_time() - c0) / requests * 1000)
                errors += r.errors
            print(f"| {conc} | {requests} | {statistics.median(rates):.0f} | {min(rates):.0f} | "
                  f"{max(rates):.0f} | {statistics.median(cpu):.2f} | {errors} |")


def timing_error(repeat: int) -> None:
    ttft, tpot, tokens = 0.200, 0.020, 50
    print(f"\n## measured vs configured timing (double: TTFT {ttft * 1000:.0f} ms, TPOT "
          f"{tpot * 1000:.0f} ms, {tokens} tokens per request)")
    print("| concurrency | requests | TTFT p50 ms | TTFT p95 ms | TTFT p50 error ms | "
          "TPOT p50 ms | TPOT p95 ms | TPOT p50 error % |")
    print("|---|---|---|---|---|---|---|---|")
    with double_process(ttft, tpot) as url:
        for conc in (1, 16, 64):
            n = max(8, conc * 2)
            rows = [asyncio.run(_load(url, n, conc, tokens)) for _ in range(repeat)]
            t50 = statistics.median(r.ttft_s["p50"] for r in rows)
            t95 = statistics.median(r.ttft_s["p95"] for r in rows)
            p50 = statistics.median(r.tpot_s["p50"] for r in rows)
            p95 = statistics.median(r.tpot_s["p95"] for r in rows)
            print(f"| {conc} | {n} | {t50 * 1000:.1f} | {t95 * 1000:.1f} | "
                  f"{(t50 - ttft) * 1000:+.1f} | {p50 * 1000:.2f} | {p95 * 1000:.2f} | "
                  f"{(p50 - tpot) / tpot * 100:+.1f} |")


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--requests", type=int, default=400)
    p.add_argument("--repeat", type=int, default=3)
    a = p.parse_args()
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())} "
          f"({os.cpu_count()} cores)\n")
    throughput(a.requests, a.repeat)
    timing_error(a.repeat)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
