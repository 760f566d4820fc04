"""The aws-eks target's own `kimi-k3:*` keys, parsed and checked before anything is created.

Pure: takes `SharedSettings.target_config` (the keys the shared parser did not claim) and returns
a typed `AwsEksConfig`, or raises ConfigError naming the key, the value and the fix. A misspelt
key is an error (`reject_unknown`), never silently ignored. `aws:region` stays AWS's own key.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional, Tuple

from ..config.values import RawConfig
from ..inference.errors import ConfigError
from ..config.shared import SharedSettings, check_exposure, reject_unknown
from .hyperpod import settings as hps
from .hyperpod.settings import HyperPodConfig
from .weights.settings import WeightsConfig
from .weights.settings import parse as parse_weights

SERVING_MODES = ("eks", "hyperpod")
#: EKS Kubernetes version by default: 1.35, in standard support until 2027-03-27 (1.34's ends
#: 2026-12-02; extended support is $0.60 per cluster-hour instead of $0.10). Dates: endoflife.date
#: (https://endoflife.date/amazon-eks, read 2026-12-01) and aws-samples' EKS operation review
#: (https://aws-samples.github.io/sample-apex-skills/docs/skills/eks-operation-review/references/cluster-lifecycle,
#: "Last verified: 2026-04-24"); prices: AWS Containers blog "Amazon EKS extended support for
#: Kubernetes versions pricing". `aws eks describe-cluster-versions` is authoritative.
DEFAULT_CLUSTER_VERSION = "1.35"
#: the on-demand system node group's type (CoreDNS, controllers, the mirror Job)
DEFAULT_SYSTEM_INSTANCE_TYPE = "m7i.xlarge"
KEYS = frozenset({
    "serving", "capacityReservationId", "capacityInstanceCount", "capacityDurationHours",
    "capacityEarliestStart", "capacityLatestStart", "maxUpfrontFeeUsd", "vpcId",
    "privateSubnetIds", "publicSubnetIds", "vpcCidr", "clusterVersion", "apiAccessCidrs",
    "kmsKeyArn", "systemInstanceType", "systemNodeCount", "weightsS3Uri", "keepWeightsMirror",
    "rootVolumeGib", "namespace", "hyperpodClusterName", "privateApi", "capacityAllowLocalZones",
    "interNodeTransport", "efaInstallerSha256", "tlsDomain", "tlsCertificateArn", "tlsHostedZoneId",
    "monitoring", "ampWorkspaceId", "trainingPlanArn",
})
#: keys that shape what this stack builds on EKS; with `serving: hyperpod` the user's HyperPod
#: cluster already decides them, so setting one is refused (never silently dropped)
EKS_ONLY_KEYS = (
    "capacityReservationId", "capacityInstanceCount", "capacityDurationHours",
    "capacityEarliestStart", "capacityLatestStart", "maxUpfrontFeeUsd", "vpcId",
    "privateSubnetIds", "publicSubnetIds", "vpcCidr", "clusterVersion", "apiAccessCidrs",
    "kmsKeyArn", "systemInstanceType", "systemNodeCount", "rootVolumeGib", "privateApi",
    "capacityAllowLocalZones", "interNodeTransport", "efaInstallerSha256", "monitoring", "ampWorkspaceId",
    "tlsDomain", "tlsCertificateArn", "tlsHostedZoneId",
)
MAX_BLOCK_INSTANCES = 64
_CR_ID = re.compile(r"^cr-[0-9a-f]{8,17}$")
_VPC_ID = re.compile(r"^vpc-[0-9a-f]{8,17}$")
_SUBNET_ID = re.compile(r"^subnet-[0-9a-f]{8,17}$")
_K8S_VERSION = re.compile(r"^1\.(2[89]|3[0-9])$")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
#: an EC2 instance type name (`family.size`; every value of the InstanceType enum of the pinned
#: botocore 1.44.8 EC2 model matches it: tests/unit/test_aws_config.py)
_INSTANCE_TYPE = re.compile(r"^[a-z][a-z0-9]*(?:-[a-z0-9]+)*\.[a-z0-9]+(?:-[a-z0-9]+)*$")
#: AWS Graviton (Arm) families: `g` among the letters after the generation (m7g, c7gn, x2gd,
#: is4gen, r8g...), and a1: AWS's list of Graviton instances (aws/aws-graviton-getting-started
#: README.md: "C6g[d], M6g[d], R6g[d], T4g, X2gd, C6gn, I4g, Im4gn, Is4gen, G5g, C7g[d][n], M7g[d],
#: R7g[d], R8g") and EC2's naming ("g - AWS Graviton processors", Amazon EC2 Instance Types,
#: "Amazon EC2 instance type naming conventions")
_GRAVITON = re.compile(r"^(?:a1|[a-z]+[0-9]+[a-z]*g[a-z]*)\.")
#: a KMS key (or alias) ARN; EKS: "The KMS key must be symmetric and created in the same Amazon Web
#: Services Region as the cluster" (botocore 1.44.8 EKS model, Provider.keyArn); group 1 = region
_KMS_ARN = re.compile(r"^arn:aws(?:-cn|-us-gov)?:kms:([a-z]{2}(?:-[a-z]+)+-[0-9]):[0-9]{12}:"
                      r"(?:key/[A-Za-z0-9-]{1,128}|alias/[A-Za-z0-9/_-]{1,250})$")
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
    #: also buy offerings in Local and Wavelength Zones (only with your own VPC: kimi-k3's has
    #: subnets in the region's Availability Zones only)
    allow_local_zones: bool = False

    @property
    def adopt(self) -> bool:
        return self.reservation_id is not None

    @property
    def lists_only(self) -> bool:
        """Neither a block to adopt nor a fee cap: `pulumi up` lists the offerings and stops
        (capacity.fee_guard refuses every offer above $0, naming each with its fee)."""
        return not self.adopt and self.max_upfront_fee_usd <= 0

    def buying_notice(self) -> str:
        """What `pulumi up` will do about the GPU capacity, said at every plan and preview."""
        if self.lists_only:
            return ("no Capacity Block to adopt (kimi-k3:capacityReservationId) and no fee cap "
                    "(kimi-k3:maxUpfrontFeeUsd): `pulumi up` lists the matching offerings with their "
                    "upfront fees and stops before anything is created (an offline plan goes on with a "
                    "stand-in block to show the rest); adopt one with pulumi config set "
                    "kimi-k3:capacityReservationId cr-..., or let kimi-k3 buy the cheapest with pulumi "
                    "config set kimi-k3:maxUpfrontFeeUsd <the most you will pay>")
        return ("kimi-k3 will look for Capacity Block offerings and buy the cheapest one only if its "
                f"upfront fee is at most ${self.max_upfront_fee_usd:,.2f} (kimi-k3:maxUpfrontFeeUsd). A "
                "purchased block cannot be cancelled; `pulumi destroy` only forgets it.")


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
    #: NCCL between the nodes of a replica: "efa" (default) or "tcp" (opted out, warned); efa/
    inter_node_transport: str = "efa"
    #: `kimi-k3:efaInstallerSha256`: the EFA installer tarball's sha256, checked before it is
    #: unpacked ("" = unverified, warned: efa/transport.py `installer_pin`)
    efa_installer_sha256: str = ""
    #: `kimi-k3:monitoring`: Prometheus, Grafana and dcgm-exporter on the cluster (monitoring.py)
    monitoring: bool = True
    #: `kimi-k3:ampWorkspaceId`: also remote-write to this Amazon Managed Prometheus workspace
    amp_workspace_id: Optional[str] = None
    #: TLS on the load balancer (tls.py), None: plain TCP (private, or allowPlaintext)
    tls: Optional["AwsTls"] = None
    #: `serving: hyperpod` without `hyperpodClusterName`: the stack builds the HyperPod cluster on
    #: a training plan (components/aws_eks/hyperpod/settings.py); None otherwise
    hyperpod: Optional["HyperPodConfig"] = None

    @property
    def hyperpod_end_to_end(self) -> bool:
        return self.serving == "hyperpod" and self.hyperpod is not None

    @property
    def applies_kubernetes_objects(self) -> bool:
        """This stack's own `pulumi up` talks to the EKS API it created (Helm releases, serving
        objects): on the EKS path and on the end-to-end HyperPod path."""
        return self.serving == "eks" or self.hyperpod_end_to_end


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
    from .monitoring import NAMESPACE as MONITORING

    owned = sorted(({c.namespace for c in charts(multi_node=True)} | {MONITORING}) - {"kube-system"})
    if namespace == "default" or namespace.startswith("kube-") or namespace in owned:
        what = "the namespace of the add-ons' Helm release" if namespace in owned else \
            "a namespace of the cluster's own (default, kube-*)"
        raise ConfigError("kimi-k3:namespace", namespace, "use a namespace of the stack's own, such as "
                          "kimi-k3 (the default): unset kimi-k3:namespace",
                          f"is {what}; the stack would declare it as its own and delete it on destroy")


def _refuse_eks_only_keys(src: RawConfig) -> None:
    """With `serving: hyperpod`, keys that only shape the EKS build are refused, one line each."""
    for key in EKS_ONLY_KEYS:
        if src.given(key):
            raise src.refuse(key, "unset it (pulumi config rm kimi-k3:" + key + "), "
                             "or use kimi-k3:serving=eks for a cluster this stack builds",
                             "does not apply to kimi-k3:serving=hyperpod (your HyperPod cluster "
                             "already decides it)")


#: the CRD's modelName: maxLength 63, pattern ^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62} (unanchored at the end)
_HYPERPOD_MODEL_NAME = re.compile(r"^[a-zA-Z0-9]")


def _refuse_shared_keys_hyperpod_ignores(shared: SharedSettings, s3: Optional[str], gate: bool = False) -> None:
    """Shared keys the HyperPod path cannot honour yet: refused rather than dropped (`gate`: the
    end-to-end path, whose readiness gate runs the acceptance checks, so acceptLoad applies)."""
    name = shared.served_model_name
    if len(name) > 63 or not _HYPERPOD_MODEL_NAME.match(name):
        raise shared.refuse("servedModelName", "use at most 63 characters starting with a letter "
                            "or digit", "is not a HyperPod modelName (InferenceEndpointConfig CRD)")
    if shared.allowed_cidrs:
        raise shared.refuse("allowedCidrs", "unset it; the HyperPod Inference Operator decides how "
                            "its endpoint is exposed (docs/aws-eks.md)",
                            "does not apply to kimi-k3:serving=hyperpod")
    if shared.accept_load not in ("auto", "off") and not gate:
        # the default `auto` is warned about at deploy time (target.py): no gate runs there
        raise shared.refuse("acceptLoad", "unset it (or set off) and run "
                            "`python -m components accept --endpoint URL/v1 --model NAME` once the "
                            "operator reports the endpoint", "does not apply to kimi-k3:serving="
                            "hyperpod (there is no readiness or acceptance gate on that path)")
    fix, problem = ("use the hub (unset weightsSource, streamWeights and weightsS3Uri) with "
                    "serving=hyperpod", "is not wired for kimi-k3:serving=hyperpod (the endpoint "
                    "config downloads from Hugging Face)")
    if (shared.weights_source or "hub") != "hub":
        raise shared.refuse("weightsSource", fix, problem)
    if shared.stream_weights:
        raise shared.refuse("streamWeights", fix, problem)
    if s3:
        raise ConfigError("kimi-k3:weightsS3Uri", s3, fix, problem)


def _replicas(shared: SharedSettings, src: RawConfig, serving: str) -> int:
    """`replicas` (a shared key), and nodes x replicas within one Capacity Block (one node each
    on HyperPod)."""
    replicas = shared.replicas
    nodes_needed = shared.nodes * replicas
    if serving == "hyperpod" and shared.nodes != 1:
        raise shared.refuse("nodes", "use kimi-k3:serving=eks for a replica that spans nodes",
                            "is more than HyperPod's one node per replica")
    if nodes_needed > MAX_BLOCK_INSTANCES:
        raise shared.refuse("replicas", f"keep nodes x replicas at most {MAX_BLOCK_INSTANCES}",
                            f"needs {nodes_needed} instances, more than one Capacity Block holds")
    return replicas


def _capacity(src: RawConfig, nodes_needed: int) -> CapacityRequest:
    """Adopt `capacityReservationId`, or the block to look for (and the fee it may cost)."""
    cr = src.matching("capacityReservationId", _CR_ID, "give the id of your Capacity Block "
                      "reservation (cr-0123456789abcdef0)", "is not a capacity reservation id")
    count = src.integer("capacityInstanceCount", nodes_needed, 1, MAX_BLOCK_INSTANCES)
    if count < nodes_needed:
        raise src.refuse("capacityInstanceCount", f"use at least {nodes_needed}",
                         f"is fewer than nodes x replicas ({nodes_needed})")
    hours = src.integer("capacityDurationHours", 24, 24, 182 * 24)
    if not valid_block_hours(hours):
        raise src.refuse("capacityDurationHours", "use 24 to 336 in steps of 24, then multiples of "
                         "168 up to 4368", "is not a Capacity Block duration")
    max_fee = src.number("maxUpfrontFeeUsd", 0.0, "120000 (0 never buys)", " of US dollars")
    if max_fee < 0:
        raise src.refuse("maxUpfrontFeeUsd", "use 0 (never buy) or more", "is negative")
    if cr is not None and any(src.given(k) for k in ("maxUpfrontFeeUsd", "capacityEarliestStart",
                                                      "capacityLatestStart", "capacityDurationHours",
                                                      "capacityAllowLocalZones")):
        raise src.refuse("capacityReservationId", "either adopt this reservation or unset it to buy "
                         "one (maxUpfrontFeeUsd, capacity* keys), not both",
                         "conflicts with the purchase keys")
    earliest, latest = src.instant("capacityEarliestStart"), src.instant("capacityLatestStart")
    if earliest and latest and latest < earliest:
        raise src.refuse("capacityLatestStart", "give a time after capacityEarliestStart",
                         "is before the earliest start")
    local = src.boolean("capacityAllowLocalZones")
    if local and not src.given("vpcId"):
        raise src.refuse("capacityAllowLocalZones", "give kimi-k3:vpcId with a private subnet in the "
                         "Local or Wavelength Zone, or unset it to buy in Availability Zones only",
                         "needs your own VPC (the VPC kimi-k3 creates has subnets in the region's "
                         "Availability Zones only, so a block bought in a Local Zone could not be used)")
    return CapacityRequest(cr, count, hours, earliest, latest, max_fee, local)


@dataclass(frozen=True)
class _Network:
    vpc_id: Optional[str]
    private: Tuple[str, ...]
    public: Tuple[str, ...]
    vpc_cidr: str


def _network(src: RawConfig) -> _Network:
    """Your VPC and subnets (all given, consistent), or the CIDR of the VPC this stack creates."""
    vpc_id = src.matching("vpcId", _VPC_ID, "give an id such as vpc-0123456789abcdef0", "is not a VPC id")
    private = src.ids("privateSubnetIds", _SUBNET_ID, "subnet-0123456789abcdef0")
    public = src.ids("publicSubnetIds", _SUBNET_ID, "subnet-0123456789abcdef0")
    if vpc_id and len(private) < 2:
        raise src.refuse("privateSubnetIds", "give at least two private subnets of that VPC (in two "
                         "zones, one in the block's zone)", "is needed with kimi-k3:vpcId")
    if (private or public) and not vpc_id:
        raise src.refuse("vpcId", "give the VPC of those subnets", "is needed with subnet ids")
    fix = "give an IPv4 /16 such as 10.0.0.0/16"
    net = src.cidr("vpcCidr", "10.0.0.0/16", fix)
    if net.version != 4 or net.prefixlen != 16:
        raise src.refuse("vpcCidr", fix, "is not an IPv4 /16")
    return _Network(vpc_id, private, public, str(net))


def _api_access(shared: SharedSettings, src: RawConfig) -> Tuple[Tuple[str, ...], bool]:
    """(apiAccessCidrs, privateApi): who reaches the Kubernetes API, and how `pulumi up` does."""
    # the Kubernetes API has its own list: a public model endpoint never implies a public API
    api_cidrs = src.cidrs("apiAccessCidrs")
    check_exposure(api_cidrs, "kimi-k3:apiAccessCidrs", shared.allow_internet,
                   src.written("apiAccessCidrs"))
    private_api = src.boolean("privateApi")
    if private_api and api_cidrs:
        raise src.refuse("privateApi", "either keep the API private (unset kimi-k3:apiAccessCidrs) "
                         "or open it to those CIDRs (unset kimi-k3:privateApi)",
                         "conflicts with kimi-k3:apiAccessCidrs")
    if private_api and not src.given("vpcId"):
        raise src.refuse("privateApi", "give kimi-k3:vpcId (and its subnets) of the VPC that "
                         "`pulumi up` runs in, or use kimi-k3:apiAccessCidrs with your address",
                         "needs an existing VPC (a VPC this stack creates cannot contain the "
                         "machine creating it)")
    return api_cidrs, private_api


def _namespace(src: RawConfig) -> str:
    namespace = src.matching("namespace", _DNS_LABEL, "use lower-case letters, digits and '-'",
                             "is not a Kubernetes namespace name", default="kimi-k3")
    check_own_namespace(namespace)
    return namespace


def _hyperpod_cluster(src: RawConfig, serving: str) -> Optional[str]:
    name = src.matching("hyperpodClusterName", _EKS_CLUSTER_NAME, "give the EKS cluster's name as "
                        "`aws eks list-clusters` shows it (letters, digits, '-', '_'; up to 100)",
                        "is not an EKS cluster name")
    return name


def _inter_node_transport(shared: SharedSettings, src: RawConfig) -> str:
    """`interNodeTransport`: efa (default) or tcp; only for a replica over several nodes."""
    from .efa.transport import DEFAULT_TRANSPORT, TRANSPORTS

    transport = src.choice("interNodeTransport", TRANSPORTS, DEFAULT_TRANSPORT,
                           "is not an inter-node transport (efa or tcp)")
    if src.given("interNodeTransport") and shared.nodes < 2:
        raise src.refuse("interNodeTransport", "unset it (a replica on one node talks over NVLink only)",
                         f"only applies to a replica over several nodes (kimi-k3:nodes is {shared.nodes})")
    return transport


def _efa_installer_sha256(shared: SharedSettings, src: RawConfig, transport: str) -> str:
    """`efaInstallerSha256`: only where the pods unpack AWS's EFA installer (several nodes, EFA)."""
    from ..config.values import sha256_hex
    from .efa.transport import EFA_INSTALLER_VERSION, needs_userspace

    sha = src.checked("efaInstallerSha256", sha256_hex, "")
    if sha and not (shared.nodes > 1 and transport == "efa" and needs_userspace(shared.image)):
        raise src.refuse("efaInstallerSha256", "unset it", "only applies where the serving pods unpack AWS's "
                         f"EFA installer {EFA_INSTALLER_VERSION} (a replica over several nodes on EFA)")
    return sha


def _system_instance_type(src: RawConfig) -> str:
    """`systemInstanceType`: an EC2 type name the system node group's x86_64 AMI
    (AL2023_x86_64_STANDARD, cluster.py) runs on; EKS would refuse an Arm type only when it
    creates the node group, after the Capacity Block was bought and the control plane made."""
    fix = f"use an x86_64 type such as {DEFAULT_SYSTEM_INSTANCE_TYPE}"
    value = src.matching("systemInstanceType", _INSTANCE_TYPE, fix, "is not an EC2 instance type",
                         default=DEFAULT_SYSTEM_INSTANCE_TYPE)
    if _GRAVITON.match(value):
        raise src.refuse("systemInstanceType", fix, "is an AWS Graviton (Arm) type; the system node group runs "
                         "the x86_64 AMI (AL2023_x86_64_STANDARD)", default=DEFAULT_SYSTEM_INSTANCE_TYPE)
    return value


#: a region of AWS's `aws` partition: botocore 1.44.8 (requirements.txt) data/endpoints.json,
#: partition "aws", regionRegex `^(us|eu|ap|sa|ca|me|af|il|mx)\-\w+\-\d+$` (ASCII, whole value).
#: kimi-k3 writes `arn:aws:` ARNs (managed policies, roles) and `*.amazonaws.com` URLs (the EKS
#: token's STS URL, AMP), so the other partitions (aws-cn, aws-us-gov, the ISO ones, aws-eusc)
#: would fail after the capacity is bought
_AWS_PARTITION_REGION = re.compile(r"(us|eu|ap|sa|ca|me|af|il|mx)-\w+-\d+", re.ASCII)
_OTHER_PARTITIONS = (("cn-", "aws-cn"), ("us-gov-", "aws-us-gov"), ("us-iso", "an AWS ISO partition"),
                     ("eu-isoe-", "aws-iso-e"), ("eusc-", "aws-eusc"))


def region_refusal(region: str) -> Optional[ConfigError]:
    """`aws:region` that is not a region of the `aws` partition: one line, before anything."""
    if _AWS_PARTITION_REGION.fullmatch(region):
        return None
    fix = "set a region of the aws partition, e.g. pulumi config set aws:region us-east-2"
    for prefix, partition in _OTHER_PARTITIONS:
        if region.startswith(prefix):
            return ConfigError("aws:region", region, fix, f"is in {partition}: kimi-k3 supports the aws partition "
                               "only (it writes arn:aws: ARNs and *.amazonaws.com URLs)")
    return ConfigError("aws:region", region, fix + " (aws ec2 describe-regions --query 'Regions[].RegionName')",
                       "is not an AWS region name")


def kms_region_refusal(arn: Optional[str], region: str) -> Optional[ConfigError]:
    """A `kmsKeyArn` of another region than `aws:region` (EKS refuses it: see `_KMS_ARN`)."""
    m = _KMS_ARN.match(arn or "")
    if m is None or m.group(1) == region:
        return None
    return ConfigError("kimi-k3:kmsKeyArn", arn, f"use a key in {region} (or unset it: kimi-k3 then creates "
                       "one)", f"is in {m.group(1)}, not in aws:region ({region}): EKS encrypts secrets only "
                       "with a KMS key of the cluster's region")


def parse(shared: SharedSettings) -> AwsEksConfig:
    """Typed aws-eks settings from `shared.target_config`; ConfigError on the first bad key."""
    raw = shared.target_config
    reject_unknown(raw, KEYS)
    src = RawConfig("kimi-k3", raw)
    serving = src.choice("serving", SERVING_MODES, "eks", "is not a serving mode")
    e2e = serving == "hyperpod" and hps.mode(src) == "end-to-end"
    if serving == "hyperpod":
        if not e2e:
            _refuse_eks_only_keys(src)
            hps.refuse_e2e_keys(src)
        else:
            hps.refuse_not_e2e_keys(src)
        _refuse_shared_keys_hyperpod_ignores(shared, src.text("weightsS3Uri"), gate=e2e)
    elif src.given("trainingPlanArn"):
        raise src.refuse("trainingPlanArn", "unset it, or use kimi-k3:serving=hyperpod (a training plan "
                         "is HyperPod's capacity)", "does not apply to kimi-k3:serving=eks (its capacity is a "
                         "Capacity Block: kimi-k3:capacityReservationId)")
    replicas = _replicas(shared, src, serving)
    hyperpod = hps.parse(src, shared.node_shape, replicas) if e2e else None
    # the HyperPod paths' capacity is a training plan (hyperpod), or the user's cluster's
    capacity = _capacity(src if serving == "eks" else RawConfig("kimi-k3", {}), shared.nodes * replicas)
    net = _network(src)
    version = hps.cluster_version(src) if e2e else src.matching(
        "clusterVersion", _K8S_VERSION, f"give an EKS version such as {DEFAULT_CLUSTER_VERSION}",
        "is not a Kubernetes minor version", default=DEFAULT_CLUSTER_VERSION)
    if e2e and not shared.has_api_key:
        raise shared.refuse("apiKey", "set one: pulumi config set --secret kimi-k3:apiKey <key> (generate it with "
                            "python3 -c 'import secrets; print(secrets.token_urlsafe(32))')",
                            "is needed by the HyperPod cluster this stack builds: the inference operator's load "
                            "balancer decides its own exposure (it may be internet-facing), so kimi-k3 never "
                            "serves through it without a key")
    if serving == "hyperpod" and shared.has_api_key and shared.api_key_public_problem:
        # the operator's load balancer decides its exposure (it may be internet-facing): the key
        # gets the floor of an endpoint open to public addresses (components/config/api_key.py)
        from ..config import api_key as api_keys
        from ..inference.errors import NOT_SHOWN

        raise ConfigError(api_keys.KEY, NOT_SHOWN, f"{api_keys.GENERATE} and `pulumi config set --secret "
                          f"{api_keys.KEY} <it>`", f"{shared.api_key_public_problem}: on serving=hyperpod the "
                          "inference operator's load balancer decides the endpoint's exposure (it may be "
                          "internet-facing)")
    api_cidrs, private_api = _api_access(shared, src)
    kms = src.matching("kmsKeyArn", _KMS_ARN, "give the ARN of a KMS key or alias in aws:region "
                       "(arn:aws:kms:REGION:ACCOUNT:key/ID)", "is not a KMS key ARN")
    weights = parse_weights(shared, src, serving)
    namespace = _namespace(src)
    hp_cluster = _hyperpod_cluster(src, serving)
    transport = _inter_node_transport(shared, src)
    return AwsEksConfig(
        serving=serving,
        capacity=capacity,
        replicas=replicas,
        vpc_id=net.vpc_id,
        private_subnet_ids=net.private,
        public_subnet_ids=net.public,
        vpc_cidr=net.vpc_cidr,
        cluster_version=version,
        api_access_cidrs=api_cidrs,
        kms_key_arn=kms,
        system_instance_type=_system_instance_type(src),
        system_node_count=src.integer("systemNodeCount", 2, 1, 10),
        weights_s3_uri=str(weights.s3_uri) if weights.s3_uri is not None else None,
        root_volume_gib=src.integer("rootVolumeGib", 200, 50, 16384),
        namespace=namespace,
        hyperpod_cluster_name=hp_cluster,
        private_api=private_api,
        weights=weights,
        inter_node_transport=transport,
        efa_installer_sha256=_efa_installer_sha256(shared, src, transport),
        **_monitoring(src),
        tls=_tls(shared, src, serving),
        hyperpod=hyperpod,
    )


def _monitoring(src: RawConfig) -> dict:
    """`kimi-k3:monitoring` (default true) and `kimi-k3:ampWorkspaceId` (needs monitoring)."""
    from .monitoring import WORKSPACE_ID

    enabled = src.boolean("monitoring", True)
    ws = src.matching("ampWorkspaceId", WORKSPACE_ID, "give the workspace id as AWS shows it, e.g. "
                      "ws-12345678-abcd-1234-abcd-123456789012", "is not an Amazon Managed "
                      "Prometheus workspace id")
    if ws and not enabled:
        raise src.refuse("ampWorkspaceId", "unset it, or set kimi-k3:monitoring to true (remote "
                         "write needs the stack's Prometheus)", "needs kimi-k3:monitoring")
    return {"monitoring": enabled, "amp_workspace_id": ws}


@dataclass(frozen=True)
class AwsTls:
    """TLS on the NLB: the name clients use, the certificate (given, or None: the stack asks ACM
    for one with DNS validation), the Route 53 zone to write the validation records in."""

    domain: str
    certificate_arn: Optional[str] = None
    hosted_zone_id: Optional[str] = None


#: ACM or IAM server certificates (the forms the Service annotation takes: cloud-provider-aws
#: docs/service_controller.md, `aws-load-balancer-ssl-cert` "IAM or ACM ARN")
_CERT_ARN = re.compile(r"^arn:aws(?:-cn|-us-gov)?:(?:acm:[a-z]{2}(?:-[a-z]+)+-[0-9]:[0-9]{12}:"
                       r"certificate/[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12}"
                       r"|iam::[0-9]{12}:server-certificate/[A-Za-z0-9+=,.@_/-]{1,128})$")
#: a DNS name of two or more labels (not an address, not a wildcard: the name clients use)
_TLS_DOMAIN = re.compile(r"^(?=.{4,253}$)(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+"
                         r"[a-z](?:[a-z0-9-]{0,61}[a-z0-9])?$")
#: Route 53 hosted zone ids (Z followed by upper-case letters and digits)
_ZONE_ID = re.compile(r"^Z[A-Z0-9]{1,31}$")
TLS_FIX = ("set kimi-k3:tlsDomain to the name clients use (the stack asks ACM for its certificate; "
           "or give kimi-k3:tlsCertificateArn)")


def _tls(shared: SharedSettings, src: RawConfig, serving: str) -> Optional[AwsTls]:
    """TLS of the endpoint: required when it is public (unless allowPlaintext), possible when
    it is private, refused when there is no load balancer to put it on."""
    from ..config.shared import refuse_plaintext

    domain = src.matching("tlsDomain", _TLS_DOMAIN, "give the DNS name clients will use, e.g. "
                          "k3.example.com (lower case, no trailing dot, no wildcard)",
                          "is not a DNS name")
    arn = src.matching("tlsCertificateArn", _CERT_ARN, "give an ACM certificate ARN "
                       "(arn:aws:acm:<region>:<account>:certificate/<id>) or an IAM "
                       "server-certificate ARN", "is not a certificate ARN")
    zone = src.matching("tlsHostedZoneId", _ZONE_ID, "give a Route 53 hosted zone id, e.g. "
                        "Z0123456789ABCDEFGHIJ", "is not a hosted zone id")
    if serving != "eks":
        return None  # hyperpod: refused with the other EKS-only keys
    if (arn or zone) and not domain:
        key = "tlsCertificateArn" if arn else "tlsHostedZoneId"
        raise src.refuse(key, "set kimi-k3:tlsDomain too: the name in the certificate, which "
                         "clients use and which you point at the load balancer",
                         "needs kimi-k3:tlsDomain")
    if arn and zone:
        raise src.refuse("tlsHostedZoneId", "unset it: the zone is only for validating a "
                         "certificate the stack requests", "conflicts with kimi-k3:tlsCertificateArn")
    if domain and not shared.allowed_cidrs:
        raise src.refuse("tlsDomain", "set kimi-k3:allowedCidrs (who may reach the endpoint) or "
                         "unset kimi-k3:tlsDomain", "has no load balancer to go on: without "
                         "kimi-k3:allowedCidrs the endpoint is inside the cluster only")
    if domain and shared.allow_plaintext:
        raise src.refuse("tlsDomain", "unset kimi-k3:allowPlaintext or kimi-k3:tlsDomain",
                         "conflicts with kimi-k3:allowPlaintext=true")
    if not domain:
        refuse_plaintext(shared, TLS_FIX)
        return None
    return AwsTls(domain, arn, zone)
