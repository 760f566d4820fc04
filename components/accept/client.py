"""HTTP to an OpenAI-compatible endpoint, every request bounded in time (httpx, asyncio).

One `Client` per run holds one connection pool. Every call is wrapped in `asyncio.timeout`, so
a server that accepts and never answers, or trickles bytes forever, costs at most the call's
`timeout_s`; transport errors and timeouts come back as an `Answer` with `error` set, never as
an exception, so a check can say what happened. The API key travels only in the
`Authorization` header; it is never part of an error text (errors are scrubbed of it anyway).
"""

from __future__ import annotations

import asyncio
import json
import ssl
import time
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Dict, Optional
from urllib.parse import urlsplit

import certifi
import httpx

from .protocol import StreamState, short
from .sse import SseDecoder

#: how much of a non-streamed body is read at most (a chat answer is a few KB)
MAX_BODY_BYTES = 4 * 1024 * 1024
#: after `data: [DONE]`, how long the rest of a stream's body may take to end
DRAIN_S = 1.0
_USE_DEFAULT = object()


@lru_cache(maxsize=1)
def _tls() -> ssl.SSLContext:
    """One verifying TLS context per process (certifi's CA bundle, as httpx's default).

    Loading the bundle costs ~0.1 s; httpx would do it for every client, i.e. for every load
    worker, and that start-up would show up as the first requests' TTFT.
    """
    return ssl.create_default_context(cafile=certifi.where())


def split_endpoint(url: str) -> tuple:
    """`(base, root)` of an OpenAI base URL ending in `/v1`; ValueError with the fix if not."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"--endpoint {url!r} is not an http(s) URL; write e.g. "
                         "http://10.0.0.5:8000/v1")
    path = parts.path.rstrip("/")
    if not path.endswith("/v1"):
        raise ValueError(f"--endpoint {url!r} does not end in /v1; give the OpenAI base URL, "
                         "e.g. http://10.0.0.5:8000/v1")
    if parts.query or parts.fragment:
        raise ValueError(f"--endpoint {url!r} has a query or fragment; give only the base URL")
    base = f"{parts.scheme}://{parts.netloc}{path}"
    return base, base[: -len("/v1")]


@dataclass
class Answer:
    """One request's outcome: `status` None means no HTTP answer (see `error`)."""

    status: Optional[int]
    body: Any = None
    text: str = ""
    error: Optional[str] = None
    elapsed_s: float = 0.0

    def describe(self) -> str:
        if self.status is None:
            return self.error or "no answer"
        return f"HTTP {self.status}" + (f": {short(self.text)}" if self.text else "")


@dataclass
class StreamAnswer:
    status: Optional[int]
    state: StreamState
    text: str = ""
    error: Optional[str] = None
    elapsed_s: float = 0.0

    def describe(self) -> str:
        if self.status is None:
            return self.error or "no answer"
        return f"HTTP {self.status}" + (f": {short(self.text)}" if self.text else "")


class Client:
    """Requests to one endpoint. Use as `async with Client(...) as c:`."""

    def __init__(self, endpoint: str, api_key: Optional[str] = None, timeout_s: float = 120.0,
                 connect_timeout_s: float = 10.0, max_connections: int = 16):
        self.base, self.root = split_endpoint(endpoint)
        self._key = api_key or None
        self.timeout_s = float(timeout_s)
        self._connect_s = min(float(connect_timeout_s), self.timeout_s)
        self._max = max(1, int(max_connections))
        self._http: Optional[httpx.AsyncClient] = None

    def worker(self) -> "Client":
        """A client of its own (one connection) to the same endpoint, for one load worker:
        httpx's shared pool costs more per request the more connections it holds."""
        return Client(self.base, self._key, self.timeout_s, self._connect_s, max_connections=1)

    async def __aenter__(self) -> "Client":
        t = self.timeout_s
        self._http = httpx.AsyncClient(
            timeout=httpx.Timeout(t, connect=self._connect_s),
            limits=httpx.Limits(max_connections=self._max, max_keepalive_connections=self._max),
            verify=_tls(), follow_redirects=False, trust_env=False)
        return self

    async def __aexit__(self, *exc) -> None:
        if self._http is not None:
            await self._http.aclose()
            self._http = None

    # ---- helpers -----------------------------------------------------------------------
    def _headers(self, key) -> Dict[str, str]:
        key = self._key if key is _USE_DEFAULT else key
        h = {"Accept": "application/json"}
        if key:
            h["Authorization"] = f"Bearer {key}"
        return h

    def _scrub(self, text: str) -> str:
        return text.replace(self._key, "[secret]") if self._key else text

    def _failure(self, e: BaseException, timeout_s: float) -> str:
        if isinstance(e, (TimeoutError, asyncio.TimeoutError, httpx.TimeoutException)):
            return f"no answer within {round(timeout_s, 1):g} s"
        if isinstance(e, httpx.ConnectError):
            return self._scrub(f"cannot connect: {e}")
        return self._scrub(f"{type(e).__name__}: {e}")

    def url(self, path: str, root: bool = False) -> str:
        return (self.root if root else self.base) + path

    # ---- plain requests ----------------------------------------------------------------
    async def request(self, method: str, path: str, *, root: bool = False, body: Any = None,
                      key=_USE_DEFAULT, timeout_s: Optional[float] = None) -> Answer:
        timeout_s = min(float(timeout_s or self.timeout_s), self.timeout_s)
        start = time.perf_counter()
        headers = self._headers(key)
        if body is not None:
            headers["Content-Type"] = "application/json"
        try:
            async with asyncio.timeout(timeout_s):
                async with self._http.stream(
                        method, self.url(path, root), headers=headers,
                        content=None if body is None else json.dumps(body).encode()) as r:
                    raw = bytearray()
                    async for part in r.aiter_bytes():
                        raw += part
                        if len(raw) > MAX_BODY_BYTES:
                            break
                    status = r.status_code
        except Exception as e:  # noqa: BLE001 - every failure is an answer the check reports
            return Answer(None, error=self._failure(e, timeout_s),
                          elapsed_s=time.perf_counter() - start)
        text = raw.decode(errors="replace")
        try:
            parsed = json.loads(text) if text.strip() else None
        except ValueError:
            parsed = None
        return Answer(status, parsed, self._scrub(text), elapsed_s=time.perf_counter() - start)

    async def chat(self, body: Dict[str, Any], key=_USE_DEFAULT,
                   timeout_s: Optional[float] = None) -> Answer:
        return await self.request("POST", "/chat/completions", body={**body, "stream": False},
                                  key=key, timeout_s=timeout_s)

    # ---- streaming ---------------------------------------------------------------------
    async def stream_chat(self, body: Dict[str, Any], key=_USE_DEFAULT,
                          timeout_s: Optional[float] = None) -> StreamAnswer:
        """POST a streaming chat completion; every event is timed as its bytes arrive."""
        timeout_s = min(float(timeout_s or self.timeout_s), self.timeout_s)
        payload = {**body, "stream": True, "stream_options": {"include_usage": True}}
        headers = {**self._headers(key), "Content-Type": "application/json",
                   "Accept": "text/event-stream"}
        state = StreamState()
        dec = SseDecoder()
        status = None
        text = ""
        state.start = time.perf_counter()
        try:
            async with asyncio.timeout(timeout_s) as bound:
                async with self._http.stream("POST", self.url("/chat/completions"),
                                             headers=headers,
                                             content=json.dumps(payload).encode()) as r:
                    status = r.status_code
                    if status != 200:
                        raw = bytearray()
                        async for part in r.aiter_bytes():
                            raw += part
                            if len(raw) > MAX_BODY_BYTES:
                                break
                        text = self._scrub(raw.decode(errors="replace"))
                    else:
                        async for part in r.aiter_bytes():
                            t = time.perf_counter()
                            was_done = state.done
                            for ev in dec.feed(part):
                                state.feed(ev.data, t)
                            if state.done and not was_done:
                                # read on to the end of the body so the connection can be
                                # reused, but give a server that never closes it only a moment
                                loop = asyncio.get_running_loop()
                                bound.reschedule(min(bound.when(), loop.time() + DRAIN_S))
        except Exception as e:  # noqa: BLE001
            if state.done and isinstance(e, (TimeoutError, asyncio.TimeoutError)):
                return StreamAnswer(status, state, text, None, time.perf_counter() - state.start)
            why = self._failure(e, timeout_s)
            if status == 200 and why.startswith("no answer"):
                why = (f"the stream did not end within {round(timeout_s, 1):g} s ({state.chunks} chunks, "
                       "no [DONE])")
            return StreamAnswer(status, state, text, why, time.perf_counter() - state.start)
        return StreamAnswer(status, state, text, None, time.perf_counter() - state.start)


def run_sync(make_coro):
    """Run `make_coro()` to completion from synchronous code, even inside a running loop.

    A Pulumi program (and some provider hosts) already run an asyncio loop in this thread;
    there the coroutine runs on a fresh loop in a helper thread instead.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(make_coro())
    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(lambda: asyncio.run(make_coro())).result()
