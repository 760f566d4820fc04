"""The HyperPod path's readiness gate (components/aws_eks/hyperpod/readiness.py): the operator's
status as the CRD spells it (tests/contracts/hyperpod/iec_facts.yaml `status`), then the same
serving and acceptance checks as the EKS path, against the vLLM server double behind kimi-k3's
API-key guard (the Kubernetes API tunnel replaced by the double's own address)."""

import shlex
from contextlib import contextmanager
from datetime import datetime, timezone

import pytest

from components.aws_eks import readiness as rd
from components.aws_eks.hyperpod import readiness as hr
from tests.doubles.vllm_openai import DoubleConfig, VllmOpenAIDouble

KEY = "sk-hyperpod-gate-test-0123456789abcdef"
HOST = "k8s-kimik3-kimik3-0123456789-1234567890.us-east-2.elb.amazonaws.com"


def iec(state, **status):
    return {"apiVersion": "inference.sagemaker.aws.amazon.com/v1", "kind": "InferenceEndpointConfig",
            "metadata": {"name": "kimik3", "namespace": "kimi-k3"}, "status": {"state": state, **status}}


RUNNING = {"metadata": {"name": "kimik3-abc"}, "status": {
    "phase": "Running", "conditions": [{"type": "Ready", "status": "True"}],
    "containerStatuses": [{"name": "worker", "ready": True, "state": {"running": {}}}]}}
PENDING = {"metadata": {"name": "kimik3-abc"}, "status": {
    "phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                        "message": "0/2 nodes are available: 2 Insufficient nvidia.com/gpu"}]}}
DONE = iec("DeploymentComplete", selector="app=kimik3",
           tlsCertificate={"tlsCertificateOutputS3Bucket": "s3://kimi-k3-tls-abc",
                           "tlsCertificateS3Keys": ["kimi-k3/certificates/kimik3.pem"],
                           "certificateDomainNames": ["kimik3.kimi-k3.example"]})


class FakeHyperPod:
    """The cluster as the gate sees it: the endpoint config's states in turn, its Ingress, one pod."""

    instances = []

    def __init__(self, props, states, url, scheme="internal"):
        self.props, self.states, self.url, self._scheme = props, list(states), url, scheme
        FakeHyperPod.instances.append(self)

    def iec(self):
        return self.states.pop(0) if len(self.states) > 1 else self.states[0]

    def all_pods(self):
        return [PENDING]

    def pods(self):
        assert self.props["podSelector"] == {"app": "kimik3"}  # the operator's selector, from its status
        return [RUNNING]

    @contextmanager
    def forward(self, name):
        class Fw:
            url, last_error = self.url, ""
        yield Fw()

    def ingresses(self):
        return [{"metadata": {"name": "kimik3"}, "status": {"loadBalancer": {"ingress": [{"hostname": HOST}]}}}]

    def scheme(self, host):
        assert host == HOST
        return self._scheme


def props(tmp_path, **kw):
    return {"clusterName": "kimi-k3-aws-eks", "apiEndpoint": "https://x", "caData": "", "region": "us-east-2",
            "aws": {"region": "us-east-2", "profile": None}, "namespace": "kimi-k3", "iecName": "kimik3",
            "serviceName": "kimik3", "port": 8000, "podSelector": {}, "servedModelName": "Kimi-K3", "apiKey": KEY,
            "blockStart": "2026-12-02T11:30:00Z", "reservationId": "kimi-k3-abc-1", "budgetS": 30, "expectedS": 30,
            "blockWaitMaxS": 1800, "pollIntervalS": 0.05, "launchFingerprint": "f1",
            "progressFile": str(tmp_path / "p.jsonl"),
            "acceptLoad": {"requests": 4, "concurrency": 2, "maxTokens": 8},
            "acceptHardware": {"accelerator": "b300", "node_shape": "p6-b300.48xlarge", "nodes": 1}, **kw}


@pytest.fixture
def provider(monkeypatch):
    monkeypatch.setattr(hr, "_now", lambda: datetime(2026, 12, 2, 12, 0, tzinfo=timezone.utc))
    monkeypatch.setattr(rd, "_now", lambda: datetime(2026, 12, 2, 12, 0, tzinfo=timezone.utc))
    return hr.HyperPodReadinessProvider()


@contextmanager
def served(monkeypatch, states, scheme="internal", **cfg):
    d = VllmOpenAIDouble(DoubleConfig(api_key=KEY, ttft_s=0.01, tpot_s=0.002,
                                      middleware=("components.inference.kk3_api_guard.ApiKeyGuard",), **cfg))
    with d:
        monkeypatch.setattr(hr.HyperPodReadinessProvider, "cluster_factory",
                            lambda self_or_props, *a: FakeHyperPod(a[0] if a else self_or_props, states, d.url, scheme))
        yield d


def test_deployed_then_serving_then_accepted_and_the_real_url_exported(provider, monkeypatch, tmp_path):
    states = [iec("DeploymentPending"), iec("DeploymentInProgress", deploymentStatus={"message": "pulling"}), DONE]
    with served(monkeypatch, states):
        outs = provider.create(props(tmp_path)).outs
    assert outs["ready"] is True and outs["acceptance"]["ok"]
    assert outs["endpoint"] == f"https://{HOST}/v1"
    assert outs["loadBalancer"]["scheme"] == "internal"
    argv = shlex.split(outs["curl"].split(" && ", 1)[1].split(" | ", 1)[1])
    assert argv[:2] == ["curl", "--cacert"] and f"kimik3.kimi-k3.example:443:{HOST}:443" in argv
    assert outs["curl"].startswith("aws s3 cp s3://kimi-k3-tls-abc/kimi-k3/certificates/kimik3.pem k3-endpoint-ca.pem")
    assert KEY not in repr(outs["acceptance"]) + outs["curl"] and KEY not in (tmp_path / "p.jsonl").read_text()
    text = (tmp_path / "p.jsonl").read_text()
    assert '"endpoint-deploy"' in text and '"readiness-gate"' in text and '"accept-gate"' in text


def test_a_failed_deployment_fails_at_once_with_the_operators_words(provider, monkeypatch, tmp_path):
    failed = iec("DeploymentFailed", deploymentStatus={"reason": "ImagePullBackOff", "message": "no such image"})
    with served(monkeypatch, [iec("DeploymentInProgress"), failed]):
        with pytest.raises(rd.GateFailed) as e:
            provider.create(props(tmp_path))
    assert str(e.value) == ("the inference operator reports the endpoint DeploymentFailed "
                            "(ImagePullBackOff; no such image)")


def test_never_deployed_fails_at_the_budget_naming_the_state_and_the_pods(provider, monkeypatch, tmp_path):
    with served(monkeypatch, [iec("DeploymentInProgress")]):
        with pytest.raises(rd.GateFailed) as e:
            provider.create(props(tmp_path, budgetS=0.3))
    assert "did not report the endpoint deployed within 0.3 s" in str(e.value)
    assert "DeploymentInProgress; pod kimik3-abc Pending, not scheduled: Unschedulable" in str(e.value)


def test_an_internet_facing_load_balancer_is_said_out_loud(provider, monkeypatch, tmp_path):
    said = []
    monkeypatch.setattr(hr.pulumi.log, "warn", lambda text, *a, **k: said.append(text))
    with served(monkeypatch, [DONE], scheme="internet-facing"):
        outs = provider.create(props(tmp_path, acceptLoad=None)).outs
    assert outs["loadBalancer"]["scheme"] == "internet-facing"
    assert any(f"load balancer {HOST} is internet-facing: anyone can reach the endpoint" in s for s in said)


def test_a_plan_that_starts_tomorrow_defers_the_gate(provider, tmp_path):
    outs = provider.create(props(tmp_path, blockStart="2026-12-03T11:30:00Z")).outs
    assert outs["ready"] is False and outs["state"] == "waiting-for-training-plan"
    assert "training plan kimi-k3-abc-1 starts at 2026-12-03T11:30:00Z" in outs["lastSeen"]
    assert provider.diff("x", outs, props(tmp_path, blockStart="2026-12-03T11:30:00Z")).changes  # gates again


# ---------------------------------------------------------------- the pure parts, with hostile input

@pytest.mark.parametrize("text, want", [
    ("app=kimik3", {"app": "kimik3"}), ("a=b, c=d", {"a": "b", "c": "d"}), ("", None), (None, None), (7, None),
    ("app in (a,b)", None), ("a!=b", None), ("a==b", None), ("!a", None), ("=x", None)])
def test_only_plain_equality_selectors_are_used(text, want):
    assert hr.parse_selector(text) == want


@pytest.mark.parametrize("status, verdict", [
    ({"state": "DeploymentComplete"}, "done"), ({"state": "DeploymentFailed"}, "failed"),
    ({"state": "DeletionInProgress"}, "waiting"), ({}, "waiting"), (None, "waiting")])
def test_states(status, verdict):
    assert hr.deployment_state({"status": status})[0] == verdict


def test_every_state_the_gate_names_is_in_the_crd():
    from pathlib import Path

    import yaml

    facts = yaml.safe_load((Path(__file__).resolve().parents[1] / "contracts" / "hyperpod" / "iec_facts.yaml")
                           .read_text())
    assert {hr.DONE, hr.FAILED} <= set(facts["status"]["state"])


@pytest.mark.parametrize("host", ["evil.example;touch${IFS}/tmp/pwn", "a b", "$(id).elb.amazonaws.com", "x'y"])
def test_a_hostile_host_or_certificate_name_stays_one_argument(host):
    cert = {"bucket": "b;rm", "key": "k $(id).pem", "names": [f"{host}.names"]}
    line = hr.curl_line(host, cert, "Kimi-K3", api_key=False)
    fetch, curl = line.split(" && ", 1)
    assert shlex.split(fetch) == ["aws", "s3", "cp", "s3://b;rm/k $(id).pem", "k3-endpoint-ca.pem"]
    argv = shlex.split(curl)
    assert argv[argv.index("--connect-to") + 1] == f"{host}.names:443:{host}:443"
    assert f"https://{host}.names/v1/chat/completions" in argv


def test_the_first_ingress_with_a_host_is_the_endpoint():
    ings = [{"metadata": {"name": "b"}, "status": {"loadBalancer": {"ingress": [{"hostname": "b.elb"}]}}},
            {"metadata": {"name": "a"}, "status": {}}]
    assert hr.ingress_host(ings) == "b.elb" and hr.ingress_host([]) is None
