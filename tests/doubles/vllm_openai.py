"""Double of vLLM's OpenAI-compatible server (`vllm serve`), for the acceptance checks' tests.

vLLM itself cannot run here (no accelerator), so this double answers HTTP the way vLLM 0.33.0
does. It is written from vLLM's own code, read in the 0.33.0 wheel
(`pip download vllm==0.33.0 --no-deps`), not from our client:

- chunk and response objects: `vllm/entrypoints/openai/chat_completion/protocol.py`
  (ChatMessage with `reasoning`, ChatCompletionResponse, ChatCompletionStreamResponse),
  `vllm/entrypoints/generate/base/protocol.py` (DeltaMessage, DeltaToolCall, ToolCall with
  `chatcmpl-tool-<uuid>` ids, StreamOptions), `vllm/entrypoints/serve/engine/protocol.py`
  (UsageInfo, ErrorResponse/ErrorInfo, ModelList/ModelCard/ModelPermission);
- the stream: `vllm/entrypoints/openai/chat_completion/serving.py`
  (chat_completion_stream_generator: a first chunk with `{"role": "assistant", "content": ""}`,
  chunks serialised with `exclude_unset=True` so explicitly-set nulls stay, each event
  `data: <json>\\n\\n`, a `choices: []` usage chunk only when `stream_options.include_usage`,
  then `data: [DONE]\\n\\n`; errors inside a stream as `data: {"error": ...}`) and
  `chat_completion/api_router.py` (`StreamingResponse(media_type="text/event-stream")`, a
  non-streamed answer as `JSONResponse(model_dump())`);
- reasoning: the delta/message field is `reasoning` in 0.33.0 (protocol.py renames an incoming
  `reasoning_content` to `reasoning`); `reasoning_field="reasoning_content"` imitates older
  servers;
- tool calls: `vllm/tool_parsers/kimi_k3_tool_parser.py` streams each call whole once its block
  closes (one DeltaToolCall with index, id, type, name and all arguments, `json.dumps` of the
  decoded arguments); `tool_stream="split"` sends the name first and the arguments in fragments,
  as other parsers do; finish_reason `tool_calls`;
- auth: `vllm/entrypoints/serve/middleware/authenticate.py` (Bearer token, scheme
  case-insensitive, only paths under /v1 /v2 /inference /cohere guarded, 401 body
  `{"error": "Unauthorized"}`);
- /health: `vllm/entrypoints/serve/instrumentator/health.py` (200 with an empty body, 503 when
  the engine is dead); /v1/models: `vllm/entrypoints/openai/models/serving.py`;
  unknown model: `vllm/entrypoints/serve/engine/serving.py` (404 NotFoundError, param model);
- keep-alive comments: `vllm/entrypoints/serve/utils/sse_keep_alive.py` (`: keep-alive`);
- `GET /metrics`: vLLM's Prometheus metrics, names, labels, buckets and content negotiation as
  vLLM has them (tests/doubles/vllm_metrics.py says from where); each chat completion is recorded
  there (`metrics_version` picks the release: 0.33.0, or 0.23.0 as in vllm-ascend's image);
- `/invocations` (`vllm/entrypoints/serve/sagemaker/api_router.py`): POST, outside the guarded
  prefixes; a chat body is answered by the chat handler, anything else 400 "Cannot find
  suitable handler for request. Expected one of: [...]" (vllm-project/vllm#58144);
- `--middleware` (`serve/middleware/register.py`): `middleware=` import paths, imported with
  importlib and wrapped around the app in vLLM's order (the last added is outermost, in front of
  vLLM's own key check), each built as `cls(app)` in an environment holding `VLLM_API_KEY`
  (vLLM's process has it there). Each request then goes through the real ASGI middleware: an
  ASGI scope from the request, the middleware's own answer written out when it answers itself.

- the render route (vLLM 0.33.0 `vllm/entrypoints/scale_out/render/api_router.py`,
  `factories.py` `register_scale_out_api_routers`): `POST /v1/chat/completions/render` answers
  `GenerateRequest` (`request_id`, `token_ids`, ...; `scale_out/token_in_token_out/protocol.py`)
  only with `--enable-scale-out` (`enable_scale_out=True`); without it vLLM 0.33.0 registers a
  handler that answers 403 PermissionDeniedError "Scale-out endpoints are disabled". vLLM
  0.23.0 serves it always (`entrypoints/serve/render/api_router.py`; `render_always=True`).
  vllm-router's cache_aware policy routes on these token ids;
- prompts: rendered with a Kimi-shaped chat template and tokenised by a stand-in tokenizer
  (toy_tokenizer.py); `usage.prompt_tokens` is that count; a prompt longer than
  `max_model_len` is refused with 400 as vLLM 0.33.0 does (`vllm/renderers/params.py`
  `_token_len_check`);
- the automatic prefix cache (prefix_cache.py): its hits are what `/metrics` counts in
  `vllm:prefix_cache_hits` (per scheduled prompt, as vLLM's stat logger records them);
- known answers (knowledge.py): the double answers kimi-k3's known-answer questions, and can be
  wrong in the ways a broken deployment is.

Timing: the first token leaves `ttft_s` after the request arrived, token k at
`ttft_s + k * tpot_s` (absolute schedule, no drift). Faults to inject (`faults=`): see FAULTS.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import re
import secrets
import socket
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, FrozenSet, List, Optional

if __package__:  # tests.doubles.vllm_openai
    from . import toy_tokenizer as toks
    from .knowledge import FAULTS as KNOWLEDGE_FAULTS, Knowledge
    from .prefix_cache import PrefixCache
else:  # top-level, from tests/doubles/bin (bin/vllm runs the system python)
    import toy_tokenizer as toks
    from knowledge import FAULTS as KNOWLEDGE_FAULTS, Knowledge
    from prefix_cache import PrefixCache
try:
    import prometheus_client  # noqa: F401  (vllm_metrics is built on it)
except ModuleNotFoundError:  # the system python of the Slurm doubles has no prometheus_client
    VllmMetrics = None
else:
    if __package__:
        from .vllm_metrics import VllmMetrics
    else:
        from vllm_metrics import VllmMetrics


class _NoMetrics:
    """Stands in for VllmMetrics where prometheus_client is missing: records nothing, serves 404."""

    def __getattr__(self, name):
        return lambda *a, **k: None


GUARDED_PREFIX = ("/v1", "/v2", "/inference", "/cohere")
FAULTS = {
    "health_down": "/health answers 503 (engine dead)",
    "model_missing": "/v1/models lists another model",
    "no_content": "answers carry no assistant content (empty string)",
    "no_done": "streams end without data: [DONE]",
    "no_reasoning": "no reasoning field (server started without a reasoning parser)",
    "broken_tool_json": "tool-call arguments are not valid JSON",
    "no_tool_call": "the tool is never called (answers in plain text)",
    "ignore_key": "the API key is not enforced",
    "fail_requests": "every `fail_every`-th chat completion answers 500",
    "stream_error": "streams carry an error event after the first tokens",
    "stall_stream": "streams stop sending after the first tokens and never end",
    "hang": "every request is read and never answered",
    **KNOWLEDGE_FAULTS,
}
WORDS = ("The", " sea", " is", " calm", " and", " the", " light", " is", " soft", " today.")


@dataclass
class DoubleConfig:
    served_model_name: str = "Kimi-K3"
    model_path: str = "/models/Kimi-K3"
    max_model_len: int = 131072
    api_key: Optional[str] = field(default=None, repr=False)
    #: a replica not restarted after a new key: the key it started with is taken as well
    previous_key: Optional[str] = field(default=None, repr=False)
    ttft_s: float = 0.0
    tpot_s: float = 0.0
    reasoning_tokens: int = 3
    #: content tokens of an answer; None fills up to max_tokens (finish_reason "length")
    content_tokens: Optional[int] = None
    #: tokens a tool-call block takes (they arrive together, when the block closes)
    tool_call_tokens: int = 8
    reasoning_field: str = "reasoning"
    tool_stream: str = "whole"
    keep_alive_s: float = 0.0
    faults: FrozenSet[str] = frozenset()
    fail_every: int = 3
    #: unknown request fields: vLLM ignores them (extra="allow"); True answers 400 instead
    reject_unknown_fields: bool = False
    #: False while the engine is not ready: /health 503 and chat 503 (e.g. DP ranks missing)
    ready: Callable[[], bool] = lambda: True
    #: not ready (as above) for this many seconds after the server starts
    ready_after_s: float = 0.0
    #: the clock `ready_after_s` is counted on (a test in simulated time hands in its own)
    clock: Callable[[], float] = time.monotonic
    log: Optional[Callable[[str], None]] = None
    #: `--middleware` import paths (e.g. kimi-k3's `kk3_api_guard.ApiKeyGuard`), on sys.path
    middleware: tuple = ()
    #: the vLLM release whose metrics `/metrics` serves, and its engines (data-parallel ranks)
    metrics_version: str = "0.33.0"
    engines: int = 1
    #: vLLM 0.33's `--enable-scale-out`: serve the render route (else it answers 403)
    enable_scale_out: bool = False
    #: vLLM 0.23: the render route is always served
    render_always: bool = False
    #: blocks the prefix cache holds (16 tokens each)
    prefix_cache_blocks: int = 65536
    #: answer kimi-k3's known-answer questions (knowledge.py)
    knowledge: bool = True
    #: with the `lost_needle` fault: tokens of the prompt the double reads
    needle_window_tokens: int = 8192

    def __post_init__(self):
        unknown = set(self.faults) - set(FAULTS)
        if unknown:
            raise ValueError(f"unknown faults {sorted(unknown)}; known: {sorted(FAULTS)}")
        if self.reasoning_field not in ("reasoning", "reasoning_content"):
            raise ValueError("reasoning_field is reasoning or reasoning_content")
        if self.tool_stream not in ("whole", "split"):
            raise ValueError("tool_stream is whole or split")


KNOWN_FIELDS = frozenset({
    "messages", "model", "frequency_penalty", "logit_bias", "logprobs", "top_logprobs",
    "max_tokens", "max_completion_tokens", "n", "presence_penalty", "response_format", "seed",
    "stop", "stream", "stream_options", "temperature", "top_p", "tools", "tool_choice",
    "reasoning_effort", "include_reasoning", "parallel_tool_calls", "user", "top_k", "min_p",
    "chat_template_kwargs", "ignore_eos", "min_tokens", "skip_special_tokens",
})
#: what vllm-router 0.1.17 adds to every chat request it forwards (its own request type
#: re-serialised, SGLang's extensions at their defaults; seen on the wire by
#: tests/integration/test_ctyun_replicas.py). vLLM accepts unknown fields and only logs them
#: (`OpenAIBaseModel`: `ConfigDict(extra="allow")` and its `__log_extra_fields__` warning,
#: vllm/entrypoints/openai/protocol.py), and `continue_final_message` is one of its own: the
#: strict double (`reject_unknown_fields`) lets these through as well.
ROUTER_FIELDS = frozenset({"continue_final_message", "no_stop_trim", "return_hidden_states",
                           "separate_reasoning", "stream_reasoning"})


def _error(message: str, err_type: str, code: int, param: Optional[str] = None) -> Dict:
    return {"error": {"message": message, "type": err_type, "param": param, "code": code}}


def _tool_arguments(tool: Dict[str, Any]) -> Dict[str, Any]:
    """Plausible arguments for a function tool, from its JSON-schema parameters."""
    props = ((tool.get("function") or {}).get("parameters") or {}).get("properties") or {}
    out = {}
    for name, schema in props.items():
        t = (schema or {}).get("type")
        out[name] = {"integer": 1, "number": 1.5, "boolean": True, "object": {},
                     "array": []}.get(t, "Paris" if "city" in name else "x")
    return out


class _Engine:
    """What one request generates: a list of (delay_s, delta) plus the finish."""

    def __init__(self, cfg: DoubleConfig, req: Dict[str, Any], prompt_tokens: Optional[int] = None,
                 said: Optional[str] = None):
        self.cfg = cfg
        max_tokens = req.get("max_completion_tokens") or req.get("max_tokens") or 64
        self.max_tokens = max(1, int(max_tokens))
        tools = req.get("tools") or []
        choice = req.get("tool_choice", "auto")
        self.tool = tools[0] if tools and choice != "none" \
            and "no_tool_call" not in cfg.faults else None
        n_reason = 0 if "no_reasoning" in cfg.faults else cfg.reasoning_tokens
        if req.get("include_reasoning") is False:
            n_reason = 0
        self.reasoning = [f"think{i} " for i in range(min(n_reason, self.max_tokens))]
        left = self.max_tokens - len(self.reasoning)
        if self.tool is not None:
            self.content: List[str] = []
            self.tool_tokens = min(cfg.tool_call_tokens, max(left, 1))
            self.finish = "tool_calls"
        elif said is not None:  # a known answer: its pieces, cut at max_tokens
            pieces = re.findall(r"\s*\S+", said)
            self.content = pieces[:max(left, 0)]
            if "no_content" in cfg.faults:
                self.content = ["" for _ in self.content]
            self.tool_tokens = 0
            self.finish = "stop" if len(self.content) == len(pieces) else "length"
        else:
            want = left if cfg.content_tokens is None else min(cfg.content_tokens, left)
            self.content = [WORDS[i % len(WORDS)] for i in range(max(want, 0))]
            if "no_content" in cfg.faults:
                self.content = ["" for _ in self.content]
            self.tool_tokens = 0
            self.finish = "length" if cfg.content_tokens is None or want < cfg.content_tokens \
                else "stop"
        self.prompt_tokens = prompt_tokens if prompt_tokens is not None else 8 + sum(
            len(str(m.get("content", "")).split())
            for m in req.get("messages") or [] if isinstance(m, dict))

    @property
    def completion_tokens(self) -> int:
        return len(self.reasoning) + len(self.content) + self.tool_tokens

    def tool_call(self) -> Dict[str, Any]:
        fn = self.tool["function"]
        args = json.dumps(_tool_arguments(self.tool), ensure_ascii=False)
        if "broken_tool_json" in self.cfg.faults:
            args = args[:-1]  # the closing brace lost: not JSON any more
        return {"id": f"chatcmpl-tool-{uuid.uuid4().hex}", "type": "function",
                "function": {"name": fn.get("name"), "arguments": args}}

    def usage(self) -> Dict[str, int]:
        return {"prompt_tokens": self.prompt_tokens,
                "total_tokens": self.prompt_tokens + self.completion_tokens,
                "completion_tokens": self.completion_tokens}


class VllmOpenAIDouble:
    """The double as a server on 127.0.0.1 (an ephemeral port unless given).

    One asyncio event loop serves every connection, as uvicorn does for vLLM (a thread per
    connection would add the interpreter lock's hand-offs to the timing under load).
    `with VllmOpenAIDouble(DoubleConfig(...)) as d: d.url` runs it on a background thread;
    `serve_forever()` runs it in the calling thread.
    """

    def __init__(self, cfg: Optional[DoubleConfig] = None, host: str = "127.0.0.1",
                 port: int = 0):
        self.cfg = cfg or DoubleConfig()
        self.chat_requests = 0
        self.seen: List[Dict[str, Any]] = []
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind((host, port))
        self._sock.listen(256)  # a load test opens its N connections at once
        self.port = self._sock.getsockname()[1]
        self.url = f"http://{'127.0.0.1' if host == '0.0.0.0' else host}:{self.port}/v1"
        self.started = self.cfg.clock()
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._stopped: Optional[asyncio.Event] = None
        self._thread: Optional[threading.Thread] = None
        self._up = threading.Event()
        self._writers: set = set()
        self.asgi = _middleware_stack(self.cfg)
        self.metrics = VllmMetrics(self.cfg.metrics_version, self.cfg.served_model_name,
                                   self.cfg.engines) if VllmMetrics else _NoMetrics()
        self.running = 0
        self.cache = PrefixCache(self.cfg.prefix_cache_blocks)
        self.knowledge = Knowledge(self.cfg.needle_window_tokens) if self.cfg.knowledge else None
        self.render_requests = 0
        #: the first user message of each chat completion served (its first 80 characters)
        self.served: List[str] = []

    # ---- lifecycle ---------------------------------------------------------------------
    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stopped = asyncio.Event()
        server = await asyncio.start_server(self._connection, sock=self._sock, limit=1 << 20)
        self._up.set()
        await self._stopped.wait()
        server.close()
        for w in list(self._writers):  # idle keep-alive connections too (no wait_closed hang)
            w.close()
        tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def serve_forever(self) -> None:
        self.started = self.cfg.clock()
        asyncio.run(self._main())

    def start(self) -> "VllmOpenAIDouble":
        self._thread = threading.Thread(target=self.serve_forever, daemon=True)
        self._thread.start()
        self._up.wait(10)
        return self

    def stop(self) -> None:
        if self._loop is not None and self._stopped is not None:
            self._loop.call_soon_threadsafe(self._stopped.set)
        if self._thread is not None:
            self._thread.join(10)

    def __enter__(self) -> "VllmOpenAIDouble":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def is_ready(self) -> bool:
        return self.cfg.clock() >= self.started + self.cfg.ready_after_s and self.cfg.ready()

    # ---- HTTP/1.1 ------------------------------------------------------------------------
    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        self._writers.add(writer)
        peer = writer.get_extra_info("peername") or ("", 0)
        # TCP_NODELAY, as uvicorn has it: without it each small SSE write waits for the
        # client's delayed ACK (~40 ms), a TTFT/TPOT that vLLM does not have
        writer.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
                    return
                lines = head.decode("latin-1").split("\r\n")
                try:
                    method, target, _version = lines[0].split(" ", 2)
                except ValueError:
                    return
                headers = {}
                for line in lines[1:]:
                    if ":" in line:
                        k, _, v = line.partition(":")
                        headers[k.strip().lower()] = v.strip()
                body = await reader.readexactly(int(headers.get("content-length") or 0))
                self.seen.append({"method": method, "path": target, "client_port": peer[1],
                                  "authorization": "authorization" in headers,
                                  "headers": sorted(headers)})
                http = _Exchange(self, writer, method, target, headers, body)
                keep = await http.answer()
                if not keep or headers.get("connection", "").lower() == "close":
                    return
        except (ConnectionError, asyncio.IncompleteReadError):
            return
        except asyncio.CancelledError:
            return  # the double is stopping: end quietly
        finally:
            self._writers.discard(writer)
            writer.close()


_ENV_LOCK = threading.Lock()


def _middleware_stack(cfg: DoubleConfig):
    """The `--middleware` classes wrapped around an app that only says "passed", vLLM's way
    (vllm/entrypoints/serve/middleware/register.py + starlette's add_middleware order)."""
    if not cfg.middleware or "ignore_key" in cfg.faults:
        return None
    import importlib
    import inspect
    import os

    async def passed(scope, receive, send):
        scope["kk3.passed"] = True

    app = passed
    with _ENV_LOCK:  # vLLM's process holds its key in the environment
        before = os.environ.get("VLLM_API_KEY")
        if cfg.api_key:
            os.environ["VLLM_API_KEY"] = cfg.api_key
        try:
            for entry in cfg.middleware:
                module_path, object_name = entry.rsplit(".", 1)
                imported = getattr(importlib.import_module(module_path), object_name)
                if not inspect.isclass(imported):
                    raise ValueError(f"the double takes middleware classes only, not {entry}")
                app = imported(app)
        finally:
            if before is None:
                os.environ.pop("VLLM_API_KEY", None)
            else:
                os.environ["VLLM_API_KEY"] = before
    return app


class _Exchange:
    """One request and its answer, written the way vLLM's FastAPI app answers it."""

    def __init__(self, double: VllmOpenAIDouble, writer, method, target, headers, body):
        self.d, self.cfg, self.w = double, double.cfg, writer
        self.method, self.path, self.target = method, target.split("?", 1)[0], target
        self.headers, self.body = headers, body
        self.status = 0

    def _log(self) -> None:
        if self.cfg.log is not None:
            self.cfg.log(f'"{self.method} {self.path} HTTP/1.1" {self.status} -')

    async def _head(self, code: int, headers: List[tuple]) -> None:
        self.status = code
        reason = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 404: "Not Found",
                  500: "Internal Server Error", 503: "Service Unavailable"}.get(code, "")
        out = [f"HTTP/1.1 {code} {reason}", "server: uvicorn-double",
               f"date: {time.strftime('%a, %d %b %Y %H:%M:%S GMT', time.gmtime())}"]
        out += [f"{k}: {v}" for k, v in headers]
        self.w.write(("\r\n".join(out) + "\r\n\r\n").encode("latin-1"))
        self._log()

    async def _json(self, code: int, obj: Any) -> bool:
        body = json.dumps(obj).encode()
        await self._head(code, [("content-type", "application/json"),
                                ("content-length", str(len(body)))])
        self.w.write(body)
        await self.w.drain()
        return True

    async def _empty(self, code: int) -> bool:
        await self._head(code, [("content-length", "0")])
        await self.w.drain()
        return True

    async def _chunk(self, text: str) -> None:
        data = text.encode()
        self.w.write(b"%x\r\n%s\r\n" % (len(data), data))
        await self.w.drain()

    async def _event(self, obj: Any) -> None:
        await self._chunk(f"data: {obj if isinstance(obj, str) else json.dumps(obj)}\n\n")

    async def _hang(self) -> bool:
        await self.d._stopped.wait()
        return False

    @staticmethod
    async def _until(t: float) -> None:
        left = t - time.perf_counter()
        if left > 0:
            await asyncio.sleep(left)

    def _authorized(self) -> bool:
        """vLLM's AuthenticationMiddleware: Bearer (any case) on the guarded prefixes only."""
        cfg = self.cfg
        if not cfg.api_key or "ignore_key" in cfg.faults or not self.path.startswith(GUARDED_PREFIX):
            return True
        scheme, _, param = (self.headers.get("authorization") or "").partition(" ")
        if scheme.lower() != "bearer":
            return False
        got = hashlib.sha256(param.encode()).digest()
        return any(secrets.compare_digest(got, hashlib.sha256(k.encode()).digest())
                   for k in (cfg.api_key, cfg.previous_key) if k)

    # ---- routes --------------------------------------------------------------------------
    async def answer(self) -> bool:
        """Answer the request; False when the connection must close."""
        cfg = self.cfg
        if "hang" in cfg.faults:
            return await self._hang()
        if self.d.asgi is not None and not await self._through_middleware():
            return True  # the middleware answered (e.g. kimi-k3's guard: 401)
        if not self._authorized():
            return await self._json(401, {"error": "Unauthorized"})
        if self.method == "GET" and self.path == "/health":
            ok = self.d.is_ready() and "health_down" not in cfg.faults
            return await self._empty(200 if ok else 503)
        if self.method == "GET" and self.path == "/metrics" and VllmMetrics:
            headers, body = self.d.metrics.exposition(self.headers.get("accept"),
                                                      self.headers.get("accept-encoding"))
            await self._head(200, headers + [("content-length", str(len(body)))])
            self.w.write(body)
            await self.w.drain()
            return True
        if self.method == "GET" and self.path == "/v1/models":
            return await self._json(200, self._models())
        if self.method == "POST" and self.path == "/v1/chat/completions":
            return await self._chat()
        if self.method == "POST" and self.path == "/v1/chat/completions/render":
            return await self._render()
        if self.method == "POST" and self.path == "/invocations":
            return await self._invocations()
        return await self._json(404, {"detail": "Not Found"})

    async def _invocations(self) -> bool:
        """SageMaker's route: the chat handler for a chat body (no key check of vLLM's own)."""
        try:
            req = json.loads(self.body or b"{}")
        except ValueError as e:
            return await self._json(400, {"detail": f"JSON decode error: {e}"})
        if isinstance(req, dict) and isinstance(req.get("messages"), list):
            return await self._chat()
        return await self._json(400, _error(
            "Cannot find suitable handler for request. Expected one of: "
            "['ChatCompletionRequest', 'CompletionRequest']", "BadRequestError", 400))

    async def _through_middleware(self) -> bool:
        """Run the request through the ASGI middleware; True when it let the request in."""
        from urllib.parse import unquote

        raw_path, _, query = self.target.partition("?")
        scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
                 "method": self.method, "scheme": "http", "path": unquote(raw_path),
                 "raw_path": raw_path.encode("latin-1"), "query_string": query.encode("latin-1"),
                 "root_path": "", "headers": [(k.encode("latin-1"), v.encode("latin-1"))
                                              for k, v in self.headers.items()]}
        sent: List[Dict[str, Any]] = []
        body_given = False

        async def receive():
            nonlocal body_given
            if body_given:
                return {"type": "http.disconnect"}
            body_given = True
            return {"type": "http.request", "body": self.body, "more_body": False}

        async def send(message):
            sent.append(message)

        await self.d.asgi(scope, receive, send)
        if scope.get("kk3.passed"):
            return True
        start = next(m for m in sent if m["type"] == "http.response.start")
        body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
        await self._head(start["status"], [(bytes(k).decode("latin-1"), bytes(v).decode("latin-1"))
                                           for k, v in start.get("headers", [])])
        self.w.write(body)
        await self.w.drain()
        return False

    async def _render(self) -> bool:
        cfg = self.cfg
        if not (cfg.enable_scale_out or cfg.render_always):
            return await self._json(403, _error(
                "Scale-out endpoints are disabled. Restart vllm serve with --enable-scale-out "
                "to enable them.", "PermissionDeniedError", 403))
        try:
            req = json.loads(self.body or b"{}")
        except ValueError as e:
            return await self._json(400, _error(f"JSON decode error: {e}", "BadRequestError", 400))
        if not isinstance(req, dict) or not isinstance(req.get("messages"), list):
            return await self._json(400, _error("Field required", "BadRequestError", 400,
                                                "messages"))
        self.d.render_requests += 1
        ids = toks.encode(toks.render(req["messages"]))
        return await self._json(200, {"request_id": f"chatcmpl-{uuid.uuid4().hex}",
                                      "token_ids": ids, "token_offsets": None, "features": None,
                                      "sampling_params": {"max_tokens": req.get("max_tokens")},
                                      "model": cfg.served_model_name, "stream": False,
                                      "cache_salt": None, "priority": 0})

    def _models(self) -> Dict[str, Any]:
        cfg = self.cfg
        name = cfg.served_model_name + ("-other" if "model_missing" in cfg.faults else "")
        now = int(time.time())
        return {"object": "list", "data": [{
            "id": name, "object": "model", "created": now, "owned_by": "vllm",
            "root": cfg.model_path, "parent": None, "max_model_len": cfg.max_model_len,
            "permission": [{
                "id": f"modelperm-{uuid.uuid4().hex}", "object": "model_permission",
                "created": now, "allow_create_engine": False, "allow_sampling": True,
                "allow_logprobs": True, "allow_search_indices": False, "allow_view": True,
                "allow_fine_tuning": False, "organization": "*", "group": None,
                "is_blocking": False}]}]}

    async def _chat(self) -> bool:
        cfg = self.cfg
        ctype = self.headers.get("content-type", "").split(";", 1)[0].strip().lower()
        if ctype != "application/json":
            return await self._json(400, _error("Unsupported Media Type: Only 'application/json' "
                                                "is allowed", "BadRequestError", 400))
        try:
            req = json.loads(self.body or b"{}")
        except ValueError as e:
            return await self._json(400, _error(f"JSON decode error: {e}", "BadRequestError", 400))
        if not isinstance(req, dict) or not isinstance(req.get("messages"), list):
            return await self._json(400, _error("Field required", "BadRequestError", 400,
                                                "messages"))
        extra = sorted(set(req) - KNOWN_FIELDS - ROUTER_FIELDS)
        if extra and cfg.reject_unknown_fields:
            return await self._json(400, _error(f"unknown fields {extra}", "BadRequestError", 400))
        if req.get("model") not in (None, cfg.served_model_name):
            return await self._json(404, _error(
                f"The model `{req.get('model')}` does not exist. Valid aliases: "
                f"{cfg.served_model_name}.", "NotFoundError", 404, "model"))
        if not self.d.is_ready():
            return await self._json(503, _error("The engine is not ready",
                                                "ServiceUnavailableError", 503))
        self.d.chat_requests += 1
        n = self.d.chat_requests
        if "fail_requests" in cfg.faults and cfg.fail_every > 0 and n % cfg.fail_every == 0:
            return await self._json(500, _error("EngineCore encountered an issue (double: "
                                                "injected failure)", "InternalServerError", 500))
        prompt = toks.render(req["messages"])
        ids = toks.encode(prompt)
        if len(ids) > cfg.max_model_len:
            return await self._json(400, _error(
                f"This model's maximum context length is {cfg.max_model_len} tokens. However, "
                f"your prompt contains {len(ids)} input tokens, which exceeds this limit even "
                "without any output tokens. Please reduce the length of the input prompt.",
                "BadRequestError", 400, "input_tokens"))
        _, hit = self.d.cache.lookup_and_insert(ids)
        first = next((m for m in req["messages"] if isinstance(m, dict)
                      and m.get("role") == "user"), {})
        self.d.served.append(toks.content_text(first)[:80])
        said = None
        if self.d.knowledge is not None:
            said = self.d.knowledge.answer(prompt, req, cfg.faults, toks.count)
        engine = _Engine(cfg, req, prompt_tokens=len(ids), said=said)
        arrived = time.perf_counter()
        self._started(engine, hit)
        ok = False
        try:
            if req.get("stream"):
                ok = await self._stream(req, engine, arrived)
            else:
                ok = await self._complete(engine, arrived)
            return ok
        finally:
            self._ended(engine, arrived, ok)

    # ---- metrics (what vLLM's stat logger records for a request) -------------------------
    def _started(self, e: _Engine, cached: int) -> None:
        """`cached`: the prompt tokens the prefix cache held (prefix_cache.py)."""
        d = self.d
        d.running += 1
        d.metrics.scheduled(e.prompt_tokens, cached)
        d.metrics.set_scheduler(d.running, 0, min(1.0, d.running / 16))

    def _ended(self, e: _Engine, arrived: float, ok: bool) -> None:
        d, cfg = self.d, self.cfg
        d.running -= 1
        d.metrics.set_scheduler(d.running, 0, min(1.0, d.running / 16))
        if ok:
            e2e = time.perf_counter() - arrived
            d.metrics.finished(prompt_tokens=e.prompt_tokens, output_tokens=e.completion_tokens,
                               queue_s=0.0, ttft_s=min(cfg.ttft_s, e2e), e2e_s=e2e,
                               finished_reason="length" if e.finish == "length" else "stop")

    # ---- answers -------------------------------------------------------------------------
    async def _complete(self, e: _Engine, arrived: float) -> bool:
        cfg = self.cfg
        await self._until(arrived + cfg.ttft_s + max(e.completion_tokens - 1, 0) * cfg.tpot_s)
        msg: Dict[str, Any] = {"role": "assistant",
                               "content": None if e.tool else "".join(e.content),
                               "refusal": None, "annotations": None, "audio": None,
                               "function_call": None}
        if e.tool is not None:
            msg["tool_calls"] = [e.tool_call()]
        msg["reasoning"] = "".join(e.reasoning) or None
        if cfg.reasoning_field == "reasoning_content":
            msg["reasoning_content"] = msg.pop("reasoning")
        return await self._json(200, {
            "id": f"chatcmpl-{uuid.uuid4().hex}", "object": "chat.completion",
            "created": int(time.time()), "model": cfg.served_model_name,
            "choices": [{"index": 0, "message": msg, "logprobs": None,
                         "finish_reason": e.finish, "stop_reason": None, "token_ids": None,
                         "routed_experts": None, "weight_versions": None}],
            "service_tier": None, "system_fingerprint": None,
            "usage": {**e.usage(), "prompt_tokens_details": None,
                      "completion_tokens_details": None},
            "prompt_logprobs": None, "prompt_token_ids": None, "prompt_text": None,
            "kv_transfer_params": None, "ec_transfer_params": None, "metrics": None})

    def _deltas(self, e: _Engine) -> List[Any]:
        """The stream's deltas in order: reasoning tokens, then content or the tool-call block
        (None: a token that sends no delta, as inside a kimi_k3 tool block)."""
        cfg = self.cfg
        deltas: List[Any] = [{cfg.reasoning_field: r} for r in e.reasoning]
        if e.tool is None:
            return deltas + [{"content": c} for c in e.content]
        call = e.tool_call()
        if cfg.tool_stream == "whole":  # kimi_k3: buffered, sent when the block closes
            deltas += [None] * (e.tool_tokens - 1)
            return deltas + [{"content": None, "tool_calls": [{"index": 0, **call}]}]
        fn = call["function"]  # name first, then the arguments in fragments
        deltas.append({"tool_calls": [{"index": 0, "id": call["id"], "type": "function",
                                       "function": {"name": fn["name"], "arguments": ""}}]})
        return deltas + [{"tool_calls": [{"index": 0, "function": {"arguments": fn["arguments"][i:i + 4]}}]}
                         for i in range(0, len(fn["arguments"]), 4)]

    async def _stream(self, req: Dict[str, Any], e: _Engine, arrived: float) -> bool:
        cfg = self.cfg
        await self._head(200, [("content-type", "text/event-stream; charset=utf-8"),
                               ("transfer-encoding", "chunked")])
        head = {"id": f"chatcmpl-{uuid.uuid4().hex}", "object": "chat.completion.chunk",
                "created": int(time.time()), "model": cfg.served_model_name}
        include_usage = bool((req.get("stream_options") or {}).get("include_usage"))
        deltas = self._deltas(e)
        first = arrived + cfg.ttft_s
        if cfg.keep_alive_s > 0:  # as with --sse-keep-alive-interval while "prefilling"
            t = arrived + cfg.keep_alive_s
            while t < first:
                await self._until(t)
                await self._chunk(": keep-alive\n\n")
                t += cfg.keep_alive_s
        await self._until(first)
        await self._event({**head, "choices": [{"index": 0, "delta": {"role": "assistant",
                                                                      "content": ""},
                                                "logprobs": None, "finish_reason": None}],
                           "prompt_token_ids": None, "prompt_text": None})
        for k, delta in enumerate(deltas):
            await self._until(first + k * cfg.tpot_s)
            if k == 2 and "stream_error" in cfg.faults:
                await self._event(_error("EngineCore encountered an issue (double: injected "
                                         "stream error)", "InternalServerError", 500))
                break
            if k == 2 and "stall_stream" in cfg.faults:
                return await self._hang()
            last = k == len(deltas) - 1
            if delta is None and not last:
                continue
            choice = {"index": 0, "delta": delta or {}, "logprobs": None,
                      "finish_reason": e.finish if last else None, "token_ids": None}
            if last:
                choice.update(stop_reason=None, weight_versions=None)
            await self._event({**head, "choices": [choice], "kv_transfer_params": None})
        if include_usage:
            await self._event({**head, "choices": [], "usage": e.usage()})
        if "no_done" not in cfg.faults:
            await self._event("[DONE]")
        self.w.write(b"0\r\n\r\n")
        await self.w.drain()
        return True


def main(argv=None) -> int:
    """`python -m tests.doubles.vllm_openai --port 8000 ...`: run the double in the foreground."""
    p = argparse.ArgumentParser(description="vLLM OpenAI server double (tests only)")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--served-model-name", default="Kimi-K3")
    p.add_argument("--api-key-env", help="environment variable holding the API key")
    p.add_argument("--ttft-s", type=float, default=0.0)
    p.add_argument("--tpot-s", type=float, default=0.0)
    p.add_argument("--reasoning-tokens", type=int, default=3)
    p.add_argument("--fault", action="append", default=[], choices=sorted(FAULTS))
    p.add_argument("--metrics-version", default="0.33.0", help="vLLM release of /metrics")
    p.add_argument("--engines", type=int, default=1, help="engines (data-parallel ranks) in /metrics")
    p.add_argument("--middleware", action="append", default=[],
                   help="an ASGI middleware import path, as vllm serve --middleware")
    a = p.parse_args(argv)
    import os

    cfg = DoubleConfig(served_model_name=a.served_model_name, ttft_s=a.ttft_s, tpot_s=a.tpot_s,
                       reasoning_tokens=a.reasoning_tokens,
                       api_key=os.environ.get(a.api_key_env) if a.api_key_env else None,
                       faults=frozenset(a.fault), metrics_version=a.metrics_version,
                       engines=a.engines, middleware=tuple(a.middleware))
    d = VllmOpenAIDouble(cfg, a.host, a.port)
    print(f"(double) serving {cfg.served_model_name} on {d.url}", flush=True)
    try:
        d.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
