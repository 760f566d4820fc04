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
- keep-alive comments: `vllm/entrypoints/serve/utils/sse_keep_alive.py` (`: keep-alive`).

Timing: the first token leaves `ttft_s` after the request arrived, token k at
`ttft_s + k * tpot_s` (absolute schedule, no drift). Faults to inject (`faults=`): see FAULTS.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import secrets
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Dict, FrozenSet, List, Optional

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
}
WORDS = ("The", " sea", " is", " calm", " and", " the", " light", " is", " soft", " today.")


@dataclass
class DoubleConfig:
    served_model_name: str = "Kimi-K3"
    model_path: str = "/models/Kimi-K3"
    max_model_len: int = 131072
    api_key: Optional[str] = field(default=None, repr=False)
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
    log: Optional[Callable[[str], None]] = None

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

    def __init__(self, cfg: DoubleConfig, req: Dict[str, Any]):
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
        else:
            want = left if cfg.content_tokens is None else min(cfg.content_tokens, left)
            self.content = [WORDS[i % len(WORDS)] for i in range(max(want, 0))]
            if "no_content" in cfg.faults:
                self.content = ["" for _ in self.content]
            self.tool_tokens = 0
            self.finish = "length" if cfg.content_tokens is None or want < cfg.content_tokens \
                else "stop"
        self.prompt_tokens = 8 + sum(len(str(m.get("content", "")).split())
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


class _Server(ThreadingHTTPServer):
    #: listen backlog: a load test opens its N connections at once (the default is 5)
    request_queue_size = 256
    daemon_threads = True

    def handle_error(self, request, client_address):
        import sys

        if not isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            super().handle_error(request, client_address)  # a client hanging up is not news


class VllmOpenAIDouble:
    """The double as a server on 127.0.0.1 (an ephemeral port unless given).

    `with VllmOpenAIDouble(DoubleConfig(...)) as d: d.url` is the OpenAI base URL (`.../v1`).
    """

    def __init__(self, cfg: Optional[DoubleConfig] = None, host: str = "127.0.0.1",
                 port: int = 0):
        self.cfg = cfg or DoubleConfig()
        self.stopping = threading.Event()
        self.chat_requests = 0
        self.seen: List[Dict[str, Any]] = []
        self._lock = threading.Lock()
        handler = make_handler(self)
        self.httpd = _Server((host, port), handler)
        self.port = self.httpd.server_address[1]
        self.url = f"http://{host}:{self.port}/v1"
        self._thread: Optional[threading.Thread] = None
        self.started = time.monotonic()

    def is_ready(self) -> bool:
        return time.monotonic() >= self.started + self.cfg.ready_after_s and self.cfg.ready()

    def start(self) -> "VllmOpenAIDouble":
        self.started = time.monotonic()
        self._thread = threading.Thread(target=self.httpd.serve_forever,
                                        kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self) -> "VllmOpenAIDouble":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def next_chat(self) -> int:
        with self._lock:
            self.chat_requests += 1
            return self.chat_requests


def make_handler(double: VllmOpenAIDouble):
    cfg = double.cfg
    tokens = [hashlib.sha256(cfg.api_key.encode()).digest()] if cfg.api_key else []

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "uvicorn-double"

        # ---- plumbing ----------------------------------------------------------------
        def log_message(self, fmt, *args):
            if cfg.log is not None:
                cfg.log(fmt % args)

        def _json(self, code: int, obj: Any) -> None:
            body = json.dumps(obj).encode()
            self.send_response(code)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _empty(self, code: int) -> None:
            self.send_response(code)
            self.send_header("content-length", "0")
            self.end_headers()

        def _chunk(self, text: str) -> None:
            data = text.encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()

        def _event(self, obj: Any) -> None:
            self._chunk(f"data: {obj if isinstance(obj, str) else json.dumps(obj)}\n\n")

        def _hang(self) -> None:
            double.stopping.wait()
            self.close_connection = True

        def _authorized(self) -> bool:
            path = self.path.split("?", 1)[0]
            if not tokens or "ignore_key" in cfg.faults or not path.startswith(GUARDED_PREFIX):
                return True
            scheme, _, param = (self.headers.get("Authorization") or "").partition(" ")
            if scheme.lower() != "bearer":
                return False
            digest = hashlib.sha256(param.encode()).digest()
            return any(secrets.compare_digest(digest, t) for t in tokens)

        def _note(self):
            double.seen.append({"method": self.command, "path": self.path,
                                "client_port": self.client_address[1],
                                "authorization": bool(self.headers.get("Authorization"))})

        # ---- routes --------------------------------------------------------------------
        def do_GET(self):
            self._note()
            if "hang" in cfg.faults:
                return self._hang()
            if not self._authorized():
                return self._json(401, {"error": "Unauthorized"})
            path = self.path.split("?", 1)[0]
            if path == "/health":
                ok = double.is_ready() and "health_down" not in cfg.faults
                return self._empty(200 if ok else 503)
            if path == "/v1/models":
                name = cfg.served_model_name + ("-other" if "model_missing" in cfg.faults else "")
                now = int(time.time())
                return self._json(200, {"object": "list", "data": [{
                    "id": name, "object": "model", "created": now, "owned_by": "vllm",
                    "root": cfg.model_path, "parent": None, "max_model_len": cfg.max_model_len,
                    "permission": [{
                        "id": f"modelperm-{uuid.uuid4().hex}", "object": "model_permission",
                        "created": now, "allow_create_engine": False, "allow_sampling": True,
                        "allow_logprobs": True, "allow_search_indices": False,
                        "allow_view": True, "allow_fine_tuning": False, "organization": "*",
                        "group": None, "is_blocking": False}]}]})
            return self._json(404, {"detail": "Not Found"})

        def do_POST(self):
            self._note()
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            if "hang" in cfg.faults:
                return self._hang()
            if not self._authorized():
                return self._json(401, {"error": "Unauthorized"})
            if self.path.split("?", 1)[0] != "/v1/chat/completions":
                return self._json(404, {"detail": "Not Found"})
            ctype = (self.headers.get("content-type") or "").split(";", 1)[0].strip().lower()
            if ctype != "application/json":
                return self._json(400, _error("Unsupported Media Type: Only 'application/json' "
                                              "is allowed", "BadRequestError", 400))
            try:
                req = json.loads(raw or b"{}")
            except ValueError as e:
                return self._json(400, _error(f"JSON decode error: {e}", "BadRequestError", 400))
            if not isinstance(req, dict) or not isinstance(req.get("messages"), list):
                return self._json(400, _error("Field required", "BadRequestError", 400,
                                              "messages"))
            extra = sorted(set(req) - KNOWN_FIELDS)
            if extra and cfg.reject_unknown_fields:
                return self._json(400, _error(f"unknown fields {extra}", "BadRequestError", 400))
            if req.get("model") not in (None, cfg.served_model_name):
                return self._json(404, _error(
                    f"The model `{req.get('model')}` does not exist. Valid aliases: "
                    f"{cfg.served_model_name}.", "NotFoundError", 404, "model"))
            if not double.is_ready():
                return self._json(503, _error("The engine is not ready", "ServiceUnavailableError",
                                              503))
            n = double.next_chat()
            if "fail_requests" in cfg.faults and cfg.fail_every > 0 and n % cfg.fail_every == 0:
                return self._json(500, _error("EngineCore encountered an issue (double: "
                                              "injected failure)", "InternalServerError", 500))
            engine = _Engine(cfg, req)
            arrived = time.perf_counter()
            if req.get("stream"):
                return self._stream(req, engine, arrived)
            return self._complete(engine, arrived)

        # ---- answers -------------------------------------------------------------------
        def _sleep_until(self, t: float) -> bool:
            """Sleep to perf_counter time `t`; False when the server is stopping."""
            left = t - time.perf_counter()
            return not (left > 0 and double.stopping.wait(left))

        def _complete(self, e: _Engine, arrived: float) -> None:
            n = e.completion_tokens
            if not self._sleep_until(arrived + cfg.ttft_s + max(n - 1, 0) * cfg.tpot_s):
                return
            msg: Dict[str, Any] = {"role": "assistant",
                                   "content": None if e.tool else "".join(e.content),
                                   "refusal": None, "annotations": None, "audio": None,
                                   "function_call": None}
            if e.tool is not None:
                msg["tool_calls"] = [e.tool_call()]
            msg["reasoning"] = "".join(e.reasoning) or None
            if cfg.reasoning_field == "reasoning_content":
                msg["reasoning_content"] = msg.pop("reasoning")
            self._json(200, {
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

        def _stream(self, req: Dict[str, Any], e: _Engine, arrived: float) -> None:
            self.send_response(200)
            self.send_header("content-type", "text/event-stream; charset=utf-8")
            self.send_header("transfer-encoding", "chunked")
            self.end_headers()
            rid, created = f"chatcmpl-{uuid.uuid4().hex}", int(time.time())
            head = {"id": rid, "object": "chat.completion.chunk", "created": created,
                    "model": cfg.served_model_name}
            include_usage = bool((req.get("stream_options") or {}).get("include_usage"))
            # deltas in order: reasoning tokens, then content tokens or the tool-call block
            deltas: List[Any] = [{cfg.reasoning_field: r} for r in e.reasoning]
            if e.tool is not None:
                call = e.tool_call()
                if cfg.tool_stream == "whole":  # kimi_k3: buffered, sent when the block closes
                    deltas += [None] * (e.tool_tokens - 1)
                    deltas.append({"content": None, "tool_calls": [{"index": 0, **call}]})
                else:  # name first, then the arguments in fragments
                    fn = call["function"]
                    deltas.append({"tool_calls": [{"index": 0, "id": call["id"],
                                                   "type": "function",
                                                   "function": {"name": fn["name"],
                                                                "arguments": ""}}]})
                    deltas += [{"tool_calls": [{"index": 0,
                                                "function": {"arguments": fn["arguments"][i:i + 4]}}]}
                               for i in range(0, len(fn["arguments"]), 4)]
            else:
                deltas += [{"content": c} for c in e.content]
            try:
                # keep-alive comments while "prefilling", as with --sse-keep-alive-interval
                first = arrived + cfg.ttft_s
                if cfg.keep_alive_s > 0:
                    t = arrived + cfg.keep_alive_s
                    while t < first:
                        if not self._sleep_until(t):
                            return
                        self._chunk(": keep-alive\n\n")
                        t += cfg.keep_alive_s
                if not self._sleep_until(first):
                    return
                self._event({**head, "choices": [{"index": 0, "delta": {"role": "assistant",
                                                                        "content": ""},
                                                  "logprobs": None, "finish_reason": None}],
                             "prompt_token_ids": None, "prompt_text": None})
                for k, delta in enumerate(deltas):
                    if not self._sleep_until(first + k * cfg.tpot_s):
                        return
                    if k == 2 and "stream_error" in cfg.faults:
                        self._event(_error("EngineCore encountered an issue (double: injected "
                                           "stream error)", "InternalServerError", 500))
                        break
                    if k == 2 and "stall_stream" in cfg.faults:
                        return self._hang()
                    last = k == len(deltas) - 1
                    if delta is None and not last:
                        continue
                    choice = {"index": 0, "delta": delta or {}, "logprobs": None,
                              "finish_reason": e.finish if last else None, "token_ids": None}
                    if last:
                        choice.update(stop_reason=None, weight_versions=None)
                    self._event({**head, "choices": [choice], "kv_transfer_params": None})
                if include_usage:
                    self._event({**head, "choices": [], "usage": e.usage()})
                if "no_done" not in cfg.faults:
                    self._event("[DONE]")
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True

    return Handler


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
    a = p.parse_args(argv)
    import os

    cfg = DoubleConfig(served_model_name=a.served_model_name, ttft_s=a.ttft_s, tpot_s=a.tpot_s,
                       reasoning_tokens=a.reasoning_tokens,
                       api_key=os.environ.get(a.api_key_env) if a.api_key_env else None,
                       faults=frozenset(a.fault))
    d = VllmOpenAIDouble(cfg, a.host, a.port)
    print(f"(double) serving {cfg.served_model_name} on {d.url}", flush=True)
    try:
        d.httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
