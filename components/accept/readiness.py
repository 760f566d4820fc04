"""Wait until an endpoint really serves: /health, then /v1/models listing the model, then one
real chat completion, each gate passed once and in order, until a deadline.

This is the readiness gate both targets use before their acceptance checks: a load balancer
that answers before vLLM has loaded its weights, or a server that lists the model while its
engine is still warming up, does not count as ready. It returns what it last saw, so a caller
can fail `pulumi up` with a message that says where the wait stopped.

Bounded: each poll request gets at most `request_timeout_s` and never runs past the deadline;
sleeping never crosses it either. `clock` and `sleep` are the real ones unless a caller (a test
in simulated time) hands in its own. Whatever a poll sees (no answer, an error, a body that is
not JSON, `{"data": null}`, JSON nested a thousand deep, something the code did not foresee)
is one more failed poll, retried until the deadline: the wait never raises on a server's
answer. `last_seen` is scrubbed of the key and cut short, as everything `accept` shows.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Awaitable, Callable, Optional

from .client import Client, run_sync, shown_url
from .protocol import ProtocolError, first_message, short

#: the longest `last_seen` kept (it ends up in a `pulumi up` error)
MAX_SEEN_CHARS = 300

GATES = ("health", "models", "chat")


@dataclass(frozen=True)
class Readiness:
    ready: bool
    #: the gate the wait got to: health, models, chat, or "ready"
    stage: str
    #: what the last poll saw, e.g. "GET /health: HTTP 503" or "cannot connect: ..."
    last_seen: str
    elapsed_s: float
    polls: int

    def error_message(self, endpoint: str, timeout_s: float) -> str:
        return (f"{shown_url(endpoint)} not ready within {timeout_s:g} s: waiting for {self.stage} "
                f"({self.polls} polls); last seen: {self.last_seen}")


async def _gate(c: Client, gate: str, model: str, timeout_s: float):
    """(passed, what was seen) for one poll of `gate`."""
    if gate == "health":
        a = await c.request("GET", "/health", root=True, key=None, timeout_s=timeout_s)
        return a.status == 200 and not a.error, f"GET /health: {a.describe()}"
    if gate == "models":
        a = await c.request("GET", "/models", timeout_s=timeout_s)
        if a.status != 200 or a.error:
            return False, f"GET /v1/models: {a.describe()}"
        data = a.body.get("data") if isinstance(a.body, dict) else None
        if not isinstance(data, list):
            return False, f"GET /v1/models: 200 but not a model list: {short(a.text, 80)}"
        ids = [m.get("id") for m in data if isinstance(m, dict)]
        if model not in ids:
            return False, (f"GET /v1/models: 200 but {model!r} is not listed (lists "
                           f"{short(ids, 80)})")
        return True, f"GET /v1/models lists {model!r}"
    a = await c.chat({"model": model, "messages": [{"role": "user", "content": "Say ready."}],
                      "max_tokens": 16}, timeout_s=timeout_s)
    if a.status != 200 or a.error:
        return False, f"POST /v1/chat/completions: {a.describe()}"
    try:
        if a.body is None:
            raise ProtocolError(f"the answer is not JSON: {short(a.text, 80) or '(empty)'}")
        _, finish = first_message(a.body)
    except ProtocolError as e:
        return False, f"POST /v1/chat/completions: 200 but {e}"
    return True, f"a chat completion answered (finish_reason {short(finish, 40)}): {short(a.text, 80)}"


async def wait_ready_async(endpoint: str, model: str, api_key: Optional[str] = None,
                           timeout_s: float = 600.0, poll_interval_s: float = 10.0,
                           request_timeout_s: float = 30.0,
                           on_poll: Optional[Callable[[str, str], None]] = None,
                           clock: Callable[[], float] = time.monotonic,
                           sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> Readiness:
    start = clock()
    deadline = start + float(timeout_s)
    gates = list(GATES)
    polls, last = 0, "nothing yet"
    async with Client(endpoint, api_key, timeout_s=max(0.1, request_timeout_s),
                      max_connections=2) as c:
        while True:
            left = deadline - clock()
            if left <= 0:
                break
            polls += 1
            try:
                passed, last = await _gate(c, gates[0], model, min(request_timeout_s, left))
            except Exception as e:  # noqa: BLE001 - an answer the code did not foresee: poll on
                passed, last = False, f"{gates[0]}: unexpected answer ({type(e).__name__})"
            last = c.scrubber.shown(last)
            if len(last) > MAX_SEEN_CHARS:
                last = last[:MAX_SEEN_CHARS - 3] + "..."
            if on_poll is not None:
                on_poll(gates[0], last)
            if passed:
                gates.pop(0)
                if not gates:
                    return Readiness(True, "ready", last, round(clock() - start, 3), polls)
                continue  # the next gate right away
            left = deadline - clock()
            if left <= 0:
                break
            await sleep(min(poll_interval_s, left))
    return Readiness(False, gates[0], last, round(clock() - start, 3), polls)


def wait_ready(endpoint: str, model: str, api_key: Optional[str] = None,
               timeout_s: float = 600.0, poll_interval_s: float = 10.0,
               request_timeout_s: float = 30.0,
               on_poll: Optional[Callable[[str, str], None]] = None,
               clock: Callable[[], float] = time.monotonic,
               sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> Readiness:
    """Synchronous form of `wait_ready_async` (safe inside a running event loop)."""
    return run_sync(lambda: wait_ready_async(endpoint, model, api_key, timeout_s,
                                             poll_interval_s, request_timeout_s, on_poll,
                                             clock, sleep))
