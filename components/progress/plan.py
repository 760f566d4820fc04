"""What the plan expects of each long wait: the `progressExpect` input of waiting resources.

The planner models the cold start phase by phase (components/inference/coldstart.py: mirror,
node, wait, stage, load, compile, graphs; each with its seconds and the source or assumption of
its figure). A provider that waits for one of them gets the figure and those words, so its
progress record can say "slow against the plan, which assumed 1,560 GB from cthpc at 2 GB/s"
instead of only "still waiting". Pure.

Phase names (shared with the providers, see docs/progress.md):
- `weights-mirror`: the S3 mirror filled from the hub (source `mirror` only);
- `weights-stage`: weights onto the node's local disk before vLLM starts;
- `vllm-start`: vLLM loading the weights, compiling and capturing graphs (no compile cache);
- `readiness-gate`: node start to the first token (the plan's `first_token_s`).
"""

from __future__ import annotations

from typing import Any, Dict, Optional

from ..inference.planner import Plan

#: the planner's cold-start phases (components/inference/coldstart.py) making up `vllm-start`
ENGINE_PHASES = ("load", "compile", "graphs")


def planned_waits(plan: Plan) -> Dict[str, Dict[str, Any]]:
    """{phase: {"expected_s": seconds, "assumption": words}} for the plan's budgeted waits."""
    c = plan.cold_start
    by_name = {ph.name: ph for ph in c.phases}
    waits: Dict[str, Dict[str, Any]] = {}

    def add(name: str, seconds: Optional[float], assumption: str) -> None:
        if seconds:
            waits[name] = {"expected_s": int(seconds), "assumption": assumption}

    mirror = by_name.get("mirror")
    if mirror:
        add("weights-mirror", mirror.seconds, mirror.source)
    stage = by_name.get("stage")
    if stage:
        add("weights-stage", stage.seconds, stage.source)
    engine = [by_name[n] for n in ENGINE_PHASES if n in by_name]
    timeout = f"gives up after {c.startup_timeout_s} s"
    if engine:
        add("vllm-start", sum(ph.seconds for ph in engine),
            " + ".join(f"{ph.name} {ph.seconds} s" for ph in engine)
            + f" ({c.loading}, no compile cache); {timeout}")
    else:  # a plan without phases (older plan.json): the summary figures
        add("vllm-start", c.estimate_s,
            f"load {c.load_s} s ({c.loading}) + warm-up {c.warmup_s} s; {timeout}")
    gpu = [ph for ph in c.phases if ph.clock == "gpu"]
    add("readiness-gate", c.first_token_s or (c.stage_s + c.estimate_s),
        "node start to first token: " + " + ".join(f"{ph.name} {ph.seconds} s" for ph in gpu)
        if gpu else f"stage {c.stage_s} s + start {c.estimate_s} s")
    return waits
