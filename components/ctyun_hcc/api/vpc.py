"""CTyun VPC (`/v4/vpc/`): VPCs, subnets, security groups and their rules.

Contract: CTyun contract 3 (CTyun's Terraform provider and Go SDK: generated request/response
structs and hand-written clients). Facts that shape this module:
- listings answer `returnObj.vpcs` / `subnets` / `securityGroups` (with totalCount/totalPage),
  paged by `pageNo`/`pageSize` <= 50 and followed to the end;
- a security group is named `securityGroupName` in listings (not `name`); its id is `id`;
- the `vpcName` filter and `queryContent` may match loosely: names are matched exactly here;
- every order carries a fresh `clientToken` (documented as keeping the order idempotent), so
  these calls, unlike E-HPC's, may be re-sent with the same body after a lost answer;
- "does not exist" is `Openapi.Vpc.NotFound`, `Openapi.Subnet.NotFound`,
  `Openapi.SecurityGroup.NotFound`, `Openapi.SecurityGroupRule.NotFound` (CTyun contract 1.4);
- rule listings show `direction`/`action` in lower case while the Terraform resource sends upper
  case (CTyun contract 5): we send lower case as listed and compare case-insensitively;
- a rule's source is a CIDR (`remoteType` 0, `destCidrIp`) or a security group (`remoteType` 1,
  `remoteSecurityGroupID`: "members of that group"; CTyun contract 3.11). `remoteType` is always
  sent, as CTyun's generated struct does (no omitempty). Listings carry no `remoteType`: a rule
  whose source is a group is known by a non-empty `remoteSecurityGroupID` only, never by its
  `destCidrIp`, whose value on such a rule is undocumented (CTyun contract 6.14);
- the master's EIP is read on the same host under `/v4/eip/` (CTyun contract 3.13-3.14):
  `eip/show` by id (`Openapi.Eip.NotFound` once released), `eip/new-list` by address.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

from . import rules
from .errors import ApiError, RequestError, ResponseError
from .parse import Obj, all_pages, page_rows, return_obj
from .transport import Operation, Transport

VPC = "/v4/vpc"


def _op(method: str, path: str, doc: str) -> Operation:
    # reads and clientToken-carrying orders may both be repeated (CTyun contract 1.6)
    return Operation("vpc", method, f"{VPC}/{path}", doc, True)


CREATE_VPC = _op("POST", "create", "10040800")
LIST_VPCS = _op("GET", "new-list", "10040788")
QUERY_VPC = _op("GET", "query", "10040783")
DELETE_VPC = _op("POST", "delete", "10040805")
CREATE_SUBNET = _op("POST", "create-subnet", "10040804")
LIST_SUBNETS = _op("GET", "new-list-subnet", "10040797")
QUERY_SUBNET = _op("GET", "query-subnet", "10040792")
DELETE_SUBNET = _op("POST", "delete-subnet", "10040807")
CREATE_SECURITY_GROUP = _op("POST", "create-security-group", "10040938")
LIST_SECURITY_GROUPS = _op("GET", "new-query-security-groups", "10040907")
DESCRIBE_SECURITY_GROUP = _op("GET", "describe-security-group-attribute", "10040946")
DELETE_SECURITY_GROUP = _op("POST", "delete-security-group", "10040966")
CREATE_INGRESS = _op("POST", "create-security-group-ingress", "10040961")
REVOKE_INGRESS = _op("POST", "revoke-security-group-ingress", "10040977")
# the EIP APIs share the VPC host (CTyun contract 3.13-3.14); both are reads
SHOW_EIP = Operation("vpc", "GET", "/v4/eip/show", "10042983", True)
LIST_EIPS = Operation("vpc", "POST", "/v4/eip/new-list", "-", True)
OPERATIONS = (CREATE_VPC, LIST_VPCS, QUERY_VPC, DELETE_VPC, CREATE_SUBNET, LIST_SUBNETS,
              QUERY_SUBNET, DELETE_SUBNET, CREATE_SECURITY_GROUP, LIST_SECURITY_GROUPS,
              DESCRIBE_SECURITY_GROUP, DELETE_SECURITY_GROUP, CREATE_INGRESS, REVOKE_INGRESS,
              SHOW_EIP, LIST_EIPS)

NOT_FOUND = {"vpc": "Openapi.Vpc.NotFound", "subnet": "Openapi.Subnet.NotFound",
             "group": "Openapi.SecurityGroup.NotFound",
             "rule": "Openapi.SecurityGroupRule.NotFound", "eip": "Openapi.Eip.NotFound"}
#: CTyun contract 3.13: the eight statuses of CTyun's Terraform provider (eip_const.go) and the
#: new-list filter's FREEZING
EIP_STATUSES = ("ACTIVE", "DOWN", "ERROR", "UPDATING", "BANDING_OR_UNBANGDING", "DELETING",
                "DELETED", "EXPIRED", "FREEZING")
EIP_GONE, EIP_GOING = ("DELETED",), ("DELETING",)
DIRECTIONS = ("ingress", "egress")
ACTIONS = ("accept", "drop")
PROTOCOLS = ("ANY", "TCP", "UDP", "ICMP", "ICMP6")
ETHERTYPES = ("IPv4", "IPv6")
SUBNET_TYPES = ("common", "cbm")


def new_client_token() -> str:
    """A fresh token (1-64 characters) for one order; its retries reuse the same body."""
    return uuid.uuid4().hex


@dataclass(frozen=True)
class Vpc:
    vpc_id: str
    name: str
    description: str
    cidr: str


@dataclass(frozen=True)
class Subnet:
    subnet_id: str
    name: str
    description: str
    vpc_id: str
    cidr: str


@dataclass(frozen=True)
class Rule:
    rule_id: str
    direction: str  # lower case
    action: str     # lower case
    protocol: str   # upper case
    ethertype: str
    port_range: str
    cidr: str
    priority: Optional[int]
    #: the rule's `description` (CTyun contract 3.9); where kimi-k3 writes its owner marker
    description: str = ""
    #: the source group of a rule whose source is a security group ("" for a CIDR rule)
    remote_group_id: str = ""
    #: the source prefix list of such a rule ("" otherwise)
    prefix_list_id: str = ""

    @property
    def source(self) -> str:
        """Where the rule admits traffic from: `group:<id>`, `prefix:<id>` or the CIDR."""
        if self.remote_group_id:
            return f"group:{self.remote_group_id}"
        if self.prefix_list_id:
            return f"prefix:{self.prefix_list_id}"
        return self.cidr

    def from_group(self, group_id: str) -> bool:
        """Is this an ingress rule whose source is `group_id` (its members)?"""
        return self.direction == "ingress" and self.remote_group_id == group_id

    def key(self) -> Tuple[str, str, str, str, str]:
        return (self.direction, self.action, self.protocol, self.port_range, self.source)


@dataclass(frozen=True)
class SecurityGroup:
    group_id: str
    name: str
    description: str
    vpc_id: str
    vm_count: Optional[int]
    rules: Tuple[Rule, ...]


@dataclass(frozen=True)
class IngressRule:
    """An accept rule, as the create-ingress API takes it: TCP (or UDP) `port` from `cidr`, or
    (`remote_group_id`) every protocol and port from the members of that security group."""

    port: int = 0
    cidr: str = ""
    description: str = ""
    priority: int = 1
    protocol: str = "TCP"
    remote_group_id: str = ""

    @classmethod
    def from_group(cls, group_id: str, description: str = "",
                   priority: int = 1) -> "IngressRule":
        """All traffic from the members of `group_id` (remoteType 1, protocol ANY, IPv4)."""
        return cls(0, "", description, priority, "ANY", group_id)

    def _group_body(self, api: str, where: str) -> Dict[str, Any]:
        # [tf] ctvpc_create_sg_ingress_rule_api.go: remoteType 1 + remoteSecurityGroupID; ANY
        # carries no range; destCidrIp is the CIDR source and is not sent (CTyun contract 3.11)
        if self.protocol != "ANY" or self.port or self.cidr:
            raise RequestError(api, f"{where}.remoteSecurityGroupID", self.remote_group_id,
                               "is for an ANY rule without port or CIDR (all traffic from the "
                               "group's members)")
        out = {"direction": "ingress", "remoteType": 1,
               "remoteSecurityGroupID": self.remote_group_id, "action": "accept",
               "priority": self.priority, "protocol": "ANY", "ethertype": "IPv4"}
        if self.description:
            out["description"] = self.description
        return out

    def body(self, api: str, index: int) -> Dict[str, Any]:
        where = f"securityGroupRules[{index}]"
        if not rules.int_in(self.priority, 1, 100):
            raise RequestError(api, f"{where}.priority", self.priority, "must be 1-100")
        problem = rules.description_problem(self.description)
        if problem:
            raise RequestError(api, f"{where}.description", self.description, problem)
        if self.remote_group_id:
            return self._group_body(api, where)
        if not rules.int_in(self.port, 1, 65535):
            raise RequestError(api, f"{where}.range", self.port, "must be a port 1-65535")
        if self.protocol not in ("TCP", "UDP"):
            raise RequestError(api, f"{where}.protocol", self.protocol, "must be TCP or UDP")
        out = {"direction": "ingress", "remoteType": 0, "action": "accept",
               "priority": self.priority, "protocol": self.protocol,
               "ethertype": "IPv6" if ":" in self.cidr else "IPv4", "destCidrIp": self.cidr,
               "range": str(self.port)}
        if self.description:
            out["description"] = self.description
        return out

    def key(self) -> Tuple[str, str, str, str, str]:
        if self.remote_group_id:
            return ("ingress", "accept", "ANY", "", f"group:{self.remote_group_id}")
        return ("ingress", "accept", self.protocol, str(self.port), self.cidr)


@dataclass(frozen=True)
class Eip:
    eip_id: str
    address: str
    status: str
    association_type: str = ""
    association_id: str = ""

    @property
    def released(self) -> bool:
        return self.status in EIP_GONE

    def label(self) -> str:
        return f"EIP {self.address} ({self.eip_id}, {self.status})"


def _text(o: Obj, key: str) -> str:
    return o.str(key, required=False, nullable=True) or ""


def parse_vpc(o: Obj) -> Vpc:
    return Vpc(o.str("vpcID", nonempty=True), o.str("name"), _text(o, "description"),
               o.str("CIDR", required=False, nullable=True) or "")


def parse_subnet(o: Obj) -> Subnet:
    if o.has("type"):
        o.enum("type", (0, 1))
    return Subnet(o.str("subnetID", nonempty=True), o.str("name"), _text(o, "description"),
                  o.str("vpcID", required=False, nullable=True) or "",
                  o.str("CIDR", required=False, nullable=True) or "")


def _lower_enum(o: Obj, key: str, values: Sequence[str]) -> str:
    raw = o.str(key)
    value = raw.lower()
    if value not in values:
        o.enum(key, values)  # raises, naming the field and the value
    return value


def parse_rule(o: Obj) -> Rule:
    protocol = o.str("protocol").upper()
    if protocol not in PROTOCOLS:
        o.enum("protocol", PROTOCOLS)
    return Rule(o.str("id", nonempty=True), _lower_enum(o, "direction", DIRECTIONS),
                _lower_enum(o, "action", ACTIONS), protocol,
                o.str("ethertype", required=False, nullable=True) or "",
                o.str("range", required=False, nullable=True) or "",
                o.str("destCidrIp", required=False, nullable=True) or "",
                o.int("priority", required=False, nullable=True),
                _text(o, "description"), _text(o, "remoteSecurityGroupID"),
                _text(o, "prefixListID"))


def parse_security_group(o: Obj) -> SecurityGroup:
    rules_ = tuple(parse_rule(r) for r in o.objs("securityGroupRuleList", required=False))
    return SecurityGroup(o.str("id", nonempty=True), o.str("securityGroupName"),
                         _text(o, "description"),
                         o.str("vpcID", required=False, nullable=True) or "",
                         # an int in the list, a string in describe (CTyun contract 5)
                         o.int_or_digits("vmNum", required=False), rules_)


def _created(op: Operation, key: str):
    return lambda value: return_obj(op.name, value).str(key, nonempty=True)


def _paged(op: Operation, key: str, parse_row):
    def read(value: Any):
        rows, total, pages = page_rows(op.name, value, key)
        return [parse_row(r) for r in rows], total, pages
    return read


def _empty(op: Operation):
    def read(value: Any) -> None:
        if value not in (None, {}, []) and not isinstance(value, dict):
            raise ResponseError(op.name, "returnObj", "is not an object", value)
    return read


def read_rule_ids(value: Any) -> List[str]:
    return return_obj(CREATE_INGRESS.name, value).strs("sgRuleIDs")


def parse_eip(o: Obj) -> Eip:
    return Eip(o.str("ID", nonempty=True), o.str("eipAddress"), o.enum("status", EIP_STATUSES),
               _text(o, "associationType"), _text(o, "associationID"))


#: how each answer (`returnObj`) is read, by API name (the methods use these; the contract
#: tests replay the documented examples through them)
ANSWERS = {
    CREATE_VPC.name: _created(CREATE_VPC, "vpcID"),
    LIST_VPCS.name: _paged(LIST_VPCS, "vpcs", parse_vpc),
    QUERY_VPC.name: lambda value: parse_vpc(return_obj(QUERY_VPC.name, value)),
    DELETE_VPC.name: _empty(DELETE_VPC),
    CREATE_SUBNET.name: _created(CREATE_SUBNET, "subnetID"),
    LIST_SUBNETS.name: _paged(LIST_SUBNETS, "subnets", parse_subnet),
    QUERY_SUBNET.name: lambda value: parse_subnet(return_obj(QUERY_SUBNET.name, value)),
    DELETE_SUBNET.name: _empty(DELETE_SUBNET),
    CREATE_SECURITY_GROUP.name: _created(CREATE_SECURITY_GROUP, "securityGroupID"),
    LIST_SECURITY_GROUPS.name: _paged(LIST_SECURITY_GROUPS, "securityGroups",
                                      parse_security_group),
    DESCRIBE_SECURITY_GROUP.name: lambda value: parse_security_group(
        return_obj(DESCRIBE_SECURITY_GROUP.name, value)),
    DELETE_SECURITY_GROUP.name: _empty(DELETE_SECURITY_GROUP),
    CREATE_INGRESS.name: read_rule_ids,
    REVOKE_INGRESS.name: _empty(REVOKE_INGRESS),
    SHOW_EIP.name: lambda value: parse_eip(return_obj(SHOW_EIP.name, value)),
    LIST_EIPS.name: _paged(LIST_EIPS, "eips", parse_eip),
}


def _name(api: str, key: str, value: str) -> None:
    problem = rules.vpc_name_problem(value)
    if problem:
        raise RequestError(api, key, value, problem)


def _description(api: str, value: str) -> None:
    problem = rules.description_problem(value)
    if problem:
        raise RequestError(api, "description", value, problem)


class VpcApi:
    """VPC calls of one region. Holds a Transport (built per provider call, never pickled)."""

    PAGE_SIZE = rules.PAGE_SIZE[1]

    def __init__(self, transport: Transport, region_id: str):
        self.t, self.region_id = transport, region_id

    def _pages(self, op: Operation, params: Dict[str, Any], key: str, deadline) -> List[Obj]:
        def page(n: int) -> Any:
            return self.t.call(op, params={"regionID": self.region_id, **params, "pageNo": n,
                                           "pageSize": self.PAGE_SIZE}, deadline=deadline)
        return all_pages(op.name, page, key)

    def _absent_ok(self, what: str, op: Operation, *, params=None, body=None, deadline=None):
        """The call's returnObj, or None when CTyun says the object does not exist."""
        try:
            return self.t.call(op, params=params, body=body, deadline=deadline)
        except ApiError as e:
            if e.code_is(NOT_FOUND[what]):
                return None
            raise

    # -- VPCs ---------------------------------------------------------------------------
    def create_vpc(self, name: str, cidr: str, description: str, deadline=None) -> str:
        api = CREATE_VPC.name
        _name(api, "name", name)
        _description(api, description)
        value = self.t.call(CREATE_VPC, body={
            "clientToken": new_client_token(), "regionID": self.region_id, "name": name,
            "CIDR": cidr, "description": description}, deadline=deadline)
        return ANSWERS[api](value)

    def find_vpcs(self, name: str, deadline=None) -> List[Vpc]:
        """VPCs named exactly `name` (the `vpcName` filter may match loosely)."""
        rows = self._pages(LIST_VPCS, {"vpcName": name}, "vpcs", deadline)
        return [v for v in (parse_vpc(o) for o in rows) if v.name == name]

    def get_vpc(self, vpc_id: str, deadline=None) -> Optional[Vpc]:
        value = self._absent_ok("vpc", QUERY_VPC, params={"regionID": self.region_id,
                                                          "vpcID": vpc_id}, deadline=deadline)
        return None if value is None else ANSWERS[QUERY_VPC.name](value)

    def delete_vpc(self, vpc_id: str, deadline=None) -> None:
        self._absent_ok("vpc", DELETE_VPC, body={"clientToken": new_client_token(),
                                                 "regionID": self.region_id, "vpcID": vpc_id},
                        deadline=deadline)

    # -- subnets ------------------------------------------------------------------------
    def create_subnet(self, vpc_id: str, name: str, cidr: str, description: str,
                      subnet_type: str = "common", deadline=None) -> str:
        api = CREATE_SUBNET.name
        _name(api, "name", name)
        _description(api, description)
        if subnet_type not in SUBNET_TYPES:
            raise RequestError(api, "subnetType", subnet_type, "must be common or cbm")
        body = {"clientToken": new_client_token(), "regionID": self.region_id, "vpcID": vpc_id,
                "name": name, "CIDR": cidr, "description": description}
        if subnet_type != "common":
            body["subnetType"] = subnet_type
        value = self.t.call(CREATE_SUBNET, body=body, deadline=deadline)
        return ANSWERS[api](value)

    def list_subnets(self, vpc_id: str, deadline=None) -> List[Subnet]:
        rows = self._pages(LIST_SUBNETS, {"vpcID": vpc_id}, "subnets", deadline)
        return [parse_subnet(o) for o in rows]

    def get_subnet(self, subnet_id: str, deadline=None) -> Optional[Subnet]:
        value = self._absent_ok("subnet", QUERY_SUBNET, params={
            "regionID": self.region_id, "subnetID": subnet_id}, deadline=deadline)
        return None if value is None else ANSWERS[QUERY_SUBNET.name](value)

    def delete_subnet(self, subnet_id: str, deadline=None) -> None:
        self._absent_ok("subnet", DELETE_SUBNET, body={
            "clientToken": new_client_token(), "regionID": self.region_id,
            "subnetID": subnet_id}, deadline=deadline)

    # -- security groups ----------------------------------------------------------------
    def create_security_group(self, vpc_id: str, name: str, description: str,
                              deadline=None) -> str:
        api = CREATE_SECURITY_GROUP.name
        _name(api, "name", name)
        _description(api, description)
        value = self.t.call(CREATE_SECURITY_GROUP, body={
            "clientToken": new_client_token(), "regionID": self.region_id, "vpcID": vpc_id,
            "name": name, "description": description}, deadline=deadline)
        return ANSWERS[api](value)

    def find_security_groups(self, vpc_id: str, name: str, deadline=None) -> List[SecurityGroup]:
        """Groups of `vpc_id` named exactly `name` (`queryContent` matches loosely)."""
        rows = self._pages(LIST_SECURITY_GROUPS, {"vpcID": vpc_id, "queryContent": name},
                           "securityGroups", deadline)
        return [g for g in (parse_security_group(o) for o in rows)
                if g.name == name and g.vpc_id in ("", vpc_id)]

    def describe_security_group(self, group_id: str, deadline=None) -> Optional[SecurityGroup]:
        value = self._absent_ok("group", DESCRIBE_SECURITY_GROUP, params={
            "regionID": self.region_id, "securityGroupID": group_id}, deadline=deadline)
        return None if value is None else ANSWERS[DESCRIBE_SECURITY_GROUP.name](value)

    def delete_security_group(self, group_id: str, deadline=None) -> None:
        self._absent_ok("group", DELETE_SECURITY_GROUP, body={
            "clientToken": new_client_token(), "regionID": self.region_id,
            "securityGroupID": group_id}, deadline=deadline)

    def add_ingress(self, group_id: str, wanted: Sequence[IngressRule],
                    deadline=None) -> List[str]:
        """Add accept rules; their ids, in the order of `wanted`."""
        api = CREATE_INGRESS.name
        value = self.t.call(CREATE_INGRESS, body={
            "regionID": self.region_id, "securityGroupID": group_id,
            "clientToken": new_client_token(),
            "securityGroupRules": [r.body(api, i) for i, r in enumerate(wanted)]},
            deadline=deadline)
        ids = read_rule_ids(value)
        if len(ids) != len(wanted):
            raise ResponseError(api, "returnObj.sgRuleIDs",
                                f"holds {len(ids)} ids for {len(wanted)} rules", ids)
        return ids

    # -- EIPs ---------------------------------------------------------------------------
    def get_eip(self, eip_id: str, deadline=None) -> Optional[Eip]:
        """The EIP `eip_id`, or None when CTyun says it does not exist (released)."""
        value = self._absent_ok("eip", SHOW_EIP, params={"regionID": self.region_id,
                                                         "eipID": eip_id}, deadline=deadline)
        return None if value is None else ANSWERS[SHOW_EIP.name](value)

    def find_eips(self, address: str, deadline=None) -> List[Eip]:
        """The EIPs whose address is exactly `address` (new-list filtered by `ip`, paged)."""
        def page(n: int) -> Any:
            return self.t.call(LIST_EIPS, body={"regionID": self.region_id, "ip": address,
                                                "pageNo": n, "pageSize": self.PAGE_SIZE},
                               deadline=deadline)
        rows = all_pages(LIST_EIPS.name, page, "eips")
        return [e for e in (parse_eip(o) for o in rows) if e.address == address]

    def revoke_ingress(self, group_id: str, rule_id: str, deadline=None) -> None:
        self._absent_ok("rule", REVOKE_INGRESS, body={
            "regionID": self.region_id, "securityGroupID": group_id,
            "securityGroupRuleID": rule_id, "clientToken": new_client_token()},
            deadline=deadline)
