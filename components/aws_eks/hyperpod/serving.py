"""The end-to-end HyperPod path's serving resources, gate and stack outputs (K3Inference's side).

- `serve`: the namespace, the Secret (API key, hub token), the `InferenceEndpointConfig` as
  rendered (render_k8s.render_hyperpod) with the stack's TLS bucket filled in, after the operator
  add-on and after the load-balancers-gone proof (so destroy deletes the endpoint config first and
  then waits for its load balancer), and the PodMonitor of vLLM when monitoring is on (the
  stack's namespace holds only the operator's pods for this endpoint: every pod is selected;
  the worker's port is named `http`, modelInvocationPort.name);
- `gates`: HyperPodReadiness (readiness.py) after the endpoint config;
- `outputs`: the training plan, the HyperPod cluster, the endpoint's URL and curl line as the gate
  found them, what it costs as far as kimi-k3 knows, and the day-two outputs (`day_two_outputs`:
  `kubernetes`, `kubectl`, `logs`).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Dict, List, Optional

import pulumi

from .resources import TLS_BUCKET_PLACEHOLDER, tls_output_uri


def _spec_with_bucket(spec: Dict[str, Any], bucket: Any) -> Dict[str, Any]:
    """The rendered spec with the TLS bucket's name in place of its stand-in."""
    tls = dict(spec.get("tlsConfig") or {})
    if TLS_BUCKET_PLACEHOLDER in str(tls.get("tlsCertificateOutputS3Uri", "")):
        tls["tlsCertificateOutputS3Uri"] = pulumi.Output.from_input(bucket).apply(tls_output_uri)
        return {**spec, "tlsConfig": tls}
    return spec


def serve(name: str, deployment, infra, parent, before: List[pulumi.Alias]):
    import pulumi_kubernetes as k8s

    from ..monitoring import pod_monitor as pod_monitor_object
    from ..serving import declared, secret_uid
    from ..target import AwsServed, _secret_data

    layout, iec, provider = deployment.rendered.layout, deployment.rendered.hyperpod, infra.provider
    hp = infra.hyperpod
    ns_name = iec["metadata"]["namespace"]
    ns = k8s.core.v1.Namespace(f"{name}-ns", metadata={"name": ns_name},
                               opts=pulumi.ResourceOptions(parent=parent, provider=provider, aliases=before))
    waits: List[pulumi.Resource] = [ns, hp.operator, hp.lbs_gone, *infra.add_ons]
    data, uid = _secret_data(deployment), None
    if data:
        secret = k8s.core.v1.Secret(
            f"{name}-secrets", metadata={"name": layout.secret_name, "namespace": ns_name}, type="Opaque",
            string_data=data, opts=pulumi.ResourceOptions(parent=parent, provider=provider, depends_on=[ns],
                                                          aliases=before,
                                                          additional_secret_outputs=["stringData", "data"]))
        waits.append(secret)
        uid = secret_uid(secret)  # a new key changes the worker's env (inference/secret_roll.py)
    declared_iec = declared(iec, uid)
    endpoint_config = k8s.apiextensions.CustomResource(
        f"{name}-endpoint-config", api_version=iec["apiVersion"], kind=iec["kind"], metadata=iec["metadata"],
        spec=_spec_with_bucket(declared_iec["spec"], hp.tls_bucket_name),
        opts=pulumi.ResourceOptions(parent=parent, provider=provider, depends_on=waits, aliases=before))
    if infra.monitoring is not None and infra.monitoring.release is not None:
        obj = pod_monitor_object(ns_name, {}, key_secret=layout.secret_name if deployment.shared.has_api_key else None)
        k8s.apiextensions.CustomResource(
            f"{name}-pod-monitor", api_version=obj["apiVersion"], kind=obj["kind"], metadata=obj["metadata"],
            spec=obj["spec"], opts=pulumi.ResourceOptions(parent=parent, provider=provider,
                                                          depends_on=[endpoint_config, infra.monitoring.release]))
    return AwsServed(endpoint=None, serving=endpoint_config,
                     status=f"kubectl -n {ns_name} get inferenceendpointconfig {iec['metadata']['name']} -o yaml")


def gates(name: str, deployment, infra, served, parent):
    from ...accept.gate import price_input
    from ...progress.program import progress_inputs
    from ..gate_budget import plan_budget
    from ..gates import _acceptance_inputs
    from ..readiness import BLOCK_WAIT_MAX_S
    from ..target import AwsGates
    from .readiness import HyperPodReadiness

    plan, spec, shared, secrets = deployment.plan, deployment.spec, deployment.shared, deployment.secrets
    iec, cluster, tp = deployment.rendered.hyperpod, infra.cluster, infra.plan
    budget = plan_budget(plan.cold_start)
    fingerprint = hashlib.sha256(json.dumps(iec, sort_keys=True).encode()).hexdigest()[:16]
    gate = HyperPodReadiness(f"{name}-readiness", {
        "clusterName": cluster.name, "apiEndpoint": cluster.endpoint, "caData": cluster.ca_data,
        "region": infra.region, "namespace": iec["metadata"]["namespace"], "iecName": iec["metadata"]["name"],
        "serviceName": iec["metadata"]["name"], "port": spec.port, "podSelector": {},
        "servedModelName": spec.served_model_name,
        "apiKey": secrets.api_key if shared.has_api_key and secrets.api_key is not None else "",
        "blockStart": tp.startTime, "blockEnd": tp.endTime, "reservationId": tp.trainingPlanName,
        "budgetS": budget.deadline_s, "expectedS": budget.expected_s, "blockWaitMaxS": BLOCK_WAIT_MAX_S,
        "launchFingerprint": fingerprint,
        **_acceptance_inputs(plan, shared.accept_load), **price_input(shared.usd_per_hour),
        **infra.aws_inputs, **progress_inputs(plan),
    }, opts=pulumi.ResourceOptions(parent=parent, depends_on=[served.serving]))
    return AwsGates(endpoint=gate.endpoint, acceptance=gate.acceptance, readiness=gate)


def cost_text(req, purchased: Any, fee: Any, status: Any) -> str:
    """What the training plan costs, as far as kimi-k3 knows it."""
    if fee is not None and purchased:
        return f"${float(fee):,.2f} paid upfront for the training plan ({req.duration_hours} h)"
    if req.adopt:
        return ("adopted training plan: prepaid when it was bought"
                + (f" (${float(fee):,.2f} upfront)" if fee is not None else ""))
    return (f"not bought yet: a {req.duration_hours} h training plan of {req.instance_count} x {req.instance_type} "
            f"is bought only if its upfront fee is at most ${req.max_upfront_fee_usd:,.2f}")


def day_two_outputs(deployment, endpoint, ca_data, cluster_name, region: str,
                    profile: Optional[str] = None) -> Dict[str, Any]:
    """`kubernetes` (what `python -m components logs` reads: the API, the namespace, the endpoint
    config whose `status.selector` names the operator's pods, the worker's port), `kubectl` and
    `logs` (components/aws_eks/logs.py) of a HyperPod stack, on its own cluster or the user's."""
    from ..logs import hyperpod_logs_output

    iec, spec = deployment.rendered.hyperpod, deployment.spec
    ns, iec_name = iec["metadata"]["namespace"], iec["metadata"]["name"]
    return {
        "kubernetes": pulumi.Output.all(endpoint, ca_data, cluster_name).apply(
            lambda k: {"apiEndpoint": k[0], "caData": k[1], "clusterName": k[2], "region": region,
                       "profile": profile, "namespace": ns, "podSelector": {}, "container": None,
                       "inferenceEndpointConfig": iec_name, "port": spec.port}),
        "kubectl": (f"pulumi stack output --show-secrets kubeconfig > k3.kubeconfig && "
                    f"KUBECONFIG=k3.kubeconfig kubectl -n {ns} get inferenceendpointconfig,pods,ingress"),
        "logs": hyperpod_logs_output(pulumi.get_stack(), ns, iec_name),
    }


def outputs(deployment, infra, served, gates) -> Dict[str, Any]:
    cfg = deployment.config.eks
    req, tp, hp, gate, cluster = cfg.hyperpod.plan, infra.plan, infra.hyperpod, gates.readiness, infra.cluster
    iec = deployment.rendered.hyperpod
    ns = iec["metadata"]["namespace"]
    pending = (f"the endpoint is not serving yet; follow it with: kubectl -n {ns} get inferenceendpointconfig "
               f"{iec['metadata']['name']} -o jsonpath='{{.status.state}}'; then `pulumi up` again prints the curl line")
    return {
        "kubeconfig": infra.kubeconfig,
        **day_two_outputs(deployment, cluster.endpoint, cluster.ca_data, cluster.name, infra.region,
                          (infra.aws_inputs.get("aws") or {}).get("profile")),
        "trainingPlan": pulumi.Output.all(tp.trainingPlanArn, tp.trainingPlanName, tp.availabilityZone, tp.startTime,
                                          tp.endTime, tp.status, tp.purchased).apply(lambda t: {
            "arn": t[0], "name": t[1], "availabilityZone": t[2], "start": t[3], "end": t[4], "status": t[5],
            "purchased": t[6]}),
        "capacityCost": pulumi.Output.all(tp.purchased, tp.upfrontFeeUsd, tp.status).apply(
            lambda a: cost_text(req, a[0], a[1], a[2])),
        "hyperpodCluster": pulumi.Output.all(hp.arn).apply(lambda a: {"name": hp.name, "arn": a[0]}),
        "curl": pulumi.Output.all(gate.curl).apply(lambda c: c[0] or pending),
        "loadBalancer": gate.loadBalancer,
        "acceptance": gates.acceptance,
        "readiness": pulumi.Output.all(gate.ready, gate.state, gate.lastSeen, gate.servingExpectedBy, gate.via,
                                       gate.readySeconds).apply(lambda r: {
            "ready": r[0], "state": r[1], "lastSeen": r[2], "servingExpectedBy": r[3], "via": r[4],
            "readySeconds": r[5]}),
    }
