"""The HyperPod paths' own keys, parsed and checked before anything is created. Pure.

`kimi-k3:serving: hyperpod` has two modes, told apart by `kimi-k3:hyperpodClusterName`:

- **existing** (the name is set): an `InferenceEndpointConfig` applied to the user's HyperPod
  cluster; every key that shapes what a stack builds is refused (config.py, EKS_ONLY_KEYS and
  `E2E_KEYS` below);
- **end to end** (no name): this stack builds the VPC, EKS, the HyperPod cluster on a training
  plan, the inference operator and the endpoint. Its keys:
  `trainingPlanArn` (adopt a plan you own), or buy one: `maxUpfrontFeeUsd` (the fee cap; 0, the
  default, never buys: the offerings are listed and nothing is created), `capacityInstanceCount`,
  `capacityDurationHours`, `capacityEarliestStart`, `capacityLatestStart` (the same keys, with the
  same meaning, as the Capacity Block's); the network and cluster keys of the EKS path; and
  `clusterVersion` among the versions HyperPod documents (catalog.py says why); TLS with a
  certificate of yours instead of the operator's self-signed one: `tlsDomain` and
  `tlsCertificateArn` (an ACM certificate: the CRD's `tlsConfig.customCertificateConfig`, whose
  `acmArn` pattern is `^arn:aws:acm:[a-z0-9-]+:[0-9]{12}:certificate/[a-fA-F0-9-]+$` and whose
  `domainName` must be a specific name, no wildcard), and `tlsHostedZoneId` for the operator to
  write the name's record (`dnsConfig.hostedZoneId`, which "Requires
  tlsConfig.customCertificateConfig to be set").

Bounds are the pinned SageMaker model's (botocore 1.44.8): SearchTrainingPlanOfferings
`InstanceCount` 0-256 and `DurationHours` 1-87600; training-plan ARNs match
`arn:aws[a-z\\-]*:sagemaker:[a-z0-9\\-]*:[0-9]{12}:training-plan/.*` (CreateCluster's
`TrainingPlanArn`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from ...config.values import RawConfig
from ...inference.errors import ConfigError
from . import catalog

#: keys of the end-to-end path only (refused in the existing-cluster mode)
E2E_KEYS = ("trainingPlanArn",)
#: keys of the EKS path that do not apply end to end (HyperPod decides them), refused
NOT_E2E_KEYS = ("capacityReservationId", "capacityAllowLocalZones", "interNodeTransport", "efaInstallerSha256",
                "rootVolumeGib")
PURCHASE_KEYS = ("maxUpfrontFeeUsd", "capacityDurationHours", "capacityEarliestStart", "capacityLatestStart")
MAX_INSTANCES = 256  # SearchTrainingPlanOfferings InstanceCount
MAX_HOURS = 87600  # SearchTrainingPlanOfferings DurationHours
TRAINING_PLAN_ARN = re.compile(r"arn:aws[a-z\-]*:sagemaker:([a-z0-9\-]*):([0-9]{12}):training-plan/(.+)")
#: the operator's CRD at the pinned commit: customCertificateConfig.acmArn and .domainName
ACM_ARN = re.compile(r"^arn:aws:acm:[a-z0-9-]+:[0-9]{12}:certificate/[a-fA-F0-9-]+$")
DOMAIN = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$")


@dataclass(frozen=True)
class TrainingPlanRequest:
    """Adopt `arn`, or look for offerings (and buy the cheapest within the fee cap)."""

    arn: Optional[str]
    instance_type: str  # ml.<EC2 type>
    instance_count: int
    duration_hours: int
    earliest_start: Optional[str]  # ISO-8601 UTC; None: now
    latest_start: Optional[str]
    max_upfront_fee_usd: float  # 0: never buy, list the offerings and stop

    @property
    def adopt(self) -> bool:
        return self.arn is not None

    @property
    def lists_only(self) -> bool:
        """Neither a plan to adopt nor a fee cap: `pulumi up` lists the offerings and stops."""
        return not self.adopt and self.max_upfront_fee_usd <= 0

    def buying_notice(self) -> str:
        """What `pulumi up` will do about the training plan, said at every plan and preview
        (the same two cases as the Capacity Block's, aws_eks/config.py `buying_notice`)."""
        if self.lists_only:
            return ("no SageMaker training plan to adopt (kimi-k3:trainingPlanArn) and no fee cap "
                    "(kimi-k3:maxUpfrontFeeUsd): `pulumi up` lists the matching training plan offerings "
                    "with their upfront fees and stops before anything is created (an offline plan goes "
                    "on with a stand-in plan to show the rest); adopt one with pulumi config set "
                    "kimi-k3:trainingPlanArn arn:aws:sagemaker:..., or let kimi-k3 buy the cheapest with "
                    "pulumi config set kimi-k3:maxUpfrontFeeUsd <the most you will pay>")
        return ("kimi-k3 will look for SageMaker training plan offerings and buy the cheapest one only if "
                f"its upfront fee is at most ${self.max_upfront_fee_usd:,.2f} (kimi-k3:maxUpfrontFeeUsd). "
                "A training plan cannot be cancelled; `pulumi destroy` only forgets it.")


@dataclass(frozen=True)
class HyperPodTls:
    """Your certificate on the operator's load balancer (None: the operator's self-signed one)."""

    domain: str
    acm_arn: str
    hosted_zone_id: Optional[str] = None


@dataclass(frozen=True)
class HyperPodConfig:
    """The end-to-end HyperPod path's settings."""

    plan: TrainingPlanRequest
    tls: Optional[HyperPodTls] = None


def mode(src: RawConfig) -> str:
    """"existing" (`hyperpodClusterName` set) or "end-to-end"."""
    return "existing" if src.given("hyperpodClusterName") else "end-to-end"


def refuse_keys(src: RawConfig, keys, problem: str, fix: str) -> None:
    for key in keys:
        if src.given(key):
            raise src.refuse(key, fix.format(key=key), problem)


def refuse_e2e_keys(src: RawConfig) -> None:
    """Existing-cluster mode: the end-to-end keys are refused, one line each."""
    refuse_keys(src, E2E_KEYS, "does not apply with kimi-k3:hyperpodClusterName (your HyperPod "
                "cluster already has its capacity)", "unset it (pulumi config rm kimi-k3:{key}), or unset "
                "kimi-k3:hyperpodClusterName to let this stack build the HyperPod cluster")


def refuse_not_e2e_keys(src: RawConfig) -> None:
    refuse_keys(src, NOT_E2E_KEYS, "does not apply to the HyperPod cluster this stack builds (SageMaker "
                "decides it: the capacity is a training plan, one node per replica, HyperPod's own disks)",
                "unset it (pulumi config rm kimi-k3:{key}), or use kimi-k3:serving=eks")


def instance_type(accelerator_shape: str) -> str:
    """The HyperPod instance type of the stack's node shape, or a refusal naming the accelerator."""
    try:
        return catalog.hyperpod_instance_type(accelerator_shape)
    except KeyError:
        offered = ", ".join(sorted(catalog.INSTANCE_TYPES))
        raise ConfigError("kimi-k3:accelerator", accelerator_shape, "use kimi-k3:serving=eks, or an "
                          f"accelerator whose instance type HyperPod offers ({offered})",
                          "is not a SageMaker HyperPod instance type with training plans "
                          f"({catalog.SAGEMAKER_MODEL})") from None


def cluster_version(src: RawConfig) -> str:
    """`clusterVersion` on the end-to-end path: one HyperPod documents (catalog.K8S_VERSIONS)."""
    version = src.text("clusterVersion", catalog.DEFAULT_K8S_VERSION)
    if version not in catalog.K8S_VERSIONS:
        raise src.refuse("clusterVersion", f"use {catalog.DEFAULT_K8S_VERSION} (unset it) or another of "
                         f"{', '.join(catalog.K8S_VERSIONS)}; if AWS now lists it for HyperPod "
                         f"({catalog.K8S_VERSIONS_SOURCE}), add it to components/aws_eks/hyperpod/catalog.py",
                         "is not a Kubernetes version SageMaker HyperPod documents; CreateCluster would "
                         "refuse it only after the training plan is bought (no refund)",
                         default=catalog.DEFAULT_K8S_VERSION)
    return version


def training_plan_arn(src: RawConfig) -> Optional[str]:
    return src.matching("trainingPlanArn", TRAINING_PLAN_ARN, "give the ARN of your training plan as "
                        "`aws sagemaker list-training-plans` shows it (arn:aws:sagemaker:REGION:ACCOUNT:"
                        "training-plan/NAME)", "is not a SageMaker training plan ARN")


def check_region(arn: Optional[str], region: str) -> None:
    """An adopted plan must be in the stack's region (a plan's capacity is regional)."""
    if arn is None:
        return
    m = TRAINING_PLAN_ARN.fullmatch(arn)
    if m and m.group(1) != region:
        raise ConfigError("kimi-k3:trainingPlanArn", arn, f"use a training plan of {region}, or set "
                          f"aws:region to {m.group(1)}", f"is in {m.group(1) or 'no region'}, not in "
                          f"aws:region ({region})")


def parse(src: RawConfig, ec2_type: str, replicas: int) -> HyperPodConfig:
    """The end-to-end path's training plan request (ConfigError on the first bad key)."""
    refuse_not_e2e_keys(src)
    itype = instance_type(ec2_type)
    arn = training_plan_arn(src)
    if arn is not None and any(src.given(k) for k in PURCHASE_KEYS):
        raise src.refuse("trainingPlanArn", "either adopt this plan or unset it to buy one "
                         "(maxUpfrontFeeUsd, capacity* keys), not both", "conflicts with the purchase keys")
    count = src.integer("capacityInstanceCount", replicas, 1, MAX_INSTANCES)
    if count < replicas:
        raise src.refuse("capacityInstanceCount", f"use at least {replicas}",
                         f"is fewer than kimi-k3:replicas ({replicas}; one HyperPod node each)")
    hours = src.integer("capacityDurationHours", 24, 1, MAX_HOURS)
    max_fee = src.number("maxUpfrontFeeUsd", 0.0, "120000 (0 never buys)", " of US dollars")
    if max_fee < 0:
        raise src.refuse("maxUpfrontFeeUsd", "use 0 (never buy) or more", "is negative")
    earliest, latest = src.instant("capacityEarliestStart"), src.instant("capacityLatestStart")
    if earliest and latest and latest < earliest:
        raise src.refuse("capacityLatestStart", "give a time after capacityEarliestStart",
                         "is before the earliest start")
    return HyperPodConfig(TrainingPlanRequest(arn, itype, count, hours, earliest, latest, max_fee), tls(src))


def tls(src: RawConfig) -> Optional[HyperPodTls]:
    """`tlsDomain` + `tlsCertificateArn` (+ `tlsHostedZoneId`): your certificate on the operator's
    load balancer; none of them: the operator's own, self-signed."""
    domain, arn, zone = src.text("tlsDomain"), src.text("tlsCertificateArn"), src.text("tlsHostedZoneId")
    if not (domain or arn or zone):
        return None
    if not arn:
        raise src.refuse("tlsCertificateArn" if zone or domain else "tlsDomain",
                         "give the ACM certificate of that name (kimi-k3:tlsCertificateArn), or unset "
                         "kimi-k3:tlsDomain/tlsHostedZoneId for the operator's self-signed certificate",
                         "is needed: the HyperPod inference operator puts a certificate you have on its load "
                         "balancer (tlsConfig.customCertificateConfig), it does not request one")
    if not ACM_ARN.fullmatch(arn):
        raise src.refuse("tlsCertificateArn", "give an ACM certificate ARN (arn:aws:acm:REGION:ACCOUNT:"
                         "certificate/ID)", "is not an ACM certificate ARN, which the operator's CRD requires")
    if not domain:
        raise src.refuse("tlsDomain", "give the name of the certificate that clients use, e.g. k3.example.com",
                         "is needed with kimi-k3:tlsCertificateArn (customCertificateConfig.domainName)")
    if not DOMAIN.fullmatch(domain):
        raise src.refuse("tlsDomain", "give a specific lower-case DNS name, no wildcard, e.g. k3.example.com",
                         "is not a domain name the operator's CRD accepts")
    return HyperPodTls(domain, arn, zone)
