"""Kubernetes/HyperPod rendering details a user's endpoint depends on (components/inference/
render_k8s.py): the API key reaches vLLM from the Secret under the name vLLM reads, a single
node's rank is 0, and weights staging refuses what cannot work."""

import pytest

from components.aws_eks.weights.render import STAGER  # the weights staging aws-eks hands in
from components.inference import render_k8s as rk
from components.inference.launch import Runtime, launch
from components.inference.planner import PlanRequest, plan


def _layout(**kw):
    return rk.K8sLayout(**{**dict(efa_per_node=0, allowed_cidrs=("203.0.113.0/24",),
                                  node_selector={"kimi-k3/gpu-node": "true"},
                                  stager=STAGER), **kw})


def _spec(nodes=1, **rt):
    p = plan(PlanRequest("mxfp4", "p6-b300.48xlarge", nodes))
    return p, launch(p, Runtime(image="vllm/vllm-openai:kimi-k3", port=8000, **rt))


def test_hyperpod_reads_the_api_key_from_the_secret_as_vllm_expects():
    p, s = _spec(model_path="/opt/ml/model", api_key=True)
    worker = rk.render_hyperpod(p, s, _layout(name="kimik3", namespace="default"))["spec"]["worker"]
    env = {e["name"]: e for e in worker["environmentVariables"]}
    layout = _layout(name="kimik3", namespace="default")
    assert env["VLLM_API_KEY"] == {"name": "VLLM_API_KEY", "valueFrom": {"secretKeyRef": {
        "name": layout.secret_name, "key": "VLLM_API_KEY"}}}
    assert all("$(" not in a and "${" not in a for a in worker["args"])
    # with a key the command first writes kimi-k3's API-key guard (api_guard.HYPERPOD_COMMAND)
    assert worker["command"][:2] == ["python3", "-c"] and worker["args"][:3] == [
        "vllm", "serve", "/opt/ml/model"]
    p, s = _spec(model_path="/opt/ml/model")
    worker = rk.render_hyperpod(p, s, _layout(name="kimik3", namespace="default"))["spec"]["worker"]
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
