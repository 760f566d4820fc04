"""The plan's block-start-to-first-token estimate per weights path on the NVIDIA shapes.

Pure arithmetic over the planner (components/inference/coldstart.py): no cloud, no timing. The
aws-eks node-ready assumption (components/aws_eks/weights/model.py) is included, so the figures
are "from the Capacity Block's start", and the mirror fills at the rate the stack plans with
(weights/plan.py: the hub rate bounded by the default system node's baseline bandwidth). The last
column is the readiness gate's deadline for that path (components/aws_eks/gate_budget.py: node
join + mirror wait + staging + vLLM's startup timeout), what `pulumi up` waits at most.
Prints a table; asserts nothing.

    .venv/bin/python bench/weights_coldstart.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from components.aws_eks.config import DEFAULT_SYSTEM_INSTANCE_TYPE  # noqa: E402
from components.aws_eks.gate_budget import plan_budget  # noqa: E402
from components.aws_eks.weights.model import NODE_READY_S, mirror_fill_gb_per_s  # noqa: E402
from components.inference.coldstart import MIRROR_FILL_RATE  # noqa: E402
from components.inference.catalog import NODE_SHAPES  # noqa: E402
from components.inference.errors import ConfigError  # noqa: E402
from components.inference.planner import PlanRequest, plan  # noqa: E402

PATHS = [
    ("hub", dict(weights_source="hub")),
    ("s3 mirror, full before the block", dict(weights_source="mirror")),
    ("s3 mirror, block starts at once", dict(weights_source="mirror", block_lead_s=0)),
    ("streamed from the mirror", dict(weights_source="mirror", stream_weights=True)),
    ("streamed, block starts at once", dict(weights_source="mirror", stream_weights=True, block_lead_s=0)),
]
#: what aws-eks's plan request passes (components/aws_eks/weights/plan.py)
FILL_GB_PER_S = mirror_fill_gb_per_s(DEFAULT_SYSTEM_INSTANCE_TYPE, MIRROR_FILL_RATE[0])


def smallest(shape: str, **kw):
    for nodes in (1, 2, 4, 8):
        try:
            return plan(PlanRequest("mxfp4", shape, nodes, node_ready_s=NODE_READY_S,
                                    compile_cache=True, mirror_fill_gb_per_s=FILL_GB_PER_S, **kw))
        except ConfigError:
            continue
    return None


def main() -> None:
    print("| shape | nodes | path | first token (min) | with compile cache (min) | stage s | load s | "
          "timeout s | GPU node-h saved vs hub | gate deadline s |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for shape in sorted(k for k, v in NODE_SHAPES.items() if v.accelerator.platform == "cuda"):
        for label, kw in PATHS:
            p = smallest(shape, **kw)
            if p is None:
                continue
            c = p.cold_start
            cached = "-" if c.first_token_cached_s is None else f"{c.first_token_cached_s / 60:.1f}"
            print(f"| {shape} | {p.nodes} | {label} | {c.first_token_s / 60:.1f} | {cached} | "
                  f"{c.stage_s} | {c.load_s} | {c.startup_timeout_s} | {c.gpu_node_s_saved / 3600:.2f} | "
                  f"{plan_budget(c).deadline_s} |")
    p = smallest("p6-b300.48xlarge", weights_source="mirror")
    print(f"\nmirror fill (before the block, {DEFAULT_SYSTEM_INSTANCE_TYPE} system node at "
          f"{FILL_GB_PER_S:g} GB/s): {p.cold_start.mirror_fill_s / 60:.0f} min; node ready assumed {NODE_READY_S} s")


if __name__ == "__main__":
    main()
