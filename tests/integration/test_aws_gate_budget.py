"""The readiness gate's budget when the S3 mirror is, or is not, complete at the block's start.

Under the mock engine: the real program's gate inputs for a block bought to start at once and
one bought to start after the mirror's fill, staged and streamed (figures pinned: the default
p6-b300 stack, 1561 GB, mirror fill at the m7i.xlarge bound, 7995 s). Against moto's S3 server
(tests/integration/local_s3.py): the gate's provider reads the bucket and budgets for what it
holds, with nothing but the S3 API.
"""

from datetime import datetime, timedelta, timezone

import pytest

from components.aws_eks import gate_budget as gb
from components.aws_eks import readiness as rd
from components.aws_eks.weights import render as wr
from components.offline.runner import run_program
from components.progress.record import ProgressLog

PURCHASE = {"kimi-k3:maxUpfrontFeeUsd": "90000", "kimi-k3:apiAccessCidrs": "203.0.113.10/32"}
GATE = "pulumi-python:dynamic/aws:EndpointReadiness"
PREFIX = "models/moonshotai/Kimi-K3"


def _when(days: float) -> str:
    return (datetime.now(timezone.utc) + timedelta(days=days)).strftime("%Y-%m-%dT%H:%M:%SZ")


def gate_of(extra):
    run = run_program("aws-eks", {**PURCHASE, **extra})
    gates = run.of_type(GATE)
    assert len(gates) == 1
    return run.inference.plan.cold_start, gates[0]["inputs"]


# fill 7995 s, node 600 s; staged: mirror 312 s / hub 3122 s, timeout 3600 s, start 498 s;
# streamed: wait 7995 - 600 = 7395 s, timeout 3600 s (its own budget, 1440 s, is below the floor), start 940 s
CASES = [
    ("staged, block starts at once", {"kimi-k3:capacityEarliestStart": _when(-1)}, 1200 + 3122 + 3600, 4220),
    ("staged, block after the fill", {"kimi-k3:capacityEarliestStart": _when(3)}, 1200 + 312 + 3600, 1410),
    ("streamed, block starts at once", {"kimi-k3:capacityEarliestStart": _when(-1),
                                        "kimi-k3:streamWeights": "true"}, 1200 + 7395 + 3600, 8935),
    ("streamed, block after the fill", {"kimi-k3:capacityEarliestStart": _when(3),
                                        "kimi-k3:streamWeights": "true"}, 1200 + 3600, 1540),
]


@pytest.mark.parametrize("label,extra,budget,expected", CASES, ids=[c[0] for c in CASES])
def test_the_gate_budgets_the_plans_own_path(label, extra, budget, expected):
    c, gate = gate_of(extra)
    assert (gate["budgetS"], gate["expectedS"]) == (budget, expected)
    # never short of the plan's own first token, and never hours past it
    assert gate["expectedS"] == c.first_token_s
    assert c.first_token_s < gate["budgetS"] <= c.first_token_s + gb.NODE_JOIN_S + c.startup_timeout_s
    m = gate["mirror"]
    assert m["prefix"] == PREFIX and m["bucket"] and m["totalBytes"] == 1561 * 10 ** 9
    # what the provider would budget from the bucket: the same figures for an empty / full mirror
    at_once = "at once" in label
    now = gb.budget_now(m, complete=not at_once, bytes_done=0)
    assert (now.deadline_s, now.expected_s) == (budget, expected)


def test_a_streaming_pod_waits_longer_than_the_gate_allows_for_the_fill():
    run = run_program("aws-eks", {**PURCHASE, "kimi-k3:capacityEarliestStart": _when(-1),
                                  "kimi-k3:streamWeights": "true"})
    c = run.inference.plan.cold_start
    pod = run.of_type("kubernetes:apps/v1:Deployment")[0]["inputs"]["spec"]["template"]["spec"]
    wait = next(i for i in pod["initContainers"] if i["name"] == "wait-for-mirror")
    env = {e["name"]: e.get("value") for e in wait["env"]}
    # the whole fill (7995 s) x 1.5, rounded up to a minute: not the old fixed 6 h
    assert env["KK3_WAIT_S"] == str(12000) and int(env["KK3_WAIT_S"]) < 6 * 3600
    assert int(env["KK3_WAIT_S"]) >= c.phases[[p.name for p in c.phases].index("wait")].seconds
    assert wr.STREAM_WAIT_S == 3600


def test_an_adopted_block_budgets_from_the_bucket_not_from_the_plan():
    """The plan cannot know an adopted block's start: it assumes the mirror full; the provider
    reads the bucket and allows the hub fallback when it is not."""
    run = run_program("aws-eks", {"kimi-k3:capacityReservationId": "cr-0123456789abcdef0",
                                  "kimi-k3:apiAccessCidrs": "203.0.113.10/32"})
    g = run.of_type(GATE)[0]["inputs"]
    assert g["budgetS"] == 1200 + 312 + 3600
    assert gb.budget_now(g["mirror"], complete=False).deadline_s == 1200 + 3122 + 3600
    assert gb.budget_now(g["mirror"], complete=None).deadline_s == 1200 + 3122 + 3600


# ---------------------------------------------------------------- the provider against a real S3 API

@pytest.fixture
def env(s3_env):
    return s3_env


def mirror_props(bucket, stream):
    m = {"bucket": bucket, "prefix": PREFIX, "totalBytes": 3 * 8 * 2 ** 20, "fillGbPerS": 0.001,
         "stream": stream, "nodeReadyS": 600, "startupTimeoutS": 1440, "estimateS": 940,
         "mirrorStageS": 0, "hubStageS": 0}
    return {"aws": {"region": "us-east-2", "profile": None}, "region": "us-east-2", "mirror": m}


def test_the_provider_budgets_for_what_the_bucket_holds(env, tmp_path):
    s3 = env.client()
    bucket = env.new_bucket()
    p = rd.EndpointReadinessProvider()
    log = ProgressLog(str(tmp_path / "p.jsonl"), echo=False)
    props = mirror_props(bucket, stream=True)
    total = props["mirror"]["totalBytes"]
    empty = p._budget(props, log)
    # nothing copied: the whole fill at 0.001 GB/s (25 s) is less than the node's start: no wait
    assert (empty.deadline_s, empty.expected_s) == (1200 + 1440, 600 + 940)
    props["mirror"]["fillGbPerS"] = total / 1e9 / 4000  # the whole fill: 4000 s
    assert p._budget(props, log).deadline_s == 1200 + (4000 - 600) + 1440
    # one of three files whole, one half uploaded (a multipart upload in flight)
    size = total // 3
    s3.put_object(Bucket=bucket, Key=f"{PREFIX}/a.safetensors", Body=b"x" * size)
    up = s3.create_multipart_upload(Bucket=bucket, Key=f"{PREFIX}/b.safetensors")
    s3.upload_part(Bucket=bucket, Key=f"{PREFIX}/b.safetensors", UploadId=up["UploadId"], PartNumber=1,
                   Body=b"y" * (size // 2))
    half = p._budget(props, log)
    left = round((total - size - size // 2) / (props["mirror"]["fillGbPerS"] * 1e9))
    assert half.deadline_s == 1200 + (left - 600) + 1440 and "not complete" in half.why
    # complete: no wait at all
    s3.put_object(Bucket=bucket, Key=f"{PREFIX}/.kimi-k3/complete", Body=b"done")
    full = p._budget(props, log)
    assert (full.deadline_s, full.expected_s) == (1200 + 1440, 600 + 940) and "complete" in full.why
    # a bucket it cannot read: the longest case, said so
    gone = p._budget({**props, "mirror": {**props["mirror"], "bucket": "kk3-no-such-bucket"}}, log)
    assert gone.deadline_s == 1200 + (4000 - 600) + 1440 and "could not be read" in gone.why


def test_staged_weights_fall_back_to_the_hubs_figure_until_the_mirror_is_complete(env, tmp_path):
    bucket = env.new_bucket()
    p = rd.EndpointReadinessProvider()
    log = ProgressLog(str(tmp_path / "p.jsonl"), echo=False)
    props = mirror_props(bucket, stream=False)
    props["mirror"].update(mirrorStageS=312, hubStageS=3122, startupTimeoutS=1320, estimateS=498)
    assert p._budget(props, log).deadline_s == 1200 + 3122 + 1320
    env.client().put_object(Bucket=bucket, Key=f"{PREFIX}/.kimi-k3/complete", Body=b"done")
    assert p._budget(props, log).deadline_s == 1200 + 312 + 1320


def test_a_refresh_long_after_the_block_started_still_allows_the_rest_of_the_fill(env, tmp_path, monkeypatch):
    """`pulumi refresh` gates what is left since the block started; streaming from a mirror that
    is still filling needs at least the rest of the fill and vLLM's start, from now."""
    from datetime import datetime, timezone

    from components.progress.record import read_records
    from tests.doubles.vllm_openai import DoubleConfig, VllmOpenAIDouble
    from tests.unit.test_aws_readiness import FakeCluster, pod, props as gate_props

    s3, bucket = env.client(), env.new_bucket()
    m = mirror_props(bucket, stream=True)["mirror"]
    total = m["totalBytes"]
    m["fillGbPerS"] = (total / 2) / 1e9 / 4000  # half copied: 4000 s left
    s3.put_object(Bucket=bucket, Key=f"{PREFIX}/a.safetensors", Body=b"x" * (total // 2))
    monkeypatch.setattr(rd, "_now", lambda: datetime(2026, 12, 2, 13, 30, tzinfo=timezone.utc))  # 2 h in
    path = str(tmp_path / "p.jsonl")
    with VllmOpenAIDouble(DoubleConfig()) as d:
        monkeypatch.setattr(rd.EndpointReadinessProvider, "cluster_factory",
                            lambda *a: FakeCluster(d.url, [(9e9, [pod()])]))
        read = rd.EndpointReadinessProvider().read("kimi-k3/kimi-k3-api", {
            **gate_props("2026-12-02T11:30:00Z", budgetS=20, mirror=m, progressFile=path), "ready": False})
    assert read.outs["ready"] is True
    start = next(r for r in read_records(path) if r["phase"] == "readiness-gate" and r["event"] == "start")
    # 1200 + (4000 - 600) + 1440 = 6040 s from the block's start is spent (7200 s ago); from now:
    assert start["deadline_s"] == 4000 + 1440


def test_a_streamed_late_block_is_described_as_waiting_not_as_a_hub_fallback():
    from components.aws_eks.weights.resources import late_mirror_warning

    c, _ = gate_of({"kimi-k3:capacityEarliestStart": _when(-1), "kimi-k3:streamWeights": "true"})
    mirror = next(p for p in c.phases if p.name == "mirror")
    assert "pods wait for it (streaming cannot fall back to the hub)" in mirror.source
    assert "stages from the hub" not in mirror.source
    run = run_program("aws-eks", {**PURCHASE, "kimi-k3:capacityEarliestStart": _when(-1),
                                  "kimi-k3:streamWeights": "true"})
    notes = run.inference.plan.notes
    assert any("this first start waits for it on the GPU clock" in n for n in notes)
    assert not any("stages from the hub" in n for n in notes)
    now = datetime(2026, 12, 1, 9, 0, tzinfo=timezone.utc)
    msg = late_mirror_warning("2026-12-01T11:30:00Z", 10000, now, stream=True)
    assert "its pods wait for it" in msg and "until about 17 min after the block starts" in msg
    assert "stages each node from the hub" not in msg
    # staged weights keep their wording
    assert "stages each node from the hub" in late_mirror_warning("2026-12-01T11:30:00Z", 10000, now)


@pytest.mark.parametrize("extra,budget", [
    ({"kimi-k3:weightsSource": "hub"}, 1200 + 3122 + 3600),
    ({"kimi-k3:weightsSource": "s3", "kimi-k3:weightsS3Uri": "s3://my-bucket/k3"}, 1200 + 312 + 3600),
], ids=["hub", "your-bucket"])
def test_without_the_stacks_mirror_the_gate_keeps_the_plans_figures(extra, budget):
    run = run_program("aws-eks", {"kimi-k3:capacityReservationId": "cr-0123456789abcdef0",
                                  "kimi-k3:apiAccessCidrs": "203.0.113.10/32", **extra})
    g = run.of_type(GATE)[0]["inputs"]
    assert g.get("mirror") is None  # nothing to read: the plan's budget stands
    assert (g["budgetS"], g["expectedS"]) == (budget, run.inference.plan.cold_start.first_token_s)
