"""What the aws-eks layout carries from the user's keys into the objects Kubernetes and vLLM read.

Each test sets a key away from its default and looks where it must arrive: the API Service
(Kubernetes' `loadBalancerSourceRanges`, an NLB per the AWS Load Balancer Controller annotation),
the pods' env, HyperPod's
`instanceType` (`ml.<EC2 type>`, the InferenceEndpointConfig CRD), and the streamed pod's wait for
the mirror (the planned fill, not the one-hour floor).
"""

from __future__ import annotations

import dataclasses
import json

from components.aws_eks import config as c, layout as lay
from components.aws_eks.weights.plan import plan_request as weights_plan_request, stream_wait_s
from components.aws_eks.weights.render import STREAM_WAIT_S
from components.inference import render_k8s as rk
from components.inference.catalog import MODELS
from components.inference.launch import launch
from components.inference.planner import plan
from components.config.shared import parse_settings


def _settings(**kw):
    shared = parse_settings({"target": "aws-eks", **kw}, "aws-eks")
    return shared, c.parse(shared)


def _rendered(shared, cfg):
    p = plan(weights_plan_request(shared, cfg))  # as the aws-eks target plans
    spec = launch(p, lay.runtime(shared, cfg))
    layout = lay.k8s_layout(shared, cfg)
    if cfg.serving == "hyperpod":
        return p, spec, layout, [rk.render_hyperpod(p, spec, layout)]
    return p, spec, layout, rk.render(p, spec, layout)


def _containers(objs):
    for o in objs:
        if o["kind"] == "Deployment":
            pod = o["spec"]["template"]["spec"]
            yield from pod.get("initContainers", [])
            yield from pod["containers"]


def _env(container):
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container.get("env", [])}


def test_allowed_cidrs_open_the_service_to_exactly_those_sources():
    shared, cfg = _settings(allowedCidrs="203.0.113.0/24,198.51.100.7/32", allowPlaintext="true",
                            apiKey="kk3-" + "0123456789abcdefghijklmnopqrstuvwxyz")
    _, _, _, objs = _rendered(shared, cfg)
    (svc,) = [o for o in objs if o["kind"] == "Service"]
    assert svc["spec"]["type"] == "LoadBalancer"
    assert svc["spec"]["loadBalancerSourceRanges"] == ["203.0.113.0/24", "198.51.100.7/32"]
    closed = [o for o in _rendered(*_settings())[3] if o["kind"] == "Service"][0]
    assert closed["spec"]["type"] == "ClusterIP" and "loadBalancerSourceRanges" not in closed["spec"]


def test_an_hf_token_reaches_the_pods_from_the_secret_never_as_a_value():
    shared, cfg = _settings(hfToken="hf_secretvalue", weightsSource="hub")
    _, spec, layout, objs = _rendered(shared, cfg)
    assert "HF_TOKEN" in spec.secret_env
    refs = [_env(ct)["HF_TOKEN"] for ct in _containers(objs) if "HF_TOKEN" in _env(ct)]
    assert refs and all(r == {"secretKeyRef": {"name": layout.secret_name, "key": "HF_TOKEN"}}
                        for r in refs)
    assert "hf_secretvalue" not in json.dumps(objs)
    _, spec, _, objs = _rendered(*_settings(weightsSource="hub"))
    assert "HF_TOKEN" not in spec.secret_env and "HF_TOKEN" not in json.dumps(objs)


def test_hyperpod_asks_sagemaker_for_the_configured_instance_type():
    # only p6-b300 holds Kimi K3 on one node (HyperPod's one pod per replica); a smaller
    # checkpoint (modelOverrides) fits an H200 node
    shared, cfg = _settings(serving="hyperpod", hyperpodClusterName="hp", accelerator="h200",
                            modelOverrides='{"weights_bytes": 600000000000}')
    _, _, _, (endpoint,) = _rendered(shared, cfg)
    assert endpoint["spec"]["instanceType"] == "ml.p5en.48xlarge"


def test_a_streamed_pod_waits_for_the_mirror_as_long_as_the_planned_fill():
    shared, cfg = _settings(streamWeights="true")
    want = stream_wait_s(shared, cfg)
    assert want >= STREAM_WAIT_S
    _, _, layout, objs = _rendered(shared, cfg)
    (wait,) = [ct for ct in _containers(objs) if ct["name"] == "wait-for-mirror"]
    assert _env(wait)["KK3_WAIT_S"] == str(want)
    assert layout.weights.stream and layout.weights.source == "mirror"


def test_a_config_without_a_weights_path_pulls_the_model_from_the_hub():
    """AwsEksConfig built without `weights` (as before issue 12): the hub, no streaming."""
    shared, cfg = _settings()
    cfg = dataclasses.replace(cfg, weights=None)
    assert lay.weights_staging(shared, cfg) == rk.WeightsStaging(
        "hub", repo_id=MODELS[shared.model].repo_id, stream=False)
    objs = _rendered(shared, cfg)[3]
    (stage,) = [ct for ct in _containers(objs) if ct["name"] == "stage-weights"]
    assert _env(stage)["KK3_REPO_ID"] == MODELS[shared.model].repo_id
