"""What a planned stack bills per hour: the parts, each priced from the catalog, and the total.

The parts are counted from what the program registers (the resources' types and inputs, as
plan.json lists them) and from the plan (accelerator nodes): one EKS control plane per
`eks:index:Cluster`, a NAT gateway per `aws:ec2/natGateway`, a public IPv4 address per
`aws:ec2/eip`, a system node per desired node of an ON_DEMAND node group; the GPU nodes of a
Capacity Block node group (its maxSize: every replica's nodes while the block runs), or the
plan's nodes; on CTyun the A3 nodes, a separate E-HPC master when the order has one more node
than serve, the SFS file system and the EIP.

The total (`usd_per_hour`) is stated only when every part has a price, or when the user gives a
contracted price for the whole stack (`kimi-k3:usdPerHour`); otherwise it is None and
`known_usd_per_hour` is the floor the priced parts make, with the unpriced parts listed. Pure.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence

from .prices import price

CONTRACT_KEY = "kimi-k3:usdPerHour"
CATALOG = "components/cost/prices.py"


@dataclass(frozen=True)
class Part:
    key: str
    what: str
    quantity: int
    unit: str
    unit_usd_per_hour: Optional[float]
    source: str
    read: str
    note: str = ""

    @property
    def usd_per_hour(self) -> Optional[float]:
        if self.unit_usd_per_hour is None:
            return None
        return round(self.unit_usd_per_hour * self.quantity, 6)

    def to_dict(self) -> Dict[str, Any]:
        return {**asdict(self), "usd_per_hour": self.usd_per_hour}


def _part(key: str, quantity: int, note: str = "") -> Part:
    p = price(key)
    return Part(key, p.what, int(quantity), p.unit, p.usd_per_hour, p.source, p.read,
                "; ".join(x for x in (note, p.note) if x))


def _count(resources: Sequence[Mapping[str, Any]], rtype: str) -> int:
    return sum(1 for r in resources if r.get("type") == rtype)


def _inputs(r: Mapping[str, Any]) -> Mapping[str, Any]:
    i = r.get("inputs")
    return i if isinstance(i, Mapping) else {}


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def aws_parts(resources: Sequence[Mapping[str, Any]], node_shape: str, nodes: int) -> List[Part]:
    parts: List[Part] = []
    for rtype, key in (("eks:index:Cluster", "aws:eks-control-plane"),
                       ("aws:ec2/natGateway:NatGateway", "aws:nat-gateway"),
                       ("aws:ec2/eip:Eip", "aws:public-ipv4")):
        n = _count(resources, rtype)
        if n:
            parts.append(_part(key, n))
    gpu_nodes = 0
    for r in resources:
        if r.get("type") != "aws:eks/nodeGroup:NodeGroup":
            continue
        i = _inputs(r)
        scaling = i.get("scalingConfig") if isinstance(i.get("scalingConfig"), Mapping) else {}
        if i.get("capacityType") == "CAPACITY_BLOCK":
            gpu_nodes += _int(scaling.get("maxSize"))
            continue
        types = i.get("instanceTypes") if isinstance(i.get("instanceTypes"), list) else []
        desired = _int(scaling.get("desiredSize"))
        if types and desired:
            parts.append(_part(f"aws:ec2:{types[0]}", desired,
                               f"node group {r.get('name')}: {desired} desired"))
    plan = next((_inputs(r) for r in resources if r.get("type") == "pulumi-python:dynamic/aws:TrainingPlan"), None)
    if plan is not None:  # HyperPod end to end: the nodes are the training plan's
        parts.append(_part("aws:sagemaker-training-plan", _int(plan.get("instanceCount")) or nodes,
                           f"{plan.get('instanceType')} on the training plan"))
    elif not gpu_nodes:
        parts.append(_part(f"aws:ec2:{node_shape}", nodes, "the plan's nodes"))
    else:
        parts.append(_part(f"aws:ec2:{node_shape}", gpu_nodes,
                           "the Capacity Block node group's nodes while the block runs"))
    # the weights mirror (not the HyperPod operator's certificate bucket, kimi-k3-tls-*: a few kB)
    if any(not str(_inputs(r).get("bucketPrefix") or "").startswith("kimi-k3-tls-")
           for r in resources if r.get("type") == "aws:s3/bucket:Bucket"):
        parts.append(_part("aws:s3-storage", 1, "the weights mirror (about the checkpoint's size)"))
    return parts


def ctyun_parts(resources: Sequence[Mapping[str, Any]], node_shape: str, nodes: int) -> List[Part]:
    parts = [_part(f"ctyun:{node_shape}", nodes, "the serving nodes")]
    order = next((_inputs(r) for r in resources
                  if r.get("type") == "pulumi-python:dynamic/ctyun:HccClusterOrder"), None)
    if order is None:
        return parts
    extra = _int(order.get("computeNodeCount")) + 1 - nodes
    if extra > 0:
        parts.append(_part("ctyun:ehpc-master", extra, "a master outside the serving nodes"))
    if order.get("storageType") == "sfs" and _int(order.get("storageSizeGB")):
        parts.append(_part("ctyun:sfs", 1, f"{order['storageSizeGB']} GB, {order.get('sfsType') or 'sfs'}"))
    if _int(order.get("eipBandwidthMbps")):
        parts.append(_part("ctyun:eip", 1, f"{order['eipBandwidthMbps']} Mbit/s"))
    return parts


PARTS = {"aws-eks": aws_parts, "ctyun-hcc": ctyun_parts}


def check_contract(value: Optional[float]) -> Optional[float]:
    """A contracted price must be a finite, positive number of USD per hour (ValueError if not)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or value <= 0:
        raise ValueError(f"{CONTRACT_KEY} {value!r} is not a price; give the stack's contracted "
                         "USD per hour as a positive number, e.g. 98.5")
    return float(value)


def estimate(target: str, resources: Sequence[Mapping[str, Any]], node_shape: str, nodes: int,
             contract_usd_per_hour: Optional[float] = None) -> Dict[str, Any]:
    """plan.json's `cost`: {usd_per_hour, known_usd_per_hour, unknown, parts, source, ...}."""
    if target not in PARTS:
        raise KeyError(f"no cost model for target {target!r}")
    contract = check_contract(contract_usd_per_hour)
    parts = PARTS[target](resources, node_shape, nodes)
    known = round(sum(p.usd_per_hour for p in parts if p.usd_per_hour is not None), 6)
    unknown = [p.key for p in parts if p.usd_per_hour is None]
    if contract is not None:
        total, source = contract, f"contracted price ({CONTRACT_KEY})"
    elif not unknown:
        total, source = known, f"list prices ({CATALOG}), each part with its source and date"
    else:
        total, source = None, (f"list prices ({CATALOG}); no public price for {', '.join(unknown)}: "
                               f"set {CONTRACT_KEY} to your contracted price")
    return {"usd_per_hour": total, "known_usd_per_hour": known, "unknown": unknown,
            "contract_usd_per_hour": contract, "source": source,
            "parts": [p.to_dict() for p in parts]}


def summary_line(cost: Mapping[str, Any]) -> str:
    """One line for the plan's summary."""
    if cost.get("usd_per_hour") is not None:
        return f"${cost['usd_per_hour']:,.2f}/h ({cost['source']})"
    priced = [p for p in cost["parts"] if p["usd_per_hour"] is not None]
    floor = (f"at least ${cost['known_usd_per_hour']:,.2f}/h known ("
             + ", ".join(f"{p['what']} x{p['quantity']}" for p in priced) + "); ") if priced else ""
    missing = ", ".join(f"{p['what']} x{p['quantity']}" for p in cost["parts"]
                        if p["usd_per_hour"] is None)
    return f"unknown: {floor}no public price for {missing}; set {CONTRACT_KEY} to your contracted price"
