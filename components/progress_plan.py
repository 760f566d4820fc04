"""What the plan expects of each long wait: the `progressExpect` input of waiting resources.

The planner budgets the cold start (components/inference/planner.py: `ColdStart`, at the read
rates of `WEIGHT_SOURCES`); a provider that waits for one of these phases gets the figure and
the words saying what it assumed, so its progress record can say "slow against the plan,
which assumed 1680 GB from hub at 0.5 GB/s" instead of only "still waiting". Pure.

Phase names (shared with the providers, see docs/progress.md):
- `weights-stage`: weights onto each node's local disk before vLLM starts (`stage_s`);
- `weights-mirror`: the S3 mirror filled from Hugging Face (only when the source is `s3`);
- `vllm-start`: vLLM reading the weights into device memory and warming up (`estimate_s`);
- `readiness-gate`: the endpoint answering, from submit to ready (stage + start).
"""

from __future__ import annotations

from typing import Any, Dict

from .inference.planner import WEIGHT_SOURCES, Plan


def planned_waits(plan: Plan) -> Dict[str, Dict[str, Any]]:
    """{phase: {"expected_s": seconds, "assumption": words}} for the plan's budgeted waits."""
    c = plan.cold_start
    rate = WEIGHT_SOURCES.get(c.weights_source)
    size_gb = round(c.stage_s * rate) if rate and c.stage_s else None
    waits: Dict[str, Dict[str, Any]] = {}
    if c.stage_s and size_gb:
        waits["weights-stage"] = {
            "expected_s": c.stage_s,
            "assumption": f"~{size_gb} GB from {c.weights_source} at {rate:g} GB/s per node",
        }
    if c.weights_source == "s3":
        hub = WEIGHT_SOURCES["hub"]
        gb = size_gb or 0
        if gb:
            waits["weights-mirror"] = {
                "expected_s": int(round(gb / hub)),
                "assumption": f"~{gb} GB from Hugging Face into S3 at {hub:g} GB/s",
            }
    start = (f"load {c.load_s} s ({c.loading}) + warm-up {c.warmup_s} s; "
             f"gives up after {c.startup_timeout_s} s")
    waits["vllm-start"] = {"expected_s": c.estimate_s, "assumption": start}
    waits["readiness-gate"] = {
        "expected_s": c.stage_s + c.estimate_s,
        "assumption": (f"stage {c.stage_s} s ({c.weights_source}) + " + start),
    }
    return waits
