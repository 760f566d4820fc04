"""Kubernetes objects that run a LaunchSpec: plain dicts, no Pulumi, no I/O.

The same dicts are written as YAML by the offline plan command and handed to pulumi_kubernetes by
the AWS target, so what a reviewer reads is what the cluster gets. One node per replica becomes a
Deployment; a replica spanning nodes becomes a LeaderWorkerSet (leaderworkerset.x-k8s.io/v1)
whose leader is node 0. `render_hyperpod` turns the same spec into SageMaker HyperPod's
`InferenceEndpointConfig` for users who run HyperPod instead of their own EKS cluster.

Launch placeholders map as follows (documented in docs/aws-eks.md):
- `${NODE0_ADDR}`: the LWS leader's address (`$(LWS_LEADER_ADDRESS)`, set by the LWS controller);
  on a single node `127.0.0.1`.
- `${NODE_ADDR}`: the pod IP, from the downward API (`status.podIP`).
- `${NODE_RANK}`: the LWS worker index, from the pod label the controller sets
  (`leaderworkerset.sigs.k8s.io/worker-index`, read through the downward API); 0 on one node.
- `${NODE_IFNAME}`: `eth0`, the pod's own interface under the VPC CNI (pods do not use the host
  network; NCCL reaches EFA through the device plugin's devices, not through an IP interface).
Secrets (VLLM_API_KEY, HF_TOKEN) only ever appear as `secretKeyRef`s; a pod template that reads
them carries the Secret's uid (placeholder here, secret_roll.py), so a new key rolls it. With an API key the serving
pod mounts kimi-k3's API-key guard (ConfigMap `<name>-api-guard`, read-only, on PYTHONPATH) that
the head's `--middleware` loads (components/inference/api_guard.py).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Dict, List, Mapping, Optional, Protocol, Tuple

from ..config.values import MODEL_COMMIT
from ..router import k8s as router_k8s
from . import api_guard as guard
from . import secret_roll
from .launch import PLACEHOLDERS, LaunchSpec, RoleSpec
from .planner import Plan
from .quoting import k8s_literal, k8s_ref

LWS_API = "leaderworkerset.x-k8s.io/v1"
LWS_INDEX_LABEL = "leaderworkerset.sigs.k8s.io/worker-index"
#: A replica's ranks share one NCCL communicator and one pipeline: a lone restarted rank cannot
#: rejoin them, so any pod's restart recreates the whole group ("RecreateGroupOnPodRestart will
#: recreate all the pods in the group if 1. Any individual pod in the group is recreated; 2. Any
#: containers/init-containers in a pod is restarted": kubernetes-sigs/lws v0.8.0,
#: api/leaderworkerset/v1/leaderworkerset_types.go, commit fc19b9ae9b0113d228ba15f4b62b06bea434b510;
#: also its default). `None` would restart only the failed pod, which then waits forever for
#: peers that are not coming back. The experimental annotation
#: `leaderworkerset.sigs.k8s.io/experimental-recreate-group-after-start` is not used: experimental
#: in v0.8.0. The cost, a restart of one rank repeating the whole replica's load and compile (the
#: weights stay staged on each node's NVMe), is why the engine's ready timeout and the startup
#: probe are never below the recipe's 3600 s (profiles.py): a slow start is not killed into a loop.
LWS_RESTART_POLICY = "RecreateGroupOnPodRestart"
HYPERPOD_API = "inference.sagemaker.aws.amazon.com/v1"
#: where nodeadm mounts the RAID0 of the instance's local NVMe disks (localStorage strategy RAID0)
NODE_NVME_PATH = "/mnt/k8s-disks/0"
POD_IFNAME = "eth0"
#: env vars the seed used that vLLM no longer reads (absent from `vllm/envs.py` since vLLM 0.32.0,
#: https://github.com/vllm-project/vllm/blob/v0.32.0/vllm/envs.py); never emitted
OBSOLETE_ENV = frozenset({"VLLM_ENABLE_K3_LATENT_MOE_TAIL_FUSION"})

STARTUP_PERIOD_S = 10
READINESS_PERIOD_S = 10
LIVENESS_PERIOD_S = 30
LIVENESS_FAILURES = 4
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")


@dataclass(frozen=True)
class WeightsStaging:
    """How the weights reach vLLM: what the layout's stager stages (aws-eks's:
    components/aws_eks/weights/).

    - `hub`: an init container downloads `repo_id` from Hugging Face onto the node's NVMe;
    - `s3`: an init container copies your bucket's `s3_uri` onto the node's NVMe, checked
      against its listing;
    - `mirror`: the same from the stack's own bucket (filled by the mirror Job; its URI comes from
      the source ConfigMap), checked against the mirror's manifest; a node the mirror is not
      complete for stages from the hub; vLLM's compile cache is kept in the bucket;
    - `stream` (with s3 or mirror): nothing is staged; vLLM streams from S3 (runai_streamer).
    A marker written last makes staging idempotent: a pod on a node that holds the same verified
    copy does not copy again. Pods that read S3 run as a service account with an EKS Pod Identity
    role (never the node role).
    """

    source: str  # "hub" | "s3" | "mirror"
    repo_id: str = ""
    s3_uri: str = ""
    stream: bool = False
    revision: str = "main"
    compile_cache: bool = False
    #: streaming from the mirror: how long the pods wait for it to be complete (0: the default)
    stream_wait_s: int = 0

    def __post_init__(self):
        if self.source not in ("hub", "s3", "mirror"):
            raise ValueError(f"unknown weights source {self.source!r}")
        if not self.repo_id:
            raise ValueError("weights staging needs repo_id (the hub fallback and the cache key use it)")
        if self.source == "s3" and not self.s3_uri.startswith("s3://"):
            raise ValueError("s3 staging and streaming need an s3:// URI")
        if self.stream and self.source == "hub":
            raise ValueError("streaming needs the weights in S3")
        if self.compile_cache and self.source != "mirror":
            raise ValueError("the compile cache lives in the stack's mirror bucket")

    @property
    def uses_bucket(self) -> bool:
        return self.source in ("s3", "mirror")


class WeightsStager(Protocol):
    """How a target puts the weights where vLLM reads them: the pods' init containers, volumes,
    mounts, environment and service account, and the objects they need (applied before the
    workload). Handed in with the layout (aws-eks: components/aws_eks/weights/render.py), so
    this renderer knows no target."""

    def init_containers(self, spec: LaunchSpec, layout: "K8sLayout", role: RoleSpec,
                        single_node: bool, serving: bool) -> List[dict]: ...

    def vllm_env(self, spec: LaunchSpec, layout: "K8sLayout", role: RoleSpec) -> List[dict]: ...

    def volumes(self, layout: "K8sLayout") -> List[dict]: ...

    def vllm_mounts(self, layout: "K8sLayout") -> List[dict]: ...

    def service_account(self, layout: "K8sLayout") -> Optional[str]: ...

    def objects(self, layout: "K8sLayout", spec: LaunchSpec) -> List[dict]: ...


class Interconnect(Protocol):
    """What the network between the nodes of a replica adds to each pod: extra resource
    requests/limits, NCCL's environment, a check in front of `vllm serve`, its init containers,
    volumes and mounts, and the objects they need. Handed in with the layout (aws-eks's EFA:
    components/aws_eks/efa/render.py)."""

    def resources(self, layout: "K8sLayout") -> Dict[str, Dict[str, object]]: ...

    def vllm_env(self, layout: "K8sLayout") -> List[dict]: ...

    def command(self, layout: "K8sLayout", argv: List[str]) -> List[str]: ...

    def init_containers(self, spec: LaunchSpec, layout: "K8sLayout") -> List[dict]: ...

    def volumes(self, layout: "K8sLayout") -> List[dict]: ...

    def vllm_mounts(self, layout: "K8sLayout") -> List[dict]: ...

    def objects(self, layout: "K8sLayout") -> List[dict]: ...


class NoStaging:
    """A WeightsStager that stages nothing: the weights are already where the spec's
    `model_path` says (e.g. an image or a volume that holds them)."""

    def init_containers(self, spec, layout, role, single_node, serving) -> List[dict]:
        return []

    def vllm_env(self, spec, layout, role) -> List[dict]:
        return []

    def volumes(self, layout) -> List[dict]:
        return []

    def vllm_mounts(self, layout) -> List[dict]:
        return []

    def service_account(self, layout) -> Optional[str]:
        return None

    def objects(self, layout, spec) -> List[dict]:
        return []


class NoInterconnect:
    """An Interconnect that adds nothing (one node per replica, or a network NCCL finds alone)."""

    def resources(self, layout) -> Dict[str, Dict[str, object]]:
        return {"requests": {}, "limits": {}}

    def vllm_env(self, layout) -> List[dict]:
        return []

    def command(self, layout, argv: List[str]) -> List[str]:
        return list(argv)

    def init_containers(self, spec, layout) -> List[dict]:
        return []

    def volumes(self, layout) -> List[dict]:
        return []

    def vllm_mounts(self, layout) -> List[dict]:
        return []

    def objects(self, layout) -> List[dict]:
        return []


NO_STAGING = NoStaging()
NO_INTERCONNECT = NoInterconnect()


@dataclass(frozen=True)
class K8sLayout:
    """Where and how the spec runs on Kubernetes (what the plan does not decide)."""

    namespace: str = "kimi-k3"
    name: str = "kimi-k3"
    replicas: int = 1
    gpus_per_node: int = 8
    efa_per_node: int = 0  # EFA devices per node (p6-b300: 16); 0 = no EFA request
    #: NCCL between the nodes of a replica: "efa", "tcp" (opted out), "" (one node)
    inter_node_transport: str = ""
    #: EFA: the pod installs the EFA userspace itself (the image lacks it: aws_eks/efa/)
    efa_install: bool = False
    #: the EFA installer tarball's sha256 the init container checks ("": unverified, warned)
    efa_installer_sha256: str = ""
    node_selector: Mapping[str, str] = field(default_factory=dict)
    tolerations: Tuple[Mapping[str, str], ...] = (
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},)
    weights: WeightsStaging = WeightsStaging("hub", repo_id="moonshotai/Kimi-K3")
    node_cache_path: str = NODE_NVME_PATH + "/models"
    node_compile_cache_path: str = NODE_NVME_PATH + "/compile-cache"
    models_mount: str = "/models"  # where the node cache appears in the pods
    secret_name: str = "kimi-k3-secrets"  # keys: VLLM_API_KEY, HF_TOKEN
    shm_size: str = "256Gi"
    allowed_cidrs: Tuple[str, ...] = ()
    instance_type: str = "p6-b300.48xlarge"  # for HyperPod (as ml.<type>)
    #: the target's weights staging (`weights` says what to stage; NO_STAGING: nothing)
    stager: WeightsStager = NO_STAGING
    #: the target's network between the nodes of a replica (NO_INTERCONNECT: nothing added)
    interconnect: Interconnect = NO_INTERCONNECT
    #: extra annotations of the load balancer Service, (name, value) pairs (TLS: aws_eks/tls.py)
    service_annotations: Tuple[Tuple[str, str], ...] = ()
    #: the replicas serve behind vllm-router: the Service selects the router pod (components/router/k8s.py)
    router: bool = False

    def __post_init__(self):
        for what, value in (("namespace", self.namespace), ("name", self.name)):
            if not _DNS_LABEL.match(value):
                raise ValueError(f"{what} {value!r} is not a DNS label")
        if self.replicas < 1:
            raise ValueError("replicas must be at least 1")
        if self.inter_node_transport not in ("", "efa", "tcp"):
            raise ValueError(f"unknown inter-node transport {self.inter_node_transport!r}")
        if self.inter_node_transport == "tcp" and self.efa_per_node:
            raise ValueError("over TCP the pods request no EFA device (NCCL would not use them)")
        if self.inter_node_transport == "efa" and not self.efa_per_node:
            raise ValueError("over EFA the pods request the node's EFA devices")
        if self.efa_install and self.inter_node_transport != "efa":
            raise ValueError("the EFA userspace is installed only for a replica over EFA")

    @property
    def labels(self) -> Dict[str, str]:
        return {"app.kubernetes.io/name": "kimi-k3", "app.kubernetes.io/instance": self.name}

    @property
    def api_service(self) -> str:
        return service_name(self)


# ---------------------------------------------------------------- placeholders and env

_PLACEHOLDER = re.compile(r"\$\{(" + "|".join(PLACEHOLDERS) + r")\}")


def _placeholder_value(name: str, single_node: bool) -> str:
    """What a launch placeholder becomes in a pod: a `$(VAR)` reference or a literal."""
    if name == "NODE0_ADDR":
        return k8s_literal("127.0.0.1") if single_node else k8s_ref("LWS_LEADER_ADDRESS")
    if name == "NODE_ADDR":
        return k8s_ref("NODE_ADDR")
    if name == "NODE_RANK":
        return k8s_literal("0") if single_node else k8s_ref("NODE_RANK")
    if name == "MODEL_URI":
        return k8s_ref("KK3_MODEL_URI")  # set from the weights source ConfigMap
    return k8s_literal(POD_IFNAME)


def _subst(text: str, single_node: bool) -> str:
    """`text` for a container's command/args/env value: launch placeholders become Kubernetes
    `$(VAR)` references or literals, everything else is escaped (`$` as `$$`) so Kubernetes
    keeps it literal: a configured `$(HF_TOKEN)` stays that text, never the token."""
    out, pos = [], 0
    for m in _PLACEHOLDER.finditer(text):
        out.append(k8s_literal(text[pos:m.start()]))
        out.append(_placeholder_value(m.group(1), single_node))
        pos = m.end()
    out.append(k8s_literal(text[pos:]))
    return "".join(out)


def _env(role: RoleSpec, spec: LaunchSpec, layout: K8sLayout, single_node: bool) -> List[dict]:
    env: List[dict] = [{"name": "NODE_ADDR", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}]
    if not single_node:
        env.append({"name": "NODE_RANK", "valueFrom": {"fieldRef": {
            "fieldPath": f"metadata.labels['{LWS_INDEX_LABEL}']"}}})
    for key, value in role.env:
        if key in OBSOLETE_ENV:
            continue
        env.append({"name": key, "value": _subst(value, single_node)})
    for key in spec.secret_env:
        env.append({"name": key, "valueFrom": {"secretKeyRef": {"name": layout.secret_name, "key": key}}})
    return env


# ---------------------------------------------------------------- probes

def probes(spec: LaunchSpec) -> Dict[str, dict]:
    """startup/readiness/liveness on the readiness path.

    The startup probe allows the plan's whole cold-start budget (`startup_timeout_s`, the same
    number as VLLM_ENGINE_READY_TIMEOUT_S) before Kubernetes restarts the container; staging
    happens in the init container, before the probe clock starts.
    """
    def http():
        return {"path": spec.readiness_path, "port": "http"}

    return {
        "startupProbe": {"httpGet": http(), "periodSeconds": STARTUP_PERIOD_S, "timeoutSeconds": 5,
                         "failureThreshold": math.ceil(spec.startup_timeout_s / STARTUP_PERIOD_S) + 1},
        "readinessProbe": {"httpGet": http(), "periodSeconds": READINESS_PERIOD_S, "timeoutSeconds": 5,
                           "failureThreshold": 3},
        "livenessProbe": {"httpGet": http(), "periodSeconds": LIVENESS_PERIOD_S, "timeoutSeconds": 10,
                          "failureThreshold": LIVENESS_FAILURES},
    }


# ---------------------------------------------------------------- pods

def _volumes(layout: K8sLayout, guarded: bool) -> List[dict]:
    out = [{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": layout.shm_size}},
           *layout.stager.volumes(layout), *layout.interconnect.volumes(layout)]
    if guarded:
        out.append({"name": GUARD_VOLUME, "configMap": {"name": guard.configmap_name(layout.name),
                                                        "defaultMode": 0o444}})
    return out


GUARD_VOLUME = "api-guard"


def render_api_guard(spec: LaunchSpec, layout: K8sLayout) -> List[dict]:
    """The ConfigMap holding kk3_api_guard.py (mounted by the serving pod), or nothing without a
    key. Applied before the workload: a pod cannot start without the volume's ConfigMap."""
    if not spec.api_guard:
        return []
    return [{"apiVersion": "v1", "kind": "ConfigMap",
             "metadata": _meta(layout, name=guard.configmap_name(layout.name)),
             "data": {guard.FILE_NAME: guard.source()}}]


def _resources(layout: K8sLayout) -> dict:
    limits = {"nvidia.com/gpu": layout.gpus_per_node}
    if layout.efa_per_node:
        limits["vpc.amazonaws.com/efa"] = layout.efa_per_node
    extra = layout.interconnect.resources(layout)  # e.g. hugepages and a memory request over EFA
    return {"limits": {**limits, **extra["limits"]}, "requests": {**limits, **extra["requests"]}}


def _pod_spec(role: RoleSpec, spec: LaunchSpec, layout: K8sLayout, single_node: bool,
              serving: bool) -> dict:
    """Pod spec for one node of a replica; `serving` = this pod answers HTTP (node 0)."""
    guarded = serving and spec.api_guard  # the head's --middleware imports kk3_api_guard
    stager, net = layout.stager, layout.interconnect
    mounts = [{"name": "dshm", "mountPath": "/dev/shm"}, *stager.vllm_mounts(layout), *net.vllm_mounts(layout)]
    env = _env(role, spec, layout, single_node) + stager.vllm_env(spec, layout, role) + net.vllm_env(layout)
    if guarded:
        mounts.append({"name": GUARD_VOLUME, "mountPath": guard.CONTAINER_DIR, "readOnly": True})
        # the vLLM CUDA image has no PYTHONPATH of its own to keep (api_guard.py)
        env.append({"name": "PYTHONPATH", "value": k8s_literal(guard.CONTAINER_DIR)})
    container = {
        "name": "vllm",
        "image": spec.image,
        # over EFA, behind efa_check.sh: it stops naming what is missing, else execs vLLM
        "command": net.command(layout, [_subst(a, single_node) for a in role.argv]),
        "env": env,
        "resources": _resources(layout),
        "volumeMounts": mounts,
    }
    if layout.efa_per_node:
        # EFA (libfabric) registers pinned memory: the container must be allowed to lock it
        container["securityContext"] = {"capabilities": {"add": ["IPC_LOCK"]}}
    if serving:
        container["ports"] = [{"name": "http", "containerPort": spec.port, "protocol": "TCP"}]
        container.update(probes(spec))
    pod = {
        "terminationGracePeriodSeconds": 60,
        "containers": [container],
        "volumes": _volumes(layout, guarded),
        "tolerations": [dict(t) for t in layout.tolerations],
    }
    init = net.init_containers(spec, layout) + stager.init_containers(spec, layout, role, single_node, serving)
    if init:
        pod["initContainers"] = init
    account = stager.service_account(layout)
    if account:
        pod["serviceAccountName"] = account
    if layout.node_selector:
        pod["nodeSelector"] = dict(layout.node_selector)
    return pod


def _meta(layout: K8sLayout, name: Optional[str] = None, labels: Optional[dict] = None) -> dict:
    return {"name": name or layout.name, "namespace": layout.namespace,
            "labels": dict(labels or layout.labels)}


def render_namespace(layout: K8sLayout) -> dict:
    return {"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": layout.namespace, "labels": {"app.kubernetes.io/part-of": "kimi-k3"}}}


def render_deployment(spec: LaunchSpec, layout: K8sLayout) -> dict:
    """One pod per replica on one node. Recreate: a rolling update would need spare GPU nodes."""
    if spec.nodes != 1:
        raise ValueError("a Deployment runs one node per replica; use render_leader_worker_set")
    # pods that read the Secret roll when it is replaced (a new API key): secret_roll.py
    return secret_roll.mark({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": _meta(layout),
        "spec": {
            "replicas": layout.replicas,
            "strategy": {"type": "Recreate"},
            "selector": {"matchLabels": layout.labels},
            "template": {"metadata": {"labels": layout.labels},
                         "spec": _pod_spec(spec.head, spec, layout, True, True)},
        },
    }, layout.secret_name)


def render_leader_worker_set(spec: LaunchSpec, layout: K8sLayout) -> dict:
    """One LWS group per replica: the leader runs the head role, workers the worker template."""
    if spec.nodes < 2 or spec.worker is None:
        raise ValueError("a LeaderWorkerSet needs a multi-node spec")
    return secret_roll.mark({
        "apiVersion": LWS_API, "kind": "LeaderWorkerSet",
        "metadata": _meta(layout),
        "spec": {
            "replicas": layout.replicas,
            "startupPolicy": "LeaderCreated",
            "leaderWorkerTemplate": {
                "size": spec.nodes,
                "restartPolicy": LWS_RESTART_POLICY,
                "leaderTemplate": {"metadata": {"labels": {**layout.labels, "kimi-k3/role": "head"}},
                                   "spec": _pod_spec(spec.head, spec, layout, False, True)},
                "workerTemplate": {"metadata": {"labels": {**layout.labels, "kimi-k3/role": "worker"}},
                                   "spec": _pod_spec(spec.worker, spec, layout, False, False)},
            },
        },
    }, layout.secret_name)


def service_name(layout: K8sLayout) -> str:
    """The API Service's own name, never the workload's.

    The LeaderWorkerSet controller creates a headless Service named after the LWS (pods use it
    as their subdomain, so `LWS_LEADER_ADDRESS` = `<lws>-<group>.<lws>.<namespace>` resolves)
    and leaves an existing Service of that name alone (kubernetes-sigs/lws,
    pkg/utils/controller/controller_utils.go CreateHeadlessServiceIfNotExists); ours must
    therefore never take that name. The same name on one node keeps both layouts alike.
    """
    return f"{layout.name}-api"


def replica_selector(spec: LaunchSpec, layout: K8sLayout) -> Dict[str, str]:
    """The labels of the pods that serve HTTP: every replica's (head) pod."""
    selector = dict(layout.labels)
    if spec.nodes > 1:
        selector["kimi-k3/role"] = "head"
    return selector


def render_router(spec: LaunchSpec, layout: K8sLayout) -> List[dict]:
    """vllm-router and kimi-k3's front in front of the replicas (components/router/k8s.py), or
    nothing for one replica."""
    if not layout.router:
        return []
    key = (layout.secret_name, "VLLM_API_KEY") if "VLLM_API_KEY" in spec.secret_env else None
    return [secret_roll.mark(o, layout.secret_name)
            for o in router_k8s.render(layout.namespace, layout.name, spec.port,
                                       replica_selector(spec, layout), api_key_secret=key)]


def render_service(spec: LaunchSpec, layout: K8sLayout) -> dict:
    """The endpoint. With allowed CIDRs: an NLB limited to them; without: ClusterIP only.
    Several replicas: the router pod (its front) is what it selects.

    No CIDRs means nothing is exposed outside the cluster (reach it with `kubectl port-forward`);
    the whole internet only when 0.0.0.0/0 is spelled out in kimi-k3:allowedCidrs.
    """
    selector = router_k8s.service_selector(layout.name) if layout.router else replica_selector(spec, layout)
    svc = {"type": "ClusterIP", "selector": selector,
           "ports": [{"name": "http", "port": spec.port, "targetPort": "http", "protocol": "TCP"}]}
    meta = _meta(layout, name=service_name(layout))
    if layout.allowed_cidrs:
        svc["type"] = "LoadBalancer"
        svc["loadBalancerSourceRanges"] = list(layout.allowed_cidrs)
        meta["annotations"] = {"service.beta.kubernetes.io/aws-load-balancer-type": "nlb",
                               **dict(layout.service_annotations)}
    return {"apiVersion": "v1", "kind": "Service", "metadata": meta, "spec": svc}


def render(plan: Plan, spec: LaunchSpec, layout: K8sLayout) -> List[dict]:
    """Every object that serves `spec`, in apply order (namespace first)."""
    if plan.nodes != spec.nodes:
        raise ValueError("plan and launch spec disagree on nodes per replica")
    workload = render_deployment(spec, layout) if spec.nodes == 1 else render_leader_worker_set(spec, layout)
    return [render_namespace(layout), workload, render_service(spec, layout)]


def render_weights(spec: LaunchSpec, layout: K8sLayout) -> List[dict]:
    """The weights objects (scripts ConfigMap, service accounts, the mirror Job), applied before
    the workload: the layout's stager's."""
    return layout.stager.objects(layout, spec)


def render_efa(layout: K8sLayout) -> List[dict]:
    """The interconnect's objects (EFA: the scripts ConfigMap of a multi-node replica), applied
    before the workload; nothing otherwise."""
    return layout.interconnect.objects(layout)


#: vLLM's health route: the ALB target group's check (the operator's CRD defaults to /ping, which
#: vLLM does not serve: its OpenAI server has /health, and kimi-k3's API-key guard leaves only
#: GET /health open, components/inference/kk3_api_guard.py)
HYPERPOD_HEALTH_PATH = "/health"


def render_hyperpod(plan: Plan, spec: LaunchSpec, layout: K8sLayout,
                    tls_output_s3_uri: Optional[str] = None) -> dict:
    """SageMaker HyperPod `InferenceEndpointConfig`: one pod per replica on one node.

    Field by field against the operator's CRD (aws/sagemaker-hyperpod-cli,
    helm_chart/HyperPodHelmChart/charts/inference-operator/config/crd/
    inference.sagemaker.aws.amazon.com_inferenceendpointconfigs.yaml; checked in
    tests/unit/test_aws_hyperpod.py):
    - the operator downloads the weights into its model volume, mounted where `spec.model_path`
      points; `worker.command` is set to `vllm serve` (not left to the image's ENTRYPOINT) and
      `worker.args` is the rest of our argv, whose only model argument is that path (the CRD
      documents `args` as the entrypoint's arguments and no model argument of its own);
    - secrets come from the Secret `layout.secret_name` in the endpoint's namespace: the API key
      as an env `valueFrom.secretKeyRef`, the hub token as `huggingFaceModel.tokenSecretRef`
      (the CRD: injected as HF_TOKEN into the download init container only); the worker's env
      `KK3_SECRET_UID` carries the Secret's uid (secret_roll.py: a new key changes the spec);
    - `maxDeployTimeInSeconds` (CRD default 3600) is the plan's budget: staging + startup timeout;
    - with an API key, the worker has no volume to mount kimi-k3's API-key guard from (the CRD's
      worker has no `volumes`), so its text travels as env `KK3_API_GUARD_PY` and
      `api_guard.HYPERPOD_WRITER` (`python3 -c`, the command) writes it to a private temp dir
      on PYTHONPATH and execs `vllm serve ...` (the args);
    - `loadBalancer.healthCheckPath` is vLLM's /health (the CRD's default /ping is not served);
    - `metrics.modelMetrics` is vLLM's /metrics on its API port (the CRD defaults the port to
      8080, where nothing listens); with an API key, kimi-k3's guard answers /metrics only with
      the key, which the operator's scraper does not have, so its collection is off
      (`metrics.enabled: false`) and the stack's own Prometheus scrapes with the key;
    - `tlsConfig.tlsCertificateOutputS3Uri` (the end-to-end path: the stack's TLS bucket): where
      the operator writes the certificate it generates for its load balancer's HTTPS listener
      (the CRD: "if not provided, operator auto-generates self-signed certificate").
    """
    if spec.nodes != 1:
        raise ValueError("HyperPod's InferenceEndpointConfig runs one node per replica")
    argv = [_subst(a, True) for a in spec.head.argv]
    if argv[:2] != ["vllm", "serve"]:
        raise ValueError(f"the HyperPod worker runs `vllm serve`; the launch spec starts {argv[:2]}")
    env = [{"name": k, "value": _subst(v, True)} for k, v in spec.head.env if k not in OBSOLETE_ENV]
    command, args = argv[:2], argv[2:]
    if spec.api_guard:
        command, args = [k8s_literal(a) for a in guard.HYPERPOD_COMMAND], argv
        env.append({"name": guard.SOURCE_ENV, "value": k8s_literal(guard.source())})
    if "VLLM_API_KEY" in spec.secret_env:
        env.append({"name": "VLLM_API_KEY", "valueFrom": {"secretKeyRef": {
            "name": layout.secret_name, "key": "VLLM_API_KEY"}}})
    hub = {"modelId": plan.model_repo_id}
    if MODEL_COMMIT.fullmatch(layout.weights.revision):
        # the CRD's commitSHA takes a commit only (^[0-9a-f]{40}$); a branch name is the
        # operator's default download, warned about at plan (config/shared.revision_warning)
        hub["commitSHA"] = layout.weights.revision
    if "HF_TOKEN" in spec.secret_env:
        hub["tokenSecretRef"] = {"name": layout.secret_name, "key": "HF_TOKEN"}
    # a new key changes the worker's env, so the operator deploys again (secret_roll.py)
    env = secret_roll.mark_hyperpod_env(env, layout.secret_name, hub.get("tokenSecretRef"))
    c = plan.cold_start
    return {
        "apiVersion": HYPERPOD_API,
        "kind": "InferenceEndpointConfig",
        "metadata": {"name": layout.name.replace("-", ""), "namespace": layout.namespace},
        "spec": {
            "modelName": spec.served_model_name,
            "instanceType": f"ml.{layout.instance_type}",
            "invocationEndpoint": "v1/chat/completions",
            "replicas": layout.replicas,
            "maxDeployTimeInSeconds": int(c.stage_s + c.startup_timeout_s),
            "modelSourceConfig": {"huggingFaceModel": hub, "modelSourceType": "huggingface"},
            "worker": {
                "image": spec.image,
                "modelInvocationPort": {"containerPort": spec.port, "name": "http"},
                "modelVolumeMount": {"mountPath": spec.model_path, "name": "model-weights"},
                # one node per replica: no inter-node traffic, so GPUs only (as the seed)
                "resources": {"limits": {"nvidia.com/gpu": layout.gpus_per_node},
                              "requests": {"nvidia.com/gpu": layout.gpus_per_node}},
                "command": command,
                "args": args,
                "environmentVariables": env,
            },
            "loadBalancer": {"healthCheckPath": HYPERPOD_HEALTH_PATH},
            "metrics": {"enabled": not spec.api_guard,
                        "modelMetrics": {"path": "/metrics", "port": spec.port}},
            **({"tlsConfig": {"tlsCertificateOutputS3Uri": tls_output_s3_uri}} if tls_output_s3_uri else {}),
        },
    }


def object_file_name(obj: Mapping) -> str:
    """`manifests/<kind>-<name>.yaml`, lower case."""
    return f"manifests/{obj['kind'].lower()}-{obj['metadata']['name']}.yaml"


def to_yaml(obj: Mapping) -> str:
    """One object as YAML, keys in the order written above (stable goldens)."""
    import yaml

    return yaml.safe_dump(obj, sort_keys=False, default_flow_style=False, width=120)


def manifest_files(objs) -> Dict[str, str]:
    """{`manifests/<kind>-<name>.yaml`: YAML text} for `objs`."""
    return {object_file_name(o): to_yaml(o) for o in objs}
