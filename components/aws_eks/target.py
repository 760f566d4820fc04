"""The aws-eks target: `AwsEks` implements the target contract (components/program/contract.py).

`parse_config` parses and checks the target's keys (config.py), `aws:region` and the stack's AWS
credentials before anything is registered. `render()` is pure (the plan command writes its files,
and what it renders is what is declared). The tree: `AwsEksCluster` (infrastructure.py) at the
top with the Capacity Block, network, EKS, node groups, add-ons and the weights bucket and
identities; K3Inference attached to it with the serving objects (serving.py, the weights path's
cluster objects) and the readiness gate (readiness.py), which runs the acceptance checks. With
`kimi-k3:serving=hyperpod` the component only reaches the user's HyperPod cluster and K3Inference
holds the `InferenceEndpointConfig` (no gate).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Tuple

import pulumi

from ..config.shared import Exposure, SharedSettings, default_exposures
from ..inference import render_k8s as rk
from ..inference.curl import chat_curl
from ..inference.errors import ConfigError
from ..inference.launch import LaunchSpec, Runtime
from ..inference.planner import Plan, PlanRequest
from ..inference.render_k8s import K8sLayout
from ..program.contract import Deployment, Gates, MockOutputs, Rendered, Served, StackSettings, Target
from . import config as cfgmod
from . import layout as lay
from .infrastructure import AwsEksCluster
from .logs import logs_output
from .monitoring import GRAFANA_PORT_FORWARD
from .reachability import Requirement, api_requirement


@dataclass(frozen=True)
class EksTargetConfig:
    """The aws-eks target's typed config: its `kimi-k3:*` keys, `aws:region`, and the stack's
    region/profile/credentials for kimi-k3's own AWS calls (aws_api.py)."""

    eks: cfgmod.AwsEksConfig
    region: str
    aws_inputs: Mapping[str, Any]


@dataclass(frozen=True)
class K8sRendered(Rendered):
    """The manifests (files) and the objects declared from them, rendered once."""

    layout: K8sLayout
    #: Namespace, workload and Service (none on the HyperPod path)
    objects: Tuple[dict, ...] = ()
    #: the weights path's cluster objects (scripts ConfigMap, service accounts, mirror Job)
    weights: Tuple[dict, ...] = ()
    #: the API-key guard's ConfigMap (none without a key)
    api_guard: Tuple[dict, ...] = ()
    #: the EFA scripts ConfigMap (a replica over several nodes on EFA: components/aws_eks/efa/)
    efa: Tuple[dict, ...] = ()
    #: the HyperPod InferenceEndpointConfig (serving=hyperpod)
    hyperpod: Optional[dict] = None
    #: vllm-router and its front in front of several replicas (components/router/k8s.py)
    router: Tuple[dict, ...] = ()


@dataclass(frozen=True)
class AwsServed(Served):
    serving: Any = None  # serving.Serving (EKS path)
    status: str = ""  # how to follow the InferenceEndpointConfig (HyperPod path)
    #: a requested certificate's DNS validation records (an Output), None otherwise
    validation_records: Any = None
    #: the endpoint's certificate (given, or the requested one once issued), None without TLS
    certificate_arn: Any = None


@dataclass(frozen=True)
class AwsGates(Gates):
    readiness: Any = None  # readiness.EndpointReadiness (EKS path)


Settings = StackSettings[EksTargetConfig]
EksDeployment = Deployment[EksTargetConfig, K8sRendered]


def render_files(plan: Plan, spec: LaunchSpec, shared: SharedSettings,
                 cfg: cfgmod.AwsEksConfig) -> K8sRendered:
    layout = lay.k8s_layout(shared, cfg)
    if cfg.serving == "hyperpod":
        from .hyperpod.resources import TLS_BUCKET_PLACEHOLDER, tls_output_uri, with_tls

        # end to end: the operator writes its certificate to the stack's TLS bucket, or serves yours
        tls = tls_output_uri(TLS_BUCKET_PLACEHOLDER) if cfg.hyperpod_end_to_end else None
        iec = rk.render_hyperpod(plan, spec, layout, tls_output_s3_uri=tls)
        if cfg.hyperpod_end_to_end:
            iec = with_tls(iec, cfg.hyperpod.tls)
        return K8sRendered(files=rk.manifest_files([iec]), layout=layout, hyperpod=iec)
    objs = rk.render(plan, spec, layout)
    weights, guard = rk.render_weights(spec, layout), rk.render_api_guard(spec, layout)
    efa, router = rk.render_efa(layout), rk.render_router(spec, layout)
    # the weights objects (scripts ConfigMap, service accounts, mirror Job), the API-key guard's
    # ConfigMap and the EFA scripts go after the namespace; the router before the Service
    files = rk.manifest_files(objs[:1] + weights + guard + efa + objs[1:2] + router + objs[2:])
    return K8sRendered(files=files, layout=layout, objects=tuple(objs), weights=tuple(weights),
                       api_guard=tuple(guard), efa=tuple(efa), router=tuple(router))


def curl_line(endpoint: str, served_model_name: str, api_key: bool, port_forward: Optional[str]) -> str:
    """A command that sends one chat request (the key is read from the shell, never printed)."""
    cmd = chat_curl(endpoint, served_model_name, api_key, "Say hello", 32)  # quoted, json_text body
    return f"{port_forward} & sleep 2; {cmd}" if port_forward else cmd


class AwsEks(Target[EksTargetConfig, K8sRendered, AwsEksCluster, AwsServed, AwsGates]):
    """EKS on an EC2 Capacity Block (or a HyperPod cluster), serving through Kubernetes objects."""

    name = "aws-eks"

    def parse_config(self, shared: SharedSettings) -> EksTargetConfig:
        """The target's keys, then what a deployment needs of the AWS provider's config."""
        from .aws_api import refuse_static_keys, stack_aws_inputs

        cfg = cfgmod.parse(shared)
        if cfg.serving == "eks" and shared.nodes > 1 and cfg.inter_node_transport == "efa":
            from .addons import check_efa_supported

            try:
                check_efa_supported(shared.accelerator, shared.node_shape)
            except ConfigError as err:  # quoted as the user wrote it (or unset, its default)
                raise shared.requote(err) from None
        if cfg.serving == "eks" and shared.nodes > 1 and cfg.inter_node_transport == "tcp":
            from ..inference.catalog import NODE_SHAPES
            from .efa.transport import inter_node

            pulumi.log.warn(inter_node(NODE_SHAPES[shared.node_shape], "tcp").warning)
        if cfg.serving == "eks" or cfg.hyperpod_end_to_end:  # the stack creates the EKS cluster
            _check_cluster_version(cfg)
        region = pulumi.Config("aws").get("region")
        if not region:
            raise ConfigError("aws:region", None, "set it: pulumi config set aws:region us-east-2",
                              "is needed (the Capacity Block and the cluster live in one region)")
        if cfgmod.region_refusal(region) is not None:
            raise cfgmod.region_refusal(region)
        if cfg.hyperpod_end_to_end:  # an adopted training plan is regional
            from .hyperpod.settings import check_region

            check_region(cfg.hyperpod.plan.arn, region)
        from .tls import certificate_region_refusal

        cert = (cfg.hyperpod.tls.acm_arn if cfg.hyperpod_end_to_end and cfg.hyperpod.tls
                else cfg.tls.certificate_arn if cfg.tls else None)
        for refusal in (certificate_region_refusal(cert, region), cfgmod.kms_region_refusal(cfg.kms_key_arn, region)):
            if refusal is not None:
                raise refusal
        aws_inputs = stack_aws_inputs()
        refuse_static_keys(aws_inputs)  # the kubeconfig's `aws eks get-token` could not use them
        return EksTargetConfig(eks=cfg, region=region, aws_inputs=aws_inputs)

    def node_shape(self, settings: Settings) -> str:
        return settings.shared.node_shape

    def node_count(self, settings: Settings) -> int:
        return settings.shared.nodes

    def plan_request(self, settings: Settings, request: PlanRequest) -> PlanRequest:
        """The weights path's source and cold-start inputs (components/aws_eks/weights/plan.py)."""
        from .weights.plan import plan_request

        cfg = settings.target.eks
        if cfg.serving == "hyperpod":  # the GPU clock: the plan's start, or the config applied
            request = dataclasses.replace(request, clock_start="the training plan starts" if cfg.hyperpod_end_to_end
                                          else "the endpoint config is applied")
        return plan_request(settings.shared, cfg, request)

    def runtime(self, settings: Settings) -> Runtime:
        """Where the weights are as vLLM sees them, for this target's staging (see layout.py)."""
        return lay.runtime(settings.shared, settings.target.eks)

    def render(self, settings: Settings, plan: Plan, spec: LaunchSpec) -> K8sRendered:
        return render_files(plan, spec, settings.shared, settings.target.eks)

    def exposures(self, settings: Settings) -> List[Exposure]:
        """The endpoint (kimi-k3:allowedCidrs) and the EKS API (kimi-k3:apiAccessCidrs; its
        CIDRs are checked by config.py)."""
        return default_exposures(settings.shared) + [Exposure(
            "the EKS API (the cluster's Kubernetes control plane, TCP 443)",
            "kimi-k3:apiAccessCidrs", tuple(settings.target.eks.api_access_cidrs),
            internet_risk="anyone can reach this cluster's Kubernetes API server and try "
                          "credentials or API flaws against it")]

    def pins(self, settings: Settings, rendered: K8sRendered) -> List[Any]:
        """The serving image (`kimi-k3:image`), the helper images kimi-k3's objects run, AWS's
        EFA installer where the pods unpack it, the router's PyPI packages with several
        replicas, and the Helm charts the cluster installs (config/pins.py)."""
        from ..config.pins import chart_pins, helper_image_pins, image_pin, images_in, router_pin
        from .efa.transport import installer_pin

        objs = [*rendered.objects, *rendered.weights, *rendered.efa, *rendered.router,
                *([rendered.hyperpod] if rendered.hyperpod else [])]
        image = settings.shared.image
        out = [image_pin(image), *helper_image_pins(images_in(objs), image)]
        if rendered.layout.efa_install:
            out.append(installer_pin(rendered.layout.efa_installer_sha256))
        if rendered.router:
            from ..router.settings import ROUTER_REQUIREMENTS
            from ..router.wheels import hashes
            out.append(router_pin(ROUTER_REQUIREMENTS, hashes()))
        if settings.target.eks.serving == "hyperpod":  # the user's cluster: kimi-k3 installs no chart
            return out
        from . import addons, monitoring
        charts = [(c.chart.rsplit("/", 1)[-1], c.version, c.repo or c.chart.rsplit("/", 1)[0])
                  for c in addons.charts(bool(rendered.layout.inter_node_transport))]
        if settings.target.eks.monitoring:
            charts += [(m["chart"], m["version"], m["repo"]) for m in (monitoring.KPS, monitoring.DCGM)]
        return out + chart_pins(charts)

    def unpinned_weights(self, settings: Settings) -> str:
        """Your own bucket (weightsSource=s3) is served as it is: kimi-k3 cannot pin it."""
        w = settings.target.eks.weights
        return ("kimi-k3:weightsSource=s3 serves your bucket as it is" if w is not None
                and w.source == "s3" else "")

    def deploy_requirements(self, settings: Settings) -> List[Requirement]:
        """The EKS API must be reachable from where `pulumi up` runs (reachability.py)."""
        return [r for r in (api_requirement(settings.target.eks),) if r is not None]

    def infrastructure(self, name: str, deployment: EksDeployment) -> AwsEksCluster:
        return AwsEksCluster(name, deployment)

    def serve(self, name: str, deployment: EksDeployment, infrastructure: AwsEksCluster,
              parent) -> AwsServed:
        from ..program.tree import moved_from

        before = moved_from(infrastructure)  # they were the cluster component's children
        if deployment.config.eks.hyperpod_end_to_end:
            from .hyperpod.serving import serve

            return serve(name, deployment, infrastructure, parent, before)
        if deployment.config.eks.serving == "hyperpod":
            return _hyperpod(name, deployment, infrastructure, parent, before)
        return _eks(name, deployment, infrastructure, parent, before)

    def gates(self, name: str, deployment: EksDeployment, infrastructure: AwsEksCluster,
              served: AwsServed, parent) -> AwsGates:
        if deployment.config.eks.hyperpod_end_to_end:
            from .hyperpod.serving import gates

            return gates(name, deployment, infrastructure, served, parent)
        if deployment.config.eks.serving == "hyperpod":
            pulumi.log.warn(hyperpod_gate_warning(deployment.shared.accept_load), resource=infrastructure)
            return AwsGates()
        from ..program.tree import moved_from
        from .gates import readiness_gate

        gate = readiness_gate(name, deployment, infrastructure, served.serving, parent,
                              moved_from(infrastructure))
        # the gate reads the load balancer's name once it exists (the Service is not awaited);
        # with TLS the endpoint is the name in the certificate, which the user points at it
        endpoint = served.endpoint if deployment.config.eks.tls is not None else \
            pulumi.Output.all(gate.endpoint, served.endpoint).apply(lambda e: e[0] or e[1])
        return AwsGates(endpoint=endpoint, acceptance=gate.acceptance, readiness=gate)

    def outputs(self, deployment: EksDeployment, infrastructure: AwsEksCluster, served: AwsServed,
                gates: AwsGates) -> Mapping[str, Any]:
        if deployment.config.eks.hyperpod_end_to_end:
            from .hyperpod.serving import outputs

            return outputs(deployment, infrastructure, served, gates)
        if deployment.config.eks.serving == "hyperpod":  # the user's cluster
            from .hyperpod.serving import day_two_outputs

            endpoint, ca = infrastructure.existing_api
            return {"kubeconfig": infrastructure.kubeconfig, "curl": served.status,
                    **day_two_outputs(deployment, endpoint, ca,
                                      deployment.config.eks.hyperpod_cluster_name,
                                      infrastructure.region,
                                      (infrastructure.aws_inputs.get("aws") or {}).get("profile"))}
        return {**_eks_outputs(deployment, infrastructure, gates), **_tls_outputs(deployment, served)}

    def mock_outputs(self) -> MockOutputs:
        from .mock_outputs import MOCK_OUTPUTS

        return MOCK_OUTPUTS

    def clock_phases(self, deployment: EksDeployment, block_start: Optional[str] = None) -> list:
        """Block wait -> nodes -> staging -> engine -> gate (HyperPod: its own phases)."""
        from ..progress.clock import aws_phases, hyperpod_phases

        cold = deployment.plan.to_dict()["cold_start"]
        if deployment.config.eks.serving == "hyperpod":
            return hyperpod_phases(cold, plan_start=block_start,
                                   end_to_end=deployment.config.eks.hyperpod_end_to_end)
        from ..accept.known_cost import gate_clock

        return aws_phases(cold, block_start=block_start, known=gate_clock(deployment.plan))

    def cost_parts(self, resources, node_shape: str, nodes: int) -> list:
        from .cost_parts import aws_parts

        return aws_parts(resources, node_shape, nodes)


def _secret_data(deployment: EksDeployment) -> Dict[str, Any]:
    from .serving import secret_data

    shared, secrets = deployment.shared, deployment.secrets
    return secret_data(secrets.api_key if shared.has_api_key else None,
                       secrets.hf_token if shared.has_hf_token else None)


def _eks(name: str, deployment: EksDeployment, infra: AwsEksCluster, parent,
         before: List[pulumi.Alias]) -> AwsServed:
    """The serving objects as rendered, on the stack's cluster."""
    from ..progress.program import progress_inputs
    from .cleanup import LoadBalancerGone
    from .serving import Serving

    rendered = deployment.rendered
    layout, objs = rendered.layout, list(rendered.objects)
    service_deps = []
    svc_obj = next(o for o in objs if o["kind"] == "Service")
    tls, port = deployment.config.eks.tls, deployment.spec.port
    validation_records, arn, annotate = None, None, {}
    if tls is not None:
        arn = tls.certificate_arn
    if tls is not None and tls.certificate_arn is None:
        # the listener waits for the issued certificate: the annotation takes the validated ARN
        from .tls import REQUESTED_ARN, SSL_CERT, request_certificate

        assert svc_obj["metadata"]["annotations"][SSL_CERT] == REQUESTED_ARN
        arn, validation_records = request_certificate(name, tls, parent, after=[infra.block])
        annotate = {SSL_CERT: arn}
    if svc_obj["spec"]["type"] == "LoadBalancer":
        # destroy: the Service goes first, then this waits for its NLB, then the network goes
        service_deps.append(LoadBalancerGone(f"{name}-lb-gone", {
            "clusterName": infra.cluster_name, "namespace": layout.namespace,
            "serviceName": svc_obj["metadata"]["name"], "region": infra.region, **infra.aws_inputs,
            **progress_inputs()}, opts=pulumi.ResourceOptions(parent=parent, depends_on=[infra.cluster.eks],
                                                              aliases=before)))
    serving = Serving(name, objs, layout, _secret_data(deployment), infra.provider, parent,
                      depends_on=infra.add_ons, service_depends_on=service_deps,
                      before_workload=infra.weights.before_workload,
                      config_maps=list(rendered.api_guard) + list(rendered.efa), aliases=before,
                      service_annotations=annotate, router=list(rendered.router))
    from .monitoring_resources import pod_monitor

    pod_monitor(name, deployment, serving, infra.monitoring, infra.provider, parent)
    endpoint = serving.endpoint
    if tls is not None:
        from .tls import endpoint as tls_endpoint

        endpoint = pulumi.Output.from_input(tls_endpoint(tls, port))
    return AwsServed(endpoint=endpoint, serving=serving, validation_records=validation_records,
                     certificate_arn=arn)


def _tls_outputs(deployment: EksDeployment, served: AwsServed) -> Dict[str, Any]:
    """The stack output `tls`: the name, the certificate, what DNS records the user makes."""
    from .tls import POLICY

    tls = deployment.config.eks.tls
    if tls is None:
        return {}
    svc = served.serving.service
    host = svc.status.apply(lambda st: _lb_host(st) or "(the load balancer's name, once made)")
    arn = served.certificate_arn
    return {"tls": pulumi.Output.all(host, arn, served.validation_records).apply(lambda a: {
        "domain": tls.domain, "certificateArn": a[1], "requested": tls.certificate_arn is None,
        "policy": POLICY,
        "dnsRecord": {"name": tls.domain, "type": "CNAME", "value": a[0]},
        "validationRecords": [] if tls.hosted_zone_id or not a[2] else a[2],
    })}


def _lb_host(status) -> Optional[str]:
    try:
        ingress = status.load_balancer.ingress[0]
    except (AttributeError, IndexError, TypeError):
        return None
    return getattr(ingress, "hostname", None) or getattr(ingress, "ip", None)


def _check_cluster_version(cfg: cfgmod.AwsEksConfig, today=None) -> None:
    """A version EKS no longer creates is refused before anything is bought; one in extended
    support (billed extra) or newer than kimi-k3's table is warned about (eks_versions.py). The
    HyperPod path's default is warned about where it is chosen (hyperpod/resources.py)."""
    from datetime import datetime, timezone

    from . import eks_versions
    from .hyperpod import catalog

    today = today or datetime.now(timezone.utc).date()
    reason = eks_versions.refusal_reason(cfg.cluster_version, today)
    if reason is not None:
        newest = cfgmod.DEFAULT_CLUSTER_VERSION if cfg.serving == "eks" else catalog.DEFAULT_K8S_VERSION
        raise ConfigError("kimi-k3:clusterVersion", cfg.cluster_version, f"use {newest} (unset it)", reason)
    warning = eks_versions.warning(cfg.cluster_version, today)
    if warning and not (cfg.hyperpod_end_to_end and cfg.cluster_version == catalog.DEFAULT_K8S_VERSION):
        pulumi.log.warn(warning)


def _eks_outputs(deployment: EksDeployment, infra: AwsEksCluster, gates: AwsGates) -> Dict[str, Any]:
    plan, spec, shared, cfg = deployment.plan, deployment.spec, deployment.shared, deployment.config.eks
    layout, block, gate = deployment.rendered.layout, infra.block, gates.readiness
    c = cfg.capacity
    public = bool(layout.allowed_cidrs)
    pf = None if public else (f"kubectl -n {layout.namespace} port-forward svc/{rk.service_name(layout)} "
                              f"{spec.port}:{spec.port}")
    local = f"http://127.0.0.1:{spec.port}/v1"
    curl = gates.endpoint.apply(lambda e: curl_line(e if public else local, spec.served_model_name,
                                                    shared.has_api_key, pf))
    nodes_needed = shared.nodes * cfg.replicas
    cost = pulumi.Output.all(block.purchased, block.upfront_fee_usd).apply(
        lambda a: _cost_text(c, a[0], a[1], plan, nodes_needed))
    cluster = infra.cluster
    # the vLLM pods (not the router's, which the Service selects with several replicas)
    selector = rk.replica_selector(spec, layout)
    return {
        "kubeconfig": infra.kubeconfig,
        # what `python -m components logs` reads (components/aws_eks/logs.py; docs/day-two.md)
        "kubernetes": pulumi.Output.all(cluster.endpoint, cluster.ca_data, cluster.name).apply(
            lambda k: {"apiEndpoint": k[0], "caData": k[1], "clusterName": k[2], "region": infra.region,
                       "profile": (infra.aws_inputs.get("aws") or {}).get("profile"),
                       "namespace": layout.namespace, "podSelector": selector, "container": "vllm"}),
        "kubectl": (f"pulumi stack output --show-secrets kubeconfig > k3.kubeconfig && "
                    f"KUBECONFIG=k3.kubeconfig kubectl -n {layout.namespace} get pods"),
        "logs": logs_output(pulumi.get_stack(), layout.namespace, selector),
        **({"grafana": GRAFANA_PORT_FORWARD} if infra.monitoring is not None else {}),
        "capacityReservationId": block.reservation_id,
        "reservationWindow": pulumi.Output.all(block.start_date, block.end_date, block.instances_stop_at)
            .apply(lambda w: {"start": w[0], "end": w[1], "instancesStopAt": w[2]}),
        "capacityCost": cost,
        "curl": curl,
        "gpuNodeGroup": infra.gpu.node_group.node_group_name,
        "acceptance": gates.acceptance,
        "readiness": pulumi.Output.all(gate.ready, gate.state, gate.lastSeen, gate.servingExpectedBy,
                                       gate.via, gate.readySeconds).apply(lambda r: {
            "ready": r[0], "state": r[1], "lastSeen": r[2], "servingExpectedBy": r[3], "via": r[4],
            "readySeconds": r[5]}),
    }


def _hyperpod(name: str, deployment: EksDeployment, infra: AwsEksCluster, parent,
              before: List[pulumi.Alias]) -> AwsServed:
    """The rendered InferenceEndpointConfig (and its namespace and Secret) on the user's cluster."""
    import pulumi_kubernetes as k8s

    layout, iec, provider = deployment.rendered.layout, deployment.rendered.hyperpod, infra.provider
    ns_name = iec["metadata"]["namespace"]
    # never default/kube-* (config.check_own_namespace): a namespace of the stack's own
    ns = k8s.core.v1.Namespace(f"{name}-ns", metadata={"name": ns_name},
                               opts=pulumi.ResourceOptions(parent=parent, provider=provider, aliases=before))
    from .serving import declared, secret_uid

    waits, uid = [ns], None
    data = _secret_data(deployment)
    if data:  # the endpoint config reads the API key and the hub token from this Secret
        secret = k8s.core.v1.Secret(
            f"{name}-secrets", metadata={"name": layout.secret_name, "namespace": ns_name},
            type="Opaque", string_data=data,
            opts=pulumi.ResourceOptions(parent=parent, provider=provider, depends_on=[ns], aliases=before,
                                        additional_secret_outputs=["stringData", "data"]))
        waits.append(secret)
        uid = secret_uid(secret)  # a new key changes the worker's env: the operator deploys again
    iec = declared(iec, uid)
    k8s.apiextensions.CustomResource(
        f"{name}-endpoint-config", api_version=iec["apiVersion"], kind=iec["kind"],
        metadata=iec["metadata"], spec=iec["spec"],
        opts=pulumi.ResourceOptions(parent=parent, provider=provider, depends_on=waits, aliases=before))
    iec_name = iec["metadata"]["name"]
    # the Inference Operator reports where it serves in the object's status
    status = (f"kubectl -n {ns_name} get inferenceendpointconfig {iec_name} -o yaml  "
              f"# the operator reports the invocation endpoint in .status once it is ready")
    return AwsServed(endpoint=f"hyperpod:{ns_name}/{iec_name}", status=status)


def hyperpod_gate_warning(accept_load: str) -> str:
    """What `pulumi up` does not check on the HyperPod path (said at every preview and up)."""
    text = ("serving=hyperpod has no readiness or acceptance gate: `pulumi up` ends once the "
            "InferenceEndpointConfig is applied, not when the endpoint serves (the operator deploys "
            "it, within maxDeployTimeInSeconds); follow its status with the `curl` output's kubectl "
            "command")
    if accept_load != "off":
        text += (f"; kimi-k3:acceptLoad={accept_load} is therefore not run: once the endpoint serves, run "
                 "`python -m components accept --endpoint URL/v1 --model NAME`")
    return text


def _cost_text(c: cfgmod.CapacityRequest, purchased, fee, plan: Plan, nodes: int) -> str:
    """What the GPU capacity costs, as far as kimi-k3 knows it."""
    if purchased and fee is not None:
        hours = c.duration_hours
        return f"${float(fee):,.2f} paid upfront (${float(fee) / hours:,.2f}/h for {hours} h)"
    if c.lists_only:
        return (f"not bought: no block adopted and no fee cap (`pulumi up` lists the offerings for a "
                f"{c.duration_hours} h block of {c.instance_count} instances and stops)")
    if not c.adopt:
        return (f"not bought yet: a {c.duration_hours} h block of {c.instance_count} instances is bought "
                f"only if its upfront fee is at most ${c.max_upfront_fee_usd:,.2f}")
    if plan.usd_per_hour is not None:
        return f"adopted reservation; on-demand equivalent ${plan.usd_per_hour * nodes:,.2f}/h"
    return "adopted reservation: prepaid when it was bought (see its upfront fee in the EC2 console)"


TARGET = AwsEks()
