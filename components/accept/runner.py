"""One acceptance run: the checks in order, the load part, the report.

`AcceptConfig` holds what a run needs (checked by `validate()`: a ValueError names the option,
the value and the fix). `accept(cfg)` returns the report dict (see report.py). When the server
does not answer `/health` at all (no HTTP answer within the timeout, or no connection), the
remaining checks are not run and are reported failed with that reason: a dead or hung server
costs one timeout, not eight.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Optional

from . import checks as ck
from . import reference
from .client import Client, run_sync, split_endpoint
from .load import judge_load, run_load
from .report import CHECK_NAMES, CheckResult, build

MAX_CONCURRENCY = 1024
MAX_REQUESTS = 100_000


@dataclass(frozen=True)
class AcceptConfig:
    endpoint: str
    model: str
    api_key: Optional[str] = field(default=None, repr=False)
    concurrency: int = 4
    #: load requests; 0 turns the load part off
    requests: int = 16
    max_tokens: int = 256
    #: max_tokens of the load requests (None: `max_tokens`)
    load_max_tokens: Optional[int] = None
    #: bound of every single request, seconds
    timeout_s: float = 120.0
    #: {"accelerator", "node_shape", "nodes"} when known: selects the reference points
    hardware: Optional[Dict[str, Any]] = None

    def validate(self) -> "AcceptConfig":
        split_endpoint(self.endpoint)
        if not self.model or not self.model.strip():
            raise ValueError("--model is empty; give the served model name, e.g. Kimi-K3")
        for name, v, lo, hi in (("concurrency", self.concurrency, 1, MAX_CONCURRENCY),
                                ("requests", self.requests, 0, MAX_REQUESTS),
                                ("max-tokens", self.max_tokens, 1, 1_000_000),
                                ("load-max-tokens", 1 if self.load_max_tokens is None
                                 else self.load_max_tokens, 1, 1_000_000)):
            if not isinstance(v, int) or not lo <= v <= hi:
                raise ValueError(f"--{name} {v!r} is out of range; use {lo} to {hi}")
        if not 0 < float(self.timeout_s) <= 86400:
            raise ValueError(f"--timeout {self.timeout_s!r} is out of range; use 1 to 86400 s")
        return self


async def accept_async(cfg: AcceptConfig,
                       on_check: Optional[Callable[[CheckResult], None]] = None) -> Dict[str, Any]:
    cfg.validate()
    start = time.monotonic()
    results = []

    def record(r: CheckResult) -> None:
        results.append(r)
        if on_check is not None:
            on_check(r)

    wanted = [n for n in CHECK_NAMES
              if not (n == "auth" and not cfg.api_key) and not (n == "load" and cfg.requests == 0)]
    load = None
    async with Client(cfg.endpoint, cfg.api_key, timeout_s=cfg.timeout_s,
                      max_connections=cfg.concurrency + 2) as c:
        seen = ck.Seen()
        h, answered = await ck.health(c)
        record(h)
        dead = not answered
        for name in wanted[1:]:
            if dead:
                record(CheckResult(name, False, "not run: the server did not answer /health"))
                continue
            if name == "models":
                record(await ck.models(c, cfg.model))
            elif name == "chat":
                record(await ck.chat(c, cfg.model, cfg.max_tokens, seen))
            elif name == "stream":
                record(await ck.stream(c, cfg.model, cfg.max_tokens, seen))
            elif name == "reasoning":
                record(await ck.reasoning(c, cfg.model, cfg.max_tokens, seen))
            elif name == "tool_call":
                record(await ck.tool_call(c, cfg.model, cfg.max_tokens))
            elif name == "auth":
                record(await ck.auth(c))
            elif name == "load":
                load = await run_load(c, cfg.model, cfg.requests, cfg.concurrency,
                                      cfg.load_max_tokens or cfg.max_tokens)
                hw = cfg.hardware or {}
                load.reference_points = reference.matching(
                    hw.get("accelerator"), hw.get("node_shape"), hw.get("nodes"))
                record(judge_load(load))
    return build(cfg.endpoint, cfg.model, results, load, time.monotonic() - start, cfg.hardware)


def accept(cfg: AcceptConfig,
           on_check: Optional[Callable[[CheckResult], None]] = None) -> Dict[str, Any]:
    """Synchronous form of `accept_async` (safe inside a running event loop)."""
    return run_sync(lambda: accept_async(cfg, on_check))
