"""Can the machine running `pulumi up` reach the EKS API? Decided before anything is created.

The Kubernetes provider, the Helm releases and every serving object talk to the cluster's API
endpoint from wherever `pulumi up` runs. This stack creates the VPC, so that machine is outside
it unless the user says otherwise; a private-only endpoint would make the first Kubernetes call
fail after the VPC, NAT gateway, EKS and node groups exist (and maybe after a non-refundable
Capacity Block was bought). So: either `kimi-k3:apiAccessCidrs` lists the deployer's address, or
`kimi-k3:privateApi: true` declares an in-VPC run (VPN, peering, a bastion, CloudShell in the
VPC). Pure: the program raises the requirement as a ConfigError; the offline plan records it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Dict, Optional

from ..inference.errors import ConfigError
from .config import AwsEksConfig

API_KEY = "kimi-k3:apiAccessCidrs"


@dataclass(frozen=True)
class Requirement:
    """Something a real `pulumi up` needs that the offline plan can only warn about."""

    key: str
    problem: str
    fix: str

    def error(self) -> ConfigError:
        return ConfigError(self.key, None, self.fix, self.problem)

    def text(self) -> str:
        return str(self.error())

    def to_dict(self) -> Dict[str, str]:
        return asdict(self)


def api_requirement(cfg: AwsEksConfig) -> Optional[Requirement]:
    """The unmet API-reachability requirement of `cfg`, or None when `pulumi up` can reach it."""
    if not cfg.applies_kubernetes_objects or cfg.api_access_cidrs or cfg.private_api:
        return None
    return Requirement(
        API_KEY,
        "leaves the EKS API endpoint private, so this `pulumi up` (outside the VPC it creates) "
        "could not apply the Helm releases and serving objects",
        "set your address as a /32 (pulumi config set --path 'kimi-k3:apiAccessCidrs[0]' "
        "203.0.113.10/32), or declare a run from inside the VPC with kimi-k3:privateApi true")
