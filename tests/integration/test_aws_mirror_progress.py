"""The mirror Job's progress in the per-stack progress file while `pulumi up` waits (phase
`weights-mirror`), read from the bucket with the S3 API only, against moto's S3 server
(tests/integration/local_s3.py), and what `python -m components status` shows of it.

The gate runs through its provider (`EndpointReadinessProvider.create`) with a cluster double
whose pod stays Pending until the mirror is complete (streaming: the pods wait for it), and the
vLLM double (tests/doubles/vllm_openai.py) as the serving pod once it is released.
"""

import threading
import time
from datetime import datetime, timezone

import pytest

from components.progress import record as progress
from components.aws_eks import readiness as rd
from components.aws_eks.weights.watch import MirrorWatch, read_state
from components.cli.main import main
from components.progress.record import ProgressLog, read_records
from tests.doubles.vllm_openai import DoubleConfig, VllmOpenAIDouble
from tests.unit.test_aws_readiness import FakeCluster, pod, props

PREFIX = "models/moonshotai/Kimi-K3"
PART = 5 * 2 ** 20  # S3's smallest multipart part
TOTAL = 4 * PART
FILL_S = 7995  # the plan's fill figure handed in as progressExpect


@pytest.fixture
def env(s3_env, monkeypatch):
    monkeypatch.setattr(progress, "MIN_UPDATE_INTERVAL_S", 0.0)  # every change recorded
    return s3_env


def expect():
    return {"weights-mirror": {"expected_s": FILL_S, "assumption": "1,561 GB from the hub on the system "
                                                                   "node (0.19525 GB/s)"}}


def mirror_records(path):
    return [r for r in read_records(path) if r["phase"] == "weights-mirror"]


def test_read_state_counts_whole_objects_and_parts_in_flight(env):
    s3, bucket = env.client(), env.new_bucket()
    assert read_state(s3, bucket, PREFIX, TOTAL).bytes_done == 0
    s3.put_object(Bucket=bucket, Key=f"{PREFIX}/a.safetensors", Body=b"a" * PART)
    s3.put_object(Bucket=bucket, Key=f"{PREFIX}/.kimi-k3/manifest.tsv", Body=b"x" * 999)  # bookkeeping
    s3.put_object(Bucket=bucket, Key="compile-cache/k/rank-0/x", Body=b"c" * 999)  # not the model
    up = s3.create_multipart_upload(Bucket=bucket, Key=f"{PREFIX}/b.safetensors")
    s3.upload_part(Bucket=bucket, Key=f"{PREFIX}/b.safetensors", UploadId=up["UploadId"], PartNumber=1,
                   Body=b"b" * PART)
    # an interrupted try's upload of a file that is now whole counts nothing more
    stale = s3.create_multipart_upload(Bucket=bucket, Key=f"{PREFIX}/a.safetensors")
    s3.upload_part(Bucket=bucket, Key=f"{PREFIX}/a.safetensors", UploadId=stale["UploadId"], PartNumber=1,
                   Body=b"a" * PART)
    st = read_state(s3, bucket, PREFIX, TOTAL)
    assert (st.complete, st.bytes_done, st.files_done, st.fraction) == (False, 2 * PART, 1, 0.5)
    assert "10.5 of 21 GB" not in st.text("x") and "(50%)" in st.text("x")
    s3.put_object(Bucket=bucket, Key=f"{PREFIX}/.kimi-k3/complete", Body=b"done")
    assert read_state(s3, bucket, PREFIX, TOTAL).complete


def test_the_watch_records_bytes_against_the_plans_fill_and_ends_done(env, tmp_path, fake_clock):
    s3, bucket = env.client(), env.new_bucket()
    path = str(tmp_path / "aws-eks.jsonl")
    log = ProgressLog(path, expect=expect(), echo=False)
    where = f"s3://{bucket}/{PREFIX}"
    with MirrorWatch(log, lambda: read_state(s3, bucket, PREFIX, TOTAL), where, 0.19525, poll_s=30,
                     wait=fake_clock.wait):
        for i in range(4):
            s3.put_object(Bucket=bucket, Key=f"{PREFIX}/model-{i}.safetensors", Body=b"w" * PART)
            fake_clock.until(fake_clock() + 30)    # one look of the watch (simulated time)
        s3.put_object(Bucket=bucket, Key=f"{PREFIX}/.kimi-k3/complete", Body=b"done")
    assert fake_clock.slept == [30.0] * 4
    recs = mirror_records(path)
    assert recs[0]["event"] == "start" and recs[0]["expected_s"] == FILL_S
    assert "from the hub on the system node" in recs[0]["assumption"]
    fractions = [r["fraction"] for r in recs if r["event"] == "update" and r["fraction"] is not None]
    assert fractions == sorted(fractions) and 0 < fractions[1] < 1 and len(set(fractions)) >= 3
    assert any("min left at the plan's 0.19525 GB/s" in r["detail"] for r in recs if r["event"] == "update")
    assert recs[-1]["event"] == "done" and recs[-1]["fraction"] == 1.0
    assert recs[-1]["detail"].startswith("complete: 4 files")


def test_the_gate_reports_the_mirror_while_it_waits_and_status_shows_it(env, tmp_path, monkeypatch, capsys):
    s3, bucket = env.client(), env.new_bucket()
    monkeypatch.chdir(tmp_path)
    path = str(tmp_path / ".kimi-k3" / "progress" / "aws-eks.jsonl")
    monkeypatch.setattr(rd, "_now", lambda: datetime(2026, 12, 2, 12, 0, tzinfo=timezone.utc))
    released = threading.Event()

    class WaitsForTheMirror(FakeCluster):
        def pods(self):  # streaming: the pod's init container waits until the mirror is complete
            return [pod(container="running")] if released.is_set() else \
                [pod(phase="Pending", container=None, init="running")]

    m = {"bucket": bucket, "prefix": PREFIX, "totalBytes": TOTAL, "fillGbPerS": 0.19525, "stream": True,
         "nodeReadyS": 600, "startupTimeoutS": 1440, "estimateS": 940, "mirrorStageS": 0, "hubStageS": 0}
    s3.put_object(Bucket=bucket, Key=f"{PREFIX}/model-0.safetensors", Body=b"w" * PART)
    s3.put_object(Bucket=bucket, Key=f"{PREFIX}/model-1.safetensors", Body=b"w" * PART)
    p = rd.EndpointReadinessProvider()
    out = {}
    with VllmOpenAIDouble(DoubleConfig()) as d:
        monkeypatch.setattr(rd.EndpointReadinessProvider, "cluster_factory",
                            lambda *a: WaitsForTheMirror(d.url, [(9e9, [])]))
        t = threading.Thread(target=lambda: out.update(created=p.create(
            props("2026-12-02T11:30:00Z", budgetS=60, mirror=m, progressFile=path,
                  progressExpect=expect()))))
        t.start()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not (
                any(r.get("fraction") == 0.5 for r in mirror_records(path) if r["event"] == "update")
                and any(r["phase"] == "readiness-gate" for r in read_records(path))):
            time.sleep(0.1)
        assert main(["status", "--stack", "aws-eks", "--once"]) == 0
        snap = capsys.readouterr().out
        s3.put_object(Bucket=bucket, Key=f"{PREFIX}/model-2.safetensors", Body=b"w" * PART)
        s3.put_object(Bucket=bucket, Key=f"{PREFIX}/model-3.safetensors", Body=b"w" * PART)
        s3.put_object(Bucket=bucket, Key=f"{PREFIX}/.kimi-k3/complete", Body=b"done")
        while time.monotonic() < deadline and mirror_records(path)[-1]["event"] != "done":
            time.sleep(0.1)
        released.set()
        t.join(60)
    line = next(x for x in snap.splitlines() if "weights-mirror" in x)
    assert line.split()[0] == "[RUNNING]" and "50%" in line and "of ~2h13m" in line
    assert "21.0 of 21 GB" not in snap and "(50%), 2 files whole" in snap
    assert "readiness-gate" in snap
    assert out["created"].outs["ready"] is True
    recs = read_records(path)
    done = [(r["phase"], r["event"]) for r in recs if r["event"] == "done"]
    assert done.index(("weights-mirror", "done")) < done.index(("readiness-gate", "done"))


def test_a_gate_that_ends_first_says_it_stopped_watching(env, tmp_path, monkeypatch):
    bucket = env.new_bucket()
    path = str(tmp_path / "aws-eks.jsonl")
    monkeypatch.setattr(rd, "_now", lambda: datetime(2026, 12, 2, 12, 0, tzinfo=timezone.utc))
    m = {"bucket": bucket, "prefix": PREFIX, "totalBytes": TOTAL, "fillGbPerS": 0.19525, "stream": False,
         "nodeReadyS": 600, "startupTimeoutS": 1320, "estimateS": 498, "mirrorStageS": 312, "hubStageS": 3122}
    with VllmOpenAIDouble(DoubleConfig()) as d:  # staged from the hub meanwhile: serving at once
        monkeypatch.setattr(rd.EndpointReadinessProvider, "cluster_factory",
                            lambda *a: FakeCluster(d.url, [(9e9, [pod()])]))
        created = rd.EndpointReadinessProvider().create(
            props("2026-12-02T11:30:00Z", budgetS=60, mirror=m, progressFile=path, progressExpect=expect()))
    assert created.outs["ready"] is True
    last = mirror_records(path)[-1]
    assert last["event"] == "done" and last["detail"].startswith("pulumi up stopped watching")
    assert "0.0 of 0 GB" in last["detail"] or "(0%)" in last["detail"]


def test_a_gate_that_does_not_wait_says_how_far_the_mirror_is(env, tmp_path, monkeypatch, capsys):
    s3, bucket = env.client(), env.new_bucket()
    s3.put_object(Bucket=bucket, Key=f"{PREFIX}/model-0.safetensors", Body=b"w" * PART)
    monkeypatch.setattr(rd, "_now", lambda: datetime(2026, 12, 1, 9, 0, tzinfo=timezone.utc))
    m = {"bucket": bucket, "prefix": PREFIX, "totalBytes": TOTAL, "fillGbPerS": 0.19525, "stream": False,
         "nodeReadyS": 600, "startupTimeoutS": 1320, "estimateS": 498, "mirrorStageS": 312, "hubStageS": 3122}
    created = rd.EndpointReadinessProvider().create(
        props("2026-12-02T11:30:00Z", mirror=m, progressFile=str(tmp_path / "p.jsonl")))
    assert created.outs["state"] == "waiting-for-block"
    err = capsys.readouterr().err
    assert f"weights-mirror: 0.0 of 0 GB (25%), 1 files whole, in s3://{bucket}/{PREFIX}" in err


def test_without_the_multipart_listing_permission_whole_files_still_count(env):
    """A deployer allowed ListBucket but not ListBucketMultipartUploads still sees progress."""
    s3, bucket = env.client(), env.new_bucket()
    s3.put_object(Bucket=bucket, Key=f"{PREFIX}/a.safetensors", Body=b"a" * PART)
    up = s3.create_multipart_upload(Bucket=bucket, Key=f"{PREFIX}/b.safetensors")
    s3.upload_part(Bucket=bucket, Key=f"{PREFIX}/b.safetensors", UploadId=up["UploadId"], PartNumber=1,
                   Body=b"b" * PART)

    class Denied:
        def __init__(self, real):
            self.real = real

        def get_paginator(self, op):
            if op == "list_multipart_uploads":
                from botocore.exceptions import ClientError

                raise ClientError({"Error": {"Code": "AccessDenied", "Message": "denied"}}, "ListMultipartUploads")
            return self.real.get_paginator(op)

    st = read_state(Denied(s3), bucket, PREFIX, TOTAL)
    assert (st.bytes_done, st.files_done, st.complete) == (PART, 1, False)
    assert "whole files only: uploads in flight not readable: ClientError" in st.text("x")
