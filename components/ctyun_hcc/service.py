"""`SlurmService`: the vLLM replica as a Slurm job, gated on a real answer (dynamic resource).

Type `pulumi-python:dynamic/ctyun:SlurmService`. Over SSH to the master:

- create: checks the accelerators answer on every node (`npu-smi info`, input `preflight`),
  runs the vLLM head on `headHost` (the master, which has the public address) when
  it is in the allocation, reads the partition's GRES name from the cluster (`gpu` or `npu`, never assumed),
  writes the rendered `srun.sh`/`node.sh`/`check.sh`, the API key file (root-only, value on
  stdin) and, with a key, kimi-k3's API-key guard `api-guard/kk3_api_guard.py` (input
  `apiGuardPy`; root-only dir and file: node.sh bind-mounts it read-only for vLLM's
  `--middleware`, so nobody else may swap it), adopts a running job this stack submitted with the same launch fingerprint (an
  interrupted `pulumi up`), `sbatch`es, then waits, within `startupTimeoutS` (the
  plan's cold-start budget), for `/health`, then `/v1/models`, then a real chat completion.
  A job that ends during start-up fails the create with its log tail, after making sure no
  Apptainer instance is left on its nodes;
- a changed launch spec (scripts, port, model name, key) replaces the job: cancel first, then
  submit (`delete_before_replace`): two replicas never fight for the same NPUs;
- read: a job Slurm no longer runs is reported gone, so the next `up` submits again;
- delete: `scancel` the job whose id is in the state, wait until it is over, stop its
  Apptainer instance (`<job name>-<job id>`) if one is left.

Which jobs are ours: the one in the state, and (only to resume an interrupted run) a job of the
SSH user, with our job name and a comment `kk3:<ownerTag>:<fingerprint>` carrying this stack's
owner tag (the program passes `kimi-k3:<project>/<stack>`). Other jobs on the partition, even
ones called kimi-k3, are never adopted, cancelled or touched.

Outputs: `endpoint` (public address when node 0 is the master, else node 0's cluster address),
`jobId`, `nodes`, `node0Addr`, `gresName`, `readySeconds`.
"""

from __future__ import annotations

import hashlib
import json
import time
from typing import Any, Dict, Mapping, Optional

import pulumi
import pulumi.dynamic

from ..inference.quoting import shell_word
from .scripts import API_GUARD_FILE
from ..dynamic.provider import redacted_logger
from ..progress.record import current_phase
from .slurm_jobs import ACTIVE, JobFailed, cancel, check_startable, gres_name, job, jobs_named, \
    log_tail, partition_nodes, preflight, stop_instances, submit
from .ssh import SshRunner
from .ssh_resource import SECRET_OUTPUTS, STATS, SSH_INPUTS, SshStepProvider

log = redacted_logger("kimi_k3.ctyun.service")

STEP_INPUTS: Dict[str, Any] = {
    "workDir": "/home/kimi-k3", "jobName": "kimi-k3", "partition": "batch",
    "srunSh": "", "nodeSh": "", "checkSh": "", "apiGuardPy": "", "launchFingerprint": "",
    "devicesPerNode": 16, "port": 11025, "servedModelName": "Kimi-K3", "apiKey": "", "hfToken": "",
    "headHost": "", "publicHost": "", "publicInnerIp": "", "preflight": "npu-smi info",
    "nodeCount": 0, "startupTimeoutS": 7200, "pollIntervalS": 10,
    "cancelTimeoutS": 300, "ownerTag": "",
}
#: what makes a different replica: a change means cancel, then submit
REPLACE_KEYS = ("workDir", "jobName", "partition", "srunSh", "nodeSh", "checkSh", "apiGuardPy",
                "launchFingerprint", "devicesPerNode", "port", "servedModelName", "apiKey",
                "hfToken", "headHost", "ownerTag")


def job_owner(p: Mapping[str, Any]) -> str:
    """The comment prefix that marks a job as submitted by this stack (`kk3:<ownerTag>:`)."""
    tag = "".join(c for c in str(p.get("ownerTag") or "") if c.isalnum() or c in "._/-")
    return f"kk3:{tag}:"


def fingerprint(spec_dict: Dict[str, Any]) -> str:
    """Short stable hash of a launch spec (what `sbatch --comment` carries)."""
    return hashlib.sha256(json.dumps(spec_dict, sort_keys=True).encode()).hexdigest()[:16]


class SlurmServiceProvider(SshStepProvider):
    PROGRESS_PHASE = "vllm-start"  # progress: from submit to a real chat answer
    PROGRESS_WAITING = "Slurm job {jobName} to start and vLLM to pass /health, /v1/models, a chat on port {port}"
    STEP_INPUTS = STEP_INPUTS
    REPLACE_KEYS = REPLACE_KEYS
    DELETE_BEFORE_REPLACE = True

    SECRET_INPUTS = ("apiKey", "hfToken")

    def resource_id(self, p, outs):
        return f"{p['sshHost']}:{p['workDir']}:job-{outs['jobId']}"

    # ---- create ---------------------------------------------------------------------------
    def apply(self, runner: SshRunner, p: Dict[str, Any]) -> Dict[str, Any]:
        started = time.monotonic()
        deadline = started + float(p["startupTimeoutS"])
        wd, name = p["workDir"], p["jobName"]
        gres = gres_name(runner, p["partition"])
        runner.run(f"mkdir -p {shell_word(wd + '/logs')}", label="mkdir work dir")
        runner.upload(f"{wd}/srun.sh", p["srunSh"], 0o755)
        runner.upload(f"{wd}/node.sh", p["nodeSh"], 0o755)
        runner.upload(f"{wd}/check.sh", p["checkSh"], 0o755)
        if p.get("apiGuardPy"):  # vLLM imports it as root: root-only, like the secrets
            runner.write_private(f"{wd}/{API_GUARD_FILE}", p["apiGuardPy"],
                                 label="write the API-key guard")
        for env_name, key in (("VLLM_API_KEY", "apiKey"), ("HF_TOKEN", "hfToken")):
            if p.get(key):  # node.sh reads these root-only files; the values go on stdin
                runner.write_secret(f"{wd}/secrets/{env_name}", p[key])
        owner = job_owner(p)
        tag = f"{owner}{p['launchFingerprint']}"
        job_id = None
        for jid, state, comment in jobs_named(runner, name, user=p["sshUser"]):
            if not comment.startswith(owner):
                continue  # not submitted by this stack: never ours to adopt or cancel
            if comment == tag and state in ACTIVE and job_id is None:
                job_id = jid  # an earlier, interrupted run submitted exactly this: adopt it
                log.info("adopting Slurm job %s (%s) with the same launch spec", jid, state)
            else:  # this stack's own job from an interrupted run with another launch spec
                log.info("cancelling Slurm job %s, submitted by this stack for another launch "
                         "spec (%s)", jid, comment)
                cancel(runner, jid, time.monotonic() + float(p["cancelTimeoutS"]),
                       float(p["pollIntervalS"]))
        if job_id is None:
            if p.get("preflight") and int(p.get("nodeCount") or 0) > 0:
                # only before a new submission: an adopted job already holds the nodes
                preflight(runner, p["partition"], int(p["nodeCount"]), p["preflight"])
            args = ["--comment", tag]
            if gres:
                args.append(f"--gres={gres}:{int(p['devicesPerNode'])}")
            export = {"KK3_HEAD_HOST": p["headHost"]} if p.get("headHost") else None
            job_id = submit(runner, wd, "srun.sh", tuple(args), export=export)
            log.info("submitted Slurm job %s", job_id)
        try:
            info, node0 = self._wait_ready(runner, p, job_id, deadline)
        except Exception:
            self._fail_cleanup(runner, p, job_id)
            raise
        public = p.get("publicHost") and node0 == p.get("publicInnerIp")
        host = p["publicHost"] if public else node0
        return {"jobId": job_id, "nodes": list(info.nodes), "node0Addr": node0,
                "gresName": gres, "endpoint": f"http://{host}:{int(p['port'])}/v1",
                "readySeconds": round(time.monotonic() - started, 1)}

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
        while True:
            info = job(runner, job_id)
            current_phase().update(f"Slurm job {job_id} {info.state}"  # progress
                                   + (f" on {','.join(info.nodes)}; next: {gates[0]}" if info.nodes else ""))
            check_startable(info)
            if info.state not in ACTIVE:
                tail = log_tail(runner, f"{wd}/logs", [f"job_{job_id}.*", f"node_{job_id}.*"])
                raise JobFailed(f"Slurm job {job_id} ended during start-up ({info.state}"
                                f"{', ' + info.reason if info.reason not in ('', 'None') else ''})"
                                f"; log tail:\n{tail}")
            if info.state == "RUNNING" and node0 is None:
                out = runner.run("grep -o 'endpoint: http://[^ ]*' "
                                 f"{shell_word(f'{wd}/logs/job_{job_id}.out')} 2>/dev/null "
                                 "|| true", label="endpoint line")
                if out.stdout.strip():
                    node0 = out.stdout.split("//", 1)[1].split(":", 1)[0]
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
            cancel(runner, job_id, time.monotonic() + float(p["cancelTimeoutS"]),
                   float(p["pollIntervalS"]))
            stop_instances(runner, p["partition"], f"{p['jobName']}-{job_id}",
                           partition_nodes(runner, p["partition"]))
        except Exception as e:  # the original error matters more; say what is left
            log.warning("cleanup after failed start of job %s incomplete: %s", job_id, e)

    # ---- refresh / delete -------------------------------------------------------------------
    def read(self, id_, props):
        p = self.inputs(props)

        job_id = str(props.get("jobId") or "")
        if not job_id.isdigit():
            return pulumi.dynamic.ReadResult(None, {})

        def observe(runner, p):
            return job(runner, job_id)

        info = self._run(observe, p)
        if info.state not in ACTIVE:
            return pulumi.dynamic.ReadResult(None, {})  # gone: the next `up` submits again
        return pulumi.dynamic.ReadResult(id_, {**props, "nodes": list(info.nodes)})

    def remove(self, runner: SshRunner, p: Dict[str, Any]) -> None:
        job_id = str(p.get("jobId") or "")
        if not job_id.isdigit():
            return  # nothing of ours was submitted
        cancel(runner, job_id, time.monotonic() + float(p["cancelTimeoutS"]),
               float(p["pollIntervalS"]))
        leftover = stop_instances(runner, p["partition"], f"{p['jobName']}-{job_id}",
                                  partition_nodes(runner, p["partition"]))
        if leftover:
            log.info("stopped the job's leftover instance: %s", leftover)

    def delete(self, id_, props):
        p = {**self.inputs(props), "jobId": props.get("jobId")}
        self._run(self.remove, p)


class SlurmService(pulumi.dynamic.Resource, module="ctyun", name="SlurmService"):
    """The serving job; see the module docstring. Inputs: SSH_INPUTS + STEP_INPUTS."""

    endpoint: pulumi.Output[str]
    jobId: pulumi.Output[str]
    nodes: pulumi.Output[list]

    def __init__(self, resource_name: str, inputs: Dict[str, Any],
                 opts: Optional[pulumi.ResourceOptions] = None):
        props = {**{k: None for k in {**SSH_INPUTS, **STEP_INPUTS}}, **inputs,
                 "endpoint": None, "jobId": None, "nodes": None, "node0Addr": None,
                 "gresName": None, "readySeconds": None}
        opts = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(
            additional_secret_outputs=SECRET_OUTPUTS + ["apiKey", "hfToken"]))
        super().__init__(SlurmServiceProvider(), resource_name, props, opts)
