"""After the first token: what `status` says once the Capacity Block (or training plan) is over.

The program records the window it bought (progress/program.record_billing_start: the block's
StartDate and EndDate, the plan's StartTime and EndTime); `status` counts the plan's hourly
cost only inside it. Before this record had an end, the spend kept growing at the GPU rate for
as long as anyone looked after the block had ended (a 24 h block looked at a week later: 7x).
"""

import json

from components.cli.status import snapshot
from components.progress.program import BILLING_BLOCK, BILLING_TRAINING_PLAN, parse_utc, write_billing_start
from components.progress.record import ProgressLog, RecordReader
from components.progress.view import plain
from tests.unit.test_clock import aws

START, END = "2026-12-02T11:30:00Z", "2026-12-03T11:30:00Z"


def status_text(path, now):
    return plain(snapshot(RecordReader(str(path)), "t", now=now)[0])


def test_the_spend_stops_at_the_blocks_end(tmp_path):
    path = tmp_path / "s.jsonl"
    t0 = parse_utc(START)
    ProgressLog(str(path), echo=False, clock=lambda: t0 - 3600).run_started("aws-eks", aws(), 100.0)
    write_billing_start(str(path), START, BILLING_BLOCK, END)
    during = status_text(path, t0 + 6 * 3600)
    assert "spend since billing started at 2026-12-02 11:30 UTC" in during and "$600.00 at $100.00/h" in during
    week_later = status_text(path, t0 + 7 * 86400)
    assert ("spend from 2026-12-02 11:30 UTC (the Capacity Block's start (EC2 StartDate)) to its end at "
            "2026-12-03 11:30 UTC: $2,400.00 at $100.00/h (the plan's cost); since then its GPU nodes bill "
            "nothing") in week_later
    assert "$16,800" not in week_later


def test_the_training_plans_end_is_recorded_with_its_start(tmp_path):
    path = tmp_path / "p.jsonl"
    write_billing_start(str(path), START, BILLING_TRAINING_PLAN, END)
    (rec,) = [json.loads(x) for x in path.read_text().splitlines()]
    assert (rec["billing_start"], rec["billing_end"]) == (parse_utc(START), parse_utc(END))


def test_an_end_that_is_not_a_time_after_the_start_is_not_recorded(tmp_path):
    path = tmp_path / "p.jsonl"
    for end in (None, "soon", START, "2026-12-01T11:30:00Z"):
        write_billing_start(str(path), START, BILLING_BLOCK, end)
    recs = [json.loads(x) for x in path.read_text().splitlines()]
    assert len(recs) == 4 and not any("billing_end" in r for r in recs)


def test_the_next_block_starts_a_new_window(tmp_path):
    """The second `up` after the block expired buys or adopts the next one: its record wins."""
    path = tmp_path / "s.jsonl"
    t0 = parse_utc(START)
    ProgressLog(str(path), echo=False, clock=lambda: t0 - 3600).run_started("aws-eks", aws(), 100.0)
    write_billing_start(str(path), START, BILLING_BLOCK, END)
    write_billing_start(str(path), "2026-12-10T11:30:00Z", BILLING_BLOCK, "2026-12-11T11:30:00Z")
    assert "spend: $0.00 so far: billing starts in" in status_text(path, t0 + 7 * 86400)


# ---------------------------------------------------------------- the readiness gate once the block is over

from datetime import datetime, timedelta, timezone  # noqa: E402

import pytest  # noqa: E402

from components.aws_eks import readiness as rd  # noqa: E402
from components.aws_eks.hyperpod import readiness as hr  # noqa: E402
from tests.unit.test_aws_readiness import props  # noqa: E402

BLOCK_END = datetime(2026, 12, 3, 11, 30, tzinfo=timezone.utc)


def no_cluster(*a, **k):
    raise AssertionError("an ended block has no node to look at: nothing may call the cluster")


@pytest.mark.parametrize("provider,lead,words", [
    (rd.EndpointReadinessProvider, timedelta(hours=1),
     ["the Capacity Block cr-0aaaaaaaaaaaaaaaa ends at 2026-12-03T11:30:00Z and kimi-k3 scaled its nodes to 0 at "
      "2026-12-03T10:30:00Z: nothing serves until the next block", "kimi-k3:capacityReservationId"]),
    (hr.HyperPodReadinessProvider, timedelta(0),
     ["the training plan cr-0aaaaaaaaaaaaaaaa ended at 2026-12-03T11:30:00Z: its nodes are gone",
      "kimi-k3:trainingPlanArn"]),
])
def test_a_refresh_after_the_end_records_it_at_once_and_an_up_fails_with_it(monkeypatch, tmp_path, capsys,
                                                                               provider, lead, words):
    monkeypatch.setattr(provider, "cluster_factory", no_cluster)
    p = {**props("2026-12-02T11:30:00Z", blockEnd=rd.fmt(BLOCK_END)), "progressFile": str(tmp_path / "p.jsonl")}
    for mod in (rd, hr):
        monkeypatch.setattr(mod, "_now", lambda: BLOCK_END - lead + timedelta(seconds=1))
    read = provider().read("kimi-k3/kimi-k3-api", {**p, "ready": True, "state": "serving"}).outs
    assert read["ready"] is False and read["state"] == "block-ended" and read["endpoint"] is None
    assert all(w in read["lastSeen"] for w in words), read["lastSeen"]
    assert words[0] in capsys.readouterr().err  # `pulumi refresh` shows it
    with pytest.raises(rd.GateFailed, match="nothing serves until the next"):
        provider().update("kimi-k3/kimi-k3-api", read, p)


def test_the_gate_runs_until_the_scale_down_and_without_an_end_as_before():
    now = BLOCK_END - timedelta(hours=1, seconds=1)
    assert not rd.serving_over(rd.fmt(BLOCK_END), now, rd.SCALE_DOWN_LEAD)
    assert rd.serving_over(rd.fmt(BLOCK_END), now + timedelta(seconds=1), rd.SCALE_DOWN_LEAD)
    assert not rd.serving_over(None, now + timedelta(days=30), rd.SCALE_DOWN_LEAD)  # a stack deployed before
