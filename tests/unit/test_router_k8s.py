"""The router on aws-eks (components/router/k8s.py, render_k8s.render_router): what is rendered
for several replicas, validated strictly against Kubernetes 1.35's schema, and checked by the
pinned vllm-router's own parser; one replica renders no router at all."""

import kubernetes_validate
import pytest
from vllm_router.launch_router import parse_router_args

from components.inference import render_k8s as rk
from components.inference.launch import Runtime, launch
from components.inference.planner import PlanRequest, plan
from components.router import k8s as rkube
from components.router.kk3_front import ALLOWED
from components.router.settings import ROUTER_PORT, ROUTER_REQUIREMENTS
from components.router.wheels import requirements_txt

K8S_VERSION = "1.35.0"


def _render(nodes=1, replicas=2, **rt):
    p = plan(PlanRequest("mxfp4", "p6-b300.48xlarge", nodes))
    s = launch(p, Runtime(image="vllm/vllm-openai:kimi-k3", port=8000, model_path="/models/Kimi-K3",
                          behind_router=replicas > 1, **rt))
    layout = rk.K8sLayout(replicas=replicas, router=replicas > 1,
                          inter_node_transport="tcp" if nodes > 1 else "")
    return s, layout, rk.render(p, s, layout), rk.render_router(s, layout)


@pytest.mark.parametrize("nodes", [1, 2])
def test_several_replicas_serve_behind_the_router(nodes):
    spec, layout, objs, router = _render(nodes)
    assert rkube.kinds(router) == ("ServiceAccount", "Role", "RoleBinding", "ConfigMap", "Deployment")
    for o in router:
        kubernetes_validate.validate(o, K8S_VERSION, strict=True)
    svc = next(o for o in objs if o["kind"] == "Service")
    assert svc["spec"]["selector"] == rkube.router_labels("kimi-k3")
    dep = router[-1]
    pod = dep["spec"]["template"]
    assert pod["metadata"]["labels"] == rkube.router_labels("kimi-k3")
    # the router pod's labels never match what the router discovers (itself)
    wanted = rk.replica_selector(spec, layout)
    assert not all(pod["metadata"]["labels"].get(k) == v for k, v in wanted.items())
    router_c, front_c = pod["spec"]["containers"]
    a = parse_router_args(router_c["command"][3:])  # after `python -m vllm_router.launch_router`
    assert a.service_discovery and a.selector == wanted and a.service_discovery_port == 8000
    assert (a.host, a.port, a.prometheus_host) == ("127.0.0.1", ROUTER_PORT, "127.0.0.1")
    # only the front's port is a container port; the Service targets it by name
    assert "ports" not in router_c and front_c["ports"] == [
        {"name": "http", "containerPort": 8000, "protocol": "TCP"}]
    assert svc["spec"]["ports"][0]["targetPort"] == "http"
    assert front_c["command"][-4:] == ["--listen", "0.0.0.0:8000", "--upstream",
                                       f"http://127.0.0.1:{ROUTER_PORT}"]
    cm = router[3]["data"]
    assert cm[rkube.REQUIREMENTS_FILE] == requirements_txt(ROUTER_REQUIREMENTS)
    assert "ALLOWED" in cm[rkube.FRONT_FILE] and set(ALLOWED) == {
        "/v1/chat/completions", "/v1/completions", "/v1/models", "/health"}
    # the install is pinned and takes nothing but the list
    install = pod["spec"]["initContainers"][0]["command"]
    assert "--no-deps" in install and install[-1].endswith(rkube.REQUIREMENTS_FILE)
    # every wheel checked against wheels.json's sha256, nothing built from an sdist
    assert install[install.index("--require-hashes"):][:3] == ["--require-hashes", "--only-binary", ":all:"]
    # the router reads pods in its namespace only
    role = router[1]
    assert role["kind"] == "Role" and role["rules"] == [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]}]
    # no GPU, no GPU toleration: it lands on the system nodes
    assert "tolerations" not in pod["spec"] and "nodeSelector" not in pod["spec"]
    assert all("nvidia.com/gpu" not in str(c.get("resources")) for c in pod["spec"]["containers"])
    # the replicas answer the render route the router routes on
    assert "--enable-scale-out" in spec.head.argv
    if spec.worker is not None:
        assert "--enable-scale-out" not in spec.worker.argv


def test_one_replica_has_no_router():
    spec, layout, objs, router = _render(replicas=1)
    assert router == [] and "--enable-scale-out" not in spec.head.argv
    svc = next(o for o in objs if o["kind"] == "Service")
    assert svc["spec"]["selector"] == rk.replica_selector(spec, layout)
