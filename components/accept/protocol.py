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
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

REASONING_FIELDS = ("reasoning", "reasoning_content")

#: JSON nested deeper than this is refused (a chat answer is about 6 levels deep); Python's
#: decoder would otherwise raise RecursionError near 1000 levels, and every later walk too
MAX_DEPTH = 64
#: output text kept per stream and field (content, reasoning, each tool call's arguments);
#: beyond it the deltas are still counted and timed, their text is not kept
MAX_KEPT_CHARS = 256 * 1024
#: distinct tool calls one answer may carry (OpenAI's `index`)
MAX_TOOL_CALLS = 64
#: a token count above this is not a count (usage fields)
MAX_COUNT = 2 ** 31


def parse_json(text: str) -> Tuple[Any, Optional[str]]:
    """`(value, None)`, or `(None, why)` when `text` is not JSON or nests deeper than MAX_DEPTH.

    Never raises: a server's answer is data, and every way it can be wrong is a reason.
    """
    try:
        value = json.loads(text)
    except RecursionError:
        return None, f"JSON nested deeper than {MAX_DEPTH} levels"
    except ValueError as e:  # includes integers longer than Python's 4300-digit limit
        return None, f"not JSON ({str(e)[:80]})"
    depth = json_depth(value, MAX_DEPTH)
    if depth > MAX_DEPTH:
        return None, f"JSON nested deeper than {MAX_DEPTH} levels"
    return value, None


def json_depth(value: Any, stop: int = MAX_DEPTH) -> int:
    """Nesting depth of a parsed JSON value (a scalar is 0), counted without recursion; stops
    counting once past `stop`."""
    deepest = 0
    todo = [(value, 1)]
    while todo:
        node, d = todo.pop()
        if isinstance(node, dict):
            node = list(node.values())
        elif not isinstance(node, list):
            continue
        deepest = max(deepest, d)
        if deepest > stop:
            return deepest
        todo.extend((v, d + 1) for v in node if isinstance(v, (dict, list)))
    return deepest


def count(value: Any) -> Optional[int]:
    """`value` when it is a plausible token count (an int, not a bool, 0..MAX_COUNT), else None."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_COUNT:
        return value
    return None


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
    if len(tool_calls) > MAX_TOOL_CALLS:
        return False, f"the answer carries {len(tool_calls)} tool calls (more than {MAX_TOOL_CALLS})"
    for i, tc in enumerate(tool_calls):
        fn = tc.get("function") if isinstance(tc, dict) else None
        if not isinstance(fn, dict):
            return False, f"tool_calls[{i}] has no function object: {short(tc)}"
        if fn.get("name") != tool_name:
            return False, f"tool_calls[{i}] names {short(fn.get('name'), 60)!r}, not the offered {tool_name!r}"
        args = fn.get("arguments")
        if not isinstance(args, str):
            return False, f"tool_calls[{i}].function.arguments is {type(args).__name__}, not a JSON string"
        parsed, why = parse_json(args)
        if why:
            return False, f"tool_calls[{i}].function.arguments is not valid JSON ({why}): {short(args)}"
        if not isinstance(parsed, dict):
            return False, f"tool_calls[{i}].function.arguments is JSON {type(parsed).__name__}, not an object"
    return True, f"{len(tool_calls)} call(s) of {tool_name} with JSON arguments"


def short(obj: Any, limit: int = 160) -> str:
    """A one-line excerpt of an answer for a check's detail (never raises).

    Callers scrub before they cut: an excerpt must not end inside the key.
    """
    if isinstance(obj, str):
        text = obj[: limit * 8]
    else:
        try:
            text = json.dumps(obj, ensure_ascii=False, default=str)[: limit * 8]
        except (ValueError, RecursionError, TypeError):
            text = f"<{type(obj).__name__}>"
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


@dataclass
class ToolCallParts:
    id: Optional[str] = None
    name: Optional[str] = None
    arguments: str = ""


def _text(value: Any, limit: int = 256) -> Optional[str]:
    """A short string field (role, finish_reason, a tool call's id or name), or None."""
    return value[:limit] if isinstance(value, str) else None


@dataclass
class StreamState:
    """Everything one streamed chat completion said, with when its output arrived.

    `feed(payload, t)` takes each SSE event's data (the raw string) and the time it arrived.
    Whatever the server sends, feeding never raises and memory stays bounded: a malformed chunk
    sets `error` (the first one is kept), text beyond MAX_KEPT_CHARS is counted but not kept,
    and `scrub` (the run's Scrubber.tree) is applied to each chunk once decoded.
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
    #: the request's max_tokens: a usage.completion_tokens above it is a misreport
    max_tokens: Optional[int] = None
    #: applied to each decoded chunk (the Scrubber's `tree`); identity by default
    scrub: Callable[[Any], Any] = field(default=lambda obj: obj, repr=False)
    #: content deltas counted (kept or not); `content` keeps the text up to MAX_KEPT_CHARS
    content_deltas: int = 0
    reasoning_deltas: int = 0
    _kept: Dict[str, int] = field(default_factory=dict, repr=False)

    def _fail(self, why: str) -> None:
        self.error = self.error or why

    def feed(self, data: str, t: float) -> None:
        if self.done:
            self.after_done += 1
            return
        if data.strip() == "[DONE]":
            self.done = True
            return
        obj, why = parse_json(data)
        if why:
            self._fail(f"an event is {why}: {short(self.scrub(data))}")
            return
        obj = self.scrub(obj)
        if not isinstance(obj, dict):
            self._fail(f"an event is not a JSON object: {short(obj)}")
            return
        if "error" in obj and not obj.get("choices"):
            self._fail(f"the stream carried an error: {short(obj['error'])}")
            return
        self.chunks += 1
        if obj.get("object") not in (None, "chat.completion.chunk"):
            self._fail(f"a chunk has object {short(obj.get('object'), 60)!r}, "
                       "not chat.completion.chunk")
        usage = obj.get("usage")
        if usage is not None:
            self._usage(usage)
        choices = obj.get("choices")
        if choices is None:
            choices = []
        if not isinstance(choices, list):
            self._fail(f"a chunk's choices is {type(choices).__name__}, not a list")
            return
        for choice in choices:
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta")
            if delta is None:
                delta = {}
            if not isinstance(delta, dict):
                self._fail(f"a chunk's delta is {type(delta).__name__}, not an object")
                continue
            self._delta(delta, t)
            finish = _text(choice.get("finish_reason"), 64)
            if finish:
                self.finish_reason = finish

    def _usage(self, usage: Any) -> None:
        if not isinstance(usage, dict):
            self._fail(f"usage is {type(usage).__name__}, not an object")
            return
        for name in ("prompt_tokens", "completion_tokens", "total_tokens"):
            if name in usage and usage[name] is not None and count(usage[name]) is None:
                self._fail(f"usage.{name} is {short(usage[name], 40)}, not a token count")
                return
        n = usage.get("completion_tokens")
        if self.max_tokens is not None and isinstance(n, int) and n > self.max_tokens:
            self._fail(f"usage.completion_tokens {n} exceeds the request's max_tokens "
                       f"{self.max_tokens}: the server misreports its usage")
            return
        self.usage = {k: usage[k] for k in ("prompt_tokens", "completion_tokens", "total_tokens")
                      if count(usage.get(k)) is not None}

    def _keep(self, where: List[str], name: str, text: str) -> None:
        room = MAX_KEPT_CHARS - self._kept.get(name, 0)
        if room > 0:
            where.append(text[:room])
            self._kept[name] = self._kept.get(name, 0) + min(len(text), room)

    def _delta(self, delta: Mapping[str, Any], t: float) -> None:
        role = _text(delta.get("role"), 64)
        if role:
            self.role = role
        out = False
        content = delta.get("content")
        if isinstance(content, str) and content:
            self.content_deltas += 1
            self._keep(self.content, "content", content)
            out = True
        elif content == "" and not delta.get("role"):
            self.empty_content += 1
        r = reasoning_text(delta)
        if r:
            self.reasoning_deltas += 1
            self._keep(self.reasoning, "reasoning", r)
            self.reasoning_fields.add(reasoning_field(delta))
            out = True
        if self._tool_call_deltas(delta.get("tool_calls")):
            out = True
        if out:
            self.output_chunks += 1
            if self.first_output_t is None:
                self.first_output_t = t
            self.last_output_t = t

    def _tool_call_deltas(self, calls: Any) -> bool:
        """Add a delta's tool-call fragments to the calls being assembled (by index); True if
        any fragment was taken."""
        if calls is not None and not isinstance(calls, list):
            self._fail(f"a delta's tool_calls is {type(calls).__name__}, not a list")
            return False
        taken = False
        for tc in calls or []:
            if not isinstance(tc, dict):
                continue
            index = tc.get("index", 0)
            if count(index) is None or index >= MAX_TOOL_CALLS:
                self._fail(f"a tool call's index is {short(index, 40)}, not 0 to "
                           f"{MAX_TOOL_CALLS - 1}")
                continue
            parts = self.tool_calls.setdefault(index, ToolCallParts())
            parts.id = _text(tc.get("id")) or parts.id
            fn = tc.get("function")
            fn = fn if isinstance(fn, dict) else {}
            name = _text(fn.get("name"))
            if name:
                parts.name = name
            args = fn.get("arguments")
            if isinstance(args, str):
                if len(parts.arguments) + len(args) > MAX_KEPT_CHARS:
                    self._fail(f"tool call {index}'s arguments exceed {MAX_KEPT_CHARS} characters")
                else:
                    parts.arguments += args
            taken = True
        return taken

    # ---- what the checks read ----------------------------------------------------------
    @property
    def text(self) -> str:
        """The content text kept (scrubbed as a whole: a key split across deltas is caught)."""
        return self.scrub("".join(self.content))

    @property
    def reasoning_text(self) -> str:
        return self.scrub("".join(self.reasoning))

    def assembled_tool_calls(self) -> List[Dict[str, Any]]:
        """The streamed tool calls, put together in OpenAI's non-streamed form."""
        return [{"id": p.id, "type": "function",
                 "function": {"name": p.name, "arguments": self.scrub(p.arguments)}}
                for _, p in sorted(self.tool_calls.items())]

    @property
    def output_tokens(self) -> int:
        """`usage.completion_tokens` when reported, else the number of output chunks."""
        n = count((self.usage or {}).get("completion_tokens"))
        return self.output_chunks if n is None else n

    @property
    def ttft_s(self) -> Optional[float]:
        return None if self.first_output_t is None else self.first_output_t - self.start

    @property
    def tpot_s(self) -> Optional[float]:
        n = self.output_tokens
        if self.first_output_t is None or self.last_output_t is None or n < 2:
            return None
        return (self.last_output_t - self.first_output_t) / (n - 1)
