"""The CTyun contract (tests/contracts/ctyun): documented examples pass, mutations are refused,
every fact names an upstream source, every `CTyun contract N.N` cited in the repository exists.

The examples are CTyun's documented ones (examples.py names each source); each mutated request
below breaks one documented rule and must be refused with a problem naming the field.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest

from tests.contracts.ctyun import (APIS, EXAMPLES, EXAMPLES_BY_ID, envelope_keys,
                                   example_answers, field_count, get_api, validate_call,
                                   validate_envelope, validate_request, validate_response)
from tests.contracts.ctyun.convention import CLIENT_TOKEN, ENVELOPES, ERROR_CODES, HOSTS
from tests.contracts.ctyun.gaps import CONTRADICTIONS, OPEN_QUESTIONS
from tests.contracts.ctyun.sections import SECTIONS
from tests.contracts.ctyun.sources import SOURCES, TAGS, ehpc_doc_url, vpc_doc_url

ROOT = Path(__file__).resolve().parents[2]


def check(example):
    doc = example.completed() if example.completion else example.doc()
    if example.kind == "request":
        api = get_api(example.api)
        if api.method == "GET":
            return validate_request(example.api, doc, None)
        return validate_request(example.api, None, doc)
    if example.kind == "response":
        return validate_response(example.api, doc, partial=example.abbreviated)
    return validate_envelope(example.api, doc, partial=example.abbreviated)


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: e.id)
def test_every_documented_example_conforms(example):
    assert check(example) == []


TAG = re.compile(r"\[([a-z-]+)\b[^\]]*\]")


def _tags(source: str):
    return TAG.findall(source)


def _fields(fields):
    for f in fields:
        yield f
        yield from _fields(f.fields)


def test_every_fact_names_a_known_upstream_source():
    for api in APIS.values():
        assert _tags(api.source) and set(_tags(api.source)) <= set(TAGS), api.name
        facts = list(_fields(api.request)) + list(_fields((api.response,) + api.variants))
        for f in facts:
            assert set(_tags(f.source)) <= set(TAGS), (api.name, f.name, f.source)
        for r in api.rules:
            assert _tags(r.source) and set(_tags(r.source)) <= set(TAGS), (api.name, r.id)
    for g in CONTRADICTIONS + OPEN_QUESTIONS:
        assert g.sources and all(set(_tags(s)) <= set(TAGS) and _tags(s) for s in g.sources), g
    for code, (_, _, source) in ERROR_CODES.items():
        assert _tags(source) and set(_tags(source)) <= set(TAGS), code


def test_every_example_names_its_upstream_source_and_section():
    for e in EXAMPLES:
        assert _tags(e.source) and set(_tags(e.source)) <= set(TAGS), e.id
        section = re.search(r"contract (\d+(?:\.\d+)?)", e.source)
        assert section and section.group(1) in SECTIONS, e.id


def test_each_source_is_a_url_with_a_commit_or_date():
    for s in SOURCES.values():
        assert s.url.startswith("https://") and (s.commit or s.date), s.tag
        assert not s.commit or re.fullmatch(r"[0-9a-f]{40}", s.commit), s.tag
    assert ehpc_doc_url("23930").endswith("api=23930&data=106")
    assert vpc_doc_url("10040800") == "https://www.ctyun.cn/document/10026755/10040800"


CITED = re.compile(r"CTyun contract\s+(\d+(?:\.\d+)?)(?:\s*-\s*(\d+(?:\.\d+)?))?")
SCANNED = ("components", "tests", "docs", "bench", "tools")


def _repository_text():
    for top in SCANNED:
        for p in sorted((ROOT / top).rglob("*")):
            if p.suffix in (".py", ".md", ".sh", ".yaml") and p.is_file():
                yield p, p.read_text(encoding="utf-8")
    yield ROOT / "README.md", (ROOT / "README.md").read_text(encoding="utf-8")


def test_every_contract_section_cited_in_the_repository_exists():
    cited = 0
    for path, text in _repository_text():
        for m in CITED.finditer(text):
            for n in filter(None, m.groups()):
                cited += 1
                assert n in SECTIONS, f"{path.relative_to(ROOT)}: CTyun contract {n}"
    assert cited > 50


def test_the_open_questions_are_numbered_as_the_docs_table():
    assert [g.number for g in OPEN_QUESTIONS] == [f"6.{n}" for n in range(1, 20)]
    doc = (ROOT / "docs" / "ctyun-hcc.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| (\d+) \| ", doc.split("## Open questions", 1)[1], re.M)
    assert rows == [str(n) for n in range(1, 20)]


def test_the_calling_convention_agrees_with_the_api_tables():
    for product in ("ehpc", "vpc", "ebm", "sfs", "oceanfs"):
        assert {a.host for a in APIS.values() if a.product == product} == {HOSTS[product]}
    assert {a.product for a in APIS.values()} == set(HOSTS)
    for api in APIS.values():
        names = {f.name for f in api.request}
        assert ("clientToken" in names) >= (api.name in CLIENT_TOKEN["vpc"]), api.name
        assert api.product != "ehpc" or "clientToken" not in names, api.name
        assert envelope_keys(api)[:len(ENVELOPES[api.envelope]["keys"])] == \
            ENVELOPES[api.envelope]["keys"]


def test_the_abbreviated_password_is_refused_and_the_completed_one_passes():
    e = EXAMPLES_BY_ID["create-cluster-request"]
    problems = validate_request(e.api, None, e.doc())
    assert [p.field for p in problems] == ["masterNodeConfig.rootPassword"]
    assert validate_request(e.api, None, e.completed()) == []


def test_contract_size():
    counts = field_count()
    assert counts["apis"] == len(APIS) >= 30
    assert counts["request_fields"] > 250 and counts["response_fields"] > 200
    for api in APIS.values():
        assert api.path.startswith(("/v4/cthpc/", "/v4/vpc/", "/v4/eip/", "/v4/ebm/", "/v4/sfs/",
                                    "/v4/oceanfs/")) and api.method in ("GET", "POST")
        assert api.host.endswith(".ctapi.ctyun.cn") and api.doc and api.source


# ------------------------------------------------------------------------------ mutations
def create_body():
    return copy.deepcopy(EXAMPLES_BY_ID["create-cluster-request"].completed())


def expand_body():
    return EXAMPLES_BY_ID["expand-cluster-request"].doc()


def shrink_body():
    return EXAMPLES_BY_ID["shrink-cluster-request"].doc()


def _set(doc, path, value):
    *parents, last = path.split(".")
    cur = doc
    for p in parents:
        cur = cur[int(p)] if p.isdigit() else cur[p]
    if value is DELETE:
        del cur[last]
    else:
        cur[last] = value
    return doc


DELETE = object()
M, C, S = "masterNodeConfig", "computeNodeConfig", "storageConfig"
ORDER = f"{C}.ecsComputeNodeOrders.0"
SFS = {"sfsName": "k3-fs", "sfsSize": 500, "sfsType": "capacity"}
BMS_MASTER = {"specificationUUID": "dvt-x", "subnetID": "subnet-x"}

# (id, edits [(path, value)], field the problem must name, kind)
CREATE_MUTATIONS = [
    ("missing-name", [("clusterName", DELETE)], "clusterName", "missing"),
    ("blank-name", [("clusterName", " ")], "clusterName", "blank"),
    ("null-vpc", [("vpcID", None)], "vpcID", "blank"),
    ("missing-nested", [(f"{M}.imageUUID", DELETE)], f"{M}.imageUUID", "missing"),
    ("name-too-long", [("clusterName", "a" * 21)], "clusterName", "length"),
    ("name-too-short", [("clusterName", "a")], "clusterName", "length"),
    ("name-leading-digit", [("clusterName", "1abc")], "clusterName", "pattern"),
    ("name-trailing-dash", [("clusterName", "abc-")], "clusterName", "pattern"),
    ("name-double-dash", [("clusterName", "a--b")], "clusterName", "pattern"),
    ("bad-enum", [(f"{M}.nodeCreateMethod", "Create")], f"{M}.nodeCreateMethod", "enum"),
    ("bad-disk", [(f"{ORDER}.systemDiskType", "SSD-generic")], f"{ORDER}.systemDiskType",
     "enum"),
    ("int-as-string", [(f"{ORDER}.orderCount", "2")], f"{ORDER}.orderCount", "type"),
    ("bool-as-string", [("onDemand", "false")], "onDemand", "type"),
    ("bool-as-int", [("onDemand", 0)], "onDemand", "type"),
    ("float-for-int", [(f"{M}.eipBandwidth", 100.0)], f"{M}.eipBandwidth", "type"),
    ("order-count-0", [(f"{ORDER}.orderCount", 0)], f"{ORDER}.orderCount", "range"),
    ("order-count-50", [(f"{ORDER}.orderCount", 50)], f"{ORDER}.orderCount", "range"),
    ("order-count-51", [(f"{ORDER}.orderCount", 51)], f"{ORDER}.orderCount", "range"),
    ("disk-too-small", [(f"{ORDER}.systemDiskSize", 99)], f"{ORDER}.systemDiskSize", "range"),
    ("eip-too-wide", [(f"{M}.eipBandwidth", 301)], f"{M}.eipBandwidth", "range"),
    ("oceanfs-too-small", [(f"{S}.oceanFSOrder.oceanFSSize", 99)],
     f"{S}.oceanFSOrder.oceanFSSize", "range"),
    ("unknown-top", [("clientToken", "t-1")], "clientToken", "unknown"),
    ("unknown-nested", [(f"{M}.eipCreateMethod", "AutoCreate"), (f"{M}.size", 1)],
     f"{M}.size", "unknown"),
    ("both-storage-orders", [(f"{S}.sfsOrder", SFS)], f"{S}.sfsOrder", "rule"),
    ("no-storage-order", [(f"{S}.oceanFSOrder", DELETE)], f"{S}.sfsOrder", "rule"),
    ("useexist-without-uid", [(f"{S}.storageCreateMethod", "UseExist"),
                              (f"{S}.oceanFSOrder", DELETE), (f"{S}.storageType", 0)],
     f"{S}.storageUID", "missing"),
    ("useexist-with-order", [(f"{S}.storageCreateMethod", "UseExist"), (f"{S}.storageType", 1),
                             (f"{S}.storageUID", "fs-1")], f"{S}.oceanFSOrder", "rule"),
    ("both-master-orders", [(f"{M}.bmsMasterNodeOrder", BMS_MASTER)],
     f"{M}.ecsMasterNodeOrder", "rule"),
    ("master-useexist-with-eip", [(f"{M}.nodeCreateMethod", "UseExist"),
                                  (f"{M}.ecsMasterNodeOrder", DELETE),
                                  (f"{M}.ecsForeignMasterNode", {"instanceID": "i-1"})],
     f"{M}.eipCreateMethod", "rule"),
    ("eip-without-bandwidth", [(f"{M}.eipBandwidth", DELETE)], f"{M}.eipBandwidth", "missing"),
    ("bandwidth-without-eip", [(f"{M}.eipCreateMethod", "NoUse")], f"{M}.eipBandwidth", "rule"),
    ("useexist-eip-without-id", [(f"{M}.eipCreateMethod", "UseExist"),
                                 (f"{M}.eipBandwidth", DELETE)], f"{M}.eipID", "missing"),
    ("mixed-compute", [(f"{C}.bmsComputeNodeOrders", [{"orderCount": 1}])],
     f"{C}.ecsComputeNodeOrders", "rule"),
    ("no-compute-order", [(f"{C}.ecsComputeNodeOrders", DELETE)],
     f"{C}.ecsComputeNodeOrders", "rule"),
    ("two-queues", [(f"{C}.ecsComputeNodeOrders", "DUP")], f"{C}.ecsComputeNodeOrders",
     "items"),
    ("no-ondemand", [("onDemand", DELETE), ("cycleType", DELETE), ("cycleCount", DELETE)],
     "onDemand", "missing"),
    ("subscription-without-cycle", [("cycleType", DELETE), ("cycleCount", DELETE)],
     "cycleType", "missing"),
    ("cycle-year-too-long", [("cycleType", "YEAR"), ("cycleCount", 4)], "cycleCount", "range"),
    ("cycle-month-too-long", [("cycleCount", 12)], "cycleCount", "range"),
    ("queue-default", [(f"{ORDER}.queueName", "Default")], f"{ORDER}.queueName", "pattern"),
    ("queue-too-long", [(f"{ORDER}.queueName", "q" * 16)], f"{ORDER}.queueName", "length"),
    ("queue-bad-char", [(f"{ORDER}.queueName", "q-1")], f"{ORDER}.queueName", "pattern"),
    ("sg-name-leading-underscore", [("securityGroupName", "_sg")], "securityGroupName",
     "pattern"),
    ("fs-name-trailing-dash", [(f"{S}.oceanFSOrder.oceanFSName", "fs-")],
     f"{S}.oceanFSOrder.oceanFSName", "pattern"),
]


@pytest.mark.parametrize("case", CREATE_MUTATIONS, ids=lambda c: c[0])
def test_create_cluster_mutations_are_refused(case):
    _, edits, field, kind = case
    body = create_body()
    for path, value in edits:
        if value == "DUP":
            entries = body[C]["ecsComputeNodeOrders"]
            entries.append(copy.deepcopy(entries[0]))
        else:
            _set(body, path, value)
    problems = validate_request("hpc/create-cluster", None, body)
    field = re.sub(r"\.(\d+)", r"[\1]", field)
    assert any(p.field == field and p.kind == kind for p in problems), problems
    assert all(f"'{p.field}'" in p for p in problems)


@pytest.mark.parametrize("password, reason", [
    ("Abc12345!", "consecutive"), ("Zxcvbn.789", "consecutive"), ("Root.Pa55w!", "root"),
    ("Zxcvbnm|147", "special"),  # ASCII "|" is not in the list (it has the full-width one)
    ("Zx.MNOq147", "consecutive"),  # a rising run in upper case

    ("xTooR.91!k", "root"), ("Ecs-User.91x", "ecs-user"), ("/Zxcvbnm.147", "start with '/'"),
    ("Zx.14", "8-30"), ("zxcvbnm.147", "upper-case"), ("Zxcvbnm147", "special"),
    ("Zxcvbnm.147" * 3, "8-30"), ("Zxcvbnm.147é", "outside")])
def test_root_password_rules_and_the_value_never_echoed(password, reason):
    body = _set(create_body(), f"{M}.rootPassword", password)
    problems = validate_request("hpc/create-cluster", None, body)
    assert [p.field for p in problems] == [f"{M}.rootPassword"]
    assert reason in problems[0] and password not in problems[0]


@pytest.mark.parametrize("password", [
    "Zxcvbnm｜147",   # the full-width '｜' is one of doc 23930's special characters
    "Zxcvbn.987",    # a falling run: rule 4's examples are rising (abc, 123): open question 17
    "Aa1!aaaa",      # a repeat: rule 4 does not name repeats (open question 17)
])
def test_root_passwords_the_documented_rules_accept(password):
    body = _set(create_body(), f"{M}.rootPassword", password)
    assert validate_request("hpc/create-cluster", None, body) == []


EXPAND_MUTATIONS = [
    ("order-count-51", [("ecsComputeNodeOrders.0.orderCount", 51)],
     "ecsComputeNodeOrders[0].orderCount", "range"),
    ("queue-name-not-uuid", [("ecsComputeNodeOrders.0.queueName", "batch"),
                             ("ecsComputeNodeOrders.0.queueUUID", DELETE)],
     "ecsComputeNodeOrders[0].queueName", "unknown"),
    ("missing-queue-uuid", [("ecsComputeNodeOrders.0.queueUUID", DELETE)],
     "ecsComputeNodeOrders[0].queueUUID", "missing"),
    ("wrapped-body", [("computeNodeConfig", {})], "computeNodeConfig", "unknown"),
    ("client-token", [("clientToken", "abc")], "clientToken", "unknown"),
    ("no-ondemand", [("onDemand", DELETE)], "onDemand", "missing"),
    ("no-role", [("clusterTypeRoleUUID", DELETE)], "clusterTypeRoleUUID", "missing"),
    ("foreign-with-autocreate", [("ecsForeignComputeNodes", [{"imageUUID": "im-1",
                                  "queueUUID": "pt-1", "instanceIDList": ["i-1"]}])],
     "ecsForeignComputeNodes", "rule"),
]


@pytest.mark.parametrize("case", EXPAND_MUTATIONS, ids=lambda c: c[0])
def test_expand_mutations_are_refused(case):
    _, edits, field, kind = case
    body = expand_body()
    for path, value in edits:
        _set(body, path, value)
    problems = validate_request("hpc/expand-cluster", None, body)
    assert any(p.field == field and p.kind == kind for p in problems), problems


def test_expand_takes_fifty_and_shrink_one_to_ten():
    body = _set(expand_body(), "ecsComputeNodeOrders.0.orderCount", 50)
    assert validate_request("hpc/expand-cluster", None, body) == []
    for n, ok in ((0, False), (1, True), (10, True), (11, False)):
        body = _set(shrink_body(), "nodeUUIDList", [f"nd-{i}" for i in range(n)])
        problems = validate_request("hpc/shrink-cluster", None, body)
        assert (problems == []) is ok, (n, problems)
        assert ok or problems[0].field == "nodeUUIDList"


QUERY = {"regionID": "bb9fdb42056f11eda1610242ac110002",
         "azName": "cn-huadong1-jsnj1A-public-ctcloud", "clusterUUID": "cl-x"}


@pytest.mark.parametrize("api, query, field, kind", [
    ("hpc/list-nodes", {**QUERY, "pageSize": "51"}, "pageSize", "range"),
    ("hpc/list-nodes", {**QUERY, "pageSize": 0}, "pageSize", "range"),
    ("hpc/list-nodes", {**QUERY, "pageNo": "03"}, "pageNo", "type"),
    ("hpc/list-nodes", {**QUERY, "pageNo": True}, "pageNo", "type"),
    ("hpc/list-nodes", {k: v for k, v in QUERY.items() if k != "azName"}, "azName", "missing"),
    ("hpc/list-nodes", {**QUERY, "az": "az1"}, "az", "unknown"),
    ("list-cluster-types", {"regionID": QUERY["regionID"]}, "azName", "missing"),
    ("list-specifications", {"regionID": QUERY["regionID"]}, "azName", "missing"),
    ("list-available-images", {"regionID": QUERY["regionID"], "azName": "az1"},
     "specificationUUID", "missing"),
    ("hpc/list-clusters", {"regionID": QUERY["regionID"], "clusterUUIDList": "a, b"},
     "clusterUUIDList", "pattern"),
    ("hpc/list-clusters", {"regionID": QUERY["regionID"], "name": "x"}, "name", "unknown"),
    ("vpc/new-list", {"regionID": "r", "pageSize": 3.0}, "pageSize", "type"),
    ("vpc/describe-security-group-attribute", {"regionID": "r", "securityGroupID": "sg-1",
                                                "direction": "in"}, "direction", "enum"),
])
def test_query_mutations_are_refused(api, query, field, kind):
    problems = validate_request(api, query, None)
    assert any(p.field == field and p.kind == kind for p in problems), problems


def test_query_integers_may_travel_as_their_text():
    assert validate_request("hpc/list-nodes", {**QUERY, "pageNo": "2", "pageSize": 50}) == []


def test_method_placement():
    assert validate_request("hpc/list-nodes", QUERY, {})[0].kind == "method"
    p = validate_request("delete-cluster", {"regionID": "r"}, {"regionID": "r",
                                                                "clusterUUID": "cl-1"})
    assert [x.kind for x in p] == ["method"]
    assert validate_request("delete-cluster", None, {"regionID": "r"})[0].field == "clusterUUID"
    with pytest.raises(KeyError, match="hpc/delete-cluster"):
        get_api("hpc/delete-cluster")


RULE = {"direction": "ingress", "action": "accept", "priority": 1, "protocol": "TCP",
        "ethertype": "IPv4", "destCidrIp": "203.0.113.0/24", "range": "22"}


def ingress(**over):
    rule = {**RULE, **over}
    rule = {k: v for k, v in rule.items() if v is not DELETE}
    return {"regionID": "r", "securityGroupID": "sg-1", "clientToken": "t-1",
            "securityGroupRules": [rule]}


@pytest.mark.parametrize("over, field, kind", [
    ({"range": DELETE}, "range", "missing"),
    ({"range": "1-70000"}, "range", "pattern"),
    ({"range": "22 - 23"}, "range", "pattern"),
    ({"protocol": "ANY", "range": "22"}, "range", "rule"),
    ({"direction": "INGRESS"}, "direction", "enum"),
    ({"direction": "egress"}, "direction", "enum"),
    ({"action": "ACCEPT"}, "action", "enum"),
    ({"priority": 0}, "priority", "range"),
    ({"priority": 101}, "priority", "range"),
    ({"priority": "1"}, "priority", "type"),
    ({"destCidrIp": DELETE}, "destCidrIp", "missing"),
    ({"destCidrIp": "203.0.113.1/24"}, "destCidrIp", "pattern"),
    ({"remoteType": 1}, "remoteSecurityGroupID", "missing"),
])
def test_security_group_rule_mutations_are_refused(over, field, kind):
    problems = validate_request("vpc/create-security-group-ingress", None, ingress(**over))
    full = f"securityGroupRules[0].{field}"
    assert any(p.field == full and p.kind == kind for p in problems), problems


def test_valid_rules_pass():
    assert validate_request("vpc/create-security-group-ingress", None, ingress()) == []
    assert validate_request("vpc/create-security-group-ingress", None,
                            ingress(protocol="ANY", range="")) == []
    egress = {"regionID": "r", "securityGroupID": "sg-1", "clientToken": "t",
              "securityGroupRules": [{"direction": "egress", "action": "accept",
                                      "priority": 100, "protocol": "ANY",
                                      "ethertype": "IPv4"}]}
    assert validate_request("vpc/create-security-group-egress", None, egress) == []


VPC = {"clientToken": "t-1", "regionID": "r", "name": "k3-vpc", "CIDR": "192.168.0.0/16"}


@pytest.mark.parametrize("over, field, kind", [
    ({"clientToken": DELETE}, "clientToken", "missing"),
    ({"clientToken": "t" * 65}, "clientToken", "length"),
    ({"name": "1vpc"}, "name", "pattern"),
    ({"name": "v" * 33}, "name", "length"),
    ({"name": "k3 vpc"}, "name", "pattern"),
    ({"CIDR": "192.168.0.0/29"}, "CIDR", "pattern"),
    ({"CIDR": "192.168.0.1/16"}, "CIDR", "pattern"),
    ({"description": "https://x"}, "description", "pattern"),
    ({"enableIpv6": "false"}, "enableIpv6", "type"),
])
def test_vpc_mutations_are_refused(over, field, kind):
    body = {k: v for k, v in {**VPC, **over}.items() if v is not DELETE}
    problems = validate_request("vpc/create", None, body)
    assert any(p.field == field and p.kind == kind for p in problems), problems
    assert validate_request("vpc/create", None, VPC) == []
    assert validate_request("vpc/create", None, {**VPC, "name": "测试-vpc_1"}) == []


# ------------------------------------------------------------------------------ answers
def test_answers_are_checked_strictly():
    lc = EXAMPLES_BY_ID["list-clusters"].doc()
    assert validate_response("hpc/list-clusters", lc) == []
    renamed = {**lc, "results": lc["resultList"]}
    del renamed["resultList"]
    kinds = {(p.field, p.kind) for p in validate_response("hpc/list-clusters", renamed)}
    assert kinds == {("returnObj.results", "unknown"), ("returnObj.resultList", "missing")}
    row = lc["resultList"][0]
    for key, value, kind in (("clusterAvailableStatus", "running", "enum"),
                             ("totalComputeNodeCount", "5", "type"),
                             ("innerIP", None, "type")):
        bad = copy.deepcopy(lc)
        bad["resultList"][0] = {**row, key: value}
        problems = validate_response("hpc/list-clusters", bad)
        assert [(p.field, p.kind) for p in problems] == [(f"returnObj.resultList[0].{key}",
                                                          kind)]
    assert validate_response("query-job-result", {"status": "running"})[0].kind == "enum"
    assert validate_response("query-job-result", {"status": "force_completed"}) == []


def test_both_documented_queue_shapes_pass_and_others_do_not():
    rows = EXAMPLES_BY_ID["list-queues"].doc()["returnObj"]
    assert validate_response("hpc/list-queues", rows) == []
    assert validate_response("hpc/list-queues", {"resultList": rows}) == []
    assert validate_response("hpc/list-queues", {"results": rows}) != []


def test_node_role_is_an_int_and_vm_num_differs_per_api():
    nodes = EXAMPLES_BY_ID["list-nodes"].doc()
    nodes["resultList"][0]["nodeRole"] = "0"
    p = validate_response("hpc/list-nodes", nodes, partial=True)
    assert [(x.field, x.kind) for x in p] == [("returnObj.resultList[0].nodeRole", "type")]
    sg = EXAMPLES_BY_ID["describe-security-group"].doc()
    sg["vmNum"] = 0
    assert validate_response("vpc/describe-security-group-attribute", sg, partial=True)[0] \
        .field == "returnObj.vmNum"


def test_envelopes_per_family():
    ok = {"statusCode": 800, "error": "", "message": "成功", "returnObj": {"status": "wait"}}
    assert validate_envelope("query-job-result", ok) == []
    assert validate_envelope("query-job-result", {**ok, "statusCode": "800"}) == []
    p = validate_envelope("query-job-result", {**ok, "errorCode": ""})
    assert [(x.field, x.kind) for x in p] == [("errorCode", "unknown")]
    old = EXAMPLES_BY_ID["delete-cluster-answer"].doc()
    assert validate_envelope("delete-cluster", old) == []
    assert validate_envelope("hpc/list-clusters", old) != []
    vpc_ok = {"statusCode": 800, "errorCode": "SUCCESS", "message": "success",
              "description": "成功", "returnObj": {"vpcID": "vpc-abcdefghij"}}
    assert validate_envelope("vpc/create", vpc_ok) == []
    assert validate_envelope("vpc/create", {**vpc_ok, "errorCode": ""})[0].field == "errorCode"
    assert validate_envelope("vpc/delete", {**vpc_ok, "returnObj": {}})[0].field == "error"
    fail = {"statusCode": 900, "errorCode": "Openapi.Parameter.Error", "message": "bad",
            "description": "参数错误", "returnObj": None}
    assert validate_envelope("vpc/create", fail) == []
    assert validate_envelope("vpc/create", {**fail, "errorCode": ""})[0].kind == "missing"


def test_call_by_method_and_path_and_the_answer_iterator():
    body = EXAMPLES_BY_ID["shrink-cluster-request"].doc()
    assert validate_call("POST", "/v4/cthpc/hpc/shrink-cluster", None, body) == []
    assert validate_call("GET", "/v4/cthpc/hpc/shrink-cluster", body)[0].kind == "method"
    assert validate_call("POST", "/v4/cthpc/hpc/delete-cluster", None, {})[0].kind == "method"
    answers = list(example_answers())
    assert len(answers) == sum(1 for e in EXAMPLES if e.kind != "request") >= 14
    assert all(path.startswith("/v4/") and e.api == api for api, path, e in answers)
