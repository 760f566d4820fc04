"""Slurm job operations on the master, over an `SshRunner`: submit, observe, wait, cancel, logs.

Shared by the broadcast step (bootstrap.py) and the serving job (service.py), so both read job
states, surface failures and clean up the same way. Only Slurm's own commands are used
(`sbatch --parsable`, `scontrol show job -o`, `scancel`, `sinfo`), so it works without
accounting (`sacct`) configured.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Dict, List, Mapping, Optional, Tuple

from ..inference.quoting import shell_word, shell_words
from ..progress.record import current_phase
from .ssh import CommandFailed, SshRunner
from .ssh_resource import poll

TERMINAL = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY",
            "BOOT_FAIL", "DEADLINE", "PREEMPTED"}
ACTIVE = {"PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED", "REQUEUED",
          "RESIZING"}


#: reasons a pending job never starts by itself (the cluster cannot satisfy its request)
HOPELESS = {"PartitionNodeLimit", "BadConstraints", "PartitionConfig", "InvalidQOS",
            "InvalidAccount", "PartitionTimeLimit"}


class JobFailed(RuntimeError):
    """A Slurm job ended badly; the message carries the job's log tail."""


@dataclass(frozen=True)
class JobInfo:
    job_id: str
    state: str  # a Slurm JobState, or "GONE" when Slurm no longer knows the job
    nodes: Tuple[str, ...]
    reason: str = ""
    comment: str = ""
    #: how often Slurm requeued the job (`Restarts`): after a node failure a requeueable job
    #: goes back to PENDING with this raised, instead of ending NODE_FAIL
    restarts: int = 0


def parse_job(job_id: str, text: str) -> JobInfo:
    """JobInfo from `scontrol show job -o ID` output (one line of KEY=VALUE)."""
    fields: Dict[str, str] = {}
    for m in re.finditer(r"(\w+)=(\S*)", text):
        fields.setdefault(m.group(1), m.group(2))
    restarts = fields.get("Restarts", "0")
    return JobInfo(job_id, fields.get("JobState", "GONE"), (), fields.get("Reason", ""),
                   fields.get("Comment", ""), int(restarts) if restarts.isdigit() else 0)


def job(runner: SshRunner, job_id: str) -> JobInfo:
    """The job as Slurm sees it now (state GONE when it has been purged)."""
    res = runner.run(
        f"out=$(scontrol show job -o {shell_word(job_id)} 2>&1) || true; echo \"$out\"; "
        f"nl=$(printf '%s' \"$out\" | tr ' ' '\\n' | awk -F= '$1 == \"NodeList\" {{print $2}}'); "
        "if [ -n \"$nl\" ] && [ \"$nl\" != '(null)' ]; then echo \"HOSTS $(scontrol show hostnames \"$nl\" | tr '\\n' ' ')\"; fi",
        label=f"scontrol show job {job_id}")
    if "Invalid job id" in res.stdout:
        return JobInfo(job_id, "GONE", ())
    info = parse_job(job_id, res.stdout)
    hosts = ()
    for line in res.stdout.splitlines():
        if line.startswith("HOSTS "):
            hosts = tuple(line.split()[1:])
    return JobInfo(job_id, info.state, hosts, info.reason, info.comment, info.restarts)


def submit(runner: SshRunner, work_dir: str, script: str, args: Tuple[str, ...] = (),
           export: Optional[Mapping[str, str]] = None) -> str:
    """`sbatch --parsable` `script` from `work_dir`; returns the job id."""
    opts = list(args)
    for k, v in (export or {}).items():  # sbatch splits --export on ',' and '=': plain words only
        if not (re.match(r"^[A-Z_][A-Z0-9_]*$", k) and re.match(r"^[A-Za-z0-9._:/-]*$", str(v))):
            raise ValueError(f"--export {k}={v!r} is not a plain variable and value")
    if export:
        opts.append("--export=ALL," + ",".join(f"{k}={v}" for k, v in sorted(export.items())))
    cmd = (f"cd {shell_word(work_dir)} && sbatch --parsable "
           + " ".join(shell_word(o) for o in opts) + f" {shell_word(script)}")
    out = runner.run(cmd, label=f"sbatch {script}").stdout.strip()
    job_id = out.split(";")[0].strip()
    if not job_id.isdigit():
        raise RuntimeError(f"sbatch {script} did not return a job id: {out!r}")
    return job_id


#: file-name globs `log_tail` accepts: names, `.`, `-`, `_` and `*` (no '/', no space, no '$')
LOG_GLOB_RE = re.compile(r"^[A-Za-z0-9_.*-]+$")


def log_tail(runner: SshRunner, directory: str, names: List[str], lines: int = 30) -> str:
    """The last `lines` lines of each existing file in `directory` matching one of the file-name
    globs `names`. The directory is one quoted shell word; only the globs' `*` expand."""
    for name in names:
        if not LOG_GLOB_RE.match(name):
            raise ValueError(f"log file glob {name!r} is not a plain file-name pattern")
    d = shell_word(directory.rstrip("/") or "/")
    globs = " ".join(f"{d}/{name}" for name in names)
    res = runner.run(
        f"for f in {globs}; do [ -s \"$f\" ] || continue; echo \"==> $f <==\"; "
        f"tail -n {int(lines)} \"$f\"; done", check=False, label="log tail")
    return res.stdout.strip()


def check_startable(info: JobInfo) -> None:
    """Raise JobFailed for a pending job the cluster can never run (e.g. more nodes than the
    partition has), instead of waiting for the deadline."""
    if info.state == "PENDING" and info.reason in HOPELESS:
        raise JobFailed(f"Slurm job {info.job_id} can never start ({info.reason}): the "
                        "partition cannot satisfy its request (nodes, GRES or time limit)")


def wait_done(runner: SshRunner, job_id: str, deadline: float, interval_s: float) -> JobInfo:
    """Poll until the job is no longer active; returns its final JobInfo."""
    def done():
        info = job(runner, job_id)
        current_phase().update(f"Slurm job {job_id} {info.state}")  # progress
        check_startable(info)
        return info if info.state not in ACTIVE else None

    try:
        return poll(f"Slurm job {job_id}", done, deadline, interval_s)
    except JobFailed:
        runner.run(f"scancel {shell_word(job_id)} 2>/dev/null || true", label="scancel")
        raise


def cancel(runner: SshRunner, job_id: str, deadline: float, interval_s: float) -> JobInfo:
    """`scancel` and wait until Slurm reports the job finished or gone."""
    runner.run(f"scancel {shell_word(job_id)} 2>/dev/null || true", label=f"scancel {job_id}")
    return wait_done(runner, job_id, deadline, interval_s)


def jobs_named(runner: SshRunner, name: str, user: Optional[str] = None
               ) -> List[Tuple[str, str, str]]:
    """(job id, state, comment) of the active jobs called `name` (of `user`, when given)."""
    who = f" -u {shell_word(user)}" if user else ""
    out = runner.run(f"squeue -h -n {shell_word(name)}{who} -o '%i|%T|%k'",
                     label=f"squeue -n {name}").stdout
    rows = []
    for line in out.splitlines():
        parts = line.strip().split("|")
        if len(parts) == 3:
            rows.append((parts[0], parts[1], parts[2]))
    return rows


def jobs_of(runner: SshRunner, user: Optional[str] = None) -> List[Tuple[str, str, str, str]]:
    """(job id, state, name, comment) of the active jobs (of `user`, when given). A line with
    more separators than fields (a name or comment holding `|`) gets the name "": it matches
    no job name the caller looks for, so no such job can pass for one of ours."""
    who = f" -u {shell_word(user)}" if user else ""
    out = runner.run(f"squeue -h{who} -o '%i|%T|%j|%k'", label="squeue the jobs").stdout
    rows = []
    for line in out.splitlines():
        head, sep, comment = line.strip().rpartition("|")
        parts = head.split("|")
        if sep and len(parts) >= 3:
            rows.append((parts[0], parts[1], parts[2] if len(parts) == 3 else "", comment))
    return rows


def parse_gres(text: str) -> Dict[str, int]:
    """{GRES name: the smallest count any line declares} from `sinfo -o %G` output, e.g.
    `gpu:16`, `gpu:16(S:0-1)`, `gpu:a100:8,npu:16`, `(null)` (none); a count that cannot be
    read is 0 (name known, count unknown)."""
    counts: Dict[str, int] = {}
    for field in text.split():
        for item in field.split(","):
            item = re.sub(r"\(.*?\)", "", item).strip()
            if not item or item == "(null)":
                continue
            parts = item.split(":")
            count = int(parts[-1]) if len(parts) > 1 and parts[-1].isdigit() else 0
            name = parts[0]
            counts[name] = min(counts.get(name, count), count)
    return counts


def gres_counts(runner: SshRunner, partition: str) -> Dict[str, int]:
    """The GRES the partition's nodes declare, by name, with the smallest count per node."""
    out = runner.run(f"sinfo -h -p {shell_word(partition)} -o '%G'",
                     label=f"sinfo -p {partition}").stdout
    return parse_gres(out)


def gres_name(runner: SshRunner, partition: str) -> str:
    """The accelerator GRES name the partition's nodes declare (`npu`, `gpu`), or '' if none."""
    names = gres_counts(runner, partition)
    for preferred in ("npu", "gpu"):
        if preferred in names:
            return preferred
    return sorted(names)[0] if names else ""


#: node states (sinfo %T, flags stripped) on which a new step can start at once
STEP_READY = {"idle", "allocated", "mixed"}


def node_states(runner: SshRunner, partition: str) -> Dict[str, str]:
    """{node: state} of the partition's nodes as `sinfo %T` prints it (`idle`, `allocated`,
    `down*`, `drained`, ...; a trailing `*` means the node does not answer)."""
    out = runner.run(f"sinfo -h -N -p {shell_word(partition)} -o '%N %T'",
                     label=f"sinfo -N -p {partition} states").stdout
    states: Dict[str, str] = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2:
            states[parts[0]] = parts[1].lower()
    return states


#: why `split_usable` cannot use a node Slurm does not list in the partition
NOT_IN_PARTITION = "not in the partition"


def split_usable(states: Mapping[str, str], nodes: List[str]) -> Tuple[List[str], Dict[str, str]]:
    """(the `nodes` a short step can run on now, {node: why not} for the others: down, drained,
    not answering, or not in the partition at all)."""
    usable: List[str] = []
    others: Dict[str, str] = {}
    for node in nodes:
        state = states.get(node)
        if state is None:
            others[node] = NOT_IN_PARTITION
        elif state.endswith("*") or state.rstrip("~#!%$@^-+") not in STEP_READY:
            others[node] = state
        else:
            usable.append(node)
    return usable, others


def partition_nodes(runner: SshRunner, partition: str) -> List[str]:
    out = runner.run(f"sinfo -h -N -p {shell_word(partition)} -o '%N'",
                     label=f"sinfo -N -p {partition}").stdout
    return sorted(set(out.split()))


def stop_instances(runner: SshRunner, partition: str, name: str, nodes: List[str],
                   timeout_s: int = 120) -> str:
    """Stop the Apptainer instance called exactly `name` (`<job name>-<job id>`: one job's) on
    `nodes` (a short srun step per node); other instances are never touched.

    Returns what was still running (empty when nothing leaked)."""
    if not nodes:
        return ""
    node_list = ",".join(nodes)
    script = (f"for i in $(apptainer instance list 2>/dev/null | awk 'NR > 1 {{print $1}}'); do "
              f"case \"$i\" in {shell_word(name)}) apptainer instance stop \"$i\" >/dev/null "
              f"&& echo \"$(hostname -s) stopped $i\";; esac; done")
    res = runner.run(
        f"timeout {int(timeout_s)} srun --immediate={int(timeout_s)} -p {shell_word(partition)} -N {len(nodes)} "
        f"-w {shell_word(node_list)} --ntasks-per-node=1 --time=5 bash -c {shell_word(script)}",
        check=False, timeout_s=timeout_s + 30, label="stop leftover apptainer instances")
    if res.code != 0:
        raise CommandFailed("stop leftover apptainer instances", res.code, res.stdout, res.stderr)
    return res.stdout.strip()


def preflight(runner: SshRunner, partition: str, nodes: int, command: str,
              timeout_s: int = 300) -> List[str]:
    """Run `command` (e.g. `npu-smi info`: is the accelerator driver up?) once on `nodes` nodes
    of the partition; returns the hosts that passed, raises JobFailed naming the ones that did
    not, with their output."""
    words = command.split()
    if not words or not all(re.match(r"^[A-Za-z0-9_./=:-]+$", w) for w in words):
        raise ValueError(f"preflight command {command!r} is not plain words (e.g. npu-smi info)")
    script = (f"if out=$({shell_words(words)} 2>&1); then echo \"$(hostname -s) ok\"; "
              f"else echo \"$(hostname -s) FAILED: $(printf '%s' \"$out\" | tail -n 3 | tr '\\n' ' ')\"; fi")
    res = runner.run(
        f"timeout {int(timeout_s)} srun --immediate={int(timeout_s)} -p {shell_word(partition)} "
        f"-N {int(nodes)} --ntasks-per-node=1 --time=5 bash -c {shell_word(script)}",
        check=False, timeout_s=timeout_s + 30, label=f"preflight `{command}`")
    lines = [ln for ln in res.stdout.splitlines() if ln.strip()]
    bad = [ln for ln in lines if " FAILED: " in ln]
    if res.code != 0 or bad or len(lines) != nodes:
        raise JobFailed(f"preflight `{command}` failed before submitting the service: "
                        + ("; ".join(bad) or (res.stderr.strip() or res.stdout.strip())[-500:]))
    return sorted(ln.split()[0] for ln in lines)
