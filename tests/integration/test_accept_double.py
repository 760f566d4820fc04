"""The accept command and the readiness wait against the vLLM server double.

All checks pass on a healthy double and the measured TTFT/TPOT match the double's configured
timing; every fault fails its check by name (exit 1, the name on the last line); a hung server
ends within the command's bound; the key never appears in what the command prints or writes.
"""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from components.cli import main as cli
from components.accept import AcceptConfig, accept, wait_ready
from tests.doubles.vllm_openai import FAULTS, DoubleConfig, VllmOpenAIDouble

ROOT = Path(__file__).resolve().parents[2]
KEY = "kk3-test-key-0123456789"
FAST = dict(ttft_s=0.02, tpot_s=0.002)


#: kimi-k3 serves with a key only behind its API-key guard (the `auth` check probes /invocations)
GUARD = ("components.inference.kk3_api_guard.ApiKeyGuard",)


def double(**kw):
    return VllmOpenAIDouble(DoubleConfig(**{"api_key": KEY, "middleware": GUARD, **FAST, **kw}))


def run_cli(d, capsys, monkeypatch, *extra, key=True):
    monkeypatch.setenv("KK3_TEST_KEY", KEY)
    argv = ["accept", "--endpoint", d.url, "--model", "Kimi-K3", "--concurrency", "2",
            "--requests", "6", "--max-tokens", "8", "--timeout", "3", *extra]
    if "--known" not in extra:  # the shape checks here; the known answers: test_known_answers.py
        argv.append("--no-known")
    else:
        argv.remove("--known")
    if key:
        argv += ["--api-key-env", "KK3_TEST_KEY"]
    code = cli.main(argv)
    out = capsys.readouterr().out
    assert KEY not in out
    return code, out


def test_healthy_double_passes_every_check_and_timing_matches(tmp_path, capsys, monkeypatch):
    ttft, tpot, n = 0.15, 0.02, 20
    with double(ttft_s=ttft, tpot_s=tpot) as d:
        out_file = tmp_path / "report.json"
        code, out = run_cli(d, capsys, monkeypatch, "--max-tokens", str(n), "--concurrency",
                            "4", "--requests", "8", "--out", str(out_file),
                            "--accelerator", "ascend-910c", "--nodes", "4", "--known",
                            "--known-max-tokens", "64")
    assert code == 0, out
    assert out.splitlines()[-1] == "PASS"
    report = json.loads(out_file.read_text())
    assert KEY not in out_file.read_text()
    assert [c["name"] for c in report["checks"]] == [
        "health", "models", "chat", "stream", "reasoning", "tool_call", "auth", "arithmetic",
        "json_schema", "needle", "greedy_repeat", "load"]
    assert all(c["ok"] for c in report["checks"])
    load = report["load"]
    assert (load["requests"], load["errors"], load["concurrency"]) == (8, 0, 4)
    # what is measured, not how fast this machine is: the double sleeps at least ttft/tpot, so
    # a figure below them is a measuring error; the upper bounds only catch a wrong quantity
    # (the whole answer's time as TTFT is ttft + 0.38 s, TTFT taken for TPOT 7.5 x tpot) and
    # leave room for a loaded 2-core machine (a worker's scheduling delay lengthens each gap)
    assert ttft <= load["ttft_s"]["p50"] <= ttft + 0.2
    assert tpot * 0.9 <= load["tpot_s"]["p50"] <= tpot * 2.5
    assert load["output_tokens"] == 8 * n
    assert load["output_tokens_per_s"] > 0
    assert [p["match"] for p in load["reference_points"]] == ["exact"]


# every check shown failing on its own fault: fault -> the checks that must fail (exactly)
FAULT_CASES = [
    ("health_down", {}, {"health"}),
    ("model_missing", {}, {"models"}),
    ("no_content", {}, {"chat", "stream"}),
    ("no_done", {}, {"stream", "load"}),
    ("no_reasoning", {}, {"reasoning"}),
    ("broken_tool_json", {}, {"tool_call"}),
    ("no_tool_call", {}, {"tool_call"}),
    ("ignore_key", {}, {"auth"}),
    # chat, stream and the two tool requests are requests 1-4; every 5th fails: only load
    ("fail_requests", {"fail_every": 5}, {"load"}),
    ("stream_error", {}, {"stream", "tool_call", "load"}),
]


@pytest.mark.parametrize("fault,kw,failing", FAULT_CASES, ids=[c[0] for c in FAULT_CASES])
def test_each_fault_fails_its_check_by_name(fault, kw, failing, capsys, monkeypatch):
    with double(faults=frozenset({fault}), **kw) as d:
        code, out = run_cli(d, capsys, monkeypatch)
    failed = {line.split()[1] for line in out.splitlines() if line.startswith("  FAIL ")}
    assert code == 1
    assert failed == failing, out
    first = next(name for name in ("health", "models", "chat", "stream", "reasoning",
                                   "tool_call", "auth", "load") if name in failing)
    assert out.splitlines()[-1] == f"FAIL {first}"


def test_the_fault_table_covers_every_check():
    covered = set().union(*(f for _, _, f in FAULT_CASES))
    assert covered == {"health", "models", "chat", "stream", "reasoning", "tool_call", "auth",
                       "load"}
    # the known-answer faults: tests/integration/test_known_answers.py
    from tests.doubles.knowledge import FAULTS as KNOWN_FAULTS
    assert {c[0] for c in FAULT_CASES} | {"hang", "stall_stream"} | set(KNOWN_FAULTS) \
        == set(FAULTS)


def test_hung_server_fails_within_the_bound(capsys, monkeypatch):
    with double(faults=frozenset({"hang"})) as d:
        start = time.monotonic()
        code, out = run_cli(d, capsys, monkeypatch, "--timeout", "1")
        took = time.monotonic() - start
    assert code == 1 and out.splitlines()[-1] == "FAIL health"
    assert "no answer within 1 s" in out and "not run" in out
    assert took < 5, f"a hung server held the command for {took:.1f} s (bound: one 1 s timeout)"


def test_stalled_stream_fails_within_the_bound(capsys, monkeypatch):
    with double(faults=frozenset({"stall_stream"})) as d:
        start = time.monotonic()
        code, out = run_cli(d, capsys, monkeypatch, "--timeout", "1", "--requests", "8")
        took = time.monotonic() - start
    assert code == 1 and out.splitlines()[-1] == "FAIL stream"
    assert "did not end within 1 s" in out
    # stream, streamed tool request, one load wave: each at most one timeout
    assert took < 8, took


@pytest.mark.parametrize("kw", [{"reasoning_field": "reasoning_content"},
                                {"tool_stream": "split"},
                                {"keep_alive_s": 0.01, "ttft_s": 0.1}],
                         ids=["old-reasoning-field", "split-tool-arguments", "keep-alives"])
def test_other_vllm_forms_pass(kw, capsys, monkeypatch):
    with double(**kw) as d:
        r = accept(AcceptConfig(d.url, "Kimi-K3", api_key=KEY, concurrency=2, requests=4,
                                max_tokens=8, timeout_s=3, known_max_tokens=64))
    assert all(c["ok"] for c in r["checks"]), r["checks"]
    if "keep_alive_s" in kw:  # comments are not output: TTFT is the first token's
        assert r["load"]["ttft_s"]["p50"] >= 0.1


def test_without_key_no_auth_check_and_load_off(capsys, monkeypatch):
    with VllmOpenAIDouble(DoubleConfig(**FAST)) as d:
        code, out = run_cli(d, capsys, monkeypatch, "--requests", "0", key=False)
    names = [line.split()[1] for line in out.splitlines() if line.startswith("  ")
             and line.split()[0] in ("ok", "FAIL")]
    assert code == 0 and "auth" not in names and "load" not in names and "load: off" in out


def test_wrong_key_given_is_reported_not_hidden(capsys, monkeypatch):
    with double() as d:
        monkeypatch.setenv("OTHER_KEY", "not-the-key-at-all")
        code = cli.main(["accept", "--endpoint", d.url, "--model", "Kimi-K3", "--requests", "0",
                         "--api-key-env", "OTHER_KEY", "--timeout", "3"])
        out = capsys.readouterr().out
    assert code == 1 and "401" in out and "not-the-key-at-all" not in out
    assert out.splitlines()[-1] == "FAIL models"


@pytest.mark.parametrize("argv,words", [
    (["--endpoint", "http://127.0.0.1:9/", "--model", "m"], "does not end in /v1"),
    (["--endpoint", "http://127.0.0.1:9/v1", "--model", "m", "--api-key-env", "KK3_UNSET_VAR"],
     "not set"),
    (["--endpoint", "http://127.0.0.1:9/v1", "--model", "m", "--api-key-env", "sk-abc=="],
     "not an environment variable name"),
    (["--endpoint", "http://127.0.0.1:9/v1", "--model", "m", "--concurrency", "0"],
     "--concurrency"),
    (["--endpoint", "http://127.0.0.1:9/v1", "--model", "m", "--out", "/nonexistent/r.json"],
     "does not exist"),
])
def test_bad_usage_exits_2_with_one_line(argv, words, capsys, monkeypatch):
    monkeypatch.delenv("KK3_UNSET_VAR", raising=False)
    assert cli.main(["accept", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and words in err


def test_the_real_command_line(tmp_path):
    """`python -m components accept` as a user runs it: exit codes, summary, report file."""
    with double() as d:
        env = {**os.environ, "KK3_TEST_KEY": KEY}
        args = [sys.executable, "-m", "components", "accept", "--endpoint", d.url, "--model",
                "Kimi-K3", "--api-key-env", "KK3_TEST_KEY", "--requests", "4", "--max-tokens",
                "8", "--timeout", "5", "--out", str(tmp_path / "r.json")]
        p = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stdout + p.stderr
        assert p.stdout.splitlines()[-1] == "PASS" and KEY not in p.stdout + p.stderr
        assert json.loads((tmp_path / "r.json").read_text())["model"] == "Kimi-K3"
        p = subprocess.run(args[:-2] + ["--model", "Nope"], cwd=ROOT, env=env,
                           capture_output=True, text=True, timeout=60)
        assert p.returncode == 1 and p.stdout.splitlines()[-1] == "FAIL models"
        p = subprocess.run([sys.executable, "-m", "components", "accept", "--model", "m"],
                           cwd=ROOT, capture_output=True, text=True, timeout=60)
        assert p.returncode == 2


# ---- the readiness wait -------------------------------------------------------------------

def test_readiness_waits_for_health_then_models_then_chat(fake_clock):
    """In simulated time: the double warms up for 60 s, the wait polls every 10 s."""
    seen = []
    with double(ready_after_s=60, clock=fake_clock) as d:
        r = wait_ready(d.url, "Kimi-K3", KEY, timeout_s=600, poll_interval_s=10,
                       on_poll=lambda gate, what: seen.append(gate), clock=fake_clock,
                       sleep=fake_clock.asleep)
    assert r.ready and r.stage == "ready" and "chat completion answered" in r.last_seen
    assert seen == ["health"] * 7 + ["models", "chat"]  # 503 at 0, 10, ... 50 s; 200 at 60 s
    assert r.elapsed_s == 60 and r.polls == 9 and fake_clock.slept == [10.0] * 6


def test_readiness_never_sleeps_past_its_deadline(fake_clock):
    with double(faults=frozenset({"health_down"})) as d:
        r = wait_ready(d.url, "Kimi-K3", KEY, timeout_s=25, poll_interval_s=10, clock=fake_clock,
                       sleep=fake_clock.asleep)
    assert not r.ready and r.stage == "health" and fake_clock.slept == [10.0, 10.0, 5.0]
    assert r.elapsed_s == 25 and r.polls == 3


@pytest.mark.parametrize("fault,stage,words", [
    ("model_missing", "models", "'Kimi-K3' is not listed"),
    ("health_down", "health", "HTTP 503"),
    ("hang", "health", "no answer within"),
])
def test_readiness_returns_what_it_last_saw_by_the_deadline(fault, stage, words):
    with double(faults=frozenset({fault})) as d:
        start = time.monotonic()
        r = wait_ready(d.url, "Kimi-K3", KEY, timeout_s=1.0, poll_interval_s=0.2,
                       request_timeout_s=0.5)
        took = time.monotonic() - start
    assert not r.ready and r.stage == stage and words in r.last_seen
    assert took < 2.5
    assert stage in r.error_message(d.url, 1.0) and KEY not in r.error_message(d.url, 1.0)


def test_readiness_refused_key_is_seen_as_401(fake_clock):
    """The deadline in simulated time, so every poll has its whole request timeout (in real
    time a last poll left with a sliver of the deadline timed out on a loaded machine)."""
    with double() as d:
        r = wait_ready(d.url, "Kimi-K3", "wrong", timeout_s=10, poll_interval_s=2,
                       request_timeout_s=5, clock=fake_clock, sleep=fake_clock.asleep)
    assert not r.ready and r.stage == "models" and "401" in r.last_seen


def test_sync_api_works_inside_a_running_event_loop():
    import asyncio

    async def inside():
        with double() as d:
            return wait_ready(d.url, "Kimi-K3", KEY, timeout_s=5, poll_interval_s=0.1)

    assert asyncio.run(inside()).ready


def test_double_refuses_like_vllm():
    """The double's own contract (vLLM's middleware and error bodies), seen with plain HTTP."""
    import httpx

    with double() as d:
        r = httpx.get(d.url + "/models", headers={"Authorization": "Basic " + KEY})
        assert (r.status_code, r.json()) == (401, {"error": "Unauthorized"})
        r = httpx.get(d.url + "/models", headers={"Authorization": "bearer " + KEY})
        assert r.status_code == 200 and r.json()["data"][0]["owned_by"] == "vllm"
        assert httpx.get(d.url[:-3] + "/health").status_code == 200  # not guarded
        r = httpx.post(d.url + "/chat/completions", json={"model": "x", "messages": []},
                       headers={"Authorization": f"Bearer {KEY}"})
        assert r.status_code == 404 and r.json()["error"]["type"] == "NotFoundError"
        r = httpx.post(d.url + "/chat/completions", content=b"{}",
                       headers={"Authorization": f"Bearer {KEY}", "Content-Type": "text/plain"})
        assert r.status_code == 400


def test_streams_reuse_connections():
    """After [DONE] the client reads the body to its end, so the pool keeps the connection."""
    with double() as d:
        accept(AcceptConfig(d.url, "Kimi-K3", api_key=KEY, concurrency=2, requests=10,
                            max_tokens=4, timeout_s=3))
        load_ports = {s["client_port"] for s in d.seen[-10:]}
    assert len(load_ports) <= 4, load_ports


def test_the_deploy_gate_passes_or_names_the_check():
    from components.accept.gate import AcceptanceFailed, gate_config, run_gate
    from components.accept.sizing import LoadSize

    with double() as d:
        cfg = gate_config(d.url, "Kimi-K3", KEY, LoadSize(6, 3, 8), timeout_s=5)
        out = run_gate(cfg)
    assert out["ok"] and out["load"]["requests"] == 6 and out["load"]["max_tokens"] == 8
    assert cfg.max_tokens == 512  # functional checks leave room for reasoning
    with double(faults=frozenset({"no_reasoning"})) as d:
        with pytest.raises(AcceptanceFailed) as err:
            run_gate(gate_config(d.url, "Kimi-K3", KEY, None, timeout_s=5))
    assert str(err.value).startswith("acceptance check reasoning failed: neither")
    assert err.value.check == "reasoning" and err.value.report["load"] is None


@pytest.mark.parametrize("still_taken", [False, True], ids=["restarted", "previous key still taken"])
def test_after_a_new_key_the_gate_sees_the_previous_key_refused(still_taken):
    """The gate of a `pulumi up` that changed kimi-k3:apiKey (accept/gate.py previous_key_of):
    `auth` also sends the previous key, which a server restarted with the new one refuses; one
    that still takes it (a replica not restarted) fails the gate, the key shown nowhere."""
    from components.accept.gate import gate_config, previous_key_of

    old, new = "kk3-previous-key-0123456789abcdef", KEY
    assert previous_key_of({"apiKey": old}, {"apiKey": new}) == old
    assert previous_key_of({"apiKey": new}, {"apiKey": new}) is None
    assert previous_key_of({"apiKey": ""}, {"apiKey": new}) is None
    # vLLM's own check taking both (the double's previous_key; kimi-k3's guard would hold one)
    with (double(previous_key=old, middleware=()) if still_taken else double()) as d:
        cfg = gate_config(d.url, "Kimi-K3", new, None, timeout_s=3, previous_key=old)
        report = accept(AcceptConfig(**{**cfg.__dict__, "known": False}))
    (auth,) = [c for c in report["checks"] if c["name"] == "auth"]
    assert auth["ok"] is not still_taken, auth
    assert ("previous key was not refused" in auth["detail"]) is still_taken
    assert "the previous key refused" in auth["detail"] or still_taken
    assert old not in json.dumps(report) and new not in json.dumps(report)
