"""The weights objects and pod parts validate against Kubernetes 1.35's schema (strict), for every
weights path on one node and across nodes; values reach scripts only as env (no shell text)."""

import json

import kubernetes_validate
import pytest

from components.aws_eks.weights import render as wr
from components.inference import render_k8s as rk
from components.inference.launch import Runtime, launch
from components.inference.planner import PlanRequest, plan

K8S = "1.35.0"
PATHS = {
    "hub": rk.WeightsStaging("hub", repo_id="moonshotai/Kimi-K3"),
    "s3": rk.WeightsStaging("s3", repo_id="moonshotai/Kimi-K3", s3_uri="s3://mine/k3"),
    "mirror": rk.WeightsStaging("mirror", repo_id="moonshotai/Kimi-K3", compile_cache=True),
    "mirror-stream": rk.WeightsStaging("mirror", repo_id="moonshotai/Kimi-K3", stream=True,
                                       compile_cache=True),
}


def _render(nodes, weights):
    p = plan(PlanRequest("mxfp4", "p6-b300.48xlarge", nodes))
    model = "${MODEL_URI}" if weights.stream else "/models/Kimi-K3"
    s = launch(p, Runtime(image="vllm/vllm-openai:kimi-k3", port=8000, model_path=model, hf_token=True))
    layout = rk.K8sLayout(weights=weights, efa_per_node=16 if nodes > 1 else 0, stager=wr.STAGER)
    return rk.render(p, s, layout) + rk.render_weights(s, layout), s


@pytest.mark.parametrize("nodes", [1, 2])
@pytest.mark.parametrize("path", sorted(PATHS))
def test_every_object_validates(nodes, path):
    objs, _ = _render(nodes, PATHS[path])
    for obj in objs:
        if obj["kind"] != "LeaderWorkerSet":
            kubernetes_validate.validate(obj, K8S, strict=True)
        else:  # a CRD: validate its pod templates as pods
            t = obj["spec"]["leaderWorkerTemplate"]
            for tpl in (t["leaderTemplate"], t["workerTemplate"]):
                kubernetes_validate.validate({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x"},
                                              "spec": tpl["spec"]}, K8S, strict=True)


def test_the_cache_key_follows_the_launch_spec():
    _, s1 = _render(1, PATHS["mirror"])
    head = s1.head
    k = wr.cache_key(s1.image, "moonshotai/Kimi-K3", "main", head.argv, head.env)
    assert k == wr.cache_key(s1.image, "moonshotai/Kimi-K3", "main", head.argv, head.env)
    assert k != wr.cache_key(s1.image, "moonshotai/Kimi-K3", "main", head.argv + ("--x",), head.env)
    assert k != wr.cache_key("other:image", "moonshotai/Kimi-K3", "main", head.argv, head.env)
    assert k != wr.cache_key(s1.image, "moonshotai/Kimi-K3", "v2", head.argv, head.env)


def test_workers_take_their_rank_from_the_lws_label():
    objs, _ = _render(2, PATHS["mirror"])
    lws = next(o for o in objs if o["kind"] == "LeaderWorkerSet")
    worker = lws["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]
    restore = next(c for c in worker["initContainers"] if c["name"] == "restore-compile-cache")
    rank = next(e for e in restore["env"] if e["name"] == "KK3_RANK")
    assert rank["valueFrom"]["fieldRef"]["fieldPath"].endswith("worker-index']")


def test_no_value_is_pasted_into_shell_text():
    objs, _ = _render(2, PATHS["s3"])
    for o in objs:
        text = json.dumps(o)
        if o["kind"] == "ConfigMap":
            continue
        assert '"sh", "-c"' not in text or o["kind"] == "Job"
    job = next(o for o in _render(1, PATHS["mirror"])[0] if o["kind"] == "Job")
    script = job["spec"]["template"]["spec"]["containers"][0]["command"][2]
    assert "$" not in script and "s3://" not in script  # constant text
