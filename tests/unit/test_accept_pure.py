"""The pure parts of the acceptance checks: SSE decoding, chat shapes, timing, report, data."""

import json

import pytest

from components.accept import reference
from components.accept.client import split_endpoint
from components.accept.protocol import StreamState, check_tool_calls, first_message, \
    reasoning_text, ProtocolError
from components.accept.report import CheckResult, LoadResult, build, exit_code, summary
from components.accept.runner import AcceptConfig
from components.accept.sse import SseDecoder
from components.accept.stats import p50_p95, percentile

# A stream as vLLM 0.33.0 serialises it (chat_completion/serving.py: exclude_unset=True, so
# explicitly-set nulls stay; the usage chunk with exclude_none; a keep-alive comment from
# serve/utils/sse_keep_alive.py; kimi_k3's whole tool call in one delta).
HEAD = '"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"Kimi-K3"'
VLLM_STREAM = (
    ": keep-alive\n\n"
    'data: {' + HEAD + ',"choices":[{"index":0,"delta":{"role":"assistant","content":""},'
    '"logprobs":null,"finish_reason":null}],"prompt_token_ids":null,"prompt_text":null}\n\n'
    'data: {' + HEAD + ',"choices":[{"index":0,"delta":{"reasoning":"Paris? "},"logprobs":null,'
    '"finish_reason":null,"token_ids":null}],"kv_transfer_params":null}\n\n'
    'data: {' + HEAD + ',"choices":[{"index":0,"delta":{"content":"Sun"},"logprobs":null,'
    '"finish_reason":null,"token_ids":null}],"kv_transfer_params":null}\n\n'
    'data: {' + HEAD + ',"choices":[{"index":0,"delta":{"content":null,"tool_calls":[{"id":'
    '"chatcmpl-tool-ab","type":"function","index":0,"function":{"name":"get_weather",'
    '"arguments":"{\\"city\\": \\"Paris\\"}"}}]},"logprobs":null,"finish_reason":"tool_calls",'
    '"stop_reason":null,"token_ids":null}],"kv_transfer_params":null}\n\n'
    'data: {' + HEAD + ',"choices":[],"usage":{"prompt_tokens":9,"total_tokens":21,'
    '"completion_tokens":12}}\n\n'
    "data: [DONE]\n\n")


def _decode(chunks):
    dec, events = SseDecoder(), []
    for c in chunks:
        events += dec.feed(c)
    return dec, events


@pytest.mark.parametrize("size", [1, 2, 3, 7, 64, 100000])
def test_sse_events_do_not_depend_on_how_the_bytes_are_cut(size):
    raw = VLLM_STREAM.replace("\n", "\r\n").encode()
    dec, events = _decode([raw[i:i + size] for i in range(0, len(raw), size)])
    assert [e.data for e in events][-1] == "[DONE]"
    assert len(events) == 6 and dec.comments == 1


def test_sse_rules_multiline_data_fields_and_unterminated_tail():
    dec, events = _decode([b"event: x\ndata: a\ndata:b\nid: 7\n\n", b"data: tail-without-blank"])
    assert [(e.event, e.data) for e in events] == [("x", "a\nb")]
    assert dec.close() == []


def test_sse_utf8_split_inside_a_character():
    raw = 'data: {"content":"日本"}\n\n'.encode()
    _, events = _decode([raw[:15], raw[15:]])
    assert json.loads(events[0].data)["content"] == "日本"


def test_stream_state_reads_a_vllm_stream_with_timing():
    st = StreamState(start=10.0)
    _, events = _decode([VLLM_STREAM.encode()])
    for i, e in enumerate(events):
        st.feed(e.data, 10.0 + 0.5 + 0.1 * i)
    assert st.done and st.role == "assistant" and st.text == "Sun"
    assert st.reasoning_text == "Paris? " and st.reasoning_fields == {"reasoning"}
    assert st.assembled_tool_calls()[0]["function"] == {"name": "get_weather",
                                                        "arguments": '{"city": "Paris"}'}
    assert st.finish_reason == "tool_calls" and st.output_tokens == 12
    # first output is the reasoning delta (event 1), last the tool call (event 3)
    assert st.ttft_s == pytest.approx(0.6)
    assert st.tpot_s == pytest.approx(0.2 / 11)


def test_stream_state_split_tool_arguments_old_field_name_and_errors():
    st = StreamState()
    for d in ({"tool_calls": [{"index": 0, "id": "t1", "type": "function",
                               "function": {"name": "f", "arguments": ""}}]},
              {"tool_calls": [{"index": 0, "function": {"arguments": '{"a": '}}]},
              {"tool_calls": [{"index": 0, "function": {"arguments": "1}"}}]},
              {"reasoning_content": "hmm"}):
        st.feed(json.dumps({"object": "chat.completion.chunk",
                            "choices": [{"index": 0, "delta": d}]}), 1.0)
    assert st.assembled_tool_calls() == [{"id": "t1", "type": "function",
                                          "function": {"name": "f", "arguments": '{"a": 1}'}}]
    assert st.reasoning_fields == {"reasoning_content"} and st.output_tokens == 4
    st.feed('{"error": {"message": "boom", "code": 500}}', 2.0)
    assert "boom" in st.error and not st.done
    st.feed("[DONE]", 3.0)
    st.feed("late", 3.1)
    assert st.done and st.after_done == 1


def test_tool_call_judgement():
    good = [{"function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]
    assert check_tool_calls(good, "get_weather")[0]
    for calls, words in ((None, "no tool_calls"), ([], "no tool_calls"),
                         ([{"function": {"name": "other", "arguments": "{}"}}], "names 'other'"),
                         ([{"function": {"name": "get_weather", "arguments": '{"city": "Pa'}}],
                          "not valid JSON"),
                         ([{"function": {"name": "get_weather", "arguments": "[1]"}}], "not an object"),
                         ([{"function": {"name": "get_weather", "arguments": {"city": 1}}}],
                          "not a JSON string")):
        ok, detail = check_tool_calls(calls, "get_weather")
        assert not ok and words in detail


def test_first_message_and_reasoning_fields():
    msg, finish = first_message({"object": "chat.completion", "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "42", "reasoning": "r"},
         "finish_reason": "stop"}]})
    assert (msg["content"], finish, reasoning_text(msg)) == ("42", "stop", "r")
    assert reasoning_text({"reasoning": None, "reasoning_content": "old"}) == "old"
    for bad in ([], {"error": {"message": "x"}}, {"choices": []}, {"choices": [{"index": 0}]}):
        with pytest.raises(ProtocolError):
            first_message(bad)


def test_percentiles_match_numpy_linear_definition():
    assert percentile([4, 1, 3, 2], 50) == 2.5
    assert percentile([1, 2, 3, 4], 95) == pytest.approx(3.85)
    assert percentile([7.0], 95) == 7.0 and percentile([], 50) is None
    assert p50_p95([0.1, 0.2, 0.3]) == {"p50": 0.2, "p95": 0.29}
    with pytest.raises(ValueError):
        percentile([1], 101)


def test_reference_points_match_hardware_and_carry_sources():
    data = reference.load()
    assert data["points"] and all(p["source"].startswith("https://") for p in data["points"])
    assert any("vLLM blog" in d["claim"] and d["why"] for d in data["dropped"])
    exact = reference.matching("ascend-910c", "atlas-800-a3", 4)
    assert [p["match"] for p in exact] == ["exact"]
    assert exact[0]["figures"]["output_tokens_per_s"] == 111.4
    assert [p["match"] for p in reference.matching("ascend-910c", None, 8)] == ["same accelerator"]
    assert reference.matching("ascend-910c") [0]["match"] == "same accelerator"
    assert reference.matching("b300", None, 1) == [] and reference.matching(None) == []


def _load(**kw):
    base = dict(requests=4, errors=0, concurrency=2, ttft_s={"p50": 0.05, "p95": 0.06},
                tpot_s={"p50": 0.01, "p95": 0.011}, output_tokens_per_s=100.0, wall_s=1.0,
                output_tokens=100, max_tokens=25)
    return LoadResult(**{**base, **kw})


def test_report_fields_summary_and_exit_code():
    checks = [CheckResult("health", True, "200"), CheckResult("chat", False, "no content"),
              CheckResult("load", True, "fine")]
    r = build("http://h:1/v1", "Kimi-K3", checks, _load(), 1.234)
    assert set(r) >= {"endpoint", "model", "checks", "load"}
    assert r["checks"][1] == {"name": "chat", "ok": False, "detail": "no content"}
    assert set(r["load"]) >= {"requests", "errors", "concurrency", "ttft_s", "tpot_s",
                              "output_tokens_per_s", "reference_points"}
    text = summary(r)
    assert text.splitlines()[-1] == "FAIL chat" and exit_code(r) == 1
    ok = build("u", "m", [CheckResult("health", True, "200")], None, 0.1)
    assert summary(ok).splitlines()[-1] == "PASS" and exit_code(ok) == 0
    assert "load: off" in summary(ok)
    with pytest.raises(ValueError):
        CheckResult("latency", True, "not a check of ours")


@pytest.mark.parametrize("url,words", [
    ("10.0.0.5:8000/v1", "not an http"), ("http://h:8000", "does not end in /v1"),
    ("http://h:8000/v1?x=1", "query"), ("ftp://h/v1", "not an http")])
def test_endpoint_must_be_an_openai_base_url(url, words):
    with pytest.raises(ValueError, match=words):
        split_endpoint(url)


def test_endpoint_roots():
    assert split_endpoint("https://h:8/v1/") == ("https://h:8/v1", "https://h:8")
    assert split_endpoint("http://h/proxy/v1") == ("http://h/proxy/v1", "http://h/proxy")


@pytest.mark.parametrize("kw,words", [
    ({"concurrency": 0}, "--concurrency"), ({"requests": -1}, "--requests"),
    ({"max_tokens": 0}, "--max-tokens"), ({"model": " "}, "--model"),
    ({"timeout_s": 0}, "--timeout"), ({"concurrency": "4"}, "--concurrency")])
def test_config_is_checked_before_anything_is_sent(kw, words):
    with pytest.raises(ValueError, match=words):
        AcceptConfig(**{"endpoint": "http://h:1/v1", "model": "m", **kw}).validate()


def test_config_repr_hides_the_key():
    assert "s3cr3t-key" not in repr(AcceptConfig("http://h:1/v1", "m", api_key="s3cr3t-key"))


# ---- the deploy gate's size (kimi-k3:acceptLoad) ------------------------------------------
from components.accept.sizing import LoadSize, load_size, parse_accept_load, planned_concurrency  # noqa: E402
from components.inference.errors import ConfigError  # noqa: E402


@pytest.mark.parametrize("raw,canon", [(None, "auto"), ("", "auto"), ("AUTO", "auto"),
                                       ("off", "off"), (" 32 ", "32"), ("64x16", "64x16"),
                                       (48, "48")])
def test_accept_load_forms(raw, canon):
    assert parse_accept_load(raw) == canon


@pytest.mark.parametrize("raw", ["none", "0", "-4", "10x0", "12x", "x4", "20000", "8x2000",
                                 "4 x 2", "true"])
def test_accept_load_refusals_name_the_key(raw):
    with pytest.raises(ConfigError) as err:
        parse_accept_load(raw)
    assert str(err.value).startswith("kimi-k3:acceptLoad=")


def test_load_size_follows_the_plan():
    assert planned_concurrency(16, 4) == 64 and planned_concurrency(5, 1) == 5
    assert planned_concurrency(None, 1) == 64 and planned_concurrency(256, 8) == 64
    assert load_size("auto", 5, 1) == LoadSize(10, 5)
    assert load_size("off", 16, 4) is None
    assert load_size("12", 16, 4) == LoadSize(12, 12)
    assert load_size("100x8", 16, 4) == LoadSize(100, 8)


def test_settings_carry_accept_load():
    from components.config.shared import parse_settings

    assert parse_settings({"target": "aws-eks"}, "s").accept_load == "auto"
    assert parse_settings({"target": "aws-eks", "acceptLoad": "off"}, "s").accept_load == "off"
    with pytest.raises(ConfigError, match="acceptLoad"):
        parse_settings({"target": "ctyun-hcc", "acceptLoad": "lots"}, "s")


def test_gate_summary_output():
    from components.accept.gate import summary_output

    r = build("http://h:1/v1", "Kimi-K3", [CheckResult("health", True, "200"),
                                           CheckResult("load", True, "fine")],
              _load(reference_points=reference.matching("ascend-910c", "atlas-800-a3", 4)), 2.0)
    out = summary_output(r)
    assert out["ok"] and out["checks"] == {"health": True, "load": True}
    assert out["load"]["ttft_s"] == {"p50": 0.05, "p95": 0.06} and out["failed"] is None
    assert out["reference"][0]["output_tokens_per_s"] == 111.4
    assert out["reference"][0]["source"] == "https://github.com/vllm-project/vllm-ascend/pull/14454"


# ---- price per million output tokens (accept --usd-per-hour) ---------------------------------

def test_usd_per_mtok_is_the_price_over_output_tokens_per_hour():
    from components.accept.load import usd_per_mtok

    assert usd_per_mtok(98.5, 1000.0) == round(98.5 / 3.6, 4)  # 3.6 M tokens an hour
    assert usd_per_mtok(None, 1000.0) is None
    for stalled in (None, 0, 0.0, -5.0):
        assert usd_per_mtok(98.5, stalled) is None  # no output: no price per token, not infinity


def test_price_adds_to_the_load_part_only():
    from components.accept import report as rep

    off = {"load": None}
    assert rep.price(off, 10.0) == {"load": None}
    r = {"load": {"output_tokens_per_s": 500.0}}
    assert rep.price(r, None) == {"load": {"output_tokens_per_s": 500.0}}
    assert rep.price(r, 18.0)["load"] == {"output_tokens_per_s": 500.0, "usd_per_hour": 18.0,
                                          "usd_per_mtok": 10.0}


def test_the_gates_price_input_is_a_price_or_nothing():
    from components.accept.gate import usd_per_hour_input

    assert usd_per_hour_input({"usdPerHour": 98.5}) == 98.5 and usd_per_hour_input({"usdPerHour": 3}) == 3.0
    for junk in (None, 0, -1, float("nan"), float("inf"), True, "98.5", [98.5]):
        assert usd_per_hour_input({"usdPerHour": junk}) is None
    assert usd_per_hour_input({}) is None


@pytest.mark.parametrize("key", ["abc\ndef-Secret-42", "abc\r\nX-Evil: 1", 'ab"c\\d-Secret-42',
                                 "ключ-Secret-42", "two words-Secret-42", "sk-abc==="])
def test_a_key_that_cannot_be_a_bearer_token_is_refused_before_any_request(key, capsys,
                                                                            monkeypatch):
    """`accept --api-key-env`: the variable's value has the grammar of kimi-k3:apiKey; before,
    such a key was sent, httpx refused the header and every check failed on a protocol error.
    The port is closed: a request sent would make the run judge it (exit 1), not exit 2."""
    from components.cli import main as cli

    monkeypatch.setenv("KK3_HOSTILE_KEY", key)
    code = cli.main(["accept", "--endpoint", "http://127.0.0.1:9/v1", "--model", "m",
                     "--api-key-env", "KK3_HOSTILE_KEY", "--requests", "0", "--timeout", "1"])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and "--api-key-env KK3_HOSTILE_KEY: the key" in err
    assert "Secret-42" not in err and "X-Evil" not in err


def test_a_generated_key_is_taken(capsys, monkeypatch):
    from components.cli import accept as accept_cli

    monkeypatch.setenv("KK3_GOOD_KEY", "sk-Zm9vYmFy_-.~+/AbC12==")
    assert accept_cli._key("KK3_GOOD_KEY") == ("sk-Zm9vYmFy_-.~+/AbC12==", None)


@pytest.mark.parametrize("typed,problem", [
    ("-1", "-1 is out of range"), ("0", "0 is out of range"), ("0.5", "0.5 is out of range"),
    ("1e9", "1e9 is out of range"), ("nan", "'nan' is not finite"), ("inf", "'inf' is not finite"),
    ("٥", "'٥' is not a number"), ("12s", "'12s' is not a number")])
def test_a_timeout_out_of_range_is_quoted_as_typed(typed, problem, capsys):
    """Issue 18: the error shows what the user typed ('-1', not Python's -1.0; 'nan'), the range
    it says (1 to 86400) is the one enforced (0.5 used to pass under "use 1 to 86400"), through
    the grammar of config values (config/values.py number_in)."""
    from components.cli import main as cli

    code = cli.main(["accept", "--endpoint", "http://127.0.0.1:9/v1", "--model", "m",
                     "--timeout", typed, "--requests", "0", "--no-known"])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith(f"error: --timeout={problem}; ")
    assert len(err.strip().splitlines()) == 1


def test_a_timeout_in_range_is_a_float():
    from components.cli.accept import _timeout

    assert _timeout("120") == (120.0, None) and _timeout("1") == (1.0, None)
    assert _timeout("86400") == (86400.0, None) and _timeout(" 2.5 ")[0] == 2.5


@pytest.mark.parametrize("flag", ["--concurrency", "--requests", "--max-tokens", "--nodes",
                                  "--known-max-tokens", "--context-tokens", "--needle-cap-tokens"])
@pytest.mark.parametrize("typed", ["١", "١٦", "x", "1.0"])
def test_an_integer_flag_takes_ascii_digits_only(flag, typed, capsys):
    """The integer flags take the config values' integer grammar: Python's int() read '١' as 1
    and went on to ask the endpoint; the refusal quotes the flag as typed and nothing is sent."""
    from components.cli import main as cli

    with pytest.raises(SystemExit) as stop:
        cli.main(["accept", "--endpoint", "http://127.0.0.1:9/v1", "--model", "m", flag, typed])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and f"argument {flag}: {typed!r} is not an integer" in err


def test_an_integer_flag_in_ascii_digits_is_an_int():
    from components.cli.accept import _whole

    assert _whole("16") == 16 and _whole(" 0 ") == 0 and _whole("-1") == -1
