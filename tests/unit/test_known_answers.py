"""The known-answer set and its reading (components/accept/known.py), without a server.

The data's answers are recomputed here from each problem's `work` expression (an arithmetic
evaluator of our own, no eval), and every number of the expression must appear in the
question: a typo in the data cannot make a right answer look wrong.
"""

import ast
import operator
import random
import re

import pytest

from components.accept import known as kn

OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
       ast.Div: operator.truediv}


def evaluate(expr: str):
    def ev(n):
        if isinstance(n, ast.Expression):
            return ev(n.body)
        if isinstance(n, ast.BinOp) and type(n.op) in OPS:
            return OPS[type(n.op)](ev(n.left), ev(n.right))
        if isinstance(n, ast.Constant) and isinstance(n.value, int):
            return n.value
        raise ValueError(f"not arithmetic: {ast.dump(n)}")
    return ev(ast.parse(expr, mode="eval"))


@pytest.mark.parametrize("p", kn.problems(), ids=lambda p: p.id)
def test_each_answer_is_its_work_and_the_work_uses_the_questions_numbers(p):
    value = evaluate(p.work)
    assert value == int(value) and int(value) == p.answer
    question_numbers = set(re.findall(r"\d+", p.question))
    assert set(re.findall(r"\d+", p.work)) <= question_numbers, p.work


def test_the_set_is_big_enough_for_its_threshold():
    ps = kn.problems()
    assert len({p.id for p in ps}) == len(ps) == 8
    assert len(ps) - 1 == kn.ARITHMETIC_MIN_CORRECT  # one slip allowed, two fail
    assert kn.REPEAT_PROBLEMS <= len(ps)


def test_the_shipment_expected_fields_are_in_the_note_and_the_total_computed():
    s = kn.shipment()
    e = s["expected"]
    for k in ("order_id", "origin", "date", "pallets", "carrier"):
        assert str(e[k]) in s["note"], k
    assert evaluate(s["total_work"]) == e["total_weight_kg"]
    assert str(e["total_weight_kg"]) not in s["note"]  # it has to be computed
    assert kn.schema_errors(e, s["schema"]) == []


@pytest.mark.parametrize("text,want", [
    ("so the result is\nANSWER: 47", 47),
    ("**ANSWER: 2,018**", 2018),
    ("answer = 12", 12),
    ("first 3 then 5\nANSWER: 9\nsorry, ANSWER: 11", 11),
    ("no marker, the last number 14 wins over 3", 3),
    ("nothing numeric", None),
    ("", None),
    (None, None),
    ("ANSWER: -5", -5),
])
def test_extract_integer(text, want):
    assert kn.extract_integer(text) == want


def test_arithmetic_threshold_and_detail():
    ps = kn.problems()
    right = {p.id: p.answer for p in ps}
    assert kn.judge_arithmetic(right, {})[0]
    one_wrong = {**right, ps[0].id: ps[0].answer + 1}
    ok, detail = kn.judge_arithmetic(one_wrong, {})
    assert ok and f"expected {ps[0].answer}, got {ps[0].answer + 1}" in detail
    two_wrong = {**one_wrong, ps[1].id: None}
    ok, detail = kn.judge_arithmetic(two_wrong, {ps[1].id: "HTTP 500"})
    assert not ok and "6/8 correct (threshold 7)" in detail and "HTTP 500" in detail


def test_repeat_and_replicas_judges():
    ps = kn.problems()
    first = {p.id: p.answer for p in ps}
    same = {p.id: [p.answer] * 3 for p in ps[:3]}
    assert kn.judge_repeat(first, same, {})[0]
    differs = {**same, ps[1].id: [ps[1].answer, ps[1].answer + 3, ps[1].answer]}
    ok, detail = kn.judge_repeat(first, differs, {})
    assert not ok and ps[1].id in detail
    assert not kn.judge_repeat(first, {ps[0].id: [None, None, None]}, {})[0]
    ok, _ = kn.judge_replicas(first, {"a:1": dict(first), "b:2": dict(first)})
    assert ok
    ok, detail = kn.judge_replicas(first, {"a:1": dict(first), "b:2": {**first, ps[4].id: 1}})
    assert not ok and "b:2 answers" in detail and ps[4].id in detail and "a:1" not in detail


def test_repeat_with_no_answer_at_all_says_so_not_that_answers_differ():
    """A server that answered no request (an error, a redirect) has shown nothing about
    determinism: the detail names the failure, not 'answers differ'."""
    ps = kn.problems()
    none = {p.id: None for p in ps}
    copies = {p.id: [None, None, None] for p in ps[:2]}
    why = {ps[0].id: "HTTP 307 (redirect not followed)"}
    ok, detail = kn.judge_repeat(none, copies, {}, why)
    assert not ok and detail.startswith("no answer to compare between identical requests: ")
    assert f"{ps[0].id}: HTTP 307 (redirect not followed)" in detail
    assert f"{ps[1].id}: no integer in any answer" in detail and "differ" not in detail
    # one problem answered inconsistently and one not at all: the difference leads
    first = {**none, ps[0].id: ps[0].answer}
    mixed = {ps[0].id: [ps[0].answer, ps[0].answer + 1, ps[0].answer], ps[1].id: [None] * 3}
    ok, detail = kn.judge_repeat(first, mixed, {}, why)
    assert not ok and detail.startswith("greedy answers differ") and "no answer at all for 1" in detail


@pytest.mark.parametrize("obj,words", [
    ([], "is not an object"),
    ({"order_id": "58213"}, "$.order_id is not an integer"),
    ({"order_id": True}, "$.order_id is not an integer"),
    ({"date": "14/03/2026"}, "does not match"),
    ({"extra": 1}, "$.extra is not allowed"),
    ({}, "$.carrier is missing"),
])
def test_schema_errors_hostile_objects(obj, words):
    errs = kn.schema_errors(obj, kn.shipment()["schema"])
    assert any(words in e for e in errs), errs


@pytest.mark.parametrize("content,ok,words", [
    ('{"order_id": 58213, "origin": "rotterdam ", "date": "2026-03-14", "pallets": 12, '
     '"total_weight_kg": 7680, "carrier": "Nordlys Freight"}', True, "all 6 fields"),
    ('{"order_id": 58213, "origin": "Rotterdam", "date": "2026-03-14", "pallets": 12, '
     '"total_weight_kg": 640, "carrier": "Nordlys Freight"}', False, "total_weight_kg: expected 7680"),
    ("Order 58213 ships 12 pallets", False, "not JSON"),
    ('{"order_id": 58213}', False, "breaks the schema"),
    ("", False, "no content"),
])
def test_judge_shipment(content, ok, words):
    got, detail = kn.judge_shipment(content)
    assert got is ok and words in detail, detail


def test_needle_prompt_plants_each_code_at_its_depth_and_reads_back():
    codes = kn.needle_codes(random.Random(1))
    assert len(set(codes.values())) == 3 and all(100000 <= c < 1000000 for c in codes.values())
    prompt = kn.needle_prompt(40_000, codes)
    body = prompt.split("\n\n")[1]
    for depth, colour in zip(kn.NEEDLE_DEPTHS, kn.NEEDLE_COLOURS):
        at = body.index(kn.needle_sentence(colour, codes[colour]).strip())
        assert abs(at / len(body) - depth) < 0.02
    # the filler carries no digits: the codes are the only numbers in the text
    assert re.findall(r"\d{6}", body) == [f"{codes[c]:06d}" for c in kn.NEEDLE_COLOURS]
    answer = "\n".join(f"{c}: {codes[c]:06d}" for c in kn.NEEDLE_COLOURS)
    assert kn.extract_codes(answer) == codes
    assert kn.extract_codes("The amber locker's code is 123456; jade: 1234567") == \
        {"amber": 123456, "cobalt": None, "jade": None}


def test_needle_lengths_and_judge():
    assert kn.needle_lengths(None) == [kn.NEEDLE_CONTROL_TOKENS]
    assert kn.needle_lengths(1_048_576) == [2048, 130560, 1044480]  # less 4096 for the answer
    assert kn.needle_lengths(1_048_576, cap_tokens=100_000) == [2048, 12500, 100000]
    assert kn.needle_lengths(8192) == [2048, 4096]  # its eighth is not worth a request
    assert kn.needle_lengths(6144) == [2048]
    codes = {"amber": 111111, "cobalt": 222222, "jade": 333333}
    miss_one = {**codes, "jade": 999999}
    ok, detail = kn.judge_needle([(2048, codes, ""), (30000, miss_one, "")], codes)
    assert ok and "30000 tokens: 2/3 found (need 2)" in detail
    ok, detail = kn.judge_needle([(2048, miss_one, ""), (30000, codes, "")], codes)
    assert not ok and "jade expected 333333 got 999999" in detail
    ok, _ = kn.judge_needle([(2048, codes, ""), (30000, {**miss_one, "amber": None}, "")], codes)
    assert not ok
    assert not kn.judge_needle([], codes)[0]


def test_every_request_carries_explicit_greedy_sampling():
    body = kn.chat_body("Kimi-K3", "q", 10)
    assert body["temperature"] == 0 and body["top_p"] == 1 and isinstance(body["seed"], int)
    assert kn.shipment_body("Kimi-K3", 10)["response_format"]["type"] == "json_schema"


def test_a_needle_whose_longer_prompts_could_not_be_sized_fails_saying_so():
    """The longer needle prompts are sized from the control's usage.prompt_tokens; a server
    that reports none leaves only the control asked, and the check must not pass on it alone
    (it would claim the long context works without having asked it)."""
    from types import SimpleNamespace

    from components.accept.known_checks import _needle_result

    codes = {"amber": 123456, "cobalt": 234567, "jade": 345678}
    control = [(2048, dict(codes), "")]
    lengths = kn.needle_lengths(131072)
    cfg = SimpleNamespace(needle_cap_tokens=None)
    why = "the server reported no usage.prompt_tokens for the control prompt"
    r = _needle_result(cfg, control, codes, lengths, 131072, "given", why)
    assert not r.ok and r.detail.endswith(f"control only: {why}, so the longer prompts could not be sized")
    assert _needle_result(cfg, control, codes, kn.needle_lengths(None), None, "unknown").ok


class _ModelsOnly:
    """A test double of accept's Client for `_context_tokens`: answers GET /models with `body`."""

    timeout_s = 30

    def __init__(self, body):
        self.body, self.asked = body, []

    async def request(self, method, path, timeout_s=None):
        from components.accept.client import Answer

        self.asked.append((method, path))
        return Answer(200, self.body)


@pytest.mark.parametrize("claim,tokens,believed", [
    ("ceiling", "ceiling", True), ("ceiling+1", None, False), (10 ** 10, None, False), (131072, 131072, True)])
def test_a_servers_context_is_believed_up_to_the_ceiling_only(claim, tokens, believed):
    """The ceiling is applied where the server's figure is read (`_context_tokens`), whatever the
    source is called: above MAX_BELIEVED_CONTEXT_TOKENS no tokens, and the reason naming the claim."""
    import asyncio
    from types import SimpleNamespace

    from components.accept.known_checks import MAX_BELIEVED_CONTEXT_TOKENS, _context_tokens

    fig = {"ceiling": MAX_BELIEVED_CONTEXT_TOKENS, "ceiling+1": MAX_BELIEVED_CONTEXT_TOKENS + 1}
    claim, tokens = fig.get(claim, claim), fig.get(tokens, tokens)
    client = _ModelsOnly({"data": [{"id": "other", "max_model_len": 1}, {"id": "Kimi-K3", "max_model_len": claim}]})
    ctx = asyncio.run(_context_tokens(client, SimpleNamespace(context_tokens=None, model="Kimi-K3")))
    assert client.asked == [("GET", "/models")]
    assert (ctx.tokens, ctx.source) == (tokens, "the server's max_model_len")
    assert (ctx.not_believed == "") == believed
    if not believed:
        assert ctx.not_believed.startswith(f"the server's max_model_len {claim} is above {MAX_BELIEVED_CONTEXT_TOKENS}")


def test_a_context_the_user_gives_is_taken_without_asking_the_server():
    import asyncio
    from types import SimpleNamespace

    from components.accept.known_checks import _context_tokens

    client = _ModelsOnly({"data": []})
    ctx = asyncio.run(_context_tokens(client, SimpleNamespace(context_tokens=262144, model="Kimi-K3")))
    assert (ctx.tokens, ctx.source, ctx.not_believed, client.asked) == (262144, "given", "", [])
    ctx = asyncio.run(_context_tokens(client, SimpleNamespace(context_tokens=None, model="Kimi-K3")))
    assert (ctx.tokens, ctx.source, ctx.not_believed) == (None, "unknown", "")
