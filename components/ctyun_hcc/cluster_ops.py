"""The E-HPC cluster lifecycle steps the providers are built from: wait, find, resize, delete.

Each step is one thing a person would do in CTyun's console, made safe to repeat with what the
documentation settles (CTyun contract 2.7-2.13):

- no E-HPC order carries an idempotency token, so an expand or shrink whose answer was lost is
  never re-sent: the step watches the node listing until it proves the order was taken (new
  nodes appear / the chosen nodes leave), or fails saying so; the next run re-counts first;
- expand orders at most 50 nodes per call, shrink removes at most 10, each call's job awaited;
- teardown removes every compute node, calls delete-cluster (whose effect on ordered servers is
  undocumented), then polls until neither the cluster nor its nodes are listed, and proves the
  EIP and file system E-HPC ordered with it released, or fails naming them (billables.py);
- every wait has a deadline and records progress (components/progress/record.py).
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Callable, List, Optional, Sequence, TypeVar

from ..progress.record import ProgressLog
from . import billables as bill
from .api import rules
from .api.ehpc import (JOB_PENDING, Billing, Cluster, ComputeOrder, Ehpc, ExpandClusterRequest,
                       Node, ROLE_COMPUTE, ServerOrder)
from .api.errors import ApiError, CtyunError, TransportError
from .api.waits import JobFailed, Waiter
from .catalog import Resolved
from .raid import explain_refusal

log = logging.getLogger("kimi_k3.ctyun")

#: a refusal that means "not now" (documented: Openapi.Order.Inprogress, CTyun contract 1.4; a busy
#: cluster's code is not documented): the order was refused, not run, so sending it again later
#: is safe
NOT_NOW = re.compile(r"in.?progress|busy|processing|正在|进行中", re.I)


T = TypeVar("T")


class ClusterProblem(CtyunError):
    """E-HPC shows something the lifecycle cannot go on from (named in the message)."""


class ClusterGone(ClusterProblem):
    """A cluster this stack saw listed is listed no more: deleted outside Pulumi (CTyun's
    console) or released when its subscription's billing period ended. Nothing is ordered in
    its place and nothing else is adopted without the operator's word (issue 19, day two)."""


def gone_message(name: str, uuid: str) -> str:
    """One line: what is gone, why it may be, that nothing was changed, the two ways on."""
    return (f"cluster {name} ({uuid}) is no longer listed by E-HPC (hpc/list-clusters): it was "
            "deleted outside Pulumi (CTyun console) or released when its billing period ended. "
            "Nothing was changed or ordered. `pulumi refresh` drops it and its order from the "
            "state (nothing else is adopted); then `pulumi up` orders a new cluster, or "
            "`pulumi destroy` removes what is left (network, security group)")


@dataclass
class Ctx:
    """What one provider operation works with (built per call, never pickled)."""

    ehpc: Ehpc
    az_name: str
    waiter: Waiter
    progress: ProgressLog
    #: after an order's answer is lost, how long the listing may take to prove it was taken
    #: (CTyun contract 6.4: when E-HPC lists what an order makes is not documented)
    lost_wait_s: float = 900.0

    def lost_deadline(self, deadline: float) -> float:
        return min(deadline, self.waiter.clock() + self.lost_wait_s)

    def phase(self, name: str, waiting_for: str, deadline: float, expected_s=None,
              assumption: str = ""):
        return self.progress.phase(name, waiting_for, expected_s, assumption,
                                   deadline_s=max(0.0, deadline - self.waiter.clock()))


@dataclass(frozen=True)
class ExpandTemplate:
    """How new compute nodes are ordered (from the resolved catalog and the config)."""

    resolved: Resolved
    server: ServerOrder
    queue_name: str
    billing: Billing
    #: ctyun:subnetType, to explain a refusal over the subnet (raid.explain_refusal)
    subnet_type: str = ""


def compute_nodes(ctx: Ctx, cluster_uuid: str, deadline: float) -> List[Node]:
    """Compute nodes (nodeRole 1) that are not on their way out."""
    return [n for n in ctx.ehpc.list_nodes(ctx.az_name, cluster_uuid, deadline)
            if n.role == ROLE_COMPUTE and not n.leaving]


def same_named(ctx: Ctx, name: str, deadline: float) -> List[Cluster]:
    """Every cluster of the region with exactly this name (list-clusters has no name filter)."""
    return [c for c in ctx.ehpc.list_clusters(deadline=deadline) if c.name == name]


def find_own(ctx: Ctx, name: str, vpc_id: str, cluster_uuid: str,
             deadline: float) -> Optional[Cluster]:
    """The cluster an order of this stack made: by its recorded UUID, else the one cluster of
    that name in that VPC (the name was free when the order was placed). Several: an error."""
    if cluster_uuid:
        return ctx.ehpc.get_cluster(cluster_uuid, deadline)
    found = [c for c in same_named(ctx, name, deadline) if c.vpc_id == vpc_id]
    if len(found) > 1:
        raise ClusterProblem(f"{len(found)} clusters named {name} are listed in VPC {vpc_id} "
                             f"({', '.join(c.uuid for c in found)}); this stack ordered one and "
                             "cannot tell which: set ctyun:adoptClusterUuid to it")
    return found[0] if found else None


def window_left_s(ordered_at: str, window_s: float, now: Optional[datetime] = None) -> float:
    """Seconds left of the `window_s` that began at `ordered_at` (`%Y-%m-%dT%H:%M:%SZ`, UTC; an
    unreadable time counts as now: the whole window is left)."""
    now = now or datetime.now(timezone.utc)
    try:
        start = datetime.strptime(ordered_at, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
    except (TypeError, ValueError):
        start = now
    return max(0.0, (start - now).total_seconds() + float(window_s))


class LostOrder(ClusterProblem):
    """An order whose answer was lost shows no cluster within its window: kept, never dropped."""


def lost_order_message(name: str, vpc_id: str, ordered_at: str, window_s: float,
                       last_seen: str) -> str:
    return (f"create-cluster of {name} lost its answer ({ordered_at}) and no cluster of that "
            f"name is listed in VPC {vpc_id} ({window_s:.0f} s after the order, "
            f"ctyun:createTimeoutS; last seen: {last_seen}). Its record is kept, not dropped: "
            "E-HPC may still list (and bill) that cluster. If CTyun's console or "
            f"hpc/list-clusters shows {name}, run `pulumi destroy` again (it deletes it), or adopt "
            "it with `pulumi config set ctyun:adoptClusterUuid <cl-...>`; only if you are sure "
            "no such cluster and no order exists (console: clusters, bare-metal servers, "
            "orders), remove the record deliberately: `pulumi state delete '<URN of the "
            f"HccClusterOrder of {name}>'` (`pulumi stack --show-urns`), then `pulumi destroy`")


def await_ordered(ctx: Ctx, name: str, vpc_id: str, job_uuid: str, ordered_at: str,
                  window_s: float, deadline: float, setting: str) -> Optional[Cluster]:
    """The cluster an order of this stack made, before it is deleted: by name inside the
    order's VPC (find_own).

    - its job known: wait for the job to end, then look once (a job that ended with nothing
      listed left nothing: HccCluster or E-HPC removed it);
    - its answer lost (no job): look until `window_s` after `ordered_at` (CTyun contract 6.4:
      a cluster may be listed only once its job ends), then LostOrder naming it: the record is
      never dropped while the cluster may still appear."""
    if job_uuid:
        def ended():
            try:
                status = ctx.ehpc.job_status(job_uuid, deadline)
            except ApiError as e:
                if "notfound" not in e.code.lower():
                    raise
                return True, None, f"job {job_uuid} is not known any more ({e.code})"
            return status not in JOB_PENDING, None, f"job {job_uuid} is {status}"
        ctx.waiter.until(f"the create job {job_uuid} of {name} to end", ended, deadline, setting)
        return find_own(ctx, name, vpc_id, "", deadline)
    left = window_left_s(ordered_at, window_s)
    seen = ["not listed"]

    def probe():
        c = find_own(ctx, name, vpc_id, "", deadline)
        return c is not None, c, "not listed" if c is None else f"listed as {c.uuid}"
    try:
        return ctx.waiter.until(f"cluster {name} (ordered {ordered_at}, answer lost) to be "
                                "listed", probe, min(deadline, ctx.waiter.clock() + left),
                                setting)
    except ClusterProblem:
        raise
    except CtyunError as e:
        seen[0] = getattr(e, "last_seen", "") or seen[0]
        raise LostOrder(lost_order_message(name, vpc_id, ordered_at, window_s,
                                           seen[0])) from None


def wait_ready(ctx: Ctx, name: str, vpc_id: str, cluster_uuid: str, job_uuid: str,
               deadline: float, setting: str) -> Cluster:
    """Wait for the create job (when its id is known), then for the cluster to be listed and
    `available`."""
    what = f"creation of cluster {name}"
    with ctx.phase("ehpc-order", f"E-HPC job {job_uuid or '(answer lost)'} creating cluster "
                   f"{name}, then the cluster to be available", deadline,
                   assumption="E-HPC provisioning time is not documented") as p:
        if job_uuid:
            ctx.waiter.job(ctx.ehpc, job_uuid, what, deadline, setting, p)
        if cluster_uuid and ctx.ehpc.get_cluster(cluster_uuid, deadline) is None:
            # listed once (that is how its UUID was learnt), its job over: deleted since, not
            # "not listed yet" (waiting the whole createTimeoutS would help nobody)
            raise ClusterGone(gone_message(name, cluster_uuid))

        def probe():
            c = find_own(ctx, name, vpc_id, cluster_uuid, deadline)
            seen = "not listed yet" if c is None else f"cluster {c.uuid} is {c.status}"
            return c is not None and c.status == "available", c, seen
        return ctx.waiter.until(f"cluster {name} to be available", probe, deadline, setting, p)


def wait_not_busy(ctx: Ctx, cluster_uuid: str, deadline: float, setting: str,
                  why: str, need_available: bool = True) -> Optional[Cluster]:
    """Until the cluster has no node being created and (`need_available`) reads `available`;
    None when it is not listed. Teardown does not need `available`: a broken cluster must still
    be removable."""
    def probe():
        c = ctx.ehpc.get_cluster(cluster_uuid, deadline)
        if c is None:
            return True, None, "not listed"
        busy = bool(c.creating_compute) or (need_available and c.status != "available")
        return not busy, c, f"{c.status}, {c.creating_compute or 0} node(s) being created"
    return ctx.waiter.until(f"cluster {cluster_uuid} to be idle {why}", probe, deadline,
                            setting)


def send_when_free(ctx: Ctx, call: Callable[[], T], what: str, deadline: float,
                   setting: str, p=None) -> T:
    """`call()`, repeated while CTyun refuses it as busy (a refusal: it did not run)."""
    def probe():
        try:
            return True, call(), "sent"
        except ApiError as e:
            if not NOT_NOW.search(f"{e.code} {e.message}"):
                raise
            return False, None, f"refused for now: {e.code}"
    return ctx.waiter.until(what, probe, deadline, setting, p)


def _expand_batch(ctx: Ctx, cluster: Cluster, have: int, count: int, t: ExpandTemplate,
                  queue_uuid: str, deadline: float, setting: str, p) -> None:
    r = t.resolved
    req = ExpandClusterRequest(ctx.ehpc.region_id, ctx.az_name, cluster.uuid,
                               r.compute_role_uuid,
                               ComputeOrder(r.compute_image_uuid, t.server, count,
                                            queue_uuid=queue_uuid), t.billing)
    what = f"adding {count} compute node(s) to {cluster.name}"
    try:
        job = send_when_free(ctx, lambda: ctx.ehpc.expand_cluster(req, deadline), what,
                             deadline, setting, p).job_uuid
    except ApiError as e:
        why = explain_refusal(e, {"compute": r.raid("compute")}, t.subnet_type)
        if why:
            raise ClusterProblem(f"{what}: {why}") from None
        raise
    except TransportError as e:
        if not e.may_have_run:
            raise
        job = ""  # the answer was lost: only the listing can tell whether it was taken
        log.info("%s: answer lost; watching list-nodes instead of ordering again", what)
    if job:
        ctx.waiter.job(ctx.ehpc, job, what, deadline, setting, p)

    def probe():
        nodes = ctx.ehpc.list_nodes(ctx.az_name, cluster.uuid, deadline)
        listed = [n for n in nodes if n.role == ROLE_COMPUTE and not n.leaving]
        running = [n for n in listed if n.status == "running"]
        seen = f"{len(listed)} compute node(s) listed, {len(running)} running"
        return len(running) >= have + count, None, seen
    if not job:
        def appeared():
            listed = [n for n in ctx.ehpc.list_nodes(ctx.az_name, cluster.uuid, deadline)
                      if n.role == ROLE_COMPUTE and not n.leaving]
            return len(listed) >= have + count, None, f"{len(listed)} compute node(s) listed"
        try:
            ctx.waiter.until(what, appeared, ctx.lost_deadline(deadline), setting, p)
        except CtyunError:
            raise ClusterProblem(
                f"{what}: expand-cluster's answer was lost and no new node was listed within "
                f"{ctx.lost_wait_s:.0f} s (ctyun:lostAnswerWaitS); it was not sent again (no "
                "idempotency token is documented). Run `pulumi up` again: it counts the nodes "
                "before ordering any") from None
    ctx.waiter.until(what, probe, deadline, setting, p)


def _shrink_batch(ctx: Ctx, cluster: Cluster, victims: Sequence[Node], deadline: float,
                  setting: str, p) -> None:
    ids = [n.uuid for n in victims]
    what = f"removing {len(ids)} compute node(s) from {cluster.name}"
    try:
        job = send_when_free(ctx, lambda: ctx.ehpc.shrink_cluster(ctx.az_name, cluster.uuid, ids,
                                                                deadline),
                             what, deadline, setting, p)
    except TransportError as e:
        if not e.may_have_run:
            raise
        job = ""
        log.info("%s: answer lost; watching list-nodes instead of sending it again", what)
    if job:
        ctx.waiter.job(ctx.ehpc, job, what, deadline, setting, p)

    def probe():
        left = [n for n in compute_nodes(ctx, cluster.uuid, deadline) if n.uuid in ids]
        return not left, None, f"{len(left)} of {len(ids)} still listed"
    if not job:
        def leaving():
            nodes = {n.uuid: n for n in ctx.ehpc.list_nodes(ctx.az_name, cluster.uuid,
                                                            deadline)}
            going = [i for i in ids if i not in nodes or nodes[i].leaving]
            return len(going) == len(ids), None, f"{len(going)} of {len(ids)} leaving"
        try:
            ctx.waiter.until(what, leaving, ctx.lost_deadline(deadline), setting, p)
        except CtyunError:
            raise ClusterProblem(
                f"{what}: shrink-cluster's answer was lost and the nodes did not start to leave "
                f"within {ctx.lost_wait_s:.0f} s (ctyun:lostAnswerWaitS); it was not sent "
                "again. Run the command again: it re-lists the nodes first") from None
    ctx.waiter.until(what, probe, deadline, setting, p)


def resize(ctx: Ctx, cluster: Cluster, want: int, template: ExpandTemplate, deadline: float,
           setting: str, queue_uuid: Callable[[], str],
           shrink: bool = True) -> "tuple[int, List[Node]]":
    """Expand or shrink to `want` compute nodes, in documented batches. Returns the calls
    that ordered or removed nodes, and the last listing of all the cluster's nodes.

    `shrink=False`: nodes above `want` are left where they are (nodes in state error are still
    removed: nothing runs there); the shrink is `shrink_to`'s, which stops what runs on them
    first (shrink_step.py)."""
    calls = 0
    for _ in range(1000):
        every = ctx.ehpc.list_nodes(ctx.az_name, cluster.uuid, deadline)
        listed = sorted((n for n in every if n.role == ROLE_COMPUTE and not n.leaving),
                        key=lambda n: n.name)
        broken = [n for n in listed if n.status == "error"]
        if broken:
            # billed but useless (a failed expand leaves such nodes): removed, then re-counted
            with ctx.phase("ehpc-shrink", f"{cluster.name}: removing {len(broken)} node(s) in "
                           "state error", deadline) as p:
                _shrink_batch(ctx, cluster, broken[:rules.SHRINK_BATCH[1]], deadline, setting,
                              p)
            calls += 1
            continue
        nodes = listed
        have = len(nodes)
        if have == want or (have > want and not shrink):
            return calls, every
        grow = have < want
        phase = "ehpc-expand" if grow else "ehpc-shrink"
        with ctx.phase(phase, f"{cluster.name}: {have} -> {want} compute nodes", deadline,
                       assumption="E-HPC provisioning time is not documented") as p:
            if grow:
                count = min(want - have, rules.EXPAND_ORDER_COUNT[1])
                try:
                    _expand_batch(ctx, cluster, have, count, template, queue_uuid(), deadline,
                                  setting, p)
                except JobFailed:
                    _remove_broken(ctx, cluster, deadline, setting, p)
                    raise
            else:
                victims = nodes[want:][:rules.SHRINK_BATCH[1]]
                _shrink_batch(ctx, cluster, victims, deadline, setting, p)
        calls += 1
    raise ClusterProblem(f"{cluster.name}: the node count did not converge to {want}")


def leaving_nodes(listed: Sequence[Node], want: int) -> List[Node]:
    """The compute nodes a shrink to `want` removes: the highest-named, as `resize` does."""
    return sorted(listed, key=lambda n: n.name)[max(0, want):]


def shrink_to(ctx: Ctx, cluster: Cluster, want: int, deadline: float, setting: str,
              before: Callable[[List[Node], Any], None]) -> "tuple[List[Node], List[Node]]":
    """Remove the compute nodes above `want` (at most 10 per call, each call's job awaited),
    after `before(leaving, phase)` has run once for all of them: the hook that stops what
    runs there. If it raises, nothing is removed. Returns (the nodes removed, the last listing
    of all the cluster's nodes); nothing to remove calls no hook."""
    leaving = leaving_nodes(compute_nodes(ctx, cluster.uuid, deadline), want)
    if leaving:
        with ctx.phase("ehpc-shrink", f"{cluster.name}: removing {len(leaving)} compute "
                       f"node(s) ({', '.join(n.name for n in leaving)}) once the service is "
                       "off them", deadline,
                       assumption="E-HPC provisioning time is not documented") as p:
            before(leaving, p)
            batch = rules.SHRINK_BATCH[1]
            for i in range(0, len(leaving), batch):
                _shrink_batch(ctx, cluster, leaving[i:i + batch], deadline, setting, p)
    return leaving, ctx.ehpc.list_nodes(ctx.az_name, cluster.uuid, deadline)


def _remove_broken(ctx: Ctx, cluster: Cluster, deadline: float, setting: str, p) -> None:
    """After a failed expand: shrink the nodes it left in state error (they are billed)."""
    for _ in range(100):
        broken = [n for n in compute_nodes(ctx, cluster.uuid, deadline) if n.status == "error"]
        if not broken:
            return
        _shrink_batch(ctx, cluster, broken[:rules.SHRINK_BATCH[1]], deadline, setting, p)


def queue_uuid_of(ctx: Ctx, cluster_uuid: str, queue_name: str, deadline: float) -> str:
    """The UUID of the cluster's queue `queue_name` (expand names the queue by UUID)."""
    queues = ctx.ehpc.list_queues(ctx.az_name, cluster_uuid, deadline)
    found = [q for q in queues if q.name == queue_name]
    if len(found) != 1:
        raise ClusterProblem(f"queue {queue_name!r} of cluster {cluster_uuid} is listed "
                             f"{len(found)} times by hpc/list-queues (queues: "
                             f"{', '.join(q.name for q in queues) or 'none'}); set "
                             "ctyun:queueName to the cluster's queue")
    return found[0].uuid


def billables_of(ctx: Ctx, c: Cluster, ordered: Optional[bill.Ordered],
                 recorded: bill.Billables, deadline: float) -> bill.Billables:
    """The cluster's EIP and file system: the record, its blanks filled by looking them up while
    the cluster is listed (by address and name when even that fails: never a reason not to
    delete the cluster)."""
    if ordered is None:
        return recorded
    names = bill.Billables(eip_address=(c.public_ip or "") if ordered.eip else "",
                           fs_name=ordered.fs_name if ordered.fs_kind else "",
                           fs_kind=ordered.fs_kind)
    missing = bill.Ordered(ordered.eip and not recorded.eip_id, ordered.fs_name,
                           ordered.fs_kind if not recorded.fs_id else "")
    if not (missing.eip or missing.fs_kind):
        return recorded.merged(names)
    try:
        found = bill.find(ctx.ehpc.t, ctx.ehpc.region_id, c.public_ip, missing, deadline)
    except CtyunError as e:
        log.info("cluster %s: its EIP and file system could not be looked up (%s); they are "
                 "looked for by address and name after the delete", c.name, e)
        found = names
    return recorded.merged(found).merged(names)


def prove_released(ctx: Ctx, name: str, cluster_uuid: str, b: bill.Billables,
                   deadline: float, setting: str) -> None:
    """After the cluster is gone: its EIP and file system released, waiting while they are on
    their way out (at most the lost-answer window); else ClusterProblem naming each."""
    if not (b.eip_id or b.eip_address or b.fs_kind):
        return
    seen: List[str] = []

    def probe():
        try:
            held, going = bill.leftovers(ctx.ehpc.t, ctx.ehpc.region_id, b, deadline)
        except CtyunError as e:
            raise ClusterProblem(
                f"cluster {name} ({cluster_uuid}) was deleted, but whether its EIP "
                f"{b.eip_address or b.eip_id or '-'} and file system "
                f"{b.fs_name or b.fs_id or '-'} were released could not be read ({e}); "
                "they may be billed: check CTyun's console (EIPs, SFS Turbo / OceanFS), "
                "then `pulumi destroy` again (docs/ctyun-hcc.md, open question 19)") from None
        seen[:] = held
        return not held, None, "; ".join(held) or "released"
    try:
        ctx.waiter.until(f"the EIP and file system of cluster {name} to be released", probe,
                         ctx.lost_deadline(deadline), setting)
    except ClusterProblem:
        raise
    except CtyunError:
        raise ClusterProblem(
            f"cluster {name} ({cluster_uuid}) was deleted, but {len(seen)} thing(s) it was "
            f"ordered with are still held: {'; '.join(seen)}. delete-cluster's effect on them "
            "is undocumented (open questions 3, 19) and they may be billed: release them in "
            "CTyun's console (EIPs; SFS Turbo / OceanFS), then `pulumi destroy` again "
            "(it checks them again)") from None


def teardown(ctx: Ctx, cluster_uuid: str, deadline: float, setting: str,
             ordered: Optional[bill.Ordered] = None,
             recorded: bill.Billables = bill.Billables(), name: str = "") -> bool:
    """Remove every compute node, delete the cluster, verify nothing of it is listed, and prove
    the EIP and file system it was `ordered` with released (`recorded`: what the state knows of
    them). False when the cluster was already gone (its record is still proven released)."""
    c = ctx.ehpc.get_cluster(cluster_uuid, deadline)
    if c is None:
        prove_released(ctx, name or cluster_uuid, cluster_uuid, recorded, deadline, setting)
        return False
    held = billables_of(ctx, c, ordered, recorded, deadline)
    with ctx.phase("ehpc-delete", f"cluster {c.name} ({c.uuid}) to be removed", deadline,
                   assumption="E-HPC deletion time is not documented") as p:
        listed = wait_not_busy(ctx, cluster_uuid, deadline, setting, "before removing it",
                               need_available=False)
        if listed is None:
            prove_released(ctx, c.name, cluster_uuid, held, deadline, setting)
            return True
        c = listed
        kept = _remove_compute(ctx, c, deadline, setting, p)
        try:
            job = send_when_free(ctx, lambda: ctx.ehpc.delete_cluster(c.uuid, deadline),
                                 f"deletion of cluster {c.name}", deadline, setting, p)
        except TransportError as e:
            if not e.may_have_run:
                raise
            job = None  # lost answer: the listing tells whether it took effect
            _deletion_started(ctx, c, deadline, setting, p)
        except ApiError:
            if ctx.ehpc.get_cluster(c.uuid, deadline) is None:
                _prove_released(ctx, c, kept, deadline)
                prove_released(ctx, c.name, c.uuid, held, deadline, setting)
                return True
            raise
        if job:
            ctx.waiter.job(ctx.ehpc, job, f"deletion of cluster {c.name}", deadline, setting, p)

        def probe():
            still = ctx.ehpc.get_cluster(c.uuid, deadline)
            if still is None:
                return True, None, "not listed"
            try:
                nodes = len(ctx.ehpc.list_nodes(ctx.az_name, c.uuid, deadline))
            except ApiError:  # it went between the two listings
                nodes = 0
            return False, None, f"cluster is {still.status}, {nodes} node(s) listed"
        ctx.waiter.until(f"deletion of cluster {c.name}", probe, deadline, setting, p)
        _prove_released(ctx, c, kept, deadline)
        prove_released(ctx, c.name, c.uuid, held, deadline, setting)
    return True


@dataclass(frozen=True)
class KeptNode:
    """The compute node shrink-cluster refused to remove, left to delete-cluster."""

    node: Node
    refusal: str


def _prove_released(ctx: Ctx, c: Cluster, kept: Optional[KeptNode], deadline: float) -> None:
    """After delete-cluster: was the node shrink refused to remove released with it? Only
    hpc/list-nodes (with the node's UUID) can be asked; it either still shows the node (not
    released) or, the cluster gone, shows or answers nothing. No documented API lists a server
    outside its cluster (delete-cluster's effect on ordered servers: CTyun contract
    6.3), so nothing can prove the release: the destroy fails naming the node and what to check,
    rather than pass with a server that may still be billed."""
    if kept is None:
        return
    n = kept.node
    try:
        listed = [x for x in ctx.ehpc.list_nodes(ctx.az_name, c.uuid, deadline,
                                                 node_uuids=[n.uuid]) if x.uuid == n.uuid]
        seen = (f"hpc/list-nodes still lists it, {listed[0].status}" if listed else
                "hpc/list-nodes lists nothing for it")
    except ApiError as e:
        seen = f"hpc/list-nodes of the deleted cluster answers {e.code}"
    raise ClusterProblem(
        f"cluster {c.name} ({c.uuid}) was deleted, but its last compute node {n.name} (nodeUUID "
        f"{n.uuid}, server resourceInstanceID {n.resource_instance_id or '(not given)'}) is not "
        f"proven released: shrink-cluster refused to remove it ({kept.refusal}; open question 8), "
        "delete-cluster's effect on ordered servers is undocumented (question 3) and no "
        f"documented API lists a server once its cluster is gone ({seen}). It may still be "
        f"billed: in CTyun's console look for bare-metal server "
        f"{n.resource_instance_id or n.name} (server list, orders and billing) and release it "
        "there if it is listed; then `pulumi destroy` again finishes (the cluster is no longer "
        "listed). docs/ctyun-hcc.md, open question 8")


def _deletion_started(ctx: Ctx, c: Cluster, deadline: float, setting: str, p) -> None:
    """After a lost delete-cluster answer: the cluster must go or change state soon, else the
    call did not run and is left to the next run (delete is not re-sent blindly)."""
    def probe():
        now = ctx.ehpc.get_cluster(c.uuid, deadline)
        return now is None or now.status != "available", None, \
            "not listed" if now is None else f"cluster is {now.status}"
    try:
        ctx.waiter.until(f"deletion of cluster {c.name} to start", probe,
                         ctx.lost_deadline(deadline), setting, p)
    except CtyunError:
        raise ClusterProblem(
            f"delete-cluster's answer was lost and cluster {c.name} still reads available after "
            f"{ctx.lost_wait_s:.0f} s (ctyun:lostAnswerWaitS); it was not sent again. Run "
            "`pulumi destroy` again") from None


def _remove_compute(ctx: Ctx, c: Cluster, deadline: float, setting: str,
                    p) -> Optional[KeptNode]:
    """Shrink every compute node away, 10 per call. If E-HPC refuses to remove the last one
    (undocumented: CTyun contract 6.8), one is left to delete-cluster and returned: teardown then
    checks, after the delete, whether anything proves it was released."""
    kept: Optional[KeptNode] = None
    for _ in range(200):
        nodes = sorted(compute_nodes(ctx, c.uuid, deadline), key=lambda n: n.name)
        others = [n for n in nodes if kept is None or n.uuid != kept.node.uuid]
        if not others:
            return kept
        victims = others[:rules.SHRINK_BATCH[1]]
        try:
            _shrink_batch(ctx, c, victims, deadline, "ctyun:deleteTimeoutS", p)
        except ApiError as e:
            if kept or len(victims) != len(nodes):
                raise
            log.info("shrink of the last compute node(s) refused (%s); leaving %s to "
                     "delete-cluster", e.code, nodes[0].name)
            kept = KeptNode(nodes[0], f"{e.code}: {e.message}")
    raise ClusterProblem(f"{c.name}: compute nodes kept reappearing during teardown")
