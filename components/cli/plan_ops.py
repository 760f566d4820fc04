"""What the plan adds for the day after the deploy: cost, the clock, dashboards and alert rules.

`plan.json` gains `cost` (components/cost/estimate.py: per-hour parts, each with its price's
source and date, and the total when it is known) and `clock` (components/progress/clock.py: the
phases from `pulumi up` to the first accepted token, with estimates); the output directory gains
`dashboards/*.json` (Grafana, components/observability/dashboards.py) and
`prometheus/alerts.yml`. Every query of those files is checked against the metric names of the
vLLM release and exporter the stack deploys before anything is written (a query naming a metric
the stack does not expose is a bug here, not the user's: ObservabilityError). Pure of Pulumi.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any, Dict, List, Mapping, Optional

from ..cost import estimate as cost_estimate
from ..inference.catalog import MODELS
from ..observability import alerts, dashboards, metrics
from ..progress import clock as clocks


class ObservabilityError(Exception):
    """A dashboard or alert query names a metric the stack does not expose."""


def target_name(run) -> str:
    return run.deployment.shared.target


def contract(run) -> Optional[float]:
    """`kimi-k3:usdPerHour` as the program parsed it (components/config/shared.py)."""
    return run.deployment.shared.usd_per_hour


def cost(run, contract_usd_per_hour: Optional[float] = None) -> Dict[str, Any]:
    plan = run.deployment.plan
    if contract_usd_per_hour is None:
        contract_usd_per_hour = contract(run)
    # every replica's nodes (the plan is one replica's)
    nodes = plan.nodes * run.deployment.shared.replicas
    # the stack's region (its aws:region; a target without one: None, region-bound figures
    # stay unknown) and what its mirror stores (the checkpoint), in GB as S3 bills them: 2^30
    # bytes (https://aws.amazon.com/s3/faqs/, read 2026-12-02 in a copy: its S3 Express example
    # turns 10,995,116,277,760 bytes x 240 h into "3303.77 GB-Month", 2^30-byte GB over 744 h)
    region = (run.config or {}).get("aws:region")
    stored_gb = round(MODELS[plan.model].download_bytes / 2**30)
    return cost_estimate.estimate(target_name(run), run.resources, plan.node_shape, nodes,
                                  contract_usd_per_hour, region=region if isinstance(region, str) else None,
                                  stored_gb=stored_gb)


def clock(run) -> Dict[str, Any]:
    """The clock of the planned stack (components/progress/clock.py), with the block's start
    when the (offline) Capacity Block reports one."""
    outputs = run.outputs or {}
    # the Capacity Block's window, or the HyperPod path's training plan (components/aws_eks/hyperpod/)
    window = outputs.get("reservationWindow") or outputs.get("trainingPlan")
    start = window.get("start") if isinstance(window, Mapping) else None
    return clocks.for_deployment(run.deployment, block_start=start if isinstance(start, str) else None)


def sources(run) -> tuple:
    plan, spec = run.deployment.plan, run.deployment.spec
    return metrics.sources_for(spec.vllm_version, plan.platform)


def files(run) -> Dict[str, str]:
    """{relative path: text}: the dashboards and the alert rules, checked against the names the
    stack's vLLM and exporter expose."""
    platform = run.deployment.plan.platform
    found = metrics.problems(dashboards.queries(platform) + alerts.queries(), sources(run))
    if found:
        raise ObservabilityError("; ".join(found))
    out = {f"dashboards/{name}": text for name, text in dashboards.build(platform).items()}
    out["prometheus/alerts.yml"] = alerts.render()
    return out


def document(run, contract_usd_per_hour: Optional[float] = None) -> Dict[str, Any]:
    """The sections plan.json gains."""
    return {"cost": cost(run, contract_usd_per_hour), "clock": clock(run),
            "metrics": {"sources": [asdict(metrics.SOURCES[k]) for k in sources(run)]}}


def replace_row(explain: str, row: str, value: str) -> str:
    """`explain` with the value of its table row `row` replaced (the planner's `cost` row knows
    only node prices; the stack's cost is counted here)."""
    lines = explain.split("\n")
    width = next((len(line) - len(line[len(row):].lstrip()) for line in lines
                  if line.startswith(row + " ")), None)
    if width is None:
        return explain
    return "\n".join(f"{row:<{width}}{value}" if line.startswith(row + " ") else line
                     for line in lines)


def summary_lines(doc: Mapping[str, Any]) -> List[str]:
    """The clock under the plan's table: the total, then one line per phase."""
    return ["clock (from `pulumi up`): " + clocks.summary_line(doc["clock"])] + \
        clocks.phase_table(doc["clock"])
