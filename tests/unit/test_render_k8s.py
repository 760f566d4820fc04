"""Kubernetes renderer: strict schema validation, goldens, probe timing, placeholders, secrets.

Goldens live in tests/golden/aws-eks/; regenerate with `KK3_UPDATE_GOLDEN=1 pytest tests/unit/test_render_k8s.py`
and review the diff.
"""

import json
import kubernetes_validate
import pytest
import re
import yaml
from pathlib import Path

from components.aws_eks.efa.render import INTERCONNECT
from components.aws_eks.weights.render import STAGER
from components.inference import render_k8s as rk
from components.inference.launch import Runtime, launch
from components.inference.planner import PlanRequest, plan


GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "aws-eks"
K8S_VERSION = "1.35.0"
IMAGE = "vllm/vllm-openai:kimi-k3"
MODEL_PATH = "/models/Kimi-K3"
CIDRS = ("203.0.113.0/24",)


def _spec(nodes, **rt):
    p = plan(PlanRequest("mxfp4", "p6-b300.48xlarge", nodes))
    s = launch(p, Runtime(image=IMAGE, port=8000, model_path=rt.pop("model_path", MODEL_PATH), **rt))
    return p, s


def _layout(**kw):
    base = dict(efa_per_node=16, allowed_cidrs=CIDRS,
                node_selector={"kimi-k3/gpu-node": "true",
                               "node.kubernetes.io/instance-type": "p6-b300.48xlarge"},
                stager=STAGER, interconnect=INTERCONNECT)
    base.update(kw)
    return rk.K8sLayout(**base)


@pytest.fixture(scope="module")
def one():
    p, s = _spec(1, api_key=True, hf_token=True)
    return p, s, rk.render(p, s, _layout(efa_per_node=0))


@pytest.fixture(scope="module")
def two():
    p, s = _spec(2, api_key=True)
    return p, s, rk.render(p, s, _layout(inter_node_transport="efa", efa_install=True))


def _pod_specs(obj):
    if obj["kind"] == "Deployment":
        return [obj["spec"]["template"]]
    if obj["kind"] == "LeaderWorkerSet":
        t = obj["spec"]["leaderWorkerTemplate"]
        return [t["leaderTemplate"], t["workerTemplate"]]
    return []


def _validate_strict(obj):
    if obj["apiVersion"] in (rk.LWS_API, rk.HYPERPOD_API):
        # not a built-in kind: validate every pod template it carries as a built-in PodTemplate
        for tpl in _pod_specs(obj):
            kubernetes_validate.validate({"apiVersion": "v1", "kind": "PodTemplate",
                                          "metadata": {"name": "t", "namespace": "kimi-k3"},
                                          "template": tpl}, K8S_VERSION, strict=True)
        return
    kubernetes_validate.validate(obj, K8S_VERSION, strict=True)


@pytest.mark.parametrize("which", ["one", "two"])
def test_every_object_validates_strictly(which, request):
    _, _, objs = request.getfixturevalue(which)
    for obj in objs:
        _validate_strict(obj)


def test_strict_validation_catches_a_typo():
    # the validator is really strict: an unknown field is an error (so the test above can fail)
    p, s = _spec(1)
    dep = rk.render_deployment(s, _layout())
    dep["spec"]["template"]["spec"]["containers"][0]["livenessProbee"] = {}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(dep, K8S_VERSION, strict=True)


def test_kinds_single_and_multi_node(one, two):
    assert [o["kind"] for o in one[2]] == ["Namespace", "Deployment", "Service"]
    assert [o["kind"] for o in two[2]] == ["Namespace", "LeaderWorkerSet", "Service"]
    lws = two[2][1]
    assert lws["apiVersion"] == "leaderworkerset.x-k8s.io/v1"
    assert lws["spec"]["leaderWorkerTemplate"]["size"] == 2


def test_probe_timing_covers_the_plans_cold_start(one, two):
    for p, s, objs in (one, two):
        container = _pod_specs(objs[1])[0]["spec"]["containers"][0]
        startup = container["startupProbe"]
        allowed = startup["periodSeconds"] * startup["failureThreshold"]
        assert allowed >= p.cold_start.startup_timeout_s == s.startup_timeout_s
        assert allowed <= s.startup_timeout_s + 2 * startup["periodSeconds"]
        env = {e["name"]: e.get("value") for e in container["env"]}
        assert env["VLLM_ENGINE_READY_TIMEOUT_S"] == str(p.cold_start.startup_timeout_s)
        for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
            assert container[probe]["httpGet"] == {"path": "/health", "port": "http"}


def test_probe_thresholds_follow_a_longer_budget():
    p = plan(PlanRequest("mxfp4", "p6-b300.48xlarge", 1))
    s = launch(p, Runtime(image=IMAGE, port=8000, model_path=MODEL_PATH))
    longer = s.__class__(**{**s.__dict__, "startup_timeout_s": 7200})
    probe = rk.probes(longer)["startupProbe"]
    assert probe["periodSeconds"] * probe["failureThreshold"] >= 7200


def test_gpu_efa_shm_tolerations_and_node_selector(one, two):
    for which, (_, _, objs) in (("one", one), ("two", two)):
        for tpl in _pod_specs(objs[1]):
            pod = tpl["spec"]
            c = pod["containers"][0]
            if which == "one":  # TP8 inside one node: GPUs only
                assert c["resources"] == {"limits": {"nvidia.com/gpu": 8}, "requests": {"nvidia.com/gpu": 8}}
                assert "securityContext" not in c
                continue
            # every EFA device, and AWS's hugepages (requests = limits) with a memory request
            assert c["resources"]["limits"] == {"nvidia.com/gpu": 8, "vpc.amazonaws.com/efa": 16,
                                                "hugepages-2Mi": "5120Mi"}
            assert c["resources"]["requests"] == {**c["resources"]["limits"], "memory": "32000Mi"}
            shm = next(v for v in pod["volumes"] if v["name"] == "dshm")
            assert shm["emptyDir"]["medium"] == "Memory"
            assert {"name": "dshm", "mountPath": "/dev/shm"} in c["volumeMounts"]
            assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in pod["tolerations"]
            assert pod["nodeSelector"]["node.kubernetes.io/instance-type"] == "p6-b300.48xlarge"
            assert c["securityContext"] == {"capabilities": {"add": ["IPC_LOCK"]}}


def test_secrets_only_by_secret_key_ref(one):
    _, s, objs = one
    text = json.dumps(objs)
    c = objs[1]["spec"]["template"]["spec"]["containers"][0]
    refs = {e["name"]: e["valueFrom"]["secretKeyRef"] for e in c["env"] if "secretKeyRef" in e.get("valueFrom", {})}
    assert refs == {"VLLM_API_KEY": {"name": "kimi-k3-secrets", "key": "VLLM_API_KEY"},
                    "HF_TOKEN": {"name": "kimi-k3-secrets", "key": "HF_TOKEN"}}
    assert not any(e["name"] in s.secret_env and "value" in e for e in c["env"])
    init = objs[1]["spec"]["template"]["spec"]["initContainers"][0]
    assert {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "kimi-k3-secrets",
                                                               "key": "HF_TOKEN"}}} in init["env"]
    assert not any(e["name"] in s.secret_env and "value" in e for e in init["env"])
    assert "--api-key" not in text


def test_single_node_placeholders_resolved(one):
    text = json.dumps(one[2])
    assert "${" not in text
    assert "LWS_LEADER_ADDRESS" not in text


def test_lws_placeholders_map_to_leader_address_and_worker_index(two):
    lws = two[2][1]
    leader, worker = _pod_specs(lws)
    wc = worker["spec"]["containers"][0]
    lc = leader["spec"]["containers"][0]
    assert "${" not in json.dumps(lws)
    argv = wc["command"]
    assert argv[argv.index("--master-addr") + 1] == "$(LWS_LEADER_ADDRESS)"
    assert argv[argv.index("--node-rank") + 1] == "$(NODE_RANK)"
    assert "--headless" in argv
    assert lc["command"][lc["command"].index("--node-rank") + 1] == "0"
    env = {e["name"]: e for e in wc["env"]}
    assert env["NODE_RANK"]["valueFrom"]["fieldRef"]["fieldPath"] == \
        "metadata.labels['leaderworkerset.sigs.k8s.io/worker-index']"
    assert env["NODE_ADDR"]["valueFrom"]["fieldRef"]["fieldPath"] == "status.podIP"
    assert env["NCCL_SOCKET_IFNAME"]["value"] == "eth0"
    # every $(VAR) the container references is defined in its env or set by the LWS controller
    for c in (lc, wc):
        defined = {e["name"] for e in c["env"]} | {"LWS_LEADER_ADDRESS"}
        used = set(re.findall(r"\$\(([A-Z_]+)\)", json.dumps(c["command"])))
        assert used <= defined
    # only the leader serves HTTP and is probed; workers are headless
    assert "startupProbe" in lc and "startupProbe" not in wc and "ports" not in wc


def test_service_exposure(one, two):
    svc = one[2][2]
    assert svc["spec"]["type"] == "LoadBalancer"
    assert svc["spec"]["loadBalancerSourceRanges"] == list(CIDRS)
    assert two[2][2]["spec"]["selector"]["kimi-k3/role"] == "head"
    p, s = _spec(1)
    private = rk.render_service(s, _layout(allowed_cidrs=()))
    assert private["spec"]["type"] == "ClusterIP"
    assert "loadBalancerSourceRanges" not in private["spec"]
    kubernetes_validate.validate(private, K8S_VERSION, strict=True)


def test_staging_modes():
    """Each weights path renders valid pods (details: tests/unit/test_weights_render.py)."""
    p, s = _spec(1)
    for w in (rk.WeightsStaging("s3", repo_id="moonshotai/Kimi-K3", s3_uri="s3://bucket/k3"),
              rk.WeightsStaging("mirror", repo_id="moonshotai/Kimi-K3", compile_cache=True)):
        d = rk.render_deployment(s, _layout(weights=w))
        init = d["spec"]["template"]["spec"]["initContainers"][0]
        assert init["command"] == ["bash", "/kk3/stage.sh"]
        kubernetes_validate.validate(d, K8S_VERSION, strict=True)
    ps, ss = _spec(1, model_path="${MODEL_URI}")
    stream = rk.render_deployment(ss, _layout(weights=rk.WeightsStaging(
        "s3", repo_id="moonshotai/Kimi-K3", s3_uri="s3://bucket/k3", stream=True)))
    pod = stream["spec"]["template"]["spec"]
    assert "initContainers" not in pod and [v["name"] for v in pod["volumes"]] == ["dshm"]
    kubernetes_validate.validate(stream, K8S_VERSION, strict=True)
    with pytest.raises(ValueError):
        rk.WeightsStaging("s3", repo_id="moonshotai/Kimi-K3", s3_uri="bucket/k3")


def test_bad_layouts_refused():
    with pytest.raises(ValueError):
        rk.K8sLayout(namespace="Kimi_K3")
    p, s = _spec(2)
    with pytest.raises(ValueError):
        rk.render_deployment(s, _layout())


def _hyperpod():
    p, s = _spec(1, model_path="/opt/ml/model")
    return rk.render_hyperpod(p, s, _layout(name="kimik3", namespace="default"))


def _seed_manifest():
    # copied verbatim from seed 004 (see the file's header)
    return yaml.safe_load((GOLDEN / "seed-inferenceendpointconfig.yaml").read_text())


def test_hyperpod_matches_the_seed_without_the_obsolete_env():
    ours, seed = _hyperpod(), _seed_manifest()
    assert ours["apiVersion"] == seed["apiVersion"] and ours["kind"] == seed["kind"]
    assert ours["metadata"]["name"] == seed["metadata"]["name"]
    for key in ("modelName", "instanceType", "invocationEndpoint", "replicas", "modelSourceConfig"):
        assert ours["spec"][key] == seed["spec"][key], key
    w, sw = ours["spec"]["worker"], seed["spec"]["worker"]
    for key in ("image", "modelInvocationPort", "modelVolumeMount"):
        assert w[key] == sw[key], key
    assert w["resources"]["limits"]["nvidia.com/gpu"] == sw["resources"]["limits"]["nvidia.com/gpu"]
    # the seed passes the model with --model; ours passes the operator's volume positionally.
    # `--moe-backend auto` is vLLM's default. Every other seed flag is kept.
    seed_flags = [a for a in sw["args"] if a.startswith("--") and a not in ("--model", "--moe-backend")]
    assert set(seed_flags) <= set(w["args"])
    assert w["args"][0] == "/opt/ml/model"
    names = [e["name"] for e in w["environmentVariables"]]
    assert "VLLM_ENABLE_K3_LATENT_MOE_TAIL_FUSION" in [e["name"] for e in sw["environmentVariables"]]
    assert "VLLM_ENABLE_K3_LATENT_MOE_TAIL_FUSION" not in names
    assert "VLLM_ENGINE_READY_TIMEOUT_S" in names


def test_hyperpod_refuses_multi_node():
    p, s = _spec(2)
    with pytest.raises(ValueError):
        rk.render_hyperpod(p, s, _layout())


GOLDENS = {
    "deployment-1node.yaml": lambda: rk.to_yaml(_one_objs()[1]),
    "service-1node.yaml": lambda: rk.to_yaml(_one_objs()[2]),
    "namespace.yaml": lambda: rk.to_yaml(_one_objs()[0]),
    "leaderworkerset-2node.yaml": lambda: rk.to_yaml(_two_objs()[1]),
    "configmap-efa-scripts.yaml": lambda: rk.to_yaml(rk.render_efa(_layout(inter_node_transport="efa"))[0]),
    "hyperpod-inferenceendpointconfig.yaml": lambda: rk.to_yaml(_hyperpod()),
}


def _one_objs():
    p, s = _spec(1, api_key=True, hf_token=True)
    return rk.render(p, s, _layout(efa_per_node=0))


def _two_objs():
    p, s = _spec(2, api_key=True)
    return rk.render(p, s, _layout(inter_node_transport="efa", efa_install=True))


@pytest.mark.parametrize("name", sorted(GOLDENS))
def test_golden(name, golden):
    text = GOLDENS[name]()
    golden.check(GOLDEN / name, text)
    assert "&id" not in text  # no YAML anchors: each file reads on its own


# ---- merged from test_render_k8s_behaviour.py:
# Kubernetes/HyperPod rendering details a user's endpoint depends on (components/inference/
# render_k8s.py): the API key reaches vLLM from the Secret under the name vLLM reads, a single
# node's rank is 0, and weights staging refuses what cannot work.

def _staged_layout(**kw):
    return rk.K8sLayout(**{**dict(efa_per_node=0, allowed_cidrs=("203.0.113.0/24",),
                                  node_selector={"kimi-k3/gpu-node": "true"},
                                  stager=STAGER), **kw})


def _mxfp4_spec(nodes=1, **rt):
    p = plan(PlanRequest("mxfp4", "p6-b300.48xlarge", nodes))
    return p, launch(p, Runtime(image="vllm/vllm-openai:kimi-k3", port=8000, **rt))


def test_hyperpod_reads_the_api_key_from_the_secret_as_vllm_expects():
    p, s = _mxfp4_spec(model_path="/opt/ml/model", api_key=True)
    worker = rk.render_hyperpod(p, s, _staged_layout(name="kimik3", namespace="default"))["spec"]["worker"]
    env = {e["name"]: e for e in worker["environmentVariables"]}
    layout = _staged_layout(name="kimik3", namespace="default")
    assert env["VLLM_API_KEY"] == {"name": "VLLM_API_KEY", "valueFrom": {"secretKeyRef": {
        "name": layout.secret_name, "key": "VLLM_API_KEY"}}}
    assert all("$(" not in a and "${" not in a for a in worker["args"])
    # with a key the command first writes kimi-k3's API-key guard (api_guard.HYPERPOD_COMMAND)
    assert worker["command"][:2] == ["python3", "-c"] and worker["args"][:3] == [
        "vllm", "serve", "/opt/ml/model"]
    p, s = _mxfp4_spec(model_path="/opt/ml/model")
    worker = rk.render_hyperpod(p, s, _staged_layout(name="kimik3", namespace="default"))["spec"]["worker"]
    assert "VLLM_API_KEY" not in {e["name"] for e in worker["environmentVariables"]}


def test_a_single_nodes_rank_is_zero():
    assert rk._placeholder_value("NODE_RANK", True) == "0"
    assert rk._placeholder_value("NODE_RANK", False) == "$(NODE_RANK)"


@pytest.mark.parametrize("kw,message", [
    (dict(source="hub", stream=True, repo_id="moonshotai/Kimi-K3"), "streaming needs the weights in S3"),
    (dict(source="s3", s3_uri="https://b/k3", repo_id="moonshotai/Kimi-K3"), "s3 staging and streaming need an s3:// URI"),
])
def test_weights_staging_refuses_what_cannot_work(kw, message):
    with pytest.raises(ValueError) as e:
        rk.WeightsStaging(**kw)
    assert str(e.value) == message
