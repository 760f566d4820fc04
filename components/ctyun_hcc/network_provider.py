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
from typing import Any, Dict, List

import pulumi
from pulumi.dynamic import CheckFailure, CreateResult, ReadResult

from ..dynamic.provider import Deadline, DynamicResource
from . import provider_runtime as rt
from .api import rules
from .api.errors import ApiError, CtyunError
from .ownership import is_ours, owner_marker

log = rt.LOG

INPUT_DEFAULTS: Dict[str, Any] = {
    "regionID": None, "vpc": "create", "subnet": "create", "vpcName": None,
    "subnetName": None, "vpcCidr": "192.168.0.0/16", "subnetCidr": "192.168.0.0/24",
    "subnetType": "common", "ownerToken": None, "endpoint": "", "timeoutS": 900,
    "pollIntervalS": 5, "progressFile": None,
}
OUTPUT_KEYS = ("vpcID", "subnetID", "createdVpc", "createdSubnet")
#: what bounds a delete, as the messages name it
DELETE_SETTING = "the timeoutS input (ctyun:deleteTimeoutS)"


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


class HccNetworkProvider(rt.CtyunProvider):
    """Creates (or checks existing) VPC and subnet. Holds nothing. Any input change replaces."""

    INPUTS = INPUT_DEFAULTS
    OUTPUTS = OUTPUT_KEYS
    REPLACE_ALL = True

    def check_inputs(self, news):
        return check_inputs(news)

    def create(self, props) -> CreateResult:
        p = self.inputs(props)
        api = rt.vpc(p)
        deadline = self.deadline(p, "create").at
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
        p, old = self.inputs(props), props
        api = rt.vpc(p)
        deadline = self.deadline(p, "read").at
        if api.get_vpc(old.get("vpcID"), deadline) is None or \
                api.get_subnet(old.get("subnetID"), deadline) is None:
            return ReadResult(None, {})
        return ReadResult(id_, dict(old))

    def delete(self, id_, props) -> None:
        p, old = self.inputs(props), props
        api = rt.vpc(p)
        deadline = self.deadline(p, "delete", DELETE_SETTING)
        at, poll_s = deadline.at, float(p["pollIntervalS"])
        if old.get("createdSubnet"):
            until_deleted(lambda: api.delete_subnet(old["subnetID"], at),
                          lambda: api.get_subnet(old["subnetID"], at) is None,
                          f"subnet {old['subnetID']}", deadline, poll_s)
        if old.get("createdVpc"):
            until_deleted(lambda: api.delete_vpc(old["vpcID"], at),
                          lambda: api.get_vpc(old["vpcID"], at) is None,
                          f"VPC {old['vpcID']}", deadline, poll_s)


def until_deleted(delete, gone, what: str, deadline: Deadline, poll_s: float) -> None:
    """Delete, repeating while CTyun refuses (it may still count the object in use: the codes
    for that are undocumented, CTyun contract 6.11), until it is no longer listed."""
    def probe():
        try:
            delete()
            seen = "still listed after delete"
        except ApiError as e:
            seen = f"{e.code}: {e.message}"
        done = gone()
        if not done:
            log.info("%s not deleted yet (%s); retrying", what, seen)
        return done, None, seen

    deadline.until(f"{what} to be deleted", probe, poll_s)


class HccNetwork(DynamicResource, module="ctyun", name="HccNetwork"):
    """A VPC and subnet (created and marked, or existing ones checked and passed through)."""

    vpcID: pulumi.Output[str]
    subnetID: pulumi.Output[str]
    createdVpc: pulumi.Output[bool]
    createdSubnet: pulumi.Output[bool]

    def __init__(self, resource_name: str, inputs: Dict[str, Any], opts=None):
        super().__init__(HccNetworkProvider(), resource_name, inputs, opts)
