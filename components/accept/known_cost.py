"""What the known-answer checks cost against a real endpoint, estimated from token counts (pure).

The gate must stay short (issue 23: at most 5 minutes added). The checks send one sizing
request (the needle's control prompt, one output token) and then one batch, all at once
(known_checks.py): its requests decode side by side, so the batch costs its longest answer,
`output tokens x TPOT`, and the prefills are added to that (a prefill step holds the decodes
back; counting them in full, one after another on one data-parallel rank, is the conservative
side). Prefill is compute: FLOPs / (devices of one data-parallel rank x peak x utilisation).
The needle's long prompt dominates: its attention FLOPs grow with the square of the context,
so the gate caps the needle where its estimated prefill stays within NEEDLE_PREFILL_BUDGET_S
(the detail says so) and the accept command asks up to the whole context unless told.

Assumptions (each a named constant, none measured on Kimi K3):
- peak dense BF16 FLOPS per device: B200/B300 2.25 PF (NVIDIA HGX B300/B200 tables: 36 PF
  BF16 with sparsity per 8 GPUs; glennklockwood.com/garden/processors/B300, read 2026-12-01),
  H100/H200 0.989 PF (NVIDIA H100 SXM datasheet), Ascend 910C 0.376 PF per device (a 910C
  package, two devices, is reported at ~752 TFLOPS FP16; secondary, unverified);
- PREFILL_MFU 0.35 of that peak during a long prefill;
- Kimi K3's attention: the catalog's assumed MLA layers and latent width
  (components/inference/catalog.py ModelArchitecture), ATTENTION_HEADS = 64 (Kimi K2's
  `num_attention_heads`; K3's is not public); per query-key pair and head
  2 x (kv_lora_rank + qk_rope_head_dim) + 2 x kv_lora_rank FLOPs (MLA with absorbed weights);
  KDA layers cost O(1) per token and are left out;
- linear layers: 2 FLOPs per active parameter per token; active parameters from the catalog's
  assumptions: the non-expert share plus active/routed of the expert share.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Optional

from . import known as kn

PEAK_DENSE_BF16_FLOPS: Dict[str, float] = {
    "b300": 2.25e15, "b200": 2.25e15, "h200": 0.989e15, "h100": 0.989e15,
    "ascend-910c": 0.376e15,
}
PREFILL_MFU = 0.35
ATTENTION_HEADS = 64
#: the gate keeps the needle's longest prompt within this much estimated prefill
NEEDLE_PREFILL_BUDGET_S = 90.0
#: tokens a known-answer request typically generates (reasoning and answer): an assumption for
#: the "typical" column; the worst case is max_tokens
TYPICAL_OUTPUT_TOKENS = 600
#: prompt tokens of the short requests (the word problems and the shipment note, rendered)
SHORT_PROMPT_TOKENS = 120


def active_params(model) -> float:
    a = model.architecture
    f = model.expert_weight_fraction
    return a.total_params * ((1 - f) + f * a.active_experts / a.routed_experts)


def prefill_flops(tokens: int, model) -> float:
    a = model.architecture
    per_pair = ATTENTION_HEADS * (2 * (a.kv_lora_rank + a.qk_rope_head_dim) + 2 * a.kv_lora_rank)
    attention = a.mla_layers * per_pair * tokens * tokens / 2  # causal: half the pairs
    return 2 * active_params(model) * tokens + attention


def prefill_s(tokens: int, model, accelerator: str, devices: int) -> float:
    """Seconds to prefill `tokens` on one data-parallel rank of `devices` accelerators."""
    return prefill_flops(tokens, model) / (devices * PEAK_DENSE_BF16_FLOPS[accelerator] * PREFILL_MFU)


def needle_cap_tokens(model, accelerator: str, devices: int, context_tokens: int,
                      budget_s: float = NEEDLE_PREFILL_BUDGET_S) -> Optional[int]:
    """The longest needle prompt whose estimated prefill fits `budget_s` (None: the whole
    usable context fits)."""
    usable = context_tokens - kn.NEEDLE_ANSWER_TOKENS
    if usable <= kn.NEEDLE_CONTROL_TOKENS or prefill_s(usable, model, accelerator, devices) <= budget_s:
        return None
    lo, hi = kn.NEEDLE_CONTROL_TOKENS, usable
    while hi - lo > 1024:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if prefill_s(mid, model, accelerator, devices) <= budget_s else (lo, mid)
    return lo


@dataclass(frozen=True)
class GateEstimate:
    """Seconds the known-answer checks add, for one output length per answer."""

    sizing_s: float  # the needle's control prompt asked for one token (its prompt_tokens)
    prefill_s: float  # every prompt of the batch: the short ones and the needle at each length
    decode_s: float  # the batch's decodes side by side: the longest answer
    needle_tokens: int

    @property
    def total_s(self) -> float:
        return self.sizing_s + self.prefill_s + self.decode_s


def short_requests() -> int:
    """Requests of the batch with a short prompt on the endpoint: the word problems, their
    greedy copies and the extraction (each replica prefills its own problems itself)."""
    return len(kn.problems()) + kn.REPEAT_PROBLEMS * kn.REPEAT_COPIES + 1


def estimate(model, accelerator: str, devices: int, context_tokens: int, tpot_s: float,
             output_tokens: int, needle_cap: Optional[int] = None) -> GateEstimate:
    """The known-answer checks' time: the sizing request, then one batch whose decodes
    (`output_tokens` each at `tpot_s`) run side by side after its prefills (the short prompts
    and the needle at every length, counted one after another on one rank). The replicas'
    own word problems prefill on their own servers and are left out."""
    lengths = kn.needle_lengths(context_tokens, needle_cap)
    sizing = prefill_s(lengths[0], model, accelerator, devices) + tpot_s if len(lengths) > 1 else 0.0
    prefill = (prefill_s(short_requests() * SHORT_PROMPT_TOKENS, model, accelerator, devices)
               + sum(prefill_s(t, model, accelerator, devices) for t in lengths))
    return GateEstimate(sizing_s=sizing, prefill_s=prefill, decode_s=output_tokens * tpot_s,
                        needle_tokens=lengths[-1])


def gate_clock(plan) -> "tuple[int, str]":
    """The known-answer checks' share of the gate on the plan's clock (progress/clock.py):
    seconds and the basis it states. Typical answers (TYPICAL_OUTPUT_TOKENS) at the TPOT of a
    published reference point on the plan's node shape (reference_points.json), the needle
    capped as the gate caps it (gate.known_input); (0, why) when no TPOT was published for it:
    the plan has no TPOT of its own, and none is made up here."""
    from ..inference.catalog import MODELS
    from .reference import matching

    points = [p for p in matching(plan.accelerator, plan.node_shape)
              if isinstance(p.get("figures", {}).get("tpot_s_mean"), (int, float))]
    if not points:
        return 0, (f"the known-answer checks are not estimated (no published TPOT for "
                   f"{plan.node_shape}: accept/reference_points.json)")
    tpot, model, par = float(points[0]["figures"]["tpot_s_mean"]), MODELS[plan.model], plan.parallelism
    devices = par.tensor_parallel * par.pipeline_parallel
    cap = needle_cap_tokens(model, plan.accelerator, devices, plan.max_model_len)
    est = estimate(model, plan.accelerator, devices, plan.max_model_len, tpot,
                   TYPICAL_OUTPUT_TOKENS, cap)
    return int(round(est.total_s)), (
        f"the known-answer checks ~{est.total_s / 60:.1f} min ({TYPICAL_OUTPUT_TOKENS}-token answers at "
        f"TPOT {tpot * 1000:g} ms, reference point {points[0]['id']}; needle up to "
        f"{est.needle_tokens:,} tokens)")
