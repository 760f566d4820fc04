"""The acceptance gate on AWS: EndpointReadiness's after_ready runs components/accept's checks
through the gate's tunnel, against the vLLM server double (the tunnel replaced by the double's
own address), and the program declares the gate's size from the plan under the mock engine."""

from contextlib import contextmanager
from datetime import datetime, timezone

import pytest

from components.aws_eks import readiness as rd
from tests.doubles.vllm_openai import DoubleConfig, VllmOpenAIDouble

KEY = "sk-aws-accept-test-7f3e"


class DirectCluster:
    """The gate's cluster seen through a tunnel that is the double itself: one running pod."""

    def __init__(self, url):
        self.url = url

    def pods(self):
        return [{"metadata": {"name": "kimi-k3-0"}, "status": {
            "phase": "Running", "conditions": [{"type": "PodScheduled", "status": "True"},
                                               {"type": "Ready", "status": "True"}],
            "containerStatuses": [{"name": "vllm", "ready": True, "state": {"running": {}}}]}}]

    @contextmanager
    def forward(self, name):
        class Fw:
            url, last_error = self.url, ""
        yield Fw()

    def service(self):
        return {"status": {"loadBalancer": {}}}


def props(tmp_path, **kw):
    return {"clusterName": "c", "apiEndpoint": "https://x", "caData": "", "region": "us-east-2",
            "aws": {"region": "us-east-2", "profile": None}, "namespace": "kimi-k3",
            "serviceName": "kimi-k3-api", "port": 8000,
            "podSelector": {"app.kubernetes.io/name": "kimi-k3"}, "servedModelName": "Kimi-K3",
            "apiKey": KEY, "blockStart": None, "reservationId": "cr-0aaaaaaaaaaaaaaaa",
            "budgetS": 20, "expectedS": 30, "blockWaitMaxS": 1800, "pollIntervalS": 0.2,
            "launchFingerprint": "f1", "progressFile": str(tmp_path / "p.jsonl"),
            "acceptLoad": {"requests": 6, "concurrency": 3, "maxTokens": 8},
            "acceptHardware": {"accelerator": "b300", "node_shape": "p6-b300.48xlarge",
                               "nodes": 1}, **kw}


@pytest.fixture
def provider(monkeypatch):
    monkeypatch.setattr(rd, "_now", lambda: datetime(2026, 12, 2, 12, 0, tzinfo=timezone.utc))
    return rd.EndpointReadinessProvider()


def served(monkeypatch, **cfg):
    # as kimi-k3 serves with a key: behind its API-key guard (the `auth` check probes /invocations)
    d = VllmOpenAIDouble(DoubleConfig(api_key=KEY, ttft_s=0.01, tpot_s=0.002,
                                      middleware=("components.inference.kk3_api_guard.ApiKeyGuard",),
                                      **cfg))
    monkeypatch.setattr(rd.EndpointReadinessProvider, "cluster_factory",
                        lambda self_or_props, *a: DirectCluster(d.url))
    return d


def test_ready_endpoint_is_accepted_and_the_summary_exported(provider, monkeypatch, tmp_path):
    with served(monkeypatch):
        outs = provider.create(props(tmp_path)).outs
    acc = outs["ready"] and outs["acceptance"]
    assert acc["ok"] and all(acc["checks"].values()) and len(acc["checks"]) == 12
    assert {"arithmetic", "json_schema", "needle", "greedy_repeat"} <= set(acc["checks"])
    assert acc["load"]["requests"] == 6 and acc["load"]["concurrency"] == 3
    assert acc["reference"] == []  # no B300 figure could be confirmed at its source
    assert acc["endpoint"] == "service kimi-k3/kimi-k3-api" and KEY not in repr(acc)
    text = (tmp_path / "p.jsonl").read_text()
    assert '"accept-gate"' in text and KEY not in text


def test_a_failed_check_fails_the_up_by_name_and_a_refresh_reports_it(provider, monkeypatch,
                                                                        tmp_path):
    with served(monkeypatch, faults=frozenset({"no_done"})):
        with pytest.raises(rd.GateFailed) as err:
            provider.create(props(tmp_path))
        assert str(err.value).startswith("acceptance check stream failed: the stream ended "
                                         "without data: [DONE]")
        read = provider.read("kimi-k3/kimi-k3-api", {**props(tmp_path), "ready": False})
    assert read.outs["ready"] is False and "acceptance check stream failed" in read.outs["lastSeen"]


def test_load_off_keeps_the_functional_checks_and_a_new_size_gates_again(provider, monkeypatch,
                                                                         tmp_path):
    with served(monkeypatch):
        outs = provider.create(props(tmp_path, acceptLoad=None)).outs
    assert outs["acceptance"]["load"] is None and "load" not in outs["acceptance"]["checks"]
    assert outs["acceptance"]["checks"]["tool_call"] is True
    assert not provider.diff("x", outs, props(tmp_path, acceptLoad=None)).changes
    assert provider.diff("x", outs, props(tmp_path)).changes


def test_the_program_sizes_the_gate_from_the_plan():
    from components.offline.runner import run_program

    run = run_program("aws-eks", {"kimi-k3:capacityReservationId": "cr-0123456789abcdef0"})
    gate = [r for r in run.resources if r["type"] == "pulumi-python:dynamic/aws:EndpointReadiness"]
    assert len(gate) == 1
    inputs = gate[0]["inputs"]
    # B300 profile leaves max-num-seqs to vLLM: the gate's concurrency is its cap
    assert inputs["acceptLoad"] == {"requests": 128, "concurrency": 64, "maxTokens": 64}
    assert inputs["acceptHardware"]["accelerator"] == "b300"
    assert "acceptance" in run.outputs
    off = run_program("aws-eks", {"kimi-k3:capacityReservationId": "cr-0123456789abcdef0",
                                  "kimi-k3:acceptLoad": "off"})
    g = [r for r in off.resources if r["type"] == "pulumi-python:dynamic/aws:EndpointReadiness"]
    assert "acceptLoad" not in g[0]["inputs"] or g[0]["inputs"]["acceptLoad"] is None


# ---- several replicas behind the router (issue 23) ------------------------------------------

class RouterCluster:
    """The router's pod (the Service's) tunnels to kimi-k3's front of a real vllm-router; each
    replica's pod tunnels to its own vLLM double."""

    def __init__(self, rig):
        self.rig = rig
        self.forwards = []

    @staticmethod
    def _pod(name):
        return {"metadata": {"name": name}, "status": {
            "phase": "Running", "conditions": [{"type": "Ready", "status": "True"}],
            "containerStatuses": [{"name": "vllm", "ready": True, "state": {"running": {}}}]}}

    def pods(self):
        return [self._pod("kimi-k3-router-abc")]

    def pods_matching(self, selector):
        assert selector == {"app.kubernetes.io/name": "kimi-k3", "app.kubernetes.io/instance": "kimi-k3"}
        return [self._pod(f"kimi-k3-{i}") for i in range(self.rig.n)]

    @contextmanager
    def forward(self, name):
        self.forwards.append(name)
        url = self.rig.front_url if "router" in name else \
            self.rig.replica_url(int(name.rsplit("-", 1)[1])) + "/v1"

        class Fw:
            last_error = ""
        Fw.url = url
        yield Fw()

    def service(self):
        return {"status": {"loadBalancer": {}}}


ROUTED = dict(replicas=2, replicaSelector={"app.kubernetes.io/name": "kimi-k3",
                                           "app.kubernetes.io/instance": "kimi-k3"},
              acceptKnown={"contextTokens": 32768, "needleCapTokens": 16384},
              podSelector={"app.kubernetes.io/name": "kimi-k3-router",
                           "app.kubernetes.io/instance": "kimi-k3"})


def _routed_rig(drift=False):
    from tests.doubles.router_rig import RouterRig

    cfg = DoubleConfig(api_key=KEY, ttft_s=0.01, tpot_s=0.002, enable_scale_out=True,
                       max_model_len=32768,
                       middleware=("components.inference.kk3_api_guard.ApiKeyGuard",))
    rig = RouterRig(replicas=2, double=cfg)
    rig.start()
    if drift:  # replica 1 answers half the word problems differently
        rig.kill(1)
        rig.doubles[1] = VllmOpenAIDouble(
            DoubleConfig(**{**cfg.__dict__, "faults": frozenset({"replica_drift"})}),
            port=rig.ports[1]).start()
    return rig


def test_behind_the_router_the_gate_asks_every_replica_once(provider, monkeypatch, tmp_path):
    rig = _routed_rig()
    try:
        cluster = RouterCluster(rig)
        monkeypatch.setattr(rd.EndpointReadinessProvider, "cluster_factory", lambda *a: cluster)
        outs = provider.create(props(tmp_path, **ROUTED)).outs
    finally:
        rig.stop()
    acc = outs["acceptance"]
    assert acc["ok"] and acc["checks"]["greedy_replicas"] is True, acc
    assert "each of the 2 replicas" in acc["via"]
    assert cluster.forwards[0] == "kimi-k3-router-abc"
    assert sorted(cluster.forwards[1:]) == ["kimi-k3-0", "kimi-k3-1"]


def test_a_replica_that_disagrees_fails_the_gate_by_name(provider, monkeypatch, tmp_path):
    rig = _routed_rig(drift=True)
    try:
        monkeypatch.setattr(rd.EndpointReadinessProvider, "cluster_factory",
                            lambda *a: RouterCluster(rig))
        with pytest.raises(rd.GateFailed) as err:
            provider.create(props(tmp_path, **ROUTED))
    finally:
        rig.stop()
    # through the router the drifting replica takes some problems: the set itself may fail first
    assert str(err.value).startswith(("acceptance check greedy_replicas failed",
                                      "acceptance check arithmetic failed")), str(err.value)
