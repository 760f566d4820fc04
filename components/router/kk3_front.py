"""kimi-k3's front for vllm-router: clients reach only the inference routes, never the admin ones.

Why it exists. vllm-router 0.1.17 (PyPI `vllm-router`, source in its sdist, `src/server.rs`)
serves on its one port, without authentication, next to the inference routes: `POST
/add_worker`, `POST /remove_worker`, `POST /flush_cache`, `GET /list_workers`, `GET /get_loads`,
`POST|GET /workers`, `GET|DELETE /workers/{url}`, `/scheduling/diagnostics`, `/finish_session`;
and every other path falls through to `transparent_proxy_handler` (always on), which forwards it
to a worker (`/metrics`, `/tokenize`, `/inference/v1/generate`...). Anyone who can reach the
router can add a worker of their own and receive a share of the traffic, clients' `Authorization`
headers included (shown on loopback; tests/integration/test_router_front.py repeats it). So the
router listens on loopback (or inside its pod) and this front is what clients reach.

What it does. Exactly these (method, path) pairs pass, compared on the raw request target as
received (no decoding, no normalisation: `/v1/../add_worker`, `//add_worker`, `%2Fadd_worker`,
`/V1/models` are all simply other paths), and the upstream receives that same allowed path with
no query string:

    POST /v1/chat/completions   POST /v1/completions   GET /v1/models   GET /health

Anything else is answered here, 404 (unknown path) or 405 (known path, other method), and never
reaches the router. Only a few request headers are passed on (Authorization, Content-Type,
Accept, User-Agent, X-Request-Id): the router and vLLM read others (`X-data-parallel-rank` pins
a vLLM data-parallel rank; vllm-router reads `x-session-id`, `x-worker-priority`...), and
clients have no business steering them. The answer is streamed back as it comes (SSE).
`/v1/responses` is not passed: its stored state (`previous_response_id`) lives on one replica.

A request body with a `Content-Encoding` (gzip, deflate, br...) is refused with 415 before a
byte of it is read, and the connection closed: aiohttp's server inflates such a body on its own
while reading it, and a few KB of gzip are gigabytes inflated; the inflating code has had
advisories where the size limit was applied late or not at all (GHSA-g3cq-j2xw-wf74: an unread
compressed body inflated in one chunk during cleanup, fixed in aiohttp 3.14.1), and the legacy
closure for a Python 3.8-3.10 master pins aiohttp 3.10.11 (settings.py). No client needs it:
vLLM's OpenAI server does not decode compressed request bodies either.

The API key, before anything else is read. Started with `--api-key-env NAME` (kimi-k3 does so
whenever `kimi-k3:apiKey` is set; the key is in that environment variable, never on the command
line), every allowed route but `GET /health` needs `Authorization: Bearer <key>`, checked as
vLLM and kk3_api_guard.py check it (scheme `Bearer` in any case, one space, SHA-256 of both
sides compared with `hmac.compare_digest`; only the first Authorization header counts). A request
without it is answered with vLLM's own refusal (401, `{"error":"Unauthorized"}`) as soon as its
headers are in, its body never read and the connection closed, also when the client asked for
`Expect: 100-continue` (no `100 Continue` is sent to it). Without this, anyone who can reach
the front could have it buffer up to the body limit (64 MiB) per connection before a replica
said 401 (bench/hostile_front.py measures both). A named variable that is empty stops the front
before it listens (fail closed). The replicas still check the key themselves.

`GET /health` asks the router's `/readiness`, not its `/health`, and answers with the status
alone. vllm-router 0.1.17's `/health` is 503 as soon as *any* worker is unhealthy, its body
listing the unhealthy workers' URLs; `/readiness` is 200 while at least one is healthy
(`src/routers/http/router.rs` `health` and `readiness`, sdist 0.1.17). Passed through, one dead
replica out of two would make the front look down (the aws-eks router pod NotReady, so the
Service would drop the one pod that still serves) and would show clients the replicas' cluster
addresses. Likewise a 5xx the router writes itself (plain text, e.g. "Request failed: error
sending request for url (http://10.0.0.5:11026/v1/chat/completions)") reaches the client as a
JSON error without that text; vLLM's own errors are JSON and pass as they are.

It is shipped as one file and runs beside the router with the Python packages vllm-router itself
installs (aiohttp is one of its dependencies, vllm-router 0.1.17 METADATA), so it needs nothing
else: `python3 kk3_front.py --listen 0.0.0.0:8000 --upstream http://127.0.0.1:30000`. It imports
nothing from kimi-k3 and logs no header values.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import hmac
import os
import sys
from typing import Dict, FrozenSet, Mapping, Optional

from aiohttp import ClientSession, ClientTimeout, HttpVersion11, TCPConnector, web

HTTP = web.AppKey("http", ClientSession)

#: the only (path, methods) clients may use
ALLOWED: Mapping[str, FrozenSet[str]] = {
    "/v1/chat/completions": frozenset({"POST"}),
    "/v1/completions": frozenset({"POST"}),
    "/v1/models": frozenset({"GET"}),
    "/health": frozenset({"GET"}),
}
#: request headers passed to the router (lower case); everything else is dropped
PASS_REQUEST_HEADERS = frozenset({"authorization", "content-type", "accept", "user-agent",
                                  "x-request-id"})
#: response headers not passed back (hop-by-hop, RFC 9110 section 7.6.1, and the framing, which
#: the front writes itself)
HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-authenticate", "proxy-authorization",
                        "te", "trailer", "transfer-encoding", "upgrade", "content-length"})
#: a needle prompt at a 1M-token context is ~6 MB of JSON; generous above that
DEFAULT_MAX_BODY_MIB = 64
#: the router path each client path is asked on (others: the same path)
UPSTREAM_PATH: Mapping[str, str] = {"/health": "/readiness"}
#: what the front says instead of a router-written 5xx body
#: the routes answered without the API key (method, path)
OPEN_ROUTES = frozenset({("GET", "/health")})
#: vLLM's refusal, byte for byte: JSONResponse({"error": "Unauthorized"}, 401)
UNAUTHORIZED_BODY = b'{"error":"Unauthorized"}'
ROUTER_ERRORS: Mapping[int, str] = {
    503: "no replica is available right now (all unhealthy or their circuits open); retry later",
}


def decide(method: str, raw_target: str) -> Optional[tuple]:
    """(status, message) to refuse with, or None when (method, target) may pass.

    `raw_target` is the request target exactly as the client sent it (path and query)."""
    path = raw_target.split("?", 1)[0]
    methods = ALLOWED.get(path)
    if methods is None:
        return 404, "not found"
    if method not in methods:
        return 405, f"method {method} not allowed on this path"
    return None


def key_digest(key: str) -> bytes:
    return hashlib.sha256(key.encode("utf-8")).digest()


def authorized(header: Optional[str], digest: bytes) -> bool:
    """Whether an Authorization header value carries the key whose SHA-256 is `digest`."""
    if not header:
        return False
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer":
        return False
    # aiohttp decodes header bytes as UTF-8 with surrogateescape: encoded back, as sent
    sent = token.encode("utf-8", "surrogateescape")
    return hmac.compare_digest(hashlib.sha256(sent).digest(), digest)


def _unauthorized() -> web.Response:
    """vLLM's 401; the connection closes after it. The body is never buffered: aiohttp only
    reads and throws away what is still arriving for up to its lingering time (10 s,
    web_protocol.RequestHandler, 3.10.11 and 3.14.5), so that a client still sending can read
    the answer (a close with unread data makes the kernel reset the connection)."""
    refusal = web.Response(status=401, body=UNAUTHORIZED_BODY, content_type="application/json")
    refusal.force_close()  # the body stays unread (module docstring)
    return refusal


def _refusal(status: int, message: str) -> web.Response:
    """A refusal the front writes; the connection is closed after it, so a body the client
    sent along is never buffered (see `_unauthorized`)."""
    kind = {404: "NotFound", 405: "MethodNotAllowed"}.get(status, "UnsupportedMediaType")
    refusal = web.json_response({"error": {"message": message, "type": kind, "code": status}},
                                status=status)
    refusal.force_close()
    return refusal


def _router_error(status: int) -> web.Response:
    """A 5xx the router wrote itself, without its text (it names the replicas' addresses)."""
    message = ROUTER_ERRORS.get(status, f"the router could not get an answer from a replica "
                                        f"(HTTP {status}); retry later")
    return web.json_response({"error": {"message": message, "type": "RouterError",
                                        "code": status}}, status=status)


def make_app(upstream: str, max_body_mib: int = DEFAULT_MAX_BODY_MIB,
             api_key: Optional[str] = None) -> web.Application:
    """The front's app; with `api_key`, every route but OPEN_ROUTES needs it."""
    upstream = upstream.rstrip("/")
    digest = key_digest(api_key) if api_key else None

    def key_refusal(request: web.Request) -> Optional[web.Response]:
        if digest is None or (request.method, request.raw_path.split("?", 1)[0]) in OPEN_ROUTES:
            return None
        if authorized(request.headers.get("Authorization"), digest):
            return None
        return _unauthorized()

    async def expect(request: web.Request) -> Optional[web.StreamResponse]:
        """`Expect: 100-continue`: refusals (route, key) answer it instead of `100 Continue`."""
        refused = decide(request.method, request.raw_path)
        if refused is not None:
            return _refusal(*refused)
        answer = key_refusal(request)
        if answer is not None:
            return answer
        # what aiohttp's default expect handler does (web_urldispatcher._default_expect_handler,
        # the same in 3.10.11 and 3.14.5): 100 Continue on HTTP/1.1, 417 for any other value
        if request.version == HttpVersion11:
            if request.headers.get("Expect", "").lower() != "100-continue":
                return web.Response(status=417, text="unknown Expect\n")
            await request.writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
            request.writer.output_size = 0
        return None

    async def session(app):
        # no total/read timeout: a long prefill sends nothing for minutes; the router's own
        # --request-timeout-secs bounds a request
        app[HTTP] = ClientSession(connector=TCPConnector(limit=0), auto_decompress=False,
                                    timeout=ClientTimeout(total=None, connect=10))
        yield
        await app[HTTP].close()

    async def handle(request: web.Request) -> web.StreamResponse:
        refused = decide(request.method, request.raw_path)
        if refused is not None:
            return _refusal(*refused)
        unauthorized = key_refusal(request)  # before the body is read (module docstring)
        if unauthorized is not None:
            return unauthorized
        if request.headers.get("Content-Encoding", "identity").strip().lower() != "identity":
            # the body stays unread, never inflated (module docstring)
            return _refusal(415, "compressed request bodies are not accepted; send the body "
                                 "without Content-Encoding")
        path = request.raw_path.split("?", 1)[0]
        headers: Dict[str, str] = {k: v for k, v in request.headers.items()
                                   if k.lower() in PASS_REQUEST_HEADERS}
        body = await request.read() if request.method == "POST" else None
        out = None
        try:
            async with request.app[HTTP].request(request.method, upstream + UPSTREAM_PATH.get(path, path),
                                                   headers=headers, data=body,
                                                   allow_redirects=False) as up:
                if path == "/health":  # the status only (see the module docstring)
                    return web.Response(status=200 if up.status == 200 else 503,
                                        text="ok\n" if up.status == 200 else "no healthy replica\n")
                if up.status >= 500 and up.content_type != "application/json":
                    return _router_error(up.status)
                out = web.StreamResponse(status=up.status, reason=up.reason)
                for k, v in up.headers.items():
                    if k.lower() not in HOP_BY_HOP:
                        out.headers.add(k, v)
                await out.prepare(request)
                async for chunk in up.content.iter_any():
                    await out.write(chunk)
                await out.write_eof()
                return out
        except (OSError, asyncio.TimeoutError) as e:
            if out is not None and out.prepared:
                raise  # the answer had started: the client sees the connection end
            return web.json_response({"error": {"message": f"router unreachable: "
                                                f"{type(e).__name__}", "code": 502}}, status=502)

    app = web.Application(client_max_size=max_body_mib * 1024 * 1024)
    app.cleanup_ctx.append(session)
    app.router.add_route("*", "/{tail:.*}", handle, expect_handler=expect)
    return app


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="kimi-k3's allowlisting front for vllm-router")
    p.add_argument("--listen", required=True, help="HOST:PORT clients reach")
    p.add_argument("--upstream", required=True, help="the router's URL, e.g. http://127.0.0.1:30000")
    p.add_argument("--max-body-mib", type=int, default=DEFAULT_MAX_BODY_MIB)
    p.add_argument("--api-key-env", metavar="NAME",
                   help="the environment variable holding the API key every route but "
                        "GET /health needs (unset: the replicas alone check it)")
    a = p.parse_args(argv)
    api_key = None
    if a.api_key_env:
        api_key = os.environ.get(a.api_key_env, "")
        if not api_key:  # fail closed: never serve unguarded when a key was meant
            print(f"kk3_front: {a.api_key_env} is empty or unset; not starting", file=sys.stderr)
            return 2
    host, _, port = a.listen.rpartition(":")
    print(f"kk3_front: {a.listen} -> {a.upstream} (allowed: {', '.join(sorted(ALLOWED))}; "
          f"API key {'checked here' if api_key else 'checked by the replicas only'})", flush=True)
    web.run_app(make_app(a.upstream, a.max_body_mib, api_key), host=host.strip("[]") or "0.0.0.0",
                port=int(port), access_log=None, print=None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
