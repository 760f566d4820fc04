"""`HccShrink`: a shrink of the E-HPC cluster that stops the service first (issue 19, "resize
while serving"). Dynamic resource, type `pulumi-python:dynamic/ctyun:HccShrink`.

Why a step of its own: stopping this stack's service and draining the leaving nodes needs SSH to
the master with the pinned host key and the stack's own login key, which `HostKeyPin` makes
*after* the cluster (chain.py). `HccCluster` (which the pin depends on) cannot be given them
without a dependency cycle, so with `deferShrink` it never removes a node that serves, and this
step, declared right after the pin and before `ClusterCheck`, removes the nodes above
`computeNodeCount` in this order:

1. list the compute nodes (E-HPC), take the highest-named above the count (what `HccCluster`
   used to remove: cluster_ops.leaving_nodes);
2. over SSH to the master: drain them, stop this stack's service job(s) holding any of them
   (name + owner comment: only this stack's, every replica's name; resize.stop_for_shrink,
   which marks the stop for the downtime report), and wait until no job runs there;
3. only then `hpc/shrink-cluster` (<= 10 per call, each call's job awaited; cluster_ops).

A master that cannot be reached stops the step before step 3, naming the host and port:
nothing is removed under a job nobody stopped. Its `nodes` output is the cluster's node list as
it is after the shrink (ClusterCheck, the metrics and the steps read it); when there is nothing
to remove the step passes the cluster's list through without calling anything. The service's
replacement (its node count changed) then submits on the nodes left and reports the downtime
from this stop (`downtimeS`, service.py), shown in progress like the grow's.

The node names are the API's: ClusterCheck refused the cluster, when those nodes joined, unless
Slurm calls them the same (cluster_check.check_names). A delete holds nothing (teardown removes
every node); a refresh keeps the outputs (the cluster's refresh reads the nodes).
"""

from __future__ import annotations

from typing import Any, Dict, List

from pulumi.dynamic import CreateResult, ReadResult, UpdateResult

from ..dynamic.provider import redacted_logger
from . import cluster_ops as ops
from . import provider_runtime as rt
from .cluster_provider import node_view
from .resize import StopsTheService, stop_for_shrink
from .slurm_jobs import JobFailed
from .ssh import SshError, remote_errors
from .ssh_resource import SshStepProvider, step_resource

log = redacted_logger("kimi_k3.ctyun.shrink")

SETTING = "ctyun:updateTimeoutS"


class MasterUnreachable(ops.ClusterProblem):
    """The master could not be reached to stop the service before a shrink: nothing removed."""


def unreachable_message(p: Dict[str, Any], leaving: List[str], e: BaseException) -> str:
    how = f" through the bastion {p['sshBastion']}" if p.get("sshBastion") else ""
    return (f"shrinking cluster {p.get('clusterName') or p.get('clusterUUID')} needs the "
            f"master {p['sshHost']}:{int(p.get('sshPort') or 22)}{how} to stop this stack's "
            f"service on the leaving node(s) {', '.join(leaving)} first, and it could not be "
            f"reached ({type(e).__name__}: {e}); no node was removed. Make the master "
            "reachable (kimi-k3:sshAllowedCidrs, the bastion) and run `pulumi up` again")


def compute_count(nodes: Any) -> int:
    return len([n for n in nodes or [] if n.get("role") != "master"])


class HccShrinkProvider(StopsTheService, SshStepProvider, rt.CtyunProvider):
    """See the module docstring. Inputs: the SSH step's, the cluster's identity and wanted
    count, its node list (`clusterNodes`), the service's job name(s), owner tag and work dir.
    Outputs: `nodes` (as HccCluster's), `removed`, `stoppedJobs`."""

    STEP_INPUTS = {"regionID": "", "azName": "", "clusterUUID": "", "clusterName": "",
                   "computeNodeCount": 0, "clusterNodes": [], "serviceJobNames": ["kimi-k3"],
                   "ownerTag": "", "workDir": "/home/kimi-k3", "endpoint": "",
                   "pollIntervalS": 30, "updateTimeoutS": 5400, "lostAnswerWaitS": 900}
    OUTPUT_NAMES = ["nodes", "removed", "stoppedJobs"]
    REPLACE_KEYS = ()
    TIMEOUT_INPUTS = {"create": "updateTimeoutS", "update": "updateTimeoutS"}

    def apply(self, p: Dict[str, Any]) -> Dict[str, Any]:
        want, listed = int(p["computeNodeCount"]), list(p.get("clusterNodes") or [])
        if compute_count(listed) <= want:  # nothing to remove: nothing to call
            return {"nodes": listed, "removed": [], "stoppedJobs": []}
        ctx = ops.Ctx(rt.ehpc(p), p["azName"], rt.waiter(p), self.progress(p),
                      float(p["lostAnswerWaitS"]))
        deadline = self.deadline(p, "update").at
        cluster = ops.wait_not_busy(ctx, p["clusterUUID"], deadline, SETTING,
                                    "before removing nodes")
        if cluster is None:
            raise ops.ClusterProblem(f"cluster {p['clusterName']} ({p['clusterUUID']}) is no "
                                     "longer listed; run `pulumi refresh`, then `pulumi up`")
        runner = self.runner(p)
        stopped: List[str] = []

        def before(leaving, phase) -> None:
            names = [n.name for n in leaving]
            phase.update(f"stopping the service on {', '.join(names)} over SSH to "
                         f"{p['sshHost']}:{p['sshPort']}", force=True)
            try:
                runner.connect()
            except remote_errors() as e:
                raise MasterUnreachable(unreachable_message(p, names, e)) from None
            try:
                stopped[:] = stop_for_shrink(runner, p, names, deadline,
                                             float(p["pollIntervalS"]))
            except (SshError, TimeoutError, JobFailed) as e:  # the master answered, then failed
                raise ops.ClusterProblem(
                    f"stopping the service on {', '.join(names)} before shrinking cluster "
                    f"{cluster.name} ({p['sshHost']}:{p['sshPort']}) failed ({e}); no node "
                    "was removed") from None
            phase.update((f"service stopped (Slurm job {', '.join(stopped)}): down from now "
                          "until its replacement answers; " if stopped else "")
                         + f"{', '.join(names)} drained and idle, removing them", force=True)

        try:
            removed, every = ops.shrink_to(ctx, cluster, want, deadline, SETTING, before)
        finally:
            runner.close()
        if removed:
            log.warning("cluster %s: removed %s after stopping %s", cluster.name,
                        ", ".join(n.name for n in removed),
                        ("Slurm job " + ", ".join(stopped)) if stopped else "nothing (no job "
                        "of this stack held them)")
        live = sorted((node_view(n) for n in every if not n.leaving),
                      key=lambda v: (v["role"] != "master", v["name"]))
        return {"nodes": live, "removed": [n.name for n in removed], "stoppedJobs": stopped}

    # ---- the dynamic provider protocol (no progress phase of its own: shrink_to records
    # ---- `ehpc-shrink` when there is something to remove) ----------------------------------
    def create(self, props):
        p = self.inputs(props)
        return CreateResult(f"{p['clusterUUID']}:shrink", {**p, **self.apply(p)})

    def update(self, id_, olds, news):
        p = self.inputs(news)
        return UpdateResult({**p, **self.apply(p)})

    def read(self, id_, props):
        return ReadResult(id_, props)

    def delete(self, id_, props):
        """Holds nothing: the cluster's teardown removes every node, without SSH."""


HccShrink = step_resource(HccShrinkProvider, "HccShrink", HccShrinkProvider.OUTPUT_NAMES,
                          secret_outputs=[])
