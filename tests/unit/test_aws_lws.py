"""LeaderWorkerSet that resolves: our API Service leaves the LWS's headless Service name free.

Against a model of the LWS controller (tests/contracts/kubernetes/lws.py, read in
kubernetes-sigs/lws v0.8.0): for 2 and 4 nodes per replica (and 2 replicas), the controller
creates its headless Service, every pod's LWS_LEADER_ADDRESS resolves to its group's leader, and
our Service selects exactly the leaders (the pods that answer HTTP); with several replicas the
Service selects vllm-router's pod and the router discovers exactly the leaders.
"""

import pytest

from components.inference import render_k8s as rk
from components.offline.runner import run_program
from tests.contracts.kubernetes import lws as lwsmodel

CR = "cr-0123456789abcdef0"


def rendered(nodes, replicas=1):
    run = run_program("aws-eks", {"kimi-k3:nodes": str(nodes), "kimi-k3:replicas": str(replicas),
                                  "kimi-k3:capacityReservationId": CR})
    lws = next(r for r in run.of_type("kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet"))["inputs"]
    svc = next(r for r in run.of_type("kubernetes:core/v1:Service"))["inputs"]
    return run, lws, svc


@pytest.mark.parametrize("nodes,replicas", [(2, 1), (4, 1), (2, 2)])
def test_leader_address_resolves_and_the_api_service_selects_the_leaders(nodes, replicas):
    run, lws, svc = rendered(nodes, replicas)
    assert svc["metadata"]["name"] != lws["metadata"]["name"]
    created = lwsmodel.headless_service(lws, [svc])
    assert created is not None, "the LWS controller would leave our Service in place of its own"
    services = [svc, created]
    pods = lwsmodel.pods(lws)
    assert len(pods) == nodes * replicas
    for p in pods:
        assert lwsmodel.resolves(p["leader_address"], services, pods), p["name"]
    leaders = {p["name"] for p in pods if p["role"] == 0}
    if replicas == 1:
        selected = {p["name"] for p in pods if lwsmodel._selects(svc, p)}
    else:  # behind vllm-router: the Service selects the router's pod, the router the leaders
        assert not any(lwsmodel._selects(svc, p) for p in pods)
        router = next(r for r in run.of_type("kubernetes:apps/v1:Deployment")
                      if r["inputs"]["metadata"]["name"] == "kimi-k3-router")["inputs"]
        argv = router["spec"]["template"]["spec"]["containers"][0]["command"]
        picks = argv[argv.index("--selector") + 1:argv.index("--service-discovery-namespace")]
        discovered = {"spec": {"selector": dict(x.split("=", 1) for x in picks)}}
        selected = {p["name"] for p in pods if lwsmodel._selects(discovered, p)}
    assert selected == leaders
    # the vLLM argv/env reach the leader through that address (no other way to find node 0)
    t = lws["spec"]["leaderWorkerTemplate"]
    worker = t["workerTemplate"]["spec"]["containers"][0]
    text = " ".join(worker["command"]) + " ".join(str(e.get("value", "")) for e in worker["env"])
    assert "$(LWS_LEADER_ADDRESS)" in text
    # what is applied is what the plan command writes
    assert f"manifests/service-{svc['metadata']['name']}.yaml" in run.inference.artifacts
    # the worker rank comes from the label the controller sets
    assert any(e.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") ==
               f"metadata.labels['{lwsmodel.WORKER_INDEX_LABEL}']" for e in worker["env"])
    assert rk.LWS_INDEX_LABEL == lwsmodel.WORKER_INDEX_LABEL


def test_the_model_catches_a_service_named_after_the_lws():
    """The bug of issue 9 item 4: our Service took the LWS's name."""
    _, lws, svc = rendered(2)
    clash = {**svc, "metadata": {**svc["metadata"], "name": lws["metadata"]["name"]}}
    assert lwsmodel.headless_service(lws, [clash]) is None  # the controller leaves it alone
    pods = lwsmodel.pods(lws)
    assert not any(lwsmodel.resolves(p["leader_address"], [clash], pods) for p in pods)


def test_one_node_keeps_the_same_service_name():
    run = run_program("aws-eks", {"kimi-k3:capacityReservationId": CR})
    svc = next(r for r in run.of_type("kubernetes:core/v1:Service"))["inputs"]
    assert svc["metadata"]["name"] == "kimi-k3-api"
    assert "svc/kimi-k3-api" in run.outputs["curl"]
