"""A Capacity Block extended in place: EC2 moves its end and keeps its id (Amazon EC2 User Guide,
"Extend Capacity Blocks", https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/capacity-blocks-extend.html,
read 2026-12-02: "its end date will be updated ... Your Capacity Reservation ID will remain the
same"). The documented path is `pulumi up --refresh` (docs/aws-eks.md, "Extending the block"):
refresh reads the new end, the node group's scale-down moves to an hour before it, the readiness
gate takes the new end, and a buy-mode `up` whose state says the block is over adopts the
extended block instead of buying another.

EC2 and AutoScaling are botocore's Stubber on the pinned models; an unexpected call (a purchase,
a scale to 0) fails the test.
"""

from datetime import timedelta

import boto3
import pytest
from botocore.stub import Stubber

from components.aws_eks import capacity as cap
from components.aws_eks import readiness as rd
from components.aws_eks import scaling as sc
from tests.unit.test_aws_capacity import IDENTITY, ITYPE, LOOKUP, STACK_TAGS, T0, reservation_api

CR = "cr-0123456789abcdef0"
OLD_END, NEW_END = T0 + timedelta(hours=24), T0 + timedelta(hours=24 + 7 * 24)
GROUP = "eks-kimi-k3-gpu-asg"
NAMES = ["kimi-k3-block-start", "kimi-k3-block-end"]


def client(service):
    return boto3.client(service, region_name="us-east-2", aws_access_key_id="testing",
                        aws_secret_access_key="testing")


def bought_state():
    """The block's state after a buy-mode create: inputs, then the block's outputs."""
    block = cap.Block.from_api(reservation_api(CR, state="active", tags=STACK_TAGS))
    inputs = {"region": "us-east-2", "instanceType": ITYPE, "instanceCount": 1, "reservationId": None,
              "durationHours": 24, "maxUpfrontFeeUsd": 90_000, "stackIdentity": IDENTITY}
    return {**inputs, **block.outputs(), "purchased": True, "upfront_fee_usd": 61_000.0,
            "requested": cap.requested(inputs)}


def extended(**kw):
    return reservation_api(CR, state="active", hours=24 + 7 * 24, tags=STACK_TAGS, **kw)


def test_refresh_reads_the_new_end_and_the_schedule_moves_to_it(monkeypatch):
    ec2, asg = client("ec2"), client("autoscaling")
    old = bought_state()
    with Stubber(ec2) as stub:
        stub.add_response("describe_capacity_reservations", {"CapacityReservations": [extended()]},
                          {"CapacityReservationIds": [CR]})
        refreshed = cap.read_outputs(ec2, CR, old)
    assert refreshed["end_date"] == cap.fmt(NEW_END) and refreshed["reservation_id"] == CR
    assert refreshed["instances_stop_at"] == cap.fmt(NEW_END - cap.TERMINATION_LEAD)
    assert refreshed["upfront_fee_usd"] == 61_000.0 and refreshed["purchased"] is True

    # the next `up`: the schedule's endDate input is the refreshed end; two hours into the block
    now = T0 + timedelta(hours=2)
    monkeypatch.setattr(sc, "_now", lambda: now)
    monkeypatch.setattr(sc.aws_api, "client", lambda service, p, max_attempts=5: asg)
    base = {"asgName": GROUP, "actionPrefix": "kimi-k3", "reservationId": CR, "startDate": cap.fmt(T0),
            "instanceCount": 1, "region": "us-east-2", "aws": {"region": "us-east-2", "profile": None}}
    before = {**base, "endDate": old["end_date"], "scaleUpAt": None,
              "scaleDownAt": cap.fmt(OLD_END - cap.SCALE_DOWN_LEAD), "desiredNow": 1}
    after = {**base, "endDate": refreshed["end_date"]}
    p = sc.BlockScalingProvider()
    assert p.diff("id", before, after).changes
    with Stubber(asg) as stub:
        stub.add_response("describe_scheduled_actions", {"ScheduledUpdateGroupActions": [{
            "AutoScalingGroupName": GROUP, "ScheduledActionName": NAMES[1],
            "StartTime": OLD_END - cap.SCALE_DOWN_LEAD, "MinSize": 0, "MaxSize": 1, "DesiredCapacity": 0}]},
            {"AutoScalingGroupName": GROUP, "ScheduledActionNames": NAMES})
        # the scale-down is rewritten at the new end less an hour (same name: it replaces the old)
        stub.add_response("put_scheduled_update_group_action", {}, {
            "AutoScalingGroupName": GROUP, "ScheduledActionName": NAMES[1],
            "StartTime": NEW_END - cap.SCALE_DOWN_LEAD, "MinSize": 0, "MaxSize": 1, "DesiredCapacity": 0})
        # the running group already has its node: no UpdateAutoScalingGroup (a scale to 0 would fail here)
        stub.add_response("describe_auto_scaling_groups", {"AutoScalingGroups": [{
            "AutoScalingGroupName": GROUP, "MinSize": 0, "MaxSize": 1, "DesiredCapacity": 1,
            "DefaultCooldown": 300, "AvailabilityZones": ["us-east-2b"], "HealthCheckType": "EC2",
            "CreatedTime": T0}]}, {"AutoScalingGroupNames": [GROUP]})
        out = p.update("id", before, after).outs
        stub.assert_no_pending_responses()
    assert out["scaleDownAt"] == cap.fmt(NEW_END - cap.SCALE_DOWN_LEAD) and out["desiredNow"] == 1


def test_the_gate_takes_the_new_end_so_a_later_refresh_does_not_call_the_block_ended():
    p = rd.EndpointReadinessProvider()
    olds = {"launchFingerprint": "f1", "ready": True, "blockEnd": cap.fmt(OLD_END), "blockStart": cap.fmt(T0)}
    assert p.diff("id", olds, {**olds, "blockEnd": cap.fmt(NEW_END)}).changes
    assert not p.diff("id", olds, dict(olds)).changes  # the same end: nothing to gate again
    # a stack deployed before the gate knew the end (no blockEnd in state) is not gated for that
    legacy = {k: v for k, v in olds.items() if k != "blockEnd"}
    assert not p.diff("id", legacy, dict(legacy)).changes


def test_an_up_that_thinks_the_block_over_adopts_the_extended_block_and_buys_nothing(monkeypatch):
    """Buy mode, no refresh, `up` after the old end: the state says over, so the provider looks
    for the stack's tagged block before it would buy, finds the extended one and keeps it."""
    ec2 = client("ec2")
    monkeypatch.setattr(cap, "ec2_client", lambda props, max_attempts=5: ec2)
    monkeypatch.setattr(cap, "_now", lambda: OLD_END + timedelta(hours=1))
    old = bought_state()
    new = {k: old[k] for k in ("region", "instanceType", "instanceCount", "durationHours", "maxUpfrontFeeUsd",
                               "stackIdentity")}
    p = cap.CapacityBlockProvider()
    assert p.diff(CR, old, new).changes
    with Stubber(ec2) as stub:
        stub.add_response("describe_capacity_reservations", {"CapacityReservations": [extended()]}, LOOKUP)
        out = p.update(CR, old, new).outs  # no purchase queued: buying would fail the Stubber
        stub.assert_no_pending_responses()
    assert out["reservation_id"] == CR and out["end_date"] == cap.fmt(NEW_END) and out["adopted_by_tag"]
    assert out["upfront_fee_usd"] == 61_000.0 and out["purchased"] is True  # the fee paid is kept


@pytest.mark.parametrize("state", ["expired", "cancelled"])
def test_a_block_that_was_not_extended_is_still_over_for_the_next_up(state):
    block = cap.Block.from_api(reservation_api(CR, state=state, tags=STACK_TAGS))
    assert not cap.adoptable(block, IDENTITY, ITYPE, 1, OLD_END - timedelta(hours=3))


# ---------------------------------------------------------------- the next `up` after the end, said at preview

def diff_warnings(monkeypatch, old, new, now):
    """The warnings `diff` gives (what `pulumi preview` shows) and its result; EC2 is a Stubber
    with nothing queued, so any call from diff fails the test."""
    ec2, said = client("ec2"), []
    monkeypatch.setattr(cap, "ec2_client", lambda props, max_attempts=5: ec2)
    monkeypatch.setattr(cap, "_now", lambda: now)
    monkeypatch.setattr(cap.CapacityBlockProvider, "warn", lambda self, text: said.append(text))
    with Stubber(ec2):
        d = cap.CapacityBlockProvider().diff(CR, old, new)
    return said, d


def buy_news(old, **kw):
    return {**{k: old[k] for k in ("region", "instanceType", "instanceCount", "durationHours",
                                   "maxUpfrontFeeUsd", "stackIdentity")}, **kw}


def test_preview_after_the_end_says_the_up_will_buy_and_under_which_cap(monkeypatch):
    old = bought_state()
    said, d = diff_warnings(monkeypatch, old, buy_news(old), OLD_END)
    assert d.changes and len(said) == 1
    assert said[0].startswith(f"Capacity Block {CR} ended at {cap.fmt(OLD_END)} (active when last read): "
                              "this `pulumi up` keeps it if it was extended, else BUYS the next block of 1 x "
                              f"{ITYPE}, the cheapest fitting offer if its upfront fee is at most $90,000.00")
    assert "set kimi-k3:maxUpfrontFeeUsd 0" in said[0]


def test_preview_after_the_end_without_a_cap_says_nothing_is_bought(monkeypatch):
    old = bought_state()
    said, _ = diff_warnings(monkeypatch, old, buy_news(old, maxUpfrontFeeUsd=0), OLD_END + timedelta(days=3))
    assert len(said) == 1 and "lists the Capacity Block offerings of 1 x" in said[0]
    assert "buying nothing" in said[0] and "BUYS" not in said[0]


def test_preview_after_an_adopted_blocks_end_names_the_fix(monkeypatch):
    old = {**bought_state(), "reservationId": CR, "purchased": False, "stackIdentity": None}
    said, d = diff_warnings(monkeypatch, old, {**buy_news(old), "reservationId": CR}, OLD_END)
    assert d.changes and len(said) == 1
    assert "re-reads it and stops unless it was extended" in said[0]
    assert "kimi-k3:capacityReservationId cr-..." in said[0] and "BUYS" not in said[0]


@pytest.mark.parametrize("now,new", [
    (OLD_END - cap.TERMINATION_LEAD - timedelta(minutes=1), {}),  # still running: nothing to say
    (OLD_END, {"reservationId": "cr-0bbbbbbbbbbbbbbbb"}),         # another block adopted: no purchase
])
def test_no_notice_while_the_block_runs_or_when_another_is_adopted(monkeypatch, now, new):
    old = bought_state()
    said, _ = diff_warnings(monkeypatch, old, buy_news(old, **new), now)
    assert said == []
