"""The aws-eks target's own `kimi-k3:*` keys, parsed and checked before anything is created.

Pure: takes `SharedSettings.target_config` (the keys the shared parser did not claim) and returns
a typed `AwsEksConfig`, or raises ConfigError naming the key, the value and the fix. A misspelt
key is an error (`reject_unknown`), never silently ignored. `aws:region` stays AWS's own key.
"""

from __future__ import annotations

import ipaddress
import json
import math
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Mapping, Optional, Tuple

from ..inference.errors import ConfigError
from ..config.shared import SharedSettings, check_exposure, parse_cidrs, reject_unknown
from .weights.settings import WeightsConfig
from .weights.settings import parse as parse_weights

SERVING_MODES = ("eks", "hyperpod")
#: the on-demand system node group's type (CoreDNS, controllers, the mirror Job)
DEFAULT_SYSTEM_INSTANCE_TYPE = "m7i.xlarge"
KEYS = frozenset({
    "serving", "capacityReservationId", "capacityInstanceCount", "capacityDurationHours",
    "capacityEarliestStart", "capacityLatestStart", "maxUpfrontFeeUsd", "vpcId",
    "privateSubnetIds", "publicSubnetIds", "vpcCidr", "clusterVersion", "apiAccessCidrs",
    "kmsKeyArn", "replicas", "systemInstanceType", "systemNodeCount", "weightsS3Uri", "keepWeightsMirror",
    "rootVolumeGib", "namespace", "hyperpodClusterName", "privateApi",
})
#: keys that shape what this stack builds on EKS; with `serving: hyperpod` the user's HyperPod
#: cluster already decides them, so setting one is refused (never silently dropped)
EKS_ONLY_KEYS = (
    "capacityReservationId", "capacityInstanceCount", "capacityDurationHours",
    "capacityEarliestStart", "capacityLatestStart", "maxUpfrontFeeUsd", "vpcId",
    "privateSubnetIds", "publicSubnetIds", "vpcCidr", "clusterVersion", "apiAccessCidrs",
    "kmsKeyArn", "systemInstanceType", "systemNodeCount", "rootVolumeGib", "privateApi",
)
MAX_BLOCK_INSTANCES = 64
_CR_ID = re.compile(r"^cr-[0-9a-f]{8,17}$")
_VPC_ID = re.compile(r"^vpc-[0-9a-f]{8,17}$")
_SUBNET_ID = re.compile(r"^subnet-[0-9a-f]{8,17}$")
_K8S_VERSION = re.compile(r"^1\.(2[89]|3[0-9])$")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
#: EKS cluster names: botocore's eks 2017-11-01 model, shape ClusterName (1-100, this pattern)
_EKS_CLUSTER_NAME = re.compile(r"^[0-9A-Za-z][A-Za-z0-9\-_]{0,99}$")


def valid_block_hours(hours: int) -> bool:
    """Capacity Block durations: 1-14 days in 1-day steps, then 7-day steps up to 182 days."""
    days, rest = divmod(hours, 24)
    if rest or days < 1:
        return False
    return days <= 14 or (days <= 182 and days % 7 == 0)


@dataclass(frozen=True)
class CapacityRequest:
    """Either adopt `reservation_id`, or look for offerings (and buy within the fee guard)."""

    reservation_id: Optional[str]
    instance_count: int
    duration_hours: int
    earliest_start: Optional[str]  # ISO-8601 UTC; None = now
    latest_start: Optional[str]
    max_upfront_fee_usd: float  # 0 = never buy: stop with the offers and their prices

    @property
    def adopt(self) -> bool:
        return self.reservation_id is not None


@dataclass(frozen=True)
class AwsEksConfig:
    serving: str
    capacity: CapacityRequest
    replicas: int
    vpc_id: Optional[str]
    private_subnet_ids: Tuple[str, ...]
    public_subnet_ids: Tuple[str, ...]
    vpc_cidr: str
    cluster_version: str
    api_access_cidrs: Tuple[str, ...]  # empty = private API endpoint only
    kms_key_arn: Optional[str]
    system_instance_type: str
    system_node_count: int
    weights_s3_uri: Optional[str]
    root_volume_gib: int
    namespace: str
    hyperpod_cluster_name: Optional[str] = None
    #: `kimi-k3:privateApi`: the user declares that `pulumi up` runs inside the VPC (or over a
    #: VPN/peering into it), so the private-only API endpoint is reachable
    private_api: bool = False
    #: the weights path (weights/settings.py: source, your bucket, the stack's mirror)
    weights: Optional[WeightsConfig] = None

    @property
    def applies_kubernetes_objects(self) -> bool:
        """This stack's own `pulumi up` talks to the EKS API (Helm releases, serving objects)."""
        return self.serving == "eks"


def _s(raw: Mapping, key: str) -> Optional[str]:
    v = raw.get(key)
    return None if v in (None, "") else str(v).strip()


def _int(raw, key, default, lo, hi) -> int:
    v = _s(raw, key)
    if v is None:
        return default
    try:
        n = int(v)
    except ValueError:
        raise ConfigError(f"kimi-k3:{key}", v, "give an integer", "is not an integer")
    if not lo <= n <= hi:
        raise ConfigError(f"kimi-k3:{key}", n, f"use {lo} to {hi}", "is out of range")
    return n


def _flag(raw, key) -> bool:
    v = _s(raw, key)
    if v is None:
        return False
    if v.lower() in ("true", "1", "yes"):
        return True
    if v.lower() in ("false", "0", "no"):
        return False
    raise ConfigError(f"kimi-k3:{key}", v, "use true or false", "is not a boolean")


def _ids(raw, key, pattern, example) -> Tuple[str, ...]:
    v = raw.get(key)
    if v in (None, "", []):
        return ()
    if isinstance(v, str):
        items = json.loads(v) if v.strip().startswith("[") else v.split(",")
    else:
        items = list(v)
    out = tuple(str(i).strip() for i in items if str(i).strip())
    for i in out:
        if not pattern.match(i):
            raise ConfigError(f"kimi-k3:{key}", i, f"give ids such as {example}", "is not a valid id")
    return out


def check_own_namespace(namespace: str) -> None:
    """Refuse a namespace this stack would declare as its own but did not create.

    The serving objects go into a `Namespace` the stack declares, so `pulumi destroy` deletes it
    with everything in it. `default` and every `kube-*` namespace (kube-system, kube-public,
    kube-node-lease, and any the cluster's system adds) exist in every cluster; the add-ons'
    Helm releases own theirs (kube-system, lws-system: addons.py). Any other namespace that
    already exists (HyperPod's existing cluster) makes the Namespace's create fail with
    AlreadyExists (pulumi-kubernetes >= 4.29.0 creates client-side; no upsert is configured),
    so it is never adopted either.
    """
    from .addons import charts

    owned = sorted({c.namespace for c in charts(multi_node=True)} - {"kube-system"})
    if namespace == "default" or namespace.startswith("kube-") or namespace in owned:
        what = "the namespace of the add-ons' Helm release" if namespace in owned else \
            "a namespace of the cluster's own (default, kube-*)"
        raise ConfigError("kimi-k3:namespace", namespace, "use a namespace of the stack's own, such as "
                          "kimi-k3 (the default): unset kimi-k3:namespace",
                          f"is {what}; the stack would declare it as its own and delete it on destroy")


def _when(raw, key) -> Optional[str]:
    v = _s(raw, key)
    if v is None:
        return None
    try:
        t = datetime.fromisoformat(v.replace("Z", "+00:00"))
    except ValueError:
        raise ConfigError(f"kimi-k3:{key}", v, "give an ISO-8601 time such as 2026-12-01T11:30:00Z",
                          "is not a time")
    if t.tzinfo is None:
        t = t.replace(tzinfo=timezone.utc)
    return t.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _fee(raw) -> float:
    """`maxUpfrontFeeUsd` as a finite number of dollars (nan, inf, 1e309 are refused)."""
    fee = raw.get("maxUpfrontFeeUsd")
    if fee in (None, ""):
        return 0.0
    try:
        value = float(str(fee).strip().replace("_", ""))
    except (TypeError, ValueError):
        raise ConfigError("kimi-k3:maxUpfrontFeeUsd", fee, "give a number of US dollars such as 120000",
                          "is not a number") from None
    if not math.isfinite(value):
        raise ConfigError("kimi-k3:maxUpfrontFeeUsd", fee, "give a finite number of US dollars such as "
                          "120000 (0 never buys)", "is not a finite amount")
    return value


def _refuse_eks_only_keys(raw: Mapping) -> None:
    """With `serving: hyperpod`, keys that only shape the EKS build are refused, one line each."""
    for key in EKS_ONLY_KEYS:
        if raw.get(key) not in (None, "", []):
            raise ConfigError(f"kimi-k3:{key}", raw[key], "unset it (pulumi config rm kimi-k3:" + key + "), "
                              "or use kimi-k3:serving=eks for a cluster this stack builds",
                              "does not apply to kimi-k3:serving=hyperpod (your HyperPod cluster "
                              "already decides it)")


#: the CRD's modelName: maxLength 63, pattern ^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62} (unanchored at the end)
_HYPERPOD_MODEL_NAME = re.compile(r"^[a-zA-Z0-9]")


def _refuse_shared_keys_hyperpod_ignores(shared: SharedSettings, s3: Optional[str]) -> None:
    """Shared keys the HyperPod path cannot honour yet: refused rather than dropped."""
    name = shared.served_model_name
    if len(name) > 63 or not _HYPERPOD_MODEL_NAME.match(name):
        raise ConfigError("kimi-k3:servedModelName", name, "use at most 63 characters starting with a letter "
                          "or digit", "is not a HyperPod modelName (InferenceEndpointConfig CRD)")
    if shared.allowed_cidrs:
        raise ConfigError("kimi-k3:allowedCidrs", list(shared.allowed_cidrs), "unset it; the HyperPod "
                          "Inference Operator decides how its endpoint is exposed (docs/aws-eks.md)",
                          "does not apply to kimi-k3:serving=hyperpod")
    if shared.accept_load not in ("auto", "off"):
        # the default `auto` is warned about at deploy time (target.py): no gate runs there
        raise ConfigError("kimi-k3:acceptLoad", shared.accept_load, "unset it (or set off) and run "
                          "`python -m components accept --endpoint URL/v1 --model NAME` once the operator "
                          "reports the endpoint", "does not apply to kimi-k3:serving=hyperpod (there is "
                          "no readiness or acceptance gate on that path)")
    if shared.stream_weights or (shared.weights_source or "hub") != "hub" or s3:
        raise ConfigError("kimi-k3:weightsSource", shared.weights_source or ("s3" if s3 else "stream"),
                          "use the hub (unset weightsSource, streamWeights and weightsS3Uri) with "
                          "serving=hyperpod", "is not wired for kimi-k3:serving=hyperpod (the endpoint "
                          "config downloads from Hugging Face)")


def parse(shared: SharedSettings) -> AwsEksConfig:
    """Typed aws-eks settings from `shared.target_config`; ConfigError on the first bad key."""
    raw = shared.target_config
    reject_unknown(raw, KEYS)
    serving = _s(raw, "serving") or "eks"
    if serving not in SERVING_MODES:
        raise ConfigError("kimi-k3:serving", serving, f"use one of {', '.join(SERVING_MODES)}",
                          "is not a serving mode")
    if serving == "hyperpod":
        _refuse_eks_only_keys(raw)
        _refuse_shared_keys_hyperpod_ignores(shared, _s(raw, "weightsS3Uri"))
    replicas = _int(raw, "replicas", 1, 1, 64)
    nodes_needed = shared.nodes * replicas
    if serving == "hyperpod" and shared.nodes != 1:
        raise ConfigError("kimi-k3:nodes", shared.nodes, "use kimi-k3:serving=eks for a replica that "
                          "spans nodes", "is more than HyperPod's one node per replica")
    if nodes_needed > MAX_BLOCK_INSTANCES:
        raise ConfigError("kimi-k3:replicas", replicas, f"keep nodes x replicas at most {MAX_BLOCK_INSTANCES}",
                          f"needs {nodes_needed} instances, more than one Capacity Block holds")

    cr = _s(raw, "capacityReservationId")
    if cr is not None and not _CR_ID.match(cr):
        raise ConfigError("kimi-k3:capacityReservationId", cr,
                          "give the id of your Capacity Block reservation (cr-0123456789abcdef0)",
                          "is not a capacity reservation id")
    count = _int(raw, "capacityInstanceCount", nodes_needed, 1, MAX_BLOCK_INSTANCES)
    if count < nodes_needed:
        raise ConfigError("kimi-k3:capacityInstanceCount", count, f"use at least {nodes_needed}",
                          f"is fewer than nodes x replicas ({nodes_needed})")
    hours = _int(raw, "capacityDurationHours", 24, 24, 182 * 24)
    if not valid_block_hours(hours):
        raise ConfigError("kimi-k3:capacityDurationHours", hours, "use 24 to 336 in steps of 24, "
                          "then multiples of 168 up to 4368", "is not a Capacity Block duration")
    max_fee = _fee(raw)
    if max_fee < 0:
        raise ConfigError("kimi-k3:maxUpfrontFeeUsd", max_fee, "use 0 (never buy) or more", "is negative")
    if cr is not None and any(_s(raw, k) for k in ("maxUpfrontFeeUsd", "capacityEarliestStart",
                                                  "capacityLatestStart", "capacityDurationHours")):
        raise ConfigError("kimi-k3:capacityReservationId", cr, "either adopt this reservation or "
                          "unset it to buy one (maxUpfrontFeeUsd, capacity* keys), not both",
                          "conflicts with the purchase keys")
    earliest, latest = _when(raw, "capacityEarliestStart"), _when(raw, "capacityLatestStart")
    if earliest and latest and latest < earliest:
        raise ConfigError("kimi-k3:capacityLatestStart", latest, "give a time after capacityEarliestStart",
                          "is before the earliest start")

    vpc_id = _s(raw, "vpcId")
    if vpc_id is not None and not _VPC_ID.match(vpc_id):
        raise ConfigError("kimi-k3:vpcId", vpc_id, "give an id such as vpc-0123456789abcdef0",
                          "is not a VPC id")
    private = _ids(raw, "privateSubnetIds", _SUBNET_ID, "subnet-0123456789abcdef0")
    public = _ids(raw, "publicSubnetIds", _SUBNET_ID, "subnet-0123456789abcdef0")
    if vpc_id and len(private) < 2:
        raise ConfigError("kimi-k3:privateSubnetIds", list(private) or None, "give at least two private "
                          "subnets of that VPC (in two zones, one in the block's zone)",
                          "is needed with kimi-k3:vpcId")
    if (private or public) and not vpc_id:
        raise ConfigError("kimi-k3:vpcId", None, "give the VPC of those subnets", "is needed with subnet ids")
    vpc_cidr = _s(raw, "vpcCidr") or "10.0.0.0/16"
    try:
        net = ipaddress.ip_network(vpc_cidr, strict=True)
    except ValueError:
        raise ConfigError("kimi-k3:vpcCidr", vpc_cidr, "give an IPv4 /16 such as 10.0.0.0/16", "is not a CIDR")
    if net.version != 4 or net.prefixlen != 16:
        raise ConfigError("kimi-k3:vpcCidr", vpc_cidr, "give an IPv4 /16 such as 10.0.0.0/16",
                          "is not an IPv4 /16")
    version = _s(raw, "clusterVersion") or "1.34"
    if not _K8S_VERSION.match(version):
        raise ConfigError("kimi-k3:clusterVersion", version, "give an EKS version such as 1.34",
                          "is not a Kubernetes minor version")
    # the Kubernetes API has its own list: a public model endpoint never implies a public API
    api_cidrs = parse_cidrs(raw.get("apiAccessCidrs"), "kimi-k3:apiAccessCidrs")
    check_exposure(api_cidrs, "kimi-k3:apiAccessCidrs", shared.allow_internet)
    private_api = _flag(raw, "privateApi")
    if private_api and api_cidrs:
        raise ConfigError("kimi-k3:privateApi", True, "either keep the API private (unset "
                          "kimi-k3:apiAccessCidrs) or open it to those CIDRs (unset kimi-k3:privateApi)",
                          "conflicts with kimi-k3:apiAccessCidrs")
    if private_api and not _s(raw, "vpcId"):
        raise ConfigError("kimi-k3:privateApi", True, "give kimi-k3:vpcId (and its subnets) of the VPC "
                          "that `pulumi up` runs in, or use kimi-k3:apiAccessCidrs with your address",
                          "needs an existing VPC (a VPC this stack creates cannot contain the machine "
                          "creating it)")
    kms = _s(raw, "kmsKeyArn")
    if kms is not None and not kms.startswith("arn:aws"):
        raise ConfigError("kimi-k3:kmsKeyArn", kms, "give a KMS key ARN (arn:aws:kms:...)", "is not an ARN")
    weights = parse_weights(shared, raw, serving)
    s3 = str(weights.s3_uri) if weights.s3_uri is not None else None
    namespace = _s(raw, "namespace") or "kimi-k3"
    if not _DNS_LABEL.match(namespace):
        raise ConfigError("kimi-k3:namespace", namespace, "use lower-case letters, digits and '-'",
                          "is not a Kubernetes namespace name")
    check_own_namespace(namespace)
    hp_cluster = _s(raw, "hyperpodClusterName")
    if serving == "hyperpod" and hp_cluster is None:
        raise ConfigError("kimi-k3:hyperpodClusterName", None, "give the name of the EKS cluster that "
                          "orchestrates your HyperPod cluster", "is needed with kimi-k3:serving=hyperpod")
    if hp_cluster is not None and not _EKS_CLUSTER_NAME.match(hp_cluster):
        raise ConfigError("kimi-k3:hyperpodClusterName", hp_cluster, "give the EKS cluster's name as "
                          "`aws eks list-clusters` shows it (letters, digits, '-', '_'; up to 100)",
                          "is not an EKS cluster name")
    return AwsEksConfig(
        serving=serving,
        capacity=CapacityRequest(cr, count, hours, earliest, latest, max_fee),
        replicas=replicas,
        vpc_id=vpc_id,
        private_subnet_ids=private,
        public_subnet_ids=public,
        vpc_cidr=str(net),
        cluster_version=version,
        api_access_cidrs=tuple(api_cidrs),
        kms_key_arn=kms,
        system_instance_type=_s(raw, "systemInstanceType") or DEFAULT_SYSTEM_INSTANCE_TYPE,
        system_node_count=_int(raw, "systemNodeCount", 2, 1, 10),
        weights_s3_uri=s3,
        root_volume_gib=_int(raw, "rootVolumeGib", 200, 50, 16384),
        namespace=namespace,
        hyperpod_cluster_name=hp_cluster,
        private_api=private_api,
        weights=weights,
    )
