"""E-HPC requests and strict answers (CTyun contract 2), over the scripted network double.

The example answers below are the documented examples of the contract (doc ids given); the
contract tests replay the full set from tests/contracts/ctyun/.
"""

import pytest

from components.ctyun_hcc.api import ehpc as e
from components.ctyun_hcc.api.errors import RequestError, ResponseError
from tests.unit.ctyun_api_double import ok, transport

REGION, AZ = "bb9fdb42056f11eda1610242ac110002", "cn-huadong1-jsnj1A-public-ctcloud"
PW = "K3-Passw0rd!"


def api(script):
    t, net, _ = transport(script)
    return e.Ehpc(t, REGION), net


def cluster_row(**over):
    row = {"clusterName": "sit-04162", "azName": "cn-xinan1-1A",
           "clusterUUID": "cl-qagaqq3x6bcrvmy5ohpx6gmbzls9", "vpcID": "vpc-kzcgexytpe",
           "securityGroupID": "sg-ex6h4wnki2", "clusterTypeName": "SCHEDULER",
           "schedulerType": "SLURM", "clusterTypeUUID": "ct-jn8sm0bejygcdglhpljbddjll9ro",
           "totalMasterNodeCount": 1, "totalComputeNodeCount": 5, "runningComputeNodeCount": 5,
           "creatingComputeNodeCount": 0, "publicIP": None, "innerIP": "192.168.0.45",
           "clusterAvailableStatus": "available", "createTime": "2026-04-16 14:54:16"}
    row.update(over)
    return row


def page(rows, total=None, pages=1):
    return ok({"currentCount": len(rows), "totalCount": len(rows) if total is None else total,
               "totalPage": pages, "resultList": rows})


def test_list_clusters_reads_the_documented_example():
    a, net = api([page([cluster_row()])])
    [c] = a.list_clusters()
    assert (c.uuid, c.status, c.public_ip, c.total_compute) == (
        "cl-qagaqq3x6bcrvmy5ohpx6gmbzls9", "available", None, 5)
    method, path, query, body = net.sent()
    assert (method, path) == ("GET", "/v4/cthpc/hpc/list-clusters") and body is None
    assert query == {"regionID": REGION, "pageNo": "1", "pageSize": "50"}


def test_listing_follows_pages_to_total_count():
    rows = [cluster_row(clusterUUID=f"cl-{i:028d}", clusterName=f"k3-{i}") for i in range(5)]
    a, net = api([page(rows[:2], 5, 3), page(rows[2:4], 5, 3), page(rows[4:], 5, 3)])
    assert [c.name for c in a.list_clusters()] == [f"k3-{i}" for i in range(5)]
    assert [net.sent(i)[2]["pageNo"] for i in range(3)] == ["1", "2", "3"]


def test_listing_that_changes_while_paged_is_read_again():
    rows = [cluster_row(clusterUUID=f"cl-{i:028d}") for i in range(3)]
    a, net = api([page(rows[:2], 3, 2), page(rows[2:], 4, 2),   # one created meanwhile
                  page(rows[:2], 3, 2), page(rows[2:], 3, 2)])
    assert len(a.list_clusters()) == 3 and len(net.requests) == 4


@pytest.mark.parametrize("ret,field", [
    ({"currentCount": 0, "totalCount": 0, "totalPage": 0, "results": []}, "resultList"),
    ({"resultList": []}, "totalCount"),
    (None, "returnObj"),
    ({"totalCount": 3, "totalPage": 1, "resultList": [cluster_row()]}, "ended at page 1"),
])
def test_a_listing_in_another_shape_is_an_error_not_an_empty_list(ret, field):
    a, _ = api([ok(ret)])
    with pytest.raises(ResponseError, match=field) as err:
        a.list_clusters()
    assert "hpc/list-clusters" in str(err.value)


def test_unknown_cluster_status_is_an_error_naming_the_field():
    a, _ = api([page([cluster_row(clusterAvailableStatus="creating")])])
    with pytest.raises(ResponseError, match=r"resultList\[0\].clusterAvailableStatus.*creating"):
        a.list_clusters()


def test_nodes_role_is_an_integer_and_nothing_else():
    master = {"nodeName": "sit-04162master0001", "nodeUUID": "nd-ljxagwt0sjrvhefmnzlurrkficv4",
              "nodeRole": 0, "nodeType": "VM", "nodeStatus": "running",
              "nodeSchedulerStatus": "idle", "innerIP": "192.168.0.45", "publicIP": "",
              "queueName": None, "subnetID": "subnet-rtqtujtbb9", "onDemand": True}
    compute = {**master, "nodeName": "sit-04162compute0006", "nodeRole": 1, "nodeType": "BMS",
               "nodeUUID": "nd-g5z8se7ubfn5iervyapyxkqsnm4f", "publicIP": None,
               "queueName": "a2"}
    a, net = api([page([master, compute])])
    nodes = a.list_nodes(AZ, "cl-1")
    assert [(n.role, n.public_ip, n.queue_name) for n in nodes] == [(0, None, None),
                                                                   (1, None, "a2")]
    assert net.sent()[2]["azName"] == AZ and net.sent()[2]["clusterUUID"] == "cl-1"
    for bad in ("compute", 2, True):
        a, _ = api([page([{**compute, "nodeRole": bad}])])
        with pytest.raises(ResponseError, match="nodeRole"):
            a.list_nodes(AZ, "cl-1")


def test_job_status_enum():
    a, net = api([ok({"status": "success"}), ok({"status": "running"})])
    assert a.job_status("job-1") == "success"
    assert net.sent()[2] == {"jobUUID": "job-1"}  # no region parameter is documented
    with pytest.raises(ResponseError, match="status.*running"):
        a.job_status("job-1")


def test_queues_in_both_documented_shapes():
    q = {"queueName": "a2", "queueUUID": "pt-g6wwn5lcxjalhdjxrctnlilnowro",
         "queueStatus": "creating", "isDefault": True, "totalNodeQuantity": 0}
    a, _ = api([ok([q]), ok({"resultList": [q]}), ok({"queues": [q]})])
    assert a.list_queues(AZ, "cl-1")[0].uuid == q["queueUUID"]
    assert a.list_queues(AZ, "cl-1")[0].name == "a2"
    with pytest.raises(ResponseError, match="resultList is missing"):
        a.list_queues(AZ, "cl-1")


def test_catalog_per_role():
    types = ok({"resultList": [{"clusterTypeName": "SCHEDULER", "schedulerType": "SLURM",
                                "clusterTypeUUID": "ct-jn8sm0bejygcdglhpljbddjll9ro",
                                "roleList": [{"clusterTypeRoleName": "master",
                                              "clusterTypeRoleUUID": "ctr-m"},
                                             {"clusterTypeRoleName": "compute",
                                              "clusterTypeRoleUUID": "ctr-c"}]}]})
    specs = ok({"resultList": [{"clusterTypeRoleName": "compute", "clusterTypeRoleUUID": "ctr-c",
                                "specificationList": [
                                    {"specificationName": "physical.2.large.1.hpc",
                                     "specificationType": "BMS", "specificationUUID": "dvt-b"},
                                    {"specificationName": "s3.large.2",
                                     "specificationType": "VM", "specificationUUID": "dvt-v"}]}]})
    images = ok({"resultList": [{"clusterTypeRoleName": "master", "clusterTypeRoleUUID": "ctr-m",
                                 "imageList": [{"imageUUID": "im-m", "name": "CentOS",
                                                "version": "7.9", "nodeType": "BMS",
                                                "architectureType": "CPU"}]}]})
    a, net = api([types, specs, images])
    [t] = a.list_cluster_types(AZ)
    assert t.role("master") == ["ctr-m"] and t.role("compute") == ["ctr-c"]
    assert net.sent()[2] == {"regionID": REGION, "azName": AZ}
    [rs] = a.list_specifications(AZ, "ctr-c")
    assert [s.type for s in rs.specifications] == ["BMS", "VM"]
    assert net.sent()[2]["clusterTypeRoleUUID"] == "ctr-c"
    [ri] = a.list_available_images(AZ, "dvt-b")
    assert ri.images[0].uuid == "im-m" and net.sent()[2]["specificationUUID"] == "dvt-b"
    a, _ = api([ok({"resultList": [{"clusterTypeRoleName": "compute",
                                    "clusterTypeRoleUUID": "ctr-c", "specificationList": [
                                        {"specificationName": "x", "specificationUUID": "dvt-x",
                                         "specificationType": "EBM"}]}]})])
    with pytest.raises(ResponseError, match="specificationType"):
        a.list_specifications(AZ)


def _bms(subnet="subnet-1", **disks):
    return e.ServerOrder("dvt-b", "BMS", subnet, bms_disks=e.BmsDisks(**disks))


def create_request(**over):
    base = dict(
        region_id=REGION, az_name=AZ, cluster_name="k3-ctyun-hcc-1a2b",
        cluster_type_uuid="ct-1", vpc_id="vpc-1",
        storage=e.SfsOrder("k3-ctyun-hcc-1a2b-fs", 500, "performance"),
        master=e.MasterNode("ctr-m", "im-m", _bms(), PW, eip_bandwidth_mbps=100),
        compute_role_uuid="ctr-c",
        compute=e.ComputeOrder("im-c", _bms(), 3, queue_name="batch"),
        security_group_name="k3-ctyun-hcc-1a2b-sg")
    base.update(over)
    return e.CreateClusterRequest(**base)


def test_create_cluster_body_is_the_documented_one():
    body = create_request().body()
    assert body == {
        "regionID": REGION, "azName": AZ, "clusterName": "k3-ctyun-hcc-1a2b",
        "clusterTypeUUID": "ct-1", "vpcID": "vpc-1", "securityGroupName": "k3-ctyun-hcc-1a2b-sg",
        "storageConfig": {"storageCreateMethod": "AutoCreate",
                          "sfsOrder": {"sfsName": "k3-ctyun-hcc-1a2b-fs", "sfsSize": 500,
                                       "sfsType": "performance"}},
        "masterNodeConfig": {"clusterTypeRoleUUID": "ctr-m", "imageUUID": "im-m",
                             "rootPassword": PW, "nodeCreateMethod": "AutoCreate",
                             "eipCreateMethod": "AutoCreate", "eipBandwidth": 100,
                             "bmsMasterNodeOrder": {"specificationUUID": "dvt-b",
                                                    "subnetID": "subnet-1"}},
        "computeNodeConfig": {"clusterTypeRoleUUID": "ctr-c", "nodeCreateMethod": "AutoCreate",
                              "bmsComputeNodeOrders": [{
                                  "orderCount": 3, "imageUUID": "im-c", "queueName": "batch",
                                  "specificationUUID": "dvt-b", "subnetID": "subnet-1"}]},
        "onDemand": True}
    assert "clientToken" not in body and PW not in repr(create_request())


def test_create_variants_oceanfs_no_eip_vm_master_raid_subscription():
    body = create_request(
        storage=e.OceanFsOrder("subnet-1", "k3-fs", 100),
        master=e.MasterNode("ctr-m", "im-m", e.ServerOrder("dvt-v", "VM", "subnet-1",
                                                           system_disk=e.SystemDisk("SSD", 120)),
                            PW),
        compute=e.ComputeOrder("im-c", _bms(local_system_volume_raid_uuid="raid-s",
                                            local_data_volume_raid_uuid="raid-d"), 2,
                               queue_name="batch"),
        billing=e.Billing(False, "MONTH", 1)).body()
    assert body["storageConfig"]["oceanFSOrder"] == {
        "subnetID": "subnet-1", "oceanFSName": "k3-fs", "oceanFSType": "capacity",
        "oceanFSSize": 100}
    assert body["masterNodeConfig"]["eipCreateMethod"] == "NoUse"
    assert "eipBandwidth" not in body["masterNodeConfig"]
    assert body["masterNodeConfig"]["ecsMasterNodeOrder"] == {
        "specificationUUID": "dvt-v", "subnetID": "subnet-1", "systemDiskType": "SSD",
        "systemDiskSize": 120}
    entry = body["computeNodeConfig"]["bmsComputeNodeOrders"][0]
    assert entry["localSystemVolumeRaidUUID"] == "raid-s"
    assert entry["localDataVolumeRaidUUID"] == "raid-d"
    assert (body["onDemand"], body["cycleType"], body["cycleCount"]) == (False, "MONTH", 1)


@pytest.mark.parametrize("over,field", [
    (dict(cluster_name="k3--x"), "clusterName"),
    (dict(cluster_name="9k3"), "clusterName"),
    (dict(compute=e.ComputeOrder("im-c", _bms(), 50, queue_name="batch")), "orderCount"),
    (dict(compute=e.ComputeOrder("im-c", _bms(), 1, queue_name="default")), "queueName"),
    (dict(storage=e.SfsOrder("fs", 100)), "sfsSize"),
    (dict(master=e.MasterNode("ctr-m", "im-m", _bms(), PW, eip_bandwidth_mbps=301)),
     "eipBandwidth"),
    (dict(master=e.MasterNode("ctr-m", "im-m", _bms(), "abcDEF12!x")), "rootPassword"),
    (dict(billing=e.Billing(False, "MONTH", 12)), "cycleCount"),
    (dict(security_group_name="_sg"), "securityGroupName"),
])
def test_create_request_refuses_what_the_docs_refuse(over, field):
    with pytest.raises(RequestError, match=field) as err:
        create_request(**over).body()
    assert "abcDEF12!x" not in str(err.value)


def test_expand_body_is_flat_with_queue_uuid():
    req = e.ExpandClusterRequest(REGION, AZ, "cl-1", "ctr-c", e.ComputeOrder(
        "im-c", _bms(), 50, queue_uuid="pt-1"))
    assert req.body() == {
        "regionID": REGION, "azName": AZ, "clusterUUID": "cl-1", "clusterTypeRoleUUID": "ctr-c",
        "nodeCreateMethod": "AutoCreate", "onDemand": True,
        "bmsComputeNodeOrders": [{"orderCount": 50, "imageUUID": "im-c", "queueUUID": "pt-1",
                                  "specificationUUID": "dvt-b", "subnetID": "subnet-1"}]}
    with pytest.raises(RequestError, match="orderCount"):
        e.ExpandClusterRequest(REGION, AZ, "cl-1", "ctr-c", e.ComputeOrder(
            "im-c", _bms(), 51, queue_uuid="pt-1")).body()
    with pytest.raises(RequestError, match="queueUUID"):
        e.ExpandClusterRequest(REGION, AZ, "cl-1", "ctr-c", e.ComputeOrder(
            "im-c", _bms(), 1, queue_name="batch")).body()


def test_shrink_takes_one_to_ten_nodes():
    a, net = api([ok({"jobUUID": "job-s"})])
    assert a.shrink_cluster(AZ, "cl-1", ["nd-1", "nd-2"]) == "job-s"
    assert net.sent()[3] == {"regionID": REGION, "azName": AZ, "clusterUUID": "cl-1",
                             "nodeUUIDList": ["nd-1", "nd-2"]}
    for ids in ([], [f"nd-{i}" for i in range(11)]):
        with pytest.raises(RequestError, match="nodeUUIDList"):
            a.shrink_cluster(AZ, "cl-1", ids)


def test_create_answer_and_delete_answer():
    a, net = api([ok({"jobUUID": "job-rtbbjx4dxyoobvti63v0",
                      "masterOrderID": "9360ea21613540999e2b49c033091f4b",
                      "masterOrderNO": "20251224104521028947"}),
                  (200, {"returnObj": {}, "errorCode": "", "message": "SUCCESS",
                         "description": "成功", "statusCode": 800}),
                  ok({"masterOrderID": None})])
    order = a.create_cluster(create_request())
    assert order.job_uuid == "job-rtbbjx4dxyoobvti63v0"
    assert a.delete_cluster("cl-1") is None
    assert net.sent()[3] == {"regionID": REGION, "clusterUUID": "cl-1"}
    with pytest.raises(ResponseError, match="jobUUID is missing"):
        a.create_cluster(create_request())


def test_delegate_and_regions():
    a, net = api([ok({}), ok({"resultList": [{"regionID": REGION, "regionName": "华东1",
                                              "azList": [{"azName": AZ, "isSupportECS": True,
                                                          "isSupportSFS": True,
                                                          "isSupportOceanFS": True}]}]})])
    a.create_delegate()
    assert net.sent()[3] == {} and net.sent()[0] == "POST"
    [r] = a.list_regions()
    assert r.azs[0].name == AZ and r.azs[0].supports_oceanfs is True
