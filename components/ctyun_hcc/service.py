"""`SlurmService`: the vLLM replica as a Slurm job, gated on a real answer (dynamic resource).

Type `pulumi-python:dynamic/ctyun:SlurmService`. Over SSH to the master:

- create: checks the accelerators answer on every node (`npu-smi info`, input `preflight`) and
  that the nodes reach each other on the replica's ports (`preflight.sh`: the DP RPC port, the
  model port, Slurm's; health.py), runs the vLLM head on `headHost` (the master, which has the
  public address) when it is in the allocation, reads the partition's GRES from the cluster
  (`gpu` or `npu`, never assumed; none requested where the nodes declare none),
  writes the rendered `srun.sh`/`node.sh`/`check.sh`, the API key file (root-only, value on
  stdin) and, with a key, kimi-k3's API-key guard `api-guard/kk3_api_guard.py` (input
  `apiGuardPy`; root-only dir and file: node.sh bind-mounts it read-only for vLLM's
  `--middleware`, so nobody else may swap it), adopts a running job this stack submitted with
  the same launch fingerprint (an interrupted `pulumi up`), `sbatch --requeue`s (a node failure
  requeues the job instead of ending it), then waits, within `startupTimeoutS` (the plan's
  cold-start budget), for `/health`, then `/v1/models`, then a real chat completion, and starts
  the resume watchdog on the master (`watchdog.sh`: nodes that stopped answering or rebooted go
  back to service). When a step stopped the service for a resize (resize.py), the downtime is
  reported (`downtimeS`). A job that ends during start-up fails the create with its log tail,
  after making sure no Apptainer instance is left on its nodes;
- a changed launch spec (scripts, port, model name, key, node count) replaces the job: cancel
  first, then submit (`delete_before_replace`): two replicas never fight for the same NPUs;
  `kimi-k3:replicas` lowered to 1 moves replica 0 back to `kimi-k3:port`, which this stack's
  router front on the master still holds until the end of the update: the create stops that
  router first (router_service.stop_superseded_router);
- diff: a job Slurm no longer runs is a change, so a plain `pulumi up` (no --refresh) submits it
  again; read: such a job is reported gone;
- delete: stop the watchdog, `scancel` the job whose id is in the state, wait until it is over,
  stop its Apptainer instance (`<job name>-<job id>`) where one is left on nodes a step can
  reach; what could not be stopped (an unreachable master, a down node) is said, and the
  teardown goes on: deleting the cluster ends the job. A node this stack's own shrink removed
  (resize.record_removed) is not named: its job was stopped before it went.

Which jobs are ours: the one in the state, and (only to resume an interrupted run) a job of the
SSH user, with our job name and a comment `kk3:<ownerTag>:<fingerprint>` carrying this stack's
owner tag (the program passes `kimi-k3:<project>/<stack>`). Other jobs on the partition, even
ones called kimi-k3, are never adopted, cancelled or touched.

Outputs: `endpoint` (public address when node 0 is the master, else node 0's cluster address),
`jobId`, `nodes`, `node0Addr`, `gresName`, `readySeconds`, `downtimeS`.
"""

from __future__ import annotations

import hashlib
import json
import time
from typing import Any, Dict, List, Mapping, Optional

import pulumi
import pulumi.dynamic

from ..inference.quoting import shell_word
from .scripts import API_GUARD_FILE, ENDPOINT_LINE_RE
from ..dynamic.provider import redacted_logger
from ..progress.record import STEERING_INPUTS, current_phase
from .health import ensure_watchdog, net_preflight, stop_watchdog
from .resize import ServiceJobs, job_owner as owner_prefix, mark_stopped, removed_nodes, \
    stop_service_for, take_stop_mark
from .slurm_jobs import ACTIVE, NOT_IN_PARTITION, JobFailed, cancel, check_startable, gres_counts, job, \
    jobs_named, log_tail, node_states, partition_nodes, preflight, split_usable, stop_instances, \
    submit
from .router_service import stop_superseded_router
from .reach import MasterUnreachable
from .ssh import SshRunner, remote_errors
from .ssh_resource import SECRET_OUTPUTS, STATS, SSH_INPUTS, SshStepProvider

log = redacted_logger("kimi_k3.ctyun.service")

STEP_INPUTS: Dict[str, Any] = {
    "workDir": "/home/kimi-k3", "jobName": "kimi-k3", "partition": "batch",
    "srunSh": "", "nodeSh": "", "checkSh": "", "apiGuardPy": "", "launchFingerprint": "",
    "devicesPerNode": 16, "port": 11025, "servedModelName": "Kimi-K3", "apiKey": "", "hfToken": "",
    "headHost": "", "publicHost": "", "publicInnerIp": "", "preflight": "npu-smi info",
    "nodeCount": 0, "startupTimeoutS": 7200, "pollIntervalS": 10,
    "cancelTimeoutS": 300, "ownerTag": "",
    # day two (issue 19): the network preflight (preflight.sh, the DP RPC port), the resume
    # watchdog (watchdog.sh) and `sbatch --requeue`, so a node failure is recovered by Slurm
    "preflightSh": "", "watchdogSh": "", "rpcPort": 13389, "requeue": True,
    "preflightWaitS": 30,
    # every replica's job name, replica 0's first (target.service_job_names): a job of this
    # stack's replica no longer declared is stopped before this one submits (steering: its
    # change alone is no change of this replica)
    "serviceJobNames": [],
}
#: what makes a different replica: a change means cancel, then submit
REPLACE_KEYS = ("workDir", "jobName", "partition", "srunSh", "nodeSh", "checkSh", "apiGuardPy",
                "launchFingerprint", "devicesPerNode", "port", "servedModelName", "apiKey",
                "hfToken", "headHost", "ownerTag")


def job_owner(p: Mapping[str, Any]) -> str:
    """The comment prefix that marks a job as submitted by this stack (`kk3:<ownerTag>:`)."""
    return owner_prefix(str(p.get("ownerTag") or ""))


def fingerprint(spec_dict: Dict[str, Any]) -> str:
    """Short stable hash of a launch spec (what `sbatch --comment` carries)."""
    return hashlib.sha256(json.dumps(spec_dict, sort_keys=True).encode()).hexdigest()[:16]


def endpoint_host(runner: SshRunner, work_dir: str, job_id: str, run: int) -> Optional[str]:
    """Node 0's address from the job's log: the LAST endpoint line (the log is appended to
    across requeues, scripts.ENDPOINT_LINE_RE), or None while that line is not run `run`'s
    (the requeued script has not printed its own yet) or there is none. A line without a run
    count (an srun.sh from before the append, which truncated its log at each start) is the
    current run's."""
    out = runner.run(f"grep -a '^endpoint: http://' "
                     f"{shell_word(f'{work_dir}/logs/job_{job_id}.out')} 2>/dev/null "
                     "| tail -n 1 || true", label="endpoint line")
    m = ENDPOINT_LINE_RE.match(out.stdout.strip())
    return m.group(1) if m and (m.group(2) is None or int(m.group(2)) == run) else None


class SlurmServiceProvider(SshStepProvider):
    PROGRESS_PHASE = "vllm-start"  # progress: from submit to a real chat answer
    PROGRESS_WAITING = "Slurm job {jobName} to start and vLLM to pass /health, /v1/models, a chat on port {port}"
    STEP_INPUTS = STEP_INPUTS
    REPLACE_KEYS = REPLACE_KEYS
    DELETE_BEFORE_REPLACE = True

    SECRET_INPUTS = ("apiKey", "hfToken")
    STEERING_KEYS = SshStepProvider.STEERING_KEYS + ("serviceJobNames",)

    def resource_id(self, p, outs):
        return f"{p['sshHost']}:{p['workDir']}:job-{outs['jobId']}"

    def progress_phase(self, p) -> str:
        """`vllm-start` for replica 0 (the single replica's), `vllm-start-r<i>` for replica i:
        the replicas start side by side, and under one name their records would mix into one
        wait in `status` (the first replica's `done` ending a wait another still runs).
        Replica i is the i-th of `serviceJobNames` (target.py: every replica's job, replica 0
        first)."""
        names = list(p.get("serviceJobNames") or [])
        i = names.index(p.get("jobName")) if p.get("jobName") in names else 0
        return self.PROGRESS_PHASE + (f"-r{i}" if i else "")

    # ---- create ---------------------------------------------------------------------------
    def apply(self, runner: SshRunner, p: Dict[str, Any]) -> Dict[str, Any]:
        started = time.monotonic()
        deadline = started + float(p["startupTimeoutS"])
        wd, name = p["workDir"], p["jobName"]
        gres = self._gres(runner, p)
        self._write_files(runner, p)
        if stop_superseded_router(runner, wd, int(p["port"])):  # replicas lowered to 1
            log.warning("stopped this stack's router on the master: its front held port %s, "
                        "which the single replica serves on now", p["port"])
        if p.get("serviceJobNames"):  # replicas lowered: their jobs would hold nodes until the
            # end of the update (Pulumi deletes their services last); this job may need them
            stop_service_for(runner, ServiceJobs(tuple(p["serviceJobNames"]), p["ownerTag"], wd,
                                                 p.get("sshUser")), [], "a replica the stack "
                             "keeps", time.monotonic() + float(p["cancelTimeoutS"]),
                             float(p["pollIntervalS"]))
        tag = f"{job_owner(p)}{p['launchFingerprint']}"
        job_id = self._adopt(runner, p, tag)
        if job_id is None:
            job_id = self._submit(runner, p, tag, gres)
        try:
            info, node0 = self._wait_ready(runner, p, job_id, deadline)
        except Exception:
            self._fail_cleanup(runner, p, job_id)
            raise
        if p.get("watchdogSh"):  # from now on a node that fails or reboots comes back by itself
            ensure_watchdog(runner, wd, name)
        public = p.get("publicHost") and node0 == p.get("publicInnerIp")
        host = p["publicHost"] if public else node0
        down = take_stop_mark(runner, wd)
        downtime = round(down[1], 1) if down else None
        if down:  # progress and the user: how long the endpoint was down (resize, replace)
            current_phase().update(f"Slurm job {job_id} serving again after {downtime} s down "
                                   f"({down[0].why}, job {down[0].job_id})")
            log.warning("the service was down for %.1f s (%s, Slurm job %s); job %s serves "
                        "again", downtime, down[0].why, down[0].job_id, job_id)
        return {"jobId": job_id, "nodes": list(info.nodes), "node0Addr": node0,
                "gresName": gres, "endpoint": f"http://{host}:{int(p['port'])}/v1",
                "readySeconds": round(time.monotonic() - started, 1), "downtimeS": downtime}

    def _write_files(self, runner: SshRunner, p) -> None:
        """The job's scripts, the API-key guard and the secrets files in the work dir."""
        wd = p["workDir"]
        runner.run(f"mkdir -p {shell_word(wd + '/logs')}", label="mkdir work dir")
        for script in ("srunSh", "nodeSh", "checkSh", "preflightSh", "watchdogSh"):
            if p.get(script) or script in ("srunSh", "nodeSh", "checkSh"):
                runner.upload(f"{wd}/{script[:-2]}.sh", p[script], 0o755)
        if p.get("apiGuardPy"):  # vLLM imports it as root: root-only, like the secrets
            runner.write_private(f"{wd}/{API_GUARD_FILE}", p["apiGuardPy"],
                                 label="write the API-key guard")
        for env_name, key in (("VLLM_API_KEY", "apiKey"), ("HF_TOKEN", "hfToken")):
            if p.get(key):  # node.sh reads these root-only files; the values go on stdin
                runner.write_secret(f"{wd}/secrets/{env_name}", p[key])

    def _adopt(self, runner: SshRunner, p, tag: str) -> Optional[str]:
        """The id of this stack's active job with exactly this launch spec (an interrupted
        `pulumi up` submitted it), or None; this stack's jobs with another spec are cancelled.
        Jobs without this stack's owner comment are never touched."""
        owner, job_id = job_owner(p), None
        for jid, state, comment in jobs_named(runner, p["jobName"], user=p["sshUser"]):
            if not comment.startswith(owner):
                continue  # not submitted by this stack: never ours to adopt or cancel
            if comment == tag and state in ACTIVE and job_id is None:
                job_id = jid  # an earlier, interrupted run submitted exactly this: adopt it
                log.info("adopting Slurm job %s (%s) with the same launch spec", jid, state)
            else:  # this stack's own job from an interrupted run with another launch spec
                log.info("cancelling Slurm job %s, submitted by this stack for another launch "
                         "spec (%s)", jid, comment)
                if state in ACTIVE:
                    mark_stopped(runner, p["workDir"], jid, "replaced by a new launch spec")
                cancel(runner, jid, time.monotonic() + float(p["cancelTimeoutS"]),
                       float(p["pollIntervalS"]))
        return job_id

    def _gres(self, runner: SshRunner, p) -> str:
        """The GRES name to request (`--gres=<name>:<devices>`), or "" where the partition's
        nodes declare none; an error when they declare fewer devices than the plan uses."""
        counts = gres_counts(runner, p["partition"])
        name = next((g for g in ("npu", "gpu") if g in counts), sorted(counts)[0] if counts else "")
        want = int(p["devicesPerNode"])
        if name and counts[name] and counts[name] < want:
            raise JobFailed(f"the nodes of partition {p['partition']} declare GRES {name}:"
                            f"{counts[name]}, fewer than the {want} devices per node the plan "
                            "uses")
        return name

    def _submit(self, runner: SshRunner, p, tag: str, gres: str) -> str:
        """The checks that need the nodes free, then `sbatch`; returns the new job's id."""
        nodes = int(p.get("nodeCount") or 0)
        if p.get("preflight") and nodes > 0:
            # only before a new submission: an adopted job already holds the nodes
            preflight(runner, p["partition"], nodes, p["preflight"])
        if p.get("preflightSh") and nodes > 1:
            net_preflight(runner, p["workDir"], p.get("headHost") or "", nodes,
                          int(p["rpcPort"]), int(p["port"]), int(p["preflightWaitS"]))
        args = ["--comment", tag]
        if p.get("requeue"):  # a node failure requeues the job (PENDING), not NODE_FAIL
            args.append("--requeue")
        if gres:
            args.append(f"--gres={gres}:{int(p['devicesPerNode'])}")
        export = {"KK3_HEAD_HOST": p["headHost"]} if p.get("headHost") else None
        job_id = submit(runner, p["workDir"], "srun.sh", tuple(args), export=export)
        log.info("submitted Slurm job %s", job_id)
        return job_id

    def _check(self, runner: SshRunner, p, url: str, what: str) -> bool:
        res = runner.run(f"{shell_word(p['workDir'] + '/check.sh')} {shell_word(url)} "
                         f"{shell_word(what)}",
                         check=False, timeout_s=120, label=f"check.sh {what}")
        return res.code == 0

    def _wait_ready(self, runner: SshRunner, p, job_id: str, deadline: float):
        """Poll job state and the three gates in order; raise JobFailed/TimeoutError."""
        interval = float(p["pollIntervalS"])
        wd = p["workDir"]
        gates = ["health", "models", "chat"]
        node0 = None
        info = None
        restarts = None
        while True:
            info = job(runner, job_id)
            if restarts is not None and info.restarts != restarts:
                # requeued after a node failed: the batch script starts over, so do the gates
                log.warning("Slurm job %s was requeued (restart %d); waiting for it again",
                            job_id, info.restarts)
                node0, gates = None, ["health", "models", "chat"]
            restarts = info.restarts
            current_phase().update(f"Slurm job {job_id} {info.state}"  # progress
                                   + (f" on {','.join(info.nodes)}; next: {gates[0]}" if info.nodes else ""))
            check_startable(info)
            if info.state not in ACTIVE:
                tail = log_tail(runner, f"{wd}/logs", [f"job_{job_id}.*", f"node_{job_id}.*"])
                raise JobFailed(f"Slurm job {job_id} ended during start-up ({info.state}"
                                f"{', ' + info.reason if info.reason not in ('', 'None') else ''})"
                                f"; log tail:\n{tail}")
            if info.state == "RUNNING" and node0 is None:
                node0 = endpoint_host(runner, wd, job_id, info.restarts)
            while node0 and gates and self._check(runner, p, f"http://{node0}:{int(p['port'])}",
                                                   gates[0]):
                log.info("job %s: %s passed", job_id, gates.pop(0))
            if not gates:
                return info, node0
            if time.monotonic() + interval > deadline:
                tail = log_tail(runner, f"{wd}/logs", [f"job_{job_id}.*", f"node_{job_id}.*"])
                raise TimeoutError(
                    f"Slurm job {job_id} ({info.state}) not ready within {p['startupTimeoutS']} s"
                    f" (waiting for {gates[0]}); log tail:\n{tail}")
            time.sleep(interval)
            STATS["poll_wait_s"] += interval

    def _fail_cleanup(self, runner: SshRunner, p, job_id: str) -> None:
        """After a failed start: no job, no instance left behind."""
        try:
            undone = self.remove(runner, {**p, "jobId": job_id})
        except Exception as e:  # the original error matters more; say what is left
            undone = [str(e)]
        if undone:
            log.warning("cleanup after failed start of job %s incomplete: %s", job_id,
                        "; ".join(undone))

    # ---- refresh / delete -------------------------------------------------------------------
    def read(self, id_, props):
        p = self.inputs(props)

        job_id = str(props.get("jobId") or "")
        if not job_id.isdigit():
            return pulumi.dynamic.ReadResult(None, {})

        def observe(runner, p):
            return job(runner, job_id)

        try:
            info = self._run(observe, p)
        except MasterUnreachable as e:  # kept: see SshStepProvider.read
            log.warning("refresh of the Slurm job %s kept as recorded: %s", job_id, e)
            return pulumi.dynamic.ReadResult(id_, props)
        if info.state not in ACTIVE:
            return pulumi.dynamic.ReadResult(None, {})  # gone: the next `up` submits again
        return pulumi.dynamic.ReadResult(id_, {**props,
                                               "nodes": list(info.nodes) or props.get("nodes")})

    # ---- a dead service is noticed by a plain `pulumi up` (no --refresh) -------------------
    def live_state(self, props) -> str:
        """The state Slurm reports for the job in `props` now: a JobState, GONE, or UNKNOWN
        when the master cannot be asked (then nothing is concluded from it)."""
        job_id = str(props.get("jobId") or "")
        if not job_id.isdigit():
            return "GONE"
        def ask(runner, p):
            info = job(runner, job_id)
            if info.state == "PENDING" and info.restarts:
                waiting_for_nodes(runner, p, info, list(props.get("nodes") or []))
            return info.state
        try:
            return self._run(ask, self.inputs(props))
        except remote_errors() as e:
            log.warning("could not ask the master whether Slurm job %s still runs (%s: %s); "
                        "assuming it does", job_id, type(e).__name__, e)
            return "UNKNOWN"

    def diff(self, id_, olds, news):
        """As for every step, plus: a job that no longer runs (ended, cancelled by hand,
        NODE_FAIL without requeue) is a change, so `pulumi up` submits it again (update)."""
        base = super().diff(id_, olds, news)
        if base.replaces or base.changes:
            return base
        state = self.live_state(olds)
        if state in ACTIVE or state == "UNKNOWN":
            return base
        log.warning("Slurm job %s of this service is %s: `pulumi up` submits it again",
                    olds.get("jobId"), state)
        return pulumi.dynamic.DiffResult(changes=True, replaces=[],
                                         delete_before_replace=self.DELETE_BEFORE_REPLACE)

    def update(self, id_, olds, news):
        o, n = self.inputs(olds), self.inputs(news)
        changed = any(o.get(k) != n.get(k) for k in STEP_INPUTS
                      if k not in STEERING_INPUTS and k not in self.STEERING_KEYS)
        if changed or self.live_state(olds) not in ACTIVE | {"UNKNOWN"}:
            outs = self._apply(n)  # adopts the running job, or submits a new one
        else:  # only how we reach the cluster changed: keep the job
            outs = {k: v for k, v in olds.items() if k not in n}
        return pulumi.dynamic.UpdateResult({**n, **outs})

    def remove(self, runner: SshRunner, p: Dict[str, Any]) -> List[str]:
        """Cancel the job, then stop its instance where one is left, on the nodes a step can
        reach. Returns what could not be done (empty when everything was stopped)."""
        job_id = str(p.get("jobId") or "")
        if not job_id.isdigit():
            return []  # nothing of ours was submitted
        instance = f"{p['jobName']}-{job_id}"
        info = job(runner, job_id)
        nodes = list(info.nodes or p.get("nodes") or partition_nodes(runner, p["partition"]))
        undone: List[str] = []
        if p.get("watchdogSh"):
            stop_watchdog(runner, p["workDir"], p["jobName"])
        if info.state in ACTIVE:  # the downtime of a replacement starts here
            mark_stopped(runner, p["workDir"], job_id, "the service was replaced or removed")
        try:
            cancel(runner, job_id, time.monotonic() + float(p["cancelTimeoutS"]),
                   float(p["pollIntervalS"]))
        except (TimeoutError, JobFailed):  # a node that does not answer keeps it COMPLETING
            undone.append(f"Slurm job {job_id} was cancelled but had not ended after "
                          f"{p['cancelTimeoutS']} s")
        usable, others = split_usable(node_states(runner, p["partition"]), nodes)
        gone = {n for n, why in others.items() if why == NOT_IN_PARTITION}
        ours = sorted(gone & removed_nodes(runner, p["workDir"])) if gone else []
        if ours:  # this stack's shrink removed them (resize.record_removed): nothing is there
            log.info("not checked for instance %s: %s, removed by this stack's shrink",
                     instance, ", ".join(ours))
            for n in ours:
                del others[n]
        if others:
            undone.append(f"instance {instance} not checked on "
                          + ", ".join(f"{n} ({why})" for n, why in sorted(others.items())))
        leftover = stop_instances(runner, p["partition"], instance, usable)
        if leftover:
            log.info("stopped the job's leftover instance: %s", leftover)
        return undone

    def delete(self, id_, props):
        """Stop the job; when the master or a node cannot be reached, say what was left and
        let the teardown go on: deleting the cluster ends the job, and a later `pulumi up` on a
        cluster that stays cancels this stack's stale jobs before it submits (`apply`)."""
        p = {**self.inputs(props), "jobId": props.get("jobId"),
             "nodes": list(props.get("nodes") or [])}
        job_id = str(p.get("jobId") or "")
        if not job_id.isdigit():
            return  # nothing of ours was submitted: no connection at all
        try:
            undone = self._run(self.remove, p)
        except remote_errors() as e:
            undone = [f"Slurm job {job_id} not stopped: {type(e).__name__}: {e}"]
        if undone:
            log.warning("%s: %s. It ends when the cluster is deleted; if the cluster stays, "
                        "`scancel %s` on the master (a later `pulumi up` also cancels it)",
                        p["sshHost"], "; ".join(undone), job_id)


def waiting_for_nodes(runner: SshRunner, p: Mapping[str, Any], info, nodes: List[str]) -> List[str]:
    """A requeued job that waits (a node failed under it): name the nodes of its last run that
    cannot take it now and say what to do, since `pulumi up` sees a job Slurm still holds and
    changes nothing (the endpoint is down meanwhile). The resume watchdog returns a node once
    its slurmd answers; a node that never comes back (a failed server) must leave the cluster
    in CTyun's console, after which `pulumi refresh` sees one node less and `pulumi up`
    expands back to `kimi-k3:nodes` (bootstrap on the new node only) and resubmits the job.
    Returns the lines it logged."""
    _, others = split_usable(node_states(runner, p["partition"]), nodes)
    if not others:
        return []
    down = ", ".join(f"{n} ({why})" for n, why in sorted(others.items()))
    line = (f"Slurm job {info.job_id} of this service was requeued {info.restarts} time(s) and "
            f"waits (reason {info.reason or 'none given'}): {down} cannot run it, so the "
            "endpoint is down. The resume watchdog on the master returns a node once its "
            "slurmd answers again; if it does not come back (a failed server), remove it from "
            "the cluster in CTyun's console (E-HPC, the cluster's nodes), then `pulumi refresh` "
            "and `pulumi up`: the cluster is expanded back to kimi-k3:nodes and the job "
            "resubmitted")
    log.warning("%s", line)
    return [line]


class SlurmService(pulumi.dynamic.Resource, module="ctyun", name="SlurmService"):
    """The serving job; see the module docstring. Inputs: SSH_INPUTS + STEP_INPUTS."""

    endpoint: pulumi.Output[str]
    jobId: pulumi.Output[str]
    nodes: pulumi.Output[list]

    def __init__(self, resource_name: str, inputs: Dict[str, Any],
                 opts: Optional[pulumi.ResourceOptions] = None):
        props = {**{k: None for k in {**SSH_INPUTS, **STEP_INPUTS}}, **inputs,
                 "endpoint": None, "jobId": None, "nodes": None, "node0Addr": None,
                 "gresName": None, "readySeconds": None, "downtimeS": None}
        opts = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(
            additional_secret_outputs=SECRET_OUTPUTS + ["apiKey", "hfToken"]))
        super().__init__(SlurmServiceProvider(), resource_name, props, opts)
