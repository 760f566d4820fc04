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


HCC = {"regionId": "r", "azName": "a", "vpcId": "vpc-1", "subnetId": "subnet-1"}


def _hcc(**shared):
    raw = {"target": "ctyun-hcc", **{k: str(v) for k, v in shared.items()}}
    return hcc.parse_hcc_config(HCC, parse_settings(raw, "ctyun-hcc"))


@pytest.mark.parametrize("shared,compute,replica_nodes", [
    ({"replicas": 2}, 7, 4),                   # 2 x 4 nodes: the master and 7 compute nodes
    ({"replicas": 2, "nodes": 2}, 3, 2),
    ({"replicas": 3, "nodes": 8}, 23, 8),
    ({"replicas": 1}, 3, 4),
])
def test_ctyun_orders_every_replicas_nodes(shared, compute, replica_nodes):
    c = _hcc(**shared)
    assert (c.compute_node_count, c.serving_nodes, c.replica_nodes) == (
        compute, compute + 1, replica_nodes)


def test_ctyun_without_the_master_in_the_queue_orders_them_all():
    shared = parse_settings({"target": "ctyun-hcc", "replicas": "2"}, "ctyun-hcc")
    c = hcc.parse_hcc_config({**HCC, "masterInCompute": "false"}, shared)
    assert (c.compute_node_count, c.serving_nodes, c.replica_nodes) == (8, 8, 4)


def test_ctyun_refuses_more_nodes_than_a_cluster_holds_in_one_line():
    with pytest.raises(ConfigError) as e:
        _hcc(replicas=64, nodes=16)
    assert str(e.value) == ("kimi-k3:replicas=64 needs 1023 compute nodes (64 x 16 less the "
                            "master); a cluster holds at most 1000; use at most 62 replicas of "
                            "16 nodes")


def test_ctyun_plan_sizes_the_cluster_and_plans_one_replica():
    run = run_program("ctyun-hcc", {"kimi-k3:replicas": "2"})
    dep = run.deployment
    assert dep.plan.nodes == 4 and dep.spec.nodes == 4
    hw = plan_document(run)["hardware"]
    assert (hw["nodes"], hw["replicas"], hw["instances"]) == (4, 2, 8)
    orders = {r["name"]: r["inputs"]["computeNodeCount"] for r in run.resources
              if r["type"].endswith(("/ctyun:HccClusterOrder", "/ctyun:HccCluster"))}
    assert orders == {"kimi-k3-hcc-order": 7, "kimi-k3-hcc-cluster": 7}
    (part,) = [p for p in plan_document(run)["cost"]["parts"] if p["key"] == "ctyun:atlas-800-a3"]
    assert part["quantity"] == 8
    # not served yet: a real `pulumi up` stops before anything is created, in one line
    (req,) = [r for r in dep.requirements if r.key == "kimi-k3:replicas"]
    assert str(req.error()) == ("kimi-k3:replicas=2 is not served on ctyun-hcc yet; use 1 on "
                                "ctyun-hcc (several replicas behind the router are served on "
                                "aws-eks)")


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
