"""What a two-node aws-eks plan says about the traffic between its nodes (the real __main__.py under
the mock engine): EFA, its devices and assumed bandwidth with the source, in plan.json and the
summary; TCP only when asked for, with a warning at preview and in the plan's notes."""

import pytest

from components.cli.plan import plan_document
from components.offline.runner import run_program

CR = "cr-0123456789abcdef0"


@pytest.fixture(scope="module")
def efa():
    return run_program("aws-eks", {"kimi-k3:nodes": "2", "kimi-k3:capacityReservationId": CR})


def test_two_nodes_plan_efa_and_state_the_bandwidth(efa):
    doc = plan_document(efa)
    inter = doc["plan"]["inter_node"]
    assert inter["transport"] == "efa" and inter["links_per_node"] == 16
    assert inter["assumed_gbps_per_node"] == 6400 and "not confirmed" in inter["bandwidth_source"]
    assert "NCCL INFO Using network Libfabric" in inter["confirm_in_log"]
    assert "inter-node     EFA: NCCL over aws-ofi-nccl" in efa.inference.plan.explain()
    lws = next(r for r in efa.resources if r["type"].endswith(":LeaderWorkerSet"))["inputs"]
    leader = lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"][0]
    assert leader["command"][:2] == ["bash", "/kk3-efa/efa_check.sh"]
    cms = {r["inputs"]["metadata"]["name"] for r in efa.of_type("kubernetes:core/v1:ConfigMap")}
    assert "kimi-k3-efa-scripts" in cms  # the pods' scripts are applied with the stack
    assert "manifests/configmap-kimi-k3-efa-scripts.yaml" in efa.inference.artifacts
    assert not [w for w in efa.warnings if "interNodeTransport" in w]


def test_one_node_states_no_inter_node_traffic():
    run = run_program("aws-eks", {"kimi-k3:capacityReservationId": CR})
    assert plan_document(run)["plan"]["inter_node"] is None
    assert "inter-node" not in run.inference.plan.explain()


def test_tcp_is_warned_at_preview_and_in_the_plan():
    run = run_program("aws-eks", {"kimi-k3:nodes": "2", "kimi-k3:capacityReservationId": CR,
                                  "kimi-k3:interNodeTransport": "tcp"})
    warned = [w for w in run.warnings if w.startswith("kimi-k3:interNodeTransport=tcp")]
    assert len(warned) == 1 and "16 x EFA, 6400 Gbps/node unused" in warned[0]
    plan = run.inference.plan
    assert plan.inter_node["transport"] == "tcp" and warned[0] in plan.notes
    assert not run.of_type("kubernetes:core/v1:ConfigMap") or "kimi-k3-efa-scripts" not in {
        r["inputs"]["metadata"]["name"] for r in run.of_type("kubernetes:core/v1:ConfigMap")}
