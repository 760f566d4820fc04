"""`HccNetwork`: the VPC and subnet the cluster lives in, when the stack creates them.

Type token `pulumi-python:dynamic/ctyun:HccNetwork`. Each of `vpc` and `subnet` is either
"create" or an existing id. What the stack creates it finds again by name after an interrupted
run (so it is never created twice) and deletes on destroy, waiting while CTyun still counts it
as in use (the cluster and the security group are destroyed first, but releases lag); what the
user gave is only used, never touched. Any input change replaces the network: E-HPC cannot move
a cluster to another VPC or subnet.
"""

from __future__ import annotations

import ipaddress
import time
from typing import Any, Dict, List, Optional

import pulumi
from pulumi.dynamic import (CheckFailure, CheckResult, ConfigureRequest, CreateResult,
                            DiffResult, ReadResult, ResourceProvider)

from .client import ApiError, TransportError
from .ehpc import DeadlineExceeded, new_client_token
from .provider_runtime import (changed_inputs, deadline_in, is_unknown, make_api, remember_config,
                               strip, with_defaults)

INPUT_DEFAULTS: Dict[str, Any] = {
    "regionID": None, "vpc": "create", "subnet": "create", "vpcName": None,
    "subnetName": None, "vpcCidr": "192.168.0.0/16", "subnetCidr": "192.168.0.0/24",
    "endpoint": "", "timeoutS": 900, "pollIntervalS": 5,
}


def check_inputs(n: Dict[str, Any]) -> List[CheckFailure]:
    f: List[CheckFailure] = []
    for key in ("regionID", "vpcName", "subnetName"):
        if not n.get(key):
            hint = ": pulumi config set ctyun:regionId <region id>" if key == "regionID" else ""
            f.append(CheckFailure(key, f"{key} is required{hint}"))
    nets = {}
    for key in ("vpcCidr", "subnetCidr"):
        v = n.get(key, INPUT_DEFAULTS[key])
        if is_unknown(v):
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
    return f


def _inputs(props: Dict[str, Any]) -> Dict[str, Any]:
    return with_defaults(props, INPUT_DEFAULTS)


class HccNetworkProvider(ResourceProvider):
    """Creates (or adopts by id) a VPC and a subnet. Holds nothing."""

    serialize_as_secret_always = False

    def configure(self, req: ConfigureRequest) -> None:
        remember_config(req.config)

    def check(self, olds, news) -> CheckResult:
        return CheckResult(news, check_inputs(strip(news)))

    def diff(self, id_, olds, news) -> DiffResult:
        o, n = _inputs(strip(olds)), _inputs(strip(news))
        # endpoint/timeouts only steer the provider: no update step (there is no in-place update)
        changed = changed_inputs(o, n, INPUT_DEFAULTS)
        return DiffResult(changes=bool(changed), replaces=changed, delete_before_replace=True)

    def create(self, props) -> CreateResult:
        p = _inputs(strip(props))
        api = make_api(p)
        deadline = deadline_in(p["timeoutS"])
        created_vpc = p["vpc"] == "create"
        if created_vpc:
            vpc_id = self._find_or_create(
                lambda: api.find_vpc(p["vpcName"], deadline), "vpcID",
                lambda: api.create_vpc(p["vpcName"], p["vpcCidr"], new_client_token(),
                                       deadline))
        else:
            vpc_id = p["vpc"]
            if api.get_vpc(vpc_id, deadline) is None:
                raise ApiError("/v4/vpc/new-list", "VPC.NotFound",
                               f"VPC {vpc_id} does not exist (ctyun:vpcId)")
        created_subnet = p["subnet"] == "create"
        if created_subnet:
            subnet_id = self._find_or_create(
                lambda: next((s for s in api.list_subnets(vpc_id, deadline)
                              if s.get("name") == p["subnetName"]), None), "subnetID",
                lambda: api.create_subnet(vpc_id, p["subnetName"], p["subnetCidr"],
                                          new_client_token(), deadline))
        else:
            subnet_id = p["subnet"]
            if not any(s.get("subnetID") == subnet_id for s in api.list_subnets(vpc_id,
                                                                                deadline)):
                raise ApiError("/v4/vpc/new-list-subnet", "VPC.Subnet.NotFound",
                               f"subnet {subnet_id} is not in VPC {vpc_id} (ctyun:subnetId)")
        outs = {**p, "vpcID": vpc_id, "subnetID": subnet_id, "createdVpc": created_vpc,
                "createdSubnet": created_subnet}
        return CreateResult(f"{vpc_id}/{subnet_id}", outs)

    @staticmethod
    def _find_or_create(find, key: str, make) -> str:
        found = find()
        if found is not None:
            return str(found[key])
        try:
            return make()
        except TransportError:
            found = find()  # the answer was lost; the object may exist
            if found is None:
                raise
            return str(found[key])

    def read(self, id_, props) -> ReadResult:
        p, old = _inputs(strip(props)), strip(props)
        api = make_api(p)
        deadline = deadline_in(p["timeoutS"])
        vpc_id, subnet_id = old.get("vpcID"), old.get("subnetID")
        if api.get_vpc(vpc_id, deadline) is None or not any(
                s.get("subnetID") == subnet_id for s in api.list_subnets(vpc_id, deadline)):
            return ReadResult(None, {})
        return ReadResult(id_, dict(old))

    def delete(self, id_, props) -> None:
        p, old = _inputs(strip(props)), strip(props)
        api = make_api(p)
        deadline = deadline_in(p["timeoutS"])
        if old.get("createdSubnet"):
            self._retry_in_use(lambda: api.delete_subnet(old["subnetID"], deadline), deadline,
                               f"subnet {old['subnetID']}", p)
        if old.get("createdVpc"):
            self._retry_in_use(lambda: api.delete_vpc(old["vpcID"], deadline), deadline,
                               f"VPC {old['vpcID']}", p)

    @staticmethod
    def _retry_in_use(call, deadline: float, what: str, p) -> None:
        started = time.monotonic()
        while True:
            try:
                return call()
            except ApiError as e:
                if "inuse" not in e.code.replace(".", "").lower():
                    raise
                if time.monotonic() >= deadline:
                    raise DeadlineExceeded(f"{what} to be released", time.monotonic() - started,
                                           "the timeoutS input") from None
                time.sleep(float(p["pollIntervalS"]))


class HccNetwork(pulumi.dynamic.Resource, module="ctyun", name="HccNetwork"):
    """A VPC and subnet (created, or existing ones checked and passed through)."""

    vpcID: pulumi.Output[str]
    subnetID: pulumi.Output[str]
    createdVpc: pulumi.Output[bool]
    createdSubnet: pulumi.Output[bool]

    def __init__(self, resource_name: str, inputs: Dict[str, Any],
                 opts: Optional[pulumi.ResourceOptions] = None):
        unknown = set(inputs) - set(INPUT_DEFAULTS)
        if unknown:
            raise TypeError(f"HccNetwork: unknown inputs {sorted(unknown)}")
        props = {**inputs, "vpcID": None, "subnetID": None, "createdVpc": None,
                 "createdSubnet": None}
        super().__init__(HccNetworkProvider(), resource_name, props, opts)
