"""The VPC operations of the emulator (CTyun contract 3), on an already-validated request.

Documented: VPC names are unique per account; `clientToken` makes an order idempotent (the
same token on the same API answers the first answer again, for `client_token_ttl_s`: the real
retention window is not documented); the *.NotFound codes of CTyun contract 1.4. Undocumented and
chosen here (hardest on a client, CTyun contract 6 item 11): deleting a VPC that still has
subnets or groups, a subnet that servers use, or a group a cluster or server uses is refused
(codes below are this emulator's); `vpcName` is matched by substring, so a client must match
the name exactly itself; subnet and group names need not be unique. Creates are synchronous.
"""

from __future__ import annotations

import ipaddress
import math
import uuid as uuidlib
from typing import Any, Dict, List

from .catalog import AZ, REGION
from .state import STACK, Refusal, Rule, State, Subnet, Vpc, new_id

CODES = {
    "Openapi.Parameter.Error": "documented: an invalid parameter (also every contract refusal)",
    "Openapi.Vpc.NotFound": "documented", "Openapi.Subnet.NotFound": "documented",
    "Openapi.SecurityGroup.NotFound": "documented",
    "Openapi.SecurityGroupRule.NotFound": "documented",
    "Openapi.Vpc.NameDuplicate": "a VPC of that name exists in the account",
    "Openapi.Vpc.InUse": "the VPC still has subnets, groups or clusters",
    "Openapi.Subnet.InUse": "servers or file-system endpoints use the subnet",
    "Openapi.Subnet.CidrConflict": "the subnet is outside the VPC or overlaps another",
    "Openapi.SecurityGroup.InUse": "a cluster or server uses the group",
    "Openapi.SecurityGroup.Default": "the default group cannot be deleted",
}


def _region(req: Dict[str, Any]) -> None:
    if req.get("regionID") != REGION:
        raise Refusal("Openapi.Parameter.Error", f"regionID {req.get('regionID')!r} not found")


def _tokened(st: State, api: str, req: Dict[str, Any], make) -> Any:
    """clientToken idempotency (CTyun contract 1.6): the same token on the same API answers the
    first answer again (even if the rest of the body differs: the token wins)."""
    token = req.get("clientToken")
    now = st.clock()
    if token:
        hit = st.tokens.get((api, token))
        if hit and now - hit[0] <= st.settings.client_token_ttl_s:
            return hit[1]
    result = make()
    if token:
        st.tokens[(api, token)] = (now, result)
    return result


def _page(rows: List[dict], req: Dict[str, Any], key: str) -> Dict[str, Any]:
    size = int(req.get("pageSize", 10))
    no = int(req.get("pageNo", req.get("pageNumber", 1)))
    part = rows[(no - 1) * size: no * size]
    return {key: part, "totalCount": len(rows), "currentCount": len(part),
            "totalPage": math.ceil(len(rows) / size)}


def _vpc(st: State, req: Dict[str, Any], api: str) -> Vpc:
    _region(req)
    v = st.vpcs.get(req["vpcID"])
    if v is None:
        raise Refusal("Openapi.Vpc.NotFound", f"vpcID {req['vpcID']!r} not found")
    st.touch(api, "vpc", v.id, v.owner)
    return v


# -------------------------------------------------------------------------- VPCs
def _vpc_row(st: State, v: Vpc) -> Dict[str, Any]:
    return {"vpcID": v.id, "name": v.name, "description": v.description, "CIDR": v.cidr,
            "ipv6Enabled": False, "enableIpv6": False, "ipv6CIDRS": [],
            "subnetIDs": [s.id for s in st.subnets.values() if s.vpc == v.id],
            "natGatewayIDs": [], "secondaryCIDRS": [], "projectID": v.project}


def create_vpc(st: State, req, api, path):
    def make():
        _region(req)
        if any(v.name == req["name"] for v in st.vpcs.values()):
            raise Refusal("Openapi.Vpc.NameDuplicate", f"a VPC named {req['name']} exists in "
                                                       "the account")
        vid = new_id("vpc-", 10)
        st.vpcs[vid] = Vpc(vid, req["name"], req["CIDR"], req.get("description", ""), STACK,
                           req.get("projectID", "0"))
        return {"vpcID": vid}
    return _tokened(st, api, req, make)


def list_vpcs(st: State, req, api, path):
    _region(req)
    ids = set(req["vpcID"].split(",")) if req.get("vpcID") else None
    name = req.get("vpcName")

    def match(v: Vpc) -> bool:
        if name is None:
            return True
        return name == v.name if st.settings.vpc_name_filter == "exact" else name in v.name
    rows = [_vpc_row(st, v) for v in st.vpcs.values()
            if (ids is None or v.id in ids) and match(v)
            and v.project == req.get("projectID", v.project)]
    return _page(rows, req, "vpcs")


def query_vpc(st: State, req, api, path):
    v = _vpc(st, req, api)
    return {**_vpc_row(st, v), "dhcpOptionsSetID": []}


def delete_vpc(st: State, req, api, path):
    def make():
        v = _vpc(st, req, api)
        inside = ([s.id for s in st.subnets.values() if s.vpc == v.id]
                  + [g.id for g in st.groups.values() if g.vpc == v.id and not g.default]
                  + [c.uuid for c in st.clusters.values() if c.vpc == v.id])
        if inside:
            raise Refusal("Openapi.Vpc.InUse", f"VPC {v.id} still holds {', '.join(inside)}")
        st.vpcs.pop(v.id)
        for g in [g for g in st.groups.values() if g.vpc == v.id]:
            st.groups.pop(g.id)
        return {}
    return _tokened(st, api, req, make)


# -------------------------------------------------------------------------- subnets
def _subnet_row(st: State, s: Subnet) -> Dict[str, Any]:
    net = ipaddress.ip_network(s.cidr)
    return {"subnetID": s.id, "name": s.name, "description": s.description, "vpcID": s.vpc,
            "availabilityZones": [s.az], "routeTableID": f"rtb-{s.vpc[4:]}",
            "networkAclID": "", "CIDR": s.cidr, "gatewayIP": str(net.network_address + 1),
            "dhcpIP": str(net.network_address + 2), "start": str(net.network_address + 3),
            "end": str(net.broadcast_address - 1),
            "availableIPCount": max(0, net.num_addresses - 4 - s.used),
            "ipv6Enabled": 0, "enableIpv6": False, "ipv6CIDR": "", "ipv6Start": "",
            "ipv6End": "", "ipv6GatewayIP": "", "dnsList": [], "ntpList": [],
            "type": s.kind, "updatedAt": s.created}


def create_subnet(st: State, req, api, path):
    def make():
        v = _vpc(st, req, api)
        net = ipaddress.ip_network(req["CIDR"])
        if not net.subnet_of(ipaddress.ip_network(v.cidr)):
            raise Refusal("Openapi.Subnet.CidrConflict", f"{net} is not inside the VPC's "
                                                         f"{v.cidr}")
        for other in st.subnets.values():
            if other.vpc == v.id and net.overlaps(ipaddress.ip_network(other.cidr)):
                raise Refusal("Openapi.Subnet.CidrConflict", f"{net} overlaps subnet "
                                                             f"{other.id} ({other.cidr})")
        sid = new_id("subnet-", 10)
        st.subnets[sid] = Subnet(sid, req["name"], v.id, str(net),
                                 1 if req.get("subnetType") == "cbm" else 0,
                                 req.get("description", ""), STACK, AZ)
        return {"subnetID": sid}
    return _tokened(st, api, req, make)


def list_subnets(st: State, req, api, path):
    _region(req)
    ids = set(req["subnetID"].split(",")) if req.get("subnetID") else None
    rows = [_subnet_row(st, s) for s in st.subnets.values()
            if (not req.get("vpcID") or s.vpc == req["vpcID"]) and (ids is None or s.id in ids)]
    return _page(rows, req, "subnets")


def _subnet(st: State, req, api) -> Subnet:
    _region(req)
    s = st.subnets.get(req["subnetID"])
    if s is None:
        raise Refusal("Openapi.Subnet.NotFound", f"subnetID {req['subnetID']!r} not found")
    st.touch(api, "subnet", s.id, s.owner)
    return s


def query_subnet(st: State, req, api, path):
    s = _subnet(st, req, api)
    return {**_subnet_row(st, s), "createdAt": s.created}


def delete_subnet(st: State, req, api, path):
    def make():
        s = _subnet(st, req, api)
        users = [n.uuid for n in st.nodes.values() if n.subnet == s.id]
        if users:
            raise Refusal("Openapi.Subnet.InUse", f"subnet {s.id} is used by {len(users)} "
                                                  f"server(s), e.g. {users[0]}")
        st.subnets.pop(s.id)
        return {}
    return _tokened(st, api, req, make)


# -------------------------------------------------------------------------- security groups
def _group(st: State, req, api):
    _region(req)
    g = st.groups.get(req["securityGroupID"])
    if g is None:
        raise Refusal("Openapi.SecurityGroup.NotFound",
                      f"securityGroupID {req['securityGroupID']!r} not found")
    st.touch(api, "securityGroup", g.id, g.owner)
    return g


def _vm_num(st: State, gid: str) -> int:
    clusters = {c.uuid for c in st.clusters.values() if c.sg == gid}
    return sum(1 for n in st.nodes.values() if n.cluster in clusters)


def _rule_row(st: State, r: Rule) -> Dict[str, Any]:
    """A rule as listings show it: no remoteType (CTyun contract 3.8-3.9); a rule whose source is
    a group carries remoteSecurityGroupID, and a destCidrIp the settings choose (undocumented,
    CTyun contract 6.14)."""
    cidr = r.destCidrIp
    if r.remoteSecurityGroupID and st.settings.group_rule_dest_cidr == "any":
        cidr = "::/0" if r.ethertype == "IPv6" else "0.0.0.0/0"
    return {"direction": r.direction, "priority": r.priority, "ethertype": r.ethertype,
            "protocol": r.protocol, "range": r.range, "destCidrIp": cidr,
            "description": r.description, "createTime": r.createTime, "id": r.id,
            "securityGroupID": r.securityGroupID, "action": r.action, "origin": r.origin,
            "remoteSecurityGroupID": r.remoteSecurityGroupID, "prefixListID": ""}


def _group_row(st: State, g, vm_num_as_text: bool, direction: str = "all"):
    vpc = st.vpcs.get(g.vpc)
    vm = _vm_num(st, g.id)
    return {"securityGroupName": g.name, "id": g.id,
            "vmNum": str(vm) if vm_num_as_text else vm,
            "origin": "default" if g.default else "user", "vpcName": vpc.name if vpc else "",
            "vpcID": g.vpc, "creationTime": g.created, "description": g.description,
            "securityGroupRuleList": [_rule_row(st, r) for r in g.rules
                                      if direction in ("all", r.direction)]}


def create_group(st: State, req, api, path):
    def make():
        v = _vpc(st, req, api)
        gid = new_id("sg-", 10)
        st.groups[gid] = st.new_group(gid, req["name"], v.id, req.get("description", ""),
                                      STACK)
        st.groups[gid].project = req.get("projectID", "0")
        return {"securityGroupID": gid}
    return _tokened(st, api, req, make)


def list_groups(st: State, req, api, path):
    _region(req)
    content = req.get("queryContent")
    rows = []
    for g in st.groups.values():
        if req.get("vpcID") and g.vpc != req["vpcID"]:
            continue
        if content and content not in g.name and content not in g.id:
            continue
        if req.get("instanceID") and not any(
                n.instance_id == req["instanceID"] and st.clusters.get(n.cluster) is not None
                and st.clusters[n.cluster].sg == g.id for n in st.nodes.values()):
            continue
        rows.append({**_group_row(st, g, False), "projectID": g.project})
    return _page(rows, req, "securityGroups")


def describe_group(st: State, req, api, path):
    g = _group(st, req, api)
    return _group_row(st, g, True, req.get("direction", "all"))


def delete_group(st: State, req, api, path):
    def make():
        g = _group(st, req, api)
        if g.default:
            raise Refusal("Openapi.SecurityGroup.Default", "the default group stays")
        users = [c.uuid for c in st.clusters.values() if c.sg == g.id]
        if users or _vm_num(st, g.id):
            raise Refusal("Openapi.SecurityGroup.InUse", f"group {g.id} is used by "
                                                         f"{', '.join(users) or 'servers'}")
        st.groups.pop(g.id)
        return {}
    return _tokened(st, api, req, make)


def _add_rules(direction: str):
    def add(st: State, req, api, path):
        def make():
            g = _group(st, req, api)
            ids = []
            for r in req["securityGroupRules"]:
                if r.get("remoteType") == 1 and r["remoteSecurityGroupID"] not in st.groups:
                    raise Refusal("Openapi.SecurityGroup.NotFound", "remoteSecurityGroupID "
                                  f"{r['remoteSecurityGroupID']!r} not found")
            for r in req["securityGroupRules"]:
                rid = str(uuidlib.uuid4())
                group_source = r.get("remoteType") == 1
                # a rule from a group keeps no CIDR: destCidrIp is the CIDR source (remoteType 0)
                g.rules.append(Rule(rid, direction, r["action"], r["priority"], r["protocol"],
                                    r["ethertype"],
                                    "" if group_source else r.get("destCidrIp", ""),
                                    r.get("range", ""), r.get("description", ""), g.id,
                                    r.get("remoteSecurityGroupID", "") if group_source else ""))
                ids.append(rid)
            return {"sgRuleIDs": ids}
        return _tokened(st, api, req, make)
    return add


def _revoke(direction: str):
    def revoke(st: State, req, api, path):
        def make():
            g = _group(st, req, api)
            rid = req["securityGroupRuleID"]
            keep = [r for r in g.rules if not (r.id == rid and r.direction == direction)]
            if len(keep) == len(g.rules):
                raise Refusal("Openapi.SecurityGroupRule.NotFound",
                              f"no {direction} rule {rid!r} in {g.id}")
            g.rules = keep
            return {}
        return _tokened(st, api, req, make)
    return revoke


# -------------------------------------------------------------------------- EIPs (3.13-3.14)
def _eip_row(e: Dict[str, Any]) -> Dict[str, Any]:
    return {"ID": e["id"], "name": f"eip-{e['cluster'][3:11] or 'free'}",
            "eipAddress": e["ip"], "associationID": e.get("association", ""),
            "associationType": "PHYSICALINSTANCE" if e.get("association") else "",
            "privateIpAddress": "", "bandwidth": e["bandwidth"], "bandwidthID": "",
            "bandwidthType": "standalone", "status": e.get("status", "ACTIVE"), "tags": "",
            "createdAt": "2026-01-01T00:00:00Z", "updatedAt": "2026-01-01T00:00:00Z",
            "expiredAt": ""}


def show_eip(st: State, req, api, path):
    """Openapi.Eip.NotFound once released ([tf] resource_ctyun_eip.go line 371)."""
    _region(req)
    e = st.eips.get(req["eipID"])
    if e is None:
        raise Refusal("Openapi.Eip.NotFound", f"eipID {req['eipID']!r} not found")
    return _eip_row(e)


def list_eips(st: State, req, api, path):
    _region(req)
    ids = set(req["ids"]) if req.get("ids") else None
    rows = [{**_eip_row(e), "description": "", "lineType": "163", "projectID": "0",
             "portID": "", "isPackaged": True, "billingMethod": "on_demand"}
            for e in st.eips.values()
            if (ids is None or e["id"] in ids) and req.get("ip") in (None, e["ip"])
            and req.get("status") in (None, e.get("status")) and e.get("status") != "DELETED"]
    return _page(rows, req, "eips")


HANDLERS = {
    "eip/show": show_eip, "eip/new-list": list_eips,
    "vpc/create": create_vpc, "vpc/new-list": list_vpcs, "vpc/query": query_vpc,
    "vpc/delete": delete_vpc, "vpc/create-subnet": create_subnet,
    "vpc/new-list-subnet": list_subnets, "vpc/query-subnet": query_subnet,
    "vpc/delete-subnet": delete_subnet, "vpc/create-security-group": create_group,
    "vpc/new-query-security-groups": list_groups,
    "vpc/describe-security-group-attribute": describe_group,
    "vpc/delete-security-group": delete_group,
    "vpc/create-security-group-ingress": _add_rules("ingress"),
    "vpc/create-security-group-egress": _add_rules("egress"),
    "vpc/revoke-security-group-ingress": _revoke("ingress"),
    "vpc/revoke-security-group-egress": _revoke("egress"),
}
