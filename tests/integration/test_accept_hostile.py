"""`accept` and the readiness gate against the hostile server double (issue 21, item 3).

Every mode ends in a report (no exception), fails the checks it should by name, shows neither
the key nor a terminal control character in the summary, the `--out` report or `on_check`, and
is bounded: the endless and huge answers are cut at the client's byte bounds, not at the
timeout. Peak memory is measured by bench/accept_hostile.py (tests assert behaviour).
"""

import json
import time

import pytest

from components.accept import AcceptConfig, accept, summary, wait_ready
from components.accept.client import MAX_BODY_BYTES
from components.cli import main as cli
from tests.doubles.hostile_openai import MODES, HostileServer

KEY = "kk3-hostile-key-0123456789abcdefXYZ"
ALL = {"models", "chat", "stream", "reasoning", "tool_call", "auth", "load"}

#: mode -> (checks that must fail, words in the first failing detail or None)
EXPECT = {
    "endless": ({"models", "chat", "stream", "reasoning", "tool_call", "load"},
                f"larger than {MAX_BODY_BYTES // (1 << 20)} MiB"),
    "endless_line": ({"stream", "tool_call", "load"}, "without a line end"),
    "huge": ({"models", "chat", "stream", "reasoning", "tool_call", "load"}, "larger than"),
    "nested": ({"models", "chat", "stream", "reasoning", "tool_call", "load"}, "nested deeper"),
    "echo": (set(), None),
    "echo_error": ({"models", "chat", "stream", "reasoning", "tool_call", "load"}, "HTTP 500"),
    "lying_usage": ({"stream", "tool_call", "load"}, "not a token count"),
    "null_data": ({"models", "chat", "stream", "reasoning", "tool_call", "load"},
                  "not a model list"),
    "not_json": ({"models", "chat", "stream", "reasoning", "tool_call", "load"},
                 "not a model list"),
    "wrong_types": ({"models", "chat", "stream", "reasoning", "tool_call", "load"},
                    "is not listed"),
    "gzip_bomb": (ALL, "compressed"),
    "escapes": ({"models", "tool_call"}, "is not listed"),
    "v1_only": (set(), None),
    "redirect": (ALL, "HTTP 307"),
}


#: far above what any bounded mode takes here (the server shares this process and two cores)
TIMEOUT_S = 15


def _run(mode, **kw):
    seen = []
    # the shape checks here; the known-answer checks against each mode: the test below
    cfg = dict(api_key=KEY, timeout_s=TIMEOUT_S, requests=4, concurrency=2, max_tokens=16,
               known=False)
    cfg.update(kw)
    with HostileServer(mode, api_key=KEY, slow_s=0.3) as s:
        start = time.monotonic()
        report = accept(AcceptConfig(s.url, "Kimi-K3", **cfg), on_check=seen.append)
    return report, seen, time.monotonic() - start


def _clean(text):
    assert KEY not in text and KEY[4:20] not in text
    assert not any(ord(c) < 32 and c not in "\n" or 0x7f <= ord(c) <= 0x9f for c in text), text


def test_every_mode_is_covered():
    assert set(EXPECT) == set(MODES) - {"slow"}


@pytest.mark.parametrize("mode", sorted(EXPECT))
def test_each_hostile_server_ends_in_a_clean_report(mode):
    failing, words = EXPECT[mode]
    report, seen, took = _run(mode)
    bad = {c["name"] for c in report["checks"] if not c["ok"]}
    assert bad == failing, report["checks"]
    if words:
        first = next(c for c in report["checks"] if not c["ok"])
        assert words in first["detail"], first
    _clean(summary(report))
    _clean(json.dumps(report, ensure_ascii=False))
    _clean(" ".join(r.detail for r in seen))
    # bounded by bytes, not by waiting: no request here runs into its timeout
    assert not any(f"within {TIMEOUT_S} s" in c["detail"] for c in report["checks"]), \
        report["checks"]


KNOWN = {"arithmetic", "json_schema", "needle", "greedy_repeat"}


@pytest.mark.parametrize("mode", sorted(EXPECT))
def test_known_answer_checks_against_each_hostile_server_fail_by_name_cleanly(mode):
    """No hostile server knows the answers: each answer check fails by its name (greedy_repeat
    judges stability only: a server that repeats the same wrong answer passes it), with a detail
    that is not the safety net's, bounded by bytes, scrubbed."""
    report, seen, _ = _run(mode, requests=0, known=True, known_max_tokens=16,
                           needle_cap_tokens=4096)
    known = {c["name"]: c for c in report["checks"] if c["name"] in KNOWN}
    assert set(known) == KNOWN, report["checks"]
    assert not any(known[n]["ok"] for n in ("arithmetic", "json_schema", "needle")), known
    assert not any("unexpected answer" in c["detail"] for c in known.values()), known
    assert not any(f"within {TIMEOUT_S} s" in c["detail"] for c in known.values()), known
    _clean(summary(report))
    _clean(json.dumps(report, ensure_ascii=False))
    _clean(" ".join(r.detail for r in seen))


def test_echoed_key_is_scrubbed_in_parsed_fields_shown():
    report, _, _ = _run("echo")
    details = {c["name"]: c["detail"] for c in report["checks"]}
    assert "finish_reason Bearer [secret]" in details["chat"]
    assert '{"city": "Bearer [secret]"}' in details["tool_call"]
    assert "\\x1b[2J" in details["chat"]  # shown, not sent to the terminal


def test_a_route_that_is_not_served_is_not_an_auth_failure():
    report, _, _ = _run("v1_only")
    auth = next(c for c in report["checks"] if c["name"] == "auth")
    assert auth["ok"] and "/invocations is not served (404)" in auth["detail"]


def test_slow_trickle_costs_the_timeout_per_request_and_is_named():
    report, _, took = _run("slow", requests=0, timeout_s=2)
    details = {c["name"]: c["detail"] for c in report["checks"]}
    assert "HTTP 200, but the body did not end within 2 s" in details["models"]
    assert "the stream did not end within 2 s" in details["stream"]
    _clean(summary(report))


def test_cli_report_and_summary_carry_no_key(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("KK3_HOSTILE_KEY", KEY)
    out_file = tmp_path / "r.json"
    with HostileServer("echo", api_key=KEY) as s:
        code = cli.main(["accept", "--endpoint", s.url, "--model", "Kimi-K3", "--api-key-env",
                         "KK3_HOSTILE_KEY", "--requests", "2", "--concurrency", "1",
                         "--max-tokens", "16", "--timeout", "3", "--no-known",
                         "--out", str(out_file)])
    out = capsys.readouterr()
    assert code == 0
    _clean(out.out + out.err)
    _clean(out_file.read_text())


def test_cli_refuses_credentials_in_the_endpoint_without_echoing_them(capsys):
    code = cli.main(["accept", "--endpoint", "http://admin:pa55word@127.0.0.1:9/v1",
                     "--model", "Kimi-K3"])
    err = capsys.readouterr().err
    assert code == 2 and "pa55word" not in err and "credentials" in err


@pytest.mark.parametrize("mode", ["null_data", "nested", "not_json", "wrong_types", "endless",
                                  "gzip_bomb"])
def test_readiness_polls_on_malformed_answers_until_its_deadline(mode):
    with HostileServer(mode, api_key=KEY) as s:
        r = wait_ready(s.url, "Kimi-K3", KEY, timeout_s=2.5, poll_interval_s=0.2,
                       request_timeout_s=1)
    assert not r.ready and r.stage == "models" and r.polls >= 3, r
    _clean(r.last_seen)
    _clean(r.error_message(s.url, 2.5))


def test_a_redirect_is_not_followed_nothing_reaches_its_target(tmp_path, capsys, monkeypatch):
    """An endpoint (or a router) answering 307 to another listener: accept, its known-answer
    checks and the readiness gate send that listener nothing (no key, no prompt); each check
    fails by name on the 307 (client.py: follow_redirects=False)."""
    monkeypatch.setenv("KK3_HOSTILE_KEY", KEY)
    with HostileServer("redirect", api_key=KEY) as s:
        code = cli.main(["accept", "--endpoint", s.url, "--model", "Kimi-K3", "--api-key-env",
                         "KK3_HOSTILE_KEY", "--requests", "2", "--concurrency", "1",
                         "--max-tokens", "16", "--timeout", "5", "--known-max-tokens", "16",
                         "--needle-cap-tokens", "4096", "--out", str(tmp_path / "r.json")])
        r = wait_ready(s.url, "Kimi-K3", KEY, timeout_s=1, poll_interval_s=0.2,
                       request_timeout_s=1)
        sink = list(s.sink_requests)
    out = capsys.readouterr()
    assert sink == [], sink
    assert code == 1 and "FAIL models    GET /v1/models: HTTP 307" in out.out
    assert not r.ready and r.polls >= 2, r
    _clean(out.out + out.err)


def test_readiness_last_seen_is_scrubbed():
    with HostileServer("echo_error", api_key=KEY) as s:
        r = wait_ready(s.url, "Kimi-K3", KEY, timeout_s=1, poll_interval_s=0.2,
                       request_timeout_s=1)
    assert not r.ready and "[secret]" in r.last_seen
    _clean(r.last_seen)
