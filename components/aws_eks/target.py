"""The aws-eks target: `AwsEksCluster` (`kimi-k3:aws:EksCluster`) implements InferenceTarget.

`create()` parses and checks the target's keys before anything is registered. `render()` is pure
(the plan command writes its files). `serve()` declares, in order: the Capacity Block (adopted
or bought), the network pinned to its zone, EKS, the GPU node group on the block with its
scheduled scaling, the add-ons, and the serving objects. With `kimi-k3:serving=hyperpod` it only
applies the HyperPod `InferenceEndpointConfig` to the user's HyperPod cluster.
"""

from __future__ import annotations

from typing import Any, Dict, Mapping, Optional

import pulumi

from ..inference import render_k8s as rk
from ..inference.catalog import NODE_SHAPES
from ..inference.curl import chat_curl
from ..inference.errors import ConfigError
from ..inference.launch import LaunchSpec, Runtime
from ..inference.planner import Plan
from ..program.contract import InferenceTarget, Served
from ..config.shared import SharedSettings
from . import config as cfgmod
from . import layout as lay

TYPE = "kimi-k3:aws:EksCluster"


def runtime(shared: SharedSettings) -> Runtime:
    """Where the weights are as vLLM sees them, for this target's staging (see layout.py)."""
    return lay.runtime(shared, cfgmod.parse(shared))


def plan_request(shared: SharedSettings):
    """The plan request with this target's weights path (components/aws_eks/weights/plan.py)."""
    from .weights.plan import plan_request as weights_plan_request

    return weights_plan_request(shared, cfgmod.parse(shared))


def render_files(plan: Plan, spec: LaunchSpec, shared: SharedSettings,
                 cfg: cfgmod.AwsEksConfig) -> Dict[str, str]:
    layout = lay.k8s_layout(shared, cfg)
    if cfg.serving == "hyperpod":
        return rk.manifest_files([rk.render_hyperpod(plan, spec, layout)])
    objs = rk.render(plan, spec, layout)
    # the weights objects (scripts ConfigMap, service accounts, mirror Job) and the API-key
    # guard's ConfigMap go after the namespace
    return rk.manifest_files(objs[:1] + rk.render_weights(spec, layout)
                             + rk.render_api_guard(spec, layout) + objs[1:])


def curl_line(endpoint: str, served_model_name: str, api_key: bool, port_forward: Optional[str]) -> str:
    """A command that sends one chat request (the key is read from the shell, never printed)."""
    cmd = chat_curl(endpoint, served_model_name, api_key, "Say hello", 32)  # quoted, json_text body
    return f"{port_forward} & sleep 2; {cmd}" if port_forward else cmd


class AwsEksCluster(pulumi.ComponentResource, InferenceTarget):
    """An EKS cluster with a GPU node group on an EC2 Capacity Block, serving a LaunchSpec."""

    target_name = "aws-eks"
    #: what a real deployment needs that the offline plan could only warn about (plan.json)
    deploy_requirements: list = []

    def __init__(self, name: str, shared: SharedSettings, cfg: cfgmod.AwsEksConfig, secrets, region: str,
                 opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__(TYPE, name, {"serving": cfg.serving, "nodeShape": shared.node_shape,
                                      "region": region}, opts)
        self._name, self.shared, self.cfg, self.secrets = name, shared, cfg, secrets
        self.region = region
        #: the stack's region/profile/credentials for kimi-k3's own AWS calls (aws_api.py)
        self.aws_inputs: Dict[str, Any] = {}
        #: "<organization>/<project>/<stack>", tagged on every purchase (a provider cannot know it)
        self.stack_identity = f"{pulumi.get_organization()}/{pulumi.get_project()}/{pulumi.get_stack()}"

    def node_shape_key(self) -> str:
        return self.shared.node_shape

    def node_count(self) -> int:
        return self.shared.nodes

    def render(self, plan: Plan, spec: LaunchSpec) -> Mapping[str, str]:
        return render_files(plan, spec, self.shared, self.cfg)

    def serve(self, plan: Plan, spec: LaunchSpec, parent: Optional[Any] = None) -> Served:
        served = self._hyperpod(plan, spec) if self.cfg.serving == "hyperpod" else self._eks(plan, spec)
        self.register_outputs({"endpoint": served.endpoint})
        return served

    # ------------------------------------------------------------ EKS path

    def _eks(self, plan: Plan, spec: LaunchSpec) -> Served:
        from . import capacity as cap
        from .cluster import Cluster
        from .network import Network
        from .nodegroup import GpuNodes
        from .serving import Serving, secret_data

        name, shared, cfg = self._name, self.shared, self.cfg
        shape = NODE_SHAPES[shared.node_shape]
        region = self.region
        c = cfg.capacity
        if not c.adopt:
            pulumi.log.warn(
                "kimi-k3 will look for Capacity Block offerings and buy the cheapest one only if its "
                f"upfront fee is at most ${c.max_upfront_fee_usd:,.2f} (kimi-k3:maxUpfrontFeeUsd). A "
                "purchased block cannot be cancelled; `pulumi destroy` only forgets it.", resource=self)
        aws_inputs = self.aws_inputs
        block = cap.CapacityBlock(f"{name}-capacity", {
            "region": region, "instanceType": shape.key, "instanceCount": c.instance_count,
            "reservationId": c.reservation_id, "durationHours": None if c.adopt else c.duration_hours,
            "earliestStart": c.earliest_start, "latestStart": c.latest_start,
            "maxUpfrontFeeUsd": None if c.adopt else c.max_upfront_fee_usd,
            # Local/Wavelength Zone offerings are bought only when asked for (capacity.choose_offering)
            **({"allowLocalZones": True} if c.allow_local_zones else {}),
            # purchases are tagged with it, and a tagged block is adopted before buying again
            "stackIdentity": None if c.adopt else self.stack_identity,
            **aws_inputs,
        }, opts=pulumi.ResourceOptions(parent=self))
        pulumi.Output.all(block.reservation_id, block.start_date, block.end_date, block.instances_stop_at).apply(
            lambda b: pulumi.log.warn(
                f"Capacity Block {b[0]}: {b[1]} to {b[2]}; AWS stops its instances at {b[3]}. The GPU "
                "node group scales up at its start and back to 0 an hour before its end", resource=self)
            if b[0] else None)
        # nothing else is created before the block exists (a refused purchase stops everything)
        cluster_name = f"{name}-{shared.stack}"[:100]
        from ..progress.program import progress_inputs
        from .cleanup import LeftoverCheck, LoadBalancerGone

        network = Network(name, cfg, block.availability_zone, self, depends_on=[block],
                          public_endpoint=bool(shared.allowed_cidrs))
        # destroy: deleted after the cluster (which depends on it) and before the VPC, its
        # subnets and NAT gateway (it depends on them): lists what is still tagged for the
        # cluster by name, before a leftover ENI could only show as a subnet's DependencyViolation
        leftovers = LeftoverCheck(f"{name}-leftovers", {
            "clusterName": cluster_name, "region": region, **aws_inputs, **progress_inputs()},
            opts=pulumi.ResourceOptions(parent=self, depends_on=[block, *network.resources]))
        cluster = Cluster(name, cluster_name, cfg, network, self, depends_on=[block, leftovers], region=region,
                          profile=(aws_inputs.get("aws") or {}).get("profile"))
        nodes_needed = shared.nodes * cfg.replicas
        gpu = GpuNodes(name, shape=shape, block=block, cluster_name=cluster_name,
                       role_arn=cluster.node_role.arn, subnet_id=network.gpu_subnet_id,
                       security_group_id=cluster.security_group_id, instance_count=c.instance_count,
                       root_volume_gib=cfg.root_volume_gib, parent=self, aws_inputs=aws_inputs,
                       nodes_per_replica=shared.nodes,
                       depends_on=[cluster.eks, *cluster.node_role_attachments])
        add_ons = cluster.add_ons(name, self, multi_node=spec.nodes > 1)
        layout = lay.k8s_layout(shared, cfg)
        objs = rk.render(plan, spec, layout)
        service_deps = []
        svc_obj = next(o for o in objs if o["kind"] == "Service")
        if svc_obj["spec"]["type"] == "LoadBalancer":
            # destroy: the Service goes first, then this waits for its NLB, then the network goes
            service_deps.append(LoadBalancerGone(f"{name}-lb-gone", {
                "clusterName": cluster_name, "namespace": layout.namespace,
                "serviceName": svc_obj["metadata"]["name"], "region": region, **aws_inputs,
                **progress_inputs()}, opts=pulumi.ResourceOptions(parent=self, depends_on=[cluster.eks])))
        weights = _weights(name, cfg, layout, spec, cluster, region, self.stack_identity, plan, self,
                           block.start_date)
        serving = Serving(name, objs, layout,
                          secret_data(self.secrets.api_key if shared.has_api_key else None,
                                      self.secrets.hf_token if shared.has_hf_token else None),
                          cluster.provider, self, depends_on=add_ons, service_depends_on=service_deps,
                          before_workload=weights.before_workload,
                          config_maps=rk.render_api_guard(spec, layout))
        gate = self._readiness_gate(plan, spec, layout, objs, cluster, block, serving, add_ons, weights)
        public = bool(layout.allowed_cidrs)
        pf = None if public else (f"kubectl -n {layout.namespace} port-forward svc/{rk.service_name(layout)} "
                                  f"{spec.port}:{spec.port}")
        local = f"http://127.0.0.1:{spec.port}/v1"
        # the gate reads the load balancer's name once it exists (the Service is not awaited)
        endpoint = pulumi.Output.all(gate.endpoint, serving.endpoint).apply(lambda e: e[0] or e[1])
        curl = endpoint.apply(lambda e: curl_line(e if public else local, spec.served_model_name,
                                                  shared.has_api_key, pf))
        cost = pulumi.Output.all(block.purchased, block.upfront_fee_usd).apply(
            lambda a: _cost_text(c, a[0], a[1], plan, nodes_needed))
        return Served(endpoint=endpoint, outputs={
            "kubeconfig": cluster.kubeconfig,
            "capacityReservationId": block.reservation_id,
            "reservationWindow": pulumi.Output.all(block.start_date, block.end_date, block.instances_stop_at)
                .apply(lambda w: {"start": w[0], "end": w[1], "instancesStopAt": w[2]}),
            "capacityCost": cost,
            "curl": curl,
            "gpuNodeGroup": gpu.node_group.node_group_name,
            "acceptance": gate.acceptance,
            "readiness": pulumi.Output.all(gate.ready, gate.state, gate.lastSeen, gate.servingExpectedBy,
                                           gate.via, gate.readySeconds).apply(lambda r: {
                "ready": r[0], "state": r[1], "lastSeen": r[2], "servingExpectedBy": r[3], "via": r[4],
                "readySeconds": r[5]}),
        })

    def _readiness_gate(self, plan: Plan, spec: LaunchSpec, layout, objs, cluster, block, serving, add_ons, weights):
        """The gate after the workload and Service (readiness.py): budget from the plan."""
        import hashlib
        import json

        from ..progress.program import progress_inputs
        from .gate_budget import plan_budget
        from .readiness import BLOCK_WAIT_MAX_S, EndpointReadiness

        c = plan.cold_start
        budget = plan_budget(c)
        svc = serving.service_object
        fingerprint = hashlib.sha256(json.dumps(serving.workload_object, sort_keys=True).encode()).hexdigest()[:16]
        api_key = self.secrets.api_key if self.shared.has_api_key and self.secrets.api_key is not None else ""
        return EndpointReadiness(f"{self._name}-readiness", {
            "clusterName": cluster.name, "apiEndpoint": cluster.endpoint, "caData": cluster.ca_data,
            "region": self.region, "namespace": layout.namespace, "serviceName": svc["metadata"]["name"],
            "port": spec.port, "podSelector": dict(svc["spec"]["selector"]),
            "servedModelName": spec.served_model_name, "apiKey": api_key,
            "blockStart": block.start_date, "reservationId": block.reservation_id,
            "budgetS": budget.deadline_s, "expectedS": budget.expected_s,
            "mirror": self._mirror_input(plan, weights),
            "blockWaitMaxS": BLOCK_WAIT_MAX_S, "launchFingerprint": fingerprint,
            **self._acceptance_inputs(plan),
            **self.aws_inputs, **progress_inputs(plan),
        }, opts=pulumi.ResourceOptions(parent=self, depends_on=[serving.workload, serving.service, *add_ons]))

    def _mirror_input(self, plan: Plan, weights) -> Optional[Dict[str, Any]]:
        """The stack's mirror, for the gate to budget from what it holds (gate_budget.py)."""
        from ..inference.catalog import MODELS
        from ..inference.coldstart import MIRROR_FILL_RATE
        from .gate_budget import mirror_inputs
        from .weights.plan import fill_rate

        if weights.bucket is None:
            return None
        return {"bucket": weights.bucket.name, "prefix": self.cfg.weights.mirror_prefix,
                **mirror_inputs(plan.cold_start, checkpoint_bytes=MODELS[plan.model].download_bytes,
                                fill_gb_per_s=fill_rate(self.cfg) or MIRROR_FILL_RATE[0],
                                stream=self.cfg.weights.stream)}

    def _acceptance_inputs(self, plan: Plan) -> Dict[str, Any]:
        """The acceptance gate's size (kimi-k3:acceptLoad, the plan's concurrency) and hardware."""
        from ..accept.sizing import load_size

        size = load_size(self.shared.accept_load, plan.max_num_seqs, plan.parallelism.data_parallel)
        return {"acceptLoad": None if size is None else {
                    "requests": size.requests, "concurrency": size.concurrency,
                    "maxTokens": size.max_tokens},
                "acceptHardware": {"accelerator": plan.accelerator, "node_shape": plan.node_shape,
                                   "nodes": plan.nodes}}

    # ------------------------------------------------------------ HyperPod path

    def _hyperpod(self, plan: Plan, spec: LaunchSpec) -> Served:
        import pulumi_kubernetes as k8s

        from .cluster import existing_cluster_provider

        name, cfg = self._name, self.cfg
        region = self.region
        from .serving import secret_data

        profile = (self.aws_inputs.get("aws") or {}).get("profile")
        kubeconfig, provider = existing_cluster_provider(name, cfg.hyperpod_cluster_name, region, self,
                                                         profile=profile)
        layout = lay.k8s_layout(self.shared, cfg)
        iec = rk.render_hyperpod(plan, spec, layout)
        pulumi.log.warn(hyperpod_gate_warning(self.shared.accept_load), resource=self)
        ns_name = iec["metadata"]["namespace"]
        # never default/kube-* (config.check_own_namespace): a namespace of the stack's own
        ns = k8s.core.v1.Namespace(f"{name}-ns", metadata={"name": ns_name},
                                   opts=pulumi.ResourceOptions(parent=self, provider=provider))
        waits = [ns]
        data = secret_data(self.secrets.api_key if self.shared.has_api_key else None,
                           self.secrets.hf_token if self.shared.has_hf_token else None)
        if data:  # the endpoint config reads the API key and the hub token from this Secret
            waits.append(k8s.core.v1.Secret(
                f"{name}-secrets", metadata={"name": layout.secret_name, "namespace": ns_name},
                type="Opaque", string_data=data,
                opts=pulumi.ResourceOptions(parent=self, provider=provider, depends_on=[ns],
                                            additional_secret_outputs=["stringData", "data"])))
        k8s.apiextensions.CustomResource(
            f"{name}-endpoint-config", api_version=iec["apiVersion"], kind=iec["kind"],
            metadata=iec["metadata"], spec=iec["spec"],
            opts=pulumi.ResourceOptions(parent=self, provider=provider, depends_on=waits))
        iec_name = iec["metadata"]["name"]
        endpoint = f"hyperpod:{ns_name}/{iec_name}"
        # the Inference Operator reports where it serves in the object's status
        status = (f"kubectl -n {ns_name} get inferenceendpointconfig {iec_name} -o yaml  "
                  f"# the operator reports the invocation endpoint in .status once it is ready")
        return Served(endpoint=endpoint, outputs={"kubeconfig": kubeconfig, "curl": status})


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


def _weights(name, cfg, layout, spec, cluster, region, stack_identity, plan, parent, block_start):
    """The weights path's bucket, identities and cluster objects (components/aws_eks/weights/)."""
    from ..inference.catalog import MODELS
    from .weights.resources import Weights

    return Weights(name, cfg.weights, layout, spec, cluster=cluster, region=region,
                   stack_identity=stack_identity, checkpoint_gb=MODELS[plan.model].download_bytes / 1e9,
                   parent=parent, block_start=block_start, mirror_fill_s=plan.cold_start.mirror_fill_s)


def _cost_text(c: cfgmod.CapacityRequest, purchased, fee, plan: Plan, nodes: int) -> str:
    """What the GPU capacity costs, as far as kimi-k3 knows it."""
    if purchased and fee is not None:
        hours = c.duration_hours
        return f"${float(fee):,.2f} paid upfront (${float(fee) / hours:,.2f}/h for {hours} h)"
    if not c.adopt:
        return (f"not bought yet: a {c.duration_hours} h block of {c.instance_count} instances is bought "
                f"only if its upfront fee is at most ${c.max_upfront_fee_usd:,.2f}")
    if plan.usd_per_hour is not None:
        return f"adopted reservation; on-demand equivalent ${plan.usd_per_hour * nodes:,.2f}/h"
    return "adopted reservation: prepaid when it was bought (see its upfront fee in the EC2 console)"


def create(name: str, shared: SharedSettings, secrets) -> AwsEksCluster:
    """Parse the target's keys (ConfigError on bad input), then register the component.

    A deployment that could not reach the EKS API stops here, before anything is created; the
    offline plan records the same requirement (`deploy_requirements`, plan.json) and goes on.
    """
    from ..offline.runner import offline
    from .reachability import api_requirement

    cfg = cfgmod.parse(shared)
    if cfg.serving == "eks" and shared.nodes > 1:
        from .addons import check_efa_supported

        check_efa_supported(shared.node_shape)
    region = pulumi.Config("aws").get("region")
    if not region:
        raise ConfigError("aws:region", None, "set it: pulumi config set aws:region us-east-2",
                          "is needed (the Capacity Block and the cluster live in one region)")
    requirements = [r for r in (api_requirement(cfg),) if r is not None]
    if requirements and not offline():
        raise requirements[0].error()
    from .aws_api import refuse_static_keys, stack_aws_inputs

    aws_inputs = stack_aws_inputs()
    refuse_static_keys(aws_inputs)  # the kubeconfig's `aws eks get-token` could not use them
    target = AwsEksCluster(name, shared, cfg, secrets, region)
    target.aws_inputs = aws_inputs
    target.deploy_requirements = [r.to_dict() for r in requirements]
    for r in requirements:
        pulumi.log.warn(f"a real `pulumi up` would stop here: {r.text()}", resource=target)
    return target
