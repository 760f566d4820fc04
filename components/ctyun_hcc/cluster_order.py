"""`HccClusterOrder`: the accepted E-HPC create order, kept in state before the long wait.

Type token `pulumi-python:dynamic/ctyun:HccClusterOrder`. Why a resource of its own: a Python
dynamic provider cannot return partial state from a failed create, and the E-HPC create job runs
for a long time. So this resource only orders and returns: as soon as `hpc/create-cluster`
accepts, its job, order ids, name and time are in the stack's state, and `HccCluster` (the next
resource) does the waiting. An interrupted `pulumi up` therefore resumes by what this stack
recorded, never by a name match, and never orders twice.

`create`, in order, all before anything is billed:
1. check the inputs (`check` already refused bad ones) and resolve the catalog (catalog.py);
2. list the region's clusters: a cluster with the same name is
   - the one `ctyun:adoptClusterUuid` names: adopted explicitly (no order);
   - in a VPC this stack created (`ownedVpc`): this stack's, ordered by an interrupted run
     (no order, resumed);
   - anything else: a clear error ("exists and is not this stack's: ...");
3. `create-delegate` (the service delegation E-HPC orders through);
4. `hpc/create-cluster`, sent once (no idempotency token is documented). Accepted: the job and
   order ids go into state at once; the cluster's UUID too when the listing right after shows it
   (a failed listing leaves it "", HccCluster finds the cluster later by name in the VPC).
   Its answer lost (timeout, reset, HTTP 5xx after sending): the order is recorded all the same,
   as `origin: answer-lost-unconfirmed` with name, VPC and time (or `ordered-answer-lost` with
   the UUID when the listing right after shows it: the listing before had no such cluster, so
   it is this order's). `HccCluster` then looks for it by name inside that VPC for the whole
   `createTimeoutS`, on this and every later `pulumi up`; create-cluster is never sent again on
   its own (CTyun contract 6.4: whether a cluster is listed before its job ends is not documented).
   The way out is explicit: `ctyun:adoptClusterUuid` (checked against name and VPC, `update`),
   or removing the record on purpose (`pulumi state delete <URN of this order>`).
The RAID fields of the bare-metal orders are chosen while resolving (raid.py: looked up with
the bare-metal APIs, kept in `resolved` for the expand orders); a refusal over them or over the
subnet is explained naming the config key that changes it.

`delete` removes the cluster this order made if it is still listed (a run interrupted before
`HccCluster` existed), identified by the recorded UUID or by name inside the recorded VPC, and
proves the EIP and file system it was ordered with released (cluster_ops.teardown). An order
whose cluster is not listed is never dropped while it may still appear: with its job known,
the job is awaited and the cluster looked for once; with its answer lost, the cluster is looked
for until `createTimeoutS` after the order, then the destroy fails naming it
(cluster_ops.await_ordered): a billed cluster unknown to the stack is worse than a failed
destroy.
`diff` replaces the order when its inputs change, and when E-HPC reports its job failed (the
next `pulumi up` then orders anew; what the failed job left was removed by HccCluster); a new
`adoptClusterUuid` on an order without a cluster UUID is an in-place `update` (adoption).
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Dict, List, Optional

import pulumi
from pulumi.dynamic import CreateResult, DiffResult, ReadResult, UpdateResult

from ..dynamic.provider import Deadline, DynamicResource
from . import cluster_inputs as ci
from . import cluster_ops as ops
from . import provider_runtime as rt
from .api import rules
from .api.ehpc import (JOB_FAILED, ComputeOrder, CreateClusterRequest, ExistingStorage,
                       MasterNode, OceanFsOrder, SfsOrder)
from .api.errors import ApiError, CtyunError, TransportError
from .catalog import Choice, Resolved, resolve
from .raid import explain_refusal

log = rt.LOG

INPUT_DEFAULTS: Dict[str, Any] = {
    "regionID": None, "azName": None, "clusterName": None, "clusterType": "",
    "vpcID": None, "subnetID": None, "securityGroupName": "", "ownedVpc": False,
    "storageType": "sfs", "storageSizeGB": 500, "storageName": "", "sfsType": "performance",
    "storageUid": "", "specification": "", "masterSpecification": "", "image": "",
    "masterImage": "", "queueName": "batch", "computeNodeCount": None,
    "eipBandwidthMbps": 100, **ci.SERVER_DEFAULTS, "subnetType": "common", "rootPassword": None,
    "adoptClusterUuid": "", "endpoint": "", "timeoutS": 7200, "deleteTimeoutS": 3600,
    "lostAnswerWaitS": 900, "pollIntervalS": 30, "progressFile": None,
}
REQUIRED = ("regionID", "azName", "clusterName", "vpcID", "subnetID", "computeNodeCount",
            "rootPassword")
#: not diffed: the initial count (HccCluster resizes), the password (no API changes it), the
#: adoption key (it only matters before the order exists)
IGNORED_KEYS = ("computeNodeCount", "rootPassword", "adoptClusterUuid")
OUTPUT_KEYS = ("jobUUID", "masterOrderID", "masterOrderNO", "clusterUUID", "orderedAt",
               "origin", "resolved")
SETTING = "ctyun:createTimeoutS"
#: the create answer was lost and no listing has shown the cluster yet (HccCluster looks for it)
UNCONFIRMED = "answer-lost-unconfirmed"


class NotOurs(CtyunError):
    """A cluster of this name exists and this stack cannot prove it created it."""


def check_inputs(news: Dict[str, Any]) -> list:
    f = ci.Failures(news)
    f.required(*REQUIRED)
    f.rule("clusterName", rules.cluster_name_problem)
    f.rule("queueName", rules.queue_name_problem)
    f.rule("securityGroupName", rules.ehpc_security_group_name_problem, optional=True)
    f.rule("storageName", rules.fs_name_problem, optional=True)
    f.rule("rootPassword", rules.root_password_problem)
    f.int_range("computeNodeCount", *rules.CREATE_ORDER_COUNT)
    f.choice("storageType", ("sfs", "oceanfs"))
    bounds = rules.OCEANFS_GB if f.value("storageType") == "oceanfs" else rules.SFS_GB
    if not f.value("storageUid"):
        f.int_range("storageSizeGB", *bounds)
    f.choice("sfsType", rules.SFS_TYPES)
    f.int_range("eipBandwidthMbps", *rules.EIP_MBPS, allow_zero=True)
    f.boolean("ownedVpc")
    ci.check_server_fields(f)
    ci.check_deadlines(f)
    return f.items


def choice_of(p: Dict[str, Any]) -> Choice:
    return Choice(p["clusterType"], p["specification"], p["masterSpecification"], p["image"],
                  p["masterImage"], p["storageType"])


def create_request(p: Dict[str, Any], r: Resolved) -> CreateClusterRequest:
    """The create-cluster request: documented fields only (api/ehpc.py checks the rules)."""
    name = p["clusterName"]
    if p["storageUid"]:
        storage = ExistingStorage(p["storageUid"], 1 if p["storageType"] == "oceanfs" else 0)
    elif p["storageType"] == "oceanfs":
        storage = OceanFsOrder(p["subnetID"], p["storageName"] or f"{name}-fs",
                               int(p["storageSizeGB"]))
    else:
        storage = SfsOrder(p["storageName"] or f"{name}-fs", int(p["storageSizeGB"]),
                           p["sfsType"])
    master = MasterNode(r.master_role_uuid, r.master_image_uuid,
                        ci.server_order(p, r.master_spec_uuid, r.master_spec_type,
                                        r.raid("master")),
                        str(p["rootPassword"]), int(p["eipBandwidthMbps"] or 0))
    compute = ComputeOrder(r.compute_image_uuid,
                           ci.server_order(p, r.compute_spec_uuid, r.compute_spec_type,
                                           r.raid("compute")),
                           int(p["computeNodeCount"]), queue_name=p["queueName"])
    return CreateClusterRequest(p["regionID"], p["azName"], name, r.cluster_type_uuid,
                                p["vpcID"], storage, master, r.compute_role_uuid, compute,
                                ci.billing(p), p["securityGroupName"] or "")


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class HccClusterOrderProvider(rt.CtyunProvider):
    """Orders one E-HPC cluster (or adopts one this stack can prove is its own)."""

    INPUTS = INPUT_DEFAULTS
    OUTPUTS = OUTPUT_KEYS
    SECRET_OUTPUTS = ("rootPassword",)
    IGNORED_KEYS = IGNORED_KEYS
    REPLACE_ALL = True
    RENAMED = ci.RENAMED
    TIMEOUT_INPUTS = {"delete": "deleteTimeoutS"}

    def check_inputs(self, news):
        return check_inputs(news)

    def diff(self, id_: str, olds: Dict[str, Any], news: Dict[str, Any]) -> DiffResult:
        n = self.inputs(news)
        changed = self.changed(self.inputs(olds), n)
        job = olds.get("jobUUID")
        if not changed and job and self._job_failed(n, job):
            changed = ["jobUUID"]
        if not changed and self._adopting(olds, n):
            return DiffResult(changes=True, replaces=[], delete_before_replace=True)
        return DiffResult(changes=bool(changed), replaces=changed, delete_before_replace=True)

    @staticmethod
    def _adopting(old: Dict[str, Any], n: Dict[str, Any]) -> bool:
        """A new ctyun:adoptClusterUuid for an order whose cluster was never identified (a
        lost answer, a failed listing): adopted in place, never by a new order."""
        adopt = n.get("adoptClusterUuid") or ""
        return bool(rt.known(adopt) and adopt and not old.get("clusterUUID")
                    and adopt != (old.get("adoptClusterUuid") or ""))

    def update(self, id_: str, olds: Dict[str, Any], news: Dict[str, Any]) -> UpdateResult:
        """Adopt `adoptClusterUuid` for an order that never saw its cluster: only a listed
        cluster of this order's name inside this order's VPC."""
        old, p = olds, self.inputs(news)
        adopt, name = p["adoptClusterUuid"], p["clusterName"]
        cluster = rt.ehpc(p).get_cluster(adopt, Deadline.after(120, "adoption").at)
        if cluster is None or cluster.name != name or cluster.vpc_id != p["vpcID"]:
            seen = "is not listed" if cluster is None else \
                f"is {cluster.name} in VPC {cluster.vpc_id}"
            raise NotOurs(f"ctyun:adoptClusterUuid={adopt!r} {seen}: this order is for {name} in "
                          f"VPC {p['vpcID']}; set the UUID of that cluster "
                          "(hpc/list-clusters), or unset the key")
        log.info("order of %s: adopting %s (ctyun:adoptClusterUuid)", name, adopt)
        return UpdateResult({**old, **p, "clusterUUID": cluster.uuid, "origin": "adopted"})

    @staticmethod
    def _job_failed(p: Dict[str, Any], job: str) -> bool:
        """Did E-HPC report this order's job failed? (then the next up orders anew). Any
        trouble asking counts as no: diff must not block a preview."""
        try:
            return rt.ehpc(p).job_status(job, Deadline.after(30, "diff").at) in JOB_FAILED
        except Exception:  # noqa: BLE001 - no credentials, network, undocumented answer
            return False

    def create(self, props: Dict[str, Any]) -> CreateResult:
        p = self.inputs(props)
        ehpc = rt.ehpc(p)
        deadline = self.deadline(p, "create").at
        ctx = ops.Ctx(ehpc, p["azName"], rt.waiter(p), self.progress(p),
                      float(p["lostAnswerWaitS"]))
        resolved = resolve(ehpc, p["azName"], choice_of(p), deadline, ci.raid_choice(p))
        request = create_request(p, resolved)
        request.body()  # every documented rule checked before anything is called
        name = p["clusterName"]
        same = ops.same_named(ctx, name, deadline)
        kept = self._proven(p, same)
        if kept is not None:
            return self._result(p, resolved, kept[0], "", None, kept[1])
        if same:
            raise NotOurs(
                f"cluster {name} exists ({', '.join(c.uuid for c in same)}) and is not this "
                f"stack's: choose another ctyun:clusterName, or adopt it explicitly with "
                f"`pulumi config set ctyun:adoptClusterUuid {same[0].uuid}` if it is the "
                "cluster an interrupted `pulumi up` of this stack ordered")
        if p["adoptClusterUuid"]:
            raise NotOurs(f"ctyun:adoptClusterUuid={p['adoptClusterUuid']!r}: no cluster named "
                          f"{name} with that UUID is listed; unset it to order a new cluster")
        self._delegate(ehpc, deadline)
        try:
            order = ehpc.create_cluster(request, deadline)
        except ApiError as e:
            why = explain_refusal(e, {"master": resolved.raid("master"),
                                      "compute": resolved.raid("compute")}, p["subnetType"])
            if why:
                raise ops.ClusterProblem(f"create-cluster of {name}: {why}") from None
            raise
        except TransportError as e:
            if not e.may_have_run:
                raise
            # recorded as ordered all the same: HccCluster looks for it, nothing re-orders it
            log.info("create-cluster: %s; not re-sent: the order is recorded and HccCluster "
                     "looks for %s in VPC %s", e.detail, name, p["vpcID"])
            uuid = self._listed(ctx, p, deadline)
            return self._result(p, resolved, uuid, "", None,
                                "ordered-answer-lost" if uuid else UNCONFIRMED)
        return self._result(p, resolved, self._listed(ctx, p, deadline), order.job_uuid, order,
                            "ordered")

    @staticmethod
    def _proven(p: Dict[str, Any], same: List[Any]) -> Optional[tuple]:
        """(uuid, origin) of a listed same-named cluster this stack can prove is its own."""
        adopt = p["adoptClusterUuid"]
        if adopt:
            hit = [c for c in same if c.uuid == adopt]
            return (hit[0].uuid, "adopted") if hit else None
        if p["ownedVpc"]:
            mine = [c for c in same if c.vpc_id == p["vpcID"]]
            if len(mine) == 1 and len(same) == 1:
                log.info("cluster %s is in this stack's own VPC %s: an interrupted run ordered "
                         "it; resuming without a second order", p["clusterName"], p["vpcID"])
                return mine[0].uuid, "resumed-own-vpc"
        return None

    @staticmethod
    def _delegate(ehpc, deadline) -> None:
        """create-delegate before the first order (CTyun contract 2.1). Whether a second call is
        refused is undocumented: a refusal that says the delegation exists is fine; any other
        stops here, before anything is ordered."""
        try:
            ehpc.create_delegate(deadline)
        except TransportError as e:
            log.info("create-delegate: %s; going on (the order is refused if the delegation "
                     "is missing)", e.detail)
        except ApiError as e:
            text = f"{e.code} {e.message}".lower()
            if "exist" in text or "已存在" in text or "already" in text:
                return
            raise CtyunError(f"create-delegate (the E-HPC service delegation, needed before a "
                             f"cluster is created) was refused: {e.code}: {e.message}; check "
                             "the account's E-HPC authorisation in CTyun's console") from None

    @staticmethod
    def _listed(ctx: ops.Ctx, p: Dict[str, Any], deadline: float) -> str:
        """The UUID of the one cluster of this name in this VPC right after the order, or ""
        (not listed yet, several, or the listing failed: the order must reach the state
        anyway, and HccCluster finds the cluster by name in the VPC later)."""
        try:
            mine = [c for c in ops.same_named(ctx, p["clusterName"], deadline)
                    if c.vpc_id == p["vpcID"]]
        except CtyunError as e:
            log.info("list-clusters after the order of %s failed (%s); the order is recorded "
                     "without the cluster's UUID", p["clusterName"], e)
            return ""
        return mine[0].uuid if len(mine) == 1 else ""

    @staticmethod
    def _result(p, resolved: Resolved, uuid: str, job: str, order, origin: str) -> CreateResult:
        outs = {**p, "jobUUID": job, "clusterUUID": uuid, "orderedAt": _now(),
                "masterOrderID": getattr(order, "master_order_id", None) or "",
                "masterOrderNO": getattr(order, "master_order_no", None) or "",
                "origin": origin, "resolved": resolved.to_dict()}
        return CreateResult(f"{p['regionID']}/{p['clusterName']}", outs)

    def read(self, id_: str, props: Dict[str, Any]) -> ReadResult:
        """A record of what was ordered, kept as it is, except when its cluster is proven gone
        (deleted in the console, released at the end of its billing period): the UUID it was
        listed under is listed no more (listed once under it, a cluster is not "not listed yet";
        its job is not asked: E-HPC need not remember a job of months ago). Then `pulumi
        refresh` drops the order with its cluster, and the next `pulumi up` orders anew instead
        of waiting `createTimeoutS` for a cluster that will never come back. An order that
        never saw its cluster (a lost answer) is kept: it may still appear (issue 19 item 8).
        Trouble asking keeps the record."""
        uuid = props.get("clusterUUID") or ""
        if not uuid:
            return ReadResult(id_, props)
        p = self.inputs(props)
        try:
            gone = rt.ehpc(p).get_cluster(uuid, Deadline.after(120, "refresh").at) is None
        except Exception as e:  # noqa: BLE001 - see the docstring
            log.warning("order of %s: could not ask whether cluster %s is still listed (%s); "
                        "the record is kept", props.get("clusterName"), uuid, type(e).__name__)
            return ReadResult(id_, props)
        if gone:
            log.warning("order of %s: its cluster %s is no longer listed (deleted outside "
                        "Pulumi, or released when its billing period ended): the order leaves "
                        "the state with it; the next `pulumi up` orders a new cluster",
                        props.get("clusterName"), uuid)
            return ReadResult(None, {})
        return ReadResult(id_, props)

    def delete(self, id_: str, props: Dict[str, Any]) -> None:
        """Remove the cluster of this order if it is still listed (HccCluster normally removed
        it already): by recorded UUID, else by name inside the recorded VPC, waiting for it
        while it may still appear (module docstring); never returns having dropped an order
        whose cluster may still be billed."""
        p = {**self.inputs(props), **props}
        if p.get("origin") == "adopted" and not p.get("clusterUUID"):
            return
        ehpc = rt.ehpc(p)
        deadline = self.deadline(p, "delete").at
        ctx = ops.Ctx(ehpc, p["azName"], rt.waiter(p), self.progress(p),
                      float(p["lostAnswerWaitS"]))
        name, uuid = p["clusterName"], p.get("clusterUUID") or ""
        if uuid:
            cluster = ctx.ehpc.get_cluster(uuid, deadline)
        else:
            cluster = ops.await_ordered(ctx, name, p["vpcID"], p.get("jobUUID") or "",
                                        p.get("orderedAt") or "", float(p["timeoutS"]),
                                        deadline, "ctyun:deleteTimeoutS")
        if cluster is not None:
            ops.teardown(ctx, cluster.uuid, deadline, "ctyun:deleteTimeoutS", ci.ordered(p),
                         name=name)


class HccClusterOrder(DynamicResource, module="ctyun", name="HccClusterOrder"):
    """The create order of one E-HPC cluster (see the module docstring)."""

    jobUUID: pulumi.Output[str]
    clusterUUID: pulumi.Output[str]
    orderedAt: pulumi.Output[str]
    origin: pulumi.Output[str]
    resolved: pulumi.Output[dict]

    def __init__(self, resource_name: str, inputs: Dict[str, Any], opts=None):
        super().__init__(HccClusterOrderProvider(), resource_name, inputs, opts)
