"""The known-answer checks against the vLLM double: a healthy server passes; a server that is
wrong in the ways broken deployments are fails, each time by the check's name.

The double (tests/doubles/knowledge.py) answers the shipped problems from their data, reads
the planted codes from the part of the prompt it sees, and can be wrong: numbers off by one
(`wrong_numbers`), a context read only up to N tokens (`lost_needle`), a replica answering half
the problems differently (`replica_drift`), greedy answers that change between identical
requests (`flaky_greedy`), a response_format ignored (`schema_ignored`).
"""

import pytest

from components.accept import AcceptConfig, accept, summary
from components.accept import known as kn
from components.accept.report import KNOWN_CHECKS
from tests.doubles.knowledge import FAULTS as KNOWN_FAULTS
from tests.doubles.vllm_openai import DoubleConfig, VllmOpenAIDouble

FAST = dict(ttft_s=0.005, tpot_s=0.0005, max_model_len=32768)


def run(url, **kw):
    cfg = dict(concurrency=2, requests=0, max_tokens=16, timeout_s=20, known_max_tokens=64)
    return accept(AcceptConfig(url, "Kimi-K3", **{**cfg, **kw}))


def failed(report):
    return [c["name"] for c in report["checks"] if not c["ok"]]


def detail(report, name):
    return next(c["detail"] for c in report["checks"] if c["name"] == name)


def test_a_healthy_double_passes_every_known_check_at_its_context_length():
    with VllmOpenAIDouble(DoubleConfig(**FAST)) as d:
        r = run(d.url)
    assert failed(r) == [], summary(r)
    assert [c["name"] for c in r["checks"]][-4:] == ["arithmetic", "json_schema", "needle",
                                                     "greedy_repeat"]
    # lengths up to the server's max_model_len (32768 less the answer's room), three of them
    needle = detail(r, "needle")
    assert needle.count("3/3 found") == 3, needle
    longest = int(needle.split("; ")[-1].split(" tokens")[0])
    usable = 32768 - kn.NEEDLE_ANSWER_TOKENS
    assert 0.9 * usable <= longest <= usable, needle
    assert "8/8 correct" in detail(r, "arithmetic")


# fault -> the known checks that must fail, exactly (the first one names the failure)
CASES = [
    ("wrong_numbers", {}, ["arithmetic", "json_schema", "needle"]),
    ("lost_needle", {"needle_window_tokens": 8192}, ["needle"]),
    ("flaky_greedy", {}, ["greedy_repeat"]),
    ("schema_ignored", {}, ["json_schema"]),
    ("replica_drift", {}, ["arithmetic"]),
]


@pytest.mark.parametrize("fault,kw,failing", CASES, ids=[c[0] for c in CASES])
def test_each_wrong_server_fails_by_check_name(fault, kw, failing):
    with VllmOpenAIDouble(DoubleConfig(faults=frozenset({fault}), **FAST, **kw)) as d:
        r = run(d.url)
    assert failed(r) == failing, summary(r)
    assert summary(r).splitlines()[-1] == f"FAIL {failing[0]}"


def test_the_fault_table_covers_every_known_fault_and_check():
    assert {c[0] for c in CASES} == set(KNOWN_FAULTS)
    covered = {n for c in CASES for n in c[2]} | {"greedy_replicas"}  # the replica test below
    assert covered == set(KNOWN_CHECKS)


def test_lost_needle_detail_says_where_the_text_stopped_being_read():
    with VllmOpenAIDouble(DoubleConfig(faults=frozenset({"lost_needle"}),
                                       needle_window_tokens=8192, **FAST)) as d:
        r = run(d.url)
    text = detail(r, "needle")
    parts = text.split("; ")
    assert "3/3 found" in parts[0] and "3/3 found" in parts[1]  # 2048 and ~4K: all read
    assert "1/3 found (need 2)" in parts[2] and "cobalt expected" in parts[2], text


def test_replicas_that_disagree_fail_greedy_replicas_naming_the_replica():
    cfg = DoubleConfig(**FAST)
    with VllmOpenAIDouble(cfg) as front, VllmOpenAIDouble(cfg) as good, \
            VllmOpenAIDouble(DoubleConfig(faults=frozenset({"replica_drift"}), **FAST)) as bad:
        r = run(front.url, replicas=(good.url, bad.url))
        assert failed(r) == ["greedy_replicas"], summary(r)
        text = detail(r, "greedy_replicas")
        assert f"127.0.0.1:{bad.port} answers" in text and f":{good.port} answers" not in text
        ok = run(front.url, replicas=(good.url,))
    assert failed(ok) == [] and "1 replicas give the router's answers" in detail(ok, "greedy_replicas")


def test_known_requests_send_greedy_sampling_explicitly():
    with VllmOpenAIDouble(DoubleConfig(**FAST)) as d:
        seen = []
        d.cfg.log = None
        orig = d.knowledge.answer

        def spy(prompt, req, faults, count):
            said = orig(prompt, req, faults, count)
            if said is not None:  # a known-answer question
                seen.append({k: req.get(k) for k in ("temperature", "top_p", "seed")})
            return said
        d.knowledge.answer = spy
        run(d.url)
    assert len(seen) >= 8 + 1 + 3 + 9 and all(s["temperature"] == 0 and s["top_p"] == 1 and s["seed"] is not None
                        for s in seen)


def test_the_known_requests_go_out_as_one_batch_after_a_one_token_sizing_request():
    """What the gate's time estimate (known_cost.py) counts on: the needle's control prompt is
    sized first with one output token, then every known-answer request is in flight at once
    (the 8 problems, their 9 greedy copies, the extraction and the needle's 3 lengths), so the
    checks cost one answer's decode, not two batches one after the other."""
    with VllmOpenAIDouble(DoubleConfig(**{**FAST, "ttft_s": 0.4})) as d:
        seen = []
        orig = d.knowledge.answer

        def spy(prompt, req, faults, count):
            said = orig(prompt, req, faults, count)
            if said is not None:
                seen.append((req["max_tokens"], "access codes" in prompt, d.running))
            return said
        d.knowledge.answer = spy
        r = run(d.url)
    assert failed(r) == [], summary(r)
    assert seen[0][:2] == (1, True)  # the sizing request: the needle's control, one token
    batch = seen[1:]
    assert len(batch) == 8 + 9 + 1 + 3 and {m for m, _, _ in batch} == {64}
    # in flight together: more than either of two batches one after the other could hold (the
    # problems, extraction and control, 10; the long needles and the copies, 11); all 21 on an
    # idle machine (each answer holds 0.4 s before its first token), fewer if arrivals straggle
    peak = max(running for _, _, running in batch) + 1
    assert peak > 11, f"at most {peak} known-answer requests in flight at once"


def test_no_known_skips_them():
    with VllmOpenAIDouble(DoubleConfig(**FAST)) as d:
        r = run(d.url, known=False)
    assert not {c["name"] for c in r["checks"]} & set(KNOWN_CHECKS)


@pytest.mark.parametrize("argv,words", [
    (["--replica", "http://127.0.0.1:9/"], "--replica 'http://127.0.0.1:9/' does not end in /v1"),
    (["--replica", "file:///etc/passwd"], "--replica 'file:///etc/passwd' is not an http(s) URL"),
    (["--needle-cap-tokens", "-5"], "--needle-cap-tokens -5 is out of range"),
    (["--context-tokens", "0"], None),  # 0 = not given: the server's max_model_len
    (["--known-max-tokens", "0"], "--known-max-tokens 0 is out of range"),
])
def test_known_answer_options_refuse_bad_values_in_one_line(argv, words, capsys):
    from components.cli import main as cli

    code = cli.main(["accept", "--endpoint", "http://127.0.0.1:9/v1", "--model", "m",
                     "--timeout", "1", *argv])
    err = capsys.readouterr().err.strip()
    if words is None:
        assert code == 1 and not err  # nothing answers on port 9: a failed health check
    else:
        assert code == 2 and len(err.splitlines()) == 1 and words in err, err


def _largest_prompt(d):
    """Wrap the double's knowledge so the longest prompt it was asked is recorded."""
    seen = [0]
    orig = d.knowledge.answer

    def spy(prompt, req, faults, count):
        seen[0] = max(seen[0], len(prompt))
        return orig(prompt, req, faults, count)
    d.knowledge.answer = spy
    return seen


def test_a_server_claiming_a_context_beyond_belief_fails_needle_without_building_it():
    """The needle builds its longest prompt in memory from the server's max_model_len when no
    context or cap is given (`accept --needle-cap-tokens 0`): a server claiming more than 4 x the
    largest known context is not believed (a claim of 10**10 tokens would have `accept` build
    tens of GB of text), so only the control is asked and the check fails naming the figure."""
    from components.accept.known_checks import MAX_BELIEVED_CONTEXT_TOKENS

    claim = MAX_BELIEVED_CONTEXT_TOKENS + 1
    with VllmOpenAIDouble(DoubleConfig(**{**FAST, "max_model_len": claim})) as d:
        largest = _largest_prompt(d)
        r = run(d.url, needle_cap_tokens=None)
    assert failed(r) == ["needle"], summary(r)
    assert f"the server's max_model_len {claim} is above {MAX_BELIEVED_CONTEXT_TOKENS} tokens" \
        in detail(r, "needle")
    assert largest[0] < 4 * kn.NEEDLE_CONTROL_TOKENS * 2, largest  # the control's size only


def test_a_server_lying_about_the_controls_prompt_tokens_fails_needle_without_sizing_from_it(
        monkeypatch):
    """The longer needle prompts are sized from the control's usage.prompt_tokens: a server that
    reports 1 token for the 8 kB control would make each longer prompt 8,000 times its target.
    Outside 1-16 characters per token the count is not believed and the check fails naming it."""
    from tests.doubles import vllm_openai as vo

    honest = vo._Engine.usage

    def lying(self):
        u = honest(self)
        if self.max_tokens == 1:  # the needle's one-token sizing request
            u["prompt_tokens"] = 1
        return u
    monkeypatch.setattr(vo._Engine, "usage", lying)
    with VllmOpenAIDouble(DoubleConfig(**FAST)) as d:
        largest = _largest_prompt(d)
        r = run(d.url, needle_cap_tokens=4096)
    assert failed(r) == ["needle"], summary(r)
    assert "reported 1 prompt tokens for the" in detail(r, "needle")
    assert "outside 1-16): not believed" in detail(r, "needle")
    assert largest[0] < 4 * kn.NEEDLE_CONTROL_TOKENS * 2, largest
