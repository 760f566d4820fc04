"""E-HPC request building (components/ctyun_hcc/api/ehpc.py) refuses, before anything is sent,
every value CTyun's parameter tables refuse (CTyun contract 2) (docs 23930 create, 23931 expand, 23932
shrink), naming the API, the documented field path and the rule; and accepts the edges."""

import pytest

from components.ctyun_hcc.api import ehpc as e
from components.ctyun_hcc.api.errors import RequestError

REGION, AZ = "bb9fdb42056f11eda1610242ac110002", "cn-huadong1-jsnj1A-public-ctcloud"
PW = "Zq7#mX9!pW"


def _bms(subnet="subnet-1", **disks):
    return e.ServerOrder("dvt-b", "BMS", subnet, bms_disks=e.BmsDisks(**disks))


def M(**kw):
    return e.MasterNode(**{**dict(role_uuid="ctr-m", image_uuid="im-m", server=_bms(), root_password=PW), **kw})


def C(**kw):
    return e.ComputeOrder(**{**dict(image_uuid="im-c", server=_bms(), count=3, queue_name="batch"), **kw})


def create(**over):
    base = dict(region_id=REGION, az_name=AZ, cluster_name="k3-ctyun", cluster_type_uuid="ct-1", vpc_id="vpc-1",
                storage=e.SfsOrder("k3-ctyun-fs", 500, "performance"), master=M(), compute_role_uuid="ctr-c",
                compute=C())
    return e.CreateClusterRequest(**{**base, **over})


def expand(**over):
    base = dict(region_id=REGION, az_name=AZ, cluster_uuid="cl-1", compute_role_uuid="ctr-c",
                order=C(queue_name="", queue_uuid="pt-1"))
    return e.ExpandClusterRequest(**{**base, **over})


CREATE = {
    "region": dict(region_id=""), "az": dict(az_name=""), "ctype": dict(cluster_type_uuid=""), "vpc": dict(vpc_id=""),
    "crole": dict(compute_role_uuid=""), "cname": dict(cluster_name="9k3"),
    "sg": dict(security_group_name="_sg"),
    "exist_uid": dict(storage=e.ExistingStorage("", 0)), "exist_type": dict(storage=e.ExistingStorage("fs-1", 2)),
    "sfs_name": dict(storage=e.SfsOrder("9fs", 500)), "sfs_size": dict(storage=e.SfsOrder("fs-a", 499)),
    "sfs_size_hi": dict(storage=e.SfsOrder("fs-a", 1048577)), "sfs_type": dict(storage=e.SfsOrder("fs-a", 500, "fast")),
    "ofs_subnet": dict(storage=e.OceanFsOrder("", "fs-a", 100)), "ofs_name": dict(storage=e.OceanFsOrder("s", "9", 100)),
    "ofs_size": dict(storage=e.OceanFsOrder("s", "fs-a", 99)), "ofs_type": dict(storage=e.OceanFsOrder("s", "fs-a", 100, "x")),
    "m_role": dict(master=M(role_uuid="")), "m_image": dict(master=M(image_uuid="")), "m_pw": dict(master=M(root_password="short")),
    "m_eip": dict(master=M(eip_bandwidth_mbps=301)),
    "spec": dict(master=M(server=e.ServerOrder("", "BMS", "subnet-1"))), "subnet": dict(master=M(server=e.ServerOrder("d", "BMS", ""))),
    "stype": dict(master=M(server=e.ServerOrder("d", "GPU", "s"))),
    "vm_disk": dict(master=M(server=e.ServerOrder("d", "VM", "s", system_disk=e.SystemDisk("NVME", 100)))),
    "vm_size": dict(master=M(server=e.ServerOrder("d", "VM", "s", system_disk=e.SystemDisk("SSD", 99)))),
    "bms_cloud_type": dict(master=M(server=_bms(cloud_system_disk_type="X", cloud_system_disk_size_gb=100))),
    "bms_cloud_size": dict(master=M(server=_bms(cloud_system_disk_type="SSD", cloud_system_disk_size_gb=0))),
    "bms_cloud_only_size": dict(master=M(server=_bms(cloud_system_disk_size_gb=100))),
    "c_image": dict(compute=C(image_uuid="")), "c_count0": dict(compute=C(count=0)), "c_count50": dict(compute=C(count=50)),
    "c_queue": dict(compute=C(queue_name="default")), "c_quuid": dict(compute=C(queue_uuid="pt-1")),
    "bill_type": dict(billing=e.Billing(False, "WEEK", 1)), "bill_count": dict(billing=e.Billing(False, "YEAR", 4)),
    "bill_count0": dict(billing=e.Billing(False, "MONTH", 0)),
}

CREATE_REFUSED = {
    'region': "CTyun hpc/create-cluster: regionID='' is required",
    'az': "CTyun hpc/create-cluster: azName='' is required",
    'ctype': "CTyun hpc/create-cluster: clusterTypeUUID='' is required",
    'vpc': "CTyun hpc/create-cluster: vpcID='' is required",
    'crole': "CTyun hpc/create-cluster: computeNodeConfig.clusterTypeRoleUUID='' is required",
    'cname': "CTyun hpc/create-cluster: clusterName='9k3' may hold only letters, digits and '-' and must start with a letter",
    'sg': "CTyun hpc/create-cluster: securityGroupName='_sg' may hold only letters, Chinese, digits, '-' and '_' and must start with a letter or Chinese character",
    'exist_uid': "CTyun hpc/create-cluster: storageConfig.storageUID='' is required",
    'exist_type': 'CTyun hpc/create-cluster: storageConfig.storageType=2 must be 0 (SFS) or 1 (OceanFS)',
    'sfs_name': "CTyun hpc/create-cluster: storageConfig.sfsOrder.sfsName='9fs' may hold only letters, digits and '-' and must start with a letter",
    'sfs_size': 'CTyun hpc/create-cluster: storageConfig.sfsOrder.sfsSize=499 must be an integer from 500 to 1048576',
    'sfs_size_hi': 'CTyun hpc/create-cluster: storageConfig.sfsOrder.sfsSize=1048577 must be an integer from 500 to 1048576',
    'sfs_type': "CTyun hpc/create-cluster: storageConfig.sfsOrder.sfsType='fast' must be one of capacity, performance",
    'ofs_subnet': "CTyun hpc/create-cluster: storageConfig.oceanFSOrder.subnetID='' is required",
    'ofs_name': "CTyun hpc/create-cluster: storageConfig.oceanFSOrder.oceanFSName='9' must be 2-255 characters long (is 1)",
    'ofs_size': 'CTyun hpc/create-cluster: storageConfig.oceanFSOrder.oceanFSSize=99 must be an integer from 100 to 1048576',
    'ofs_type': "CTyun hpc/create-cluster: storageConfig.oceanFSOrder.oceanFSType='x' must be one of capacity",
    'm_role': "CTyun hpc/create-cluster: masterNodeConfig.clusterTypeRoleUUID='' is required",
    'm_image': "CTyun hpc/create-cluster: masterNodeConfig.imageUUID='' is required",
    'm_pw': "CTyun hpc/create-cluster: masterNodeConfig.rootPassword='<hidden>' must be 8-30 characters long",
    'm_eip': 'CTyun hpc/create-cluster: masterNodeConfig.eipBandwidth=301 must be an integer from 1 to 300',
    'spec': "CTyun hpc/create-cluster: masterNodeConfig.bmsMasterNodeOrder.specificationUUID='' is required",
    'subnet': "CTyun hpc/create-cluster: masterNodeConfig.bmsMasterNodeOrder.subnetID='' is required",
    'stype': "CTyun hpc/create-cluster: masterNodeConfig.bmsMasterNodeOrder.specificationType='GPU' must be VM or BMS",
    'vm_disk': "CTyun hpc/create-cluster: masterNodeConfig.ecsMasterNodeOrder.systemDiskType='NVME' must be one of SATA, SAS, SSD, SSD-genric",
    'vm_size': 'CTyun hpc/create-cluster: masterNodeConfig.ecsMasterNodeOrder.systemDiskSize=99 must be an integer from 100 to 2048',
    'bms_cloud_type': "CTyun hpc/create-cluster: masterNodeConfig.bmsMasterNodeOrder.cloudSystemDiskType='X' must be one of SATA, SAS, SSD, SSD-genric",
    'bms_cloud_size': 'CTyun hpc/create-cluster: masterNodeConfig.bmsMasterNodeOrder.cloudSystemDiskSize=0 must be an integer from 100 to 2048',
    'bms_cloud_only_size': "CTyun hpc/create-cluster: masterNodeConfig.bmsMasterNodeOrder.cloudSystemDiskType='' must be one of SATA, SAS, SSD, SSD-genric",
    'c_image': "CTyun hpc/create-cluster: computeNodeConfig.bmsComputeNodeOrders[0].imageUUID='' is required",
    'c_count0': 'CTyun hpc/create-cluster: computeNodeConfig.bmsComputeNodeOrders[0].orderCount=0 must be an integer from 1 to 49',
    'c_count50': 'CTyun hpc/create-cluster: computeNodeConfig.bmsComputeNodeOrders[0].orderCount=50 must be an integer from 1 to 49',
    'c_queue': "CTyun hpc/create-cluster: computeNodeConfig.bmsComputeNodeOrders[0].queueName='default' must not be 'default' (reserved)",
    'c_quuid': "CTyun hpc/create-cluster: computeNodeConfig.bmsComputeNodeOrders[0].queueUUID='pt-1' is not a create-cluster field: create names its queue by queueName (queueUUID is for expand-cluster)",
    'bill_type': "CTyun hpc/create-cluster: cycleType='WEEK' must be MONTH or YEAR for a subscription (onDemand false)",
    'bill_count': 'CTyun hpc/create-cluster: cycleCount=4 must be an integer from 1 to 3',
    'bill_count0': 'CTyun hpc/create-cluster: cycleCount=0 must be an integer from 1 to 11',
}


@pytest.mark.parametrize("case", sorted(CREATE))
def test_create_cluster_refusals_name_the_documented_field_and_rule(case):
    with pytest.raises(RequestError) as err:
        create(**CREATE[case]).body()
    assert str(err.value) == CREATE_REFUSED[case]
    assert PW not in str(err.value)


def _x(**kw):
    return expand(**kw).body()


OTHER_REFUSED = [
    (lambda: _x(region_id=""), "CTyun hpc/expand-cluster: regionID='' is required"),
    (lambda: _x(az_name=""), "CTyun hpc/expand-cluster: azName='' is required"),
    (lambda: _x(cluster_uuid=""), "CTyun hpc/expand-cluster: clusterUUID='' is required"),
    (lambda: _x(compute_role_uuid=""), "CTyun hpc/expand-cluster: clusterTypeRoleUUID='' is required"),
    (lambda: _x(order=C()), "CTyun hpc/expand-cluster: queueUUID='' is required (from hpc/list-queues)"),
    (lambda: _x(order=C(queue_uuid="p", count=51)),
     "CTyun hpc/expand-cluster: bmsComputeNodeOrders[0].orderCount=51 must be an integer from 1 to 50"),
    (lambda: _x(order=C(queue_uuid="p", count=0)),
     "CTyun hpc/expand-cluster: bmsComputeNodeOrders[0].orderCount=0 must be an integer from 1 to 50"),
    (lambda: e.shrink_body("", AZ, "cl-1", ["n"]), "CTyun hpc/shrink-cluster: regionID='' is required"),
    (lambda: e.shrink_body(REGION, "", "cl-1", ["n"]), "CTyun hpc/shrink-cluster: azName='' is required"),
    (lambda: e.shrink_body(REGION, AZ, "", ["n"]), "CTyun hpc/shrink-cluster: clusterUUID='' is required"),
    (lambda: e.shrink_body(REGION, AZ, "cl-1", []), "CTyun hpc/shrink-cluster: nodeUUIDList=[] must list 1-10 node UUIDs"),
    (lambda: e.shrink_body(REGION, AZ, "cl-1", [f"n{i}" for i in range(11)]),
     "CTyun hpc/shrink-cluster: nodeUUIDList=['n0', 'n1', 'n2', 'n3', 'n4', 'n5', 'n6', 'n7', 'n8', 'n9', 'n10'] "
     "must list 1-10 node UUIDs"),
    (lambda: e.shrink_body(REGION, AZ, "cl-1", ["n", ""]),
     "CTyun hpc/shrink-cluster: nodeUUIDList=['n', ''] must list 1-10 node UUIDs"),
    (lambda: e.shrink_body(REGION, AZ, "cl-1", ["n", 7]),
     "CTyun hpc/shrink-cluster: nodeUUIDList=['n', 7] must list 1-10 node UUIDs"),
]


@pytest.mark.parametrize("build,message", OTHER_REFUSED)
def test_expand_and_shrink_refusals(build, message):
    with pytest.raises(RequestError) as err:
        build()
    assert str(err.value) == message


def test_edges_are_accepted():
    assert create(compute=C(count=1)).body()["computeNodeConfig"]["bmsComputeNodeOrders"][0]["orderCount"] == 1
    assert create(compute=C(count=49)).body()["computeNodeConfig"]["bmsComputeNodeOrders"][0]["orderCount"] == 49
    assert _x(order=C(queue_uuid="p", count=50))["bmsComputeNodeOrders"][0]["orderCount"] == 50
    assert len(e.shrink_body(REGION, AZ, "cl-1", [f"n{i}" for i in range(10)])["nodeUUIDList"]) == 10
    assert create(storage=e.SfsOrder("fs-a", 1048576, "capacity")).body()["storageConfig"]["sfsOrder"] == {
        "sfsName": "fs-a", "sfsSize": 1048576, "sfsType": "capacity"}
    assert create(master=M(eip_bandwidth_mbps=300)).body()["masterNodeConfig"]["eipBandwidth"] == 300
    assert create(master=M(eip_bandwidth_mbps=1)).body()["masterNodeConfig"]["eipCreateMethod"] == "AutoCreate"
    body = create(billing=e.Billing(False, "YEAR", 3)).body()
    assert (body["onDemand"], body["cycleType"], body["cycleCount"]) == (False, "YEAR", 3)
    assert create(billing=e.Billing(False, "MONTH", 11)).body()["cycleCount"] == 11
    assert "cycleType" not in create(billing=e.Billing(True, "YEAR", 9)).body()


def test_existing_storage_and_disk_variants():
    assert create(storage=e.ExistingStorage("fs-1", 1)).body()["storageConfig"] == {
        "storageCreateMethod": "UseExist", "storageUID": "fs-1", "storageType": 1}
    assert create(storage=e.ExistingStorage("fs-1", 0)).body()["storageConfig"]["storageType"] == 0
    order = create(master=M(server=_bms(cloud_system_disk_type="SAS", cloud_system_disk_size_gb=2048)))
    assert order.body()["masterNodeConfig"]["bmsMasterNodeOrder"] == {
        "specificationUUID": "dvt-b", "subnetID": "subnet-1", "cloudSystemDiskType": "SAS",
        "cloudSystemDiskSize": 2048}
    vm = create(compute=C(server=e.ServerOrder("dvt-v", "VM", "subnet-2", system_disk=e.SystemDisk("SATA", 2048))))
    assert vm.body()["computeNodeConfig"]["ecsComputeNodeOrders"] == [{
        "orderCount": 3, "imageUUID": "im-c", "queueName": "batch", "specificationUUID": "dvt-v",
        "subnetID": "subnet-2", "systemDiskType": "SATA", "systemDiskSize": 2048}]
    assert e.ServerOrder("d", "VM", "s").prefix == "ecs" and e.ServerOrder("d", "BMS", "s").prefix == "bms"
    assert e.SystemDisk() == e.SystemDisk("SSD", 100) and e.BmsDisks().fields("api", "w") == {}
    assert e.Billing() == e.Billing(True, "", 0) and e.Billing().fields("api") == {"onDemand": True}
    assert e.SfsOrder("a", 1).sfs_type == "performance" and e.OceanFsOrder("s", "a", 1).oceanfs_type == "capacity"
    assert M().eip_bandwidth_mbps == 0 and create().body()["masterNodeConfig"]["eipCreateMethod"] == "NoUse"
    assert "securityGroupName" not in create().body()


def test_one_node_may_be_shrunk():
    assert e.shrink_body(REGION, AZ, "cl-1", ["nd-1"]) == {
        "regionID": REGION, "azName": AZ, "clusterUUID": "cl-1", "nodeUUIDList": ["nd-1"]}
