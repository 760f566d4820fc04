"""`HccNetwork`: the VPC and subnet the cluster lives in, when the stack creates them.

Type token `pulumi-python:dynamic/ctyun:HccNetwork`. `vpc` and `subnet` are each "create" or an
existing id. What the stack creates carries its ownership marker in the description
(`kimi-k3 owner <token>`, ownership.py): an interrupted run finds it again by exact name and
marker and resumes; a same-named VPC or subnet without this stack's marker is never adopted -
the create stops before ordering anything and says how to choose. On destroy only what this
stack created is deleted (ids in state), waiting while CTyun still counts it in use; a VPC or
subnet given by id is only checked to exist, never changed. Any input change replaces the
network (E-HPC cannot move a cluster to another VPC or subnet).
"""

from __future__ import annotations

import ipaddress
import logging
import time
from typing import Any, Dict, List, Optional

import pulumi
from pulumi.dynamic import (CheckFailure, CheckResult, ConfigureRequest, CreateResult,
                            DiffResult, ReadResult, ResourceProvider)

from . import provider_runtime as rt
from .api import rules
from .api.errors import ApiError, CtyunError
from .api.waits import DeadlineExceeded
from .ownership import is_ours, owner_marker

log = logging.getLogger("kimi_k3.ctyun")

INPUT_DEFAULTS: Dict[str, Any] = {
    "regionID": None, "vpc": "create", "subnet": "create", "vpcName": None,
    "subnetName": None, "vpcCidr": "192.168.0.0/16", "subnetCidr": "192.168.0.0/24",
    "subnetType": "common", "ownerToken": None, "endpoint": "", "timeoutS": 900,
    "pollIntervalS": 5, "progressFile": None,
}
OUTPUT_KEYS = ("vpcID", "subnetID", "createdVpc", "createdSubnet")


class NotOurs(CtyunError):
    """A name this stack wants is taken by something it cannot prove it created."""


def check_inputs(n: Dict[str, Any]) -> List[CheckFailure]:
    f: List[CheckFailure] = []
    if not n.get("regionID"):
        f.append(CheckFailure("regionID", "regionID is required: pulumi config set "
                              "ctyun:regionId <region id>"))
    creating = [k for k in ("vpc", "subnet") if n.get(k, "create") == "create"]
    for key, what in (("vpcName", "vpc"), ("subnetName", "subnet")):
        v = n.get(key)
        if what in creating and rt.known(v) and rules.vpc_name_problem(v):
            f.append(CheckFailure(key, f"{key}={v!r} {rules.vpc_name_problem(v)} (the name "
                                  "derives from ctyun:clusterName)"))
    if creating and n.get("ownerToken") in (None, ""):
        f.append(CheckFailure("ownerToken", "ownerToken is required to mark what is created"))
    nets = {}
    for key in ("vpcCidr", "subnetCidr"):
        v = n.get(key, INPUT_DEFAULTS[key])
        if not rt.known(v):
            continue
        try:
            nets[key] = ipaddress.ip_network(str(v), strict=True)
        except ValueError:
            f.append(CheckFailure(key, f"{key}={v!r} is not a CIDR"))
    if n.get("vpc", "create") == "create" and n.get("subnet", "create") != "create":
        f.append(CheckFailure("subnet", "a new VPC needs a new subnet: set subnet to create"))
    if len(nets) == 2 and n.get("vpc", "create") == "create" and \
            not nets["subnetCidr"].subnet_of(nets["vpcCidr"]):
        f.append(CheckFailure("subnetCidr", f"subnetCidr {nets['subnetCidr']} is not inside "
                              f"vpcCidr {nets['vpcCidr']}"))
    st = n.get("subnetType", "common")
    if rt.known(st) and st not in ("common", "cbm"):
        f.append(CheckFailure("subnetType", f"subnetType={st!r} must be common or cbm"))
    return f


def _inputs(props: Dict[str, Any]) -> Dict[str, Any]:
    return rt.with_defaults(props, INPUT_DEFAULTS)


def _own_or_none(found, kind: str, name: str, token: str, hint: str):
    """The one listed object of this stack, None when none is listed, NotOurs otherwise."""
    ours = [x for x in found if is_ours(x.description, token)]
    if len(found) == 0:
        return None
    if len(ours) == 1 and len(found) == 1:
        return ours[0]
    ids = ", ".join(getattr(x, "vpc_id", None) if kind == "VPC" else x.subnet_id for x in found)
    raise NotOurs(f"{kind} {name} exists ({ids}) and is not this stack's (no kimi-k3 marker of "
                  f"this stack in its description): {hint}")


@rt.redacting
class HccNetworkProvider(ResourceProvider):
    """Creates (or checks existing) VPC and subnet. Holds nothing."""

    serialize_as_secret_always = False

    def configure(self, req: ConfigureRequest) -> None:
        rt.remember_config(req.config)

    def check(self, olds, news) -> CheckResult:
        return CheckResult(news, check_inputs(rt.strip(news)))

    def diff(self, id_, olds, news) -> DiffResult:
        o, n = _inputs(rt.strip(olds)), _inputs(rt.strip(news))
        changed = rt.changed_inputs(o, n, INPUT_DEFAULTS)
        return DiffResult(changes=bool(changed), replaces=changed, delete_before_replace=True)

    def create(self, props) -> CreateResult:
        p = _inputs(rt.strip(props))
        t = rt.transport(p)
        api = rt.vpc(p, t)
        deadline = rt.deadline_in(p["timeoutS"])
        marker = owner_marker(p["ownerToken"]) if "create" in (p["vpc"], p["subnet"]) else ""
        created_vpc = p["vpc"] == "create"
        if created_vpc:
            found = _own_or_none(api.find_vpcs(p["vpcName"], deadline), "VPC", p["vpcName"],
                                 p["ownerToken"], "choose another ctyun:clusterName (the VPC "
                                 "is named after it) or use that VPC explicitly with "
                                 "ctyun:vpcId=<id>")
            vpc_id = found.vpc_id if found else api.create_vpc(
                p["vpcName"], p["vpcCidr"], marker, deadline)
        else:
            vpc_id = p["vpc"]
            if api.get_vpc(vpc_id, deadline) is None:
                raise CtyunError(f"ctyun:vpcId={vpc_id!r}: vpc/query says it does not exist")
        created_subnet = p["subnet"] == "create"
        if created_subnet:
            same = [s for s in api.list_subnets(vpc_id, deadline) if s.name == p["subnetName"]]
            found = _own_or_none(same, "subnet", p["subnetName"], p["ownerToken"],
                                 "choose another ctyun:clusterName or give ctyun:subnetId")
            subnet_id = found.subnet_id if found else api.create_subnet(
                vpc_id, p["subnetName"], p["subnetCidr"], marker, p["subnetType"], deadline)
        else:
            subnet_id = p["subnet"]
            s = api.get_subnet(subnet_id, deadline)
            if s is None or (s.vpc_id and s.vpc_id != vpc_id):
                raise CtyunError(f"ctyun:subnetId={subnet_id!r} is not a subnet of VPC {vpc_id} "
                                 f"(vpc/query-subnet: {'absent' if s is None else s.vpc_id})")
        outs = {**p, "vpcID": vpc_id, "subnetID": subnet_id, "createdVpc": created_vpc,
                "createdSubnet": created_subnet}
        return CreateResult(f"{vpc_id}/{subnet_id}", outs)

    def read(self, id_, props) -> ReadResult:
        p, old = _inputs(rt.strip(props)), rt.strip(props)
        api = rt.vpc(p)
        deadline = rt.deadline_in(p["timeoutS"])
        if api.get_vpc(old.get("vpcID"), deadline) is None or \
                api.get_subnet(old.get("subnetID"), deadline) is None:
            return ReadResult(None, {})
        return ReadResult(id_, dict(old))

    def delete(self, id_, props) -> None:
        p, old = _inputs(rt.strip(props)), rt.strip(props)
        api = rt.vpc(p)
        deadline = rt.deadline_in(p["timeoutS"])
        if old.get("createdSubnet"):
            _until_deleted(lambda: api.delete_subnet(old["subnetID"], deadline),
                           lambda: api.get_subnet(old["subnetID"], deadline) is None,
                           f"subnet {old['subnetID']}", deadline, float(p["pollIntervalS"]))
        if old.get("createdVpc"):
            _until_deleted(lambda: api.delete_vpc(old["vpcID"], deadline),
                           lambda: api.get_vpc(old["vpcID"], deadline) is None,
                           f"VPC {old['vpcID']}", deadline, float(p["pollIntervalS"]))


def _until_deleted(delete, gone, what: str, deadline: float, poll_s: float) -> None:
    """Delete, repeating while CTyun refuses (it may still count the object in use: the codes
    for that are undocumented, CTyun contract 6.11), until it is no longer listed."""
    started = time.monotonic()
    last = ""
    while True:
        try:
            delete()
            if gone():
                return
            last = "still listed after delete"
        except ApiError as e:
            last = f"{e.code}: {e.message}"
            if gone():
                return
        if time.monotonic() >= deadline:
            raise DeadlineExceeded(f"{what} to be deleted", time.monotonic() - started, last,
                                   "the timeoutS input (ctyun:deleteTimeoutS)")
        log.info("%s not deleted yet (%s); retrying", what, last)
        time.sleep(poll_s)


class HccNetwork(pulumi.dynamic.Resource, module="ctyun", name="HccNetwork"):
    """A VPC and subnet (created and marked, or existing ones checked and passed through)."""

    vpcID: pulumi.Output[str]
    subnetID: pulumi.Output[str]
    createdVpc: pulumi.Output[bool]
    createdSubnet: pulumi.Output[bool]

    def __init__(self, resource_name: str, inputs: Dict[str, Any],
                 opts: Optional[pulumi.ResourceOptions] = None):
        unknown = set(inputs) - set(INPUT_DEFAULTS)
        if unknown:
            raise TypeError(f"HccNetwork: unknown inputs {sorted(unknown)}")
        props = {**inputs, **{k: None for k in OUTPUT_KEYS}}
        super().__init__(HccNetworkProvider(), resource_name, props, opts)
