"""The CTyun emulator itself, over HTTP: gateway, envelopes, documented shapes, pagination,
strict refusals, jobs, the cluster lifecycle, VPC rules, faults and settings.

The emulator is built from the CTyun contract (tests/contracts/ctyun); these tests hold it to
that contract and replay the documented example answers: what the
emulator answers must have the same shape as CTyun's own examples.
"""

from __future__ import annotations

import time

import pytest
import requests

from tests.contracts.ctyun import EXAMPLES_BY_ID, example_answers, validate_envelope
from tests.emulators.ctyun import catalog
from tests.emulators.ctyun.harness import EmulatorProcess
from tests.emulators.ctyun.rawclient import RawClient, eop_date
from tests.emulators.ctyun.state import AZ, REGION

H = "/v4/cthpc"
JOB_S = 0.2
PASSWORD = "Zxcvbnm.147"      # doc 23930's own example password
#: the 910C's local system disks need a RAID (CTyun contract 7; the emulator's invented uuid)
SYSTEM_RAID_910C = catalog.raid_uuid(catalog.SPEC_910C, "system", "RAID1")


@pytest.fixture(scope="module")
def emulator():
    emu = EmulatorProcess(job_seconds=JOB_S).start()
    try:
        yield emu
    finally:
        emu.stop()


@pytest.fixture
def emu(emulator):
    emulator.reset()
    return emulator


@pytest.fixture
def rc(emu):
    return RawClient(emu.url, emu.ak, emu.sk)


API_OF = {}


def api_name(path: str) -> str:
    return path[len("/v4/cthpc/"):] if path.startswith("/v4/cthpc/") else path[len("/v4/"):]


def ok(rc, method, path, query=None, body=None):
    status, doc = rc.call(method, path, query, body)
    assert status == 200, (status, doc)
    assert validate_envelope(api_name(path), doc) == [], doc
    assert str(doc["statusCode"]) == "800", doc
    return doc["returnObj"]


def refused(rc, method, path, query=None, body=None, code=None, http=200, **kw):
    status, doc = rc.call(method, path, query, body, **kw)
    assert status == http, (status, doc)
    assert str(doc["statusCode"]) == "900", doc
    got = doc.get("error") or doc.get("errorCode")
    assert code is None or got == code, doc
    return doc


def wait_job(rc, job, timeout=10.0):
    seen = []
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        status = ok(rc, "GET", f"{H}/query-job-result", {"jobUUID": job})["status"]
        if not seen or seen[-1] != status:
            seen.append(status)
        if status in ("success", "failed", "cancel", "console_failed", "force_completed"):
            return seen
        time.sleep(0.03)
    raise AssertionError(f"job {job} still {seen}")


_tokens = iter(range(10 ** 9))


def token():
    return f"tok-{next(_tokens)}-{time.monotonic_ns()}"


def network(rc, name="k3-net", cidr="10.0.0.0/16"):
    vpc = ok(rc, "POST", "/v4/vpc/create", body={"clientToken": token(), "regionID": REGION,
                                                 "name": name, "CIDR": cidr})["vpcID"]
    sub = ok(rc, "POST", "/v4/vpc/create-subnet", body={
        "clientToken": token(), "regionID": REGION, "vpcID": vpc, "name": f"{name}-sub",
        "CIDR": cidr.replace(".0.0/16", ".1.0/24")})["subnetID"]
    sg = ok(rc, "POST", "/v4/vpc/create-security-group", body={
        "clientToken": token(), "regionID": REGION, "vpcID": vpc,
        "name": f"{name}-sg"})["securityGroupID"]
    return vpc, sub, sg


def create_body(vpc, sub, name="k3-test", count=2, sg_name="k3-net-sg"):
    body = {
        "regionID": REGION, "azName": AZ, "clusterName": name,
        "clusterTypeUUID": catalog.CLUSTER_TYPE_UUID, "vpcID": vpc,
        "storageConfig": {"storageCreateMethod": "AutoCreate", "sfsOrder": {
            "sfsName": f"{name}-fs", "sfsSize": 500, "sfsType": "capacity"}},
        "masterNodeConfig": {
            "clusterTypeRoleUUID": catalog.MASTER_ROLE_UUID, "rootPassword": PASSWORD,
            "imageUUID": catalog.image_for(catalog.SPEC_MASTER_VM, "master"),
            "nodeCreateMethod": "AutoCreate", "eipCreateMethod": "AutoCreate",
            "eipBandwidth": 10,
            "ecsMasterNodeOrder": {"specificationUUID": catalog.spec_uuid(catalog.SPEC_MASTER_VM),
                                   "subnetID": sub, "systemDiskType": "SSD",
                                   "systemDiskSize": 100}},
        "computeNodeConfig": {
            "clusterTypeRoleUUID": catalog.COMPUTE_ROLE_UUID, "nodeCreateMethod": "AutoCreate",
            "bmsComputeNodeOrders": [{
                "orderCount": count, "queueName": "batch",
                "imageUUID": catalog.image_for(catalog.SPEC_910C, "compute"),
                "specificationUUID": catalog.spec_uuid(catalog.SPEC_910C), "subnetID": sub,
             "localSystemVolumeRaidUUID": SYSTEM_RAID_910C}]},
        "onDemand": True}
    if sg_name:
        body["securityGroupName"] = sg_name
    return body


def cluster(rc, count=2, name="k3-test"):
    """Delegation, network and an available cluster: (cluster row, vpc, subnet, sg, answer)."""
    ok(rc, "POST", f"{H}/create-delegate", body={})
    vpc, sub, sg = network(rc)
    answer = ok(rc, "POST", f"{H}/hpc/create-cluster", body=create_body(vpc, sub, name, count))
    assert wait_job(rc, answer["jobUUID"])[-1] == "success"
    rows = ok(rc, "GET", f"{H}/hpc/list-clusters", {"regionID": REGION})["resultList"]
    return next(r for r in rows if r["clusterName"] == name), vpc, sub, sg, answer


def nodes(rc, cid):
    return ok(rc, "GET", f"{H}/hpc/list-nodes", {"regionID": REGION, "azName": AZ,
                                                  "clusterUUID": cid, "pageSize": 50})


# --------------------------------------------------------------------------- envelopes
def test_envelope_per_family(rc):
    status, doc = rc.call("GET", f"{H}/list-regions")
    assert list(doc) == ["statusCode", "error", "message", "returnObj"]
    assert (doc["statusCode"], doc["error"], doc["message"]) == (800, "", "成功")
    c, *_ = cluster(rc, count=1)
    status, doc = rc.call("POST", f"{H}/delete-cluster", body={"regionID": REGION,
                                                              "clusterUUID": c["clusterUUID"]})
    assert doc == {"statusCode": 800, "errorCode": "", "message": "SUCCESS",
                   "description": "成功", "returnObj": {}}          # no jobUUID
    doc = refused(rc, "POST", f"{H}/delete-cluster", body={"regionID": REGION,
                                                          "clusterUUID": "cl-nope"})
    assert set(doc) == {"statusCode", "errorCode", "message", "description", "returnObj"}
    _, doc = rc.call("GET", "/v4/vpc/new-list", {"regionID": REGION})
    assert (doc["errorCode"], doc["error"], doc["message"]) == ("SUCCESS", "SUCCESS", "success")
    _, doc = rc.call("POST", "/v4/vpc/create", body={"clientToken": "t", "regionID": REGION,
                                                     "name": "v1", "CIDR": "10.9.0.0/16"})
    assert "error" not in doc and doc["errorCode"] == "SUCCESS"
    doc = refused(rc, "GET", "/v4/vpc/query", {"regionID": REGION, "vpcID": "vpc-nope000000"},
                  code="Openapi.Vpc.NotFound")
    assert validate_envelope("vpc/query", doc) == []


# --------------------------------------------------------------------------- documented shapes
def shape(v):
    if isinstance(v, dict):
        return {k: shape(x) for k, x in v.items()}
    if isinstance(v, list):
        return [shape(v[0])] if v else []
    return None if v is None else type(v).__name__


def same_shape(example, got, partial, path="$"):
    """The emulator's answer has the example's fields with the example's types (and, for an
    unabbreviated example, no others)."""
    if isinstance(example, dict):
        assert isinstance(got, dict), (path, got)
        keys = set(example) - {"..."}
        assert keys <= set(got), (path, keys - set(got))
        if not partial:
            assert set(got) == keys, (path, set(got) - keys)
        for k in keys:
            same_shape(example[k], got[k], partial, f"{path}.{k}")
    elif isinstance(example, list):
        assert isinstance(got, list) and (got or not example), (path, got)
        if example:
            same_shape(example[0], got[0], partial, f"{path}[0]")
    elif example is not None and got is not None:
        assert example == got or example == "" or type(example) is type(got) or \
            {type(example), type(got)} <= {int, float}, (path, example, got)


def test_every_documented_answer_is_reproduced_in_shape(emu, rc):
    c, vpc, sub, sg, create_answer = cluster(rc, count=2)
    cid = c["clusterUUID"]
    q = {"regionID": REGION, "azName": AZ}
    queues = ok(rc, "GET", f"{H}/hpc/list-queues", {**q, "clusterUUID": cid})
    expand = ok(rc, "POST", f"{H}/hpc/expand-cluster", body={
        **q, "clusterUUID": cid, "clusterTypeRoleUUID": catalog.COMPUTE_ROLE_UUID,
        "nodeCreateMethod": "AutoCreate", "onDemand": True, "bmsComputeNodeOrders": [{
            "orderCount": 1, "queueUUID": queues[0]["queueUUID"],
            "imageUUID": catalog.image_for(catalog.SPEC_910C, "compute"),
            "specificationUUID": catalog.spec_uuid(catalog.SPEC_910C), "subnetID": sub,
             "localSystemVolumeRaidUUID": SYSTEM_RAID_910C}]})
    wait_job(rc, expand["jobUUID"])
    ok(rc, "POST", "/v4/vpc/create-security-group-ingress", body={
        "regionID": REGION, "securityGroupID": sg, "clientToken": token(),
        "securityGroupRules": [{"direction": "ingress", "action": "accept", "priority": 1,
                                "protocol": "TCP", "ethertype": "IPv4",
                                "destCidrIp": "203.0.113.0/24", "range": "22"}]})
    spec = catalog.spec_uuid("physical.2.large.1.hpc")
    whole = {  # api -> the emulator's whole answer (envelopes) for the documented examples
        "list-regions": rc.call("GET", f"{H}/list-regions")[1],
        "hpc/list-queues": rc.call("GET", f"{H}/hpc/list-queues", {**q, "clusterUUID": cid})[1],
        "query-job-result": rc.call("GET", f"{H}/query-job-result",
                                    {"jobUUID": create_answer["jobUUID"]})[1],
        "hpc/create-cluster": rc.call("POST", f"{H}/hpc/create-cluster", body={
            k: v for k, v in create_body(vpc, sub, "other").items() if k != "clusterName"})[1],
    }
    answers = {
        "list-cluster-types": ok(rc, "GET", f"{H}/list-cluster-types", q),
        "list-specifications": ok(rc, "GET", f"{H}/list-specifications",
                                  {**q, "clusterTypeRoleUUID": catalog.COMPUTE_ROLE_UUID}),
        "list-available-images": ok(rc, "GET", f"{H}/list-available-images",
                                    {**q, "specificationUUID": spec}),
        "hpc/list-clusters": ok(rc, "GET", f"{H}/hpc/list-clusters", {"regionID": REGION}),
        "hpc/list-nodes": nodes(rc, cid),
        "hpc/expand-cluster": expand,
        "vpc/new-list": ok(rc, "GET", "/v4/vpc/new-list", {"regionID": REGION,
                                                           "vpcName": "k3-net"}),
        "vpc/describe-security-group-attribute": ok(
            rc, "GET", "/v4/vpc/describe-security-group-attribute",
            {"regionID": REGION, "securityGroupID": sg, "direction": "ingress"}),
        "vpc/create-security-group": ok(rc, "POST", "/v4/vpc/create-security-group", body={
            "clientToken": token(), "regionID": REGION, "vpcID": vpc, "name": "k3-sg2"}),
    }
    # bare metal, file systems, EIPs (CTyun contract 3.13, 7, 8)
    ocean = create_body(vpc, sub, "k3-ocean", 1)
    ocean["storageConfig"] = {"storageCreateMethod": "AutoCreate", "oceanFSOrder": {
        "subnetID": sub, "oceanFSName": "k3-ocean-fs", "oceanFSType": "capacity",
        "oceanFSSize": 100}}
    wait_job(rc, ok(rc, "POST", f"{H}/hpc/create-cluster", body=ocean)["jobUUID"])
    fs_q = {"regionID": REGION}
    sfs = ok(rc, "GET", "/v4/sfs/list-sfs", fs_q)["list"][0]["sfsUID"]
    ofs = ok(rc, "GET", "/v4/oceanfs/list-sfs", fs_q)["list"][0]["sfsUID"]
    eip = ok(rc, "POST", "/v4/eip/new-list", body={"regionID": REGION, "ip": c["publicIP"]})
    dev = {**q, "deviceType": catalog.SPEC_910C}
    whole.update({
        "ebm/raid-type-list": rc.call("GET", "/v4/ebm/raid-type-list",
                                      {**dev, "volumeType": "system"})[1],
        "ebm/device-type-list": rc.call("GET", "/v4/ebm/device-type-list", dev)[1],
        "sfs/info-sfs": rc.call("GET", "/v4/sfs/info-sfs", {**fs_q, "sfsUID": sfs})[1],
        "sfs/list-sfs": rc.call("GET", "/v4/sfs/list-sfs", fs_q)[1],
        "oceanfs/info-sfs": rc.call("GET", "/v4/oceanfs/info-sfs", {**fs_q, "sfsUID": ofs})[1],
        "oceanfs/list-sfs": rc.call("GET", "/v4/oceanfs/list-sfs", fs_q)[1],
    })
    answers["eip/show"] = ok(rc, "GET", "/v4/eip/show",
                             {"regionID": REGION, "eipID": eip["eips"][0]["ID"]})
    whole["delete-cluster"] = rc.call("POST", f"{H}/delete-cluster",
                                      body={"regionID": REGION, "clusterUUID": cid})[1]
    replayed = 0
    for api, path, example in example_answers():
        if example.kind == "request":
            continue
        if example.kind == "envelope":
            got = whole[api]
            if example.id == "create-cluster-answer":
                got = rc.call("POST", f"{H}/hpc/create-cluster",
                              body=create_body(vpc, sub, "k3-third"))[1]
        else:
            got = answers[api]
        same_shape(example.doc(), got, example.abbreviated or example.kind == "envelope"
                   and example.id in ("failure-notblank", "query-job-result-answer"))
        if example.kind == "envelope":
            assert validate_envelope(api, got) == []
        replayed += 1
    assert replayed == len(list(example_answers())) == 22
    assert whole["hpc/create-cluster"]["error"] == "Hpc.ParamCheck.NotBlank"


# --------------------------------------------------------------------------- pagination
def test_pagination_is_real_and_defaults_to_ten(emu, rc):
    for i in range(12):
        emu.seed_foreign(owner=f"p{i}", vpc_name=f"vpc-p{i}", cluster_name=f"c{i:02d}",
                         compute_nodes=11 if i == 0 else 1, cidr=f"10.{i + 10}.0.0/16")
    lc = f"{H}/hpc/list-clusters"
    first = ok(rc, "GET", lc, {"regionID": REGION})
    assert (first["currentCount"], first["totalCount"], first["totalPage"]) == (10, 12, 2)
    second = ok(rc, "GET", lc, {"regionID": REGION, "pageNo": 2})
    assert second["currentCount"] == 2
    names = {r["clusterName"] for r in first["resultList"] + second["resultList"]}
    assert len(names) == 12
    assert ok(rc, "GET", lc, {"regionID": REGION, "pageNo": 3})["resultList"] == []
    assert ok(rc, "GET", lc, {"regionID": REGION, "pageSize": 50})["currentCount"] == 12
    refused(rc, "GET", lc, {"regionID": REGION, "pageSize": 51}, code="Hpc.ParamCheck.Invalid")
    refused(rc, "GET", lc, {"regionID": REGION, "pageNo": 0}, code="Hpc.ParamCheck.Invalid")
    big = next(r for r in first["resultList"] + second["resultList"] if r["clusterName"] == "c00")
    ln = ok(rc, "GET", f"{H}/hpc/list-nodes", {"regionID": REGION, "azName": AZ,
                                                "clusterUUID": big["clusterUUID"]})
    assert (ln["currentCount"], ln["totalCount"], ln["totalPage"]) == (10, 12, 2)
    vl = ok(rc, "GET", "/v4/vpc/new-list", {"regionID": REGION, "pageNumber": 2})
    assert (vl["currentCount"], vl["totalCount"], vl["totalPage"]) == (3, 13, 2)
    assert len(vl["vpcs"]) == 3


# --------------------------------------------------------------------------- strict refusals
CREATE_EDITS = [
    ("missing field", lambda b: b.pop("clusterName"), "Hpc.ParamCheck.NotBlank", "clusterName"),
    ("blank field", lambda b: b.update(vpcID=""), "Hpc.ParamCheck.NotBlank", "vpcID"),
    ("clientToken on E-HPC", lambda b: b.update(clientToken="t-1"), "Hpc.ParamCheck.Invalid",
     "clientToken"),
    ("int as text", lambda b: b["computeNodeConfig"]["bmsComputeNodeOrders"][0].update(
        orderCount="2"), "Hpc.ParamCheck.Invalid", "orderCount"),
    ("old enum", lambda b: b["masterNodeConfig"].update(nodeCreateMethod="Create"),
     "Hpc.ParamCheck.Invalid", "nodeCreateMethod"),
    ("too many", lambda b: b["computeNodeConfig"]["bmsComputeNodeOrders"][0].update(
        orderCount=50), "Hpc.ParamCheck.Invalid", "orderCount"),
    ("both storage orders", lambda b: b["storageConfig"].update(oceanFSOrder={
        "subnetID": "subnet-x", "oceanFSName": "fs-b", "oceanFSType": "capacity",
        "oceanFSSize": 100}), "Hpc.ParamCheck.Invalid", "oceanFSOrder"),
    ("eip without bandwidth", lambda b: b["masterNodeConfig"].pop("eipBandwidth"),
     "Hpc.ParamCheck.NotBlank", "eipBandwidth"),
    ("long name", lambda b: b.update(clusterName="k" * 21), "Hpc.ParamCheck.Invalid",
     "clusterName"),
]


@pytest.mark.parametrize("case", CREATE_EDITS, ids=lambda c: c[0])
def test_create_cluster_refusals(emu, rc, case):
    _, edit, code, field = case
    body = create_body("vpc-default001", "subnet-default001")
    edit(body)
    doc = refused(rc, "POST", f"{H}/hpc/create-cluster", body=body, code=code)
    assert field in doc["message"]
    last = emu.report()["refused"][-1]
    assert (last["api"], last["code"]) == ("hpc/create-cluster", code) and field in last["reason"]
    assert emu.inventory()["clusters"] == []


Q = {"regionID": REGION, "azName": AZ, "clusterUUID": "cl-x"}
OTHER_REFUSALS = [
    ("list-nodes without azName", "GET", f"{H}/hpc/list-nodes",
     {"regionID": REGION, "clusterUUID": "cl-x"}, None, {}, "Hpc.ParamCheck.NotBlank"),
    ("list-nodes with the doc's az", "GET", f"{H}/hpc/list-nodes", {**Q, "az": "az1"}, None,
     {}, "Hpc.ParamCheck.Invalid"),
    ("query-job-result with a region", "GET", f"{H}/query-job-result",
     {"jobUUID": "job-1", "regionID": REGION}, None, {}, "Hpc.ParamCheck.Invalid"),
    ("list-cluster-types without azName", "GET", f"{H}/list-cluster-types",
     {"regionID": REGION}, None, {}, "Hpc.ParamCheck.NotBlank"),
    ("vpc create without clientToken", "POST", "/v4/vpc/create", None,
     {"regionID": REGION, "name": "k3", "CIDR": "10.0.0.0/16"}, {}, "Openapi.Parameter.Error"),
    ("vpc bad name", "POST", "/v4/vpc/create", None,
     {"clientToken": "t", "regionID": REGION, "name": "1k3", "CIDR": "10.0.0.0/16"}, {},
     "Openapi.Parameter.Error"),
    ("upper-case direction", "POST", "/v4/vpc/create-security-group-ingress", None,
     {"regionID": REGION, "securityGroupID": "sg-1", "clientToken": "t",
      "securityGroupRules": [{"direction": "INGRESS", "action": "accept", "priority": 1,
                              "protocol": "TCP", "ethertype": "IPv4",
                              "destCidrIp": "0.0.0.0/0", "range": "22"}]}, {},
     "Openapi.Parameter.Error"),
    ("GET with a body", "GET", f"{H}/list-regions", None, None,
     {"body_bytes": b"{}"}, "Hpc.ParamCheck.Invalid"),
    ("POST with a query", "POST", f"{H}/create-delegate", {"x": "1"}, {}, {},
     "Hpc.ParamCheck.Invalid"),
    ("POST without JSON content type", "POST", f"{H}/create-delegate", None, {},
     {"headers": {"Content-Type": "text/plain"}}, "Hpc.ParamCheck.Invalid"),
    ("POST body not an object", "POST", f"{H}/create-delegate", None, [], {},
     "Hpc.ParamCheck.Invalid"),
    ("repeated query key", "GET", f"{H}/hpc/list-clusters", None, None,
     {"raw_query": f"regionID={REGION}&regionID={REGION}"}, "Hpc.ParamCheck.Invalid"),
    ("wrong method", "GET", f"{H}/hpc/create-cluster", None, None, {},
     "Hpc.ParamCheck.Invalid"),
    ("shrink 11 nodes", "POST", f"{H}/hpc/shrink-cluster", None,
     {**Q, "nodeUUIDList": [f"nd-{i}" for i in range(11)]}, {}, "Hpc.ParamCheck.Invalid"),
    ("expand 51 nodes", "POST", f"{H}/hpc/expand-cluster", None,
     {**EXAMPLES_BY_ID["expand-cluster-request"].doc(), "ecsComputeNodeOrders": [{
         **EXAMPLES_BY_ID["expand-cluster-request"].doc()["ecsComputeNodeOrders"][0],
         "orderCount": 51}]}, {}, "Hpc.ParamCheck.Invalid"),
]


@pytest.mark.parametrize("case", OTHER_REFUSALS, ids=lambda c: c[0])
def test_other_strict_refusals(emu, rc, case):
    _, method, path, query, body, kw, code = case
    refused(rc, method, path, query, body, code=code, **kw)
    assert emu.report()["refused"][-1]["code"] == code


# --------------------------------------------------------------------------- gateway over HTTP
def test_gateway_refusals_over_http(emu, rc):
    path = f"{H}/list-regions"
    doc = refused(rc, "GET", path, ak="someone-else", http=401,
                  code="Openapi.Authorization.AccessKeyNotFound")
    assert validate_envelope("list-regions", doc) == []
    refused(rc, "GET", path, date="20200101T000000Z", http=401,
            code="Openapi.Authorization.DateExpired")
    refused(rc, "GET", f"{H}/hpc/list-clusters", raw_query=f"regionID={REGION}&azName={AZ}",
            http=401, code="Openapi.Authorization.QueryNotCanonical")
    refused(rc, "GET", f"{H}/hpc/list-clusters", {"regionID": REGION}, sign_query="x=1",
            http=401, code="Openapi.Authorization.SignatureInvalid")
    refused(rc, "GET", path, headers={"Eop-date": None}, http=401,
            code="Openapi.Authorization.Missing")
    assert ok(rc, "GET", path)                      # China time under a literal Z
    from datetime import timezone
    assert rc.call("GET", path, date=eop_date(zone=timezone.utc))[0] == 200
    emu.settings(eop_date_zone="china")
    refused(rc, "GET", path, date=eop_date(zone=timezone.utc), http=401)
    status, doc = rc.call("GET", "/v4/cthpc/hpc/no-such-api")
    assert status == 404 and doc["error"] == "Openapi.Api.NotFound"
    assert [r["http"] for r in emu.report()["refused"]] == [401] * 6 + [404]


# --------------------------------------------------------------------------- lifecycle
def test_cluster_lifecycle_as_documented(emu, rc):
    refused(rc, "POST", f"{H}/hpc/create-cluster", body=create_body(
        "vpc-default001", "subnet-default001"), code="Hpc.Delegate.NotFound")
    ok(rc, "POST", f"{H}/create-delegate", body={})
    refused(rc, "POST", f"{H}/create-delegate", body={}, code="Hpc.Delegate.AlreadyExists")
    vpc, sub, sg = network(rc)
    answer = ok(rc, "POST", f"{H}/hpc/create-cluster", body=create_body(vpc, sub, count=2))
    assert set(answer) == {"jobUUID", "masterOrderID", "masterOrderNO"}   # no cluster id
    rows = ok(rc, "GET", f"{H}/hpc/list-clusters", {"regionID": REGION})["resultList"]
    assert [(r["clusterName"], r["clusterAvailableStatus"]) for r in rows] == \
        [("k3-test", "unavailable")]                        # listed while the job runs
    cid = rows[0]["clusterUUID"]
    busy_q = {"regionID": REGION, "azName": AZ, "clusterUUID": cid}
    ids = [n["nodeUUID"] for n in nodes(rc, cid)["resultList"] if n["nodeRole"] == 1]
    refused(rc, "POST", f"{H}/hpc/shrink-cluster", body={**busy_q, "nodeUUIDList": ids[:1]},
            code="Hpc.Cluster.Busy")
    seen = wait_job(rc, answer["jobUUID"])
    assert seen[-1] == "success" and set(seen[:-1]) <= {"wait", "pending_submit", "submitted"}
    row = ok(rc, "GET", f"{H}/hpc/list-clusters", {"regionID": REGION})["resultList"][0]
    assert row["clusterAvailableStatus"] == "available" and row["securityGroupID"] == sg
    assert (row["totalComputeNodeCount"], row["publicIP"] is not None) == (2, True)
    listed = nodes(rc, cid)["resultList"]
    assert sorted(n["nodeRole"] for n in listed) == [0, 1, 1]
    assert all(isinstance(n["onDemand"], bool) for n in listed)
    master = next(n for n in listed if n["nodeRole"] == 0)
    assert master["queueName"] is None and master["nodeName"] == "k3-testmaster0001"
    queues = ok(rc, "GET", f"{H}/hpc/list-queues", busy_q)
    assert isinstance(queues, list) and queues[0]["queueName"] == "batch"
    order = {"orderCount": 2, "queueUUID": queues[0]["queueUUID"],
             "imageUUID": catalog.image_for(catalog.SPEC_910C, "compute"),
             "specificationUUID": catalog.spec_uuid(catalog.SPEC_910C), "subnetID": sub,
             "localSystemVolumeRaidUUID": SYSTEM_RAID_910C}
    expand = {**busy_q, "clusterTypeRoleUUID": catalog.COMPUTE_ROLE_UUID,
              "nodeCreateMethod": "AutoCreate", "onDemand": True,
              "bmsComputeNodeOrders": [order]}
    wrong_queue = {**expand, "bmsComputeNodeOrders": [{**order, "queueUUID": "pt-nope"}]}
    refused(rc, "POST", f"{H}/hpc/expand-cluster", body=wrong_queue, code="Hpc.Queue.NotFound")
    job = ok(rc, "POST", f"{H}/hpc/expand-cluster", body=expand)["jobUUID"]
    assert wait_job(rc, job)[-1] == "success"
    listed = nodes(rc, cid)["resultList"]
    compute = [n["nodeUUID"] for n in listed if n["nodeRole"] == 1]
    assert len(compute) == 4 and all(n["nodeStatus"] == "running" for n in listed)
    refused(rc, "POST", f"{H}/hpc/shrink-cluster",
            body={**busy_q, "nodeUUIDList": [master["nodeUUID"]]},
            code="Hpc.Node.MasterNotRemovable")
    job = ok(rc, "POST", f"{H}/hpc/shrink-cluster",
             body={**busy_q, "nodeUUIDList": compute[:3]})["jobUUID"]
    assert wait_job(rc, job)[-1] == "success"
    assert nodes(rc, cid)["totalCount"] == 2
    # delete without shrinking the last compute node: it outlives the cluster (the default)
    assert ok(rc, "POST", f"{H}/delete-cluster", body={"regionID": REGION,
                                                       "clusterUUID": cid}) == {}
    row = ok(rc, "GET", f"{H}/hpc/list-clusters", {"regionID": REGION})["resultList"][0]
    assert row["clusterAvailableStatus"] == "unavailable"
    refused(rc, "POST", f"{H}/delete-cluster", body={"regionID": REGION, "clusterUUID": cid},
            code="Hpc.Cluster.Busy")
    time.sleep(JOB_S + 0.1)
    assert ok(rc, "GET", f"{H}/hpc/list-clusters", {"regionID": REGION})["totalCount"] == 0
    refused(rc, "GET", f"{H}/hpc/list-nodes", busy_q, code="Hpc.Cluster.NotFound")
    report = emu.report()
    orphans = report["leakedItems"]["nodes"]
    assert [(n["role"], n["orphan"]) for n in orphans] == [("compute", True)]
    assert report["leaked"]["eips"] == report["leaked"]["fileSystems"] == 0
    assert [o["nodes"] for o in report["orders"]] == [3, 2]


def test_create_is_not_deduplicated(emu, rc):
    ok(rc, "POST", f"{H}/create-delegate", body={})
    vpc, sub, _ = network(rc)
    body = create_body(vpc, sub, count=1)
    ok(rc, "POST", f"{H}/hpc/create-cluster", body=body)
    body["storageConfig"]["sfsOrder"]["sfsName"] = "k3-fs-2"     # file system names are unique
    ok(rc, "POST", f"{H}/hpc/create-cluster", body=body)
    rows = ok(rc, "GET", f"{H}/hpc/list-clusters", {"regionID": REGION})["resultList"]
    assert [r["clusterName"] for r in rows] == ["k3-test", "k3-test"]
    assert len(emu.report()["orders"]) == 2
    body["storageConfig"]["sfsOrder"]["sfsName"] = "k3-test-fs"
    refused(rc, "POST", f"{H}/hpc/create-cluster", body=body, code="Hpc.Storage.NameExists")


# --------------------------------------------------------------------------- VPC
def test_vpc_names_tokens_rules_and_foreign_resources(emu, rc):
    foreign = emu.seed_foreign(owner="alice", vpc_name="k3-shared", sg_name="k3-sg",
                               cluster_name="k3-test")
    body = {"clientToken": "same-token", "regionID": REGION, "name": "k3-shared",
            "CIDR": "10.0.0.0/16"}
    refused(rc, "POST", "/v4/vpc/create", body=body, code="Openapi.Vpc.NameDuplicate")
    body["name"] = "k3-mine"
    first = ok(rc, "POST", "/v4/vpc/create", body=body)["vpcID"]
    assert ok(rc, "POST", "/v4/vpc/create", body=body)["vpcID"] == first       # same token
    refused(rc, "POST", "/v4/vpc/create", body={**body, "clientToken": "other"},
            code="Openapi.Vpc.NameDuplicate")
    found = ok(rc, "GET", "/v4/vpc/new-list", {"regionID": REGION, "vpcName": "k3-"})["vpcs"]
    assert sorted(v["name"] for v in found) == ["k3-mine", "k3-shared"]       # substring
    sg = ok(rc, "POST", "/v4/vpc/create-security-group", body={
        "clientToken": token(), "regionID": REGION, "vpcID": first,
        "name": "k3-sg"})["securityGroupID"]
    rules = [{"direction": "ingress", "action": "accept", "priority": p, "protocol": "TCP",
              "ethertype": "IPv4", "destCidrIp": "203.0.113.0/24", "range": r}
             for p, r in ((1, "22"), (2, "8000-8001"))]
    ids = ok(rc, "POST", "/v4/vpc/create-security-group-ingress", body={
        "regionID": REGION, "securityGroupID": sg, "clientToken": token(),
        "securityGroupRules": rules})["sgRuleIDs"]
    desc = ok(rc, "GET", "/v4/vpc/describe-security-group-attribute",
              {"regionID": REGION, "securityGroupID": sg})
    assert desc["vmNum"] == "0" and desc["securityGroupName"] == "k3-sg"
    ingress = [r for r in desc["securityGroupRuleList"] if r["direction"] == "ingress"]
    # a new group admits its own members (the console's presets: [ctdoc 10105035])
    assert [(r["protocol"], r["ethertype"], r["remoteSecurityGroupID"]) for r in ingress[:2]] \
        == [("ANY", "IPv4", sg), ("ANY", "IPv6", sg)]
    assert [(r["id"], r["range"], r["action"]) for r in ingress[2:]] == \
        [(ids[0], "22", "accept"), (ids[1], "8000-8001", "accept")]
    listed = ok(rc, "GET", "/v4/vpc/new-query-security-groups",
                {"regionID": REGION, "queryContent": "k3-sg"})["securityGroups"]
    assert sorted(g["vpcID"] for g in listed) == sorted([first, foreign["vpcID"]])
    assert all(isinstance(g["vmNum"], int) for g in listed)
    revoke = {"regionID": REGION, "securityGroupID": sg, "clientToken": token(),
              "securityGroupRuleID": ids[0]}
    ok(rc, "POST", "/v4/vpc/revoke-security-group-ingress", body=revoke)
    refused(rc, "POST", "/v4/vpc/revoke-security-group-ingress",
            body={**revoke, "clientToken": token()}, code="Openapi.SecurityGroupRule.NotFound")
    sub = ok(rc, "POST", "/v4/vpc/create-subnet", body={
        "clientToken": token(), "regionID": REGION, "vpcID": first, "name": "k3-s",
        "CIDR": "10.0.1.0/24"})["subnetID"]
    refused(rc, "POST", "/v4/vpc/create-subnet", body={
        "clientToken": token(), "regionID": REGION, "vpcID": first, "name": "k3-s2",
        "CIDR": "10.1.1.0/24"}, code="Openapi.Subnet.CidrConflict")
    refused(rc, "POST", "/v4/vpc/delete", body={"regionID": REGION, "vpcID": first},
            code="Openapi.Vpc.InUse")
    ok(rc, "GET", "/v4/vpc/describe-security-group-attribute",      # reads touch nothing
       {"regionID": REGION, "securityGroupID": foreign["securityGroupID"]})
    assert emu.report()["foreignTouched"] == []
    refused(rc, "POST", "/v4/vpc/delete-security-group", body={
        "clientToken": token(), "regionID": REGION, "securityGroupID": foreign[
            "securityGroupID"]}, code="Openapi.SecurityGroup.InUse")
    touched = emu.report()["foreignTouched"]
    assert [(t["kind"], t["owner"]) for t in touched] == [("securityGroup", "foreign:alice")]
    for path, key, rid in (("delete-security-group", "securityGroupID", sg),
                           ("delete-subnet", "subnetID", sub), ("delete", "vpcID", first)):
        ok(rc, "POST", f"/v4/vpc/{path}", body={"clientToken": token(), "regionID": REGION,
                                                key: rid})
    assert emu.report()["leakedTotal"] == 0


# --------------------------------------------------------------------------- faults
def test_faults(emu, rc):
    path = "/v4/vpc/create"
    body = {"clientToken": "fault-token", "regionID": REGION, "name": "k3-f",
            "CIDR": "10.0.0.0/16"}
    emu.faults({"path": path, "kind": "http500"}, {"path": path, "kind": "throttle"},
               {"path": path, "kind": "drop"}, {"path": path, "kind": "lost_response"})
    assert rc.call("POST", path, body=body)[0] == 500
    _, doc = rc.call("POST", path, body=body)
    assert (doc["statusCode"], doc["errorCode"]) == ("900", "Openapi.Throttling")
    with pytest.raises(requests.ConnectionError):
        rc.call("POST", path, body=body)
    assert emu.inventory()["vpcs"] == []                       # not run
    with pytest.raises(requests.ConnectionError):
        rc.call("POST", path, body=body)
    assert len(emu.inventory()["vpcs"]) == 1                   # run, answer lost
    assert ok(rc, "POST", path, body=body)["vpcID"] == emu.inventory()["vpcs"][0]["id"]
    assert emu.calls()[path] == 5
    # job faults on create-cluster: a failed create leaves a billed, unavailable cluster
    ok(rc, "POST", f"{H}/create-delegate", body={})
    vpc, sub, _ = network(rc, "k3-g", "10.4.0.0/16")
    cp = f"{H}/hpc/create-cluster"
    emu.faults({"path": cp, "kind": "slow_job", "seconds": 0.3}, {"path": cp, "kind": "fail_job"})
    started = time.monotonic()
    job = ok(rc, "POST", cp, body=create_body(vpc, sub, sg_name=None))["jobUUID"]
    assert wait_job(rc, job)[-1] == "failed" and time.monotonic() - started >= JOB_S + 0.3
    row = ok(rc, "GET", f"{H}/hpc/list-clusters", {"regionID": REGION})["resultList"][0]
    assert row["clusterAvailableStatus"] == "unavailable"
    assert {n["nodeStatus"] for n in nodes(rc, row["clusterUUID"])["resultList"]} == {"error"}
    assert emu.inventory()["billable"] == 1 + 3 + 1 + 1        # cluster, nodes, EIP, FS
    assert emu.report()["jobs"][-1]["seconds"] == pytest.approx(JOB_S + 0.3)


# --------------------------------------------------------------------------- settings
def test_settings_switch_undocumented_behaviour(emu, rc):
    with pytest.raises(RuntimeError, match="unknown setting"):
        emu.settings(no_such_thing=1)
    with pytest.raises(RuntimeError, match="queues_shape"):
        emu.settings(queues_shape="list")
    emu.settings(queues_shape="resultList", status_code_as_string=True,
                 list_during_create=False, delegate_repeat_refused=False,
                 delete_releases_compute=True)
    c, *_ = cluster(rc, count=1)
    ok(rc, "POST", f"{H}/create-delegate", body={})           # a repeat is fine now
    q = ok(rc, "GET", f"{H}/hpc/list-queues", {"regionID": REGION, "azName": AZ,
                                                "clusterUUID": c["clusterUUID"]})
    assert list(q) == ["resultList"]
    _, doc = rc.call("GET", f"{H}/list-regions")
    assert doc["statusCode"] == "800"
    ok(rc, "POST", f"{H}/delete-cluster", body={"regionID": REGION,
                                                "clusterUUID": c["clusterUUID"]})
    time.sleep(JOB_S + 0.1)
    assert emu.inventory()["nodes"] == []
    emu.reset()
    assert emu.settings()["queues_shape"] == "array"


def test_price_queries(emu, rc):
    c, vpc, sub, *_ = cluster(rc, count=2)
    body = create_body(vpc, sub)
    for key in ("securityGroupName",):
        body.pop(key)
    body["masterNodeConfig"].pop("rootPassword")
    body["storageConfig"]["sfsOrder"].pop("sfsName")
    body["computeNodeConfig"]["bmsComputeNodeOrders"][0].pop("queueName")
    price = ok(rc, "POST", f"{H}/hpc/query-cluster-creation-price", body=body)
    kinds = {i["resourceType"] for i in price["subOrderPrices"][0]["orderItemPrices"]}
    assert kinds == {"VM", "BMS", "NETWORK", "SFS_TURBOC"} and price["totalPrice"] > 0
    order = {k: v for k, v in body["computeNodeConfig"]["bmsComputeNodeOrders"][0].items()}
    grow = ok(rc, "POST", f"{H}/hpc/query-cluster-expansion-price", body={
        "regionID": REGION, "azName": AZ, "clusterUUID": c["clusterUUID"],
        "clusterTypeRoleUUID": catalog.COMPUTE_ROLE_UUID, "bmsComputeNodeOrders": [order],
        "onDemand": True})
    assert grow["totalPrice"] == pytest.approx(price["subOrderPrices"][0]["orderItemPrices"][1][
        "totalPrice"])


def test_contract_examples_exist_for_the_refusal_codes():
    doc = EXAMPLES_BY_ID["failure-notblank"].doc()
    assert doc["error"] == "Hpc.ParamCheck.NotBlank"


# --------------------------------------------------------------------------- day two (issue 19)
def _ingress(sg, **rule):
    return {"regionID": REGION, "securityGroupID": sg, "clientToken": token(),
            "securityGroupRules": [{"direction": "ingress", "action": "accept", "priority": 1,
                                    "ethertype": "IPv4", **rule}]}


def _describe(rc, sg):
    return ok(rc, "GET", "/v4/vpc/describe-security-group-attribute",
              {"regionID": REGION, "securityGroupID": sg})["securityGroupRuleList"]


def test_members_talk_only_through_a_rule_whose_source_is_their_group(emu, rc):
    emu.settings(new_group_intra_rule=False)
    c, vpc, sub, sg, _ = cluster(rc, count=1)
    [row] = [x for x in emu.report()["held"]["clusters"] if x["id"] == c["clusterUUID"]]
    assert row["membersCanTalk"] is False
    # a group source needs its id; a CIDR rule needs its CIDR; ANY takes no range [tf]
    refused(rc, "POST", "/v4/vpc/create-security-group-ingress",
            body=_ingress(sg, protocol="ANY", remoteType=1), code="Openapi.Parameter.Error")
    refused(rc, "POST", "/v4/vpc/create-security-group-ingress",
            body=_ingress(sg, protocol="TCP", range="22"), code="Openapi.Parameter.Error")
    refused(rc, "POST", "/v4/vpc/create-security-group-ingress",
            body=_ingress(sg, protocol="ANY", range="22", remoteType=1,
                          remoteSecurityGroupID=sg), code="Openapi.Parameter.Error")
    refused(rc, "POST", "/v4/vpc/create-security-group-ingress",
            body=_ingress(sg, protocol="ANY", remoteType=1, remoteSecurityGroupID="sg-nope"),
            code="Openapi.SecurityGroup.NotFound")
    [rid] = ok(rc, "POST", "/v4/vpc/create-security-group-ingress",
               body=_ingress(sg, protocol="ANY", remoteType=1,
                             remoteSecurityGroupID=sg))["sgRuleIDs"]
    [row] = [x for x in emu.report()["held"]["clusters"] if x["id"] == c["clusterUUID"]]
    assert row["membersCanTalk"] is True
    [listed] = [r for r in _describe(rc, sg) if r["id"] == rid]
    assert "remoteType" not in listed and listed["remoteSecurityGroupID"] == sg
    assert listed["destCidrIp"] == ""
    emu.settings(group_rule_dest_cidr="any")   # the undocumented reading that fools CIDR logic
    [listed] = [r for r in _describe(rc, sg) if r["id"] == rid]
    assert listed["destCidrIp"] == "0.0.0.0/0" and listed["remoteSecurityGroupID"] == sg


def test_bare_metal_disks_and_raid_types(emu, rc):
    q = {"regionID": REGION, "azName": AZ}
    [a3] = ok(rc, "GET", "/v4/ebm/device-type-list",
              {**q, "deviceType": catalog.SPEC_910C})["results"]
    assert (a3["systemVolumeAmount"], a3["dataVolumeAmount"], a3["nvmeVolumeAmount"]) == \
        (2, 0, 2)
    system = ok(rc, "GET", "/v4/ebm/raid-type-list",
                {**q, "deviceType": catalog.SPEC_910C, "volumeType": "system"})["results"]
    assert [(r["nameEn"], r["volumeType"]) for r in system] == [("RAID0", "SYSTEM"),
                                                                ("RAID1", "SYSTEM")]
    assert all(r["uuid"].startswith("r-") and len(r["uuid"]) == 30 for r in system)
    assert ok(rc, "GET", "/v4/ebm/raid-type-list", {**q, "deviceType": catalog.SPEC_910C,
                                                   "volumeType": "data"})["totalCount"] == 0
    refused(rc, "GET", "/v4/ebm/raid-type-list", {**q, "deviceType": catalog.SPEC_910C,
                                                  "volumeType": "nvme"},
            code="Openapi.Parameter.Error")
    emu.settings(bms_910c_disks="data", device_type_is_spec_name=False)
    assert ok(rc, "GET", "/v4/ebm/device-type-list",
              {**q, "deviceType": catalog.SPEC_910C})["results"] == []
    [a3] = ok(rc, "GET", "/v4/ebm/device-type-list",
              {**q, "deviceType": f"ebm.{catalog.SPEC_910C}"})["results"]
    assert (a3["dataVolumeAmount"], a3["nvmeVolumeAmount"]) == (2, 0)


def test_bms_orders_need_the_raid_of_each_kind_of_local_disk(emu, rc):
    ok(rc, "POST", f"{H}/create-delegate", body={})
    vpc, sub, _ = network(rc)
    body = create_body(vpc, sub)
    order = body["computeNodeConfig"]["bmsComputeNodeOrders"][0]
    del order["localSystemVolumeRaidUUID"]
    where = "computeNodeConfig.bmsComputeNodeOrders[0]"
    doc = refused(rc, "POST", f"{H}/hpc/create-cluster", body=body,
                  code="Hpc.ParamCheck.NotBlank")
    assert f"{where}.localSystemVolumeRaidUUID is required" in doc["message"]
    order["localSystemVolumeRaidUUID"] = catalog.raid_uuid("other", "system", "RAID1")
    refused(rc, "POST", f"{H}/hpc/create-cluster", body=body, code="Hpc.ParamCheck.Invalid")
    # a data RAID for a server without local data disks: "此参数无效", ignored
    order.update(localSystemVolumeRaidUUID=SYSTEM_RAID_910C,
                 localDataVolumeRaidUUID=catalog.raid_uuid(catalog.SPEC_910C, "data", "RAID0"))
    wait_job(rc, ok(rc, "POST", f"{H}/hpc/create-cluster", body=body)["jobUUID"])
    nodes_ = [n for n in emu.inventory()["nodes"] if n["role"] == "compute"]
    assert {tuple(sorted(n["raid"].items())) for n in nodes_} == {(("system", "RAID1"),)}
    emu.settings(bms_910c_disks="data")
    body = create_body(vpc, sub, "k3-data")
    doc = refused(rc, "POST", f"{H}/hpc/create-cluster", body=body,
                  code="Hpc.ParamCheck.NotBlank")
    assert "localDataVolumeRaidUUID is required" in doc["message"]


def test_a_standard_bare_metal_order_wants_a_bare_metal_subnet(emu, rc):
    ok(rc, "POST", f"{H}/create-delegate", body={})
    vpc, sub, _ = network(rc)
    emu.settings(bms_910c_kind="standard")
    doc = refused(rc, "POST", f"{H}/hpc/create-cluster", body=create_body(vpc, sub),
                  code="Hpc.ParamCheck.Invalid")
    assert "is not a bare-metal (cbm) subnet" in doc["message"]
    cbm = ok(rc, "POST", "/v4/vpc/create-subnet", body={
        "clientToken": token(), "regionID": REGION, "vpcID": vpc, "name": "k3-cbm",
        "CIDR": "10.0.2.0/24", "subnetType": "cbm"})["subnetID"]
    body = create_body(vpc, cbm)
    doc = refused(rc, "POST", f"{H}/hpc/create-cluster", body=body,   # the ECS master: not cbm
                  code="Hpc.ParamCheck.Invalid")
    assert "masterNodeConfig.ecsMasterNodeOrder.subnetID" in doc["message"]
    body["masterNodeConfig"]["ecsMasterNodeOrder"]["subnetID"] = sub
    ok(rc, "POST", f"{H}/hpc/create-cluster", body=body)


def test_file_system_and_eip_outlive_the_cluster_only_when_told(emu, rc):
    c, *_ = cluster(rc, count=1)
    fs = ok(rc, "GET", "/v4/sfs/list-sfs", {"regionID": REGION})["list"]
    assert [(f["sfsName"], f["sfsStatus"]) for f in fs] == [("k3-test-fs", "available")]
    [eip] = ok(rc, "POST", "/v4/eip/new-list", body={"regionID": REGION,
                                                    "ip": c["publicIP"]})["eips"]
    assert eip["status"] == "ACTIVE" and eip["associationType"] == "PHYSICALINSTANCE"
    emu.settings(delete_releases_eip=False, delete_releases_storage=False)
    ok(rc, "POST", f"{H}/delete-cluster", body={"regionID": REGION,
                                               "clusterUUID": c["clusterUUID"]})
    time.sleep(JOB_S * 2)
    left = ok(rc, "GET", "/v4/eip/show", {"regionID": REGION, "eipID": eip["ID"]})
    assert left["status"] == "DOWN" and left["associationID"] == ""    # unbound, still billed
    info = ok(rc, "GET", "/v4/sfs/info-sfs", {"regionID": REGION, "sfsUID": fs[0]["sfsUID"]})
    assert info["sfsStatus"] == "available"
    assert emu.report()["leaked"]["eips"] == emu.report()["leaked"]["fileSystems"] == 1


def test_released_file_system_and_eip_answer_as_the_sources_say(emu, rc):
    c, *_ = cluster(rc, count=1)
    [fs] = ok(rc, "GET", "/v4/sfs/list-sfs", {"regionID": REGION})["list"]
    [eip] = ok(rc, "POST", "/v4/eip/new-list", body={"regionID": REGION,
                                                    "ip": c["publicIP"]})["eips"]
    emu.settings(eip_released_as="deleted")
    ok(rc, "POST", f"{H}/delete-cluster", body={"regionID": REGION,
                                               "clusterUUID": c["clusterUUID"]})
    time.sleep(JOB_S * 2)
    assert ok(rc, "GET", "/v4/eip/show", {"regionID": REGION,
                                         "eipID": eip["ID"]})["status"] == "DELETED"
    refused(rc, "GET", "/v4/sfs/info-sfs", {"regionID": REGION, "sfsUID": fs["sfsUID"]},
            code="Sfs.Emulator.NoSuchFileSystem")   # this emulator's own code (6.19)
    assert ok(rc, "GET", "/v4/sfs/list-sfs", {"regionID": REGION})["list"] == []
    assert emu.report()["leaked"]["eips"] == 0


def test_a_released_eip_is_not_found_by_default(emu, rc):
    c, *_ = cluster(rc, count=1)
    [eip] = ok(rc, "POST", "/v4/eip/new-list", body={"regionID": REGION,
                                                    "ip": c["publicIP"]})["eips"]
    ok(rc, "POST", f"{H}/delete-cluster", body={"regionID": REGION,
                                               "clusterUUID": c["clusterUUID"]})
    time.sleep(JOB_S * 2)
    refused(rc, "GET", "/v4/eip/show", {"regionID": REGION, "eipID": eip["ID"]},
            code="Openapi.Eip.NotFound")    # [tf] resource_ctyun_eip.go line 371
