"""CTyun VPC answers and rule bodies at the edges of the field-level contract.

Facts from CTyun contract 3 (tests/contracts/ctyun/vpc.py; [tf] = CTyun's Terraform
provider and Go SDK): creates answer `returnObj.<id>` (vpcID, subnetID, securityGroupID);
listings answer `returnObj.{<rows>, totalCount, totalPage}`; deletes answer no object of interest
(`returnObj` null or an object); create-security-group-ingress answers `{"sgRuleIDs": [...]}` in
the order of the request; a rule's `range` is a port 1-65535 (CTyun contract 3.11's field table). An answer
in another shape is refused naming the API and the field (never read as empty or as success).
"""

from __future__ import annotations

import pytest

from components.ctyun_hcc.api import vpc as v
from components.ctyun_hcc.api.errors import ResponseError
from tests.unit.ctyun_api_double import ok, transport

REGION = "bb9fdb42056f11eda1610242ac110002"
INGRESS = "vpc/create-security-group-ingress"


def api(script):
    t, net, _ = transport(script)
    return v.VpcApi(t, REGION), net


def shape_error(api_name: str, field: str, problem: str) -> str:
    return f"CTyun {api_name} answered in an undocumented shape: {field} {problem}"


@pytest.mark.parametrize("port", [1, 2, 65534, 65535])
def test_every_port_of_the_documented_range_is_sent_as_the_rules_range(port):
    body = v.IngressRule(port, "203.0.113.0/24").body(INGRESS, 0)
    assert body["range"] == str(port) and body["protocol"] == "TCP"


@pytest.mark.parametrize("op,key,call", [
    (v.CREATE_VPC, "vpcID", lambda a: a.create_vpc("k3-vpc", "192.168.0.0/16", "d")),
    (v.CREATE_SUBNET, "subnetID", lambda a: a.create_subnet("vpc-1", "k3-sn", "192.168.0.0/24", "d")),
    (v.CREATE_SECURITY_GROUP, "securityGroupID", lambda a: a.create_security_group("vpc-1", "k3-sg", "d")),
])
def test_a_create_answers_the_new_id_and_nothing_else_passes(op, key, call):
    a, _ = api([ok({key: "id-7"})])
    assert call(a) == "id-7"
    assert v.ANSWERS[op.name]({key: "id-7", "other": 1}) == "id-7"
    for bad, problem in [({key: ""}, "is empty"), ({}, "is missing"), (None, "is missing or null")]:
        field = "returnObj" if bad is None else f"returnObj.{key}"
        with pytest.raises(ResponseError) as e:
            v.ANSWERS[op.name](bad)
        assert str(e.value).startswith(shape_error(op.name, field, problem)), str(e.value)
        a, _ = api([ok(bad)])
        with pytest.raises(ResponseError, match=op.name):
            call(a)


@pytest.mark.parametrize("op", [v.DELETE_VPC, v.DELETE_SUBNET, v.DELETE_SECURITY_GROUP,
                                v.REVOKE_INGRESS])
def test_a_delete_answer_is_null_or_an_object(op):
    read = v.ANSWERS[op.name]
    for fine in (None, {}, [], {"requestID": "r-1"}):
        assert read(fine) is None
    for bad in ("done", 1, ["x"], True):
        with pytest.raises(ResponseError) as e:
            read(bad)
        assert str(e.value) == (shape_error(op.name, "returnObj", "is not an object")
                                + f" (got {bad!r}); see docs/ctyun-hcc.md, open questions")


@pytest.mark.parametrize("op,key,row,want", [
    (v.LIST_VPCS, "vpcs", {"vpcID": "vpc-1", "name": "k3", "CIDR": "10.0.0.0/16"},
     v.Vpc("vpc-1", "k3", "", "10.0.0.0/16")),
    (v.LIST_SUBNETS, "subnets", {"subnetID": "sn-1", "name": "k3", "vpcID": "vpc-1"},
     v.Subnet("sn-1", "k3", "", "vpc-1", "")),
    (v.LIST_SECURITY_GROUPS, "securityGroups", {"id": "sg-1", "securityGroupName": "k3"},
     v.SecurityGroup("sg-1", "k3", "", "", None, ())),
])
def test_a_listing_page_reads_its_rows_and_both_counts(op, key, row, want):
    read = v.ANSWERS[op.name]
    assert read({key: [row, row], "totalCount": 7, "totalPage": 4}) == ([want, want], 7, 4)
    with pytest.raises(ResponseError) as e:
        read({key: [row], "totalCount": 1})
    assert str(e.value).startswith(shape_error(op.name, "returnObj.totalPage", "is missing"))
    with pytest.raises(ResponseError) as e:
        read({"rows": [row], "totalCount": 1, "totalPage": 1})
    assert str(e.value).startswith(shape_error(op.name, f"returnObj.{key}", "is missing"))


def test_rule_ids_are_read_in_order_and_a_shapeless_answer_names_the_api():
    a, _ = api([ok({"sgRuleIDs": ["r-1", "r-2"]})])
    assert a.add_ingress("sg-1", [v.IngressRule(22, "203.0.113.0/24"),
                                  v.IngressRule(8000, "203.0.113.0/24")]) == ["r-1", "r-2"]
    for bad, field, problem in [(None, "returnObj", "is missing or null"),
                                ({}, "returnObj.sgRuleIDs", "is missing")]:
        a, _ = api([ok(bad)])
        with pytest.raises(ResponseError) as e:
            a.add_ingress("sg-1", [v.IngressRule(22, "203.0.113.0/24")])
        assert str(e.value).startswith(shape_error(INGRESS, field, problem)), str(e.value)
