"""`pulumi config set --secret kimi-k3:apiKey NEW && pulumi up` rolls what holds the key on aws-eks
(issue 22): the aws-eks program under the mock engine, twice, with two keys.

What is real here: the program (`__main__.py`), Pulumi's SDK and its mock monitor. What stands
in: the Kubernetes API's answer for the Secret. pulumi-kubernetes replaces a Secret whose data
changes (components/inference/secret_roll.py cites its source), and the Kubernetes API gives
the new object a new `metadata.uid`; the engine double below answers with a uid of the test's
choosing, one per run, as the API would for the replaced Secret. The Deployment, the
LeaderWorkerSet and HyperPod's InferenceEndpointConfig must then change with it, with neither
the key nor a hash of it in anything the program registers in plain.
"""

from __future__ import annotations

import hashlib
import json

import pytest

from components.inference import secret_roll as sr
from components.offline.runner import KnownOutputs, run_program

FIRST, NEW = "kk3-first-key-0123456789abcdefghijkl", "kk3-second-key-0123456789abcdefghijk"
SECRET = "kubernetes:core/v1:Secret"


def engine_with_uid(uid: str):
    """The mock engine, answering for the Secret with `uid` (as the Kubernetes API would)."""
    class Engine(KnownOutputs):
        def __init__(self, extra):
            super().__init__({**extra, SECRET: lambda a: {"metadata": {**(a.get("metadata") or {}),
                                                                       "uid": uid}}})
    return Engine


def _run(key, uid, **config):
    return run_program("aws-eks", {"kimi-k3:apiKey": key, **config}, engine=engine_with_uid(uid))


def _leaks(run, key):
    """Any trace of `key` (as typed, or its sha256) in what the program registered in plain."""
    text = json.dumps([r["inputs"] for r in run.resources]) + json.dumps(run.outputs, default=str)
    return [k for k in (key, hashlib.sha256(key.encode()).hexdigest()) if k in text]


def _templates(run, type_):
    (obj,) = [r["inputs"] for r in run.of_type(type_)]
    return sr.pod_templates({**obj, "kind": type_.rsplit(":", 1)[-1]})


@pytest.mark.parametrize("nodes,type_", [("1", "kubernetes:apps/v1:Deployment"),
                                         ("2", "kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet")])
def test_a_new_key_gives_the_serving_pods_a_new_template(nodes, type_):
    before, after = _run(FIRST, "uid-of-the-first-secret", **{"kimi-k3:nodes": nodes}), \
        _run(NEW, "uid-of-the-replaced-secret", **{"kimi-k3:nodes": nodes})
    for run, uid in ((before, "uid-of-the-first-secret"), (after, "uid-of-the-replaced-secret")):
        templates = _templates(run, type_)
        assert len(templates) == int(nodes)
        assert [t["metadata"]["annotations"][sr.ANNOTATION] for t in templates] == [uid] * int(nodes)
        assert _leaks(run, FIRST) == [] and _leaks(run, NEW) == []
    # the same key (and so the same Secret) on a second `up`: the template does not change
    again = _run(FIRST, "uid-of-the-first-secret", **{"kimi-k3:nodes": nodes})
    assert _templates(again, type_) == _templates(before, type_)
    # and the readiness gate checks with the key of this run (a gate input: readiness.GATE_INPUTS)
    (gate,) = after.of_type("pulumi-python:dynamic/aws:EndpointReadiness")
    assert gate["inputs"]["apiKey"] == "[secret]"


def test_behind_the_router_its_pod_rolls_too():
    """The router's front checks the key (router/k8s.py: a secretKeyRef): its template is marked
    by what it reads, like the vLLM pods'."""
    run = _run(NEW, "uid-r", **{"kimi-k3:replicas": "2"})
    deps = {r["name"]: r["inputs"] for r in run.of_type("kubernetes:apps/v1:Deployment")}
    assert set(deps) == {"kimi-k3-vllm", "kimi-k3-router-deployment"}
    for name, dep in deps.items():
        assert dep["spec"]["template"]["metadata"]["annotations"][sr.ANNOTATION] == "uid-r", name
    assert _leaks(run, NEW) == []


def test_without_the_secret_nothing_waits_for_a_uid():
    run = run_program("aws-eks", {}, engine=engine_with_uid("unused"))
    assert run.of_type(SECRET) == []
    (dep,) = run.of_type("kubernetes:apps/v1:Deployment")
    assert sr.ANNOTATION not in json.dumps(dep["inputs"])


def test_the_kubernetes_providers_keep_secrets_replaced_on_change():
    """The roll relies on pulumi-kubernetes replacing a changed Secret (a new uid); a provider
    with enableSecretMutable would update it in place and the pods would keep the old key."""
    run = _run(FIRST, "u")
    providers = run.of_type("pulumi:providers:kubernetes")
    assert providers
    for p in providers:
        assert p["inputs"].get("enableSecretMutable") in (None, "false", False), p["name"]


@pytest.mark.parametrize("config", [
    {"kimi-k3:serving": "hyperpod", "kimi-k3:hyperpodClusterName": "hp1"},
    {"kimi-k3:serving": "hyperpod", "kimi-k3:maxUpfrontFeeUsd": "150000"},
], ids=["user's cluster", "end to end"])
def test_hyperpod_a_new_key_changes_the_endpoint_config(config):
    def env(run):
        (iec,) = [r for r in run.resources if r["type"].endswith(":InferenceEndpointConfig")]
        return {e["name"]: e.get("value") for e in iec["inputs"]["spec"]["worker"]["environmentVariables"]}

    before, after = _run(FIRST, "uid-a", **config), _run(NEW, "uid-b", **config)
    assert env(before)[sr.UID_ENV] == "uid-a" and env(after)[sr.UID_ENV] == "uid-b"
    assert _leaks(before, FIRST) == [] and _leaks(after, NEW) == []
