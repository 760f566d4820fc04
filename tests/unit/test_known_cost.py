"""The known-answer checks' time estimate (components/accept/known_cost.py)."""

import pytest

from components.accept import known as kn
from components.accept import known_cost as kc
from components.inference.catalog import MODELS


def test_active_parameters_follow_the_catalog_assumptions():
    a = kc.active_params(MODELS["mxfp4"])
    assert 100e9 < a < 160e9  # 3% dense + 16/896 of the experts of 2.78T


def test_prefill_grows_with_the_square_of_the_context_at_long_lengths():
    m = MODELS["mxfp4"]
    t1, t2 = kc.prefill_s(500_000, m, "b300", 8), kc.prefill_s(1_000_000, m, "b300", 8)
    assert 3.5 < t2 / t1 < 4.1
    assert kc.prefill_s(1_000_000, m, "b300", 16) == pytest.approx(t2 / 2)


@pytest.mark.parametrize("acc,devices,context", [("b300", 8, 1_048_576), ("ascend-910c", 16, 524_288),
                                                 ("h200", 16, 1_048_576)])
def test_the_cap_keeps_the_needle_prefill_within_the_budget(acc, devices, context):
    m = MODELS["mxfp4" if acc != "ascend-910c" else "w4a8"]
    cap = kc.needle_cap_tokens(m, acc, devices, context)
    assert cap is not None and kn.NEEDLE_CONTROL_TOKENS < cap < context
    assert kc.prefill_s(cap, m, acc, devices) <= kc.NEEDLE_PREFILL_BUDGET_S
    assert kc.prefill_s(cap + 2048, m, acc, devices) > kc.NEEDLE_PREFILL_BUDGET_S


def test_no_cap_when_the_whole_context_fits_or_is_tiny():
    m = MODELS["w4a8"]
    assert kc.needle_cap_tokens(m, "ascend-910c", 16, 32768) is None
    assert kc.needle_cap_tokens(m, "ascend-910c", 16, 1000) is None


def test_estimate_adds_one_decode_batch_to_every_prefill_and_the_sizing_request():
    m = MODELS["mxfp4"]
    e = kc.estimate(m, "b300", 8, 1_048_576, 0.02, 1000, needle_cap=200_000)
    assert e.needle_tokens == 200_000
    assert e.decode_s == pytest.approx(20.0)  # one batch: the longest answer, once
    lengths = kn.needle_lengths(1_048_576, 200_000)
    assert lengths[-1] == 200_000 and len(lengths) == 3
    assert e.prefill_s > sum(kc.prefill_s(t, m, "b300", 8) for t in lengths)  # + the short ones
    assert e.sizing_s == pytest.approx(kc.prefill_s(kn.NEEDLE_CONTROL_TOKENS, m, "b300", 8) + 0.02)
    assert e.total_s == pytest.approx(e.sizing_s + e.prefill_s + e.decode_s)
    # no context length: the control alone, no sizing request
    assert kc.estimate(m, "b300", 8, None, 0.02, 1000).sizing_s == 0


@pytest.mark.parametrize("model,shape,nodes", [("w4a8", "atlas-800-a3", 4), ("w4a8", "atlas-800-a3", 8),
                                               ("mxfp4", "p6-b300.48xlarge", 1),
                                               ("mxfp4", "p6-b300.48xlarge", 2)])
def test_the_gate_worst_case_stays_within_five_minutes_at_40_ms_per_token(model, shape, nodes):
    """Issue 23's goal for the gate (the needle capped as the gate caps it), even when every
    answer uses all of max_tokens at a slow 40 ms per output token."""
    from components.inference.planner import PlanRequest, plan

    pl = plan(PlanRequest(model=model, node_shape=shape, nodes=nodes))
    devices = pl.parallelism.tensor_parallel * pl.parallelism.pipeline_parallel
    cap = kc.needle_cap_tokens(MODELS[model], pl.accelerator, devices, pl.max_model_len)
    worst = kc.estimate(MODELS[model], pl.accelerator, devices, pl.max_model_len, 0.040,
                        kn.KNOWN_MAX_TOKENS, cap)
    assert worst.total_s <= 5 * 60
