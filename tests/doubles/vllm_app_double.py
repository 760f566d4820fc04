"""Double of the HTTP surface of `vllm serve` (vLLM 0.33.0): its route list and middleware wiring.

vLLM itself cannot run here (no accelerator), so kimi-k3's API-key guard is tested in front of this
double, served by a real ASGI server (uvicorn) with Starlette, as vLLM serves its FastAPI app. It is
built from vLLM's own code, read in the 0.33.0 wheel (`pip download vllm==0.33.0 --no-deps`), not
from kimi-k3's:

- `ROUTES`: every HTTP route the API server's routers declare (the decorators and
  `add_api_route` calls under `vllm/entrypoints/`; source files listed per route, relative to
  that directory), plus FastAPI's own `/openapi.json` and `/redoc` and the `/metrics` Mount
  (`serve/instrumentator/metrics.py`). The double mounts all of them at once, whatever vLLM's
  conditions (supported tasks, VLLM_SERVER_DEV_MODE, profiler, LoRA): a guard must refuse each;
  each answers `{"route": <path>}` so a test sees whether a request got through;
- `VllmAuthenticationDouble`: vLLM's own `--api-key` middleware (`serve/middleware/authenticate.py`):
  only paths starting with `/v1`, `/v2`, `/inference`, `/cohere` checked, OPTIONS never,
  `Bearer` in any case, 401 `JSONResponse({"error": "Unauthorized"})`;
- `build_app`: the middleware order of `serve/middleware/register.py` `init_entrypoints_middleware`:
  CORS first (vLLM's defaults from `common/cli_args.py`: no allowed origins in 0.33.0, all
  methods and headers), then the API-key middleware when a key is set, then each `--middleware`
  import path, imported with importlib and added with `app.add_middleware` when it is a class
  (vLLM's rule; a coroutine function would be `app.middleware("http")`, which kimi-k3 does not
  use, so the double refuses it).

Run it as vLLM would run it: `python -m uvicorn --factory tests.doubles.vllm_app_double:from_env`
with `VLLM_API_KEY` and `KK3_DOUBLE_MIDDLEWARE` (comma-separated import paths, like repeated
`--middleware`), and PYTHONPATH holding the middleware's directory (`--root-path` as vLLM's).
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import os
import re
import secrets
from typing import Optional, Sequence

from starlette.applications import Starlette
from starlette.middleware.cors import CORSMiddleware
from starlette.responses import JSONResponse, Response
from starlette.routing import Mount, Route, WebSocketRoute

#: (method, path, source under vllm/entrypoints/ in the 0.33.0 wheel)
ROUTES = (
    ("POST", "/abort_requests", "scale_out/token_in_token_out/api_router.py"),
    ("POST", "/classify", "pooling/classify/api_router.py"),
    ("POST", "/cohere/v2/chat", "cohere/api_router.py"),
    ("POST", "/cohere/v2/chat/render", "cohere/api_router.py"),
    ("POST", "/collective_rpc", "serve/dev/rpc/api_router.py"),
    ("POST", "/detokenize", "serve/tokenize/api_router.py"),
    ("GET", "/docs", "serve/instrumentator/offline_docs.py"),
    ("POST", "/fault_tolerance/apply", "serve/fault_tolerance/api_router.py"),
    ("GET", "/fault_tolerance/status", "serve/fault_tolerance/api_router.py"),
    ("POST", "/finish_weight_update", "rl/online/api_router.py"),
    ("POST", "/generative_scoring", "generate/generative_scoring/api_router.py"),
    ("GET", "/get_world_size", "rl/online/api_router.py"),
    ("GET", "/health", "serve/instrumentator/health.py"),
    ("POST", "/inference/v1/abort_requests", "scale_out/token_in_token_out/api_router.py"),
    ("POST", "/inference/v1/generate", "scale_out/token_in_token_out/api_router.py"),
    ("POST", "/init_weight_transfer_engine", "rl/online/api_router.py"),
    ("POST", "/invocations", "serve/sagemaker/api_router.py"),
    ("GET", "/is_paused", "rl/online/api_router.py"),
    ("POST", "/is_scaling_elastic_ep", "serve/elastic_ep/api_router.py"),
    ("GET", "/is_sleeping", "serve/dev/sleep/api_router.py"),
    ("GET", "/kv_event_sources", "serve/instrumentator/basic.py"),
    ("GET", "/load", "serve/instrumentator/basic.py"),
    ("POST", "/pause", "rl/online/api_router.py"),
    ("GET", "/ping", "serve/sagemaker/api_router.py"),
    ("POST", "/ping", "serve/sagemaker/api_router.py"),
    ("POST", "/pooling", "pooling/pooling/api_router.py"),
    ("POST", "/release_kv_cache_memory", "serve/dev/sleep/api_router.py"),
    ("POST", "/rerank", "pooling/scoring/api_router.py"),
    ("POST", "/reset_encoder_cache", "serve/dev/cache/api_router.py"),
    ("POST", "/reset_mm_cache", "serve/dev/cache/api_router.py"),
    ("POST", "/reset_prefix_cache", "serve/dev/cache/api_router.py"),
    ("POST", "/resume", "rl/online/api_router.py"),
    ("POST", "/scale_elastic_ep", "serve/elastic_ep/api_router.py"),
    ("POST", "/score", "pooling/scoring/api_router.py"),
    ("GET", "/server_info", "serve/dev/server_info/api_router.py"),
    ("POST", "/shutdown_weight_transfer_engine", "rl/online/api_router.py"),
    ("POST", "/sleep", "serve/dev/sleep/api_router.py"),
    ("POST", "/start_draft_weight_update", "rl/online/api_router.py"),
    ("POST", "/start_profile", "serve/profile/api_router.py"),
    ("POST", "/start_weight_update", "rl/online/api_router.py"),
    ("POST", "/stop_profile", "serve/profile/api_router.py"),
    ("POST", "/tokenize", "serve/tokenize/api_router.py"),
    ("GET", "/tokenizer_info", "serve/tokenize/api_router.py"),
    ("POST", "/update_weight_version", "rl/online/api_router.py"),
    ("POST", "/update_weights", "rl/online/api_router.py"),
    ("POST", "/v1/audio/transcriptions", "speech_to_text/transcription/api_router.py"),
    ("POST", "/v1/audio/translations", "speech_to_text/translation/api_router.py"),
    ("POST", "/v1/chat/completions", "openai/chat_completion/api_router.py"),
    ("POST", "/v1/chat/completions/batch", "openai/chat_completion/api_router.py"),
    ("POST", "/v1/chat/completions/derender", "scale_out/derender/api_router.py"),
    ("POST", "/v1/chat/completions/render", "scale_out/render/api_router.py"),
    ("POST", "/v1/completions", "openai/completion/api_router.py"),
    ("POST", "/v1/completions/derender", "scale_out/derender/api_router.py"),
    ("POST", "/v1/completions/render", "scale_out/render/api_router.py"),
    ("POST", "/v1/decisions", "openai/decisions/api_router.py"),
    ("POST", "/v1/embeddings", "pooling/embed/api_router.py"),
    ("POST", "/v1/load_lora_adapter", "serve/lora/api_router.py"),
    ("POST", "/v1/messages", "anthropic/api_router.py"),
    ("POST", "/v1/messages/count_tokens", "anthropic/api_router.py"),
    ("POST", "/v1/messages/render", "scale_out/render/api_router.py"),
    ("GET", "/v1/models", "openai/models/api_router.py"),
    ("WEBSOCKET", "/v1/realtime", "speech_to_text/realtime/api_router.py"),
    ("POST", "/v1/rerank", "pooling/scoring/api_router.py"),
    ("POST", "/v1/responses", "openai/responses/api_router.py"),
    ("POST", "/v1/responses/render", "scale_out/render/api_router.py"),
    ("GET", "/v1/responses/{response_id}", "openai/responses/api_router.py"),
    ("POST", "/v1/responses/{response_id}/cancel", "openai/responses/api_router.py"),
    ("POST", "/v1/score", "pooling/scoring/api_router.py"),
    ("POST", "/v1/systemone", "generate/structured_decisions/api_router.py"),
    ("POST", "/v1/unload_lora_adapter", "serve/lora/api_router.py"),
    ("POST", "/v2/embed", "pooling/embed/api_router.py"),
    ("POST", "/v2/rerank", "pooling/scoring/api_router.py"),
    ("GET", "/version", "serve/instrumentator/basic.py"),
    ("POST", "/wake_up", "serve/dev/sleep/api_router.py"),
    ("POST", "/weight_checker", "rl/online/api_router.py"),
    ("GET", "/weight_info", "rl/online/api_router.py"),
    ("GET", "/openapi.json", "FastAPI default (launchers/app.py builds FastAPI(...) with docs on)"),
    ("GET", "/redoc", "FastAPI default (launchers/app.py)"),
)
#: Starlette Mounts (any method, any sub-path)
MOUNTS = (("/metrics", "serve/instrumentator/metrics.py"),)
GUARDED_PREFIX = ("/v1", "/v2", "/inference", "/cohere")


class VllmAuthenticationDouble:
    """vLLM 0.33.0's AuthenticationMiddleware, from its contract (see the module docstring)."""

    def __init__(self, app, tokens: Sequence[str]):
        self.app = app
        self.digests = [hashlib.sha256(t.encode("utf-8")).digest() for t in tokens]

    def _ok(self, scope) -> bool:
        value = dict((k.lower(), v) for k, v in scope.get("headers") or ()).get(b"authorization")
        if not value:
            return False
        scheme, _, param = value.decode("latin-1").partition(" ")
        if scheme.lower() != "bearer":
            return False
        digest = hashlib.sha256(param.encode("utf-8")).digest()
        return any([secrets.compare_digest(digest, d) for d in self.digests])

    async def __call__(self, scope, receive, send):
        if scope["type"] not in ("http", "websocket") or scope.get("method") == "OPTIONS":
            return await self.app(scope, receive, send)
        path = scope["path"].removeprefix(scope.get("root_path", ""))
        if path.startswith(GUARDED_PREFIX) and not self._ok(scope):
            return await JSONResponse(content={"error": "Unauthorized"}, status_code=401)(
                scope, receive, send)
        return await self.app(scope, receive, send)


async def _reached(request):
    """Every route of the double: says which route answered (the guard let the request in)."""
    if request.url.path.endswith("/health"):
        return Response(status_code=200)  # serve/instrumentator/health.py: 200, empty body
    return JSONResponse({"route": request.scope["route"].path})


async def _realtime(websocket):
    await websocket.accept()
    await websocket.send_text("reached /v1/realtime")
    await websocket.close()


async def _metrics(scope, receive, send):
    await JSONResponse({"route": "/metrics"})(scope, receive, send)


def build_app(api_key: Optional[str] = None, middleware: Sequence[str] = (),
              allowed_origins: Sequence[str] = ()) -> Starlette:
    routes = []
    for method, path, _source in ROUTES:
        if method == "WEBSOCKET":
            routes.append(WebSocketRoute(path, _realtime))
        else:
            routes.append(Route(path, _reached, methods=[method]))
    for path, _ in MOUNTS:
        mount = Mount(path, app=_metrics)
        # serve/instrumentator/metrics.py: "Workaround for 307 Redirect for /metrics"
        mount.path_regex = re.compile(f"^{path}(?P<path>.*)$")
        routes.append(mount)
    app = Starlette(routes=routes)
    app.add_middleware(CORSMiddleware, allow_origins=list(allowed_origins), allow_credentials=False,
                       allow_methods=["*"], allow_headers=["*"])
    if api_key:
        app.add_middleware(VllmAuthenticationDouble, tokens=[api_key])
    for entry in middleware:  # vLLM's `--middleware` rule
        module_path, object_name = entry.rsplit(".", 1)
        imported = getattr(importlib.import_module(module_path), object_name)
        if not inspect.isclass(imported):
            raise ValueError(f"the double takes middleware classes only, not {entry}")
        app.add_middleware(imported)
    # vLLM's sagemaker_standards_bootstrap (model_hosting_container_standards 0.1.16
    # load_middlewares) rebuilds the middleware stack at once: middleware constructors run
    # while the server starts, not at the first request
    app.middleware_stack = app.build_middleware_stack()
    return app


def from_env() -> Starlette:
    """The app as `vllm serve` would build it from its environment (uvicorn --factory)."""
    return build_app(os.environ.get("VLLM_API_KEY") or None,
                     [m for m in os.environ.get("KK3_DOUBLE_MIDDLEWARE", "").split(",") if m])
