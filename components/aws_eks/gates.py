"""The aws-eks readiness gate (readiness.py) as declared after the serving objects: its budget
from the plan (gate_budget.py), the mirror it may wait for, and the acceptance checks it runs
once the endpoint answers (components/accept/)."""

from __future__ import annotations

import hashlib
import json
from typing import Any, Dict, List, Optional

import pulumi

from ..inference.planner import Plan


def readiness_gate(name: str, deployment, infra, serving, parent, aliases: List[pulumi.Alias]):
    """The gate after the workload and Service, a child of `parent` (K3Inference)."""
    from ..accept.gate import known_input, price_input
    from ..progress.program import progress_inputs
    from .gate_budget import plan_budget
    from .readiness import BLOCK_WAIT_MAX_S, EndpointReadiness

    plan, spec, shared, secrets = deployment.plan, deployment.spec, deployment.shared, deployment.secrets
    layout, cluster, block = deployment.rendered.layout, infra.cluster, infra.block
    budget = plan_budget(plan.cold_start)
    svc = serving.service_object
    fingerprint = hashlib.sha256(json.dumps(serving.workload_object, sort_keys=True).encode()).hexdigest()[:16]
    api_key = secrets.api_key if shared.has_api_key and secrets.api_key is not None else ""
    return EndpointReadiness(f"{name}-readiness", {
        "clusterName": cluster.name, "apiEndpoint": cluster.endpoint, "caData": cluster.ca_data,
        "region": infra.region, "namespace": layout.namespace, "serviceName": svc["metadata"]["name"],
        "port": spec.port, "podSelector": dict(svc["spec"]["selector"]),
        "servedModelName": spec.served_model_name, "apiKey": api_key,
        "blockStart": block.start_date, "blockEnd": block.end_date, "reservationId": block.reservation_id,
        "budgetS": budget.deadline_s, "expectedS": budget.expected_s,
        "mirror": _mirror_input(plan, deployment.config.eks, infra.weights),
        "blockWaitMaxS": BLOCK_WAIT_MAX_S, "launchFingerprint": fingerprint,
        **_acceptance_inputs(plan, shared.accept_load), **price_input(shared.usd_per_hour),
        **known_input(plan), **_replica_inputs(spec, layout),
        **infra.aws_inputs, **progress_inputs(plan),
    }, opts=pulumi.ResourceOptions(parent=parent, aliases=aliases,
                                   depends_on=[serving.workload, serving.service, *infra.add_ons]))


def _replica_inputs(spec, layout) -> Dict[str, Any]:
    """Behind the router: how many replicas, and how to find each one's serving pod, so the
    acceptance gate asks every replica directly once (greedy_replicas); nothing for one."""
    from ..inference import render_k8s as rk

    if not layout.router:
        return {}
    return {"replicas": layout.replicas, "replicaSelector": rk.replica_selector(spec, layout)}


def _mirror_input(plan: Plan, cfg, weights) -> Optional[Dict[str, Any]]:
    """The stack's mirror, for the gate to budget from what it holds (gate_budget.py)."""
    from ..inference.catalog import MODELS
    from ..inference.coldstart import MIRROR_FILL_RATE
    from .gate_budget import mirror_inputs
    from .weights.plan import fill_rate

    if weights.bucket is None:
        return None
    return {"bucket": weights.bucket.name, "prefix": cfg.weights.mirror_prefix,
            **mirror_inputs(plan.cold_start, checkpoint_bytes=MODELS[plan.model].download_bytes,
                            fill_gb_per_s=fill_rate(cfg) or MIRROR_FILL_RATE[0],
                            stream=cfg.weights.stream)}


def _acceptance_inputs(plan: Plan, accept_load: str) -> Dict[str, Any]:
    """The acceptance gate's size (kimi-k3:acceptLoad, the plan's concurrency) and hardware."""
    from ..accept.sizing import load_size

    size = load_size(accept_load, plan.max_num_seqs, plan.parallelism.data_parallel)
    return {"acceptLoad": None if size is None else {
                "requests": size.requests, "concurrency": size.concurrency,
                "maxTokens": size.max_tokens},
            "acceptHardware": {"accelerator": plan.accelerator, "node_shape": plan.node_shape,
                               "nodes": plan.nodes}}
