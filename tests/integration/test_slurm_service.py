"""SlurmService against the real local sshd + 4-node Slurm, with Apptainer and vLLM as doubles.

Head and workers start on four different hosts (network namespaces); the workers really connect
to the head's data-parallel address, and the head answers only once all of them have. Covers a
full create -> ready -> update (in place, then replace) -> delete, a job that dies during start-up
(error with its log tail, nothing left running), and a changed host key.
"""

import json
from pathlib import Path

import dill
import pytest
import requests

from components.ctyun_hcc.service import SlurmServiceProvider
from components.ctyun_hcc.slurm_jobs import JobFailed
from components.ctyun_hcc.ssh import HostKeyChanged
from components.ctyun_hcc.ssh_resource import STATS
from tests.integration.slurm_env import (
    API_KEY,
    HF_TOKEN,
    doubles_calls,
    instances,
    no_leftovers,
    ROOT,
    prepare,
    squeue_names,
)

#: the key of a `pulumi config set --secret kimi-k3:apiKey NEW` (day two)
NEW_API_KEY = "sk-kk3-test-rotated-5a0c9d31"


def test_provider_pickles_without_state():
    blob = dill.dumps(SlurmServiceProvider())
    assert isinstance(dill.loads(blob), SlurmServiceProvider)


def test_create_ready_update_replace_delete(services, workspace):
    prov = SlurmServiceProvider()
    props = prepare(services, workspace, api_key=True, hf_token=True)
    trips0 = STATS["round_trips"]
    created = prov.create(props)
    out = created.outs
    assert out["endpoint"] == "http://127.0.0.1:11025/v1"  # node 0 is the master: public address
    assert out["node0Addr"] == "10.77.0.10"
    assert out["nodes"] == ["kk3n0", "kk3n1", "kk3n2", "kk3n3"]
    assert out["gresName"] == "gpu"  # read from the cluster
    job_id = out["jobId"]
    assert f"{job_id} kimi-k3 RUNNING" in squeue_names()

    # head and workers on four hosts; every worker joined the head over TCP
    calls = doubles_calls(services, "vllm")  # read once: the log holds the whole session's
    vllm = [c for c in calls if c["t"] >= min(c2["t"] for c2 in calls[-4:])]
    assert sorted(c["host"] for c in vllm[-4:]) == ["kk3n0", "kk3n1", "kk3n2", "kk3n3"]
    log0 = Path(props["workDir"], "logs", f"node_{job_id}.0.out").read_text()
    assert "DP rank 1 joined from kk3n1" in log0 and "DP rank 3 joined from kk3n3" in log0
    # each node derived its own address and NIC (no eno0 anywhere on these hosts)
    log2 = Path(props["workDir"], "logs", f"node_{job_id}.2.out").read_text()
    assert "10.77.0.12 on eth5" in log2

    # the endpoint is real: key enforced, OpenAI shapes
    base = "http://10.77.0.10:11025"
    assert requests.get(f"{base}/v1/models", timeout=5).status_code == 401
    hdr = {"Authorization": f"Bearer {API_KEY}"}
    models = requests.get(f"{base}/v1/models", headers=hdr, timeout=5).json()
    assert models["data"][0]["id"] == "Kimi-K3"
    # kimi-k3's API-key guard: written root-only, bound into the instance, imported by vLLM's
    # --middleware from the instance's PYTHONPATH and applied: /invocations needs the key too
    guard = Path(props["workDir"], "api-guard", "kk3_api_guard.py")
    assert guard.read_text() == props["apiGuardPy"] and "class ApiKeyGuard" in guard.read_text()
    assert oct(guard.stat().st_mode & 0o777) == "0o600"
    assert oct(guard.parent.stat().st_mode & 0o777) == "0o700"
    assert guard.stat().st_uid == 0 and guard.parent.stat().st_uid == 0
    refused = requests.post(f"{base}/invocations", json={}, timeout=5)
    assert (refused.status_code, refused.content) == (401, b'{"error":"Unauthorized"}')
    assert requests.get(f"{base}/health", timeout=5).status_code == 200
    chat = {"model": "Kimi-K3", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4}
    assert requests.post(f"{base}/invocations", json=chat, headers=hdr, timeout=5).status_code == 200
    # the secret is only in its root-only file, never in scripts or logs
    secret = Path(props["workDir"], "secrets", "VLLM_API_KEY")
    token = Path(props["workDir"], "secrets", "HF_TOKEN")
    assert secret.read_text() == API_KEY and oct(secret.stat().st_mode & 0o777) == "0o600"
    assert token.read_text() == HF_TOKEN and oct(token.stat().st_mode & 0o777) == "0o600"
    for f in Path(props["workDir"]).rglob("*"):
        if f.is_file() and f not in (secret, token):
            text = f.read_text(errors="replace")
            assert API_KEY not in text and HF_TOKEN not in text, f

    # in-place update (only polling changed): the running job is adopted, not resubmitted
    news = {**props, "pollIntervalS": 2}
    d = prov.diff(created.id, out, news)
    assert d.changes and not d.replaces
    updated = prov.update(created.id, out, news).outs
    assert updated["jobId"] == job_id

    # a new API key alone replaces the job (docs/day-two.md "A new API key")
    d = prov.diff(created.id, updated, {**news, "apiKey": NEW_API_KEY})
    assert d.replaces == ["apiKey"] and d.delete_before_replace
    # a changed launch spec and a new key: cancel first, then submit with the new key file
    p2 = {**prepare(services, workspace, api_key=True, hf_token=True,
                    served_model_name="Kimi-K3-v2"), "apiKey": NEW_API_KEY}
    d = prov.diff(created.id, updated, p2)
    assert d.replaces and d.delete_before_replace
    prov.delete(created.id, updated)
    assert job_id not in squeue_names()
    assert all(not v for v in instances(services).values())
    replaced = prov.create(p2).outs
    assert replaced["jobId"] != job_id
    new_hdr = {"Authorization": f"Bearer {NEW_API_KEY}"}
    models = requests.get(f"{base}/v1/models", headers=new_hdr, timeout=5).json()
    assert models["data"][0]["id"] == "Kimi-K3-v2"
    # the old key is refused everywhere the new one is taken (vLLM's check and the guard's)
    assert requests.get(f"{base}/v1/models", headers=hdr, timeout=5).status_code == 401
    assert requests.post(f"{base}/invocations", json={**chat, "model": "Kimi-K3-v2"}, headers=hdr,
                         timeout=5).status_code == 401
    assert requests.post(f"{base}/invocations", json={**chat, "model": "Kimi-K3-v2"},
                         headers=new_hdr, timeout=5).status_code == 200
    assert secret.read_text() == NEW_API_KEY
    # the gate of that `pulumi up` (acceptance.py update): the new key, and the old one refused
    from components.ctyun_hcc.acceptance import AcceptanceGateProvider
    from tests.integration.test_ctyun_acceptance import gate_props

    def gate(key, out):
        return gate_props(services, {**out, "endpoint": f"{base}/v1"}, apiKey=key, loadRequests=0,
                          servedModelName="Kimi-K3-v2")

    acc = AcceptanceGateProvider().update("x", gate(API_KEY, out), gate(NEW_API_KEY, replaced)).outs
    assert acc["acceptance"]["ok"] and acc["acceptance"]["checks"]["auth"], acc["acceptance"]
    assert API_KEY not in repr(acc["acceptance"]) and NEW_API_KEY not in repr(acc["acceptance"])

    # delete: job gone, no instance or vLLM process left anywhere; refresh says gone
    prov.delete("x", replaced)
    no_leftovers(services)
    assert prov.read("x", replaced).id is None
    assert prov.read("x", {**replaced, "jobId": None}).id is None
    assert STATS["round_trips"] - trips0 > 0


def test_job_dying_during_startup_reports_log_tail_and_leaks_nothing(services, workspace):
    props = prepare(services, workspace, model_ok=False)  # weights missing config.json
    with pytest.raises(JobFailed) as err:
        SlurmServiceProvider().create(props)
    msg = str(err.value)
    assert "ended during start-up" in msg and "no config.json" in msg
    no_leftovers(services)


def test_changed_host_key_stops_before_submitting(services, workspace):
    props = prepare(services, workspace)
    other = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl"
    before = squeue_names()
    with pytest.raises(HostKeyChanged):
        SlurmServiceProvider().create({**props, "hostKey": other})
    assert squeue_names() == before
    assert not Path(props["workDir"], "srun.sh").exists()


def test_startup_deadline_is_enforced(services, workspace):
    props = prepare(services, workspace)
    # a head that never gets all workers: claim DP size 5 on a 4-node job
    props["nodeSh"] = props["nodeSh"].replace("--data-parallel-size 4", "--data-parallel-size 5")
    props["startupTimeoutS"] = 8
    with pytest.raises(TimeoutError, match="not ready within 8 s"):
        SlurmServiceProvider().create(props)
    no_leftovers(services)


def test_check_script_rejects_nothing_openai(services, workspace):
    # the seed's `extra` field is refused by the vLLM double, as by a strict OpenAI server;
    # the rendered check.sh does not send it (covered by the create test passing its chat gate)
    props = prepare(services, workspace)
    assert '"extra"' not in props["checkSh"]
    body = json.loads(props["checkSh"].split("-d '", 1)[1].split("'", 1)[0])
    assert set(body) <= {"model", "messages", "max_tokens", "temperature"}


def test_head_runs_on_the_named_host_with_ranks_in_order(services, workspace):
    """The head goes where headHost says (on E-HPC: the master, whose name sorts last)."""
    prov = SlurmServiceProvider()
    props = {**prepare(services, workspace), "headHost": "kk3n2"}
    out = prov.create(props).outs
    try:
        assert out["node0Addr"] == "10.77.0.12"
        assert out["endpoint"] == "http://10.77.0.12:11025/v1"  # not the public host: internal
        logs = Path(props["workDir"], "logs")
        text = "".join(f.read_text() for f in logs.glob(f"node_{out['jobId']}.*.out"))
        assert "node 0 (kk3n2, 10.77.0.12" in text
        assert "node 1 (kk3n0," in text and "node 3 (kk3n3," in text
        head_log = next(f for f in logs.glob(f"node_{out['jobId']}.*.out")
                        if "node 0 (kk3n2" in f.read_text()).read_text()
        assert "DP rank 1 joined from kk3n0" in head_log
    finally:
        prov.delete("x", out)
    no_leftovers(services)


def test_preflight_stops_before_submitting_when_a_driver_is_down(services, workspace):
    from tests.integration.slurm_env import clear_faults, inject_fault
    clear_faults(services)
    props = prepare(services, workspace)
    before = len(doubles_calls(services, "npu-smi"))
    inject_fault(services, "npu-smi")
    with pytest.raises(JobFailed, match="dcmi module initialize failed"):
        SlurmServiceProvider().create(props)
    assert "kimi-k3" not in squeue_names()
    calls = doubles_calls(services, "npu-smi")[before:]
    assert sorted({c["host"] for c in calls}) == ["kk3n0", "kk3n1", "kk3n2", "kk3n3"]


def test_only_the_stacks_own_jobs_are_adopted_or_cancelled(services, workspace):
    """Issue 10: jobs called kimi-k3 that this stack did not submit are never touched, even one
    carrying the same launch fingerprint; a job this stack submitted for another spec (an
    interrupted run) is cancelled; delete cancels the job in the state and stops only its
    instance."""
    from tests.integration.slurm_env import sh
    prov = SlurmServiceProvider()
    props = {**prepare(services, workspace), "ownerTag": "kimi-k3/test-own"}
    fp = props["launchFingerprint"]

    def held(comment):
        return sh(f"sbatch --parsable --hold -J kimi-k3 -p batch --comment {comment} "
                  f"--wrap 'sleep 1'").stdout.strip()

    # the site's apptainer as the jobs see it (sshd's PATH puts the doubles first)
    tools = (f"PATH={ROOT / 'tests' / 'doubles' / 'bin'}:$PATH "
             f"KK3_DOUBLES_STATE={services['KK3_DOUBLES_STATE']} "
             f"KK3_DOUBLES_LOG={services['KK3_DOUBLES_LOG']}")
    sif = Path(props["nodeSh"].split("sif=", 1)[1].split("\n", 1)[0])
    foreign_same_spec = held(f"kk3:someone/else:{fp}")
    foreign_plain = held("not-ours")
    own_stale = held("kk3:kimi-k3/test-own:0123456789abcdef")
    out = None
    try:
        sh(f"{tools} srun -p batch -N 1 -w kk3n1 apptainer instance start {sif} kimi-k3-999999")
        out = prov.create(props).outs
        jobs = squeue_names()
        assert out["jobId"] not in (foreign_same_spec, foreign_plain)
        assert f"{foreign_same_spec} kimi-k3 PENDING" in jobs
        assert f"{foreign_plain} kimi-k3 PENDING" in jobs
        assert own_stale not in jobs.split()
        prov.delete("x", out)
        jobs = squeue_names()
        assert out["jobId"] not in jobs.split()
        assert foreign_same_spec in jobs and foreign_plain in jobs
        assert instances(services).get("kk3n1") == ["kimi-k3-999999"]
        # a delete with no job in the state touches nothing at all
        prov.delete("x", {**out, "jobId": None})
        assert foreign_plain in squeue_names()
    finally:
        sh(f"scancel {foreign_same_spec} {foreign_plain} {own_stale}", check=False)
        sh(f"{tools} srun -p batch -N 1 -w kk3n1 apptainer instance stop kimi-k3-999999",
           check=False)
        if out and out["jobId"] in squeue_names().split():
            prov.delete("x", out)
    no_leftovers(services)
