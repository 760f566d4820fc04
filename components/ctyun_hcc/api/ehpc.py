"""CTyun E-HPC (`/v4/cthpc/`): typed requests, strict answers, one method per documented API.

Contract: CTyun contract 2 (doc ids below, from CTyun's parameter tables). Field names,
enums and limits are the documented ones; a request that breaks them raises RequestError before
it is sent, an answer outside them raises ResponseError naming the API and the field.

Facts that shape this module:
- listings answer `returnObj.resultList`; only `hpc/list-clusters` and `hpc/list-nodes` page
  (`pageNo`/`pageSize` <= 50, followed to `totalCount`); catalog lists answer everything;
- specifications and images are grouped per role (`master`, `compute`); they carry no NPU or
  CPU field: the specification name is the only description;
- `nodeRole` is an integer, 0 master / 1 compute;
- create-cluster answers a job and no cluster id: the cluster is found in `hpc/list-clusters`
  by name; expand takes a flat body naming the queue by `queueUUID` (from list-queues);
- no E-HPC body has a `clientToken`: every order is `repeatable=False` (never re-sent after it
  may have run; see transport.py);
- list-queues documents two shapes (`returnObj.resultList` and `returnObj` as the array):
  both are read.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from . import rules
from .errors import RequestError, ResponseError
from .parse import Obj, all_pages, page_rows, return_obj, whole_list
from .transport import Operation, Transport

HPC = "/v4/cthpc"


def _op(method: str, path: str, doc: str, repeatable: bool) -> Operation:
    return Operation("hpc", method, f"{HPC}/{path}", doc, repeatable)


CREATE_DELEGATE = _op("POST", "create-delegate", "23951", False)
LIST_REGIONS = _op("GET", "list-regions", "13086", True)
LIST_CLUSTER_TYPES = _op("GET", "list-cluster-types", "23927", True)
LIST_SPECIFICATIONS = _op("GET", "list-specifications", "23940", True)
LIST_AVAILABLE_IMAGES = _op("GET", "list-available-images", "23941", True)
CREATE_CLUSTER = _op("POST", "hpc/create-cluster", "23930", False)
QUERY_JOB_RESULT = _op("GET", "query-job-result", "23926", True)
LIST_CLUSTERS = _op("GET", "hpc/list-clusters", "23928", True)
LIST_NODES = _op("GET", "hpc/list-nodes", "23938", True)
LIST_QUEUES = _op("GET", "hpc/list-queues", "23947", True)
EXPAND_CLUSTER = _op("POST", "hpc/expand-cluster", "23931", False)
SHRINK_CLUSTER = _op("POST", "hpc/shrink-cluster", "23932", False)
DELETE_CLUSTER = _op("POST", "delete-cluster", "5621", False)
OPERATIONS = (CREATE_DELEGATE, LIST_REGIONS, LIST_CLUSTER_TYPES, LIST_SPECIFICATIONS,
              LIST_AVAILABLE_IMAGES, CREATE_CLUSTER, QUERY_JOB_RESULT, LIST_CLUSTERS,
              LIST_NODES, LIST_QUEUES, EXPAND_CLUSTER, SHRINK_CLUSTER, DELETE_CLUSTER)

# -- enums (CTyun contract 4.1) -------------------------------------------------------------------
JOB_PENDING = ("wait", "pending_submit", "submitted")
JOB_DONE = ("success", "force_completed")
JOB_FAILED = ("failed", "cancel", "console_failed")
CLUSTER_STATUSES = ("available", "unavailable")
NODE_STATUSES = ("creating", "starting", "running", "stopping", "stopped", "restarting", "error",
                 "reinstalling", "resetting_password", "destroying", "unsubscribing",
                 "unsubscribed", "expired", "frozen", "deleting_on_demand",
                 "update_security_group", "adding_network", "deleting_network")
#: node states on the way out: such a node is no longer counted as serving
NODE_LEAVING = ("destroying", "unsubscribing", "unsubscribed", "deleting_on_demand")
QUEUE_STATUSES = ("creating", "deleting", "enabled", "error")
ROLE_MASTER, ROLE_COMPUTE = 0, 1
ROLE_NAMES = ("master", "compute")
SPEC_TYPES = ("VM", "BMS")
CLUSTER_TYPE_NAME, SCHEDULER_TYPE = "SCHEDULER", "SLURM"


# -- answers ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Az:
    name: str
    supports_sfs: Optional[bool]
    supports_oceanfs: Optional[bool]


@dataclass(frozen=True)
class Region:
    region_id: str
    name: str
    #: None when the answer has no `azList` (the older example); then the AZ is not checked
    azs: Optional[Tuple[Az, ...]]


@dataclass(frozen=True)
class ClusterType:
    uuid: str
    name: str
    scheduler: str
    #: role name (`master`, `compute`, or whatever CTyun lists) -> clusterTypeRoleUUID
    roles: Tuple[Tuple[str, str], ...]

    def role(self, name: str) -> List[str]:
        return [u for n, u in self.roles if n == name]


@dataclass(frozen=True)
class Specification:
    uuid: str
    name: str
    type: str  # VM | BMS


@dataclass(frozen=True)
class RoleSpecifications:
    role_name: str
    role_uuid: str
    specifications: Tuple[Specification, ...]


@dataclass(frozen=True)
class Image:
    uuid: str
    name: str
    version: str
    node_type: str  # VM | BMS
    architecture: str

    def label(self) -> str:
        return f"{self.name} {self.version} ({self.uuid})".replace("  ", " ")


@dataclass(frozen=True)
class RoleImages:
    role_name: str
    role_uuid: str
    images: Tuple[Image, ...]


@dataclass(frozen=True)
class OrderAccepted:
    job_uuid: str
    master_order_id: Optional[str]
    master_order_no: Optional[str]


@dataclass(frozen=True)
class Cluster:
    uuid: str
    name: str
    az_name: str
    vpc_id: str
    security_group_id: Optional[str]
    type_uuid: Optional[str]
    status: str  # available | unavailable
    inner_ip: Optional[str]
    public_ip: Optional[str]
    total_compute: Optional[int]
    creating_compute: Optional[int]
    create_time: Optional[str]


@dataclass(frozen=True)
class Node:
    uuid: str
    name: str
    role: int  # 0 master, 1 compute
    node_type: Optional[str]
    status: str
    inner_ip: Optional[str]
    public_ip: Optional[str]
    queue_name: Optional[str]
    subnet_id: Optional[str]
    specification_name: Optional[str]
    #: the server behind the node (`resourceInstanceID`: what CTyun's server console shows)
    resource_instance_id: Optional[str] = None

    @property
    def leaving(self) -> bool:
        return self.status in NODE_LEAVING


@dataclass(frozen=True)
class Queue:
    uuid: str
    name: str
    status: str
    is_default: Optional[bool]


def parse_region(o: Obj) -> Region:
    azs = None
    if o.has("azList"):
        azs = tuple(Az(a.str("azName", nonempty=True),
                       a.bool("isSupportSFS", required=False, nullable=True),
                       a.bool("isSupportOceanFS", required=False, nullable=True))
                    for a in o.objs("azList"))
    return Region(o.str("regionID", nonempty=True), o.str("regionName", required=False) or "",
                  azs)


def parse_cluster_type(o: Obj) -> ClusterType:
    roles = tuple((r.str("clusterTypeRoleName", nonempty=True),
                   r.str("clusterTypeRoleUUID", nonempty=True)) for r in o.objs("roleList"))
    # names are read as text: whether the console editions appear here is an open question
    # (CTyun contract 6.9); selection, not parsing, decides and reports what was listed
    return ClusterType(o.str("clusterTypeUUID", nonempty=True), o.str("clusterTypeName"),
                       o.str("schedulerType"), roles)


def parse_role_specifications(o: Obj) -> RoleSpecifications:
    specs = tuple(Specification(s.str("specificationUUID", nonempty=True),
                                s.str("specificationName", nonempty=True),
                                s.enum("specificationType", SPEC_TYPES))
                  for s in o.objs("specificationList"))
    return RoleSpecifications(o.str("clusterTypeRoleName", nonempty=True),
                              o.str("clusterTypeRoleUUID", nonempty=True), specs)


def parse_role_images(o: Obj) -> RoleImages:
    images = tuple(Image(i.str("imageUUID", nonempty=True), i.str("name"),
                         i.str("version", required=False, nullable=True) or "",
                         i.enum("nodeType", SPEC_TYPES),
                         i.str("architectureType", required=False, nullable=True) or "")
                   for i in o.objs("imageList"))
    return RoleImages(o.str("clusterTypeRoleName", nonempty=True),
                      o.str("clusterTypeRoleUUID", nonempty=True), images)


def parse_order(api: str, value: Any) -> OrderAccepted:
    o = return_obj(api, value)
    return OrderAccepted(o.str("jobUUID", nonempty=True),
                         o.str("masterOrderID", required=False, nullable=True),
                         o.str("masterOrderNO", required=False, nullable=True))


def parse_job_status(api: str, value: Any) -> str:
    return return_obj(api, value).enum("status", JOB_PENDING + JOB_DONE + JOB_FAILED)


def parse_cluster(o: Obj) -> Cluster:
    return Cluster(
        uuid=o.str("clusterUUID", nonempty=True), name=o.str("clusterName"),
        az_name=o.str("azName"), vpc_id=o.str("vpcID"),
        security_group_id=o.str("securityGroupID", required=False, nullable=True),
        type_uuid=o.str("clusterTypeUUID", required=False, nullable=True),
        status=o.enum("clusterAvailableStatus", CLUSTER_STATUSES),
        inner_ip=o.str("innerIP", required=False, nullable=True),
        public_ip=o.str("publicIP", required=False, nullable=True) or None,
        total_compute=o.int("totalComputeNodeCount", required=False, nullable=True),
        creating_compute=o.int("creatingComputeNodeCount", required=False, nullable=True),
        create_time=o.str("createTime", required=False, nullable=True))


def parse_node(o: Obj) -> Node:
    return Node(
        uuid=o.str("nodeUUID", nonempty=True), name=o.str("nodeName"),
        role=o.enum("nodeRole", (ROLE_MASTER, ROLE_COMPUTE)),
        node_type=o.enum("nodeType", SPEC_TYPES, required=False, nullable=True),
        status=o.enum("nodeStatus", NODE_STATUSES),
        inner_ip=o.str("innerIP", required=False, nullable=True),
        public_ip=o.str("publicIP", required=False, nullable=True) or None,
        queue_name=o.str("queueName", required=False, nullable=True),
        subnet_id=o.str("subnetID", required=False, nullable=True),
        specification_name=o.str("specificationName", required=False, nullable=True),
        resource_instance_id=o.str("resourceInstanceID", required=False, nullable=True))


def parse_queue(o: Obj) -> Queue:
    return Queue(o.str("queueUUID", nonempty=True), o.str("queueName"),
                 o.enum("queueStatus", QUEUE_STATUSES),
                 o.bool("isDefault", required=False, nullable=True))


def parse_queues(api: str, value: Any) -> List[Queue]:
    """Both documented shapes: `returnObj.resultList` (schema) and `returnObj` = [...]
    (example and CLI fixture) [doc 23947]."""
    if isinstance(value, list):
        rows = [Obj(api, f"returnObj[{i}]", q) for i, q in enumerate(value)]
    else:
        rows = whole_list(api, value)
    return [parse_queue(q) for q in rows]


def read_delegate(value: Any) -> None:
    """create-delegate answers an empty object (doc 23951)."""
    if value is not None and not isinstance(value, dict):
        raise ResponseError(CREATE_DELEGATE.name, "returnObj", "is not an object", value)


def read_shrink(value: Any) -> str:
    return return_obj(SHRINK_CLUSTER.name, value).str("jobUUID", nonempty=True)


def read_delete(value: Any) -> Optional[str]:
    """delete-cluster documents `{}`; a `jobUUID`, should one come, is returned to wait on."""
    if value is None:
        return None
    return return_obj(DELETE_CLUSTER.name, value).str("jobUUID", required=False,
                                                     nullable=True) or None


def _page_reader(op: Operation, parse_row):
    def read(value: Any) -> Tuple[list, int, int]:
        rows, total, pages = page_rows(op.name, value, "resultList")
        return [parse_row(r) for r in rows], total, pages
    return read


def _list_reader(op: Operation, parse_row):
    return lambda value: [parse_row(o) for o in whole_list(op.name, value)]


#: how each answer (`returnObj`) is read, by API name; the methods below use these, and the
#: contract tests replay every documented example through them
ANSWERS = {
    CREATE_DELEGATE.name: read_delegate,
    LIST_REGIONS.name: _list_reader(LIST_REGIONS, parse_region),
    LIST_CLUSTER_TYPES.name: _list_reader(LIST_CLUSTER_TYPES, parse_cluster_type),
    LIST_SPECIFICATIONS.name: _list_reader(LIST_SPECIFICATIONS, parse_role_specifications),
    LIST_AVAILABLE_IMAGES.name: _list_reader(LIST_AVAILABLE_IMAGES, parse_role_images),
    CREATE_CLUSTER.name: lambda value: parse_order(CREATE_CLUSTER.name, value),
    QUERY_JOB_RESULT.name: lambda value: parse_job_status(QUERY_JOB_RESULT.name, value),
    LIST_CLUSTERS.name: _page_reader(LIST_CLUSTERS, parse_cluster),
    LIST_NODES.name: _page_reader(LIST_NODES, parse_node),
    LIST_QUEUES.name: lambda value: parse_queues(LIST_QUEUES.name, value),
    EXPAND_CLUSTER.name: lambda value: parse_order(EXPAND_CLUSTER.name, value),
    SHRINK_CLUSTER.name: read_shrink,
    DELETE_CLUSTER.name: read_delete,
}


# -- requests --------------------------------------------------------------------------------
def _need(api: str, key: str, value: Any, ok: bool, rule: str) -> None:
    if not ok:
        raise RequestError(api, key, value, rule)


def _nonempty(api: str, key: str, value: Any) -> None:
    _need(api, key, value, isinstance(value, str) and value != "", "is required")


def _count(api: str, key: str, value: Any, bounds: Tuple[int, int]) -> None:
    _need(api, key, value, rules.int_in(value, *bounds),
          f"must be an integer from {bounds[0]} to {bounds[1]}")


@dataclass(frozen=True)
class BmsDisks:
    """Optional disk fields of a bare-metal order (doc 23930): RAID UUIDs for servers with local
    system / data disks, a cloud system disk for specifications that boot from one."""

    local_system_volume_raid_uuid: str = ""
    local_data_volume_raid_uuid: str = ""
    cloud_system_disk_type: str = ""
    cloud_system_disk_size_gb: int = 0

    def fields(self, api: str, where: str) -> Dict[str, Any]:
        out: Dict[str, Any] = {}
        if self.local_system_volume_raid_uuid:
            out["localSystemVolumeRaidUUID"] = self.local_system_volume_raid_uuid
        if self.local_data_volume_raid_uuid:
            out["localDataVolumeRaidUUID"] = self.local_data_volume_raid_uuid
        if self.cloud_system_disk_type or self.cloud_system_disk_size_gb:
            _need(api, f"{where}.cloudSystemDiskType", self.cloud_system_disk_type,
                  self.cloud_system_disk_type in rules.SYSTEM_DISK_TYPES,
                  f"must be one of {', '.join(rules.SYSTEM_DISK_TYPES)}")
            _count(api, f"{where}.cloudSystemDiskSize", self.cloud_system_disk_size_gb,
                   rules.SYSTEM_DISK_GB)
            out["cloudSystemDiskType"] = self.cloud_system_disk_type
            out["cloudSystemDiskSize"] = self.cloud_system_disk_size_gb
        return out


@dataclass(frozen=True)
class SystemDisk:
    """The system disk of a cloud-server (VM) order: both fields required there."""

    type: str = "SSD"
    size_gb: int = 100

    def fields(self, api: str, where: str) -> Dict[str, Any]:
        _need(api, f"{where}.systemDiskType", self.type, self.type in rules.SYSTEM_DISK_TYPES,
              f"must be one of {', '.join(rules.SYSTEM_DISK_TYPES)}")
        _count(api, f"{where}.systemDiskSize", self.size_gb, rules.SYSTEM_DISK_GB)
        return {"systemDiskType": self.type, "systemDiskSize": self.size_gb}


@dataclass(frozen=True)
class ServerOrder:
    """Which servers to order: a specification (its type picks the ecs/bms order), subnet and
    the disk fields that kind of order takes."""

    specification_uuid: str
    specification_type: str  # VM | BMS
    subnet_id: str
    system_disk: SystemDisk = SystemDisk()
    bms_disks: BmsDisks = BmsDisks()

    def fields(self, api: str, where: str) -> Dict[str, Any]:
        _nonempty(api, f"{where}.specificationUUID", self.specification_uuid)
        _nonempty(api, f"{where}.subnetID", self.subnet_id)
        _need(api, f"{where}.specificationType", self.specification_type,
              self.specification_type in SPEC_TYPES, "must be VM or BMS")
        out = {"specificationUUID": self.specification_uuid, "subnetID": self.subnet_id}
        if self.specification_type == "VM":
            out.update(self.system_disk.fields(api, where))
        else:
            out.update(self.bms_disks.fields(api, where))
        return out

    @property
    def prefix(self) -> str:
        return "ecs" if self.specification_type == "VM" else "bms"


@dataclass(frozen=True)
class SfsOrder:
    name: str
    size_gb: int
    sfs_type: str = "performance"


@dataclass(frozen=True)
class OceanFsOrder:
    subnet_id: str
    name: str
    size_gb: int
    oceanfs_type: str = "capacity"


@dataclass(frozen=True)
class ExistingStorage:
    storage_uid: str
    storage_type: int  # 0 SFS, 1 OceanFS


Storage = Union[SfsOrder, OceanFsOrder, ExistingStorage]


def storage_config(api: str, s: Storage) -> Dict[str, Any]:
    where = "storageConfig"
    if isinstance(s, ExistingStorage):
        _nonempty(api, f"{where}.storageUID", s.storage_uid)
        _need(api, f"{where}.storageType", s.storage_type, s.storage_type in (0, 1),
              "must be 0 (SFS) or 1 (OceanFS)")
        return {"storageCreateMethod": "UseExist", "storageUID": s.storage_uid,
                "storageType": s.storage_type}
    if isinstance(s, SfsOrder):
        w = f"{where}.sfsOrder"
        problem = rules.fs_name_problem(s.name)
        _need(api, f"{w}.sfsName", s.name, problem is None, problem or "")
        _count(api, f"{w}.sfsSize", s.size_gb, rules.SFS_GB)
        _need(api, f"{w}.sfsType", s.sfs_type, s.sfs_type in rules.SFS_TYPES,
              f"must be one of {', '.join(rules.SFS_TYPES)}")
        return {"storageCreateMethod": "AutoCreate",
                "sfsOrder": {"sfsName": s.name, "sfsSize": s.size_gb, "sfsType": s.sfs_type}}
    w = f"{where}.oceanFSOrder"
    _nonempty(api, f"{w}.subnetID", s.subnet_id)
    problem = rules.fs_name_problem(s.name)
    _need(api, f"{w}.oceanFSName", s.name, problem is None, problem or "")
    _count(api, f"{w}.oceanFSSize", s.size_gb, rules.OCEANFS_GB)
    _need(api, f"{w}.oceanFSType", s.oceanfs_type, s.oceanfs_type in rules.OCEANFS_TYPES,
          f"must be one of {', '.join(rules.OCEANFS_TYPES)}")
    return {"storageCreateMethod": "AutoCreate",
            "oceanFSOrder": {"subnetID": s.subnet_id, "oceanFSName": s.name,
                             "oceanFSType": s.oceanfs_type, "oceanFSSize": s.size_gb}}


@dataclass(frozen=True)
class Billing:
    """Pay-as-you-go (`onDemand`), or a subscription of `cycle_count` `cycle_type`s."""

    on_demand: bool = True
    cycle_type: str = ""
    cycle_count: int = 0

    def fields(self, api: str) -> Dict[str, Any]:
        if self.on_demand:
            return {"onDemand": True}
        _need(api, "cycleType", self.cycle_type, self.cycle_type in rules.CYCLE_COUNT,
              "must be MONTH or YEAR for a subscription (onDemand false)")
        _count(api, "cycleCount", self.cycle_count, rules.CYCLE_COUNT[self.cycle_type])
        return {"onDemand": False, "cycleType": self.cycle_type,
                "cycleCount": self.cycle_count}


@dataclass(frozen=True)
class MasterNode:
    role_uuid: str
    image_uuid: str
    server: ServerOrder
    root_password: str = field(repr=False)
    #: public IP: 0 = none (`NoUse`), else an EIP of that many Mbit/s (`AutoCreate`)
    eip_bandwidth_mbps: int = 0

    def fields(self, api: str) -> Dict[str, Any]:
        w = "masterNodeConfig"
        _nonempty(api, f"{w}.clusterTypeRoleUUID", self.role_uuid)
        _nonempty(api, f"{w}.imageUUID", self.image_uuid)
        problem = rules.root_password_problem(self.root_password)
        _need(api, f"{w}.rootPassword", "<hidden>", problem is None, problem or "")
        out: Dict[str, Any] = {
            "clusterTypeRoleUUID": self.role_uuid, "imageUUID": self.image_uuid,
            "rootPassword": self.root_password, "nodeCreateMethod": "AutoCreate",
        }
        if self.eip_bandwidth_mbps:
            _count(api, f"{w}.eipBandwidth", self.eip_bandwidth_mbps, rules.EIP_MBPS)
            out.update(eipCreateMethod="AutoCreate", eipBandwidth=self.eip_bandwidth_mbps)
        else:
            out["eipCreateMethod"] = "NoUse"
        out[f"{self.server.prefix}MasterNodeOrder"] = self.server.fields(
            api, f"{w}.{self.server.prefix}MasterNodeOrder")
        return out


@dataclass(frozen=True)
class ComputeOrder:
    """One order entry (one queue): `count` servers. Create names the queue (`queue_name`),
    expand by UUID (`queue_uuid`)."""

    image_uuid: str
    server: ServerOrder
    count: int
    queue_name: str = ""
    queue_uuid: str = ""

    def entry(self, api: str, where: str, bounds: Tuple[int, int]) -> Dict[str, Any]:
        _nonempty(api, f"{where}.imageUUID", self.image_uuid)
        _count(api, f"{where}.orderCount", self.count, bounds)
        out: Dict[str, Any] = {"orderCount": self.count, "imageUUID": self.image_uuid}
        if self.queue_uuid:
            out["queueUUID"] = self.queue_uuid
        else:
            problem = rules.queue_name_problem(self.queue_name)
            _need(api, f"{where}.queueName", self.queue_name, problem is None, problem or "")
            out["queueName"] = self.queue_name
        out.update(self.server.fields(api, where))
        return out


@dataclass(frozen=True)
class CreateClusterRequest:
    """hpc/create-cluster (doc 23930): one master, one compute order, new storage or existing."""

    region_id: str
    az_name: str
    cluster_name: str
    cluster_type_uuid: str
    vpc_id: str
    storage: Storage
    master: MasterNode
    compute_role_uuid: str
    compute: ComputeOrder
    billing: Billing = Billing()
    #: omitted: E-HPC creates a group named hpc-... itself
    security_group_name: str = ""

    def body(self) -> Dict[str, Any]:
        api = CREATE_CLUSTER.name
        for key, value in (("regionID", self.region_id), ("azName", self.az_name),
                           ("clusterTypeUUID", self.cluster_type_uuid),
                           ("vpcID", self.vpc_id),
                           ("computeNodeConfig.clusterTypeRoleUUID", self.compute_role_uuid)):
            _nonempty(api, key, value)
        problem = rules.cluster_name_problem(self.cluster_name)
        _need(api, "clusterName", self.cluster_name, problem is None, problem or "")
        out: Dict[str, Any] = {
            "regionID": self.region_id, "azName": self.az_name,
            "clusterName": self.cluster_name, "clusterTypeUUID": self.cluster_type_uuid,
            "vpcID": self.vpc_id,
        }
        if self.security_group_name:
            problem = rules.ehpc_security_group_name_problem(self.security_group_name)
            _need(api, "securityGroupName", self.security_group_name, problem is None,
                  problem or "")
            out["securityGroupName"] = self.security_group_name
        out["storageConfig"] = storage_config(api, self.storage)
        out["masterNodeConfig"] = self.master.fields(api)
        key = f"{self.compute.server.prefix}ComputeNodeOrders"
        _need(api, f"computeNodeConfig.{key}[0].queueUUID", self.compute.queue_uuid,
              not self.compute.queue_uuid,
              "is not a create-cluster field: create names its queue by queueName "
              "(queueUUID is for expand-cluster)")
        out["computeNodeConfig"] = {
            "clusterTypeRoleUUID": self.compute_role_uuid, "nodeCreateMethod": "AutoCreate",
            key: [self.compute.entry(api, f"computeNodeConfig.{key}[0]",
                                     rules.CREATE_ORDER_COUNT)]}
        out.update(self.billing.fields(api))
        return out


@dataclass(frozen=True)
class ExpandClusterRequest:
    """hpc/expand-cluster (doc 23931): a flat body, one order entry naming the queue by UUID."""

    region_id: str
    az_name: str
    cluster_uuid: str
    compute_role_uuid: str
    order: ComputeOrder
    billing: Billing = Billing()

    def body(self) -> Dict[str, Any]:
        api = EXPAND_CLUSTER.name
        for key, value in (("regionID", self.region_id), ("azName", self.az_name),
                           ("clusterUUID", self.cluster_uuid),
                           ("clusterTypeRoleUUID", self.compute_role_uuid)):
            _nonempty(api, key, value)
        _need(api, "queueUUID", self.order.queue_uuid, bool(self.order.queue_uuid),
              "is required (from hpc/list-queues)")
        key = f"{self.order.server.prefix}ComputeNodeOrders"
        out: Dict[str, Any] = {
            "regionID": self.region_id, "azName": self.az_name,
            "clusterUUID": self.cluster_uuid, "clusterTypeRoleUUID": self.compute_role_uuid,
            "nodeCreateMethod": "AutoCreate",
            key: [self.order.entry(api, f"{key}[0]", rules.EXPAND_ORDER_COUNT)],
        }
        out.update(self.billing.fields(api))
        return out


def shrink_body(region_id: str, az_name: str, cluster_uuid: str,
                node_uuids: Sequence[str]) -> Dict[str, Any]:
    api = SHRINK_CLUSTER.name
    for key, value in (("regionID", region_id), ("azName", az_name),
                       ("clusterUUID", cluster_uuid)):
        _nonempty(api, key, value)
    ids = list(node_uuids)
    _need(api, "nodeUUIDList", ids, rules.SHRINK_BATCH[0] <= len(ids) <= rules.SHRINK_BATCH[1]
          and all(isinstance(i, str) and i for i in ids), "must list 1-10 node UUIDs")
    return {"regionID": region_id, "azName": az_name, "clusterUUID": cluster_uuid,
            "nodeUUIDList": ids}


# -- operations ------------------------------------------------------------------------------
class Ehpc:
    """E-HPC calls of one region. Holds a Transport (built per provider call, never pickled)."""

    PAGE_SIZE = rules.PAGE_SIZE[1]

    def __init__(self, transport: Transport, region_id: str):
        self.t, self.region_id = transport, region_id

    def _get(self, op: Operation, params: Dict[str, Any], deadline=None) -> Any:
        return self.t.call(op, params=params, deadline=deadline)

    def create_delegate(self, deadline=None) -> None:
        """POST create-delegate {} (doc 23951): the service delegation E-HPC acts through."""
        read_delegate(self.t.call(CREATE_DELEGATE, body={}, deadline=deadline))

    def list_regions(self, deadline=None) -> List[Region]:
        return ANSWERS[LIST_REGIONS.name](self._get(LIST_REGIONS, {}, deadline))

    def list_cluster_types(self, az_name: str, deadline=None) -> List[ClusterType]:
        value = self._get(LIST_CLUSTER_TYPES, {"regionID": self.region_id, "azName": az_name},
                          deadline)
        return ANSWERS[LIST_CLUSTER_TYPES.name](value)

    def list_specifications(self, az_name: str, role_uuid: Optional[str] = None,
                            deadline=None) -> List[RoleSpecifications]:
        value = self._get(LIST_SPECIFICATIONS, {"regionID": self.region_id, "azName": az_name,
                                                "clusterTypeRoleUUID": role_uuid}, deadline)
        return ANSWERS[LIST_SPECIFICATIONS.name](value)

    def list_available_images(self, az_name: str, specification_uuid: str,
                              role_uuid: Optional[str] = None,
                              deadline=None) -> List[RoleImages]:
        value = self._get(LIST_AVAILABLE_IMAGES, {
            "regionID": self.region_id, "azName": az_name,
            "specificationUUID": specification_uuid, "clusterTypeRoleUUID": role_uuid},
            deadline)
        return ANSWERS[LIST_AVAILABLE_IMAGES.name](value)

    def create_cluster(self, request: CreateClusterRequest, deadline=None) -> OrderAccepted:
        """Order a cluster. Sent once: a lost answer raises TransportError(may_have_run)."""
        value = self.t.call(CREATE_CLUSTER, body=request.body(), deadline=deadline)
        return parse_order(CREATE_CLUSTER.name, value)

    def job_status(self, job_uuid: str, deadline=None) -> str:
        return parse_job_status(QUERY_JOB_RESULT.name,
                                self._get(QUERY_JOB_RESULT, {"jobUUID": job_uuid}, deadline))

    def list_clusters(self, az_name: Optional[str] = None,
                      cluster_uuids: Sequence[str] = (), deadline=None) -> List[Cluster]:
        def page(n: int) -> Any:
            return self._get(LIST_CLUSTERS, {
                "regionID": self.region_id, "azName": az_name,
                "clusterUUIDList": ",".join(cluster_uuids) or None,
                "pageNo": n, "pageSize": self.PAGE_SIZE}, deadline)
        return [parse_cluster(o) for o in all_pages(LIST_CLUSTERS.name, page, "resultList")]

    def get_cluster(self, cluster_uuid: str, deadline=None) -> Optional[Cluster]:
        """The cluster with this UUID, or None (filtered listing, matched exactly)."""
        found = [c for c in self.list_clusters(cluster_uuids=[cluster_uuid], deadline=deadline)
                 if c.uuid == cluster_uuid]
        return found[0] if found else None

    def list_nodes(self, az_name: str, cluster_uuid: str, deadline=None,
                   node_uuids: Sequence[str] = ()) -> List[Node]:
        def page(n: int) -> Any:
            return self._get(LIST_NODES, {
                "regionID": self.region_id, "azName": az_name, "clusterUUID": cluster_uuid,
                "nodeUUIDList": ",".join(node_uuids) or None,
                "pageNo": n, "pageSize": self.PAGE_SIZE}, deadline)
        return [parse_node(o) for o in all_pages(LIST_NODES.name, page, "resultList")]

    def list_queues(self, az_name: str, cluster_uuid: str, deadline=None) -> List[Queue]:
        value = self._get(LIST_QUEUES, {"regionID": self.region_id, "azName": az_name,
                                        "clusterUUID": cluster_uuid}, deadline)
        return parse_queues(LIST_QUEUES.name, value)

    def expand_cluster(self, request: ExpandClusterRequest, deadline=None) -> OrderAccepted:
        """Add compute nodes. Sent once (no idempotency token is documented)."""
        value = self.t.call(EXPAND_CLUSTER, body=request.body(), deadline=deadline)
        return parse_order(EXPAND_CLUSTER.name, value)

    def shrink_cluster(self, az_name: str, cluster_uuid: str, node_uuids: Sequence[str],
                       deadline=None) -> str:
        """Remove 1-10 compute nodes; the job UUID. Sent once."""
        value = self.t.call(SHRINK_CLUSTER, body=shrink_body(self.region_id, az_name,
                                                             cluster_uuid, node_uuids),
                            deadline=deadline)
        return read_shrink(value)

    def delete_cluster(self, cluster_uuid: str, deadline=None) -> Optional[str]:
        """The older delete-cluster (doc 5621; the only delete published). Documented answer
        `{}`; a `jobUUID`, should one come, is returned so the caller can wait for it."""
        _nonempty(DELETE_CLUSTER.name, "clusterUUID", cluster_uuid)
        value = self.t.call(DELETE_CLUSTER, body={"regionID": self.region_id,
                                                  "clusterUUID": cluster_uuid},
                            deadline=deadline)
        return read_delete(value)
