"""`accept`'s pure parts against hostile input: bounded, never raising, never showing the key.

Each test feeds what a malicious or broken server could send (issue 21, item 3) and fails if
the guard it names is removed.
"""

import json
import subprocess
import sys

import pytest
from hypothesis import given, settings, strategies as st

from components.accept.client import shown_url, split_endpoint, stream_byte_limit
from components.accept.protocol import (MAX_DEPTH, MAX_KEPT_CHARS, MAX_TOOL_CALLS, StreamState,
                                        check_tool_calls, count, parse_json, short)
from components.accept.scrub import Scrubber, printable
from components.accept.sse import MAX_EVENT_CHARS, MAX_LINE_CHARS, SseDecoder, SseLimitError

KEY = "kk3-unit-key-0123456789abcdefXYZ"


# ---- JSON ------------------------------------------------------------------------------------
def test_deep_json_is_a_reason_not_a_recursion_error():
    for text in ("[" * 100_000 + "]" * 100_000, '{"a":' * 5000 + "1" + "}" * 5000,
                 "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1)):
        value, why = parse_json(text)
        assert value is None and "nested deeper than" in why
    assert parse_json("[" * MAX_DEPTH + "]" * MAX_DEPTH)[1] is None


def test_not_json_and_oversized_integers_are_reasons():
    assert "not JSON" in parse_json("<html>")[1]
    assert "not JSON" in parse_json("1" * 5000)[1]  # Python refuses >4300 digits: ValueError


def test_counts_are_bounded_ints():
    assert [count(v) for v in (0, 7, 2 ** 31)] == [0, 7, 2 ** 31]
    assert [count(v) for v in (-1, 2 ** 31 + 1, 10 ** 4000, True, 1.0, "3", None)] == [None] * 7


def test_short_never_raises():
    deep = []
    for _ in range(5000):
        deep = [deep]
    assert short(deep) == "<list>"
    assert short("x" * 10 ** 6, 20) == "x" * 17 + "..."


# ---- SSE ---------------------------------------------------------------------------------------
def test_a_line_without_end_is_cut_at_the_bound():
    dec = SseDecoder()
    dec.feed(b"data: " + b"a" * (MAX_LINE_CHARS // 2))
    with pytest.raises(SseLimitError, match="without a line end"):
        dec.feed(b"a" * (MAX_LINE_CHARS // 2 + 10))


def test_an_event_of_many_data_lines_is_cut_at_the_bound():
    dec = SseDecoder()
    line = b"data: " + b"b" * 1000 + b"\n"
    with pytest.raises(SseLimitError, match="more than"):
        for _ in range(MAX_EVENT_CHARS // 1000 + 2):
            dec.feed(line)


def test_many_short_lines_in_one_chunk_decode_in_one_pass():
    events = SseDecoder().feed(b"\n" * 200_000 + b"data: x\n\n")
    assert [e.data for e in events] == ["x"]


# ---- streams -------------------------------------------------------------------------------
def _chunk(delta, **extra):
    return json.dumps({"object": "chat.completion.chunk",
                       "choices": [{"index": 0, "delta": delta}], **extra})


WRONG = [None, 5, "x", [], [1], {"a": 1}, 10 ** 40, -1, True, 1.5]


@settings(max_examples=300, deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
                    lambda c: st.lists(c, max_size=4) | st.dictionaries(
                        st.sampled_from(["choices", "delta", "index", "content", "tool_calls",
                                         "function", "arguments", "name", "usage", "role",
                                         "finish_reason", "completion_tokens", "error",
                                         "object", "reasoning"]), c, max_size=5),
                    max_leaves=20))
def test_feeding_any_json_never_raises(value):
    st_ = StreamState(max_tokens=16)
    st_.feed(json.dumps(value), 1.0)
    st_.feed(json.dumps({"choices": [value]}), 1.1)
    st_.feed(json.dumps({"choices": [{"index": 0, "delta": value}]}), 1.2)
    _ = (st_.text, st_.assembled_tool_calls(), st_.output_tokens, st_.tpot_s)


@pytest.mark.parametrize("bad", WRONG)
def test_wrong_types_in_every_field_are_reasons(bad):
    st_ = StreamState(max_tokens=16)
    for data in (json.dumps({"choices": bad}), _chunk(bad),
                 _chunk({"tool_calls": bad}), _chunk({"tool_calls": [{"index": bad}]}),
                 _chunk({"tool_calls": [{"index": 0, "function": bad}]}),
                 json.dumps({"choices": [], "usage": bad}),
                 json.dumps({"choices": [], "usage": {"completion_tokens": bad}})):
        st_.feed(data, 1.0)
    assert st_.output_tokens >= 0


def test_usage_lies_are_named():
    for usage, words in (({"completion_tokens": 10 ** 4000}, "not a token count"),
                         ({"completion_tokens": 17}, "exceeds the request's max_tokens 16"),
                         ({"prompt_tokens": -1}, "not a token count")):
        st_ = StreamState(max_tokens=16)
        st_.feed(json.dumps({"choices": [], "usage": usage}), 1.0)
        assert words in st_.error and st_.usage is None


def test_kept_text_and_tool_calls_are_bounded():
    st_ = StreamState()
    piece = "a" * 4096
    for _ in range(MAX_KEPT_CHARS // 4096 + 50):
        st_.feed(_chunk({"content": piece}), 1.0)
    assert len(st_.text) == MAX_KEPT_CHARS and st_.content_deltas == MAX_KEPT_CHARS // 4096 + 50
    st_.feed(_chunk({"tool_calls": [{"index": MAX_TOOL_CALLS, "function": {"name": "f"}}]}), 2.0)
    assert len(st_.tool_calls) == 0 and "index" in st_.error
    st2 = StreamState()
    for _ in range(MAX_KEPT_CHARS // 4096 + 2):
        st2.feed(_chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}), 1.0)
    assert len(st2.tool_calls[0].arguments) <= MAX_KEPT_CHARS and "exceed" in st2.error


def test_too_many_tool_calls_fail_the_judgement():
    calls = [{"function": {"name": "f", "arguments": "{}"}}] * (MAX_TOOL_CALLS + 1)
    ok, detail = check_tool_calls(calls, "f")
    assert not ok and "more than" in detail
    ok, detail = check_tool_calls([{"function": {"name": "f", "arguments": "[" * 5000}}], "f")
    assert not ok and "not valid JSON" in detail


def test_a_key_split_across_deltas_is_scrubbed_whole():
    st_ = StreamState(scrub=Scrubber([KEY]).tree)
    st_.feed(_chunk({"content": "x " + KEY[:10]}), 1.0)
    st_.feed(_chunk({"content": KEY[10:] + " y"}), 1.1)
    for part in (json.dumps({"city": KEY})[:12], json.dumps({"city": KEY})[12:]):
        st_.feed(_chunk({"tool_calls": [{"index": 0, "function": {"arguments": part}}]}), 1.2)
    assert st_.text == "x [secret] y"
    assert KEY not in json.dumps(st_.assembled_tool_calls())
    assert KEY[:10] not in short(st_.text, 8)


def test_stream_byte_limit_grows_with_max_tokens():
    assert stream_byte_limit(0) < stream_byte_limit(256) < stream_byte_limit(4096)


# ---- scrubbing -------------------------------------------------------------------------------
@pytest.mark.parametrize("spelling", [
    KEY, json.dumps(KEY)[1:-1], "".join(f"\\u{ord(c):04x}" for c in KEY),
    "".join(f"\\u{ord(c):04X}" for c in KEY[:5]) + KEY[5:],
    "".join(f"%{ord(c):02x}" for c in KEY), KEY.replace("-", "%2D")])
def test_every_spelling_of_the_key_is_scrubbed(spelling):
    s = Scrubber([KEY])
    for text in (f"echo {spelling} end", f'{{"error": "{spelling}"}}',
                 f"Authorization: Bearer {spelling}"):
        assert KEY not in s.text(text) and "[secret]" in s.text(text)
        assert spelling not in s.text(text)


def test_scrubbing_a_tree_reaches_keys_and_nested_values():
    s = Scrubber([KEY])
    tree = s.tree({KEY: [{"a": KEY}, "x" + KEY, 3, None], "n": {"m": [[KEY]]}})
    assert KEY not in json.dumps(tree) and tree["n"]["m"] == [["[secret]"]]


def test_short_keys_are_scrubbed_too():
    assert Scrubber(["ab1"]).text("xab1y") == "x[secret]y"


def test_text_without_the_key_is_left_as_it_came():
    s = Scrubber([KEY])
    for text in ("100% \\u0041 ok", '{"city": "\\u0050aris"}', "%zz"):
        assert s.text(text) == text


def test_control_characters_are_shown_not_sent_to_the_terminal():
    esc = "\x1b[2J\x1b]0;owned\x07\x9b31m\r\x7f"
    shown = printable(esc)
    assert not any(ord(c) < 32 or 0x7f <= ord(c) <= 0x9f for c in shown)
    assert shown.startswith("\\x1b[2J")


def test_the_project_scrubber_is_linear_on_long_runs():
    """The echo pattern once backtracked over every start inside a run: 16k letters took 34 s.
    Run in a child with a deadline far above linear time (0.2 s here for 1M characters)."""
    code = ("from components.dynamic.redact import redact_text\n"
            "for t in ('a' * 10**6, '[' * 10**6, 'pass' * 250000, 'x.' * 500000):\n"
            "    redact_text(t, ['sk-abcdefgh'])\n"
            "print(redact_text('a.rootPassword = hunter22 b'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "a.rootPassword = [secret] b", out.stderr


# ---- the endpoint URL --------------------------------------------------------------------------
@pytest.mark.parametrize("url", ["http://user:pa55word@10.0.0.5:8000/v1",
                                 "https://pa55word@host.example/v1", "http://:pa55word@h/v1"])
def test_credentials_in_the_endpoint_are_refused_and_never_echoed(url):
    with pytest.raises(ValueError) as e:
        split_endpoint(url)
    assert "pa55word" not in str(e.value) and "credentials" in str(e.value)
    assert "pa55word" not in shown_url(url) and "***@" in shown_url(url)


@pytest.mark.parametrize("url", ["http://h:8000/v1\x1b[2J", "http://h:port/v1",
                                 "http://h:8000/\nv1"])
def test_endpoints_with_controls_or_bad_ports_are_refused(url):
    with pytest.raises(ValueError) as e:
        split_endpoint(url)
    assert "\x1b" not in str(e.value)
