"""The Capacity Block rule for upgrades: the GPU node group is at 0 nodes before it rolls.

EKS's guide for managed node groups on Capacity Blocks: "When upgrading managed node groups with
Capacity Blocks, make sure that the desired size of the node group is set to `0`"
(awsdocs/amazon-eks-user-guide latest/ug/ml/capacity-blocks-mng.adoc, commit
f60041409f8255b59682a2ca39382a2278e0e38b): a block has no spare instance, so an update cannot
launch a replacement before it terminates a node, and the `MINIMAL` update strategy alone is not
what the guide asks for.

`GpuRollGuard` (`pulumi-python:dynamic/aws:GpuRollGuard`) sits between the launch template and
the GPU node group (which depends on it). Its input `rollKey` is what makes EKS roll the group's
nodes: the Kubernetes version, the AMI type, the release version and the launch template version
(a new template version: another block, security group, disk, user data). On every create and
update it compares `rollKey` with the live node group (DescribeNodegroup: so the first `up` after
kimi-k3 itself changed is covered too, not only a changed input) and, when they differ while the
block runs and the group has nodes, it sets the node group's desired size to 0 through the EKS
API (UpdateNodegroupConfig, waits for the update to succeed) and waits until its Auto Scaling
group has no instance left. Then the node group update rolls nothing; afterwards BlockScaling
(scaling.py, which also takes `rollKey`) sets the desired size back for the running block.
`pulumi preview` says it will happen (serving stops until the new nodes serve again). A change
while the block has not started, has ended, or with the group already at 0 passes untouched.

Pure parts (`block_running`, `rolls`) apart from the thin EKS/AutoScaling calls (client passed
in, tested through botocore's Stubber) and the provider (holds no client, reads credentials per
call: aws_api.py).
"""

from __future__ import annotations

import time
from datetime import datetime, timezone
from typing import Any, Callable, Dict, List, Mapping, Optional

import pulumi
from pulumi.dynamic import CreateResult, UpdateResult

from . import aws_api
from ..dynamic.provider import Deadline, DynamicResource, is_unknown
from ..inference.errors import ConfigError
from .capacity import TERMINATION_LEAD, _utc
from .eks_versions import update_refusal

#: rollKey fields, and the DescribeNodegroup field each is compared with
ROLL_FIELDS = {"kubernetesVersion": "version", "amiType": "amiType", "releaseVersion": "releaseVersion",
               "launchTemplateVersion": "launchTemplate.version"}
#: how the GPU node group is recognised among the cluster's node groups (nodegroup.py sets both)
GPU_LABEL = "kimi-k3/gpu-node"
SCALE_DOWN_TIMEOUT_S = 1800
POLL_S = 15.0


def block_running(start: Any, end: Any, now: datetime) -> bool:
    """Can the block's instances be running now (from its start until AWS stops them)?"""
    if not start or not end:
        return False
    return _utc(start) <= _utc(now) < _utc(end) - TERMINATION_LEAD


def _live(node_group: Mapping[str, Any], path: str) -> Optional[str]:
    value: Any = node_group
    for part in path.split("."):
        value = (value or {}).get(part) if isinstance(value, Mapping) else None
    return None if value is None else str(value)


def rolls(node_group: Mapping[str, Any], roll_key: Mapping[str, Any]) -> List[str]:
    """The rollKey fields whose wanted value differs from the live node group (a field left
    unset, None, is not asked for and never rolls)."""
    out = []
    for key, path in ROLL_FIELDS.items():
        want = roll_key.get(key)
        if want is None or is_unknown(want) or want == "$Latest":
            continue
        have = _live(node_group, path)
        if have is not None and str(want) != have:
            out.append(f"{key} {have} -> {want}")
    return out


# ---------------------------------------------------------------- EKS / AutoScaling calls

def gpu_node_group(eks, cluster: str) -> Optional[Dict[str, Any]]:
    """The cluster's GPU node group on a Capacity Block (label kimi-k3/gpu-node), or None."""
    args: Dict[str, Any] = {"clusterName": cluster}
    while True:
        page = eks.list_nodegroups(**args)
        for name in page.get("nodegroups", []):
            ng = eks.describe_nodegroup(clusterName=cluster, nodegroupName=name)["nodegroup"]
            if ng.get("capacityType") == "CAPACITY_BLOCK" and (ng.get("labels") or {}).get(GPU_LABEL) == "true":
                return ng
        if not page.get("nextToken"):
            return None
        args["nextToken"] = page["nextToken"]


def _asg_name(ng: Mapping[str, Any]) -> Optional[str]:
    groups = (ng.get("resources") or {}).get("autoScalingGroups") or []
    return groups[0].get("name") if groups else None


def instances(asg, group: Optional[str]) -> int:
    if not group:
        return 0
    found = asg.describe_auto_scaling_groups(AutoScalingGroupNames=[group]).get("AutoScalingGroups", [])
    return len(found[0].get("Instances", [])) if found else 0


def scale_to_zero(eks, asg, ng: Mapping[str, Any], deadline: Deadline,
                  sleep: Callable[[float], None] = time.sleep, poll_s: float = POLL_S) -> int:
    """Desired size 0 through the EKS API, then wait for the update and for no instance left;
    the desired size it had."""
    cluster, name = ng["clusterName"], ng["nodegroupName"]
    cfg = ng.get("scalingConfig") or {}
    before = int(cfg.get("desiredSize") or 0)
    update = eks.update_nodegroup_config(clusterName=cluster, nodegroupName=name, scalingConfig={
        "minSize": 0, "maxSize": max(1, int(cfg.get("maxSize") or 1)), "desiredSize": 0})["update"]

    def updated():
        u = eks.describe_update(name=cluster, updateId=update["id"], nodegroupName=name)["update"]
        if u["status"] in ("Failed", "Cancelled"):
            errors = "; ".join(e.get("errorMessage", "") for e in u.get("errors") or [])
            raise RuntimeError(f"scaling GPU node group {name} to 0 failed ({u['status']}): {errors}")
        return u["status"] == "Successful", None, f"update {update['id']} {u['status']}"

    deadline.until(f"node group {name} at desired size 0", updated, poll_s, sleep)
    group = _asg_name(ng)
    deadline.until(f"the instances of {group} to terminate",
                   lambda: (lambda n: (n == 0, None, f"{n} instances"))(instances(asg, group)), poll_s, sleep)
    return before


def guard(eks, asg, props: Mapping[str, Any], now: datetime, deadline: Deadline,
          sleep: Callable[[float], None] = time.sleep, warn: Callable[[str], None] = lambda _: None) -> Dict[str, Any]:
    """What create/update do (see the module docstring); the outputs."""
    out = {"scaledDownFrom": None, "rolled": []}
    if not block_running(props.get("startDate"), props.get("endDate"), now):
        return out
    ng = gpu_node_group(eks, props["clusterName"])
    if ng is None:  # first creation: nothing to roll
        return out
    changes = rolls(ng, props.get("rollKey") or {})
    out["rolled"] = changes
    desired = int((ng.get("scalingConfig") or {}).get("desiredSize") or 0)
    if not changes or (desired == 0 and instances(asg, _asg_name(ng)) == 0):
        return out
    warn(f"GPU node group {ng['nodegroupName']} rolls ({', '.join(changes)}) while Capacity Block "
         f"{props.get('reservationId')} runs: scaling it to 0 first (EKS's rule for Capacity Blocks); "
         "serving stops until the new nodes serve again")
    out["scaledDownFrom"] = scale_to_zero(eks, asg, ng, deadline, sleep)
    return out


# ---------------------------------------------------------------- the dynamic provider

def _now() -> datetime:
    return datetime.now(timezone.utc)


def refuse_version_skip(olds: Mapping[str, Any], news: Mapping[str, Any]) -> None:
    """At preview, before anything changes: a `kimi-k3:clusterVersion` EKS would refuse to update
    to (two minors up, or down). Left to the update, the guard would first take the GPU node
    group to 0 while the block runs, then the control plane's UpdateClusterVersion would fail and
    the group would stay at 0 (BlockScaling waits for the node group update) until a later `up`."""
    old = ((olds.get("rollKey") or {}).get("kubernetesVersion"))
    new = ((news.get("rollKey") or {}).get("kubernetesVersion"))
    if not isinstance(old, str) or not isinstance(new, str) or old == new:
        return
    refusal = update_refusal(old, new)
    if refusal:
        why, fix = refusal
        raise ConfigError("kimi-k3:clusterVersion", new, fix, problem=f"is refused: {why}")


class GpuRollGuardProvider(aws_api.AwsProvider):
    """Scales the GPU node group to 0 before an update rolls it while its block runs."""

    OUTPUTS = ("scaledDownFrom", "rolled")
    DIFF_KEYS = ("rollKey", "startDate", "endDate", "clusterName")
    DEFAULT_TIMEOUT_S = SCALE_DOWN_TIMEOUT_S

    @staticmethod
    def same(old: Any, new: Any) -> bool:
        from .scaling import canonical

        return canonical(old) == canonical(new)

    def diff(self, id_, olds, news):
        refuse_version_skip(olds, news)
        result = super().diff(id_, olds, news)
        start, end = news.get("startDate"), news.get("endDate")
        # at preview the block's dates are unknown while the block itself changes: it may run
        may_run = is_unknown(start) or is_unknown(end) or block_running(start, end, _now())
        if "rollKey" in self.changed(self.inputs(olds), self.inputs(news)) and may_run:
            self.warn("this update may roll the GPU node group while its Capacity Block runs: if the "
                      "group has nodes, `pulumi up` scales it to 0 first and back after (EKS's rule for "
                      "Capacity Blocks), so serving stops until the new nodes serve again")
        return result

    def _guard(self, p: Dict[str, Any]) -> Dict[str, Any]:
        outs = guard(aws_api.client("eks", p), aws_api.client("autoscaling", p), p, _now(),
                     self.deadline(p, "update", "the guard's 1800 s for the node group to reach 0"),
                     warn=self.warn)
        return {**p, **outs}

    def create(self, p):
        return CreateResult(f"{p['clusterName']}/gpu-roll-guard", self._guard(p))

    def update(self, id_, olds, p):
        return UpdateResult(self._guard(p))


class GpuRollGuard(DynamicResource, module="aws", name="GpuRollGuard"):
    """See the module docstring. Inputs: `clusterName`, `rollKey`, `startDate`, `endDate`,
    `reservationId`, `aws`/`awsSecrets` (aws_api.py)."""

    scaledDownFrom: pulumi.Output[Optional[int]]

    def __init__(self, name: str, props: Dict[str, Any], opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__(GpuRollGuardProvider(), name, props, opts)
