"""`K3Inference`: the shared Pulumi component that owns a Plan and a LaunchSpec and asks the
target to run them.

The plan, the launch spec and the target's rendered files are computed (and checked) before this
component is constructed (components/program/pipeline.py), so bad input stops the program before
any resource is registered. The target's component attaches it (it is that component's child);
it asks the target to declare the serving resources and the readiness and acceptance gates as its
own children, and exports the endpoint, the served model name and the plan summary. The rendered
files are kept on the instance (`artifacts`) for the offline plan command.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional

import pulumi

from ..program.contract import Deployment, Target

TYPE = "kimi-k3:inference:K3Inference"


class K3Inference(pulumi.ComponentResource):
    """Kimi K3 served by vLLM on `target`, as the deployment's plan and spec say.

    Registered as `f"{name}-inference"`; the resources it asks the target for are named
    `f"{name}-..."` like the target's infrastructure."""

    endpoint: pulumi.Output
    served_model_name: pulumi.Output
    plan_summary: pulumi.Output

    def __init__(
        self,
        name: str,
        deployment: Deployment,
        target: Target,
        infrastructure: Any,
        opts: Optional[pulumi.ResourceOptions] = None,
    ):
        plan, spec = deployment.plan, deployment.spec
        super().__init__(TYPE, f"{name}-inference",
                         {"target": target.name, "model": plan.model, "nodes": plan.nodes}, opts)
        self.deployment = deployment
        self.plan = plan
        self.spec = spec
        #: files that run the spec on the target (relative path -> text), rendered once
        self.artifacts: Mapping[str, str] = deployment.rendered.files
        served = target.serve(name, deployment, infrastructure, self)
        gates = target.gates(name, deployment, infrastructure, served, self)
        self.endpoint = pulumi.Output.from_input(
            gates.endpoint if gates.endpoint is not None else served.endpoint)
        self.served_model_name = pulumi.Output.from_input(spec.served_model_name)
        self.plan_summary = pulumi.Output.from_input(plan.explain())
        self.extra_outputs = dict(target.outputs(deployment, infrastructure, served, gates))
        self.register_outputs({
            "endpoint": self.endpoint,
            "served_model_name": self.served_model_name,
            "plan_summary": self.plan_summary,
        })
