"""One acceptance run: the checks in order, the load part, the report.

`AcceptConfig` holds what a run needs (checked by `validate()`: a ValueError names the option,
the value and the fix). `accept(cfg)` returns the report dict (see report.py). When the server
does not answer `/health` at all (no HTTP answer within the timeout, or no connection), the
remaining checks are not run and are reported failed with that reason: a dead or hung server
costs one timeout, not eight.

Whatever the server sends, a run ends in a report: a check that meets something its code did
not foresee fails by name ("unexpected answer: ...") instead of raising, and the report, each
result handed to `on_check` and therefore everything printed, written or raised from it, is
scrubbed of the key and of terminal control characters, with each detail cut to
MAX_DETAIL_CHARS.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple

from . import checks as ck
from . import reference
from .client import Client, run_sync, shown_url, split_endpoint
from .known import KNOWN_MAX_TOKENS
from .known_checks import run_known
from .load import judge_load, run_load
from .report import CHECK_NAMES, KNOWN_CHECKS, CheckResult, build
from .scrub import Scrubber

MAX_CONCURRENCY = 1024
MAX_REQUESTS = 100_000
#: a check's detail is cut to this many characters (after scrubbing, so never inside the key)
MAX_DETAIL_CHARS = 600


def _clean(r: CheckResult, scrubber: Scrubber) -> CheckResult:
    detail = scrubber.shown(r.detail)
    if len(detail) > MAX_DETAIL_CHARS:
        detail = detail[:MAX_DETAIL_CHARS - 3] + "..."
    return CheckResult(r.name, r.ok, detail)


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
    #: the known-answer checks (arithmetic, json_schema, needle, greedy_repeat; known.py)
    known: bool = True
    #: max_tokens of a known-answer request (room for reasoning before the answer line)
    known_max_tokens: int = KNOWN_MAX_TOKENS
    #: the needle's longest context, tokens (None: the server's max_model_len from /v1/models)
    context_tokens: Optional[int] = None
    #: at most this many prompt tokens for the needle (None: no cap)
    needle_cap_tokens: Optional[int] = None
    #: OpenAI base URLs of the replicas behind `endpoint` (a router): greedy_replicas asks each
    replicas: Tuple[str, ...] = ()
    #: keys that must be refused (after a rotation: the previous kimi-k3:apiKey; the auth check)
    previous_keys: Tuple[str, ...] = field(default=(), repr=False)

    def validate(self) -> "AcceptConfig":
        split_endpoint(self.endpoint)
        if not self.model or not self.model.strip():
            raise ValueError("--model is empty; give the served model name, e.g. Kimi-K3")
        for name, v, lo, hi in (("concurrency", self.concurrency, 1, MAX_CONCURRENCY),
                                ("requests", self.requests, 0, MAX_REQUESTS),
                                ("max-tokens", self.max_tokens, 1, 1_000_000),
                                ("load-max-tokens", 1 if self.load_max_tokens is None
                                 else self.load_max_tokens, 1, 1_000_000),
                                ("known-max-tokens", self.known_max_tokens, 1, 1_000_000),
                                ("context-tokens", self.context_tokens or 1, 1, 100_000_000),
                                ("needle-cap-tokens", self.needle_cap_tokens or 1, 1,
                                 100_000_000)):
            if not isinstance(v, int) or not lo <= v <= hi:
                raise ValueError(f"--{name} {v!r} is out of range; use {lo} to {hi}")
        if not 0 < float(self.timeout_s) <= 86400:
            raise ValueError(f"--timeout {self.timeout_s!r} is out of range; use 1 to 86400 s")
        for url in self.replicas:
            try:
                split_endpoint(url)
            except ValueError as e:
                raise ValueError(str(e).replace("--endpoint", "--replica", 1)) from None
        return self


def wanted_checks(cfg: AcceptConfig) -> List[str]:
    """The checks this run makes, in the report's order: auth only with an API key, load only
    with requests, the known-answer checks only when asked, greedy_replicas only with replicas."""
    return [n for n in CHECK_NAMES
            if not (n == "auth" and not cfg.api_key) and not (n == "load" and cfg.requests == 0)
            and not (n in KNOWN_CHECKS and not cfg.known)
            and not (n == "greedy_replicas" and not cfg.replicas)]


async def _known_guarded(c: Client, cfg: AcceptConfig, record: Callable[[CheckResult], None],
                         known: List[str], results: List[CheckResult]) -> None:
    """The known-answer checks, all at once, under the same safety net as each other check:
    an unforeseen error fails every one of them not recorded yet, by name."""
    before = {r.name for r in results}
    try:
        await run_known(c, cfg, record, known)
    except Exception as e:  # noqa: BLE001 - the same safety net, per check
        for n in known:
            if n not in before and n not in {r.name for r in results}:
                record(CheckResult(n, False, f"unexpected answer "
                                   f"({type(e).__name__}: {str(e)[:200]})"))


async def accept_async(cfg: AcceptConfig,
                       on_check: Optional[Callable[[CheckResult], None]] = None) -> Dict[str, Any]:
    cfg.validate()
    start = time.monotonic()
    results = []
    scrubber = Scrubber([cfg.api_key, *cfg.previous_keys])

    def record(r: CheckResult) -> None:
        r = _clean(r, scrubber)
        results.append(r)
        if on_check is not None:
            on_check(r)

    async def guarded(name: str, run) -> CheckResult:
        try:
            return await run()
        except Exception as e:  # noqa: BLE001 - the safety net: a report, never a traceback
            return CheckResult(name, False, f"unexpected answer ({type(e).__name__}: "
                                            f"{str(e)[:200]})")

    wanted = wanted_checks(cfg)
    load = None
    async with Client(cfg.endpoint, cfg.api_key, timeout_s=cfg.timeout_s,
                      max_connections=cfg.concurrency + 2, other_secrets=cfg.previous_keys) as c:
        seen = ck.Seen()
        answered = True

        async def health():
            nonlocal answered
            h, answered = await ck.health(c)
            return h

        async def load_check():
            nonlocal load
            load = await run_load(c, cfg.model, cfg.requests, cfg.concurrency,
                                  cfg.load_max_tokens or cfg.max_tokens)
            hw = cfg.hardware or {}
            load.reference_points = reference.matching(
                hw.get("accelerator"), hw.get("node_shape"), hw.get("nodes"))
            return judge_load(load)

        runs = {
            "health": health,
            "models": lambda: ck.models(c, cfg.model),
            "chat": lambda: ck.chat(c, cfg.model, cfg.max_tokens, seen),
            "stream": lambda: ck.stream(c, cfg.model, cfg.max_tokens, seen),
            "reasoning": lambda: ck.reasoning(c, cfg.model, cfg.max_tokens, seen),
            "tool_call": lambda: ck.tool_call(c, cfg.model, cfg.max_tokens),
            "auth": lambda: ck.auth(c, cfg.previous_keys),
            "load": load_check,
        }
        for name in wanted:
            if not answered:
                record(CheckResult(name, False, "not run: the server did not answer /health"))
                continue
            if name in KNOWN_CHECKS:
                known = [n for n in wanted if n in KNOWN_CHECKS]
                if name == known[0]:
                    await _known_guarded(c, cfg, record, known, results)
                continue
            record(await guarded(name, runs[name]))
    report = build(shown_url(cfg.endpoint), cfg.model, results, load,
                   time.monotonic() - start, cfg.hardware)
    return scrubber.report(report)


def accept(cfg: AcceptConfig,
           on_check: Optional[Callable[[CheckResult], None]] = None) -> Dict[str, Any]:
    """Synchronous form of `accept_async` (safe inside a running event loop)."""
    return run_sync(lambda: accept_async(cfg, on_check))
