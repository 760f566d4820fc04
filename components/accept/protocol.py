"""What an OpenAI-compatible chat answer looks like, as vLLM sends it, and how to read it (pure).

The shapes are those of vLLM 0.33.0 (`vllm/entrypoints/openai/chat_completion/protocol.py`,
`serving.py`, `vllm/entrypoints/generate/base/protocol.py`):

- non-streamed: `{"object": "chat.completion", "choices": [{"message": {"role", "content",
  "reasoning", "tool_calls": [{"id", "type": "function", "function": {"name", "arguments"}}]},
  "finish_reason"}], "usage": {...}}`;
- streamed: `data: {"object": "chat.completion.chunk", "choices": [{"index", "delta": {...}}]}`
  events, the first delta carrying the role, then `content` / `reasoning` / `tool_calls`
  deltas (a tool call is keyed by `index`; its `arguments` may arrive whole, as the kimi_k3
  parser sends them, or in fragments, as other parsers do), then, when
  `stream_options.include_usage` was asked, a chunk with `"choices": []` and `usage`, then
  `data: [DONE]`. An error during a stream arrives as `data: {"error": {...}}`.

The reasoning parser's output is `reasoning` in vLLM 0.33.0; older vLLM releases (and some
other servers) call it `reasoning_content`: both are accepted.

Timing follows vLLM's own benchmark client (`vllm/benchmarks/lib/endpoint_request_func.py`,
`vllm/benchmarks/serve.py`): TTFT is the arrival of the first chunk that carries output
(content, reasoning or a tool call); TPOT is (last output chunk - first) / (output tokens - 1),
with the token count from `usage.completion_tokens` when the server reports it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Tuple

REASONING_FIELDS = ("reasoning", "reasoning_content")


def reasoning_text(obj: Mapping[str, Any]) -> str:
    """The reasoning parser's output in a message or delta (either field name), or ""."""
    for name in REASONING_FIELDS:
        value = obj.get(name)
        if isinstance(value, str) and value:
            return value
    return ""


def reasoning_field(obj: Mapping[str, Any]) -> Optional[str]:
    """Which reasoning field name `obj` uses (None when neither carries text)."""
    for name in REASONING_FIELDS:
        if isinstance(obj.get(name), str) and obj.get(name):
            return name
    return None


class ProtocolError(ValueError):
    """The server answered, but not in the OpenAI chat format."""


def first_message(resp: Any) -> Tuple[Dict[str, Any], Optional[str]]:
    """`choices[0].message` and its finish_reason of a non-streamed chat completion."""
    if not isinstance(resp, dict):
        raise ProtocolError(f"the body is {type(resp).__name__}, not a JSON object")
    if "error" in resp and "choices" not in resp:
        raise ProtocolError(f"the server returned an error object: {short(resp['error'])}")
    choices = resp.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise ProtocolError(f"no choices in the answer: {short(resp)}")
    msg = choices[0].get("message")
    if not isinstance(msg, dict):
        raise ProtocolError(f"choices[0] has no message: {short(choices[0])}")
    return msg, choices[0].get("finish_reason")


def check_tool_calls(tool_calls: Any, tool_name: str) -> Tuple[bool, str]:
    """Do `tool_calls` (OpenAI form) name `tool_name` with arguments that parse as a JSON object?"""
    if not isinstance(tool_calls, list) or not tool_calls:
        return False, "the answer carries no tool_calls entry"
    for i, tc in enumerate(tool_calls):
        fn = tc.get("function") if isinstance(tc, dict) else None
        if not isinstance(fn, dict):
            return False, f"tool_calls[{i}] has no function object: {short(tc)}"
        if fn.get("name") != tool_name:
            return False, f"tool_calls[{i}] names {fn.get('name')!r}, not the offered {tool_name!r}"
        args = fn.get("arguments")
        if not isinstance(args, str):
            return False, f"tool_calls[{i}].function.arguments is {type(args).__name__}, not a JSON string"
        try:
            parsed = json.loads(args)
        except ValueError as e:
            return False, f"tool_calls[{i}].function.arguments is not valid JSON ({e}): {short(args)}"
        if not isinstance(parsed, dict):
            return False, f"tool_calls[{i}].function.arguments is JSON {type(parsed).__name__}, not an object"
    return True, f"{len(tool_calls)} call(s) of {tool_name} with JSON arguments"


def short(obj: Any, limit: int = 160) -> str:
    """A one-line excerpt of an answer for a check's detail."""
    text = obj if isinstance(obj, str) else json.dumps(obj, ensure_ascii=False, default=str)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


@dataclass
class ToolCallParts:
    id: Optional[str] = None
    name: Optional[str] = None
    arguments: str = ""


@dataclass
class StreamState:
    """Everything one streamed chat completion said, with when its output arrived.

    `feed(payload, t)` takes each SSE event's data (the raw string) and the time it arrived.
    """

    start: float = 0.0
    chunks: int = 0
    role: Optional[str] = None
    content: List[str] = field(default_factory=list)
    reasoning: List[str] = field(default_factory=list)
    reasoning_fields: set = field(default_factory=set)
    tool_calls: Dict[int, ToolCallParts] = field(default_factory=dict)
    finish_reason: Optional[str] = None
    usage: Optional[Dict[str, Any]] = None
    error: Optional[str] = None
    done: bool = False
    after_done: int = 0
    #: content deltas that were the empty string (a token that decodes to nothing)
    empty_content: int = 0
    output_chunks: int = 0
    first_output_t: Optional[float] = None
    last_output_t: Optional[float] = None

    def feed(self, data: str, t: float) -> None:
        if self.done:
            self.after_done += 1
            return
        if data.strip() == "[DONE]":
            self.done = True
            return
        try:
            obj = json.loads(data)
        except ValueError:
            self.error = self.error or f"an event is not JSON: {short(data)}"
            return
        if not isinstance(obj, dict):
            self.error = self.error or f"an event is not a JSON object: {short(data)}"
            return
        if "error" in obj and not obj.get("choices"):
            self.error = self.error or f"the stream carried an error: {short(obj['error'])}"
            return
        self.chunks += 1
        if obj.get("object") not in (None, "chat.completion.chunk"):
            self.error = self.error or f"a chunk has object {obj.get('object')!r}, not chat.completion.chunk"
        if isinstance(obj.get("usage"), dict):
            self.usage = obj["usage"]
        for choice in obj.get("choices") or []:
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            self._delta(choice.get("delta") or {}, t)
            if choice.get("finish_reason"):
                self.finish_reason = choice["finish_reason"]

    def _delta(self, delta: Mapping[str, Any], t: float) -> None:
        if delta.get("role"):
            self.role = delta["role"]
        out = False
        if isinstance(delta.get("content"), str) and delta["content"]:
            self.content.append(delta["content"])
            out = True
        elif delta.get("content") == "" and not delta.get("role"):
            self.empty_content += 1
        r = reasoning_text(delta)
        if r:
            self.reasoning.append(r)
            self.reasoning_fields.add(reasoning_field(delta))
            out = True
        for tc in delta.get("tool_calls") or []:
            if not isinstance(tc, dict):
                continue
            parts = self.tool_calls.setdefault(int(tc.get("index", 0)), ToolCallParts())
            parts.id = tc.get("id") or parts.id
            fn = tc.get("function") or {}
            if fn.get("name"):
                parts.name = fn["name"]
            if isinstance(fn.get("arguments"), str):
                parts.arguments += fn["arguments"]
            out = True
        if out:
            self.output_chunks += 1
            if self.first_output_t is None:
                self.first_output_t = t
            self.last_output_t = t

    # ---- what the checks read ----------------------------------------------------------
    @property
    def text(self) -> str:
        return "".join(self.content)

    @property
    def reasoning_text(self) -> str:
        return "".join(self.reasoning)

    def assembled_tool_calls(self) -> List[Dict[str, Any]]:
        """The streamed tool calls, put together in OpenAI's non-streamed form."""
        return [{"id": p.id, "type": "function",
                 "function": {"name": p.name, "arguments": p.arguments}}
                for _, p in sorted(self.tool_calls.items())]

    @property
    def output_tokens(self) -> int:
        """`usage.completion_tokens` when reported, else the number of output chunks."""
        n = (self.usage or {}).get("completion_tokens")
        return int(n) if isinstance(n, int) and n >= 0 else self.output_chunks

    @property
    def ttft_s(self) -> Optional[float]:
        return None if self.first_output_t is None else self.first_output_t - self.start

    @property
    def tpot_s(self) -> Optional[float]:
        n = self.output_tokens
        if self.first_output_t is None or self.last_output_t is None or n < 2:
            return None
        return (self.last_output_t - self.first_output_t) / (n - 1)
