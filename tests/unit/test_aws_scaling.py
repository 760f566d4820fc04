"""Block lifecycle: the GPU node group's schedule follows the block actually targeted.

Pure recomputation across two blocks, then the provider against botocore's Stubber on the real
AutoScaling model: adopting the next block moves both actions, a running block is scaled now,
and no start time in the past is ever sent.
"""

from datetime import datetime, timedelta, timezone

import boto3
import pytest
from botocore.stub import Stubber

from components.aws_eks import scaling as sc

A_START = datetime(2026, 12, 2, 11, 30, tzinfo=timezone.utc)
A_END = A_START + timedelta(days=1)
B_START = datetime(2026, 12, 9, 11, 30, tzinfo=timezone.utc)
B_END = B_START + timedelta(days=7)
GROUP = "eks-kimi-k3-gpu-asg"
NAMES = ["kimi-k3-block-start", "kimi-k3-block-end"]


def test_schedule_recomputed_across_two_blocks():
    # block A in the future: both actions, group at 0
    before_a = sc.scaling_plan(A_START, A_END, A_START - timedelta(hours=5), 2)
    assert before_a == sc.ScalingPlan("2026-12-02T11:30:00Z", "2026-12-03T10:30:00Z", 0)
    # A running: scale now, only the end action
    during_a = sc.scaling_plan(A_START, A_END, A_START + timedelta(hours=2), 2)
    assert during_a == sc.ScalingPlan(None, "2026-12-03T10:30:00Z", 2)
    # A over (its scale-down time has come): 0 now, nothing scheduled
    after_a = sc.scaling_plan(A_START, A_END, A_END - timedelta(minutes=50), 2)
    assert after_a == sc.ScalingPlan(None, None, 0)
    # the next block B adopted after A ended: the actions move to B
    next_b = sc.scaling_plan(B_START, B_END, A_END + timedelta(hours=1), 2)
    assert next_b == sc.ScalingPlan("2026-12-09T11:30:00Z", "2026-12-16T10:30:00Z", 0)
    # B adopted when it has already started: scale now, never a past start time
    late_b = sc.scaling_plan(B_START, B_END, B_START + timedelta(minutes=1), 2)
    assert late_b.scale_up_at is None and late_b.desired_now == 2


@pytest.mark.parametrize("minutes", range(-200, 200, 7))
def test_no_time_sent_is_ever_in_the_past(minutes):
    now = A_START + timedelta(minutes=minutes)
    plan = sc.scaling_plan(A_START, A_START + timedelta(hours=3), now, 1)
    for at in (plan.scale_up_at, plan.scale_down_at):
        if at is not None:
            assert datetime.fromisoformat(at.replace("Z", "+00:00")) >= now + sc.MIN_LEAD


def asg_client():
    return boto3.client("autoscaling", region_name="us-east-2", aws_access_key_id="testing",
                        aws_secret_access_key="testing")


def props(start, end, count=2, asg=GROUP, rid="cr-0aaaaaaaaaaaaaaaa"):
    return {"asgName": asg, "actionPrefix": "kimi-k3", "reservationId": rid, "startDate": start,
            "endDate": end, "instanceCount": count, "region": "us-east-2",
            "aws": {"region": "us-east-2", "profile": None}, "progressFile": "/tmp/x.jsonl"}


def action(name, at):
    return {"AutoScalingGroupName": GROUP, "ScheduledActionName": name, "StartTime": at,
            "MinSize": 0, "MaxSize": 2, "DesiredCapacity": 2 if name.endswith("start") else 0}


def group(desired):
    return {"AutoScalingGroups": [{
        "AutoScalingGroupName": GROUP, "MinSize": 0, "MaxSize": 2, "DesiredCapacity": desired,
        "DefaultCooldown": 300, "AvailabilityZones": ["us-east-2b"], "HealthCheckType": "EC2",
        "CreatedTime": A_START}]}


def put(name, at, desired):
    return {"AutoScalingGroupName": GROUP, "ScheduledActionName": name, "StartTime": at,
            "MinSize": 0, "MaxSize": 2, "DesiredCapacity": desired}


@pytest.fixture
def provider(monkeypatch):
    client = asg_client()
    clock = {"now": A_START - timedelta(hours=5)}
    monkeypatch.setattr(sc.aws_api, "client", lambda service, p, max_attempts=5: client)
    monkeypatch.setattr(sc, "_now", lambda: clock["now"])
    with Stubber(client) as stub:
        yield sc.BlockScalingProvider(), stub, clock
        stub.assert_no_pending_responses()


def test_provider_follows_block_a_then_the_next_block_b(provider):
    p, stub, clock = provider
    # create on A (future): both actions at A's times, nothing else
    stub.add_response("describe_scheduled_actions", {"ScheduledUpdateGroupActions": []},
                      {"AutoScalingGroupName": GROUP, "ScheduledActionNames": NAMES})
    stub.add_response("put_scheduled_update_group_action", {}, put(NAMES[0], A_START, 2))
    stub.add_response("put_scheduled_update_group_action", {}, put(NAMES[1], A_END - timedelta(hours=1), 0))
    stub.add_response("describe_auto_scaling_groups", group(0), {"AutoScalingGroupNames": [GROUP]})
    a = p.create(props("2026-12-02T11:30:00Z", "2026-12-03T11:30:00Z"))
    assert a.outs["scaleUpAt"] == "2026-12-02T11:30:00Z" and a.outs["desiredNow"] == 0
    # unchanged block: nothing to do; a steering input alone changes nothing
    same = {**props("2026-12-02T11:30:00Z", "2026-12-03T11:30:00Z"), "progressFile": "/elsewhere"}
    assert p.diff(a.id, a.outs, same).changes is False
    # B adopted after A ended (A's actions have run and AWS deleted them): both move to B
    clock["now"] = A_END + timedelta(hours=1)
    b_props = props("2026-12-09T11:30:00Z", "2026-12-16T11:30:00Z", rid="cr-0bbbbbbbbbbbbbbbb")
    assert p.diff(a.id, a.outs, b_props).changes is True
    stub.add_response("describe_scheduled_actions", {"ScheduledUpdateGroupActions": []},
                      {"AutoScalingGroupName": GROUP, "ScheduledActionNames": NAMES})
    stub.add_response("put_scheduled_update_group_action", {}, put(NAMES[0], B_START, 2))
    stub.add_response("put_scheduled_update_group_action", {}, put(NAMES[1], B_END - timedelta(hours=1), 0))
    stub.add_response("describe_auto_scaling_groups", group(0), {"AutoScalingGroupNames": [GROUP]})
    b = p.update(a.id, a.outs, b_props)
    assert b.outs["scaleUpAt"] == "2026-12-09T11:30:00Z" and b.outs["scaleDownAt"] == "2026-12-16T10:30:00Z"


def test_provider_scales_a_running_block_now_and_deletes_the_stale_start(provider):
    p, stub, clock = provider
    clock["now"] = B_START + timedelta(hours=3)
    stub.add_response("describe_scheduled_actions", {"ScheduledUpdateGroupActions": [
        action(NAMES[0], A_START), action(NAMES[1], A_END - timedelta(hours=1))]},
        {"AutoScalingGroupName": GROUP, "ScheduledActionNames": NAMES})
    stub.add_response("delete_scheduled_action", {}, {"AutoScalingGroupName": GROUP,
                                                      "ScheduledActionName": NAMES[0]})
    stub.add_response("put_scheduled_update_group_action", {}, put(NAMES[1], B_END - timedelta(hours=1), 0))
    stub.add_response("describe_auto_scaling_groups", group(0), {"AutoScalingGroupNames": [GROUP]})
    stub.add_response("update_auto_scaling_group", {}, {"AutoScalingGroupName": GROUP, "MinSize": 0,
                                                        "MaxSize": 2, "DesiredCapacity": 2})
    out = p.create(props("2026-12-09T11:30:00Z", "2026-12-16T11:30:00Z"))
    assert out.outs["desiredNow"] == 2 and out.outs["scaleUpAt"] is None


def test_delete_removes_the_actions_and_tolerates_a_gone_group(provider):
    p, stub, _ = provider
    stub.add_response("describe_scheduled_actions", {"ScheduledUpdateGroupActions": [
        action(NAMES[1], A_END - timedelta(hours=1))]},
        {"AutoScalingGroupName": GROUP, "ScheduledActionNames": NAMES})
    stub.add_response("delete_scheduled_action", {}, {"AutoScalingGroupName": GROUP,
                                                      "ScheduledActionName": NAMES[1]})
    p.delete("id", props("2026-12-02T11:30:00Z", "2026-12-03T11:30:00Z"))
    stub.add_client_error("describe_scheduled_actions", "ValidationError", "group not found", 400)
    p.delete("id", props("2026-12-02T11:30:00Z", "2026-12-03T11:30:00Z"))


def test_the_guard_refuses_a_past_time_even_if_asked():
    plan = sc.ScalingPlan("2026-12-01T00:00:00Z", None, None)

    class NoCalls:
        def describe_scheduled_actions(self, **kw):
            return {"ScheduledUpdateGroupActions": []}

    with pytest.raises(ValueError, match="not in the future"):
        sc.apply_plan(NoCalls(), GROUP, "kimi-k3", plan, 1, datetime(2026, 12, 2, tzinfo=timezone.utc))


def test_refresh_reads_the_actions_and_survives_a_gone_group(provider):
    p, stub, _ = provider
    stub.add_response("describe_scheduled_actions", {"ScheduledUpdateGroupActions": [
        action(NAMES[1], A_END - timedelta(hours=1))]},
        {"AutoScalingGroupName": GROUP, "ScheduledActionNames": NAMES})
    r = p.read("id", props("2026-12-02T11:30:00Z", "2026-12-03T11:30:00Z"))
    assert r.outs["scaleUpAt"] is None and r.outs["scaleDownAt"] == "2026-12-03T10:30:00Z"
    stub.add_client_error("describe_scheduled_actions", "ValidationError", "group not found", 400)
    r = p.read("id", props("2026-12-02T11:30:00Z", "2026-12-03T11:30:00Z"))
    assert r.outs["asgName"] == GROUP
