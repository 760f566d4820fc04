"""`HccCluster`: a CTyun E-HPC cluster's life after its order, as a dynamic resource.

Type token `pulumi-python:dynamic/ctyun:HccCluster`. It takes the order that `HccClusterOrder`
recorded (job, name, VPC, UUID when already known) and:

- `create` waits for the order's job and for the cluster to be listed `available` (progress
  phase `ehpc-order`), checks that the cluster sits behind the security group this stack made
  (CTyun contract 6.5: it stops loudly if E-HPC reports another), then brings the compute
  nodes to `computeNodeCount`. If the job fails, whatever it left is deleted before the error;
  the next `pulumi up` replaces the order. Interrupted, the next `pulumi up` resumes waiting on
  the recorded order: nothing is ordered twice. Once the cluster is listed, the ids of the EIP
  and file system E-HPC ordered with it are recorded (`eipID`, `fileSystemID`, ...:
  billables.py), for the destroy to prove them released;
- `diff` reads the cluster once: one deleted outside Pulumi (the console, the end of its
  billing period) stops `up` and `preview` in one line (cluster_ops.ClusterGone) before
  anything changes; `pulumi refresh` then drops it with its order;
- `read` refreshes status, IPs and nodes (a node removed by hand shows as a count change), and
  records the EIP and file system ids still missing;
- `update` first, when the count changes and a bootstrap follows (`masterProbe`), makes sure
  the master's SSH port answers (reach.py): the steps after need it, so an unreachable master
  stops the resize in one line before any node is ordered or removed; then it expands (<= 50
  per call) or shrinks (<= 10 per call) in place, never re-sending an
  order whose answer was lost (cluster_ops.py); expand orders carry the RAID fields the order
  resolved. With `deferShrink` (what the program sets) it never removes a node that is not in
  state error: the shrink is the `HccShrink` step's, after the host-key pin, which stops this
  stack's service on the leaving nodes and drains them first (shrink_step.py);
- `delete` removes every compute node, deletes the cluster, polls until nothing of it is
  listed and proves its EIP and file system released (else fails naming them: they may be
  billed); a cluster already gone is success once what it was ordered with is released. The
  cluster of an order whose create answer was lost (no job, no UUID in the order's record) is
  left to the order's delete, which runs next and finds it by name inside its VPC: only that
  way can the order tell a cluster deleted from one not listed yet.

Each operation has its own deadline (`createTimeoutS`, `updateTimeoutS`, `deleteTimeoutS`) and
fails saying what it waited for. The provider object holds no client and no credential.
"""

from __future__ import annotations

from typing import Any, Dict, List

import pulumi
from pulumi.dynamic import CreateResult, DiffResult, ReadResult, UpdateResult

from ..dynamic.provider import Deadline, DynamicResource
from . import billables as bill
from . import cluster_inputs as ci
from . import cluster_ops as ops
from . import provider_runtime as rt
from . import reach
from .api import rules
from .api.ehpc import ROLE_MASTER, Cluster, Node
from .api.waits import DeadlineExceeded, JobFailed
from .catalog import Resolved
from .config import MAX_COMPUTE_NODES

log = rt.LOG

INPUT_DEFAULTS: Dict[str, Any] = {
    "regionID": None, "azName": None, "clusterName": None, "vpcID": None, "subnetID": None,
    "orderJobUUID": "", "orderClusterUUID": "", "orderedAt": None, "resolved": None,
    "securityGroupID": "", "computeNodeCount": None, "queueName": "batch",
    **ci.SERVER_DEFAULTS, "subnetType": "common", "storageType": "sfs", "storageName": "",
    "storageUid": "", "eipBandwidthMbps": 100,
    "rootPassword": None, "endpoint": "", "createTimeoutS": 7200,
    "updateTimeoutS": 5400, "deleteTimeoutS": 3600, "lostAnswerWaitS": 900,
    "pollIntervalS": 30, "progressFile": None,
    # the program's: nodes above computeNodeCount are left to the HccShrink step after the
    # host-key pin, which stops the service on them first (shrink_step.py)
    "deferShrink": False,
    # the program's: the SSH way to the master ({"host", "port", "bastion"}; host "" = the
    # master's public IP), probed before the node count changes (reach.py)
    "masterProbe": {},
}
REQUIRED = ("regionID", "azName", "clusterName", "vpcID", "subnetID", "orderedAt",
            "resolved", "computeNodeCount")
#: a new value means another cluster (orderedAt changes when the order is replaced)
REPLACE_KEYS = ("regionID", "azName", "clusterName", "vpcID", "subnetID", "orderedAt",
                "queueName")
#: not diffed: the order's job and UUID hint (the order's identity is orderedAt), the catalog
#: (it follows the order), the password (no API changes it), who shrinks (the program's wiring)
IGNORED_KEYS = ("orderJobUUID", "orderClusterUUID", "resolved", "rootPassword", "deferShrink",
                "masterProbe")
OUTPUT_KEYS = ("clusterUUID", "masterInnerIP", "masterPublicIP", "nodes", "clusterStatus",
               "clusterSecurityGroupID") + bill.Billables.KEYS


def check_inputs(news: Dict[str, Any]) -> list:
    f = ci.Failures(news)
    f.required(*REQUIRED)
    f.rule("clusterName", rules.cluster_name_problem)
    f.rule("queueName", rules.queue_name_problem)
    f.int_range("computeNodeCount", 1, MAX_COMPUTE_NODES)
    ci.check_server_fields(f)
    ci.check_deadlines(f)
    return f.items


def _ctx(provider: rt.CtyunProvider, p: Dict[str, Any]) -> ops.Ctx:
    return ops.Ctx(rt.ehpc(p), p["azName"], rt.waiter(p), provider.progress(p),
                   float(p["lostAnswerWaitS"]))


def _template(p: Dict[str, Any]) -> ops.ExpandTemplate:
    r = Resolved.from_dict(p["resolved"])
    return ops.ExpandTemplate(r, ci.server_order(p, r.compute_spec_uuid, r.compute_spec_type,
                                                 r.raid("compute")),
                              p["queueName"], ci.billing(p), p["subnetType"])


def _billables(ctx: ops.Ctx, p: Dict[str, Any], c: Cluster, deadline: float,
               recorded: bill.Billables = bill.Billables()) -> Dict[str, str]:
    """The record of the cluster's EIP and file system, its blanks looked up now (a failed
    look-up is no error: the destroy looks for them by address and name)."""
    o = ci.ordered(p)
    if (recorded.eip_id or not o.eip) and (recorded.fs_id or not o.fs_kind):
        return recorded.to_dict()
    return ops.billables_of(ctx, c, o, recorded, deadline).to_dict()


def node_view(n: Node) -> Dict[str, Any]:
    return {"name": n.name, "innerIP": n.inner_ip or "",
            "role": "master" if n.role == ROLE_MASTER else "compute", "nodeUUID": n.uuid}


def outputs(p: Dict[str, Any], c: Cluster, nodes: List[Node]) -> Dict[str, Any]:
    live = [n for n in nodes if not n.leaving]
    masters = [n for n in live if n.role == ROLE_MASTER]
    out = dict(p)
    out.update({
        "clusterUUID": c.uuid, "clusterStatus": c.status,
        "masterInnerIP": c.inner_ip or (masters[0].inner_ip if masters else "") or "",
        "masterPublicIP": c.public_ip or (masters[0].public_ip if masters else "") or "",
        "clusterSecurityGroupID": c.security_group_id or "",
        "nodes": sorted((node_view(n) for n in live),
                        key=lambda v: (v["role"] != "master", v["name"])),
        "computeNodeCount": len([n for n in live if n.role != ROLE_MASTER]),
    })
    return out


def settled(p: Dict[str, Any], out: Dict[str, Any]) -> Dict[str, Any]:
    """With `deferShrink`, the count this resource settled on is the wanted one: the nodes above
    it are the HccShrink step's to remove (`nodes` still lists them, the truth). Recording the
    live count instead would make every later `pulumi up` see a count change here (state 4,
    input 3) until a refresh, and show the whole chain after it as changing in the preview."""
    if p.get("deferShrink"):
        out["computeNodeCount"] = min(int(out["computeNodeCount"]), int(p["computeNodeCount"]))
    return out


def unconfirmed_message(p: Dict[str, Any], e: DeadlineExceeded) -> str:
    """What to do when an order whose answer was lost never showed its cluster: never "order
    again" (a second order may bill a second cluster), but the two explicit ways out."""
    name, vpc = p["clusterName"], p["vpcID"]
    return (f"create-cluster of {name} lost its answer ({p['orderedAt']}) and was not sent again, "
            "nor will it be on its own (a second order could bill a second cluster): no cluster "
            f"named {name} is listed in VPC {vpc} within ctyun:createTimeoutS (last seen: "
            f"{e.last_seen}). Check hpc/list-clusters or CTyun's console for {name}: if it is "
            "(or later gets) listed, `pulumi up` again waits for it (raise ctyun:createTimeoutS "
            "if E-HPC is slow to list it), or adopt it by UUID with `pulumi config set "
            "ctyun:adoptClusterUuid <cl-...>` and `pulumi up`; only if you are sure no cluster "
            "and no order exists (console: clusters, bare-metal servers, orders), remove the "
            f"record deliberately with `pulumi state delete '<URN of the HccClusterOrder of "
            f"{name}>'` (`pulumi stack --show-urns`), then `pulumi up` orders once")


class HccClusterProvider(rt.CtyunProvider):
    """The life of one ordered E-HPC cluster. Stateless: everything comes from props."""

    INPUTS = INPUT_DEFAULTS
    OUTPUTS = OUTPUT_KEYS
    SECRET_OUTPUTS = ("rootPassword",)
    IGNORED_KEYS = IGNORED_KEYS
    REPLACE_KEYS = REPLACE_KEYS
    RENAMED = ci.RENAMED
    STABLES = ("clusterUUID",)
    TIMEOUT_INPUTS = {"create": "createTimeoutS", "read": "updateTimeoutS",
                      "update": "updateTimeoutS", "delete": "deleteTimeoutS"}

    def check_inputs(self, news):
        return check_inputs(news)

    def create(self, props: Dict[str, Any]) -> CreateResult:
        p = self.inputs(props)
        ctx = _ctx(self, p)
        deadline = self.deadline(p, "create").at
        name = p["clusterName"]
        try:
            cluster = ops.wait_ready(ctx, name, p["vpcID"], p["orderClusterUUID"],
                                     p["orderJobUUID"], deadline, "ctyun:createTimeoutS")
        except JobFailed as e:
            self._clean_failed(ctx, p, self.deadline(p, "delete").at)
            raise JobFailed(f"creation of cluster {name} (what the job left was deleted; the "
                            "next `pulumi up` orders again)", e.job_uuid, e.status) from None
        except DeadlineExceeded as e:
            if p["orderJobUUID"] or p["orderClusterUUID"]:
                raise
            raise ops.ClusterProblem(unconfirmed_message(p, e)) from None
        self._check_group(p, cluster)
        want = int(p["computeNodeCount"])
        calls, nodes = ops.resize(ctx, cluster, want, _template(p), deadline,
                                  "ctyun:createTimeoutS", lambda: ops.queue_uuid_of(
                                      ctx, cluster.uuid, p["queueName"], deadline),
                                  shrink=not p["deferShrink"])
        if calls:
            cluster = ctx.ehpc.get_cluster(cluster.uuid, deadline) or cluster
        return CreateResult(cluster.uuid, {**settled(p, outputs(p, cluster, nodes)),
                                           **_billables(ctx, p, cluster, deadline)})

    @staticmethod
    def _clean_failed(ctx: ops.Ctx, p: Dict[str, Any], deadline: float) -> None:
        c = ops.find_own(ctx, p["clusterName"], p["vpcID"], p["orderClusterUUID"], deadline)
        if c is not None:
            log.info("the order of %s failed; deleting what it left", p["clusterName"])
            ops.teardown(ctx, c.uuid, deadline, "ctyun:deleteTimeoutS", ci.ordered(p),
                         name=p["clusterName"])

    @staticmethod
    def _check_group(p: Dict[str, Any], c: Cluster) -> None:
        """CTyun contract 6.5: the code assumes E-HPC uses the existing group named in
        create-cluster. If it reports another, kimi-k3's rules are not in front of the
        cluster: say so loudly rather than bootstrap behind an unknown group."""
        expected = p["securityGroupID"]
        if expected and c.security_group_id and c.security_group_id != expected:
            raise ops.ClusterProblem(
                f"E-HPC put cluster {c.name} behind security group {c.security_group_id}, not "
                f"{expected} (the group this stack created with only the SSH and endpoint "
                "rules; hpc/list-clusters securityGroupID). kimi-k3's exposure rules do not "
                "protect it: see docs/ctyun-hcc.md, open question 5, then `pulumi destroy`")

    def diff(self, id_: str, olds: Dict[str, Any], news: Dict[str, Any]) -> DiffResult:
        """The base's, plus one read: a cluster deleted outside Pulumi (console, end of its
        billing period) stops `pulumi up` and `preview` in one line before anything changes,
        instead of an update that fails half-way or a plain `up` that reports nothing while
        every later step talks to a master that is gone (ClusterGone). Trouble asking (no
        credentials, network) concludes nothing: diff must not block a preview."""
        base = super().diff(id_, olds, news)
        if base.replaces or not id_:
            return base
        p = self.inputs(olds)
        try:
            gone = rt.ehpc(p).get_cluster(id_, Deadline.after(60, "diff").at) is None
        except Exception as e:  # noqa: BLE001 - see the docstring
            log.info("could not ask whether cluster %s is still listed (%s)", id_,
                     type(e).__name__)
            gone = False
        if gone:
            raise ops.ClusterGone(ops.gone_message(p["clusterName"], id_))
        return base

    def read(self, id_: str, props: Dict[str, Any]) -> ReadResult:
        p = self.inputs(props)
        ctx = _ctx(self, p)
        deadline = self.deadline(p, "read").at
        cluster = ctx.ehpc.get_cluster(id_, deadline)
        if cluster is None:
            return ReadResult(None, {})
        nodes = ctx.ehpc.list_nodes(p["azName"], id_, deadline)
        # no `inputs` in the answer: they would carry the root password outside the outputs
        # that additional_secret_outputs protects
        held = _billables(ctx, p, cluster, deadline, bill.Billables.from_dict(props))
        return ReadResult(id_, {**outputs(p, cluster, nodes), **held})

    def update(self, id_: str, olds: Dict[str, Any], news: Dict[str, Any]) -> UpdateResult:
        p = self.inputs(news)
        p["rootPassword"] = olds.get("rootPassword", p["rootPassword"])
        had, want = int(olds.get("computeNodeCount") or 0), int(p["computeNodeCount"])
        if had != want:  # the steps after need the master: stop before any node is ordered
            reach.check_master(p["masterProbe"] or {}, olds.get("masterPublicIP") or "",
                               f"changing cluster {p['clusterName']} from {had} to {want} "
                               "compute nodes")
        ctx = _ctx(self, p)
        deadline = self.deadline(p, "update").at
        cluster = ops.wait_not_busy(ctx, id_, deadline, "ctyun:updateTimeoutS",
                                    "before changing its nodes")
        if cluster is None:
            raise ops.ClusterGone(ops.gone_message(p["clusterName"], id_))
        calls, nodes = ops.resize(ctx, cluster, int(p["computeNodeCount"]), _template(p),
                                  deadline, "ctyun:updateTimeoutS",
                                  lambda: ops.queue_uuid_of(ctx, id_, p["queueName"], deadline),
                                  shrink=not p["deferShrink"])
        if calls:
            cluster = ctx.ehpc.get_cluster(id_, deadline) or cluster
        held = _billables(ctx, p, cluster, deadline, bill.Billables.from_dict(olds))
        return UpdateResult({**settled(p, outputs(p, cluster, nodes)), **held})

    def delete(self, id_: str, props: Dict[str, Any]) -> None:
        p = self.inputs(props)
        if not (p["orderJobUUID"] or p["orderClusterUUID"]):
            # the order lost its answer and never learnt this cluster's UUID: its own delete,
            # which runs next, removes the cluster (found by name inside its VPC, where this
            # resource found it). Removed here, the order could not tell "deleted" from "not
            # listed yet", and would wait its whole window to fail (cluster_ops.await_ordered)
            log.info("cluster %s (%s): removed by the delete of its order, which lost its "
                     "create answer", p["clusterName"], id_)
            return
        ops.teardown(_ctx(self, p), id_, self.deadline(p, "delete").at, "ctyun:deleteTimeoutS",
                     ci.ordered(p), bill.Billables.from_dict(props), name=p["clusterName"])


class HccCluster(DynamicResource, module="ctyun", name="HccCluster"):
    """One ordered E-HPC cluster. Inputs use CTyun's API names; see the module docstring."""

    clusterUUID: pulumi.Output[str]
    masterInnerIP: pulumi.Output[str]
    masterPublicIP: pulumi.Output[str]
    nodes: pulumi.Output[list]
    clusterStatus: pulumi.Output[str]
    clusterSecurityGroupID: pulumi.Output[str]
    rootPassword: pulumi.Output[str]
    computeNodeCount: pulumi.Output[int]

    def __init__(self, resource_name: str, inputs: Dict[str, Any], opts=None):
        super().__init__(HccClusterProvider(), resource_name, inputs, opts)
