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

Jobs of anyone else are never touched: a step that needs a node held by someone else's job
waits for it (`--immediate`) and fails naming it, as before.

A shrink (`stop_for_shrink`, called by the HccShrink step before E-HPC is asked to remove the
nodes: shrink_step.py) drains the leaving nodes, stops this stack's job(s) on them, and waits
until nothing runs there; someone else's job there is let finish, or named when it does not.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from ..dynamic.provider import redacted_logger
from ..inference.quoting import shell_word
from .replicas import replica_work_dir
from .slurm_jobs import JobInfo, cancel, job, jobs_named
from .ssh import SshRunner
from .ssh_resource import poll

log = redacted_logger("kimi_k3.ctyun.resize")

#: the mark a stop leaves, in the service's log directory (on the shared work dir)
STOP_MARK = "logs/service-stopped"


def job_owner(owner_tag: str) -> str:
    """The comment prefix that marks a job as submitted by this stack (`kk3:<ownerTag>:`)."""
    tag = "".join(c for c in str(owner_tag or "") if c.isalnum() or c in "._/-")
    return f"kk3:{tag}:"


def own_service_jobs(runner: SshRunner, job_name: str, owner_tag: str,
                     user: Optional[str] = None) -> List[JobInfo]:
    """This stack's active service jobs (name and owner comment both match), with their nodes."""
    owner = job_owner(owner_tag)
    return [job(runner, jid) for jid, _state, comment in jobs_named(runner, job_name, user=user)
            if comment.startswith(owner)]


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


def stop_service_for(runner: SshRunner, p: Mapping, nodes: Sequence[str], why: str,
                     deadline: float, interval_s: float) -> List[str]:
    """Cancel this stack's service job(s) holding any of `nodes` (the step named by `why`
    needs them); mark the stop for the downtime report. Returns the job ids stopped.

    `p` carries `serviceJobName` (every replica's job name, replica 0's first:
    target.service_job_names), `ownerTag`, `sshUser` and `workDir` (replica 0's). Each stopped
    job's mark goes to its own replica's work directory (replicas.replica_work_dir), where that
    replica's service reads it: every replica reports its own downtime."""
    names = [n for n in str(p["serviceJobName"]).split(",") if n]
    stopped = []
    for i, name in enumerate(names):
        jobs = own_service_jobs(runner, name, p["ownerTag"], p.get("sshUser"))
        for job_id, held in sorted(holding(jobs, nodes).items()):
            log.warning("stopping the service (Slurm job %s) for %s: it holds %s", job_id, why,
                        ", ".join(held))
            mark_stopped(runner, replica_work_dir(p["workDir"], i), job_id, f"stopped for {why}")
            cancel(runner, job_id, deadline, interval_s)
            stopped.append(job_id)
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


def stop_for_shrink(runner: SshRunner, p: Mapping, nodes: Sequence[str], deadline: float,
                    interval_s: float) -> List[str]:
    """Before E-HPC removes `nodes`: drain them (nothing new starts there), stop this stack's
    service job(s) holding any of them (marked: the service's next create reports the
    downtime), and wait until no job runs there. Returns the job ids stopped."""
    drain_leaving(runner, nodes)
    stopped = stop_service_for(runner, p, nodes, "the shrink", deadline, interval_s)
    wait_idle(runner, nodes, deadline, interval_s)
    return stopped


def new_nodes(before: Sequence[str], now: Sequence[str]) -> List[str]:
    """The nodes of `now` that were not in `before`, in `now`'s order (what a grow added)."""
    seen = set(before)
    return [n for n in now if n not in seen]
