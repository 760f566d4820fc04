"""In-memory model of the parts of CTyun E-HPC and VPC that the provider uses.

Clusters, bare-metal nodes, EIPs, shared storage, security groups and asynchronous jobs. Jobs
finish after a configurable simulated time (plus any injected delay) and their effects are applied
lazily whenever state is read, so nothing runs in the background. Quotas, name uniqueness and
clientToken deduplication behave like an order system would. Whether the real `delete-cluster`
releases compute nodes is undocumented, so by default it does not: compute nodes that were not
shrunk first stay billable as orphans, which is what the provider must avoid.

Not thread-safe by itself: the HTTP server holds `State.lock` around every call.
"""

from __future__ import annotations

import re
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Optional

REGION = "bb9fdb42056f11eda1610242ac110002"
AZ = "cn-huadong1-jsnj1A-public-ctcloud"
VPC = "vpc-emu00000001"
SUBNET = "subnet-emu00000001"
LLM_TYPE = "大模型精简版"
BASIC_TYPE = "基础版"
NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9-]{1,19}$")


class Refusal(Exception):
    """An API-level failure: becomes statusCode 900 with this code and message."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code, self.message = code, message


def password_ok(pw: str) -> bool:
    classes = [any(c.islower() for c in pw), any(c.isupper() for c in pw),
               any(c.isdigit() for c in pw), any(not c.isalnum() for c in pw)]
    return 8 <= len(pw) <= 30 and all(classes) and not pw.startswith("/")


@dataclass
class Settings:
    job_seconds: float = 1.0          # simulated provisioning time of every job
    max_skew_s: float = 900.0         # tolerated Eop-date skew
    quota_nodes: int = 16             # bare-metal nodes per account
    quota_clusters: int = 4
    delete_releases_compute: bool = False


@dataclass
class Job:
    uuid: str
    kind: str
    ends_at: float
    fail: bool
    apply: Callable[[bool], None]
    status: str = "submitted"
    message: str = ""


@dataclass
class Node:
    uuid: str
    name: str
    role: str
    cluster: str
    spec: str
    inner_ip: str
    queue: str = ""
    status: str = "creating"
    public_ip: str = ""


@dataclass
class Cluster:
    uuid: str
    name: str
    body: Dict[str, Any]
    status: str = "creating"
    created: float = field(default_factory=time.time)


class State:
    def __init__(self, settings: Optional[Settings] = None, clock=time.monotonic):
        self.lock = threading.RLock()
        self.settings = settings or Settings()
        self.clock = clock
        self.reset()

    def reset(self) -> None:
        self.clusters: Dict[str, Cluster] = {}
        self.nodes: Dict[str, Node] = {}          # every node still billed (incl. orphans)
        self.storage: Dict[str, Dict[str, Any]] = {}
        self.eips: Dict[str, Dict[str, Any]] = {}
        self.sgs: Dict[str, Dict[str, Any]] = {
            "sg-default0001": {"id": "sg-default0001", "name": "default", "vpcID": VPC,
                               "rules": [], "default": True}}
        self.vpcs: Dict[str, Dict[str, Any]] = {
            VPC: {"vpcID": VPC, "name": "default-vpc", "CIDR": "192.168.0.0/16", "default": True}}
        self.subnets: Dict[str, Dict[str, Any]] = {
            SUBNET: {"subnetID": SUBNET, "vpcID": VPC, "name": "default-subnet",
                     "CIDR": "192.168.0.0/24", "default": True}}
        self.jobs: Dict[str, Job] = {}
        self.tokens: Dict[str, Any] = {}
        self.pending_delay: Dict[str, float] = {}
        self.pending_fail: Dict[str, int] = {}
        self.simulated_s: float = 0.0           # sum of job durations, for benchmarks
        self._ip = 10
        self.types = {
            "ct-llm": {"clusterTypeUUID": "ct-llm", "clusterTypeName": LLM_TYPE,
                       "roles": [{"clusterTypeRoleUUID": "role-llm-master", "roleName": "master"},
                                 {"clusterTypeRoleUUID": "role-llm-compute",
                                  "roleName": "compute"}]},
            "ct-basic": {"clusterTypeUUID": "ct-basic", "clusterTypeName": BASIC_TYPE,
                         "roles": [{"clusterTypeRoleUUID": "role-basic-master",
                                    "roleName": "master"},
                                   {"clusterTypeRoleUUID": "role-basic-compute",
                                    "roleName": "compute"}]},
        }
        self.specs = [
            {"specificationUUID": "spec-c7-xl", "specificationName": "c7.xlarge.4",
             "nodeType": "ecs", "cpuNum": 4, "memSize": 16, "npuType": "", "npuNum": 0},
            {"specificationUUID": "spec-910b", "specificationName": "physical.lcas910b.2xlarge1",
             "nodeType": "bms", "cpuNum": 192, "memSize": 1536, "npuType": "Ascend 910B",
             "npuNum": 8},
            {"specificationUUID": "spec-910c", "specificationName": "physical.lcas910c.2xlarge1",
             "nodeType": "bms", "cpuNum": 320, "memSize": 1536, "npuType": "Ascend 910C",
             "npuNum": 16},
        ]
        self.images = [
            {"imageUUID": "img-ctyunos-910c", "imageName": "CTyunOS-23.01-910C-HPC",
             "osType": "linux", "specificationUUIDs": ["spec-910c"]},
            {"imageUUID": "img-ctyunos-910b", "imageName": "CTyunOS-23.01-910B-HPC",
             "osType": "linux", "specificationUUIDs": ["spec-910b"]},
        ]

    # -- time ---------------------------------------------------------------------------
    def tick(self) -> None:
        now = self.clock()
        for job in list(self.jobs.values()):
            if job.status == "submitted" and now >= job.ends_at:
                job.status = "failed" if job.fail else "success"
                job.message = "injected job failure" if job.fail else ""
                job.apply(not job.fail)

    def _job(self, kind: str, path: str, apply: Callable[[bool], None]) -> str:
        delay = self.settings.job_seconds + self.pending_delay.pop(path, 0.0)
        fail = self.pending_fail.get(path, 0) > 0
        if fail:
            self.pending_fail[path] -= 1
        job = Job(f"job-{uuid.uuid4().hex[:16]}", kind, self.clock() + delay, fail, apply)
        self.simulated_s += delay
        self.jobs[job.uuid] = job
        return job.uuid

    def _next_ip(self) -> str:
        self._ip += 1
        return f"192.168.{self._ip // 250}.{self._ip % 250 + 2}"

    # -- helpers ------------------------------------------------------------------------
    def _region(self, d: Dict[str, Any]) -> None:
        if d.get("regionID") != REGION:
            raise Refusal("Openapi.Parameter.Error", f"regionID {d.get('regionID')!r} not found")

    def _cluster(self, d: Dict[str, Any]) -> Cluster:
        self._region(d)
        c = self.clusters.get(str(d.get("clusterUUID")))
        if c is None:
            raise Refusal("HPC.Cluster.NotFound", f"cluster {d.get('clusterUUID')!r} not found")
        return c

    def _tokened(self, d: Dict[str, Any], key: str, make: Callable[[], Any]) -> Any:
        token = d.get("clientToken")
        if token and (key, token) in self.tokens:
            return self.tokens[(key, token)]
        result = make()
        if token:
            self.tokens[(key, token)] = result
        return result

    def _bms_in_use(self) -> int:
        return len(self.nodes)

    def _spec(self, uuid_: str) -> Dict[str, Any]:
        for s in self.specs:
            if s["specificationUUID"] == uuid_:
                return s
        raise Refusal("HPC.Specification.NotFound", f"specificationUUID {uuid_!r} not found")

    def _image(self, uuid_: str, spec: str) -> None:
        for i in self.images:
            if i["imageUUID"] == uuid_:
                if spec not in i["specificationUUIDs"]:
                    raise Refusal("HPC.Image.Mismatch", f"image {uuid_} does not fit {spec}")
                return
        raise Refusal("HPC.Image.NotFound", f"imageUUID {uuid_!r} not found")

    def _new_node(self, cluster: Cluster, role: str, spec: str, queue: str) -> Node:
        index = sum(1 for n in self.nodes.values() if n.cluster == cluster.uuid and n.role == role)
        prefix = "a3master" if role == "master" else "a3compute"
        name = f"{prefix}{index + 1:04d}"
        while any(n.name == name and n.cluster == cluster.uuid for n in self.nodes.values()):
            index += 1
            name = f"{prefix}{index + 1:04d}"
        node = Node(f"node-{uuid.uuid4().hex[:12]}", name, role, cluster.uuid, spec,
                    self._next_ip(), queue)
        self.nodes[node.uuid] = node
        return node

    # -- catalog ------------------------------------------------------------------------
    def list_cluster_types(self, q):
        self._region(q)
        return {"results": list(self.types.values())}

    def list_specifications(self, q):
        self._region(q)
        return {"results": [dict(s) for s in self.specs]}

    def list_available_images(self, q):
        self._region(q)
        spec = q.get("specificationUUID")
        return {"results": [{k: v for k, v in i.items() if k != "specificationUUIDs"}
                            for i in self.images if not spec or spec in i["specificationUUIDs"]]}

    # -- clusters -----------------------------------------------------------------------
    def create_cluster(self, d, path):
        self._region(d)
        return self._tokened(d, "create-cluster", lambda: self._create_cluster(d, path))

    def _create_cluster(self, d, path):
        if d.get("azName") != AZ:
            raise Refusal("Openapi.Parameter.Error", f"azName {d.get('azName')!r} not found")
        name = str(d.get("clusterName") or "")
        if not NAME_RE.match(name):
            raise Refusal("HPC.ClusterName.Invalid", f"clusterName {name!r} is invalid")
        if any(c.name == name for c in self.clusters.values()):
            raise Refusal("HPC.ClusterName.Exists", f"cluster name {name} already exists")
        ctype = self.types.get(str(d.get("clusterTypeUUID")))
        if ctype is None:
            raise Refusal("HPC.ClusterType.NotFound", "clusterTypeUUID not found")
        vpc = d.get("vpcID")
        if vpc not in self.vpcs:
            raise Refusal("VPC.NotFound", f"vpcID {vpc!r} not found")
        sg = str(d.get("securityGroupName") or "")
        if not any(g["name"] == sg or g["id"] == sg for g in self.sgs.values()
                   if g["vpcID"] == vpc):
            raise Refusal("VPC.SecurityGroup.NotFound", f"security group {sg!r} not in the VPC")
        m = d.get("masterNodeConfig") or {}
        c = d.get("computeNodeConfig") or {}
        roles = {r["roleName"]: r["clusterTypeRoleUUID"] for r in ctype["roles"]}
        if m.get("clusterTypeRoleUUID") != roles["master"] or \
                c.get("clusterTypeRoleUUID") != roles["compute"]:
            raise Refusal("HPC.Role.Mismatch", "role UUIDs do not belong to the cluster type")
        if not password_ok(str(m.get("rootPassword") or "")):
            raise Refusal("HPC.Password.Invalid", "rootPassword does not meet the rules")
        mo = m.get("bmsMasterNodeOrder") or {}
        self._spec(str(mo.get("specificationUUID")))
        self._image(str(m.get("imageUUID")), str(mo.get("specificationUUID")))
        if (self.subnets.get(str(mo.get("subnetID"))) or {}).get("vpcID") != vpc:
            raise Refusal("VPC.Subnet.NotFound", f"subnetID {mo.get('subnetID')!r} not found")
        orders = c.get("bmsComputeNodeOrders") or []
        count = sum(int(o.get("orderCount", 0)) for o in orders)
        if ctype["clusterTypeName"] == LLM_TYPE and count < 1:
            raise Refusal("HPC.ComputeNode.Required", "this cluster type needs a compute node")
        for o in orders:
            self._spec(str(o.get("specificationUUID")))
            self._image(str(o.get("imageUUID")), str(o.get("specificationUUID")))
            if (self.subnets.get(str(o.get("subnetID"))) or {}).get("vpcID") != vpc:
                raise Refusal("VPC.Subnet.NotFound", "compute subnetID not found")
        st = d.get("storageConfig") or {}
        order = st.get("sfsOrder") or st.get("oceanFSOrder") or {}
        size = int(order.get("sfsSize") or order.get("size") or 0)
        if st.get("storageCreateMethod") == "AutoCreate" and not (500 <= size <= 32768):
            raise Refusal("HPC.Storage.Size", f"storage size {size} GB is not in 500-32768")
        if len(self.clusters) >= self.settings.quota_clusters:
            raise Refusal("HPC.Quota.Cluster", "cluster quota exceeded")
        if self._bms_in_use() + 1 + count > self.settings.quota_nodes:
            raise Refusal("HPC.Quota.BareMetal", "bare-metal quota exceeded")
        cluster = Cluster(f"hpc-{uuid.uuid4().hex[:16]}", name, d)
        self.clusters[cluster.uuid] = cluster
        # the master joins a queue only when someone adds it on the node (seed, step 3)
        master = self._new_node(cluster, "master", str(mo["specificationUUID"]), "")
        computes = [self._new_node(cluster, "compute", str(o["specificationUUID"]),
                                   str(o.get("queueName") or "batch"))
                    for o in orders for _ in range(int(o["orderCount"]))]
        sid = f"sfs-{uuid.uuid4().hex[:12]}"
        self.storage[sid] = {"id": sid, "cluster": cluster.uuid, "sizeGB": size,
                             "type": "oceanfs" if st.get("oceanFSOrder") else "sfs"}
        eip = None
        if mo.get("eipCreateMethod", m.get("eipCreateMethod")) != "None":
            eip = f"eip-{uuid.uuid4().hex[:12]}"
            self._ip += 1
            self.eips[eip] = {"id": eip, "cluster": cluster.uuid,
                              "ip": f"203.0.113.{self._ip % 250 + 2}"}

        def apply(ok: bool) -> None:
            cluster.status = "available" if ok else "failed"
            for n in [master] + computes:
                if n.uuid in self.nodes:
                    n.status = "running" if ok else "error"
            if eip and ok:
                master.public_ip = self.eips[eip]["ip"]

        job = self._job("create-cluster", path, apply)
        return {"jobUUID": job, "masterOrderID": f"order-{uuid.uuid4().hex[:12]}"}

    def _cluster_view(self, c: Cluster) -> Dict[str, Any]:
        nodes = [n for n in self.nodes.values() if n.cluster == c.uuid and n.status != "orphan"]
        master = next((n for n in nodes if n.role == "master"), None)
        return {
            "clusterUUID": c.uuid, "clusterName": c.name, "regionID": REGION,
            "azName": c.body.get("azName"), "vpcID": c.body.get("vpcID"),
            "clusterTypeUUID": c.body.get("clusterTypeUUID"),
            "clusterAvailableStatus": c.status,
            "innerIP": master.inner_ip if master else "",
            "publicIP": master.public_ip if master else "",
            "totalComputeNodeCount": sum(1 for n in nodes if n.role == "compute"),
            "schedulerType": "slurm", "schedulerVersion": "22.05.8",
            "createTime": int(c.created),
        }

    def list_clusters(self, q):
        self._region(q)
        name = q.get("clusterName")
        rows = [self._cluster_view(c) for c in self.clusters.values()
                if not name or name in c.name]
        return self._page(rows, q)

    @staticmethod
    def _page(rows, q):
        size = int(q.get("pageSize") or 10)
        no = int(q.get("pageNo") or 1)
        return {"results": rows[(no - 1) * size: no * size], "totalCount": len(rows),
                "currentCount": len(rows[(no - 1) * size: no * size])}

    def list_nodes(self, q):
        c = self._cluster(q)
        rows = [{"nodeUUID": n.uuid, "nodeName": n.name, "nodeRole": n.role,
                 "innerIP": n.inner_ip, "publicIP": n.public_ip, "nodeStatus": n.status,
                 "queueName": n.queue, "specificationUUID": n.spec}
                for n in self.nodes.values() if n.cluster == c.uuid and n.status != "orphan"]
        return self._page(rows, q)

    def expand_cluster(self, d, path):
        c = self._cluster(d)
        return self._tokened(d, "expand-cluster", lambda: self._expand(c, d, path))

    def _expand(self, c, d, path):
        if c.status != "available":
            raise Refusal("HPC.Cluster.Busy", f"cluster is {c.status}")
        orders = (d.get("computeNodeConfig") or {}).get("bmsComputeNodeOrders") or []
        count = sum(int(o.get("orderCount", 0)) for o in orders)
        if count < 1:
            raise Refusal("Openapi.Parameter.Error", "orderCount must be at least 1")
        if self._bms_in_use() + count > self.settings.quota_nodes:
            raise Refusal("HPC.Quota.BareMetal", "bare-metal quota exceeded")
        for o in orders:
            self._spec(str(o.get("specificationUUID")))
        new = [self._new_node(c, "compute", str(o["specificationUUID"]),
                              str(o.get("queueName") or "batch"))
               for o in orders for _ in range(int(o["orderCount"]))]
        c.status = "expanding"

        def apply(ok: bool) -> None:
            c.status = "available"
            for n in new:
                n.status = "running" if ok else "error"
        return {"jobUUID": self._job("expand-cluster", path, apply)}

    def shrink_cluster(self, d, path):
        c = self._cluster(d)
        ids = d.get("nodeUUIDList") or []
        if not 1 <= len(ids) <= 10:
            raise Refusal("Openapi.Parameter.Error", "nodeUUIDList takes 1 to 10 nodes")
        for i in ids:
            n = self.nodes.get(i)
            if n is None or n.cluster != c.uuid:
                raise Refusal("HPC.Node.NotFound", f"node {i} not in cluster")
            if n.role != "compute":
                raise Refusal("HPC.Node.Master", "the master node cannot be removed")
        if c.status not in ("available", "failed"):
            raise Refusal("HPC.Cluster.Busy", f"cluster is {c.status}")
        c.status = "shrinking"
        for i in ids:
            self.nodes[i].status = "deleting"

        def apply(ok: bool) -> None:
            c.status = "available"
            for i in ids:
                if ok:
                    self.nodes.pop(i, None)
                elif i in self.nodes:
                    self.nodes[i].status = "running"
        return {"jobUUID": self._job("shrink-cluster", path, apply)}

    def delete_cluster(self, d, path):
        c = self._cluster(d)
        if c.status in ("creating", "expanding", "shrinking"):
            raise Refusal("HPC.Cluster.Busy", f"cluster is {c.status}")
        if c.status == "deleting":
            raise Refusal("HPC.Cluster.Deleting", "cluster is already being deleted")
        c.status = "deleting"

        def apply(ok: bool) -> None:
            if not ok:
                c.status = "available"
                return
            self.clusters.pop(c.uuid, None)
            for n in list(self.nodes.values()):
                if n.cluster == c.uuid:
                    if n.role == "master" or self.settings.delete_releases_compute:
                        self.nodes.pop(n.uuid)
                    else:
                        n.status = "orphan"
            for k in [k for k, s in self.storage.items() if s["cluster"] == c.uuid]:
                self.storage.pop(k)
            for k in [k for k, e in self.eips.items() if e["cluster"] == c.uuid]:
                self.eips.pop(k)
        return {"jobUUID": self._job("delete-cluster", path, apply)}

    def query_job(self, q):
        job = self.jobs.get(str(q.get("jobUUID")))
        if job is None:
            raise Refusal("HPC.Job.NotFound", f"job {q.get('jobUUID')!r} not found")
        return {"jobUUID": job.uuid, "status": job.status, "message": job.message,
                "jobType": job.kind}

    # -- security groups ----------------------------------------------------------------
    def create_sg(self, d, path):
        self._region(d)
        return self._tokened(d, "create-sg", lambda: self._create_sg(d))

    def _create_sg(self, d):
        if d.get("vpcID") not in self.vpcs:
            raise Refusal("VPC.NotFound", f"vpcID {d.get('vpcID')!r} not found")
        name = str(d.get("name") or "")
        if not name or any(g["name"] == name for g in self.sgs.values()):
            raise Refusal("VPC.SecurityGroup.NameExists", f"security group {name!r} exists")
        sid = f"sg-{uuid.uuid4().hex[:12]}"
        # like CTyun, a new group allows all outbound traffic
        self.sgs[sid] = {"id": sid, "name": name, "vpcID": d["vpcID"], "rules": [
            {"id": f"sgr-{uuid.uuid4().hex[:12]}", "direction": "egress", "action": "accept",
             "protocol": "ANY", "range": "1-65535", "destCidrIp": "0.0.0.0/0",
             "ethertype": "IPv4", "priority": 100}]}
        return {"securityGroupID": sid}

    def _sg(self, d):
        self._region(d)
        g = self.sgs.get(str(d.get("securityGroupID")))
        if g is None:
            raise Refusal("VPC.SecurityGroup.NotFound", f"{d.get('securityGroupID')!r} not found")
        return g

    def describe_sg(self, q):
        g = self._sg(q)
        return {"id": g["id"], "name": g["name"], "vpcID": g["vpcID"],
                "securityGroupRuleList": [dict(r) for r in g["rules"]]}

    def query_sgs(self, q):
        self._region(q)
        content = q.get("queryContent") or ""
        rows = [{"id": g["id"], "name": g["name"], "vpcID": g["vpcID"]}
                for g in self.sgs.values()
                if g["vpcID"] == (q.get("vpcID") or g["vpcID"]) and content in g["name"]]
        return self._page(rows, q)

    def add_ingress(self, d, path):
        g = self._sg(d)
        return self._tokened(d, "ingress", lambda: self._add_ingress(g, d))

    def _add_ingress(self, g, d):
        ids = []
        for r in d.get("securityGroupRules") or []:
            if r.get("direction") != "ingress" or r.get("action") != "accept":
                raise Refusal("Openapi.Parameter.Error", "only accept ingress rules here")
            rid = f"sgr-{uuid.uuid4().hex[:12]}"
            g["rules"].append({"id": rid, "direction": "ingress", "action": "accept",
                               "protocol": r.get("protocol"), "range": str(r.get("range")),
                               "destCidrIp": r.get("destCidrIp"),
                               "ethertype": r.get("ethertype", "IPv4"),
                               "priority": r.get("priority", 1)})
            ids.append(rid)
        return {"sgRuleIDs": ids}

    def revoke_ingress(self, d, path):
        g = self._sg(d)
        rid = d.get("securityGroupRuleID")
        before = len(g["rules"])
        g["rules"] = [r for r in g["rules"] if r["id"] != rid]
        if len(g["rules"]) == before:
            raise Refusal("VPC.SecurityGroupRule.NotFound", f"rule {rid!r} not found")
        return {}

    def delete_sg(self, d, path):
        g = self._sg(d)
        if g.get("default"):
            raise Refusal("VPC.SecurityGroup.Default", "the default group cannot be deleted")
        in_use = [c.name for c in self.clusters.values()
                  if c.body.get("securityGroupName") in (g["id"], g["name"])]
        if in_use:
            raise Refusal("VPC.SecurityGroup.InUse", f"used by cluster {in_use[0]}")
        self.sgs.pop(g["id"])
        return {}

    # -- VPCs and subnets -------------------------------------------------------------
    def create_vpc(self, d, path):
        self._region(d)
        return self._tokened(d, "create-vpc", lambda: self._create_vpc(d))

    def _create_vpc(self, d):
        name, cidr = str(d.get("name") or ""), str(d.get("CIDR") or "")
        if not name or any(v["name"] == name for v in self.vpcs.values()):
            raise Refusal("VPC.Name.Exists", f"VPC name {name!r} is empty or taken")
        if not cidr:
            raise Refusal("Openapi.Parameter.Error", "CIDR is required")
        vid = f"vpc-{uuid.uuid4().hex[:12]}"
        self.vpcs[vid] = {"vpcID": vid, "name": name, "CIDR": cidr}
        return {"vpcID": vid}

    def list_vpcs(self, q):
        self._region(q)
        content = q.get("queryContent") or ""
        return self._page([{k: v for k, v in x.items() if k != "default"}
                           for x in self.vpcs.values() if content in x["name"]], q)

    def delete_vpc(self, d, path):
        self._region(d)
        vid = d.get("vpcID")
        if vid not in self.vpcs:
            raise Refusal("VPC.NotFound", f"vpcID {vid!r} not found")
        if self.vpcs[vid].get("default"):
            raise Refusal("VPC.Default", "the default VPC cannot be deleted")
        if any(s["vpcID"] == vid for s in self.subnets.values()) or \
                any(g["vpcID"] == vid for g in self.sgs.values()):
            raise Refusal("VPC.InUse", "the VPC still has subnets or security groups")
        self.vpcs.pop(vid)
        return {}

    def create_subnet(self, d, path):
        self._region(d)
        return self._tokened(d, "create-subnet", lambda: self._create_subnet(d))

    def _create_subnet(self, d):
        vid, name = d.get("vpcID"), str(d.get("name") or "")
        if vid not in self.vpcs:
            raise Refusal("VPC.NotFound", f"vpcID {vid!r} not found")
        if not name or any(x["name"] == name and x["vpcID"] == vid
                           for x in self.subnets.values()):
            raise Refusal("VPC.Subnet.NameExists", f"subnet name {name!r} is empty or taken")
        sid = f"subnet-{uuid.uuid4().hex[:12]}"
        self.subnets[sid] = {"subnetID": sid, "vpcID": vid, "name": name,
                             "CIDR": str(d.get("CIDR") or "")}
        return {"subnetID": sid}

    def list_subnets(self, q):
        self._region(q)
        return self._page([{k: v for k, v in x.items() if k != "default"}
                           for x in self.subnets.values()
                           if x["vpcID"] == (q.get("vpcID") or x["vpcID"])], q)

    def delete_subnet(self, d, path):
        self._region(d)
        sid = d.get("subnetID")
        if sid not in self.subnets:
            raise Refusal("VPC.Subnet.NotFound", f"subnetID {sid!r} not found")
        if self.subnets[sid].get("default"):
            raise Refusal("VPC.Subnet.Default", "the default subnet cannot be deleted")
        users = [c.name for c in self.clusters.values()
                 if (c.body.get("masterNodeConfig") or {}).get("bmsMasterNodeOrder", {})
                 .get("subnetID") == sid]
        if users:
            raise Refusal("VPC.Subnet.InUse", f"used by cluster {users[0]}")
        self.subnets.pop(sid)
        return {}

    # -- for tests ----------------------------------------------------------------------
    def inventory(self) -> Dict[str, Any]:
        sgs = [g for g in self.sgs.values() if not g.get("default")]
        default_rules = [r for g in self.sgs.values() if g.get("default") for r in g["rules"]]
        out = {
            "clusters": [{"uuid": c.uuid, "name": c.name, "status": c.status}
                         for c in self.clusters.values()],
            "nodes": [{"uuid": n.uuid, "name": n.name, "role": n.role, "cluster": n.cluster,
                       "status": n.status} for n in self.nodes.values()],
            "storage": list(self.storage.values()),
            "eips": list(self.eips.values()),
            "securityGroups": [{"id": g["id"], "name": g["name"]} for g in sgs],
            "vpcs": [v["vpcID"] for v in self.vpcs.values() if not v.get("default")],
            "subnets": [x["subnetID"] for x in self.subnets.values() if not x.get("default")],
            "defaultGroupRules": default_rules,
            "simulatedSeconds": round(self.simulated_s, 3),
        }
        out["billable"] = len(out["clusters"]) + len(out["nodes"]) + len(out["storage"]) + \
            len(out["eips"])
        out["leaked"] = out["billable"] + len(sgs) + len(default_rules) + len(out["vpcs"]) + \
            len(out["subnets"])
        return out

    def rename_cluster(self, uuid_: str, name: str) -> None:
        """What a person renaming the cluster in the console would do."""
        self.clusters[uuid_].name = name

    def faults_for_jobs(self, path: str, kind: str, seconds: float) -> None:
        if kind == "slow_job":
            self.pending_delay[path] = self.pending_delay.get(path, 0.0) + seconds
        else:
            self.pending_fail[path] = self.pending_fail.get(path, 0) + 1


HPC = "/v4/cthpc"
ROUTES: Dict[str, tuple] = {
    f"{HPC}/list-cluster-types": ("GET", "list_cluster_types"),
    f"{HPC}/list-specifications": ("GET", "list_specifications"),
    f"{HPC}/list-available-images": ("GET", "list_available_images"),
    f"{HPC}/hpc/create-cluster": ("POST", "create_cluster"),
    f"{HPC}/hpc/list-clusters": ("GET", "list_clusters"),
    f"{HPC}/hpc/list-nodes": ("GET", "list_nodes"),
    f"{HPC}/hpc/expand-cluster": ("POST", "expand_cluster"),
    f"{HPC}/hpc/shrink-cluster": ("POST", "shrink_cluster"),
    f"{HPC}/delete-cluster": ("POST", "delete_cluster"),
    f"{HPC}/query-job-result": ("GET", "query_job"),
    "/v4/vpc/create-security-group": ("POST", "create_sg"),
    "/v4/vpc/describe-security-group-attribute": ("GET", "describe_sg"),
    "/v4/vpc/new-query-security-groups": ("GET", "query_sgs"),
    "/v4/vpc/create-security-group-ingress": ("POST", "add_ingress"),
    "/v4/vpc/revoke-security-group-ingress": ("POST", "revoke_ingress"),
    "/v4/vpc/delete-security-group": ("POST", "delete_sg"),
    "/v4/vpc/create": ("POST", "create_vpc"),
    "/v4/vpc/new-list": ("GET", "list_vpcs"),
    "/v4/vpc/delete": ("POST", "delete_vpc"),
    "/v4/vpc/create-subnet": ("POST", "create_subnet"),
    "/v4/vpc/new-list-subnet": ("GET", "list_subnets"),
    "/v4/vpc/delete-subnet": ("POST", "delete_subnet"),
}


def dispatch(state: State, method: str, path: str, query: Dict[str, str],
             body: Optional[Dict[str, Any]]) -> Any:
    """Run one API call against the state; raises Refusal or KeyError (unknown route)."""
    want, fn = ROUTES[path]
    if method != want:
        raise Refusal("Openapi.Method.NotAllowed", f"{path} takes {want}")
    handler = getattr(state, fn)
    with state.lock:
        state.tick()
        if want == "GET":
            return handler(query)
        if not isinstance(body, dict):
            raise Refusal("Openapi.Parameter.Error", "body must be a JSON object")
        return handler(body, path)
