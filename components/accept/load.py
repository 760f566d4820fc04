"""The load part: M streaming requests, at most N in flight, timed on the client.

Each request must succeed (HTTP 200, output, `data: [DONE]`, no error event); any failure fails
the check. Bounded: every request has the client's timeout, and once one request times out no
new one is started (a stuck server would otherwise cost M/N timeouts). `output_tokens_per_s` is
the output tokens of the successful requests over the wall time from the first send to the last
answer, as vLLM's benchmark computes its output throughput.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import List, Optional

from .client import Client, StreamAnswer
from .report import CheckResult, LoadResult
from .stats import p50_p95

LOAD_PROMPT = "Write a short paragraph about the sea."


@dataclass
class _One:
    ok: bool
    why: str = ""
    answer: Optional[StreamAnswer] = None


def _judge(s: StreamAnswer) -> _One:
    st = s.state
    if s.status != 200:
        return _One(False, s.describe(), s)
    if s.error:
        return _One(False, s.error, s)
    if st.error:
        return _One(False, st.error, s)
    if st.first_output_t is None:
        return _One(False, "no output in the stream", s)
    if not st.done:
        return _One(False, "the stream ended without data: [DONE]", s)
    return _One(True, "", s)


async def run_load(c: Client, model: str, requests: int, concurrency: int,
                   max_tokens: int) -> LoadResult:
    stop = asyncio.Event()
    body = {"model": model, "messages": [{"role": "user", "content": LOAD_PROMPT}],
            "max_tokens": int(max_tokens)}
    results: List[_One] = []
    tickets = iter(range(requests))

    async def worker() -> None:
        """One of `concurrency` workers, each with its own connection, taking requests in turn."""
        async with c.worker() as wc:
            for _ in tickets:
                if stop.is_set():
                    results.append(_One(False, "not sent: an earlier request timed out"))
                    continue
                s = await wc.stream_chat(body)
                r = _judge(s)
                if not r.ok and s.error and "within" in s.error:
                    stop.set()
                results.append(r)

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(min(max(1, concurrency), requests))))
    wall = time.perf_counter() - start
    good = [r.answer.state for r in results if r.ok]
    ttfts = [st.ttft_s for st in good if st.ttft_s is not None]
    tpots = [st.tpot_s for st in good if st.tpot_s is not None]
    out_tokens = sum(st.output_tokens for st in good)
    prompts = [st.usage.get("prompt_tokens") for st in good
               if st.usage and isinstance(st.usage.get("prompt_tokens"), int)]
    errors = [r.why for r in results if not r.ok]
    return LoadResult(
        requests=requests, errors=len(errors), concurrency=concurrency,
        ttft_s=p50_p95(ttfts), tpot_s=p50_p95(tpots),
        output_tokens_per_s=round(out_tokens / wall, 2) if good and wall > 0 else None,
        wall_s=round(wall, 3), output_tokens=out_tokens, max_tokens=int(max_tokens),
        prompt_tokens_mean=round(sum(prompts) / len(prompts), 1) if prompts else None,
        first_errors=sorted(set(errors))[:3])


def usd_per_mtok(usd_per_hour: Optional[float], output_tokens_per_s: Optional[float]
                 ) -> Optional[float]:
    """What a million output tokens cost at the measured rate: X / (output tokens per hour / 1e6).
    None when there is no price or no output (a stalled endpoint has no price per token)."""
    if usd_per_hour is None or not output_tokens_per_s or output_tokens_per_s <= 0:
        return None
    return round(usd_per_hour / (output_tokens_per_s * 3600 / 1e6), 4)


def judge_load(load: LoadResult) -> CheckResult:
    if load.errors:
        return CheckResult("load", False, f"{load.errors} of {load.requests} requests failed: "
                                          + "; ".join(load.first_errors))
    p50 = load.ttft_s["p50"]
    return CheckResult("load", True, f"{load.requests} requests at concurrency "
                                     f"{load.concurrency}, no errors; TTFT p50 "
                                     f"{'-' if p50 is None else f'{p50 * 1000:.0f} ms'}; "
                                     f"{load.output_tokens_per_s} output tok/s")
