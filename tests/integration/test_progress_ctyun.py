"""The progress record written by the CTyun bootstrap steps and the serving job, for real.

Against the real local sshd + 4-node Slurm (run under `flock /tmp/kk3-services.lock`), the
steps get `progressFile`/`progressExpect` as the program passes them. Checks what a person
following `python -m components status` would rely on: every step is a phase, a failure is
recorded with its error and the retry with its success, the Slurm job's state is the last thing
seen, the plan's figures and assumptions are there, no secret is in the file, and changing only
the progress inputs is no change.
"""

from pathlib import Path

import pytest

from components.ctyun_hcc.bootstrap import BroadcastProvider, ModelWeightsProvider
from components.ctyun_hcc.service import SlurmServiceProvider
from components.ctyun_hcc.ssh import CommandFailed
from components.ctyun_hcc.scripts import render_bcast_sh
from components.progress.record import read_records
from components.progress.plan import planned_waits
from components.progress.view import latest_run, plain, summarize, view_lines
from tests.integration.slurm_env import (
    API_KEY,
    HF_TOKEN,
    clear_faults,
    default_plan_spec,
    ensure_master_in_queue,
    host_key,
    inject_fault,
    layout_for,
    no_leftovers,
    prepare,
    ssh_props,
)


def progress_props(path: Path):
    plan, _ = default_plan_spec()
    return {"progressFile": str(path), "progressExpect": planned_waits(plan)}, plan


def phases(path: Path, name: str):
    return [r for r in read_records(str(path)) if r["phase"] == name]


def test_bootstrap_steps_record_failure_retry_and_the_bcast_job(services, workspace, tmp_path):
    path = tmp_path / "ctyun-hcc.jsonl"
    prog, plan = progress_props(path)
    clear_faults(services)
    props = ssh_props(services, hostKey=host_key(services), source="cthpc",
                      modelName="Kimi-K3-w4a8", modelRoot=str(workspace / "model"), **prog)
    inject_fault(services, "cthpc_model_install", "2")  # two shards, then the link drops
    with pytest.raises(CommandFailed):
        ModelWeightsProvider().create(props)
    ModelWeightsProvider().create(props)
    recs = phases(path, "weights-stage")
    assert [r["event"] for r in recs] == ["start", "failed", "start", "done"]
    assert "interrupted" in recs[1]["detail"]
    assert recs[0]["expected_s"] == plan.cold_start.stage_s
    assert f"from {plan.cold_start.weights_source}" in recs[0]["assumption"]
    assert recs[0]["waiting_for"] == "cthpc install of Kimi-K3-w4a8 on the cluster"

    ensure_master_in_queue(services)
    p, spec = default_plan_spec()
    lay = layout_for(workspace)
    Path(lay.model_dir).mkdir(parents=True, exist_ok=True)
    (Path(lay.model_dir) / "config.json").write_text("{}")
    Path(lay.sif_dir).mkdir(parents=True, exist_ok=True)
    bprops = ssh_props(services, hostKey=host_key(services), script=render_bcast_sh(p, spec, lay),
                       workDir=lay.work_dir, sourceHost=services["KK3_MASTER_HOST"],
                       contentKey="v1", timeoutS=120, pollIntervalS=0.25, **prog)
    out = BroadcastProvider().create(bprops).outs
    recs = phases(path, "weights-broadcast")
    assert recs[0]["event"] == "start" and recs[-1]["event"] == "done"
    assert recs[0]["deadline_s"] == 120
    assert f"Slurm job {out['jobId']}" in recs[-1]["detail"]   # the job's state was seen


def test_the_serving_job_records_its_start_without_secrets(services, workspace, tmp_path):
    path = tmp_path / "ctyun-hcc.jsonl"
    prog, plan = progress_props(path)
    prov = SlurmServiceProvider()
    props = {**prepare(services, workspace, api_key=True, hf_token=True), **prog}
    created = prov.create(props)
    try:
        recs = phases(path, "vllm-start")
        assert [recs[0]["event"], recs[-1]["event"]] == ["start", "done"]
        assert recs[0]["expected_s"] == plan.cold_start.estimate_s and recs[0]["deadline_s"] == 90
        job_id = created.outs["jobId"]
        assert any(f"Slurm job {job_id} RUNNING on kk3n0,kk3n1,kk3n2,kk3n3" in r["detail"]
                   for r in recs)
        text = path.read_text()
        for secret in (API_KEY, HF_TOKEN, props["sshPrivateKey"].strip()):
            assert secret not in text
        # the steering inputs: another file alone is no change (no update, no new job)
        moved = {**props, "progressFile": str(tmp_path / "elsewhere.jsonl"), "progressExpect": {}}
        assert not prov.diff(created.id, created.outs, moved).changes
        # what `status` shows of this real record
        marker, phase_recs = latest_run(read_records(str(path)))
        view = plain(view_lines("t", marker, summarize(phase_recs, recs[-1]["ts"]), recs[-1]["ts"]))
        assert "[DONE]" in view and "vllm-start" in view
    finally:
        prov.delete(created.id, created.outs)
    no_leftovers(services)


def test_a_start_past_its_deadline_is_recorded_failed(services, workspace, tmp_path):
    path = tmp_path / "ctyun-hcc.jsonl"
    prog, _ = progress_props(path)
    props = {**prepare(services, workspace), **prog}
    props["nodeSh"] = props["nodeSh"].replace("--data-parallel-size 4", "--data-parallel-size 5")
    props["startupTimeoutS"] = 8
    with pytest.raises(TimeoutError):
        SlurmServiceProvider().create(props)
    last = phases(path, "vllm-start")[-1]
    assert last["event"] == "failed" and "not ready within 8 s" in last["detail"]
    no_leftovers(services)
