"""kimi-k3's API-key guard for vLLM's OpenAI server: every path needs the key, but GET /health.

This file is shipped into the serving container as `kk3_api_guard.py` and loaded by
`vllm serve --middleware kk3_api_guard.ApiKeyGuard` (components/inference/api_guard.py says how
it gets there on each target). It runs inside vLLM's API server, so it uses the Python standard
library only, imports nothing from kimi-k3, and never logs or echoes the key.

Why it exists. Read in vLLM's own wheels (`pip download vllm==<v> --no-deps`), 0.33.0 (the CUDA
image) and 0.23.0 (the vllm-ascend image's engine, the oldest release kimi-k3 serves with):
`--api-key` / `VLLM_API_KEY` installs `AuthenticationMiddleware`
(0.33.0 `vllm/entrypoints/serve/middleware/authenticate.py`; 0.23.0
`vllm/entrypoints/serve/utils/server_utils.py`), which checks `Authorization: Bearer <key>` only
when the path starts with `GUARDED_PREFIX` (0.33.0: `/v1`, `/v2`, `/inference`, `/cohere`;
0.23.0: `/v1`, `/v2`, `/inference`) and never for OPTIONS. `/invocations` (the same chat and
completion handlers, vllm-project/vllm#58144), `/tokenize`, `/detokenize`, `/generative_scoring`,
`/scale_elastic_ep`, `/pooling`, `/classify`, `/score`, `/rerank`, `/ping`, `/load`, `/version`,
`/metrics`, `/docs`, `/openapi.json` answer without it.

How vLLM loads it (same code in both releases: 0.33.0
`vllm/entrypoints/serve/middleware/register.py` `init_entrypoints_middleware`, 0.23.0
`vllm/entrypoints/openai/api_server.py` `build_app`): for each `--middleware` value,
`module_path, object_name = value.rsplit(".", 1)`, `importlib.import_module(module_path)`; a
class is added with `app.add_middleware(cls)` (so vLLM calls `ApiKeyGuard(app)`, no arguments:
the key comes from `VLLM_API_KEY`), a coroutine function with `app.middleware("http")`. The
module must be importable: the targets put its directory on `PYTHONPATH`.

Order. vLLM adds CORS, then its AuthenticationMiddleware (when a key is set), then request-id,
scaling and websocket-metrics middlewares, then the `--middleware` ones last. Starlette's
`add_middleware` inserts at the front of `user_middleware` and `build_middleware_stack` wraps so
that the first entry is outermost (starlette 1.10.0 `applications.py`), so this guard runs
first, before vLLM's own check and before CORS; only `ServerErrorMiddleware` is outside it.
`sagemaker_standards_bootstrap` (model_hosting_container_standards 0.1.16
`common/fastapi/middleware/core.py` `load_middlewares`) keeps that order, may put a `throttle`
middleware in front when CUSTOM_FASTAPI_MIDDLEWARE_THROTTLE is set (kimi-k3 never sets it) and
builds the middleware stack right away, so `ApiKeyGuard.__init__` runs while vLLM starts: a
missing key stops `vllm serve` before it listens (fail closed).

Refusal. vLLM answers `JSONResponse(content={"error": "Unauthorized"}, status_code=401)`:
body `{"error":"Unauthorized"}` (starlette's compact JSON), headers `content-length: 24` and
`content-type: application/json`, no `WWW-Authenticate`. This guard sends exactly that, so a
client sees the same answer on every path. A websocket handshake without the key gets the same
401 where the server offers the `websocket.http.response` ASGI extension (uvicorn does), else
it is closed before acceptance (code 1008; the server answers the handshake with 403). vLLM
0.33.0 serves one websocket route, `/v1/realtime` (speech-to-text models only).

What stays open, and why:
- `GET /health` (and HEAD): the Kubernetes probes and both targets' readiness gates poll it
  without a key; it says only whether the engine is alive (200 empty / 503).
- CORS preflights (`OPTIONS` with `Origin` and `Access-Control-Request-Method`): vLLM's
  CORSMiddleware answers them itself (starlette `middleware/cors.py`), they never reach a route
  and carry no body; browsers send them without credentials. Any other OPTIONS needs the key.
- Not open: `/ping` (the SageMaker twin of /health; no kimi-k3 probe uses it), `/metrics`
  (request counts and the model name; a scraper can send the key), `/version`, `/load`.

The key check is vLLM's rule (scheme `Bearer`, any case, one space, then the key) with both
sides hashed (SHA-256) and compared with `hmac.compare_digest`, so the time taken does not
depend on where a wrong key differs nor on its length. The header's bytes are compared as sent
(UTF-8 for a non-ASCII key). Only the first Authorization header counts, as in vLLM.
"""

import hashlib
import hmac
import logging
import os

#: where vLLM reads its API key (vllm/envs.py VLLM_API_KEY); the same value guards here
KEY_ENV = "VLLM_API_KEY"
#: paths answered without the key (exact match after root_path), and for which methods
OPEN_PATHS = frozenset({"/health"})
OPEN_METHODS = frozenset({"GET", "HEAD"})
#: vLLM's refusal, byte for byte: JSONResponse({"error": "Unauthorized"}, 401)
UNAUTHORIZED_BODY = b'{"error":"Unauthorized"}'
UNAUTHORIZED_HEADERS = ((b"content-length", str(len(UNAUTHORIZED_BODY)).encode("latin-1")),
                        (b"content-type", b"application/json"))
#: ASGI extension that lets a websocket handshake be refused with an HTTP response
WS_HTTP_RESPONSE = "websocket.http.response"
#: "policy violation": the close code for a refused websocket when no HTTP answer is possible
WS_POLICY_VIOLATION = 1008

log = logging.getLogger("kk3_api_guard")


class ApiKeyGuard:
    """Pure ASGI middleware: `Authorization: Bearer <VLLM_API_KEY>` on every request but the
    open ones above. vLLM constructs it as `ApiKeyGuard(app)` (see the module docstring)."""

    def __init__(self, app):
        self.app = app
        key = os.environ.get(KEY_ENV, "")
        if not key:
            raise RuntimeError(
                f"kk3_api_guard: {KEY_ENV} is empty or unset; refusing to serve unguarded "
                f"(kimi-k3 adds --middleware kk3_api_guard.ApiKeyGuard only with an API key)")
        self._digest = hashlib.sha256(key.encode("utf-8")).digest()
        log.info("kk3_api_guard: every path needs the API key but %s %s",
                 "/".join(sorted(OPEN_METHODS)), ", ".join(sorted(OPEN_PATHS)))

    async def __call__(self, scope, receive, send):
        kind = scope.get("type")
        if kind not in ("http", "websocket") or self._open(scope) or self._authorized(scope):
            await self.app(scope, receive, send)
        elif kind == "http":
            await self._refuse(send, "http.")
        elif WS_HTTP_RESPONSE in (scope.get("extensions") or {}):
            await self._refuse(send, "websocket.http.")
        else:
            await send({"type": "websocket.close", "code": WS_POLICY_VIOLATION})

    @staticmethod
    def _header(scope, name: bytes):
        for key, value in scope.get("headers") or ():
            if key.lower() == name:
                return value
        return None

    def _open(self, scope) -> bool:
        if scope["type"] != "http":
            return False
        method = scope.get("method", "")
        if method == "OPTIONS":
            return (self._header(scope, b"origin") is not None
                    and self._header(scope, b"access-control-request-method") is not None)
        path, root = scope.get("path", ""), scope.get("root_path", "")
        if root and path.startswith(root):
            path = path[len(root):]  # as vLLM does (str.removeprefix)
        return method in OPEN_METHODS and path in OPEN_PATHS

    def _authorized(self, scope) -> bool:
        value = self._header(scope, b"authorization")
        if not value:
            return False
        scheme, _, token = bytes(value).partition(b" ")
        if scheme.lower() != b"bearer":
            return False
        return hmac.compare_digest(hashlib.sha256(token).digest(), self._digest)

    @staticmethod
    async def _refuse(send, prefix: str) -> None:
        await send({"type": prefix + "response.start", "status": 401,
                    "headers": [list(h) for h in UNAUTHORIZED_HEADERS]})
        await send({"type": prefix + "response.body", "body": UNAUTHORIZED_BODY})
