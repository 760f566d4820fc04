"""The Capacity Block upgrade rule (components/aws_eks/roll_guard.py): a change that rolls the GPU
node group while its block runs scales the group to 0 first (EKS API), waits until no instance is
left, and only then lets the node group update; anything else passes without a call.

EKS and AutoScaling are botocore's Stubber on the pinned service models (parameters validated);
waits run on the fake clock."""

from datetime import datetime, timedelta, timezone

import boto3
import pytest
from botocore.stub import Stubber

from components.aws_eks import roll_guard as rg
from components.dynamic.provider import Deadline, DeadlineExceeded

START = datetime(2026, 12, 3, 11, 30, tzinfo=timezone.utc)
END = START + timedelta(days=1)
RUNNING = START + timedelta(hours=3)
CLUSTER = "kimi-k3-aws-eks"
WANT = {"kubernetesVersion": "1.35", "amiType": "AL2023_x86_64_NVIDIA", "launchTemplateVersion": "4"}
PROPS = {"clusterName": CLUSTER, "rollKey": WANT, "startDate": "2026-12-03T11:30:00Z",
         "endDate": "2026-12-04T11:30:00Z", "reservationId": "cr-0123456789abcdef0"}
ASG = "eks-kimi-k3-gpu-asg"


def node_group(name, capacity="CAPACITY_BLOCK", gpu=True, desired=1, version="1.35", lt="3"):
    return {"nodegroupName": name, "clusterName": CLUSTER, "version": version, "capacityType": capacity,
            "amiType": "AL2023_x86_64_NVIDIA", "labels": {"kimi-k3/gpu-node": "true"} if gpu else {},
            "scalingConfig": {"minSize": 0, "maxSize": 2, "desiredSize": desired},
            "launchTemplate": {"id": "lt-0123", "version": lt},
            "resources": {"autoScalingGroups": [{"name": ASG if gpu else "eks-system-asg"}]}}


@pytest.fixture
def clients():
    kw = dict(region_name="us-east-2", aws_access_key_id="t", aws_secret_access_key="t")
    eks, asg = boto3.client("eks", **kw), boto3.client("autoscaling", **kw)
    with Stubber(eks) as es, Stubber(asg) as as_:
        yield eks, asg, es, as_
        es.assert_no_pending_responses()
        as_.assert_no_pending_responses()


def deadline(fake_clock, seconds=1800):
    return Deadline.after(seconds, "the test's deadline", clock=fake_clock)


def list_gpu(es, gpu_ng):
    es.add_response("list_nodegroups", {"nodegroups": ["system", gpu_ng["nodegroupName"]]}, {"clusterName": CLUSTER})
    es.add_response("describe_nodegroup", {"nodegroup": node_group("system", "ON_DEMAND", gpu=False)},
                    {"clusterName": CLUSTER, "nodegroupName": "system"})
    es.add_response("describe_nodegroup", {"nodegroup": gpu_ng},
                    {"clusterName": CLUSTER, "nodegroupName": gpu_ng["nodegroupName"]})


def asg_with(as_, n):
    inst = [{"InstanceId": f"i-0{i}", "AvailabilityZone": "us-east-2b", "LifecycleState": "Terminating",
             "HealthStatus": "Healthy", "ProtectedFromScaleIn": False} for i in range(n)]
    as_.add_response("describe_auto_scaling_groups", {"AutoScalingGroups": [{
        "AutoScalingGroupName": ASG, "MinSize": 0, "MaxSize": 2, "DesiredCapacity": 0, "DefaultCooldown": 300,
        "AvailabilityZones": ["us-east-2b"], "HealthCheckType": "EC2", "CreatedTime": START,
        "Instances": inst}]}, {"AutoScalingGroupNames": [ASG]})


def test_the_block_window_and_what_rolls():
    assert not rg.block_running(PROPS["startDate"], PROPS["endDate"], START - timedelta(seconds=1))
    assert rg.block_running(PROPS["startDate"], PROPS["endDate"], START)
    assert not rg.block_running(PROPS["startDate"], PROPS["endDate"], END - timedelta(minutes=30))
    assert not rg.block_running(None, None, RUNNING)
    ng = node_group("gpu", version="1.34", lt="3")
    assert rg.rolls(ng, WANT) == ["kubernetesVersion 1.34 -> 1.35", "launchTemplateVersion 3 -> 4"]
    assert rg.rolls(node_group("gpu", lt="4"), WANT) == []
    assert rg.rolls(ng, {"kubernetesVersion": None, "launchTemplateVersion": "$Latest"}) == []


def test_a_roll_while_the_block_runs_scales_to_zero_first_and_waits(clients, fake_clock):
    eks, asg, es, as_ = clients
    gpu = node_group("kimi-k3-gpu-20261201", lt="3", desired=1)
    list_gpu(es, gpu)
    es.add_response("update_nodegroup_config", {"update": {"id": "u-1", "status": "InProgress", "type": "ConfigUpdate"}},
                    {"clusterName": CLUSTER, "nodegroupName": gpu["nodegroupName"],
                     "scalingConfig": {"minSize": 0, "maxSize": 2, "desiredSize": 0}})
    for status in ("InProgress", "Successful"):
        es.add_response("describe_update", {"update": {"id": "u-1", "status": status}},
                        {"name": CLUSTER, "updateId": "u-1", "nodegroupName": gpu["nodegroupName"]})
    asg_with(as_, 1)  # draining
    asg_with(as_, 0)
    said = []
    out = rg.guard(eks, asg, PROPS, RUNNING, deadline(fake_clock), sleep=fake_clock.sleep, warn=said.append)
    assert out == {"scaledDownFrom": 1, "rolled": ["launchTemplateVersion 3 -> 4"]}
    assert said and "scaling it to 0 first" in said[0] and "cr-0123456789abcdef0" in said[0]
    assert fake_clock.slept == [rg.POLL_S, rg.POLL_S]


@pytest.mark.parametrize("case", ["block not started", "block over", "nothing rolls", "already at 0", "no group yet"])
def test_anything_else_passes_without_touching_the_group(clients, fake_clock, case):
    eks, asg, es, as_ = clients
    now = {"block not started": START - timedelta(hours=1), "block over": END}.get(case, RUNNING)
    if case == "nothing rolls":
        list_gpu(es, node_group("gpu", lt="4"))
    elif case == "already at 0":
        list_gpu(es, node_group("gpu", lt="3", desired=0))
        asg_with(as_, 0)
    elif case == "no group yet":
        es.add_response("list_nodegroups", {"nodegroups": []}, {"clusterName": CLUSTER})
    # no update_nodegroup_config queued: the Stubber fails the test if one is made
    out = rg.guard(eks, asg, PROPS, now, deadline(fake_clock), sleep=fake_clock.sleep)
    assert out["scaledDownFrom"] is None


def test_a_failed_scale_down_stops_the_update_naming_why(clients, fake_clock):
    eks, asg, es, as_ = clients
    gpu = node_group("gpu", lt="3")
    list_gpu(es, gpu)
    es.add_response("update_nodegroup_config", {"update": {"id": "u-2", "status": "InProgress"}})
    es.add_response("describe_update", {"update": {"id": "u-2", "status": "Failed", "errors": [
        {"errorCode": "AccessDenied", "errorMessage": "not authorized to perform eks:UpdateNodegroupConfig"}]}})
    with pytest.raises(RuntimeError, match="scaling GPU node group gpu to 0 failed \\(Failed\\): not authorized"):
        rg.guard(eks, asg, PROPS, RUNNING, deadline(fake_clock), sleep=fake_clock.sleep)


def test_nodes_that_never_go_stop_the_update_at_the_deadline(clients, fake_clock):
    eks, asg, es, as_ = clients
    gpu = node_group("gpu", lt="3")
    list_gpu(es, gpu)
    es.add_response("update_nodegroup_config", {"update": {"id": "u-3", "status": "InProgress"}})
    es.add_response("describe_update", {"update": {"id": "u-3", "status": "Successful"}})
    for _ in range(4):
        asg_with(as_, 1)
    with pytest.raises(DeadlineExceeded, match="the instances of eks-kimi-k3-gpu-asg to terminate"):
        rg.guard(eks, asg, PROPS, RUNNING, deadline(fake_clock, seconds=3 * rg.POLL_S), sleep=fake_clock.sleep)


def test_preview_says_it_when_the_block_runs(monkeypatch):
    said = []
    monkeypatch.setattr(rg.GpuRollGuardProvider, "warn", lambda self, text: said.append(text))
    monkeypatch.setattr(rg, "_now", lambda: RUNNING)
    p = rg.GpuRollGuardProvider()
    olds = {**PROPS, "rollKey": {**WANT, "launchTemplateVersion": "3"}}
    assert p.diff("id", olds, PROPS).changes is True
    assert said and "scales it to 0 first and back after" in said[0]
    said.clear()
    assert p.diff("id", PROPS, {**PROPS, "rollKey": dict(reversed(list(WANT.items())))}).changes is False
    assert not said
    monkeypatch.setattr(rg, "_now", lambda: START - timedelta(days=1))
    assert p.diff("id", olds, PROPS).changes is True and not said  # before the block: nothing to say


@pytest.mark.parametrize("old, new, says", [
    ("1.33", "1.35", "1.33 -> 1.35 needs one `pulumi up` per step (1.33 -> 1.34 -> 1.35); set it to 1.34"),
    ("1.35", "1.34", "EKS cannot downgrade a cluster (1.35 -> 1.34"),
    ("1.9", "1.11", "(1.9 -> 1.10 -> 1.11); set it to 1.10"),  # minors compare as numbers
])
def test_a_version_eks_would_refuse_to_update_to_stops_the_preview(monkeypatch, old, new, says):
    """Refused in diff (preview), before the guard could take the group to 0 for an update the
    control plane then refuses (awsdocs update-cluster.adoc: one minor at a time, no downgrade)."""
    from components.inference.errors import ConfigError

    touched = []
    monkeypatch.setattr(rg, "guard", lambda *a, **k: touched.append(a))
    monkeypatch.setattr(rg, "_now", lambda: RUNNING)
    p = rg.GpuRollGuardProvider()
    olds = {**PROPS, "rollKey": {**WANT, "kubernetesVersion": old}}
    news = {**PROPS, "rollKey": {**WANT, "kubernetesVersion": new}}
    with pytest.raises(ConfigError) as err:
        p.diff("id", olds, news)
    assert str(err.value).startswith(f"kimi-k3:clusterVersion={new} is refused: ")
    assert says in str(err.value) and not touched


def test_one_minor_up_is_an_ordinary_roll(monkeypatch):
    monkeypatch.setattr(rg, "_now", lambda: START - timedelta(days=1))
    p = rg.GpuRollGuardProvider()
    olds = {**PROPS, "rollKey": {**WANT, "kubernetesVersion": "1.34"}}
    assert p.diff("id", olds, {**PROPS, "rollKey": {**WANT, "kubernetesVersion": "1.35"}}).changes is True
