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


def test_estimate_adds_two_decode_batches_and_the_needle_prefill():
    m = MODELS["mxfp4"]
    e = kc.estimate(m, "b300", 8, 1_048_576, 0.02, 1000, needle_cap=200_000)
    assert e.needle_tokens == 200_000
    assert e.batch2_s == pytest.approx(20.0)
    assert e.batch1_s > 20.0 and e.needle_prefill_s > 0
    assert e.total_s == pytest.approx(e.batch1_s + e.needle_prefill_s + e.batch2_s)
