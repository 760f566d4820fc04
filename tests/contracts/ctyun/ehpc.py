"""The E-HPC (`cthpc`) APIs kimi-k3 uses, as data.

CTyun contract 2; its tags name the upstream source of each fact (sources.py): `[doc NNNNN]` =
CTyun API doc NNNNN as captured in ArvinZJC/ctyun-cli
`openapi-catalogs/ehpc/public-doc-evidence.json` (commit 6dcc2310b657), `[cli]` = that repo's `plugins/ehpc/apis.json`,
`[old NNNN]` = its `openapi-catalogs/ehpc/source.json`.
"""

from __future__ import annotations

from dataclasses import replace

from .spec import ABSENT, PRESENT, Api, Field as F, Rule

HOST = "cthpc-global.ctapi.ctyun.cn"   # [cli] plugin.json
BASE = "/v4/cthpc"

ORDER_METHODS = ("AutoCreate", "UseExist")
DISK_TYPES = ("SATA", "SAS", "SSD", "SSD-genric")   # "SSD-genric": the documented spelling
JOB_STATUSES = ("wait", "pending_submit", "submitted", "success", "failed", "cancel",
                "console_failed", "force_completed")
NODE_STATUSES = ("creating", "starting", "running", "stopping", "stopped", "restarting", "error",
                 "reinstalling", "resetting_password", "destroying", "unsubscribing",
                 "unsubscribed", "expired", "frozen", "deleting_on_demand",
                 "update_security_group", "adding_network", "deleting_network")
SCHEDULER_STATUSES = ("none", "allocated", "completing", "down", "drain", "fail", "failing",
                      "future", "idle", "maint", "mixed", "perfctrs/npc", "reserved",
                      "power_down", "power_up", "resume", "undrain", "unknown")
QUEUE_STATUSES = ("creating", "deleting", "enabled", "error")
NODE_TYPES = ("BMS", "VM")


def _q(name, type_="str", required="Y", **kw):
    return F(name, type_, required, "q", **kw)


def _b(name, type_="str", required="Y", **kw):
    return F(name, type_, required, "b", **kw)


def _r(name, type_="str", **kw):
    return F(name, type_, "-", "r", **kw)


def _page_q(src):
    return (_q("pageNo", "int", "-", range=(1, 2 ** 31 - 1), note="default 1", source=src),
            _q("pageSize", "int", "-", range=(1, 50), note="default 10", source=src))


def _paged(rows: F) -> F:
    return _r("returnObj", "obj", fields=(
        _r("currentCount", "int"), _r("totalCount", "int"), _r("totalPage", "int"), rows))


def _job_answer(orders: bool, src: str) -> F:
    fields = [_r("jobUUID", source=src)]
    if orders:
        fields += [_r("masterOrderID", nullable=True, source=src,
                      note="only when servers, EIP or storage are ordered, else null"),
                   _r("masterOrderNO", nullable=True, source=src)]
    return _r("returnObj", "obj", fields=tuple(fields))


REGION_Q = _q("regionID", note="from list-regions")
AZ_Q = _q("azName", note="from list-regions")

# ---------------------------------------------------------------- 2.1 create-delegate (23951)
CREATE_DELEGATE = Api(
    "create-delegate", "ehpc", HOST, "POST", f"{BASE}/create-delegate", "23951",
    "[doc 23951] [ex]", "ehpc", request=(), answer="empty",
    response=_r("returnObj", "obj", note="empty object"),
    notes=("idempotence of a second call is not documented (CTyun contract 6.6)",))

# ---------------------------------------------------------------- 2.2 list-regions (13086)
LIST_REGIONS = Api(
    "list-regions", "ehpc", HOST, "GET", f"{BASE}/list-regions", "13086", "[old 13086] [ex]",
    "ehpc", request=(), answer="list",
    response=_r("returnObj", "obj", fields=(
        _r("resultList", "[obj]", fields=(
            _r("regionID"), _r("regionName"),
            _r("azList", "[obj]", fields=(
                _r("azName"), _r("isSupportECS", "bool"), _r("isSupportSFS", "bool"),
                _r("isSupportOceanFS", "bool"))))),)),
    notes=("no field table captured; shape from the documented 2026 example",))

# ---------------------------------------------------------------- 2.3 list-cluster-types (23927)
ROLE_NAMES = ("master", "compute")
LIST_CLUSTER_TYPES = Api(
    "list-cluster-types", "ehpc", HOST, "GET", f"{BASE}/list-cluster-types", "23927",
    "[doc 23927] [ex]", "ehpc", request=(REGION_Q, AZ_Q), answer="list",
    response=_r("returnObj", "obj", fields=(
        _r("resultList", "[obj]", fields=(
            _r("clusterTypeName", enum=("SCHEDULER",)), _r("schedulerType", enum=("SLURM",)),
            _r("clusterTypeUUID"),
            _r("roleList", "[obj]", fields=(
                _r("clusterTypeRoleUUID"), _r("clusterTypeRoleName", enum=ROLE_NAMES))))),)))

# ---------------------------------------------------------------- 2.4 list-specifications (23940)
LIST_SPECIFICATIONS = Api(
    "list-specifications", "ehpc", HOST, "GET", f"{BASE}/list-specifications", "23940",
    "[doc 23940] [ex]", "ehpc",
    request=(REGION_Q, AZ_Q, _q("clusterTypeRoleUUID", required="-", note="only this role")),
    answer="list",
    response=_r("returnObj", "obj", fields=(
        _r("resultList", "[obj]", fields=(
            _r("clusterTypeRoleName", enum=ROLE_NAMES), _r("clusterTypeRoleUUID"),
            _r("specificationList", "[obj]", fields=(
                _r("specificationName"), _r("specificationUUID"),
                _r("specificationType", enum=NODE_TYPES))))),)),
    notes=("no CPU/memory/NPU field: the specification name is the only description",))

# ---------------------------------------------------------------- 2.5 list-available-images (23941)
LIST_AVAILABLE_IMAGES = Api(
    "list-available-images", "ehpc", HOST, "GET", f"{BASE}/list-available-images", "23941",
    "[doc 23941] [ex]", "ehpc",
    request=(REGION_Q, AZ_Q, _q("specificationUUID", note="from list-specifications"),
             _q("clusterTypeRoleUUID", required="-", note="only this role")),
    answer="list",
    response=_r("returnObj", "obj", fields=(
        _r("resultList", "[obj]", fields=(
            _r("clusterTypeRoleName", enum=ROLE_NAMES), _r("clusterTypeRoleUUID"),
            _r("imageList", "[obj]", fields=(
                _r("imageUUID"), _r("name"), _r("version"), _r("nodeType", enum=NODE_TYPES),
                _r("architectureType", enum=("CPU", "GPU")))))),)))

# ---------------------------------------------------------------- 2.6 hpc/create-cluster (23930)
S23930 = "[doc 23930]"
SFS_ORDER = _b("sfsOrder", "obj", "C", source=S23930, fields=(
    _b("sfsName", length=(2, 255), check="fs_name", note="unique per user and region"),
    _b("sfsSize", "int", range=(500, 1048576), note="GB, within quota"),
    _b("sfsType", enum=("capacity", "performance"))))
OCEANFS_ORDER = _b("oceanFSOrder", "obj", "C", source=S23930, fields=(
    _b("subnetID", note="an ordinary subnet of the cluster's VPC"),
    _b("oceanFSName", length=(2, 255), check="fs_name"),
    _b("oceanFSType", enum=("capacity",)),
    _b("oceanFSSize", "int", range=(100, 1048576), note="GB")))
STORAGE_CONFIG = _b("storageConfig", "obj", source=S23930, fields=(
    _b("storageCreateMethod", enum=ORDER_METHODS),
    SFS_ORDER, OCEANFS_ORDER,
    _b("storageUID", required="C", note="existing NFS file system for UseExist"),
    _b("storageType", "int", "C", enum=(0, 1), note="0 SFS, 1 OceanFS; for UseExist")))

ROOT_PASSWORD = _b("rootPassword", check="root_password", source=S23930,
                   note="CTyun contract 4.3; never echoed in errors")
ECS_MASTER_ORDER = _b("ecsMasterNodeOrder", "obj", "C", source=S23930, fields=(
    _b("specificationUUID"), _b("subnetID", note="ordinary subnet"),
    _b("systemDiskType", enum=DISK_TYPES), _b("systemDiskSize", "int", range=(100, 2048))))
BMS_OPTIONAL = (
    _b("localSystemVolumeRaidUUID", required="C",
       note="required when the server has local system disks"),
    _b("localDataVolumeRaidUUID", required="C",
       note="required when the server has local data disks"),
    _b("cloudSystemDiskType", required="C", enum=DISK_TYPES,
       note="only for specifications that boot from a cloud disk"),
    _b("cloudSystemDiskSize", "int", "C", range=(100, 2048)))
BMS_MASTER_ORDER = _b("bmsMasterNodeOrder", "obj", "C", source=S23930, fields=(
    _b("specificationUUID"),
    _b("subnetID", note="elastic bare metal: ordinary subnet; standard: bare-metal subnet"),
) + BMS_OPTIONAL)
MASTER_NODE_CONFIG = _b("masterNodeConfig", "obj", source=S23930, fields=(
    _b("clusterTypeRoleUUID", note="the master role of the type"),
    _b("imageUUID", note="a master-role image of the specification"),
    ROOT_PASSWORD,
    _b("nodeCreateMethod", enum=ORDER_METHODS),
    _b("eipCreateMethod", required="-", enum=("NoUse", "AutoCreate", "UseExist"),
       note="default NoUse"),
    _b("eipID", required="C"),
    _b("eipBandwidth", "int", "C", range=(1, 300), note="Mbit/s"),
    ECS_MASTER_ORDER, BMS_MASTER_ORDER,
    _b("ecsForeignMasterNode", "obj", "C", fields=(_b("instanceID"),)),
    _b("bmsForeignMasterNode", "obj", "C", fields=(_b("instanceID"),))))


def _compute_entries(queue_field: F, order_count: tuple, src: str):
    """The four compute entry arrays of create-cluster / expand-cluster (at most 1 entry)."""
    ecs = _b("ecsComputeNodeOrders", "[obj]", "C", items=(1, 1), source=src, fields=(
        _b("orderCount", "int", range=order_count), _b("imageUUID", note="compute-role image"),
        queue_field, _b("specificationUUID"), _b("subnetID", note="ordinary subnet"),
        _b("systemDiskType", enum=DISK_TYPES), _b("systemDiskSize", "int", range=(100, 2048))))
    bms = _b("bmsComputeNodeOrders", "[obj]", "C", items=(1, 1), source=src, fields=(
        _b("orderCount", "int", range=order_count), _b("imageUUID"), queue_field,
        _b("specificationUUID"), _b("subnetID")) + BMS_OPTIONAL)
    foreign = tuple(
        _b(name, "[obj]", "C", items=(1, 1), source=src, fields=(
            _b("imageUUID"), queue_field,
            _b("instanceIDList", "[str]", items=(1, 10), note="1-10 instances")))
        for name in ("ecsForeignComputeNodes", "bmsForeignComputeNodes"))
    return (ecs, bms) + foreign


QUEUE_NAME_B = _b("queueName", length=(1, 15), check="queue_name", source="[doc 23930, 23943]")
COMPUTE_NODE_CONFIG = _b("computeNodeConfig", "obj", source=S23930, fields=(
    _b("clusterTypeRoleUUID", note="the compute role"),
    _b("nodeCreateMethod", enum=ORDER_METHODS),
) + _compute_entries(QUEUE_NAME_B, (1, 49), S23930))

CYCLE = (_b("cycleCount", "int", "-", range=(1, 11), note="MONTH 1-11, YEAR 1-3"),
         _b("cycleType", required="-", enum=("MONTH", "YEAR")),
         _b("onDemand", "bool", "C", note="true pay-as-you-go, false subscription"))

M, C, S = "masterNodeConfig", "computeNodeConfig", "storageConfig"
ORDERS = ("ecsComputeNodeOrders", "bmsComputeNodeOrders")
FOREIGN = ("ecsForeignComputeNodes", "bmsForeignComputeNodes")


def _cycle_rules(ordering_when, when_any: bool, src: str):
    return (
        Rule("onDemand-when-ordering", "onDemand is required when the request orders anything",
             src, when=ordering_when, when_any=when_any, require=("onDemand",)),
        Rule("subscription-needs-cycle", "onDemand false needs cycleType and cycleCount", src,
             when=(("onDemand", (False,)),), require=("cycleType", "cycleCount")),
        Rule("cycle-together", "cycleType and cycleCount go together", src,
             when=(("cycleType", (PRESENT,)),), require=("cycleCount",)),
        Rule("cycle-together-2", "cycleType and cycleCount go together", src,
             when=(("cycleCount", (PRESENT,)),), require=("cycleType",)),
        Rule("cycle-month", "cycleCount is 1-11 with cycleType MONTH", src,
             when=(("cycleType", ("MONTH",)),), range=(("cycleCount", 1, 11),)),
        Rule("cycle-year", "cycleCount is 1-3 with cycleType YEAR", src,
             when=(("cycleType", ("YEAR",)),), range=(("cycleCount", 1, 3),)),
    )


def _compute_rules(scope: str, src: str):
    return (
        Rule("compute-autocreate", "compute nodeCreateMethod AutoCreate: exactly one of "
             "ecsComputeNodeOrders, bmsComputeNodeOrders (no mixing), no adopted nodes", src,
             scope=scope, when=(("nodeCreateMethod", ("AutoCreate",)),),
             exactly_one=ORDERS, forbid=FOREIGN),
        Rule("compute-useexist", "compute nodeCreateMethod UseExist: exactly one of "
             "ecsForeignComputeNodes, bmsForeignComputeNodes, no orders", src,
             scope=scope, when=(("nodeCreateMethod", ("UseExist",)),),
             exactly_one=FOREIGN, forbid=ORDERS),
    )


CREATE_CLUSTER_RULES = (
    Rule("storage-autocreate", "storageCreateMethod AutoCreate: exactly one of sfsOrder, "
         "oceanFSOrder (both is not described: refused), no storageUID/storageType", S23930,
         scope=S, when=(("storageCreateMethod", ("AutoCreate",)),),
         exactly_one=("sfsOrder", "oceanFSOrder"), forbid=("storageUID", "storageType")),
    Rule("storage-useexist", "storageCreateMethod UseExist: storageUID and storageType, no "
         "orders", S23930, scope=S, when=(("storageCreateMethod", ("UseExist",)),),
         require=("storageUID", "storageType"), forbid=("sfsOrder", "oceanFSOrder")),
    Rule("master-autocreate", "master nodeCreateMethod AutoCreate: exactly one of "
         "ecsMasterNodeOrder, bmsMasterNodeOrder, no adopted server", S23930, scope=M,
         when=(("nodeCreateMethod", ("AutoCreate",)),),
         exactly_one=("ecsMasterNodeOrder", "bmsMasterNodeOrder"),
         forbid=("ecsForeignMasterNode", "bmsForeignMasterNode")),
    Rule("master-useexist", "master nodeCreateMethod UseExist: exactly one of "
         "ecsForeignMasterNode, bmsForeignMasterNode, no order, eipCreateMethod only NoUse",
         S23930, scope=M, when=(("nodeCreateMethod", ("UseExist",)),),
         exactly_one=("ecsForeignMasterNode", "bmsForeignMasterNode"),
         forbid=("ecsMasterNodeOrder", "bmsMasterNodeOrder"),
         restrict=(("eipCreateMethod", ("NoUse",)),)),
    Rule("eip-autocreate", "eipCreateMethod AutoCreate needs eipBandwidth (no eipID)", S23930,
         scope=M, when=(("eipCreateMethod", ("AutoCreate",)),), require=("eipBandwidth",),
         forbid=("eipID",)),
    Rule("eip-useexist", "eipCreateMethod UseExist needs eipID (no eipBandwidth)", S23930,
         scope=M, when=(("eipCreateMethod", ("UseExist",)),), require=("eipID",),
         forbid=("eipBandwidth",)),
    Rule("eip-nouse", "eipCreateMethod NoUse (the default): no eipID, no eipBandwidth (strict "
         "choice: a bandwidth without an EIP order is a client bug)", S23930, scope=M,
         when=(("eipCreateMethod", ("NoUse", ABSENT)),), forbid=("eipID", "eipBandwidth")),
) + _compute_rules(C, S23930) + _cycle_rules(
    ((f"{S}.storageCreateMethod", ("AutoCreate",)), (f"{M}.nodeCreateMethod", ("AutoCreate",)),
     (f"{C}.nodeCreateMethod", ("AutoCreate",)), (f"{M}.eipCreateMethod", ("AutoCreate",))),
    True, S23930)

CREATE_CLUSTER = Api(
    "hpc/create-cluster", "ehpc", HOST, "POST", f"{BASE}/hpc/create-cluster", "23930",
    "[doc 23930] [ex]", "ehpc", answer="job",
    request=(
        _b("regionID", note="from list-regions"), _b("azName", note="from list-regions"),
        _b("clusterName", length=(2, 20), check="cluster_name"),
        _b("clusterTypeUUID", note="from list-cluster-types"),
        _b("vpcID", note="from the VPC API"),
        _b("securityGroupName", required="-", length=(2, 32), check="hpc_security_group_name",
           note="omitted: the system creates a group named hpc-..."),
        STORAGE_CONFIG, MASTER_NODE_CONFIG, COMPUTE_NODE_CONFIG) + CYCLE,
    rules=CREATE_CLUSTER_RULES,
    response=_job_answer(True, S23930),
    notes=("no clientToken: a repeated create is not deduplicated by anything documented",
           "the answer carries no cluster id: find the cluster by name in hpc/list-clusters"))

# ---------------------------------------------------------------- 2.7 query-job-result (23926)
QUERY_JOB_RESULT = Api(
    "query-job-result", "ehpc", HOST, "GET", f"{BASE}/query-job-result", "23926",
    "[doc 23926] [ex]", "ehpc", request=(_q("jobUUID"),), answer="object",
    response=_r("returnObj", "obj", fields=(_r("status", enum=JOB_STATUSES),)),
    notes=("no region parameter; the answer carries no error message",
           "force_completed does not prove the resources are ready [cli waiters]"))

# ---------------------------------------------------------------- 2.8 hpc/list-clusters (23928)
CLUSTER_ROW = _r("resultList", "[obj]", source="[doc 23928]", fields=(
    _r("clusterName"), _r("azName"), _r("clusterUUID"), _r("vpcID"), _r("securityGroupID"),
    _r("clusterTypeName", enum=("SCHEDULER",)), _r("schedulerType", enum=("SLURM",)),
    _r("clusterTypeUUID"),
    _r("totalMasterNodeCount", "int"), _r("totalComputeNodeCount", "int"),
    _r("runningComputeNodeCount", "int"), _r("creatingComputeNodeCount", "int"),
    _r("stoppedComputeNodeCount", "int"), _r("otherStatusComputeNodeCount", "int"),
    _r("totalCpuCores", "int"), _r("allocatedCpuCores", "int"), _r("availableCpuCores", "int"),
    _r("totalMemory", "int", note="MB"), _r("allocatedMemory", "int"),
    _r("availableMemory", "int"),
    _r("publicIP", nullable=True, note="master's EIP"), _r("innerIP"),
    _r("clusterAvailableStatus", enum=("available", "unavailable")), _r("createTime")))
LIST_CLUSTERS = Api(
    "hpc/list-clusters", "ehpc", HOST, "GET", f"{BASE}/hpc/list-clusters", "23928",
    "[doc 23928] [ex]", "ehpc", paged=True, answer="paged",
    request=(REGION_Q, _q("azName", required="-", note="filter by AZ"),
             _q("clusterUUIDList", required="-", check="csv_ids", note="comma-separated"))
    + _page_q("[doc 23928]"),
    response=_paged(CLUSTER_ROW),
    notes=("there is no name filter: page through all clusters and match clusterName",))

# ---------------------------------------------------------------- 2.9 hpc/list-nodes (23938)
NODE_ROW = _r("resultList", "[obj]", source="[doc 23938]", fields=(
    _r("nodeName"), _r("nodeUUID"), _r("nodeRole", "int", enum=(0, 1), note="0 master, 1 compute"),
    _r("nodeType", enum=NODE_TYPES), _r("resourceInstanceID"), _r("orderResourceID"),
    _r("nodeSchedulerStatus", enum=SCHEDULER_STATUSES), _r("nodeStatus", enum=NODE_STATUSES),
    _r("cpuLoad", "float"), _r("innerIP"),
    _r("publicIP", nullable=True, note="null or \"\" without EIP"),
    _r("queueName", nullable=True, note="null for the master"), _r("subnetID"),
    _r("expired", "bool"), _r("expiredTime", nullable=True),
    _r("onDemand", "bool", alt_types=("str",),
       note="table: String \"true\"/\"false\"; example: boolean (CTyun contract 5)"),
    _r("scalingType", enum=("manual", "auto")), _r("specificationName"),
    _r("specificationDesc"), _r("createTime")))
LIST_NODES = Api(
    "hpc/list-nodes", "ehpc", HOST, "GET", f"{BASE}/hpc/list-nodes", "23938",
    "[doc 23938] [ex]", "ehpc", paged=True, answer="paged",
    request=(REGION_Q, _q("azName", note="required (the doc's URL example says az)"),
             _q("clusterUUID"), _q("nodeUUIDList", required="-", check="csv_ids"))
    + _page_q("[doc 23938]"),
    response=_paged(NODE_ROW))

# ---------------------------------------------------------------- 2.10 queues (23947, 23943, 23944)
QUEUE_ROW = (_r("queueName"), _r("queueUUID"), _r("queueStatus", enum=QUEUE_STATUSES),
             _r("isDefault", "bool"), _r("totalNodeQuantity", "int"),
             _r("idleNodeQuantity", "int"), _r("idleCPUQuantity", "int"), _r("createTime"))
LIST_QUEUES = Api(
    "hpc/list-queues", "ehpc", HOST, "GET", f"{BASE}/hpc/list-queues", "23947",
    "[doc 23947] [ex]", "ehpc", answer="list",
    request=(REGION_Q, AZ_Q, _q("clusterUUID")),
    response=_r("returnObj", "[obj]", fields=QUEUE_ROW,
                note="the documented example (and the CLI fixture): returnObj is the array"),
    variants=(_r("returnObj", "obj", fields=(_r("resultList", "[obj]", fields=QUEUE_ROW),),
                 note="the schema table: returnObj.resultList"),),
    notes=("no paging, no name filter; shape contradiction: CTyun contract 5",))
CREATE_QUEUE = Api(
    "hpc/create-queue", "ehpc", HOST, "POST", f"{BASE}/hpc/create-queue", "23943",
    "[doc 23943]", "ehpc", answer="job",
    request=(_b("regionID"), _b("azName"), _b("clusterUUID"), QUEUE_NAME_B),
    response=_job_answer(False, "[doc 23943]"))
DELETE_QUEUE = Api(
    "hpc/delete-queue", "ehpc", HOST, "POST", f"{BASE}/hpc/delete-queue", "23944",
    "[doc 23944]", "ehpc", answer="job",
    request=(_b("regionID"), _b("azName"), _b("clusterUUID"), _b("queueUUID")),
    response=_job_answer(False, "[doc 23944]"))

# ---------------------------------------------------------------- 2.11 hpc/expand-cluster (23931)
S23931 = "[doc 23931]"
EXPAND_CLUSTER = Api(
    "hpc/expand-cluster", "ehpc", HOST, "POST", f"{BASE}/hpc/expand-cluster", "23931",
    "[doc 23931] [ex]", "ehpc", answer="job",
    request=(_b("regionID"), _b("azName"), _b("clusterUUID"),
             _b("clusterTypeRoleUUID", note="the compute role"),
             _b("nodeCreateMethod", enum=ORDER_METHODS))
    + _compute_entries(_b("queueUUID", note="from hpc/list-queues", source=S23931), (1, 50),
                       S23931) + CYCLE,
    rules=_compute_rules("", S23931) + _cycle_rules(
        (("nodeCreateMethod", ("AutoCreate",)),), False, S23931),
    response=_job_answer(True, S23931),
    notes=("flat body (no computeNodeConfig wrapper); the queue is named by queueUUID",
           "no clientToken"))

# ---------------------------------------------------------------- 2.12 hpc/shrink-cluster (23932)
SHRINK_CLUSTER = Api(
    "hpc/shrink-cluster", "ehpc", HOST, "POST", f"{BASE}/hpc/shrink-cluster", "23932",
    "[doc 23932] [ex]", "ehpc", answer="job",
    request=(_b("regionID"), _b("azName"), _b("clusterUUID"),
             _b("nodeUUIDList", "[str]", items=(1, 10), note="1-10 node UUIDs from list-nodes")),
    response=_job_answer(False, "[doc 23932]"),
    notes=("whether the master or the last compute node may be removed: not documented",))

# ---------------------------------------------------------------- 2.13 delete-cluster (old 5621)
DELETE_CLUSTER = Api(
    "delete-cluster", "ehpc", HOST, "POST", f"{BASE}/delete-cluster", "5621",
    "[old 5621] [ex]", "ehpc-old", answer="empty",
    request=(_b("regionID"), _b("clusterUUID")),
    response=_r("returnObj", "obj", note="empty object"),
    notes=("older envelope; no jobUUID; what it releases is not documented (CTyun contract 6.3)",))

# ---------------------------------------------------------------- 2.14 price queries (23934, 23936)
PRICE_ANSWER = _r("returnObj", "obj", source="[doc 23934, 23936]", fields=(
    _r("totalPrice", "float"), _r("finalPrice", "float"),
    _r("subOrderPrices", "[obj]", fields=(
        _r("serviceTag"), _r("totalPrice", "float"), _r("finalPrice", "float"),
        _r("orderItemPrices", "[obj]", fields=(
            _r("itemId"),
            _r("resourceType", enum=("VM", "EBS", "SFS_TURBOC", "NETWORK", "OceanFS_C", "BMS")),
            _r("totalPrice", "float"), _r("finalPrice", "float")))))))


def _without(fields, names):
    """`fields` minus the named members, recursively (the price bodies drop secrets/names)."""
    out = []
    for f in fields:
        if f.name in names:
            continue
        if f.fields:
            f = replace(f, fields=_without(f.fields, names))
        out.append(f)
    return tuple(out)


def _price_create_request():
    dropped = {"securityGroupName", "rootPassword", "eipID", "sfsName", "oceanFSName",
               "storageUID", "storageType", "queueName", "ecsForeignMasterNode",
               "bmsForeignMasterNode", "ecsForeignComputeNodes", "bmsForeignComputeNodes"}
    out = []
    for f in _without(CREATE_CLUSTER.request, dropped):
        if f.name == "clusterName":
            f = replace(f, required="-")
        if f.name == "masterNodeConfig":
            f = replace(f, fields=tuple(
                replace(g, required="C") if g.name == "imageUUID" else g for g in f.fields))
        out.append(f)
    return tuple(out)


PRICE_CREATE = Api(
    "hpc/query-cluster-creation-price", "ehpc", HOST, "POST",
    f"{BASE}/hpc/query-cluster-creation-price", "23934", "[doc 23934]", "ehpc",
    answer="object", request=_price_create_request(),
    rules=tuple(r for r in CREATE_CLUSTER_RULES
                if r.id not in ("storage-useexist", "master-useexist", "compute-useexist",
                                "eip-useexist")) + (
        Rule("price-master-image", "the master imageUUID is required for AutoCreate",
             "[doc 23934]", scope=M, when=(("nodeCreateMethod", ("AutoCreate",)),),
             require=("imageUUID",)),),
    response=PRICE_ANSWER,
    notes=("oceanFSType: enum capacity, while the price example shows massive (section 5)",))
PRICE_EXPAND = Api(
    "hpc/query-cluster-expansion-price", "ehpc", HOST, "POST",
    f"{BASE}/hpc/query-cluster-expansion-price", "23936", "[doc 23936]", "ehpc",
    answer="object",
    request=(_b("regionID"), _b("azName"), _b("clusterUUID"), _b("clusterTypeRoleUUID"))
    + _without(_compute_entries(_b("queueUUID"), (1, 50), "[doc 23936]")[:2], {"queueUUID"})
    + CYCLE[:2] + (_b("onDemand", "bool"),),
    rules=(Rule("price-expand-orders", "exactly one of ecsComputeNodeOrders, "
                "bmsComputeNodeOrders", "[doc 23936]", exactly_one=ORDERS),)
    + _cycle_rules((("onDemand", (PRESENT,)),), False, "[doc 23936]")[1:],
    response=PRICE_ANSWER)

APIS = (CREATE_DELEGATE, LIST_REGIONS, LIST_CLUSTER_TYPES, LIST_SPECIFICATIONS,
        LIST_AVAILABLE_IMAGES, CREATE_CLUSTER, QUERY_JOB_RESULT, LIST_CLUSTERS, LIST_NODES,
        LIST_QUEUES, CREATE_QUEUE, DELETE_QUEUE, EXPAND_CLUSTER, SHRINK_CLUSTER, DELETE_CLUSTER,
        PRICE_CREATE, PRICE_EXPAND)
