"""`K3Inference`: the Pulumi component that owns a Plan and a LaunchSpec and runs them on a target.

The plan and the launch spec are computed (and checked) before this component is constructed,
so bad input stops the program before any resource is registered. The component asks its
target to declare the serving resources and exports the endpoint, the served model name and the
plan summary. Rendered files are kept on the instance (`artifacts`) for the offline plan command.
"""

from __future__ import annotations

from typing import Mapping, Optional

import pulumi

from .launch import LaunchSpec
from .planner import Plan
from ..program.contract import InferenceTarget, Served

TYPE = "kimi-k3:inference:K3Inference"


class K3Inference(pulumi.ComponentResource):
    """Kimi K3 served by vLLM on `target`, as `plan` and `spec` say."""

    endpoint: pulumi.Output
    served_model_name: pulumi.Output
    plan_summary: pulumi.Output

    def __init__(
        self,
        name: str,
        plan: Plan,
        spec: LaunchSpec,
        target: InferenceTarget,
        opts: Optional[pulumi.ResourceOptions] = None,
    ):
        super().__init__(
            TYPE,
            name,
            {"target": target.target_name, "model": plan.model, "nodes": plan.nodes},
            opts,
        )
        self.plan = plan
        self.spec = spec
        self.target = target
        #: files that run the spec on the target (relative path -> text); pure rendering
        self.artifacts: Mapping[str, str] = dict(target.render(plan, spec))
        served: Served = target.serve(plan, spec, parent=self)
        self.endpoint = pulumi.Output.from_input(served.endpoint)
        self.served_model_name = pulumi.Output.from_input(spec.served_model_name)
        self.plan_summary = pulumi.Output.from_input(plan.explain())
        self.extra_outputs = dict(served.outputs)
        self.register_outputs({
            "endpoint": self.endpoint,
            "served_model_name": self.served_model_name,
            "plan_summary": self.plan_summary,
        })
