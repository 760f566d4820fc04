"""A cluster that serves while it changes size: who holds which nodes, stopping the service for a
step that needs them, draining the nodes that leave, and the downtime that follows.

The service job is `--exclusive` on every node it runs on, so any step that needs one of those
nodes (the NVMe mount, a broadcast whose source or target is busy, the shrink of a node it runs
on) would wait behind it, fail after `--immediate`, or pull the node out from under it. The
rule here: a step first finds this stack's own service job (name + the `kk3:<ownerTag>:`
comment, service.py), and if that job holds a node the step needs, cancels it, leaving a mark
with the time on the master. The service's next create (a resize always resubmits: the node
count is part of the launch) reads the mark when the replica answers again and reports the
downtime: from the first stop to the first good answer, measured by the master's one clock.

With `kimi-k3:replicas` lowered, the replicas the program no longer declares are deleted by
Pulumi only at the end of the update, after every step: their jobs would hold nodes the shrink
removes, or the nodes a remaining replica's new job needs, until then. So the first step that
stops the service stops those jobs too, wherever they run (`stop_service_for`); they are
recognised by the owner comment and the replica job name (`<job>-r<i>`, replicas.py).

Jobs of anyone else are never touched: a step that needs a node held by someone else's job
waits for it (`--immediate`) and fails naming it, as before.

A shrink (`stop_for_shrink`, called by the HccShrink step before E-HPC is asked to remove the
nodes: shrink_step.py) drains the leaving nodes, stops this stack's job(s) on them, and waits
until nothing runs there; someone else's job there is let finish, or named when it does not.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from ..dynamic.provider import redacted_logger
from ..inference.quoting import shell_word
from .replicas import replica_work_dir
# the mark a stop leaves, in the service's log directory (on the shared work dir); srun.sh reads
# it too (a job the stack stopped never requeues itself)
from .scripts import STOP_MARK
from .slurm_jobs import JobInfo, cancel, job, jobs_of
from .ssh import SshRunner
from .ssh_resource import poll

log = redacted_logger("kimi_k3.ctyun.resize")

#: a Slurm node name (host name characters)
_NODE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,62}")


def job_owner(owner_tag: str) -> str:
    """The comment prefix that marks a job as submitted by this stack (`kk3:<ownerTag>:`)."""
    tag = "".join(c for c in str(owner_tag or "") if c.isalnum() or c in "._/-")
    return f"kk3:{tag}:"


@dataclass(frozen=True)
class ServiceJobs:
    """What a step that needs nodes knows about this stack's service: every replica's Slurm
    job name, replica 0's first (target.service_job_names), the stack's owner tag, the SSH
    user (whose jobs are listed) and replica 0's work directory (replicas.replica_work_dir
    gives replica i's)."""

    names: Tuple[str, ...]
    owner_tag: str
    work_dir: str
    user: Optional[str] = None

    def __post_init__(self):
        if isinstance(self.names, str) or not self.names or \
                not all(isinstance(n, str) and n for n in self.names):
            raise ValueError(f"service job names {self.names!r}: a list of job names, replica "
                             "0's first")

    @classmethod
    def of(cls, p: Mapping) -> "ServiceJobs":
        """From a step's inputs: `serviceJobNames`, `ownerTag`, `workDir`, `sshUser`."""
        return cls(tuple(p["serviceJobNames"]), str(p.get("ownerTag") or ""),
                   str(p["workDir"]), p.get("sshUser") or None)

    def replica(self, name: str) -> Optional[int]:
        """The replica index of a job called `name`: its place in `names`, or, for
        `<replica 0's name>-r<i>` beyond them, i (a replica the program no longer declares:
        `replicas` went down, its service is deleted at the end of this update); None for
        any other name."""
        if name in self.names:
            return self.names.index(name)
        m = re.fullmatch(re.escape(self.names[0]) + r"-r([1-9][0-9]{0,3})", name)
        return int(m.group(1)) if m else None


def upgrade_job_names(p: Dict[str, Any]) -> Dict[str, Any]:
    """A step's state from before `serviceJobNames` (a list) held `serviceJobName`, the same
    names comma-joined: read it as the list, so that the upgrade shows no diff."""
    old = p.pop("serviceJobName", None)
    if isinstance(old, str) and p.get("serviceJobNames") is None:
        p["serviceJobNames"] = [n for n in old.split(",") if n]
    return p


class StopsTheService:
    """Mixin of the steps with `serviceJobNames` among their inputs (they stop the service
    for nodes they need): an old state's `serviceJobName` is read as the list."""

    def upgrade(self, props):
        return upgrade_job_names(super().upgrade(props))


def own_service_jobs(runner: SshRunner, service: ServiceJobs) -> List[Tuple[int, JobInfo]]:
    """(replica index, job) of this stack's active service jobs: the owner comment
    (`kk3:<ownerTag>:`) and a replica's job name (`ServiceJobs.replica`) both match, with the
    job's nodes. Jobs of removed replicas are included (index >= len(service.names))."""
    owner = job_owner(service.owner_tag)
    return [(i, job(runner, jid)) for jid, _state, name, comment in jobs_of(runner, service.user)
            if comment.startswith(owner) and (i := service.replica(name)) is not None]


def holding(jobs: Iterable[JobInfo], nodes: Iterable[str]) -> Dict[str, List[str]]:
    """{job id: the `nodes` it holds} for the jobs that hold any of them."""
    wanted = set(nodes)
    out: Dict[str, List[str]] = {}
    for info in jobs:
        held = sorted(wanted & set(info.nodes))
        if held:
            out[info.job_id] = held
    return out


@dataclass(frozen=True)
class StopMark:
    """When (the master's epoch seconds) and why this stack's service was stopped."""

    at: float
    job_id: str
    why: str


def mark_stopped(runner: SshRunner, work_dir: str, job_id: str, why: str) -> None:
    """Record the stop on the master unless an earlier one is still unread: the downtime runs
    from the first stop (a resize may stop the service once, then replace it)."""
    path = shell_word(f"{work_dir.rstrip('/')}/{STOP_MARK}")
    clean = " ".join("".join(c for c in why if c.isprintable()).split())[:200]
    runner.run(f"mkdir -p \"$(dirname {path})\"; [ -s {path} ] || "
               f"echo \"$(date +%s.%N) {shell_word(str(job_id))} $(cat)\" > {path}",
               stdin=clean + "\n", label="mark the service stopped")


def take_stop_mark(runner: SshRunner, work_dir: str) -> Optional[Tuple[StopMark, float]]:
    """(the mark, seconds since it, by the master's clock) and remove it; None without one."""
    path = shell_word(f"{work_dir.rstrip('/')}/{STOP_MARK}")
    out = runner.run(f"if [ -s {path} ]; then echo \"$(date +%s.%N) $(cat {path})\"; "
                     f"rm -f {path}; fi", label="read the service's stop mark").stdout.split()
    if len(out) < 3:
        return None
    try:
        now, at = float(out[0]), float(out[1])
    except ValueError:
        return None
    return StopMark(at, out[2], " ".join(out[3:])), max(0.0, now - at)


def stop_service_for(runner: SshRunner, service: ServiceJobs, nodes: Sequence[str], why: str,
                     deadline: float, interval_s: float) -> List[str]:
    """Cancel this stack's service job(s) holding any of `nodes` (the step named by `why`
    needs them), and every job of a replica the program no longer declares, wherever it runs
    (its service is deleted only at the end of the update, after the steps: left running it
    would hold its nodes, under a shrink or in the way of the replicas that stay). Returns the
    job ids stopped.

    Each stopped job's mark goes to its own replica's work directory
    (replicas.replica_work_dir), where that replica's service reads it: every replica reports
    its own downtime. A removed replica's job gets no mark: nothing reads it, and a later
    replica of the same index must not report a downtime that was never its own."""
    stopped = []
    for i, info in own_service_jobs(runner, service):
        held = holding([info], nodes).get(info.job_id, [])
        removed = i >= len(service.names)
        if not held and not removed:
            continue
        if removed:
            log.warning("stopping Slurm job %s of replica %d, which `kimi-k3:replicas` no longer "
                        "declares (for %s)", info.job_id, i, why)
        else:
            log.warning("stopping the service (Slurm job %s) for %s: it holds %s", info.job_id,
                        why, ", ".join(held))
            mark_stopped(runner, replica_work_dir(service.work_dir, i), info.job_id,
                         f"stopped for {why}")
        cancel(runner, info.job_id, deadline, interval_s)
        stopped.append(info.job_id)
    return stopped


def drain_leaving(runner: SshRunner, nodes: Sequence[str], why: str = "kimi-k3: leaving the "
                  "cluster (resize)") -> None:
    """Drain the nodes a shrink removes, so that nothing new starts there before they go. A
    node Slurm does not know is skipped: nothing can start there (`scontrol update` would
    refuse the whole list for it)."""
    if nodes:
        words = " ".join(shell_word(n) for n in nodes)
        runner.run(f"for n in {words}; do if scontrol show node \"$n\" >/dev/null 2>&1; then "
                   f"scontrol update NodeName=\"$n\" State=DRAIN Reason={shell_word(why)}; fi; "
                   "done", label="drain the leaving nodes")


#: node states (`sinfo %T`, flags stripped) in which a job may still run on the node
#: (sinfo(1), NODE STATE CODES: a draining node still runs jobs, a drained one none)
BUSY_STATES = {"allocated", "mixed", "completing", "draining"}


class ShrinkBlocked(RuntimeError):
    """The nodes a shrink would remove cannot be freed first: nothing was removed."""


def busy_nodes(runner: SshRunner, nodes: Sequence[str]) -> Dict[str, str]:
    """{node: its state} of the `nodes` on which a job may still run (a node Slurm does not
    list runs nothing)."""
    if not nodes:
        return {}
    out = runner.run(f"sinfo -h -N -n {shell_word(','.join(nodes))} -o '%N %T' || true",
                     label="sinfo the leaving nodes").stdout
    busy: Dict[str, str] = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] in nodes and \
                parts[1].lower().rstrip("*~#!%$@^-+") in BUSY_STATES:
            busy[parts[0]] = parts[1].lower()
    return busy


def wait_idle(runner: SshRunner, nodes: Sequence[str], deadline: float,
              interval_s: float) -> None:
    """Until no job runs on `nodes` (drained: this stack's service was stopped, someone
    else's job is let finish); ShrinkBlocked naming the nodes and their jobs at `deadline`."""
    last: Dict[str, str] = {}

    def idle():
        last.clear()
        last.update(busy_nodes(runner, nodes))
        return not last
    try:
        poll("the leaving nodes to be idle", idle, deadline, interval_s)
    except TimeoutError:
        jobs = runner.run(f"squeue -h -w {shell_word(','.join(sorted(last)))} "
                          "-o '%i (%u, %j)' || true", label="squeue the leaving nodes").stdout
        raise ShrinkBlocked(
            "the nodes the shrink removes still run jobs after they were drained: "
            + ", ".join(f"{n} ({s})" for n, s in sorted(last.items()))
            + f"; jobs: {' '.join(jobs.split()) or 'none listed'}. Nothing was removed. These "
            "are not this stack's service: let them finish (or cancel them) and run `pulumi "
            "up` again") from None


#: the nodes this stack's shrinks removed, one name a line, in the logs directory of the work
#: directory and of every replica's (the service's delete reads its own: `removed_nodes`)
REMOVED_NODES = "logs/removed-nodes"


def record_removed(runner: SshRunner, work_dir: str, nodes: Sequence[str]) -> None:
    """Note on the master that this stack's shrink removes `nodes`, in `work_dir` and every
    replica directory under it (replicas.replica_work_dir): a service deleted afterwards,
    whose job ran there, then knows why Slurm no longer lists them (`removed_nodes`)."""
    if not nodes:
        return
    base = work_dir.rstrip("/") or "/"
    dirs = f"{shell_word(base)} {shell_word(base)}/replica-*"
    runner.run(f"for d in {dirs}; do if [ -d \"$d/logs\" ]; then cat >> \"$d/{REMOVED_NODES}\" "
               f"<<'KK3_REMOVED_EOF'\n" + "\n".join(nodes) + "\nKK3_REMOVED_EOF\nfi; done",
               label="record the nodes the shrink removes")


def removed_nodes(runner: SshRunner, work_dir: str) -> set:
    """The node names `record_removed` noted in `work_dir` (empty when none)."""
    path = shell_word(f"{work_dir.rstrip('/')}/{REMOVED_NODES}")
    out = runner.run(f"cat {path} 2>/dev/null || true", check=False,
                     label="the nodes this stack's shrinks removed").stdout
    return set(out.split())


def stop_for_shrink(runner: SshRunner, p: Mapping, nodes: Sequence[str], deadline: float,
                    interval_s: float) -> List[str]:
    """Before E-HPC removes `nodes`: drain them (nothing new starts there), stop this stack's
    service job(s) holding any of them (marked: the service's next create reports the
    downtime), wait until no job runs there, and record them as removed by this stack
    (`record_removed`). Returns the job ids stopped."""
    for n in nodes:  # they reach a here-document, one a line
        if not isinstance(n, str) or not _NODE.fullmatch(n):
            raise ValueError(f"node name {n!r} is not a host name")
    drain_leaving(runner, nodes)
    stopped = stop_service_for(runner, ServiceJobs.of(p), nodes, "the shrink", deadline,
                               interval_s)
    wait_idle(runner, nodes, deadline, interval_s)
    record_removed(runner, str(p["workDir"]), nodes)
    return stopped


def new_nodes(before: Sequence[str], now: Sequence[str]) -> List[str]:
    """The nodes of `now` that were not in `before`, in `now`'s order (what a grow added)."""
    seen = set(before)
    return [n for n in now if n not in seen]
