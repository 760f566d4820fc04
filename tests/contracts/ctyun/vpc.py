"""The VPC (`ctvpc`) APIs kimi-k3 uses, as data.

CTyun contract 3, whose source is CTyun's
Terraform provider (ctyun-it/terraform-provider-ctyun `internal/core/ctvpc/*.go`, generated
request/response structs; `internal/core/ctyun-sdk-endpoint/ctvpc/*.go`, hand-written client)
and ctyun-it/ctyun-sdk-go. `Y` below stands for `Y*`: a value-typed field of the
generated struct, always sent by the hand-written client (the VPC doc tables were not captured).
Commits: sources.py. Doc pages: https://www.ctyun.cn/document/10026755/<doc>.
"""

from __future__ import annotations

from .spec import ABSENT, PRESENT, Api, Field as F, Rule

HOST = "ctvpc-global.ctapi.ctyun.cn"   # [tf] ctyun-sdk-endpoint/ctvpc/const.go
BASE = "/v4/vpc"
TF = "[tf]"


def _q(name, type_="str", required="Y", **kw):
    return F(name, type_, required, "q", source=kw.pop("source", TF), **kw)


def _b(name, type_="str", required="Y", **kw):
    return F(name, type_, required, "b", source=kw.pop("source", TF), **kw)


def _r(name, type_="str", **kw):
    return F(name, type_, "-", "r", **kw)


def _token(required="Y"):
    return _b("clientToken", required=required, length=(1, 64),
              note="idempotency token; retention window not documented")


def _name():
    return _b("name", length=(2, 32), check="vpc_name")


def _description():
    return _b("description", required="-", length=(0, 128), check="description")


PROJECT_B = _b("projectID", required="-", note="enterprise project, default \"0\"")
PROJECT_Q = _q("projectID", required="-", note="enterprise project, default \"0\"")
PAGE_Q = (_q("pageNo", "int", "-", range=(1, 2 ** 31 - 1), note="recommended"),
          _q("pageNumber", "int", "-", range=(1, 2 ** 31 - 1), note="to be retired"),
          _q("pageSize", "int", "-", range=(1, 50), note="max 50, default 10"))
EMPTY = _r("returnObj", "obj", note="empty")


def _paged(key: str, row_fields) -> F:
    return _r("returnObj", "obj", fields=(
        _r(key, "[obj]", fields=row_fields), _r("totalCount", "int"), _r("currentCount", "int"),
        _r("totalPage", "int")))


VPC_ROW = (_r("vpcID"), _r("name"), _r("description"), _r("CIDR"), _r("ipv6Enabled", "bool"),
           _r("enableIpv6", "bool"), _r("ipv6CIDRS", "[str]"), _r("subnetIDs", "[str]"),
           _r("natGatewayIDs", "[str]"), _r("secondaryCIDRS", "[str]"), _r("projectID"))
SUBNET_ROW = (
    _r("subnetID"), _r("name"), _r("description"), _r("vpcID"),
    _r("availabilityZones", "[str]"), _r("routeTableID"), _r("networkAclID"), _r("CIDR"),
    _r("gatewayIP"), _r("dhcpIP"), _r("start"), _r("end"), _r("availableIPCount", "int"),
    _r("ipv6Enabled", "int", enum=(0, 1)), _r("enableIpv6", "bool"), _r("ipv6CIDR"),
    _r("ipv6Start"), _r("ipv6End"), _r("ipv6GatewayIP"), _r("dnsList", "[str]"),
    _r("ntpList", "[str]"), _r("type", "int", enum=(0, 1), note="0 ordinary, 1 bare metal"),
    _r("updatedAt"))
RULE_ROW = (
    _r("direction", enum=("egress", "ingress")), _r("priority", "int"),
    _r("ethertype", enum=("IPv4", "IPv6")),
    _r("protocol", enum=("ANY", "TCP", "UDP", "ICMP", "ICMP6")), _r("range"), _r("destCidrIp"),
    _r("description"), _r("createTime", note="UTC"), _r("id"), _r("securityGroupID"),
    _r("action", enum=("accept", "drop")), _r("origin"), _r("remoteSecurityGroupID"),
    _r("prefixListID"))


def _sg_row(vm_num_type: str, with_project: bool):
    rows = (_r("securityGroupName"), _r("id"),
            _r("vmNum", vm_num_type, note="int in the list, a string in describe"),
            _r("origin", note="whether it is a default group"), _r("vpcName"), _r("vpcID"),
            _r("creationTime"), _r("description"))
    if with_project:
        rows += (_r("projectID"),)
    return rows + (_r("securityGroupRuleList", "[obj]", fields=RULE_ROW),)


# ---------------------------------------------------------------- 3.1 - 3.3 VPC
CREATE_VPC = Api(
    "vpc/create", "vpc", HOST, "POST", f"{BASE}/create", "10040800", "[tf] [sdk]", "vpc",
    answer="object",
    request=(_token(), _b("regionID"), _name(),
             _b("CIDR", check="vpc_cidr", note="IPv4 block, prefix 8-28"),
             _b("enableIpv6", "bool", "-", note="default false"),
             _b("ipv6SegmentPoolID", required="-"), _description(), PROJECT_B),
    response=_r("returnObj", "obj", fields=(_r("vpcID"),)),
    notes=("VPC names are unique per account [tf resource_ctyun_vpc.go]",))
LIST_VPCS = Api(
    "vpc/new-list", "vpc", HOST, "GET", f"{BASE}/new-list", "10040788", "[tf]", "vpc",
    paged=True, answer="paged", error_field=True,
    request=(_q("regionID"), _q("vpcID", required="-", check="csv_ids"),
             _q("vpcName", required="-", note="exact or fuzzy: not stated"))
    + PAGE_Q + (PROJECT_Q,),
    response=_paged("vpcs", VPC_ROW))
QUERY_VPC = Api(
    "vpc/query", "vpc", HOST, "GET", f"{BASE}/query", "10040783", "[tf]", "vpc",
    answer="object", request=(_q("regionID"), _q("vpcID"), PROJECT_Q),
    response=_r("returnObj", "obj", fields=VPC_ROW + (_r("dhcpOptionsSetID", "[str]"),)),
    notes=("Openapi.Vpc.NotFound when it does not exist",))
DELETE_VPC = Api(
    "vpc/delete", "vpc", HOST, "POST", f"{BASE}/delete", "10040805", "[tf]", "vpc",
    answer="empty", error_field=True,
    request=(_b("regionID"), _b("vpcID"), PROJECT_B, _token("-")), response=EMPTY,
    notes=("behaviour with subnets or security groups inside: not documented",))

# ---------------------------------------------------------------- 3.4 - 3.6 subnets
CREATE_SUBNET = Api(
    "vpc/create-subnet", "vpc", HOST, "POST", f"{BASE}/create-subnet", "10040804", "[tf] [sdk]",
    "vpc", answer="object",
    request=(_token(), _b("regionID"), _b("vpcID"), _name(),
             _b("CIDR", check="subnet_cidr", note="inside the VPC's block"), _description(),
             _b("enableIpv6", "bool", "-", note="the VPC must have IPv6 too"),
             _b("dnsList", "[str]", "-", items=(0, 4), note="at most 4 IPv4 addresses"),
             _b("subnetGatewayIP", required="-"),
             _b("subnetType", required="-", enum=("common", "cbm"),
                note="common ordinary (default), cbm bare-metal subnet"),
             _b("dhcpIP", required="-", note="not the gateway address")),
    response=_r("returnObj", "obj", fields=(_r("subnetID"),)))
LIST_SUBNETS = Api(
    "vpc/new-list-subnet", "vpc", HOST, "GET", f"{BASE}/new-list-subnet", "10040797", "[tf]",
    "vpc", paged=True, answer="paged", error_field=True,
    request=(_q("regionID"), _q("vpcID", required="-"),
             _q("subnetID", required="-", check="csv_ids"))
    + PAGE_Q + (_q("clientToken", required="-", length=(1, 64)),),
    response=_paged("subnets", SUBNET_ROW))
QUERY_SUBNET = Api(
    "vpc/query-subnet", "vpc", HOST, "GET", f"{BASE}/query-subnet", "10040792", "[tf]", "vpc",
    answer="object", request=(_q("regionID"), _q("subnetID")),
    response=_r("returnObj", "obj", fields=SUBNET_ROW + (_r("createdAt"),)),
    notes=("Openapi.Subnet.NotFound when absent",))
DELETE_SUBNET = Api(
    "vpc/delete-subnet", "vpc", HOST, "POST", f"{BASE}/delete-subnet", "10040807", "[tf]",
    "vpc", answer="empty", error_field=True,
    request=(_b("regionID"), _b("subnetID"), _token("-"), PROJECT_B), response=EMPTY,
    notes=("behaviour while servers or endpoints use it: not documented",))

# ---------------------------------------------------------------- 3.7 - 3.10 security groups
CREATE_SG = Api(
    "vpc/create-security-group", "vpc", HOST, "POST", f"{BASE}/create-security-group",
    "10040938", "[tf] [sdk]", "vpc", answer="object",
    request=(_token(), _b("regionID"), _b("vpcID"), _name(), _description(), PROJECT_B),
    response=_r("returnObj", "obj", fields=(_r("securityGroupID"),)))
LIST_SGS = Api(
    "vpc/new-query-security-groups", "vpc", HOST, "GET", f"{BASE}/new-query-security-groups",
    "10040907", "[tf]", "vpc", paged=True, answer="paged",
    request=(_q("regionID"), _q("vpcID", required="-"),
             _q("queryContent", required="-", note="fuzzy match on group id or name"),
             _q("instanceID", required="-", note="groups of this server"))
    + PAGE_Q + (PROJECT_Q,),
    response=_paged("securityGroups", _sg_row("int", True)),
    notes=("the group's name is securityGroupName (not name): match it exactly yourself",))
DESCRIBE_SG = Api(
    "vpc/describe-security-group-attribute", "vpc", HOST, "GET",
    f"{BASE}/describe-security-group-attribute", "10040946", "[tf]", "vpc", answer="object",
    request=(_q("regionID"), _q("securityGroupID"), PROJECT_Q,
             _q("direction", required="-", enum=("egress", "ingress", "all"),
                note="default all")),
    response=_r("returnObj", "obj", fields=_sg_row("str", False)),
    notes=("Openapi.SecurityGroup.NotFound when absent",))
DELETE_SG = Api(
    "vpc/delete-security-group", "vpc", HOST, "POST", f"{BASE}/delete-security-group",
    "10040966", "[tf]", "vpc", answer="empty",
    request=(_token(), _b("regionID"), _b("securityGroupID"), PROJECT_B), response=EMPTY,
    notes=("behaviour while servers or a cluster use the group: not documented",))

# ---------------------------------------------------------------- 3.11 - 3.12 rules


def _rule_object(direction: str) -> F:
    return _b("securityGroupRules", "[obj]", items=(1, 2 ** 31 - 1), fields=(
        _b("direction", enum=(direction,), note=f"{direction} on this API"),
        _b("action", enum=("accept", "drop")),
        _b("priority", "int", range=(1, 100), note="lower wins"),
        _b("protocol", enum=("ANY", "TCP", "UDP", "ICMP")),
        _b("ethertype", enum=("IPv4", "IPv6")),
        _b("destCidrIp", required="C" if direction == "ingress" else "-", check="remote_cidr",
           note="the remote CIDR; required on ingress when remoteType is 0 (the default)"),
        _b("range", required="C", check="port_range",
           note="22 or 8000-9000; required for TCP/UDP, empty for ANY"),
        # [tf] ctvpc_create_sg_ingress_rule_api.go: `remoteType int32 json:"remoteType"` (no
        # omitempty: always sent) "0 表示使用 cidr，1 表示使用远端安全组，默认为 0";
        # remoteSecurityGroupID "远端安全组 id". The value 2 (prefix list) is documented only on
        # modify-security-group-ingress ([tf] ctvpc_modify_sg_ingress_rule_api.go line 58).
        _b("remoteType", "int", "-", enum=(0, 1), note="0 CIDR (default), 1 security group"),
        _b("remoteSecurityGroupID", required="C", note="for remoteType 1"),
        _description()))


RULE_RULES = (
    Rule("range-for-ports", "TCP/UDP rules need a port range", TF,
         scope="securityGroupRules[]", when=(("protocol", ("TCP", "UDP")),), require=("range",)),
    Rule("range-empty-for-any", "ANY rules carry an empty range", TF,
         scope="securityGroupRules[]", when=(("protocol", ("ANY",)),),
         restrict=(("range", ("",)),)),
    Rule("remote-group", "remoteType 1 needs remoteSecurityGroupID", TF,
         scope="securityGroupRules[]", when=(("remoteType", (1,)),),
         require=("remoteSecurityGroupID",)),
    Rule("remote-group-only-type-1", "remoteSecurityGroupID only with remoteType 1", TF,
         scope="securityGroupRules[]", when=(("remoteSecurityGroupID", (PRESENT,)),),
         restrict=(("remoteType", (1,)),), require=("remoteType",)),
)
#: ingress only: a CIDR rule (remoteType 0, the default) names its remote CIDR
INGRESS_RULES = RULE_RULES + (
    Rule("remote-cidr", "a CIDR rule (remoteType 0 or absent) needs destCidrIp", TF,
         scope="securityGroupRules[]", when=(("remoteType", (0, ABSENT)),),
         require=("destCidrIp",)),
)


def _add_rules(direction: str, doc: str) -> Api:
    return Api(
        f"vpc/create-security-group-{direction}", "vpc", HOST, "POST",
        f"{BASE}/create-security-group-{direction}", doc, "[tf] [sdk]", "vpc", answer="object",
        request=(_b("regionID"), _b("securityGroupID"), _token(), _rule_object(direction)),
        rules=INGRESS_RULES if direction == "ingress" else RULE_RULES,
        response=_r("returnObj", "obj", fields=(
            _r("sgRuleIDs", "[str]", note="in the order of the request"),)),
        notes=("listings show lower-case direction and action; duplicates: not documented",))


def _revoke(direction: str, doc: str, error_field: bool) -> Api:
    return Api(
        f"vpc/revoke-security-group-{direction}", "vpc", HOST, "POST",
        f"{BASE}/revoke-security-group-{direction}", doc, "[tf]", "vpc", answer="empty",
        error_field=error_field,
        request=(_b("regionID"), _b("securityGroupID"), _b("securityGroupRuleID"), _token()),
        response=EMPTY, notes=("Openapi.SecurityGroupRule.NotFound when the rule is absent",))


ADD_INGRESS = _add_rules("ingress", "10040961")
ADD_EGRESS = _add_rules("egress", "-")
REVOKE_INGRESS = _revoke("ingress", "10040977", True)
REVOKE_EGRESS = _revoke("egress", "10040970", False)

# ---------------------------------------------------------------- 3.13 - 3.14 EIPs
# the master's EIP, ordered by E-HPC (doc 23930 eipCreateMethod AutoCreate): found by its address
# while the cluster exists, proven released after delete-cluster (CTyun contract 6.3)
#: [tf] internal/business/eip_const.go EipStatusMap (lines 79-101); FREEZING: the new-list
#: request's status filter ([tf] ctvpc_new_eip_list_api.go)
EIP_STATUSES = ("ACTIVE", "DOWN", "ERROR", "UPDATING", "BANDING_OR_UNBANGDING", "DELETING",
                "DELETED", "EXPIRED", "FREEZING")
EIP_ROW = (_r("ID"), _r("name"), _r("eipAddress"), _r("associationID"), _r("associationType"),
           _r("privateIpAddress"), _r("bandwidth", "int", note="Mbit/s"), _r("bandwidthID"),
           _r("bandwidthType"), _r("status", enum=EIP_STATUSES), _r("tags"), _r("createdAt"),
           _r("updatedAt"), _r("expiredAt"))
SHOW_EIP = Api(
    "eip/show", "vpc", HOST, "GET", "/v4/eip/show", "10042983",
    "[tf] internal/core/ctyun-sdk-endpoint/ctvpc/eip_show.go, ctvpc_show_eip_api.go", "vpc",
    answer="object", request=(_q("regionID"), _q("eipID")),
    response=_r("returnObj", "obj", fields=EIP_ROW),
    notes=("doc https://www.ctyun.cn/document/10026753/10042983 (linked from eip_show.go)",
           "Openapi.Eip.NotFound when it does not exist ([tf] resource_ctyun_eip.go line 371 "
           "reads it as deleted)"))
LIST_EIPS = Api(
    "eip/new-list", "vpc", HOST, "POST", "/v4/eip/new-list", "-",
    "[tf] internal/core/ctvpc/ctvpc_new_eip_list_api.go", "vpc", answer="paged",
    request=(_b("clientToken", required="-", length=(1, 64)), _b("regionID"), PROJECT_B,
             _b("pageNo", "int", "-", range=(1, 2 ** 31 - 1)),
             _b("pageSize", "int", "-", range=(1, 50)),
             _b("ids", "[str]", "-", note="EIP ids (the struct always sends it; omit, never "
                                           "null)"),
             _b("status", required="-", enum=("ACTIVE", "DOWN", "FREEZING", "EXPIRED")),
             _b("ipType", required="-", enum=("ipv4", "ipv6")),
             _b("eipType", required="-", enum=("normal", "cn2")),
             _b("ip", required="-", note="the EIP's address")),
    response=_r("returnObj", "obj", fields=(
        _r("eips", "[obj]", fields=EIP_ROW + (
            _r("description"), _r("lineType"), _r("projectID"), _r("portID"),
            _r("isPackaged", "bool", note="ordered together with a server"),
            _r("billingMethod", enum=("periodic", "on_demand")))),
        _r("totalCount", "int"), _r("currentCount", "int"), _r("totalPage", "int"))),
    notes=("a POST listing (JSON body); the address filter `ip` finds the master's EIP",))

APIS = (CREATE_VPC, LIST_VPCS, QUERY_VPC, DELETE_VPC, CREATE_SUBNET, LIST_SUBNETS,
        QUERY_SUBNET, DELETE_SUBNET, CREATE_SG, LIST_SGS, DESCRIBE_SG, DELETE_SG, ADD_INGRESS,
        ADD_EGRESS, REVOKE_INGRESS, REVOKE_EGRESS, SHOW_EIP, LIST_EIPS)
