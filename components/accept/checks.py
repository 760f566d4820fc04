"""The functional checks, each judging one thing a user of the endpoint depends on.

Each check sends what a client would send and returns a `CheckResult(name, ok, detail)`; the
detail says what was seen (never the key). The prompts are plain: the checks must work on any
OpenAI-compatible server, so they use only OpenAI's own request fields.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence

from .client import Answer, Client, StreamAnswer
from .protocol import ProtocolError, check_tool_calls, first_message, parse_json, \
    reasoning_field, reasoning_text, short
from .report import CheckResult

CHAT_PROMPT = "What is 17 + 25? Answer with the number only."
STREAM_PROMPT = "Count from 1 to 5, separated by spaces."
TOOL_PROMPT = "What is the weather in Paris right now? Use the get_weather tool."
#: the one function tool the tool_call check offers (OpenAI `tools` form)
TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string", "description": "City name"}},
            "required": ["city"],
        },
    },
}
#: a tool check is retried this many times when the model answered without calling the tool
#: (the Kimi K3 recipe notes K3 occasionally emits a tool-call format its parser misses);
#: malformed arguments are never retried: that is the parser's output and fails at once
TOOL_ATTEMPTS = 2


@dataclass
class Seen:
    """Answers kept for the checks that judge more than one request (reasoning)."""

    chat: Optional[Dict[str, Any]] = None
    stream: Optional[StreamAnswer] = None
    notes: List[str] = field(default_factory=list)


def _ms(s: float) -> str:
    return f"{s * 1000:.0f} ms"


def _body(model: str, prompt: str, max_tokens: int, **extra) -> Dict[str, Any]:
    return {"model": model, "messages": [{"role": "user", "content": prompt}],
            "max_tokens": int(max_tokens), **extra}


def _http_problem(a: Answer, what: str) -> Optional[str]:
    if a.status is None:
        return f"{what}: {a.error}"
    if a.error:
        return f"{what}: {a.describe()}"
    if a.status == 401:
        return f"{what}: HTTP 401 (the API key was refused; check --api-key-env)"
    if a.status != 200:
        return f"{what}: {a.describe()}"
    return None


def _message(a: Answer):
    """`first_message` of a 200 answer; ProtocolError naming what was wrong (not JSON too)."""
    if a.body is None:
        raise ProtocolError(f"the answer is not JSON: {short(a.text) or '(empty)'}")
    return first_message(a.body)


async def health(c: Client):
    """(result, answered): `answered` is False when no HTTP answer came at all."""
    a = await c.request("GET", "/health", root=True, key=None, timeout_s=min(c.timeout_s, 30))
    if a.status == 200 and not a.error:
        return CheckResult("health", True, f"GET /health 200 in {_ms(a.elapsed_s)}"), True
    return CheckResult("health", False, f"GET {c.root}/health: {a.describe()}"), \
        a.status is not None


async def models(c: Client, model: str) -> CheckResult:
    a = await c.request("GET", "/models", timeout_s=min(c.timeout_s, 30))
    bad = _http_problem(a, "GET /v1/models")
    if bad:
        return CheckResult("models", False, bad)
    data = a.body.get("data") if isinstance(a.body, dict) else None
    if not isinstance(data, list):
        return CheckResult("models", False, f"GET /v1/models is not a model list: {short(a.text)}")
    ids = [m.get("id") for m in data if isinstance(m, dict)]
    if model not in ids:
        return CheckResult("models", False, f"{model!r} is not listed; the server lists "
                                            f"{len(ids)} model(s): {short(ids, 120)}")
    return CheckResult("models", True, f"lists {model!r}")


async def chat(c: Client, model: str, max_tokens: int, seen: Seen) -> CheckResult:
    a = await c.chat(_body(model, CHAT_PROMPT, max_tokens))
    bad = _http_problem(a, "chat completion")
    if bad:
        return CheckResult("chat", False, bad)
    try:
        msg, finish = _message(a)
    except ProtocolError as e:
        return CheckResult("chat", False, str(e))
    seen.chat = msg
    content = msg.get("content")
    if msg.get("role") != "assistant":
        return CheckResult("chat", False, f"the message role is {msg.get('role')!r}, not assistant")
    if not isinstance(content, str) or not content.strip():
        hint = ""
        if finish == "length" and content is None and reasoning_text(msg):
            hint = f"; all {max_tokens} tokens went to reasoning: raise --max-tokens"
        return CheckResult("chat", False, f"no assistant content (finish_reason "
                                          f"{short(finish, 40)!r}){hint}")
    return CheckResult("chat", True, f"{short(content, 40)!r} in {_ms(a.elapsed_s)} "
                                     f"(finish_reason {short(finish, 40)})")


async def stream(c: Client, model: str, max_tokens: int, seen: Seen) -> CheckResult:
    s = await c.stream_chat(_body(model, STREAM_PROMPT, max_tokens))
    seen.stream = s
    st = s.state
    if s.status != 200:
        return CheckResult("stream", False, f"streaming chat completion: {s.describe()}")
    if s.error:
        return CheckResult("stream", False, f"{s.error}; {st.content_deltas} content deltas so far")
    if st.error:
        return CheckResult("stream", False, st.error)
    if not st.content_deltas:
        hint = ""
        if st.finish_reason == "length" and st.reasoning and not st.empty_content:
            hint = f"; all {max_tokens} tokens went to reasoning: raise --max-tokens"
        elif st.empty_content:
            hint = f"; {st.empty_content} content deltas were empty strings"
        return CheckResult("stream", False, f"no content deltas in {st.chunks} chunks "
                                            f"(finish_reason {st.finish_reason!r}){hint}")
    if not st.done:
        return CheckResult("stream", False, f"the stream ended without data: [DONE] "
                                            f"({st.content_deltas} content deltas)")
    usage = "usage reported" if st.usage else "no usage chunk despite include_usage"
    return CheckResult("stream", True, f"{st.content_deltas} content deltas, ended with [DONE]; "
                                       f"TTFT {_ms(st.ttft_s or 0)}; {usage}")


async def reasoning(c: Client, model: str, max_tokens: int, seen: Seen) -> CheckResult:
    """Judged on the chat and stream answers already received (no extra request)."""
    where = []
    if seen.chat is not None and reasoning_text(seen.chat):
        where.append(f"non-streamed `{reasoning_field(seen.chat)}` "
                     f"({len(reasoning_text(seen.chat))} chars)")
    if seen.stream is not None and seen.stream.state.reasoning:
        names = "/".join(sorted(seen.stream.state.reasoning_fields))
        where.append(f"streamed `{names}` ({seen.stream.state.reasoning_deltas} deltas)")
    if where:
        return CheckResult("reasoning", True, " and ".join(where))
    if seen.chat is None and seen.stream is None:
        return CheckResult("reasoning", False, "no chat answer to judge (chat and stream failed)")
    return CheckResult("reasoning", False,
                       "neither the streamed nor the non-streamed answer carries `reasoning` or "
                       "`reasoning_content` (is vLLM started with --reasoning-parser kimi_k3?)")


async def tool_call(c: Client, model: str, max_tokens: int) -> CheckResult:
    """One function tool offered; the non-streamed and the streamed answer must both call it."""
    name = TOOL["function"]["name"]
    body = _body(model, TOOL_PROMPT, max_tokens, tools=[TOOL], tool_choice="auto")
    found = []
    for form in ("non-streamed", "streamed"):
        last = ""
        for attempt in range(1, TOOL_ATTEMPTS + 1):
            if form == "non-streamed":
                a = await c.chat(body)
                bad = _http_problem(a, f"{form} tool request")
                if bad:
                    return CheckResult("tool_call", False, bad)
                try:
                    msg, _ = _message(a)
                except ProtocolError as e:
                    return CheckResult("tool_call", False, f"{form}: {e}")
                calls, said = msg.get("tool_calls"), msg.get("content")
            else:
                s = await c.stream_chat(body)
                if s.status != 200 or s.error or s.state.error:
                    return CheckResult("tool_call", False, f"{form} tool request: "
                                       f"{s.error or s.state.error or s.describe()}")
                calls = s.state.assembled_tool_calls()
                said = s.state.text
            if calls:
                ok, detail = check_tool_calls(calls, name)
                if not ok:
                    return CheckResult("tool_call", False, f"{form}: {detail}")
                args, _ = parse_json(calls[0]["function"]["arguments"])
                found.append(f"{form} {name}({short(args, 40)})"
                             + (f" on attempt {attempt}" if attempt > 1 else ""))
                break
            last = f"{form}: no tool_calls in the answer (content {short(said or '', 60)!r})"
        else:
            return CheckResult("tool_call", False, f"{last} after {TOOL_ATTEMPTS} attempts "
                               "(is vLLM started with --enable-auto-tool-choice "
                               "--tool-call-parser kimi_k3?)")
    return CheckResult("tool_call", True, "; ".join(found))


async def auth(c: Client, previous: Sequence[str] = ()) -> CheckResult:
    """A wrong key and no key must both be refused with 401, on /v1 (vLLM's own check) and on
    /invocations, which vLLM's check skips (vllm-project/vllm#58144) and kimi-k3's API-key
    guard covers (components/inference/kk3_api_guard.py). The /invocations probe sends `{}`, so
    an unguarded server answers 400 without generating anything. A 404 there means the route is
    not served at all (a server other than vLLM, or a proxy that forwards only /v1): nothing is
    reachable without the key, so it passes, and the detail says so. `previous`: keys the
    server held before (the gate after `kimi-k3:apiKey` changed passes the old one), refused
    the same way: a server still taking one was not restarted with the new key."""
    wrong = "kk3-wrong-" + secrets.token_hex(8)
    seen = []
    old = [("the previous key", k) for k in dict.fromkeys(previous) if k]
    for label, key in (("a wrong key", wrong), ("no key", None), *old):
        a = await c.request("GET", "/models", key=key, timeout_s=min(c.timeout_s, 30))
        if a.status != 401 or a.error:
            return CheckResult("auth", False, f"GET /v1/models with {label} was not refused with "
                                              f"401: {a.describe()}")
        seen.append(label)
    a = await c.request("POST", "/invocations", root=True, body={}, key=None,
                        timeout_s=min(c.timeout_s, 30))
    refused = f"{' and '.join(seen)} refused with 401"
    if a.status == 404 and not a.error:
        return CheckResult("auth", True, f"{refused}; /invocations is not served (404)")
    if a.status != 401 or a.error:
        return CheckResult("auth", False, "POST /invocations with no key was not refused with 401 "
                                          f"(is kimi-k3's API-key guard loaded?): {a.describe()}")
    return CheckResult("auth", True, f"{refused}, also on /invocations")
