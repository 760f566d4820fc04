"""`kimi-k3:replicas` (a shared key): its grammar, where each target takes it, and the summary
and plan.json counting every instance."""

import pytest

from components.cli.plan import hardware_line, plan_document
from components.config.shared import parse_settings
from components.ctyun_hcc import config as hcc
from components.inference.errors import ConfigError
from components.offline.runner import run_program
from components.program.pipeline import load

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


def _by_name(run, type_suffix):
    return {r["name"]: r["inputs"] for r in run.resources if r["type"].endswith(type_suffix)}


def test_ctyun_serves_one_slurm_job_per_replica_behind_the_router_on_the_master():
    run = run_program("ctyun-hcc", {"kimi-k3:replicas": "2", "kimi-k3:nodes": "2"})
    # the cluster holds both replicas' nodes (the master and 3 compute nodes), the plan is one
    # replica's, the cost counts every node, and a real `pulumi up` goes ahead
    dep = run.deployment
    assert dep.plan.nodes == 2 and dep.spec.nodes == 2
    hw = plan_document(run)["hardware"]
    assert (hw["nodes"], hw["replicas"], hw["instances"]) == (2, 2, 4)
    orders = {r["name"]: r["inputs"]["computeNodeCount"] for r in run.resources
              if r["type"].endswith(("/ctyun:HccClusterOrder", "/ctyun:HccCluster"))}
    assert orders == {"kimi-k3-hcc-order": 3, "kimi-k3-hcc-cluster": 3}
    (part,) = [p for p in plan_document(run)["cost"]["parts"] if p["key"] == "ctyun:atlas-800-a3"]
    assert part["quantity"] == 4
    assert not [r for r in dep.requirements if r.key == "kimi-k3:replicas"]
    jobs = _by_name(run, "/ctyun:SlurmService")
    assert {n: (i["jobName"], i["workDir"], i["port"], i["nodeCount"]) for n, i in jobs.items()} == {
        "kimi-k3-service": ("kimi-k3", "/home/kimi-k3", 11026, 2),
        "kimi-k3-service-r1": ("kimi-k3-r1", "/home/kimi-k3/replica-1", 11026, 2)}
    assert "#SBATCH --job-name=kimi-k3-r1" in jobs["kimi-k3-service-r1"]["srunSh"]
    assert "/home/kimi-k3/replica-1/node.sh" in jobs["kimi-k3-service-r1"]["srunSh"]
    assert jobs["kimi-k3-service"]["srunSh"] == run.deployment.rendered.files["srun.sh"]
    assert "replica-1/bcast.sh" not in run.deployment.rendered.files  # the broadcast is the cluster's
    assert "/home/kimi-k3/replica-1" in jobs["kimi-k3-service-r1"]["watchdogSh"] + \
        jobs["kimi-k3-service-r1"]["preflightSh"]
    # the steps that need nodes stop whichever replica holds them
    steps = [i for i in _by_name(run, "/ctyun:Broadcast").values()]
    assert [i["serviceJobNames"] for i in steps] == [["kimi-k3", "kimi-k3-r1"]]
    (router,) = _by_name(run, "/ctyun:RouterService").values()
    assert router["port"] == 11025 and router["routerDir"] == "/home/kimi-k3/router"
    assert router["workerUrls"] == ["http://192.0.2.10:11026", "http://192.0.2.12:11026"]
    (gate,) = _by_name(run, "/ctyun:AcceptanceGate").values()
    assert (gate["endpoint"], gate["node0Addr"], gate["port"]) == (
        "http://198.51.100.10:11025/v1", "127.0.0.1", 11025)
    assert (gate["replicaAddrs"], gate["replicaPort"]) == (["192.0.2.10", "192.0.2.12"], 11026)
    assert run.outputs["endpoint"] == "http://198.51.100.10:11025/v1"
    assert [r["head"] for r in run.outputs["replicas"]] == ["192.0.2.10", "192.0.2.12"]
    # the security group opens the front's port, as for one replica
    assert any("11025" in str(r["inputs"]) for r in run.resources
               if r["type"].endswith("/ctyun:HccSecurityGroup"))


@pytest.mark.parametrize("extra,line", [
    ({"kimi-k3:port": "13388"}, "kimi-k3:port=13388 gives the replicas (kimi-k3:port + 1) port "
     "13389, which is vLLM's data-parallel RPC port, --data-parallel-rpc-port; pick another "
     "kimi-k3:port (e.g. 11025)"),
    ({"kimi-k3:port": "30000"}, "kimi-k3:port=30000 gives the router's front port 30000, which "
     "is the router's own port; pick another kimi-k3:port (e.g. 11025)"),
    ({"kimi-k3:port": "28999"}, "kimi-k3:port=28999 gives the replicas (kimi-k3:port + 1) port "
     "29000, which is the router's metrics port; pick another kimi-k3:port (e.g. 11025)"),
    ({"kimi-k3:port": "65535"}, "kimi-k3:port=65535 gives the replicas (kimi-k3:port + 1) port "
     "65536, which is above 65535; pick another kimi-k3:port (e.g. 11025)"),
    ({"kimi-k3:port": "2221", "kimi-k3:sshPort": "2222"}, "kimi-k3:port=2221 gives the replicas "
     "(kimi-k3:port + 1) port 2222, which is kimi-k3:sshPort; pick another kimi-k3:port (e.g. "
     "11025)"),
])
def test_ctyun_replica_ports_that_collide_are_refused_in_one_line(extra, line):
    raw = {"target": "ctyun-hcc", **{k.split(":")[1]: v for k, v in extra.items()}}
    with pytest.raises(ConfigError) as e:
        load({**raw, "replicas": "2"}, "ctyun-hcc")
    assert str(e.value) == line
    load({**raw, "replicas": "1"}, "ctyun-hcc")  # one replica: vLLM keeps kimi-k3:port
