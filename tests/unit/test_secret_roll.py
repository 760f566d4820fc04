"""A pod template that reads the Secret carries its uid (components/inference/secret_roll.py), so a
new API key rolls the pods; the renderers mark exactly the templates that read it.

The program-level proof (a new key on a stack gives a new pod template) is
tests/integration/test_key_rotation.py.
"""

from __future__ import annotations

import pytest

from components.inference import secret_roll as sr

NAME = "kimi-k3-secrets"


def _deployment(env=(), env_from=(), volumes=(), init_env=()):
    pod = {"containers": [{"name": "vllm", "env": list(env), "envFrom": list(env_from)}],
           "volumes": list(volumes)}
    if init_env:
        pod["initContainers"] = [{"name": "stage", "env": list(init_env)}]
    return {"kind": "Deployment", "metadata": {"name": "kimi-k3"},
            "spec": {"template": {"metadata": {"labels": {"a": "b"}}, "spec": pod}}}


KEY_REF = {"name": "VLLM_API_KEY", "valueFrom": {"secretKeyRef": {"name": NAME, "key": "VLLM_API_KEY"}}}


@pytest.mark.parametrize("obj", [
    _deployment(env=[KEY_REF]),
    _deployment(init_env=[{"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": NAME, "key": "HF_TOKEN"}}}]),
    _deployment(env_from=[{"secretRef": {"name": NAME}}]),
    _deployment(volumes=[{"name": "s", "secret": {"secretName": NAME}}]),
], ids=["env", "init-container env", "envFrom", "volume"])
def test_a_template_reading_the_secret_is_marked_and_takes_the_uid(obj):
    marked = sr.mark(obj, NAME)
    ann = marked["spec"]["template"]["metadata"]["annotations"]
    assert ann == {sr.ANNOTATION: sr.UID_PLACEHOLDER}
    assert sr.marked(marked) and not sr.marked(obj)  # the input is not changed in place
    done = sr.with_uid(marked, "uid-1")
    assert done["spec"]["template"]["metadata"]["annotations"][sr.ANNOTATION] == "uid-1"
    assert not sr.marked(done)


@pytest.mark.parametrize("obj", [
    _deployment(env=[{"name": "X", "value": NAME}]),
    _deployment(env=[{"name": "K", "valueFrom": {"secretKeyRef": {"name": "other", "key": "K"}}}]),
    _deployment(volumes=[{"name": "c", "configMap": {"name": NAME}}]),
    {"kind": "Job", "spec": {"template": {"spec": {"containers": [{"env": [KEY_REF]}]}}}},
], ids=["literal value", "another Secret", "a ConfigMap of that name", "a Job (immutable template)"])
def test_what_does_not_read_the_secret_is_not_marked(obj):
    assert sr.mark(obj, NAME) == obj


def test_both_templates_of_a_leader_worker_set():
    def template(env):
        return {"metadata": {"labels": {}}, "spec": {"containers": [{"env": env}]}}

    lws = {"kind": "LeaderWorkerSet", "spec": {"leaderWorkerTemplate": {
        "leaderTemplate": template([KEY_REF]), "workerTemplate": template([KEY_REF])}}}
    done = sr.with_uid(sr.mark(lws, NAME), "uid-2")
    lwt = done["spec"]["leaderWorkerTemplate"]
    assert [lwt[t]["metadata"]["annotations"][sr.ANNOTATION] for t in ("leaderTemplate", "workerTemplate")] \
        == ["uid-2", "uid-2"]


def test_hyperpod_env_carries_the_uid_when_the_worker_or_the_download_reads_the_secret():
    assert sr.mark_hyperpod_env([KEY_REF], NAME)[-1] == {"name": sr.UID_ENV, "value": sr.UID_PLACEHOLDER}
    assert sr.mark_hyperpod_env([], NAME, {"name": NAME, "key": "HF_TOKEN"})[-1]["name"] == sr.UID_ENV
    assert sr.mark_hyperpod_env([{"name": "A", "value": "b"}], NAME) == [{"name": "A", "value": "b"}]
    iec = {"kind": "InferenceEndpointConfig",
           "spec": {"worker": {"environmentVariables": sr.mark_hyperpod_env([KEY_REF], NAME)}}}
    assert sr.marked(iec)
    assert sr.with_uid(iec, "uid-3")["spec"]["worker"]["environmentVariables"][-1]["value"] == "uid-3"


@pytest.mark.parametrize("nodes", [1, 2])
def test_the_renderers_mark_the_serving_pods_with_a_key_and_nothing_without(nodes):
    from components.inference import render_k8s as rk
    from tests.unit.test_render_k8s import _layout, _spec

    layout = _layout(efa_per_node=0) if nodes == 1 else _layout(inter_node_transport="efa", efa_install=True)
    keyed = rk.render(*_spec(nodes, api_key=True), layout)[1]
    templates = sr.pod_templates(keyed)
    assert len(templates) == nodes and all(
        t["metadata"]["annotations"] == {sr.ANNOTATION: sr.UID_PLACEHOLDER} for t in templates)
    assert not sr.marked(rk.render(*_spec(nodes), layout)[1])


def test_the_hyperpod_endpoint_config_is_marked_with_a_key():
    from components.inference import render_k8s as rk
    from tests.unit.test_render_k8s import _layout, _spec

    p, s = _spec(1, api_key=True, model_path="/opt/ml/model")
    assert sr.marked(rk.render_hyperpod(p, s, _layout(efa_per_node=0)))
    p, s = _spec(1, model_path="/opt/ml/model")
    assert not sr.marked(rk.render_hyperpod(p, s, _layout(efa_per_node=0)))


def test_a_placeholder_without_a_secret_or_a_secret_without_uid_stops_the_program():
    """The guards of aws_eks/serving.py: a template waiting for a uid the stack cannot give,
    and an API answer without a uid, would leave the pods on the old key."""
    from unittest import mock

    from components.aws_eks.serving import declared, secret_uid

    obj = sr.mark(_deployment(env=[KEY_REF]), NAME)
    with pytest.raises(ValueError, match="reads a Secret the stack does not declare"):
        declared(obj, None)
    assert declared(_deployment(), None) == _deployment()

    captured = {}

    class FakeOutput:
        def apply(self, fn):
            captured["fn"] = fn
            return self

    secret_uid(mock.Mock(metadata=FakeOutput()))
    with pytest.raises(RuntimeError, match="without a metadata.uid"):
        captured["fn"](mock.Mock(uid=""))
    with pytest.raises(RuntimeError, match="without a metadata.uid"):
        captured["fn"](None)
    assert captured["fn"](mock.Mock(uid="u-1")) == "u-1"
