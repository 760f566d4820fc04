"""HTTP to an OpenAI-compatible endpoint, every request bounded in time (httpx, asyncio).

One `Client` per run holds one connection pool. Every call is wrapped in `asyncio.timeout`, so
a server that accepts and never answers, or trickles bytes forever, costs at most the call's
`timeout_s`; transport errors and timeouts come back as an `Answer` with `error` set, never as
an exception, so a check can say what happened. The API key travels only in the
`Authorization` header; it is never part of an error text (errors are scrubbed of it anyway).

Whatever the server sends, memory stays bounded and nothing raises: a plain answer is read up
to MAX_BODY_BYTES, a stream up to `stream_byte_limit(max_tokens)` (decoded event by event,
nothing but the bounded StreamState kept); bodies are read raw with `Accept-Encoding:
identity` and a compressed answer is refused (a gzip body can expand a thousandfold in one
read); JSON nested deeper than protocol.MAX_DEPTH is refused; every parsed field and text is
scrubbed of the key (scrub.py) before a check sees it.
"""

from __future__ import annotations

import asyncio
import json
import ssl
import time
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Dict, Optional, Sequence
from urllib.parse import urlsplit

import certifi
import httpx

from .protocol import StreamState, parse_json, short
from .scrub import NO_SECRETS, Scrubber, printable
from .sse import SseDecoder, SseLimitError

#: how much of a non-streamed body is read at most (a chat answer is a few KB)
MAX_BODY_BYTES = 4 * 1024 * 1024
#: a stream may carry at most STREAM_BASE_BYTES + STREAM_BYTES_PER_TOKEN x max_tokens; a vLLM
#: 0.33 chunk is ~250 bytes per token (id, model, delta, nulls), so 4 KiB is 16 times that
STREAM_BASE_BYTES = 1024 * 1024
STREAM_BYTES_PER_TOKEN = 4 * 1024
#: after `data: [DONE]`, how long the rest of a stream's body may take to end
DRAIN_S = 1.0
_USE_DEFAULT = object()


#: the CA file every Client of this process verifies against (None: certifi's bundle)
_CA_FILE: Optional[str] = None
#: a pinned certificate (PEM): the only trust anchor, host name not checked (pin.py)
_PINNED: Optional[str] = None


@lru_cache(maxsize=1)
def _tls() -> ssl.SSLContext:
    """One verifying TLS context per process (certifi's CA bundle, as httpx's default, or the
    file given to `use_ca_file`).

    Loading the bundle costs ~0.1 s; httpx would do it for every client, i.e. for every load
    worker, and that start-up would show up as the first requests' TTFT.
    """
    if _PINNED is not None:
        ctx = ssl.create_default_context(cadata=_PINNED)
        ctx.check_hostname = False  # the key is the identity (pin.py); the chain is still verified
        return ctx
    return ssl.create_default_context(cafile=_CA_FILE or certifi.where())


def use_ca_file(path: Optional[str]) -> None:
    """Verify every endpoint of this process against `path` (PEM), e.g. the self-signed
    certificate a ctyun-hcc stack prints (`accept --ca-cert`); hostnames are still checked.
    Raises ValueError when the file holds no certificate."""
    global _CA_FILE
    if path is not None:
        try:
            ssl.create_default_context(cafile=path)
        except (OSError, ssl.SSLError) as e:
            raise ValueError(f"--ca-cert {path!r} holds no usable certificate ({e})") from None
    _CA_FILE = path
    _tls.cache_clear()


def use_pinned_certificate(pem: Optional[str]) -> None:
    """Trust only `pem` (a certificate whose public key matched `accept --pin`, pin.py) for
    every endpoint of this process, host name unchecked; None: back to the CA bundle."""
    global _PINNED
    _PINNED = pem
    _tls.cache_clear()


def stream_byte_limit(max_tokens: int) -> int:
    """The most bytes one streamed answer of `max_tokens` may carry before it is cut off."""
    return STREAM_BASE_BYTES + STREAM_BYTES_PER_TOKEN * max(0, int(max_tokens))


def shown_url(url: str) -> str:
    """`url` as it may be printed: any `user:password@` replaced by `***@`, controls escaped."""
    text = str(url).strip()
    try:
        parts = urlsplit(text)
        netloc = parts.netloc
    except ValueError:
        return printable(text.split("@")[-1])
    if "@" in netloc:
        text = text.replace(netloc, "***@" + netloc.rsplit("@", 1)[1], 1)
    return printable(text)


def split_endpoint(url: str) -> tuple:
    """`(base, root)` of an OpenAI base URL ending in `/v1`; ValueError with the fix if not.

    Credentials in the URL (`https://user:pass@host/v1`) are refused, and never echoed: httpx
    would send them as Basic auth to whatever host the URL names, and the URL is printed in the
    summary and written to the report. The key goes in `--api-key-env`.
    """
    shown = repr(shown_url(url))
    try:
        parts = urlsplit(str(url).strip())
        host = parts.hostname
        parts.port  # noqa: B018 - raises ValueError on a port that is not a number
    except ValueError:
        raise ValueError(f"--endpoint {shown} is not an http(s) URL; write e.g. "
                         "http://10.0.0.5:8000/v1") from None
    if "@" in parts.netloc:
        raise ValueError(f"--endpoint {shown} carries credentials (user:password@); remove "
                         "them and pass the API key with --api-key-env")
    if parts.scheme not in ("http", "https") or not host or printable(url.strip()) != url.strip():
        raise ValueError(f"--endpoint {shown} is not an http(s) URL; write e.g. "
                         "http://10.0.0.5:8000/v1")
    path = parts.path.rstrip("/")
    if not path.endswith("/v1"):
        raise ValueError(f"--endpoint {shown} does not end in /v1; give the OpenAI base URL, "
                         "e.g. http://10.0.0.5:8000/v1")
    if parts.query or parts.fragment:
        raise ValueError(f"--endpoint {shown} has a query or fragment; give only the base URL")
    base = f"{parts.scheme}://{parts.netloc}{path}"
    return base, base[: -len("/v1")]


@dataclass
class Answer:
    """One request's outcome: `status` None means no HTTP answer (see `error`)."""

    status: Optional[int]
    body: Any = None
    text: str = ""
    #: no usable answer: no HTTP answer at all (status None), or one that broke a bound
    #: (too large, compressed, not JSON where JSON was due is left to the checks)
    error: Optional[str] = None
    elapsed_s: float = 0.0

    def describe(self) -> str:
        if self.status is None:
            return self.error or "no answer"
        if self.error:
            return f"HTTP {self.status}: {self.error}"
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
        if self.error:
            return f"HTTP {self.status}: {self.error}"
        return f"HTTP {self.status}" + (f": {short(self.text)}" if self.text else "")


class Client:
    """Requests to one endpoint. Use as `async with Client(...) as c:`."""

    def __init__(self, endpoint: str, api_key: Optional[str] = None, timeout_s: float = 120.0,
                 connect_timeout_s: float = 10.0, max_connections: int = 16,
                 other_secrets: Sequence[str] = ()):
        """`other_secrets`: keys a check sends besides `api_key` (the previous key after a
        rotation), scrubbed the same way."""
        self.base, self.root = split_endpoint(endpoint)
        self._key = api_key or None
        self._others = tuple(k for k in other_secrets if k)
        keys = [k for k in (self._key, *self._others) if k]
        self.scrubber = Scrubber(keys) if keys else NO_SECRETS
        self.timeout_s = float(timeout_s)
        self._connect_s = min(float(connect_timeout_s), self.timeout_s)
        self._max = max(1, int(max_connections))
        self._http: Optional[httpx.AsyncClient] = None

    def worker(self) -> "Client":
        """A client of its own (one connection) to the same endpoint, for one load worker:
        httpx's shared pool costs more per request the more connections it holds."""
        return Client(self.base, self._key, self.timeout_s, self._connect_s, max_connections=1,
                      other_secrets=self._others)

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
        h = {"Accept": "application/json", "Accept-Encoding": "identity"}
        if key:
            h["Authorization"] = f"Bearer {key}"
        return h

    def _scrub(self, text: str) -> str:
        return self.scrubber.text(text)

    def _failure(self, e: BaseException, timeout_s: float) -> str:
        if isinstance(e, (TimeoutError, asyncio.TimeoutError, httpx.TimeoutException)):
            return f"no answer within {round(timeout_s, 1):g} s"
        if isinstance(e, httpx.ConnectError):
            return self._scrub(f"cannot connect: {e}")
        return self._scrub(f"{type(e).__name__}: {e}")

    def url(self, path: str, root: bool = False) -> str:
        return (self.root if root else self.base) + path

    @staticmethod
    def _encoding(r: httpx.Response) -> Optional[str]:
        """Why the body cannot be read as sent (a content coding), or None."""
        coding = r.headers.get("content-encoding", "identity").strip().lower()
        if coding in ("", "identity"):
            return None
        return (f"the answer is compressed ({printable(coding[:40])}) although identity was "
                "asked; not decoded (a compressed body can expand without bound)")

    @staticmethod
    async def _read(r: httpx.Response, limit: int) -> tuple:
        """(bytes, over): the raw body up to `limit` bytes; `over` when there was more."""
        raw = bytearray()
        async for part in r.aiter_raw():
            if len(raw) + len(part) > limit:
                raw += part[: limit - len(raw)]
                return bytes(raw), True
            raw += part
        return bytes(raw), False

    # ---- plain requests ----------------------------------------------------------------
    async def request(self, method: str, path: str, *, root: bool = False, body: Any = None,
                      key=_USE_DEFAULT, timeout_s: Optional[float] = None) -> Answer:
        timeout_s = min(float(timeout_s or self.timeout_s), self.timeout_s)
        start = time.perf_counter()
        headers = self._headers(key)
        if body is not None:
            headers["Content-Type"] = "application/json"
        problem = status = None
        try:
            async with asyncio.timeout(timeout_s):
                async with self._http.stream(
                        method, self.url(path, root), headers=headers,
                        content=None if body is None else json.dumps(body).encode()) as r:
                    status = r.status_code
                    problem = self._encoding(r)
                    raw, over = (b"", False) if problem else await self._read(r, MAX_BODY_BYTES)
                    if over:
                        problem = (f"the answer is larger than {MAX_BODY_BYTES // (1024 * 1024)} "
                                   "MiB; stopped reading")
        except Exception as e:  # noqa: BLE001 - every failure is an answer the check reports
            why = self._failure(e, timeout_s)
            if status is not None and why.startswith("no answer"):
                why = f"HTTP {status}, but the body did not end within {round(timeout_s, 1):g} s"
            return Answer(None, error=why, elapsed_s=time.perf_counter() - start)
        elapsed = time.perf_counter() - start
        if problem:
            return Answer(status, None, "", problem, elapsed)
        text = raw.decode(errors="replace")
        parsed = None
        if text.strip():
            parsed, why = parse_json(text)
            if why and "nested deeper" in why:
                return Answer(status, None, "", f"the answer is {why}", elapsed)
        return Answer(status, self.scrubber.tree(parsed), self._scrub(text), elapsed_s=elapsed)

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
        max_tokens = body.get("max_tokens")
        max_tokens = max_tokens if isinstance(max_tokens, int) else None
        limit = stream_byte_limit(max_tokens or 0)
        state = StreamState(max_tokens=max_tokens, scrub=self.scrubber.tree)
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
                    coding = self._encoding(r)
                    if coding:
                        return StreamAnswer(status, state, "", coding,
                                            time.perf_counter() - state.start)
                    if status != 200:
                        raw, _ = await self._read(r, MAX_BODY_BYTES)
                        text = self._scrub(raw.decode(errors="replace"))
                    else:
                        seen = 0
                        async for part in r.aiter_raw():
                            t = time.perf_counter()
                            seen += len(part)
                            if seen > limit:
                                why = (f"the stream exceeded {limit // 1024} KiB "
                                       f"({state.chunks} chunks"
                                       + (", after [DONE]" if state.done else ", no [DONE]")
                                       + "); stopped reading")
                                return StreamAnswer(status, state, "", why,
                                                    time.perf_counter() - state.start)
                            was_done = state.done
                            for ev in dec.feed(part):
                                state.feed(ev.data, t)
                            if state.done and not was_done:
                                # read on to the end of the body so the connection can be
                                # reused, but give a server that never closes it only a moment
                                loop = asyncio.get_running_loop()
                                bound.reschedule(min(bound.when(), loop.time() + DRAIN_S))
        except SseLimitError as e:
            return StreamAnswer(status, state, "", f"{e} ({state.chunks} chunks); stopped reading",
                                time.perf_counter() - state.start)
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
