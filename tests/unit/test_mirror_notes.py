"""What the plan tells a user whose block may start before the S3 mirror is full (issue 12): a
streamed start cannot fall back to the hub, it waits for the mirror on the GPU clock; a staged one
stages from the hub. Said once in the plan's notes and once in the mirror phase's source."""

import re

import pytest

from components.inference.planner import PlanRequest, plan

WAIT = "waits for it on the GPU clock (streaming cannot fall back to the hub)"


def _plan(stream, lead):
    return plan(PlanRequest("mxfp4", "p6-b300.48xlarge", 1, weights_source="mirror", stream_weights=stream,
                            block_lead_s=lead))


@pytest.mark.parametrize("stream,late,phase_end", [
    (True, WAIT, "this start's pods wait for it (streaming cannot fall back to the hub)"),
    (False, "stages from the hub", "this start stages from the hub")])
def test_a_block_starting_before_the_mirror_is_full(stream, late, phase_end):
    p = _plan(stream, 60)
    (note,) = [n for n in p.notes if "S3 mirror" in n]
    assert re.fullmatch(r"the S3 mirror needs ~\d+ min to fill but the block starts in 1\.0 min: "
                        rf"this first start {re.escape(late)}, later starts from the mirror", note), note
    (mirror,) = [ph for ph in p.cold_start.phases if ph.name == "mirror"]
    assert mirror.source.endswith("; the block starts before it is full, so " + phase_end)


@pytest.mark.parametrize("stream,late", [(True, WAIT), (False, "stages from the hub")])
def test_without_a_known_start_the_plan_says_how_long_before_to_run_up(stream, late):
    (note,) = [n for n in _plan(stream, None).notes if "S3 mirror" in n]
    assert re.fullmatch(r"the S3 mirror fills in ~\d+ min on the system node: run `pulumi up` at least "
                        rf"that long before the block starts, or its first start {re.escape(late)}", note), note


def test_the_first_token_clock_starts_with_the_block_on_aws_and_with_the_nodes_on_ctyun():
    def line(p):
        (got,) = [x for x in p.explain().splitlines() if x.startswith("first token")]
        return got
    assert re.search(r" after the block starts \(mirror\); hub path ", line(_plan(False, None)))
    assert re.search(r" after the nodes are up \(cthpc\)$", line(plan(PlanRequest("w4a8", "atlas-800-a3", 2))))
