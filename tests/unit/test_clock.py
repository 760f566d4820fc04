"""One clock from `pulumi up` to the first accepted token: estimates per phase with their basis,
no invented figure for an undocumented phase, and measured time from the progress records."""

import re

import pytest

from components.progress import clock as clk
from components.progress.view import summarize

COLD_CTYUN = {"startup_timeout_s": 7200, "estimate_s": 1420, "phases": [
    {"name": "stage", "seconds": 780, "clock": "gpu", "source": "1,560 GB from cthpc at 2 GB/s"},
    {"name": "load", "seconds": 520, "clock": "gpu", "source": "x"},
    {"name": "compile", "seconds": 780, "clock": "gpu", "source": "x"},
    {"name": "graphs", "seconds": 120, "clock": "gpu", "source": "x"}]}
COLD_AWS = {"startup_timeout_s": 1320, "phases": [
    {"name": "mirror", "seconds": 7995, "clock": "before-block", "source": "x"},
    {"name": "node", "seconds": 600, "clock": "gpu", "source": "assumption: boot"},
    {"name": "stage", "seconds": 312, "clock": "gpu", "source": "from mirror"},
    {"name": "load", "seconds": 78, "clock": "gpu", "source": "x"},
    {"name": "compile", "seconds": 330, "clock": "gpu", "source": "x"},
    {"name": "graphs", "seconds": 90, "clock": "gpu", "source": "x"}]}


def ctyun():
    return clk.document(clk.ctyun_phases(COLD_CTYUN, checkpoint_bytes=1_560 * 10**9,
                                         nvme_gb_per_s=3.0, order_timeout_s=7200))


def aws():
    return clk.document(clk.aws_phases(COLD_AWS, block_start="2026-12-02T11:30:00Z"))


def test_ctyun_phases_in_order_with_estimates():
    c = ctyun()
    assert [p["name"] for p in c["phases"]] == ["order", "cluster-ready", "bootstrap",
                                               "weights-and-image", "broadcast", "engine", "gate"]
    est = {p["name"]: p["estimate_s"] for p in c["phases"]}
    assert est == {"order": 60, "cluster-ready": None, "bootstrap": 300, "weights-and-image": 780,
                   "broadcast": 520, "engine": 1420, "gate": 120}
    assert c["estimate_s"] == 3200 and not c["complete"] and c["not_estimated"] == ["cluster-ready"]


def test_an_undocumented_phase_has_its_bound_not_a_guess():
    p = next(p for p in ctyun()["phases"] if p["name"] == "cluster-ready")
    assert p["estimate_s"] is None and p["bound_s"] == 7200 and "does not document" in p["basis"]
    line = clk.summary_line(ctyun())
    assert line.startswith("53 min from `pulumi up` to the first accepted token + cluster-ready")
    assert "up to 120 min" in line


def test_aws_phases_and_the_block_wait():
    c = aws()
    assert [p["name"] for p in c["phases"]] == ["infrastructure", "block-wait", "nodes", "staging",
                                               "engine", "gate"]
    est = {p["name"]: p["estimate_s"] for p in c["phases"]}
    assert est == {"infrastructure": 1200, "block-wait": None, "nodes": 600, "staging": 312,
                   "engine": 498, "gate": 120}
    block = c["phases"][1]["basis"]
    assert "2026-12-02T11:30:00Z" in block and "~133 min" in block
    assert "containers-roadmap/issues/1227" in c["phases"][0]["basis"]


def _rec(ts, phase, event, elapsed=0.0, **kw):
    return {"ts": ts, "phase": phase, "event": event, "elapsed_s": elapsed, **kw}


def test_measured_time_per_phase_from_the_records():
    records = [
        _rec(100, "ehpc-order", "start"), _rec(1900, "ehpc-order", "done", 1800),
        _rec(1900, "bootstrap-host-key-pin", "start"), _rec(1930, "bootstrap-host-key-pin", "done", 30),
        _rec(1930, "bootstrap-nvme-mount", "start"), _rec(2030, "bootstrap-nvme-mount", "done", 100),
        _rec(2030, "weights-stage", "start"), _rec(3000, "weights-stage", "failed", 970),
        _rec(3000, "bootstrap-acceptance-gate", "start"),  # not a clock phase's own measure
    ]
    rows = {r["name"]: r for r in clk.measure(ctyun(), summarize(records, now=3000, alive=lambda *a: True))}
    assert rows["order"]["measured_s"] is None
    assert (rows["cluster-ready"]["measured_s"], rows["cluster-ready"]["state"]) == (1800, "done")
    assert rows["bootstrap"]["measured_s"] == 130 and rows["bootstrap"]["estimate_s"] == 300
    assert rows["weights-and-image"]["state"] == "failed"
    assert rows["gate"]["measured_s"] is None


def test_aws_nodes_staging_engine_are_one_measured_row():
    records = [_rec(0, "readiness-gate", "start"), _rec(1500, "readiness-gate", "update", 1500)]
    rows = clk.measure(aws(), summarize(records, now=1500, alive=lambda *a: True))
    assert [r["name"] for r in rows] == ["infrastructure", "block-wait", "nodes + staging + engine", "gate"]
    merged = rows[2]
    assert merged["estimate_s"] == 600 + 312 + 498 and merged["measured_s"] == 1500
    assert merged["state"] == "running"


def test_the_status_view_shows_the_plan_and_the_measured_time(tmp_path):
    from components.cli.status import snapshot
    from components.progress.record import ProgressLog, RecordReader
    from components.progress.view import plain

    path = str(tmp_path / "s.jsonl")
    log = ProgressLog(path, echo=False, clock=lambda: 1000.0)
    log.run_started("ctyun-hcc", ctyun(), 98.5)
    log.write(_rec(1060, "ehpc-order", "start"))
    log.write(_rec(2860, "ehpc-order", "done", 1800))
    text = plain(snapshot(RecordReader(path), "t", now=4600.0)[0])
    assert "clock: `pulumi up` to the first accepted token" in text
    assert "  cluster-ready             ?       30m  done" in text
    assert "  engine               23m40s         -" in text
    assert "  total               53m20s+     1h00m  (since this `pulumi up` started)" in text
    assert ("spend since this `pulumi up` started (the billing start is not known here): "
            "$98.50 at $98.50/h") in text


def test_the_spend_counts_from_the_billing_start_the_program_recorded(tmp_path):
    """The cluster order, the block's or the plan's start, recorded at run time
    (progress/program.record_billing_start): before `pulumi up` (an adopted block running since
    yesterday), later (a block that starts tomorrow: nothing spent yet), and a junk record."""
    from components.cli.status import snapshot
    from components.progress.program import BILLING_BLOCK, BILLING_ORDER, parse_utc
    from components.progress.record import ProgressLog, RecordReader
    from components.progress.view import plain

    t0 = parse_utc("2026-12-02T04:00:00Z")
    path = str(tmp_path / "s.jsonl")
    log = ProgressLog(path, echo=False, clock=lambda: t0)
    log.run_started("aws-eks", aws(), 100.0)
    log.billing_started(t0 - 86400, BILLING_BLOCK)
    text = plain(snapshot(RecordReader(path), "t", now=t0 + 1800)[0])
    assert ("spend since billing started at 2026-12-01 04:00 UTC (the Capacity Block's start "
            "(EC2 StartDate)): $2,450.00 at $100.00/h") in text
    log.billing_started(t0 + 7200, BILLING_BLOCK)  # the latest record wins
    text = plain(snapshot(RecordReader(path), "t", now=t0 + 1800)[0])
    assert "spend: $0.00 so far: billing starts in 1h30m, at 2026-12-02 06:00 UTC" in text
    log.billing_started(t0 + 60, BILLING_ORDER)
    log.write({"ts": t0, "phase": "", "event": "billing", "billing_start": True, "basis": "junk"})
    text = plain(snapshot(RecordReader(path), "t", now=t0 + 3660)[0])
    assert "(the cluster order (E-HPC create-cluster, orderedAt)): $100.00 at $100.00/h" in text
    # a new run forgets the last run's record until the program records it again
    log.run_started("aws-eks", aws(), 100.0)
    assert "billing start is not known here" in plain(snapshot(RecordReader(path), "t", now=t0 + 60)[0])


def test_the_program_writes_a_billing_record_only_for_a_time(tmp_path):
    import json

    from components.progress.program import BILLING_TRAINING_PLAN, write_billing_start

    path = tmp_path / "p.jsonl"
    assert write_billing_start(str(path), None, BILLING_TRAINING_PLAN) is None  # not bought yet
    assert write_billing_start(str(path), "soon", BILLING_TRAINING_PLAN) == "soon"
    assert not path.exists()
    write_billing_start(str(path), "2026-12-02T05:00:00Z", BILLING_TRAINING_PLAN)
    (rec,) = [json.loads(x) for x in path.read_text().splitlines()]
    assert (rec["event"], rec["phase"], rec["billing_start"], rec["basis"]) == \
        ("billing", "", 1796187600.0, "the training plan's start (SageMaker StartTime)")


@pytest.mark.parametrize("value,expected", [
    ("2026-12-02T05:00:00Z", 1796187600.0), ("2026-12-02T05:00:00+00:00", 1796187600.0),
    ("2026-12-02T05:00:00", 1796187600.0), (None, None), ("", None), ("tomorrow", None), (5, None)])
def test_billing_times_are_parsed_or_dropped(value, expected):
    from components.progress.program import parse_utc
    assert parse_utc(value) == expected


def test_a_run_without_a_recorded_clock_still_shows_the_measured_phases(tmp_path):
    from components.cli.status import snapshot
    from components.progress.record import ProgressLog, RecordReader
    from components.progress.view import plain

    path = str(tmp_path / "s.jsonl")
    log = ProgressLog(path, echo=False, clock=lambda: 0.0)
    log.run_started("aws-eks")
    log.write(_rec(10, "block-start", "start"))
    log.write(_rec(70, "block-start", "done", 60))
    text = plain(snapshot(RecordReader(path), "t", now=100.0)[0])
    assert re.search(r"\n  block-wait +\? +1m  done\n", text) and "spend" not in text
    assert re.search(r"\n  total +\? +1m40s", text)
    # a file with no recognisable phase shows no clock at all
    other = str(tmp_path / "o.jsonl")
    ProgressLog(other, echo=False).write(_rec(1, "something-else", "start"))
    assert "clock:" not in plain(snapshot(RecordReader(other), "t", now=5.0)[0])


def test_a_marker_with_a_junk_clock_falls_back(tmp_path):
    from components.progress.clock import for_run

    assert for_run({"clock": "junk"}, []) is None
    assert for_run({"clock": {"phases": []}}, []) is None


# ---- the gate: the functional checks plus the known-answer checks' estimate -------------------

def test_the_gate_adds_the_known_answer_estimate_where_a_tpot_was_published():
    """ctyun-hcc's A3 has a published TPOT (reference_points.json): the gate phase is the 2 min
    assumption plus known_cost's estimate at it; p6-b300 has none, so nothing is made up and the
    basis says the known-answer checks are not estimated."""
    from components.accept import known_cost as kc
    from components.accept.known import KNOWN_MAX_TOKENS
    from components.inference.catalog import MODELS
    from components.inference.planner import PlanRequest, plan

    a3 = plan(PlanRequest(model="w4a8", node_shape="atlas-800-a3", nodes=4))
    seconds, why = kc.gate_clock(a3)
    par = a3.parallelism
    devices = par.tensor_parallel * par.pipeline_parallel
    cap = kc.needle_cap_tokens(MODELS["w4a8"], a3.accelerator, devices, a3.max_model_len)
    typical = kc.estimate(MODELS["w4a8"], a3.accelerator, devices, a3.max_model_len, 0.02225,
                          kc.TYPICAL_OUTPUT_TOKENS, cap)
    worst = kc.estimate(MODELS["w4a8"], a3.accelerator, devices, a3.max_model_len, 0.02225,
                        KNOWN_MAX_TOKENS, cap)
    assert seconds == round(typical.total_s) and 60 < seconds < worst.total_s <= 5 * 60
    assert "TPOT 22.25 ms" in why and "vllm-ascend-14454-a3x4-w4a8-c4" in why
    gate = clk.ctyun_phases(COLD_CTYUN, checkpoint_bytes=1, nvme_gb_per_s=1.0,
                            known=(seconds, why))[-1]
    assert gate.name == "gate" and gate.estimate_s == clk.GATE_S + seconds and why in gate.basis

    b300 = plan(PlanRequest(model="mxfp4", node_shape="p6-b300.48xlarge", nodes=1))
    assert kc.gate_clock(b300) == (0, "the known-answer checks are not estimated (no published "
                                      "TPOT for p6-b300.48xlarge: accept/reference_points.json)")
    gate = clk.aws_phases(COLD_AWS, known=kc.gate_clock(b300))[-1]
    assert gate.estimate_s == clk.GATE_S and "not estimated" in gate.basis


def test_a_resize_with_two_replicas_measures_the_expand_and_the_replicas_side_by_side():
    """A second `pulumi up` (kimi-k3:replicas 1 -> 2): the cluster's expand is the cluster's
    time, the two replicas' jobs start side by side (counted once, not summed), the router
    after them is the engine's too, and the gate's."""
    records = [
        _rec(100, "ehpc-expand", "start"), _rec(1300, "ehpc-expand", "done", 1200),
        _rec(1300, "vllm-start", "start"), _rec(1300, "vllm-start-r1", "start"),
        _rec(2300, "vllm-start", "done", 1000), _rec(2500, "vllm-start-r1", "done", 1200),
        _rec(2500, "router-start", "start"), _rec(2530, "router-start", "done", 30),
        _rec(2530, "accept-gate", "start"), _rec(2650, "accept-gate", "done", 120),
    ]
    rows = {r["name"]: r for r in clk.measure(ctyun(), summarize(records, now=2700, alive=lambda *a: True))}
    assert rows["cluster-ready"]["measured_s"] == 1200
    assert (rows["engine"]["measured_s"], rows["engine"]["state"]) == (1230, "done")
    assert rows["gate"]["measured_s"] == 120
    assert [rows[n]["measured_s"] for n in ("order", "bootstrap", "broadcast")] == [None] * 3


def test_side_by_side_phases_count_once_and_one_after_another_add_up():
    def v(start, elapsed):
        return type("V", (), {"started": start, "elapsed_s": elapsed})()

    assert clk.covered_s([v(0, 100), v(50, 100), v(300, 10)]) == 160
    assert clk.covered_s([v(0, 100), v(10, 20)]) == 100  # one inside the other
    assert clk.covered_s([v(0, 30), v(30, 30)]) == 60


def test_aws_gate_counts_the_wait_for_every_replica():
    records = [_rec(1000, "accept-gate", "start"), _rec(1100, "accept-gate", "done", 100),
               _rec(1100, "replicas", "start"), _rec(1160, "replicas", "done", 60)]
    rows = {r["name"]: r for r in clk.measure(aws(), summarize(records, now=1200, alive=lambda *a: True))}
    assert rows["gate"]["measured_s"] == 160


def test_status_after_a_second_up_shows_that_updates_times_not_the_first_runs(tmp_path):
    """A restart (`pulumi up --replace` of the service): the engine and the gate again, with
    this run's times; the first run's cluster order is not shown as this run's."""
    from components.cli.status import snapshot
    from components.progress.record import ProgressLog, RecordReader
    from components.progress.view import plain

    path = str(tmp_path / "s.jsonl")
    log = ProgressLog(path, echo=False, clock=lambda: 1000.0)
    log.run_started("ctyun-hcc", ctyun(), None)
    for rec in (_rec(1060, "ehpc-order", "start"), _rec(2860, "ehpc-order", "done", 1800),
                _rec(2860, "vllm-start", "start"), _rec(4060, "vllm-start", "done", 1200)):
        log.write(rec)
    log.clock = lambda: 9000.0
    log.run_started("ctyun-hcc", ctyun(), None)
    log.write(_rec(9010, "vllm-start", "start"))
    log.write(_rec(9610, "vllm-start", "update", 600))
    text = plain(snapshot(RecordReader(path), "t", now=9610.0)[0])
    assert "  cluster-ready             ?         -" in text
    assert "  engine               23m40s       10m  running" in text
    assert "  total               53m20s+    10m10s  (since this `pulumi up` started)" in text
    assert "30m" not in text  # the first run's order


def test_each_replicas_service_records_its_own_start():
    from components.ctyun_hcc.service import SlurmServiceProvider

    prov, names = SlurmServiceProvider(), ["kimi-k3", "kimi-k3-r1", "kimi-k3-r2"]
    assert [prov.progress_phase({"jobName": n, "serviceJobNames": names}) for n in names] == [
        "vllm-start", "vllm-start-r1", "vllm-start-r2"]
    assert prov.progress_phase({"jobName": "kimi-k3", "serviceJobNames": []}) == "vllm-start"
