"""Scale the GPU node group with the Capacity Block it targets: up at its start, to 0 before its end.

Why a dynamic resource and not two `aws.autoscaling.Schedule`s: the schedule must follow the
block actually targeted, and be recomputed whenever that block changes (adopting the next block
moves both times); AutoScaling rejects a scheduled action whose start time is in the past, and
deletes one-time actions once they have run. So every apply computes, from the block's window
and the current time (`scaling_plan`, pure):
- block in the future: a scheduled action at its start (desired = the block's instances) and
  one an hour before its end (desired 0); the group stays at 0 until then;
- block running: the group's desired size is set now, and only the end action is scheduled;
- block (nearly) over: desired 0 now, no action left.
A time is only ever sent if it is at least `MIN_LEAD` in the future. The actions have fixed
names per stack (`<prefix>-block-start`, `<prefix>-block-end`), so PutScheduledUpdateGroupAction
replaces the previous block's actions; a stale start action is deleted.

The provider holds no client (it is pickled into state); it calls AutoScaling with the stack's
region and credentials (aws_api.py).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, Dict, Optional

import pulumi
from pulumi.dynamic import CreateResult, ReadResult, UpdateResult

from ..dynamic.provider import DynamicResource
from . import aws_api
from .capacity import SCALE_DOWN_LEAD, _utc, fmt

#: never schedule an action closer than this to now (AutoScaling rejects past start times)
MIN_LEAD = timedelta(minutes=2)
#: inputs whose change means the schedule must be recomputed
PLAN_INPUTS = ("asgName", "reservationId", "startDate", "endDate", "instanceCount", "actionPrefix",
               # what rolls the node group (roll_guard.py): after a roll at 0 the size is set back
               "rollKey")


@dataclass(frozen=True)
class ScalingPlan:
    """What to do now for one block: scheduled times (future only) and the desired size now."""

    scale_up_at: Optional[str]
    scale_down_at: Optional[str]
    desired_now: Optional[int]  # None: leave the group's desired size to the scale-up action

    def to_dict(self) -> Dict[str, Any]:
        return asdict(self)


def scaling_plan(start: Any, end: Any, now: datetime, instance_count: int) -> ScalingPlan:
    """The schedule of a block starting at `start` and ending at `end`, seen at `now`."""
    start, end, now = _utc(start), _utc(end), _utc(now)
    down = end - SCALE_DOWN_LEAD
    if now + MIN_LEAD >= down:
        return ScalingPlan(None, None, 0)
    if now + MIN_LEAD >= start:
        return ScalingPlan(None, fmt(down), instance_count)
    return ScalingPlan(fmt(start), fmt(down), 0)


def action_names(prefix: str) -> Dict[str, str]:
    return {"up": f"{prefix}-block-start", "down": f"{prefix}-block-end"}


# ---------------------------------------------------------------- AutoScaling calls (client passed in)

def existing_actions(asg, group: str, prefix: str) -> Dict[str, dict]:
    names = list(action_names(prefix).values())
    page = asg.describe_scheduled_actions(AutoScalingGroupName=group, ScheduledActionNames=names)
    return {a["ScheduledActionName"]: a for a in page.get("ScheduledUpdateGroupActions", [])}


def apply_plan(asg, group: str, prefix: str, plan: ScalingPlan, instance_count: int, now: datetime) -> None:
    """Make the group's scheduled actions and desired size match `plan`."""
    names = action_names(prefix)
    have = existing_actions(asg, group, prefix)
    for which, at, desired in (("up", plan.scale_up_at, instance_count), ("down", plan.scale_down_at, 0)):
        name = names[which]
        if at is None:
            if name in have:
                asg.delete_scheduled_action(AutoScalingGroupName=group, ScheduledActionName=name)
            continue
        when = _utc(at)
        if when < _utc(now) + MIN_LEAD:  # by construction never; a guard against clock skew
            raise ValueError(f"refusing to schedule {name} at {at}, not in the future")
        asg.put_scheduled_update_group_action(
            AutoScalingGroupName=group, ScheduledActionName=name, StartTime=when,
            MinSize=0, MaxSize=instance_count, DesiredCapacity=desired)
    if plan.desired_now is not None:
        groups = asg.describe_auto_scaling_groups(AutoScalingGroupNames=[group]).get("AutoScalingGroups", [])
        if not groups:
            raise ValueError(f"Auto Scaling group {group} of the GPU node group was not found")
        if int(groups[0].get("DesiredCapacity", -1)) != plan.desired_now:
            asg.update_auto_scaling_group(AutoScalingGroupName=group, MinSize=0,
                                          MaxSize=max(instance_count, plan.desired_now),
                                          DesiredCapacity=plan.desired_now)


def remove_actions(asg, group: str, prefix: str) -> None:
    from botocore.exceptions import ClientError

    try:
        have = existing_actions(asg, group, prefix)
    except ClientError:
        return  # the group is gone with its node group: nothing left to remove
    for name in have:
        asg.delete_scheduled_action(AutoScalingGroupName=group, ScheduledActionName=name)


# ---------------------------------------------------------------- the dynamic provider

def canonical(value: Any) -> str:
    """A value as compared across `up`s: numbers come back from the engine as floats (1.0 for 1)
    and a map's keys in any order."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, dict):
        return "{" + ",".join(f"{k}:{canonical(v)}" for k, v in sorted(value.items())) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(canonical(v) for v in value) + "]"
    return str(value)


def _now() -> datetime:
    return datetime.now(timezone.utc)


class BlockScalingProvider(aws_api.AwsProvider):
    """Keeps one node group's scheduled scaling on the block it targets. Holds no state.
    A changed plan input is an update (the actions are rewritten in place)."""

    OUTPUTS = ("scaleUpAt", "scaleDownAt", "desiredNow", "appliedAt")
    DIFF_KEYS = PLAN_INPUTS
    DELETE_BEFORE_REPLACE = False

    @staticmethod
    def same(old: Any, new: Any) -> bool:
        return canonical(old) == canonical(new)

    def _apply(self, p: Dict[str, Any]) -> Dict[str, Any]:
        count = int(p["instanceCount"])
        now = _now()
        plan = scaling_plan(p["startDate"], p["endDate"], now, count)
        apply_plan(aws_api.client("autoscaling", p), p["asgName"], p["actionPrefix"], plan, count, now)
        return {**p, "scaleUpAt": plan.scale_up_at, "scaleDownAt": plan.scale_down_at,
                "desiredNow": plan.desired_now, "appliedAt": fmt(now)}

    def create(self, p):
        return CreateResult(f"{p['asgName']}/{p['actionPrefix']}", self._apply(p))

    def update(self, id_, olds, p):
        if olds.get("asgName") and olds.get("asgName") != p["asgName"]:
            remove_actions(aws_api.client("autoscaling", p), olds["asgName"], olds["actionPrefix"])
        return UpdateResult(self._apply(p))

    def read(self, id_, p):
        from botocore.exceptions import ClientError

        try:
            have = existing_actions(aws_api.client("autoscaling", p), p["asgName"], p["actionPrefix"])
        except ClientError:
            return ReadResult(id_, p)  # the group is gone or unreadable: keep what we know
        names = action_names(p["actionPrefix"])
        up, down = have.get(names["up"]), have.get(names["down"])
        return ReadResult(id_, {**p, "scaleUpAt": fmt(up["StartTime"]) if up else None,
                                "scaleDownAt": fmt(down["StartTime"]) if down else None})

    def delete(self, id_, p):
        remove_actions(aws_api.client("autoscaling", p), p["asgName"], p["actionPrefix"])


class BlockScaling(DynamicResource, module="aws", name="BlockScaling"):
    """Scheduled scaling of the GPU node group on one block (`pulumi-python:dynamic/aws:BlockScaling`).

    Inputs: `asgName`, `actionPrefix`, `reservationId`, `startDate`, `endDate`,
    `instanceCount`, `aws`/`awsSecrets` (aws_api.py).
    """

    scaleUpAt: pulumi.Output[Optional[str]]
    scaleDownAt: pulumi.Output[Optional[str]]
    desiredNow: pulumi.Output[Optional[int]]

    def __init__(self, name: str, props: Dict[str, Any], opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__(BlockScalingProvider(), name, props, opts)
