"""The emulated CTyun account: resources, asynchronous jobs, settings, and the final report.

Built from the CTyun contract (tests/contracts/ctyun), never from kimi-k3's client. Where the
contract says a behaviour is undocumented (its section 6, gaps.py), `Settings` picks the behaviour that is
hardest on a client and makes it switchable; each field says which item it settles.

Jobs run in simulated time and their effects are applied lazily whenever state is read
(`tick`), so nothing runs in the background. Not thread-safe by itself: the HTTP server holds
`State.lock` around every call. Every resource carries an `owner`: "baseline" (the account had
it before the test), "foreign:<who>" (planted by `seed_foreign`: another stack or person in the
same account) or "stack" (made through the API, i.e. by the code under test, or by E-HPC on its
behalf). `report()` lists everything still held, every refused request and every call that
touched a foreign resource.
"""

from __future__ import annotations

import ipaddress
import secrets
import string
import threading
import time
import uuid as uuidlib
from dataclasses import asdict, dataclass, field, fields
from datetime import datetime, timedelta, timezone
from typing import Any, Callable, Dict, List, Optional

from .catalog import AZ, AZ2, REGION  # noqa: F401  (re-exported for tests)

VPC = "vpc-default001"            # the account's pre-existing VPC (owner "baseline")
SUBNET = "subnet-default001"
DEFAULT_SG = "sg-default001"
CHINA = timezone(timedelta(hours=8))
STACK = "stack"
BASELINE = "baseline"


class Refusal(Exception):
    """An API-level failure: answered as statusCode 900 with this code and message."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code, self.message = code, message


@dataclass
class Settings:
    """Behaviour switches. Defaults = the hardest consistent reading of the contract."""
    job_seconds: float = 1.0            # simulated run time of every job
    # gateway (CTyun contract 6.1, 2)
    max_skew_s: float = 300.0
    eop_date_zone: str = "either"       # utc | china | either
    require_canonical_query: bool = True
    gateway_http_status: int = 401      # HTTP status of gateway refusals (body: 900 envelope)
    status_code_as_string: bool = False  # send "800"/"900" (CTyun contract 1.3: both occur)
    # delegation (item 6): required before the first cluster; a second call is refused
    require_delegate: bool = True
    delegate_repeat_refused: bool = True
    # clusters (items 3, 4, 8)
    list_during_create: bool = True     # listed at once, clusterAvailableStatus unavailable
    unique_cluster_names: bool = False  # create-cluster is not deduplicated by name either
    busy_refuses_changes: bool = True   # expand/shrink/delete/queues refused while a job runs
    failed_create_keeps_resources: bool = True   # a failed create leaves a billed cluster
    failed_expand_keeps_nodes: bool = True       # failed expand: new nodes stay (error, billed)
    delete_releases_master: bool = True
    delete_releases_compute: bool = False        # auto-ordered compute nodes outlive delete
    delete_releases_eip: bool = True
    delete_releases_storage: bool = True
    delete_releases_auto_sg: bool = False        # a group E-HPC made stays behind
    delete_seconds: float = -1.0        # cluster listed (unavailable) this long after delete;
    #                                     -1 = job_seconds (delete has no job to poll)
    shrink_keeps_last_compute: bool = False      # True: the last compute node cannot go
    sg_name_resolution: str = "adopt_or_create"  # item 5: adopt a same-named group, else make
    job_success_status: str = "success"          # or force_completed
    # list-queues shape (item 10 / section 5): "array" (the example) or "resultList"
    queues_shape: str = "array"
    # bare metal (CTyun contract 6.15, 6.16, 6.18; ebm_ops.py): how the INVENTED 910C reports
    # its 2 NVMe disks ("nvme": NVMe volumes, no data RAID, as the seed's console cluster
    # suggests; "data": data volumes, a data RAID required), its kind ("elastic": ordinary
    # subnet; "standard": a cbm subnet), and whether device types carry E-HPC's names
    bms_910c_disks: str = "nvme"
    bms_910c_kind: str = "elastic"
    device_type_is_spec_name: bool = True
    # quotas (undocumented codes)
    quota_clusters: int = 10
    quota_bare_metal: int = 40
    # VPC (item 11)
    vpc_name_filter: str = "substring"  # vpcName matched by substring (exact: not stated)
    client_token_ttl_s: float = 86400.0
    new_group_default_egress: bool = True  # a new group carries allow-all egress rules
    # a new group carries ingress "all protocols from this group" (IPv4 and IPv6), as CTyun's
    # console presets and default group do ([ctdoc 10105035], [ctdoc 10002094]); what the API's
    # create-security-group puts in one is open question 6.14
    new_group_intra_rule: bool = True
    # what destCidrIp a rule whose source is a group lists (undocumented, 6.14): "" or "any"
    # (0.0.0.0/0 or ::/0: the reading that fools a client matching rules by CIDR)
    group_rule_dest_cidr: str = ""
    # after delete-cluster released it, eip/show answers Openapi.Eip.NotFound ("absent") or the
    # EIP as DELETED for `eip_deleted_seconds` first ("deleted"; [tf] eip_const.go statuses)
    eip_released_as: str = "absent"

    def effective_delete_seconds(self) -> float:
        return self.job_seconds if self.delete_seconds < 0 else self.delete_seconds


CHOICES = {"eop_date_zone": ("utc", "china", "either"),
           "bms_910c_disks": ("nvme", "data"), "bms_910c_kind": ("elastic", "standard"),
           "group_rule_dest_cidr": ("", "any"), "eip_released_as": ("absent", "deleted"),
           "sg_name_resolution": ("adopt_or_create", "create", "adopt"),
           "job_success_status": ("success", "force_completed"),
           "queues_shape": ("array", "resultList"),
           "vpc_name_filter": ("substring", "exact")}


def read_only(api: str) -> bool:
    tail = api.split("/")[-1]
    return tail.startswith(("list-", "query", "new-", "describe-", "info-", "show",
                            "device-type-", "raid-type-")) or api == "list-regions"


def now_text() -> str:
    """E-HPC times: `YYYY-MM-DD HH:MM:SS` (CTyun contract 1.7; zone not stated: China time here)."""
    return datetime.now(CHINA).strftime("%Y-%m-%d %H:%M:%S")


def utc_text() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def new_id(prefix: str, n: int) -> str:
    alphabet = string.ascii_lowercase + string.digits
    return prefix + "".join(secrets.choice(alphabet) for _ in range(n))


@dataclass
class Job:
    uuid: str
    api: str
    cluster: str
    started: float
    seconds: float
    fail: bool
    on_done: Callable[[bool], None]
    final: str = ""

    def status(self, now: float) -> str:
        if self.final:
            return self.final
        frac = (now - self.started) / self.seconds if self.seconds > 0 else 1.0
        return "wait" if frac < 0.2 else "pending_submit" if frac < 0.4 else "submitted"


@dataclass
class Node:
    uuid: str
    name: str
    cluster: str
    role: int                 # 0 master, 1 compute (CTyun contract 2.9)
    node_type: str            # VM | BMS
    spec: str                 # specification name
    subnet: str
    inner_ip: str
    queue: Optional[str]
    on_demand: bool
    owner: str
    status: str = "creating"
    scheduler: str = "none"
    public_ip: Optional[str] = None
    instance_id: str = field(default_factory=lambda: new_id("ss-", 28))
    order_resource_id: str = field(default_factory=lambda: uuidlib.uuid4().hex)
    created: str = field(default_factory=now_text)
    orphan: bool = False      # its cluster was deleted and the node was not released
    raid: Dict[str, str] = field(default_factory=dict)   # RAID per kind of local disk


@dataclass
class Queue:
    uuid: str
    cluster: str
    name: str
    is_default: bool
    status: str = "creating"
    created: str = field(default_factory=now_text)


@dataclass
class Cluster:
    uuid: str
    name: str
    az: str
    vpc: str
    sg: str
    owner: str
    status: str = "creating"   # creating | available | failed | deleting
    job: str = ""              # the job running on it, if any
    created: str = field(default_factory=now_text)
    deleted_at: float = 0.0


@dataclass
class Rule:
    id: str
    direction: str
    action: str
    priority: int
    protocol: str
    ethertype: str
    destCidrIp: str
    range: str
    description: str
    securityGroupID: str
    remoteSecurityGroupID: str = ""
    origin: str = "user"
    createTime: str = field(default_factory=utc_text)


@dataclass
class Group:
    id: str
    name: str
    vpc: str
    description: str
    owner: str
    rules: List[Rule] = field(default_factory=list)
    made_by: str = "api"       # api | ehpc (E-HPC created it for a cluster)
    default: bool = False
    project: str = "0"
    created: str = field(default_factory=utc_text)


@dataclass
class Vpc:
    id: str
    name: str
    cidr: str
    description: str
    owner: str
    project: str = "0"
    created: str = field(default_factory=utc_text)


@dataclass
class Subnet:
    id: str
    name: str
    vpc: str
    cidr: str
    kind: int                  # 0 ordinary, 1 bare metal
    description: str
    owner: str
    az: str = AZ
    used: int = 0              # addresses handed out
    created: str = field(default_factory=utc_text)

    def next_ip(self) -> str:
        net = ipaddress.ip_network(self.cidr)
        self.used += 1
        return str(net.network_address + 2 + self.used)   # .1 gateway, .2 dhcp


class State:
    def __init__(self, settings: Optional[Settings] = None, clock=time.monotonic):
        self.lock = threading.RLock()
        self.settings = settings or Settings()
        self.clock = clock
        self.reset()

    def reset(self) -> None:
        self.clusters: Dict[str, Cluster] = {}
        self.nodes: Dict[str, Node] = {}
        self.queues: Dict[str, Queue] = {}
        self.eips: Dict[str, Dict[str, Any]] = {}
        self.filesystems: Dict[str, Dict[str, Any]] = {}
        self.jobs: Dict[str, Job] = {}
        self.vpcs: Dict[str, Vpc] = {VPC: Vpc(VPC, "default", "192.168.0.0/16", "", BASELINE)}
        self.subnets: Dict[str, Subnet] = {
            SUBNET: Subnet(SUBNET, "default", VPC, "192.168.0.0/24", 0, "", BASELINE)}
        self.groups: Dict[str, Group] = {}
        self.groups[DEFAULT_SG] = self.new_group(DEFAULT_SG, "default", VPC, "", BASELINE,
                                                 default=True)
        self.tokens: Dict[tuple, tuple] = {}
        self.delegated = False
        self.pending_delay: Dict[str, float] = {}
        self.pending_fail: Dict[str, int] = {}
        self.refusals: List[Dict[str, Any]] = []
        self.foreign_touched: List[Dict[str, Any]] = []
        self.orders: List[Dict[str, Any]] = []
        self.simulated_s = 0.0

    # -- time and jobs ------------------------------------------------------------------
    def tick(self) -> None:
        now = self.clock()
        for job in list(self.jobs.values()):
            if not job.final and now >= job.started + job.seconds:
                job.final = "failed" if job.fail else self.settings.job_success_status
                job.on_done(not job.fail)
        for c in list(self.clusters.values()):
            if c.status == "deleting" and now >= c.deleted_at:
                self._finish_delete(c)

    def start_job(self, api: str, path: str, cluster: str,
                  on_done: Callable[[bool], None]) -> str:
        seconds = self.settings.job_seconds + self.pending_delay.pop(path, 0.0)
        fail = self.pending_fail.get(path, 0) > 0
        if fail:
            self.pending_fail[path] -= 1
        job = Job(new_id("job-", 20), api, cluster, self.clock(), seconds, fail, on_done)
        self.jobs[job.uuid] = job
        self.simulated_s += seconds
        return job.uuid

    def job_fault(self, path: str, kind: str, seconds: float) -> None:
        if kind == "slow_job":
            self.pending_delay[path] = self.pending_delay.get(path, 0.0) + seconds
        else:
            self.pending_fail[path] = self.pending_fail.get(path, 0) + 1

    # -- ownership ----------------------------------------------------------------------
    def touch(self, api: str, kind: str, rid: str, owner: str) -> None:
        """Record a call that changed or used a resource of another stack (reads do not
        count: listing and describing what others hold is how a client tells them apart)."""
        if owner.startswith("foreign:") and not read_only(api):
            self.foreign_touched.append({"api": api, "kind": kind, "id": rid, "owner": owner})

    def refused(self, api: str, path: str, code: str, reason: str, http: int = 200) -> None:
        self.refusals.append({"api": api, "path": path, "code": code, "reason": reason,
                              "http": http})

    # -- building blocks shared by the E-HPC and VPC operations --------------------------
    def new_group(self, gid: str, name: str, vpc: str, description: str, owner: str,
                  default: bool = False, made_by: str = "api") -> Group:
        g = Group(gid, name, vpc, description, owner, made_by=made_by, default=default)
        if self.settings.new_group_default_egress:
            for ether, cidr in (("IPv4", "0.0.0.0/0"), ("IPv6", "::/0")):
                g.rules.append(Rule(str(uuidlib.uuid4()), "egress", "accept", 100, "ANY",
                                    ether, cidr, "", "", gid, origin="default"))
        if self.settings.new_group_intra_rule:
            # [ctdoc 10105035] preset: "入方向 | 全部(IPv4) 全部(IPv6) | 当前安全组"
            for ether in ("IPv4", "IPv6"):
                g.rules.append(Rule(str(uuidlib.uuid4()), "ingress", "accept", 100, "ANY",
                                    ether, "", "", "", gid, remoteSecurityGroupID=gid,
                                    origin="default"))
        return g

    def new_eip_address(self) -> str:
        used = {e["ip"] for e in self.eips.values()}
        return next(f"203.0.113.{i}" for i in range(2, 255) if f"203.0.113.{i}" not in used)

    def members_can_talk(self, gid: str) -> bool:
        """Do the members of group `gid` reach each other on every port? (an ingress accept
        rule of any protocol whose source is the group itself; CTyun contract 3.11)"""
        g = self.groups.get(gid)
        return g is not None and any(
            r.direction == "ingress" and r.action == "accept" and r.protocol == "ANY"
            and r.remoteSecurityGroupID == gid and r.ethertype == "IPv4" for r in g.rules)

    def _finish_delete(self, c: Cluster) -> None:
        s = self.settings
        self.clusters.pop(c.uuid, None)
        for n in [n for n in self.nodes.values() if n.cluster == c.uuid]:
            release = s.delete_releases_master if n.role == 0 else s.delete_releases_compute
            if release:
                self.nodes.pop(n.uuid)
            else:
                n.orphan = True
        for q in [q for q in self.queues.values() if q.cluster == c.uuid]:
            self.queues.pop(q.uuid)
        for k in [k for k, e in self.eips.items() if e["cluster"] == c.uuid]:
            if not s.delete_releases_eip:
                self.eips[k].update(status="DOWN", association="")   # unbound, still billed
            elif s.eip_released_as == "deleted":
                self.eips[k].update(status="DELETED", association="", owner="released")
            else:
                self.eips.pop(k)
        if s.delete_releases_storage:
            for k in [k for k, f in self.filesystems.items() if f["cluster"] == c.uuid]:
                self.filesystems.pop(k)
        g = self.groups.get(c.sg)
        if g is not None and g.made_by == "ehpc" and s.delete_releases_auto_sg and \
                not any(x.sg == g.id for x in self.clusters.values()):
            self.groups.pop(g.id)

    # -- the report ---------------------------------------------------------------------
    def held(self) -> Dict[str, List[Dict[str, Any]]]:
        """Everything billable or otherwise still held, with its owner."""
        return {
            "clusters": [{"id": c.uuid, "name": c.name, "status": c.status, "owner": c.owner,
                          "securityGroup": c.sg,
                          "membersCanTalk": self.members_can_talk(c.sg)}
                         for c in self.clusters.values()],
            "nodes": [{"id": n.uuid, "name": n.name, "cluster": n.cluster,
                       "role": "master" if n.role == 0 else "compute", "status": n.status,
                       "orphan": n.orphan, "owner": n.owner, "raid": dict(n.raid)}
                      for n in self.nodes.values()],
            "eips": [dict(e) for e in self.eips.values() if e["owner"] != "released"],
            "fileSystems": [dict(f) for f in self.filesystems.values()],
            "vpcs": [{"id": v.id, "name": v.name, "owner": v.owner} for v in self.vpcs.values()],
            "subnets": [{"id": x.id, "name": x.name, "vpc": x.vpc, "owner": x.owner}
                        for x in self.subnets.values()],
            "securityGroups": [{"id": g.id, "name": g.name, "vpc": g.vpc, "owner": g.owner,
                                "madeBy": g.made_by} for g in self.groups.values()],
            "rules": [{"id": r.id, "group": g.id, "direction": r.direction,
                       "origin": r.origin, "owner": g.owner}
                      for g in self.groups.values() for r in g.rules if r.origin != "default"],
        }

    def report(self) -> Dict[str, Any]:
        held = self.held()
        leaked = {k: [x for x in v if x["owner"] == STACK] for k, v in held.items()}
        return {
            "held": held,
            "leaked": {k: len(v) for k, v in leaked.items()},
            "leakedTotal": sum(len(v) for v in leaked.values()),
            "leakedItems": leaked,
            "refused": list(self.refusals),
            "foreignTouched": list(self.foreign_touched),
            "orders": list(self.orders),
            "jobs": [{"uuid": j.uuid, "api": j.api, "seconds": round(j.seconds, 3),
                      "status": j.status(self.clock())} for j in self.jobs.values()],
            "simulatedSeconds": round(self.simulated_s, 3),
        }

    def inventory(self) -> Dict[str, Any]:
        """The stack's own holdings (baseline and foreign resources left out), in the shape
        older tests read: clusters/nodes/storage/eips/securityGroups/vpcs/subnets lists,
        `billable` (clusters, nodes, EIPs, file systems) and `leaked` (all of them)."""
        mine = {k: [x for x in v if x["owner"] == STACK] for k, v in self.held().items()}
        out = {"clusters": mine["clusters"], "nodes": mine["nodes"],
               "storage": mine["fileSystems"], "eips": mine["eips"],
               "securityGroups": mine["securityGroups"], "vpcs": mine["vpcs"],
               "subnets": mine["subnets"], "rules": mine["rules"],
               "simulatedSeconds": round(self.simulated_s, 3)}
        out["billable"] = sum(len(out[k]) for k in ("clusters", "nodes", "storage", "eips"))
        out["leaked"] = out["billable"] + sum(len(out[k]) for k in
                                              ("securityGroups", "vpcs", "subnets", "rules"))
        return out

    def set_settings(self, values: Dict[str, Any]) -> Dict[str, Any]:
        known = {f.name: f for f in fields(Settings)}
        for k, v in values.items():
            if k not in known:
                raise KeyError(f"unknown setting {k!r} (known: {', '.join(sorted(known))})")
            cur = getattr(self.settings, k)
            if isinstance(cur, bool):
                if not isinstance(v, bool):
                    raise ValueError(f"setting {k} takes true/false, got {v!r}")
            elif isinstance(cur, (int, float)):
                v = type(cur)(v)
            if k in CHOICES and v not in CHOICES[k]:
                raise ValueError(f"setting {k} takes one of {CHOICES[k]}, got {v!r}")
            setattr(self.settings, k, v)
        return asdict(self.settings)
