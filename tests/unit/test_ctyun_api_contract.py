"""The API layer against the CTyun contract (tests/contracts/ctyun, written from CTyun's
documentation and clients by another owner, never from this client):

1. every request the client can build is validated against the documented field tables;
2. the documented example requests are rebuilt from the typed request classes, field for field;
3. every documented example answer is replayed through the client's own readers (`ANSWERS`).
"""

import pytest

from components.ctyun_hcc.api import ebm as b
from components.ctyun_hcc.api import ehpc as e
from components.ctyun_hcc.api import envelope
from components.ctyun_hcc.api import storage as fs
from components.ctyun_hcc.api import vpc as v
from components.ctyun_hcc.api.errors import ApiError
from tests.contracts.ctyun import EXAMPLES_BY_ID, example_answers, validate_call
from tests.unit.ctyun_api_double import ok, transport

REGION, AZ = "bb9fdb42056f11eda1610242ac110002", "cn-huadong1-jsnj1A-public-ctcloud"
PW = "Zxcvbnm.147"  # doc 23930's own example password
PAGE = {"totalCount": 0, "currentCount": 0, "totalPage": 0}

#: a documented-shape success answer per path, so every client method can run to the end
ANSWER_FOR = {
    "/v4/cthpc/create-delegate": {},
    "/v4/cthpc/list-regions": {"resultList": []},
    "/v4/cthpc/list-cluster-types": {"resultList": []},
    "/v4/cthpc/list-specifications": {"resultList": []},
    "/v4/cthpc/list-available-images": {"resultList": []},
    "/v4/cthpc/hpc/create-cluster": {"jobUUID": "job-1", "masterOrderID": None,
                                     "masterOrderNO": None},
    "/v4/cthpc/query-job-result": {"status": "success"},
    "/v4/cthpc/hpc/list-clusters": {**PAGE, "resultList": []},
    "/v4/cthpc/hpc/list-nodes": {**PAGE, "resultList": []},
    "/v4/cthpc/hpc/list-queues": {"resultList": []},
    "/v4/cthpc/hpc/expand-cluster": {"jobUUID": "job-2"},
    "/v4/cthpc/hpc/shrink-cluster": {"jobUUID": "job-3"},
    "/v4/cthpc/delete-cluster": {},
    "/v4/vpc/create": {"vpcID": "vpc-1"},
    "/v4/vpc/new-list": {**PAGE, "vpcs": []},
    "/v4/vpc/query": {"vpcID": "vpc-1", "name": "k3-vpc"},
    "/v4/vpc/delete": None,
    "/v4/vpc/create-subnet": {"subnetID": "subnet-1"},
    "/v4/vpc/new-list-subnet": {**PAGE, "subnets": []},
    "/v4/vpc/query-subnet": {"subnetID": "subnet-1", "name": "k3-subnet"},
    "/v4/vpc/delete-subnet": None,
    "/v4/vpc/create-security-group": {"securityGroupID": "sg-1"},
    "/v4/vpc/new-query-security-groups": {**PAGE, "securityGroups": []},
    "/v4/vpc/describe-security-group-attribute": {"securityGroupName": "k3-sg", "id": "sg-1"},
    "/v4/vpc/delete-security-group": None,
    "/v4/vpc/create-security-group-ingress": {"sgRuleIDs": ["r1"]},
    "/v4/vpc/revoke-security-group-ingress": None,
    "/v4/eip/show": {"ID": "eip-1", "eipAddress": "203.0.113.9", "status": "ACTIVE"},
    "/v4/eip/new-list": {**PAGE, "eips": []},
    "/v4/ebm/device-type-list": {"totalCount": 0, "results": []},
    "/v4/ebm/raid-type-list": {"totalCount": 0, "results": []},
    "/v4/sfs/info-sfs": {"sfsUID": "fs-1", "sfsName": "k3-fs", "sfsStatus": "available"},
    "/v4/sfs/list-sfs": {"list": [], "totalCount": 0, "total": 0},
    "/v4/oceanfs/info-sfs": {"sfsUID": "fs-1", "sfsName": "k3-fs", "sfsStatus": "available"},
    "/v4/oceanfs/list-sfs": {"list": [], "total": 0},
}


def _answer(request):
    from urllib.parse import urlsplit
    return ok(ANSWER_FOR[urlsplit(request.url).path])


class Others:
    """The bare-metal and file-system clients on the same transport (CTyun contract 7, 8)."""

    def __init__(self, t):
        self.ebm = b.Ebm(t, REGION)
        self.sfs = fs.FileSystems(t, REGION, "sfs")
        self.oceanfs = fs.FileSystems(t, REGION, "oceanfs")


def clients():
    t, net, _ = transport([_answer] * 80)
    return e.Ehpc(t, REGION), v.VpcApi(t, REGION), net, Others(t)


def bms(**disks):
    return e.ServerOrder("dvt-b", "BMS", "subnet-1", bms_disks=e.BmsDisks(**disks))


def vm():
    return e.ServerOrder("dvt-v", "VM", "subnet-1", system_disk=e.SystemDisk("SSD", 100))


def create(**over):
    base = dict(region_id=REGION, az_name=AZ, cluster_name="k3-hcc-1a2b",
                cluster_type_uuid="ct-1", vpc_id="vpc-1",
                storage=e.SfsOrder("k3-hcc-1a2b-fs", 500),
                master=e.MasterNode("ctr-m", "im-m", bms(), PW, eip_bandwidth_mbps=100),
                compute_role_uuid="ctr-c", compute=e.ComputeOrder("im-c", bms(), 3,
                                                                   queue_name="batch"),
                security_group_name="k3-hcc-1a2b-sg")
    base.update(over)
    return e.CreateClusterRequest(**base)


def expand(**over):
    base = dict(region_id=REGION, az_name=AZ, cluster_uuid="cl-1", compute_role_uuid="ctr-c",
                order=e.ComputeOrder("im-c", bms(), 50, queue_uuid="pt-1"))
    base.update(over)
    return e.ExpandClusterRequest(**base)


CALLS = {
    "create-delegate": lambda h, n: h.create_delegate(),
    "list-regions": lambda h, n: h.list_regions(),
    "list-cluster-types": lambda h, n: h.list_cluster_types(AZ),
    "list-specifications": lambda h, n: h.list_specifications(AZ),
    "list-specifications by role": lambda h, n: h.list_specifications(AZ, "ctr-c"),
    "list-available-images": lambda h, n: h.list_available_images(AZ, "dvt-b"),
    "list-available-images by role": lambda h, n: h.list_available_images(AZ, "dvt-b", "ctr-m"),
    "create: sfs, bms, eip": lambda h, n: h.create_cluster(create()),
    "create: oceanfs, vm master, no eip, no group": lambda h, n: h.create_cluster(create(
        storage=e.OceanFsOrder("subnet-1", "k3-fs", 100),
        master=e.MasterNode("ctr-m", "im-m", vm(), PW), security_group_name="")),
    "create: raid + cloud disk, subscription": lambda h, n: h.create_cluster(create(
        master=e.MasterNode("ctr-m", "im-m", bms(
            local_system_volume_raid_uuid="raid-1", cloud_system_disk_type="SSD",
            cloud_system_disk_size_gb=200), PW, eip_bandwidth_mbps=1),
        compute=e.ComputeOrder("im-c", bms(local_data_volume_raid_uuid="raid-2"), 49,
                               queue_name="q_1"),
        billing=e.Billing(False, "YEAR", 3))),
    "create: existing storage": lambda h, n: h.create_cluster(create(
        storage=e.ExistingStorage("sfs-1", 0))),
    "query-job-result": lambda h, n: h.job_status("job-1"),
    "list-clusters": lambda h, n: h.list_clusters(),
    "list-clusters filtered": lambda h, n: h.list_clusters(AZ, ["cl-1", "cl-2"]),
    "get-cluster": lambda h, n: h.get_cluster("cl-1"),
    "list-nodes": lambda h, n: h.list_nodes(AZ, "cl-1"),
    "list-queues": lambda h, n: h.list_queues(AZ, "cl-1"),
    "expand: bms": lambda h, n: h.expand_cluster(expand()),
    "expand: vm, subscription": lambda h, n: h.expand_cluster(expand(
        order=e.ComputeOrder("im-c", vm(), 1, queue_uuid="pt-1"),
        billing=e.Billing(False, "MONTH", 11))),
    "shrink": lambda h, n: h.shrink_cluster(AZ, "cl-1", [f"nd-{i}" for i in range(10)]),
    "delete-cluster": lambda h, n: h.delete_cluster("cl-1"),
    "vpc create": lambda h, n: n.create_vpc("k3-vpc", "192.168.0.0/16", "kimi-k3 owner x"),
    "vpc list by name": lambda h, n: n.find_vpcs("k3-vpc"),
    "vpc query": lambda h, n: n.get_vpc("vpc-1"),
    "vpc delete": lambda h, n: n.delete_vpc("vpc-1"),
    "subnet create": lambda h, n: n.create_subnet("vpc-1", "k3-subnet", "192.168.0.0/24",
                                                  "kimi-k3 owner x"),
    "subnet create cbm": lambda h, n: n.create_subnet("vpc-1", "k3-subnet", "192.168.1.0/24",
                                                      "", "cbm"),
    "subnet list": lambda h, n: n.list_subnets("vpc-1"),
    "subnet query": lambda h, n: n.get_subnet("subnet-1"),
    "subnet delete": lambda h, n: n.delete_subnet("subnet-1"),
    "group create": lambda h, n: n.create_security_group("vpc-1", "k3-sg", "kimi-k3 owner x"),
    "group list": lambda h, n: n.find_security_groups("vpc-1", "k3-sg"),
    "group describe": lambda h, n: n.describe_security_group("sg-1"),
    "group delete": lambda h, n: n.delete_security_group("sg-1"),
    "ingress add": lambda h, n: n.add_ingress("sg-1", [v.IngressRule(22, "203.0.113.0/24",
                                                                     "kimi-k3 ssh")]),
    "ingress revoke": lambda h, n: n.revoke_ingress("sg-1", "r1"),
    "ingress from the group itself": lambda h, n: n.add_ingress("sg-1", [
        v.IngressRule.from_group("sg-1", "kimi-k3 owner x cluster")]),
    "ingress ipv6": lambda h, n: n.add_ingress("sg-1", [v.IngressRule(8000, "2001:db8::/32")]),
    "eip show": lambda h, n: n.get_eip("eip-1"),
    "eip by address": lambda h, n: n.find_eips("203.0.113.9"),
}
OTHER_CALLS = {
    "device types": lambda o: o.ebm.device_types(AZ),
    "one device type": lambda o: o.ebm.device_types(AZ, "physical.t2.large.1"),
    "raid types system": lambda o: o.ebm.raid_types(AZ, "physical.t2.large.1", "system"),
    "raid types data": lambda o: o.ebm.raid_types(AZ, "physical.t2.large.1", "data"),
    "sfs info": lambda o: o.sfs.info("fs-1"),
    "sfs list": lambda o: o.sfs.list_all(),
    "oceanfs info": lambda o: o.oceanfs.info("fs-1"),
    "oceanfs by name": lambda o: o.oceanfs.find("k3-fs"),
}


@pytest.mark.parametrize("what", sorted(CALLS) + sorted(OTHER_CALLS))
def test_every_request_the_client_builds_is_valid(what):
    ehpc_api, vpc_api, net, others = clients()
    if what in CALLS:
        CALLS[what](ehpc_api, vpc_api)
    else:
        OTHER_CALLS[what](others)
    assert net.requests
    for i in range(len(net.requests)):
        method, path, query, body = net.sent(i)
        assert validate_call(method, path, query, body) == [], (method, path, query, body)


def test_every_api_the_client_speaks_is_exercised():
    ehpc_api, vpc_api, net, others = clients()
    for call in CALLS.values():
        call(ehpc_api, vpc_api)
    for call in OTHER_CALLS.values():
        call(others)
    sent = {urlpath for urlpath in (net.sent(i)[1] for i in range(len(net.requests)))}
    assert sent == {op.path for op in e.OPERATIONS + v.OPERATIONS + b.OPERATIONS
                    + fs.OPERATIONS}


def test_documented_request_examples_are_rebuilt_from_typed_fields():
    doc = EXAMPLES_BY_ID["create-cluster-request"].completed()
    m, c = doc["masterNodeConfig"], doc["computeNodeConfig"]
    mo, co = m["ecsMasterNodeOrder"], c["ecsComputeNodeOrders"][0]
    fs = doc["storageConfig"]["oceanFSOrder"]
    built = e.CreateClusterRequest(
        region_id=doc["regionID"], az_name=doc["azName"], cluster_name=doc["clusterName"],
        cluster_type_uuid=doc["clusterTypeUUID"], vpc_id=doc["vpcID"],
        storage=e.OceanFsOrder(fs["subnetID"], fs["oceanFSName"], fs["oceanFSSize"],
                               fs["oceanFSType"]),
        master=e.MasterNode(m["clusterTypeRoleUUID"], m["imageUUID"], e.ServerOrder(
            mo["specificationUUID"], "VM", mo["subnetID"],
            system_disk=e.SystemDisk(mo["systemDiskType"], mo["systemDiskSize"])),
            m["rootPassword"], eip_bandwidth_mbps=m["eipBandwidth"]),
        compute_role_uuid=c["clusterTypeRoleUUID"],
        compute=e.ComputeOrder(co["imageUUID"], e.ServerOrder(
            co["specificationUUID"], "VM", co["subnetID"],
            system_disk=e.SystemDisk(co["systemDiskType"], co["systemDiskSize"])),
            co["orderCount"], queue_name=co["queueName"]),
        billing=e.Billing(doc["onDemand"], doc["cycleType"], doc["cycleCount"])).body()
    assert built == doc

    doc = EXAMPLES_BY_ID["expand-cluster-request"].completed()
    o = doc["ecsComputeNodeOrders"][0]
    built = e.ExpandClusterRequest(
        doc["regionID"], doc["azName"], doc["clusterUUID"], doc["clusterTypeRoleUUID"],
        e.ComputeOrder(o["imageUUID"], e.ServerOrder(
            o["specificationUUID"], "VM", o["subnetID"],
            system_disk=e.SystemDisk(o["systemDiskType"], o["systemDiskSize"])),
            o["orderCount"], queue_uuid=o["queueUUID"]),
        e.Billing(doc["onDemand"])).body()
    assert built == doc

    doc = EXAMPLES_BY_ID["shrink-cluster-request"].completed()
    assert e.shrink_body(doc["regionID"], doc["azName"], doc["clusterUUID"],
                         doc["nodeUUIDList"]) == doc
    assert EXAMPLES_BY_ID["create-delegate-request"].completed() == {}


READERS = {**e.ANSWERS, **v.ANSWERS, **b.ANSWERS, **fs.ANSWERS}
ANSWER_EXAMPLES = list(example_answers())


@pytest.mark.parametrize("api,path,example", ANSWER_EXAMPLES,
                         ids=[x[2].id for x in ANSWER_EXAMPLES])
def test_every_documented_answer_is_read_by_the_client(api, path, example):
    doc = example.doc()
    if example.kind == "envelope" and "statusCode" in doc:
        verdict = envelope.judge(api, 200, __import__("json").dumps(doc).encode())
        if not verdict.ok:
            assert isinstance(verdict.error, ApiError) and verdict.error.code == doc["error"]
            return
        value = verdict.value
    else:
        value = doc["returnObj"] if example.kind == "envelope" else doc
    got = READERS[api](value)
    assert got is not None or api in ("create-delegate", "delete-cluster")


def test_documented_answers_read_as_documented():
    read = lambda i: READERS[EXAMPLES_BY_ID[i].api](  # noqa: E731
        EXAMPLES_BY_ID[i].doc().get("returnObj", EXAMPLES_BY_ID[i].doc())
        if EXAMPLES_BY_ID[i].kind == "envelope" else EXAMPLES_BY_ID[i].doc())
    rows, total, pages = read("list-nodes")
    assert [(n.role, n.node_type) for n in rows] == [(0, "VM"), (1, "BMS")] and pages == 4
    [queue] = read("list-queues")
    assert queue.name == "a2" and queue.uuid.startswith("pt-")
    [t] = read("list-cluster-types")
    assert t.name == "SCHEDULER" and t.scheduler == "SLURM" and t.role("compute")
    assert read("query-job-result-answer") == "success"
    order = read("create-cluster-answer")
    assert order.job_uuid == "job-rtbbjx4dxyoobvti63v0"
    group = read("describe-security-group")
    assert group.vm_count == 0 and group.rules[0].key() == (
        "ingress", "accept", "TCP", "22", "203.0.113.0/24")
    raids = read("raid-type-list")
    assert [(r.name, r.volume_type, r.uuid) for r in raids] == [
        ("RAID0", "system", "r-sfykwibcvcyztuez3mk1klyha9nn"),
        ("RAID1", "system", "r-wtzluqacgzzxgunnabdkpnpjew3d")]
    [device] = read("device-type-list")
    assert (device.device_type, device.system_volumes, device.data_volumes,
            device.nvme_volumes) == ("physical.s4.2xlarge1.6", 2, 12, 0)
    assert device.needs_raid("system") and device.needs_raid("data")
    assert read("sfs-info").status == "available" and read("oceanfs-info").kind == "oceanfs"
    rows, count = read("oceanfs-list")   # counted by `total` only (CTyun contract 5)
    assert count == 1 and rows[0].name == "yyx-oceanfs-test-003"
    eip = read("eip-show")
    assert (eip.eip_id, eip.address, eip.released) == ("eip-9jpeyl0frh", "203.0.113.9", False)


def test_the_documented_group_rule_request_is_rebuilt_from_typed_fields():
    doc = EXAMPLES_BY_ID["ingress-from-group-request"].completed()
    [rule] = doc["securityGroupRules"]
    body = v.IngressRule.from_group(rule["remoteSecurityGroupID"]).body("x", 0)
    assert body == rule


def test_client_and_emulator_speak_only_cited_apis_and_agree_on_each():
    """Every API the client sends and the emulator answers is one of the contract's, each
    carrying its upstream source (tests/contracts/ctyun/sources.py): same method, path and
    CTyun doc id on both sides, so neither can grow an endpoint nobody cited (audited against
    ctyun-it/terraform-provider-ctyun @80651fd and ArvinZJC/ctyun-cli, docs/ctyun-hcc.md)."""
    from tests.contracts.ctyun import APIS as CONTRACT
    from tests.emulators.ctyun import server

    by_path = {(a.method, a.path): a for a in CONTRACT.values()}
    for op in e.OPERATIONS + v.OPERATIONS + b.OPERATIONS + fs.OPERATIONS:
        api = by_path.get((op.method, op.path))
        assert api is not None, (op.method, op.path)
        assert op.doc == api.doc or (op.doc == "-" and api.doc == "-"), (op.path, op.doc, api.doc)
        assert api.source.strip(), api.name
    assert set(server.HANDLERS) == {a.name for a in CONTRACT.values()}
    for path, api in server.ROUTES.items():
        assert CONTRACT[api.name] is api and api.source.strip(), path
