"""The E-HPC operations of the emulator (CTyun contract 2), on an already-validated request.

The server checks every request against the contract (tests/contracts/ctyun) before it gets
here; these functions add what only the service can know (does the region, VPC, role, image,
queue exist; is the cluster busy; quotas) and change the state. Error codes other than
`Hpc.ParamCheck.NotBlank` are not documented; this emulator's own are listed in CODES.
"""

from __future__ import annotations

import math
import uuid as uuidlib
from typing import Any, Dict, List

from . import catalog, ebm_ops
from .catalog import AZS, REGION
from .state import STACK, Cluster, Node, Queue, Refusal, State, new_id

CODES = {
    "Hpc.ParamCheck.Invalid": "a value the service does not accept (region, role, image, ...)",
    "Hpc.Region.NotFound": "regionID or azName is not an E-HPC region/AZ",
    "Hpc.Delegate.NotFound": "create-delegate was not called before the first cluster",
    "Hpc.Delegate.AlreadyExists": "create-delegate called again",
    "Hpc.Cluster.NotFound": "no such cluster (in that region/AZ)",
    "Hpc.Cluster.NameExists": "only with unique_cluster_names",
    "Hpc.Cluster.Busy": "a job runs on the cluster, or it is being deleted",
    "Hpc.Node.NotFound": "a nodeUUID that is not a node of the cluster",
    "Hpc.Node.MasterNotRemovable": "shrink named the master node",
    "Hpc.Node.LastComputeNode": "only with shrink_keeps_last_compute",
    "Hpc.Queue.NotFound": "no such queue in the cluster (or not enabled)",
    "Hpc.Queue.Exists": "a queue of that name exists in the cluster",
    "Hpc.Queue.InUse": "the queue still has nodes, or is the default queue",
    "Hpc.Storage.NameExists": "sfsName/oceanFSName taken in the region",
    "Hpc.Storage.NotFound": "storageUID is not a file system of the account",
    "Hpc.Storage.NotSupported": "the AZ offers no such file service",
    "Hpc.Instance.NotFound": "an adopted instance/EIP the account does not have",
    "Hpc.Quota.Exceeded": "cluster or bare-metal quota",
    "Hpc.Job.NotFound": "no such jobUUID",
}


def _region(req: Dict[str, Any], need_az: bool = True) -> None:
    if req.get("regionID") != REGION:
        raise Refusal("Hpc.Region.NotFound", f"regionID {req.get('regionID')!r} is not an "
                                             "E-HPC region (see list-regions)")
    if need_az and req.get("azName") not in AZS:
        raise Refusal("Hpc.Region.NotFound", f"azName {req.get('azName')!r} is not an AZ of "
                                             f"region {REGION}")


def _cluster(st: State, req: Dict[str, Any], api: str, check_az: bool = True) -> Cluster:
    _region(req, need_az=check_az)
    c = st.clusters.get(req.get("clusterUUID", ""))
    if c is None or (check_az and c.az != req.get("azName")) or \
            (c.status == "creating" and not st.settings.list_during_create):
        raise Refusal("Hpc.Cluster.NotFound", f"cluster {req.get('clusterUUID')!r} not found"
                      + (f" in azName {req.get('azName')!r}" if check_az else ""))
    st.touch(api, "cluster", c.uuid, c.owner)
    return c


def _not_busy(st: State, c: Cluster) -> None:
    if c.status == "deleting":
        raise Refusal("Hpc.Cluster.Busy", f"cluster {c.uuid} is being deleted")
    if st.settings.busy_refuses_changes and c.job and not st.jobs[c.job].final:
        raise Refusal("Hpc.Cluster.Busy", f"cluster {c.uuid} is busy with job {c.job}")


# -------------------------------------------------------------------------- 2.1 - 2.5 catalog
def create_delegate(st: State, req, api, path):
    if st.delegated and st.settings.delegate_repeat_refused:
        raise Refusal("Hpc.Delegate.AlreadyExists", "the E-HPC service delegation exists")
    st.delegated = True
    return {}


def list_regions(st: State, req, api, path):
    return {"resultList": [{"regionID": REGION, "regionName": catalog.REGION_NAME,
                            "azList": [{"azName": az, **flags} for az, flags in AZS.items()]}]}


def list_cluster_types(st: State, req, api, path):
    _region(req)
    return {"resultList": catalog.cluster_types()}


def list_specifications(st: State, req, api, path):
    _region(req)
    return {"resultList": catalog.specifications(req.get("clusterTypeRoleUUID", ""))}


def list_available_images(st: State, req, api, path):
    _region(req)
    return {"resultList": catalog.images(req["specificationUUID"],
                                         req.get("clusterTypeRoleUUID", ""))}


# -------------------------------------------------------------------------- 2.6 create-cluster
def _spec_for(order: Dict[str, Any], role: str, kind: str, field: str):
    try:
        spec = catalog.spec_by_uuid(order["specificationUUID"])
    except KeyError:
        raise Refusal("Hpc.ParamCheck.Invalid", f"{field}.specificationUUID "
                                                f"{order['specificationUUID']!r} is not listed "
                                                f"for the {role} role") from None
    if role not in spec.roles or spec.type != kind:
        raise Refusal("Hpc.ParamCheck.Invalid", f"{field}.specificationUUID is {spec.name} "
                                                f"({spec.type}), not a {kind} specification of "
                                                f"the {role} role")
    return spec


def _image_for(image_uuid: str, spec, role: str, field: str) -> None:
    ok = any(i.uuid == image_uuid and i.role == role and spec.name in i.specs
             for i in catalog.IMAGES)
    if not ok:
        raise Refusal("Hpc.ParamCheck.Invalid", f"{field} {image_uuid!r} is not a {role}-role "
                                                f"image of {spec.name} (list-available-images)")


def _bms_disks(st: State, order: Dict[str, Any], spec, field: str) -> None:
    ebm_ops.check_bms_order(st, order, spec, field)
    for key in ("cloudSystemDiskType", "cloudSystemDiskSize"):
        if key in order and not spec.cloud_boot:
            raise Refusal("Hpc.ParamCheck.Invalid", f"{field}.{key}: {spec.name} does not boot "
                                                    "from a cloud disk")


def _subnet(st: State, sid: str, vpc: str, field: str, kind: int = 0):
    """The subnet `sid` of `vpc`, of the type the order needs (doc 23930: ecs orders and
    oceanFSOrder an ordinary subnet; bms orders an ordinary one for elastic bare metal, a
    bare-metal one for standard bare metal)."""
    sub = st.subnets.get(sid)
    if sub is None or sub.vpc != vpc:
        raise Refusal("Hpc.ParamCheck.Invalid", f"{field} {sid!r} is not a subnet of {vpc}")
    if sub.kind != kind:
        want = "a bare-metal (cbm) subnet: standard bare metal" if kind else \
            "an ordinary subnet"
        raise Refusal("Hpc.ParamCheck.Invalid", f"{field} {sid!r} is not {want}")
    st.touch("hpc/create-cluster", "subnet", sid, sub.owner)
    return sub


def _compute_orders(st: State, cfg: Dict[str, Any], vpc: str, queue_key: str, field: str):
    """(kind, order, spec) of the one compute order entry; checks spec, image, subnet."""
    if cfg.get("nodeCreateMethod") == "UseExist":
        raise Refusal("Hpc.Instance.NotFound", f"{field}: the account has no servers unknown "
                                               "to E-HPC to adopt")
    kind = "VM" if "ecsComputeNodeOrders" in cfg else "BMS"
    key = "ecsComputeNodeOrders" if kind == "VM" else "bmsComputeNodeOrders"
    order = cfg[key][0]
    where = f"{field}{key}[0]" if field else f"{key}[0]"
    spec = _spec_for(order, "compute", kind, where)
    _image_for(order["imageUUID"], spec, "compute", f"{where}.imageUUID")
    _subnet(st, order["subnetID"], vpc, f"{where}.subnetID", ebm_ops.subnet_kind_for(st, spec))
    if kind == "BMS":
        _bms_disks(st, order, spec, where)
    return kind, order, spec


def _bare_metal_in_use(st: State) -> int:
    return sum(1 for n in st.nodes.values() if n.node_type == "BMS")


def create_cluster(st: State, req, api, path):
    s = st.settings
    _region(req)
    if s.require_delegate and not st.delegated:
        raise Refusal("Hpc.Delegate.NotFound", "create the E-HPC service delegation first "
                                               "(create-delegate)")
    name = req["clusterName"]
    if s.unique_cluster_names and any(c.name == name for c in st.clusters.values()):
        raise Refusal("Hpc.Cluster.NameExists", f"cluster name {name} exists")
    if req["clusterTypeUUID"] != catalog.CLUSTER_TYPE_UUID:
        raise Refusal("Hpc.ParamCheck.Invalid", f"clusterTypeUUID {req['clusterTypeUUID']!r} "
                                                "is not listed by list-cluster-types")
    m, c, sto = req["masterNodeConfig"], req["computeNodeConfig"], req["storageConfig"]
    if m["clusterTypeRoleUUID"] != catalog.MASTER_ROLE_UUID:
        raise Refusal("Hpc.ParamCheck.Invalid", "masterNodeConfig.clusterTypeRoleUUID is not "
                                                "the master role of the cluster type")
    if c["clusterTypeRoleUUID"] != catalog.COMPUTE_ROLE_UUID:
        raise Refusal("Hpc.ParamCheck.Invalid", "computeNodeConfig.clusterTypeRoleUUID is not "
                                                "the compute role of the cluster type")
    vpc = st.vpcs.get(req["vpcID"])
    if vpc is None:
        raise Refusal("Hpc.ParamCheck.Invalid", f"vpcID {req['vpcID']!r} does not exist")
    st.touch(api, "vpc", vpc.id, vpc.owner)
    # master
    if m["nodeCreateMethod"] == "UseExist":
        raise Refusal("Hpc.Instance.NotFound", "masterNodeConfig: the account has no server "
                                               "unknown to E-HPC to adopt")
    mkind = "VM" if "ecsMasterNodeOrder" in m else "BMS"
    mkey = "ecsMasterNodeOrder" if mkind == "VM" else "bmsMasterNodeOrder"
    morder = m[mkey]
    mspec = _spec_for(morder, "master", mkind, f"masterNodeConfig.{mkey}")
    _image_for(m["imageUUID"], mspec, "master", "masterNodeConfig.imageUUID")
    msub = _subnet(st, morder["subnetID"], vpc.id, f"masterNodeConfig.{mkey}.subnetID",
                   ebm_ops.subnet_kind_for(st, mspec))
    if mkind == "BMS":
        _bms_disks(st, morder, mspec, f"masterNodeConfig.{mkey}")
    eip = m.get("eipCreateMethod", "NoUse")
    if eip == "UseExist":
        raise Refusal("Hpc.Instance.NotFound", f"eipID {m['eipID']!r} is not a free EIP of "
                                               "the account")
    # compute
    ckind, corder, cspec = _compute_orders(st, c, vpc.id, "queueName", "computeNodeConfig.")
    # storage
    fs = None
    if sto["storageCreateMethod"] == "UseExist":
        if sto["storageUID"] not in st.filesystems:
            raise Refusal("Hpc.Storage.NotFound", f"storageUID {sto['storageUID']!r} is not a "
                                                  "file system of the account")
    else:
        kind = "sfs" if "sfsOrder" in sto else "oceanfs"
        order = sto["sfsOrder"] if kind == "sfs" else sto["oceanFSOrder"]
        flag = "isSupportSFS" if kind == "sfs" else "isSupportOceanFS"
        if not AZS[req["azName"]][flag]:
            raise Refusal("Hpc.Storage.NotSupported", f"AZ {req['azName']} offers no {kind} "
                                                      f"(list-regions {flag} is false)")
        fname = order["sfsName"] if kind == "sfs" else order["oceanFSName"]
        if any(f["name"] == fname for f in st.filesystems.values()):
            raise Refusal("Hpc.Storage.NameExists", f"file system name {fname} is taken in "
                                                    "this region")
        if kind == "oceanfs":
            _subnet(st, order["subnetID"], vpc.id, "storageConfig.oceanFSOrder.subnetID")
        fs = {"id": str(uuidlib.uuid4()), "name": fname, "kind": kind,
              "sizeGB": order["sfsSize"] if kind == "sfs" else order["oceanFSSize"],
              "type": order.get("sfsType", "performance") if kind == "sfs" else "massive",
              "status": "creating", "vpc": vpc.id, "az": req["azName"],
              "created": st.clock()}
    # quotas
    if len([x for x in st.clusters.values() if x.owner == STACK]) >= s.quota_clusters:
        raise Refusal("Hpc.Quota.Exceeded", f"cluster quota ({s.quota_clusters}) exceeded")
    new_bms = (mkind == "BMS") + (corder["orderCount"] if ckind == "BMS" else 0)
    if _bare_metal_in_use(st) + new_bms > s.quota_bare_metal:
        raise Refusal("Hpc.Quota.Exceeded", f"bare-metal quota ({s.quota_bare_metal}) exceeded")
    sg = _resolve_group(st, req.get("securityGroupName"), vpc.id)
    # accepted: the order exists from here on
    cl = Cluster(new_id("cl-", 28), name, req["azName"], vpc.id, sg.id, STACK)
    st.clusters[cl.uuid] = cl
    on_demand = req.get("onDemand", True)
    master = _new_node(st, cl, 0, mkind, mspec.name, msub, None, on_demand)
    master.raid = ebm_ops.raid_names(st, morder, mspec) if mkind == "BMS" else {}
    q = Queue(new_id("pt-", 28), cl.uuid, corder["queueName"], True)
    st.queues[q.uuid] = q
    csub = st.subnets[corder["subnetID"]]
    computes = [_new_node(st, cl, 1, ckind, cspec.name, csub, q.name, on_demand)
                for _ in range(corder["orderCount"])]
    for n in computes:
        n.raid = ebm_ops.raid_names(st, corder, cspec) if ckind == "BMS" else {}
    eip_id = None
    if eip == "AutoCreate":
        eip_id = new_id("eip-", 10)
        st.eips[eip_id] = {"id": eip_id, "ip": st.new_eip_address(),
                           "bandwidth": m["eipBandwidth"], "cluster": cl.uuid, "owner": STACK,
                           "status": "DOWN", "association": ""}
    if fs:
        st.filesystems[fs["id"]] = {**fs, "cluster": cl.uuid, "owner": STACK}
    st.orders.append({"api": api, "cluster": cl.uuid, "clusterName": name,
                      "nodes": 1 + len(computes)})

    def done(ok: bool) -> None:
        cl.job = ""
        if ok:
            cl.status = "available"
            q.status = "enabled"
            for n in [master] + computes:
                n.status, n.scheduler = "running", "idle"
            if eip_id:
                master.public_ip = st.eips[eip_id]["ip"]
                st.eips[eip_id].update(status="ACTIVE", association=master.instance_id)
            if fs:
                st.filesystems[fs["id"]]["status"] = "available"
            return
        cl.status = "failed"
        q.status = "error"
        if s.failed_create_keeps_resources:
            for n in [master] + computes:
                n.status = "error"
            return
        st.clusters.pop(cl.uuid, None)
        for n in [master] + computes:
            st.nodes.pop(n.uuid, None)
        st.queues.pop(q.uuid, None)
        st.eips.pop(eip_id or "", None)
        if fs:
            st.filesystems.pop(fs["id"], None)

    cl.job = st.start_job(api, path, cl.uuid, done)
    return {"jobUUID": cl.job, "masterOrderID": uuidlib.uuid4().hex,
            "masterOrderNO": f"2026{len(st.orders):016d}"}


def _resolve_group(st: State, name, vpc: str):
    """CTyun contract 6 item 5: which group E-HPC uses for `securityGroupName`."""
    s = st.settings
    if name and s.sg_name_resolution in ("adopt_or_create", "adopt"):
        same = [g for g in st.groups.values() if g.vpc == vpc and g.name == name]
        if same:
            g = sorted(same, key=lambda x: x.created)[0]
            st.touch("hpc/create-cluster", "securityGroup", g.id, g.owner)
            return g
        if s.sg_name_resolution == "adopt":
            raise Refusal("Hpc.ParamCheck.Invalid", f"no security group {name!r} in {vpc}")
    gid = new_id("sg-", 10)
    g = st.new_group(gid, name or f"hpc-{new_id('', 4)}", vpc, "", STACK, made_by="ehpc")
    st.groups[gid] = g
    return g


def _new_node(st: State, cl: Cluster, role: int, kind: str, spec: str, sub, queue,
              on_demand: bool) -> Node:
    label = "master" if role == 0 else "compute"
    index = 1 + sum(1 for n in st.nodes.values() if n.cluster == cl.uuid and n.role == role)
    names = {n.name for n in st.nodes.values() if n.cluster == cl.uuid}
    while f"{cl.name}{label}{index:04d}" in names:
        index += 1
    n = Node(new_id("nd-", 28), f"{cl.name}{label}{index:04d}", cl.uuid, role, kind, spec,
             sub.id, sub.next_ip(), queue, on_demand, cl.owner)
    st.nodes[n.uuid] = n
    return n


# -------------------------------------------------------------------------- 2.7 - 2.9 reads
def query_job_result(st: State, req, api, path):
    job = st.jobs.get(req["jobUUID"])
    if job is None:
        raise Refusal("Hpc.Job.NotFound", f"jobUUID {req['jobUUID']!r} not found")
    return {"status": job.status(st.clock())}


def _page(st: State, rows: List[dict], req: Dict[str, Any]) -> Dict[str, Any]:
    size = int(req.get("pageSize", 10))
    no = int(req.get("pageNo", 1))
    part = rows[(no - 1) * size: no * size]
    return {"currentCount": len(part), "totalCount": len(rows),
            "totalPage": math.ceil(len(rows) / size), "resultList": part}


def _cluster_row(st: State, c: Cluster) -> Dict[str, Any]:
    nodes = [n for n in st.nodes.values() if n.cluster == c.uuid and not n.orphan]
    compute = [n for n in nodes if n.role == 1]
    master = next((n for n in nodes if n.role == 0), None)
    specs = {s.name: s for s in catalog.SPECS}
    cores = sum(specs[n.spec].cores for n in compute)
    memory = sum(specs[n.spec].memory_mb for n in compute)
    count = {k: sum(1 for n in compute if n.status == k) for k in ("running", "creating",
                                                                   "stopped")}
    return {
        "clusterName": c.name, "azName": c.az, "clusterUUID": c.uuid, "vpcID": c.vpc,
        "securityGroupID": c.sg, "clusterTypeName": catalog.CLUSTER_TYPE,
        "schedulerType": catalog.SCHEDULER, "clusterTypeUUID": catalog.CLUSTER_TYPE_UUID,
        "totalMasterNodeCount": 1 if master else 0, "totalComputeNodeCount": len(compute),
        "runningComputeNodeCount": count["running"],
        "creatingComputeNodeCount": count["creating"],
        "stoppedComputeNodeCount": count["stopped"],
        "otherStatusComputeNodeCount": len(compute) - sum(count.values()),
        "totalCpuCores": cores, "allocatedCpuCores": 0, "availableCpuCores": cores,
        "totalMemory": memory, "allocatedMemory": 0, "availableMemory": memory,
        "publicIP": master.public_ip if master else None,
        "innerIP": master.inner_ip if master else "",
        "clusterAvailableStatus": "available" if c.status == "available" else "unavailable",
        "createTime": c.created,
    }


def list_clusters(st: State, req, api, path):
    _region(req, need_az=False)
    ids = set(req["clusterUUIDList"].split(",")) if req.get("clusterUUIDList") else None
    rows = [_cluster_row(st, c) for c in st.clusters.values()
            if (st.settings.list_during_create or c.status != "creating")
            and (not req.get("azName") or c.az == req["azName"])
            and (ids is None or c.uuid in ids)]
    return _page(st, rows, req)


def _node_row(n: Node) -> Dict[str, Any]:
    spec = next(s for s in catalog.SPECS if s.name == n.spec)
    return {
        "nodeName": n.name, "nodeUUID": n.uuid, "nodeRole": n.role, "nodeType": n.node_type,
        "resourceInstanceID": n.instance_id, "orderResourceID": n.order_resource_id,
        "nodeSchedulerStatus": n.scheduler, "nodeStatus": n.status, "cpuLoad": 0.0,
        "innerIP": n.inner_ip, "publicIP": n.public_ip, "queueName": n.queue,
        "subnetID": n.subnet, "expired": False, "expiredTime": None, "onDemand": n.on_demand,
        "scalingType": "manual", "specificationName": n.spec,
        "specificationDesc": f"{n.spec} | {spec.cores}核 | {spec.memory_mb // 1024}GB",
        "createTime": n.created,
    }


def list_nodes(st: State, req, api, path):
    c = _cluster(st, req, api)
    ids = set(req["nodeUUIDList"].split(",")) if req.get("nodeUUIDList") else None
    rows = [_node_row(n) for n in st.nodes.values()
            if n.cluster == c.uuid and not n.orphan and (ids is None or n.uuid in ids)]
    return _page(st, rows, req)


# -------------------------------------------------------------------------- 2.10 queues
def _queue_row(st: State, q: Queue) -> Dict[str, Any]:
    nodes = [n for n in st.nodes.values() if n.cluster == q.cluster and n.queue == q.name
             and not n.orphan]
    idle = [n for n in nodes if n.scheduler == "idle"]
    specs = {s.name: s for s in catalog.SPECS}
    return {"queueName": q.name, "queueUUID": q.uuid, "queueStatus": q.status,
            "isDefault": q.is_default, "totalNodeQuantity": len(nodes),
            "idleNodeQuantity": len(idle),
            "idleCPUQuantity": sum(specs[n.spec].cores for n in idle),
            "createTime": q.created}


def list_queues(st: State, req, api, path):
    c = _cluster(st, req, api)
    rows = [_queue_row(st, q) for q in st.queues.values() if q.cluster == c.uuid]
    return rows if st.settings.queues_shape == "array" else {"resultList": rows}


def create_queue(st: State, req, api, path):
    c = _cluster(st, req, api)
    _not_busy(st, c)
    if any(q.cluster == c.uuid and q.name == req["queueName"] for q in st.queues.values()):
        raise Refusal("Hpc.Queue.Exists", f"queue {req['queueName']} exists in {c.uuid}")
    q = Queue(new_id("pt-", 28), c.uuid, req["queueName"], False)
    st.queues[q.uuid] = q

    def done(ok: bool) -> None:
        c.job = ""
        q.status = "enabled" if ok else "error"
    c.job = st.start_job(api, path, c.uuid, done)
    return {"jobUUID": c.job}


def delete_queue(st: State, req, api, path):
    c = _cluster(st, req, api)
    _not_busy(st, c)
    q = st.queues.get(req["queueUUID"])
    if q is None or q.cluster != c.uuid:
        raise Refusal("Hpc.Queue.NotFound", f"queue {req['queueUUID']!r} not in {c.uuid}")
    if q.is_default or _queue_row(st, q)["totalNodeQuantity"]:
        raise Refusal("Hpc.Queue.InUse", f"queue {q.name} is the default queue or has nodes")
    q.status = "deleting"

    def done(ok: bool) -> None:
        c.job = ""
        if ok:
            st.queues.pop(q.uuid, None)
        else:
            q.status = "error"
    c.job = st.start_job(api, path, c.uuid, done)
    return {"jobUUID": c.job}


# -------------------------------------------------------------------------- 2.11 - 2.13 changes
def expand_cluster(st: State, req, api, path):
    c = _cluster(st, req, api)
    _not_busy(st, c)
    if c.status != "available":
        raise Refusal("Hpc.Cluster.Busy", f"cluster {c.uuid} is {c.status}, not available")
    if req["clusterTypeRoleUUID"] != catalog.COMPUTE_ROLE_UUID:
        raise Refusal("Hpc.ParamCheck.Invalid", "clusterTypeRoleUUID is not the compute role")
    kind, order, spec = _compute_orders(st, req, c.vpc, "queueUUID", "")
    q = st.queues.get(order["queueUUID"])
    if q is None or q.cluster != c.uuid or q.status != "enabled":
        raise Refusal("Hpc.Queue.NotFound", f"queueUUID {order['queueUUID']!r} is not an "
                                            f"enabled queue of {c.uuid} (hpc/list-queues)")
    existing = {n.node_type for n in st.nodes.values() if n.cluster == c.uuid and n.role == 1
                and not n.orphan}
    if existing and kind not in existing:
        raise Refusal("Hpc.ParamCheck.Invalid", "cloud and bare-metal compute nodes cannot be "
                                                "mixed in one cluster")
    if kind == "BMS" and _bare_metal_in_use(st) + order["orderCount"] > \
            st.settings.quota_bare_metal:
        raise Refusal("Hpc.Quota.Exceeded", "bare-metal quota exceeded")
    sub = st.subnets[order["subnetID"]]
    new = [_new_node(st, c, 1, kind, spec.name, sub, q.name, req.get("onDemand", True))
           for _ in range(order["orderCount"])]
    for n in new:
        n.raid = ebm_ops.raid_names(st, order, spec) if kind == "BMS" else {}
    st.orders.append({"api": api, "cluster": c.uuid, "clusterName": c.name,
                      "nodes": len(new)})

    def done(ok: bool) -> None:
        c.job = ""
        for n in new:
            if ok:
                n.status, n.scheduler = "running", "idle"
            elif st.settings.failed_expand_keeps_nodes:
                n.status = "error"
            else:
                st.nodes.pop(n.uuid, None)
    c.job = st.start_job(api, path, c.uuid, done)
    return {"jobUUID": c.job, "masterOrderID": uuidlib.uuid4().hex,
            "masterOrderNO": f"2026{len(st.orders):016d}"}


def shrink_cluster(st: State, req, api, path):
    c = _cluster(st, req, api)
    _not_busy(st, c)
    ids = req["nodeUUIDList"]
    if len(set(ids)) != len(ids):
        raise Refusal("Hpc.ParamCheck.Invalid", "nodeUUIDList names a node twice")
    nodes = []
    for i in ids:
        n = st.nodes.get(i)
        if n is None or n.cluster != c.uuid or n.orphan:
            raise Refusal("Hpc.Node.NotFound", f"node {i!r} is not a node of {c.uuid}")
        if n.role == 0:
            raise Refusal("Hpc.Node.MasterNotRemovable", f"node {i} is the master node")
        if n.status == "destroying":
            raise Refusal("Hpc.Cluster.Busy", f"node {i} is already being removed")
        nodes.append(n)
    left = [n for n in st.nodes.values() if n.cluster == c.uuid and n.role == 1
            and not n.orphan and n.uuid not in ids]
    if st.settings.shrink_keeps_last_compute and not left:
        raise Refusal("Hpc.Node.LastComputeNode", "a cluster keeps at least one compute node")
    before = {n.uuid: n.status for n in nodes}
    for n in nodes:
        n.status = "destroying"

    def done(ok: bool) -> None:
        c.job = ""
        for n in nodes:
            if ok:
                st.nodes.pop(n.uuid, None)
            else:
                n.status = before[n.uuid]
    c.job = st.start_job(api, path, c.uuid, done)
    return {"jobUUID": c.job}


def delete_cluster(st: State, req, api, path):
    c = _cluster(st, req, api, check_az=False)
    _not_busy(st, c)
    c.status = "deleting"
    c.deleted_at = st.clock() + st.settings.effective_delete_seconds()
    st.simulated_s += st.settings.effective_delete_seconds()
    for n in st.nodes.values():
        if n.cluster == c.uuid and (n.role == 0 or st.settings.delete_releases_compute):
            n.status = "destroying"
    return {}


# -------------------------------------------------------------------------- 2.14 prices
UNIT = {"VM": 1.2, "BMS": 48.0, "EBS": 0.001, "NETWORK": 0.06, "SFS_TURBOC": 0.002,
        "OceanFS_C": 0.001}


def _price(items: List[tuple]) -> Dict[str, Any]:
    rows = [{"itemId": uuidlib.uuid4().hex, "resourceType": kind,
             "totalPrice": round(UNIT[kind] * qty, 4), "finalPrice": round(UNIT[kind] * qty, 4)}
            for kind, qty in items if qty]
    total = round(sum(r["totalPrice"] for r in rows), 4)
    return {"totalPrice": total, "finalPrice": total, "subOrderPrices": [
        {"serviceTag": "HPC", "totalPrice": total, "finalPrice": total,
         "orderItemPrices": rows}]}


def _order_items(cfg: Dict[str, Any]) -> List[tuple]:
    items = []
    for key, kind in (("ecsComputeNodeOrders", "VM"), ("bmsComputeNodeOrders", "BMS")):
        for o in cfg.get(key, []):
            items.append((kind, o["orderCount"]))
            items.append(("EBS", o.get("systemDiskSize", 0) * o["orderCount"]))
    return items


def query_creation_price(st: State, req, api, path):
    _region(req)
    m, sto = req["masterNodeConfig"], req["storageConfig"]
    items = [("VM" if "ecsMasterNodeOrder" in m else "BMS", 1)]
    items += _order_items(req["computeNodeConfig"])
    if m.get("eipCreateMethod") == "AutoCreate":
        items.append(("NETWORK", m["eipBandwidth"]))
    if "sfsOrder" in sto:
        items.append(("SFS_TURBOC", sto["sfsOrder"]["sfsSize"]))
    if "oceanFSOrder" in sto:
        items.append(("OceanFS_C", sto["oceanFSOrder"]["oceanFSSize"]))
    return _price(items)


def query_expansion_price(st: State, req, api, path):
    _cluster(st, req, api)
    return _price(_order_items(req))


HANDLERS = {
    "create-delegate": create_delegate, "list-regions": list_regions,
    "list-cluster-types": list_cluster_types, "list-specifications": list_specifications,
    "list-available-images": list_available_images, "hpc/create-cluster": create_cluster,
    "query-job-result": query_job_result, "hpc/list-clusters": list_clusters,
    "hpc/list-nodes": list_nodes, "hpc/list-queues": list_queues,
    "hpc/create-queue": create_queue, "hpc/delete-queue": delete_queue,
    "hpc/expand-cluster": expand_cluster, "hpc/shrink-cluster": shrink_cluster,
    "delete-cluster": delete_cluster,
    "hpc/query-cluster-creation-price": query_creation_price,
    "hpc/query-cluster-expansion-price": query_expansion_price,
}
