"""`kimi-k3:replicas` (a shared key): its grammar, where each target takes it, and the summary
and plan.json counting every instance."""

import pytest

from components.cli.plan import hardware_line, plan_document
from components.config.shared import parse_settings
from components.ctyun_hcc import config as hcc
from components.inference.errors import ConfigError
from components.offline.runner import run_program

CR = "cr-0123456789abcdef0"


@pytest.mark.parametrize("value,line", [
    ("0", "kimi-k3:replicas=0 is out of range; use 1 to 64"),
    ("65", "kimi-k3:replicas=65 is out of range; use 1 to 64"),
    ("two", "kimi-k3:replicas='two' is not an integer; give an integer"),
    ("٢", "kimi-k3:replicas='٢' is not an integer; give an integer"),
])
def test_hostile_replica_counts_are_refused_in_one_line(value, line):
    with pytest.raises(ConfigError) as e:
        parse_settings({"target": "aws-eks", "replicas": value}, "aws-eks")
    assert str(e.value).startswith(line) and "\n" not in str(e.value)


def test_ctyun_refuses_several_replicas_until_it_serves_them():
    shared = parse_settings({"target": "ctyun-hcc", "replicas": "2"}, "ctyun-hcc")
    with pytest.raises(ConfigError) as e:
        hcc.parse_hcc_config({"regionId": "r", "azName": "a", "vpcId": "vpc-1",
                              "subnetId": "subnet-1"},
                             shared)
    assert str(e.value) == ("kimi-k3:replicas=2 is not served on ctyun-hcc yet; use 1 on ctyun-hcc "
                            "(several replicas behind the router are served on aws-eks)")


def test_the_summary_and_plan_json_count_every_instance():
    run = run_program("aws-eks", {"kimi-k3:replicas": "2", "kimi-k3:nodes": "2",
                                  "kimi-k3:capacityReservationId": CR})
    dep = run.deployment
    assert hardware_line(dep.plan, dep.shared.replicas).startswith(
        "4 x p6-b300.48xlarge: 2 replicas of 2 nodes each (8 x b300")
    hw = plan_document(run)["hardware"]
    assert (hw["nodes"], hw["replicas"], hw["instances"]) == (2, 2, 4)
    one = run_program("aws-eks", {"kimi-k3:capacityReservationId": CR})
    assert hardware_line(one.deployment.plan, 1) == "1 x p6-b300.48xlarge (8 x b300, 268 GiB each)"
    assert plan_document(one)["hardware"]["instances"] == 1


def test_behind_the_router_the_pod_monitor_still_scrapes_vllm():
    run = run_program("aws-eks", {"kimi-k3:replicas": "2", "kimi-k3:capacityReservationId": CR})
    (pm,) = [r for r in run.resources if r["name"] == "kimi-k3-pod-monitor"]
    svc = next(r for r in run.of_type("kubernetes:core/v1:Service"))["inputs"]
    labels = pm["inputs"]["spec"]["selector"]["matchLabels"]
    assert labels == {"app.kubernetes.io/name": "kimi-k3", "app.kubernetes.io/instance": "kimi-k3"}
    assert svc["spec"]["selector"]["app.kubernetes.io/name"] == "kimi-k3-router"
