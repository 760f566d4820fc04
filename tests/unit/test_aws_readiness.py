"""The AWS readiness gate against a local vLLM-like server (tests/doubles/vllm_openai.py).

A cluster double stands in for what the Kubernetes API reports (pods) and for the tunnel to the
serving pod; the HTTP side is components/accept's real readiness wait against the vLLM double.
The port-forward is also driven through a double of the kubelet's WebSocket port-forward
protocol (v4.channel.k8s.io framing), to the same server. Waiting happens in simulated time
(the `fake_clock` fixture): the gate, the readiness polls, the pods' script and the double's
warm-up all read the same clock, so a 20 s budget takes milliseconds and its figures are exact.
"""

import base64
import contextlib
import functools
import socket
import time
from datetime import datetime, timedelta, timezone
from urllib.parse import parse_qs, urlsplit

import pytest

from components.aws_eks import kube_api
from components.aws_eks import readiness as rd
from components.aws_eks.port_forward import PortForward, ws_url
from components.progress.record import read_records
from tests.doubles.vllm_openai import DoubleConfig, VllmOpenAIDouble

SELECTOR = {"app.kubernetes.io/name": "kimi-k3", "app.kubernetes.io/instance": "kimi-k3"}


def pod(name="kimi-k3-7d9f-abcde", phase="Running", scheduled=True, container="running", init=None,
        reason="Unschedulable", message="0/2 nodes are available: 2 node(s) didn't match Pod's node affinity"):
    status = {"phase": phase, "conditions": [
        {"type": "PodScheduled", "status": "True" if scheduled else "False",
         **({} if scheduled else {"reason": reason, "message": message})}]}
    if container:
        state = {"running": {"startedAt": "x"}} if container == "running" else \
            {"waiting": {"reason": container, "message": "back-off"}}
        status["containerStatuses"] = [{"name": "vllm", "state": state, "restartCount": 0}]
    if init:
        status["initContainerStatuses"] = [{"name": "stage-weights", "state": {init: {}}}]
    return {"metadata": {"name": name}, "status": status}


class FakeCluster:
    """What the Kubernetes API reports over time, and a tunnel that is just the server's URL."""

    def __init__(self, url, script, clock=time.monotonic):
        self.url, self.script, self.clock, self.t0 = url, script, clock, clock()
        self.forwards = []

    def pods(self):
        elapsed = self.clock() - self.t0
        for until, pods in self.script:
            if elapsed < until:
                return pods
        return self.script[-1][1]

    @contextlib.contextmanager
    def forward(self, name):
        self.forwards.append(name)

        class Fw:
            url = self.url
            last_error = None
        yield Fw()

    def service(self):
        return {"status": {"loadBalancer": {"ingress": [{"hostname": "nlb.example.elb.amazonaws.com"}]}}}


class Phase:
    def __init__(self):
        self.seen = []

    def update(self, text, force=False, **kw):
        self.seen.append(text)


def gate(cluster, deadline_s, clock, api_key=None, **kw):
    """run_gate with every wait (its own, the readiness polls') on `clock` (a FakeClock)."""
    from components.accept import wait_ready

    return rd.run_gate(cluster, namespace="kimi-k3", selector=SELECTOR, model="Kimi-K3", api_key=api_key,
                       deadline_s=deadline_s, phase=kw.pop("phase", Phase()), poll_s=0.2,
                       clock=clock, sleep=clock.sleep,
                       wait_ready=functools.partial(wait_ready, clock=clock, sleep=clock.asleep), **kw)


def test_ready_after_the_pod_is_scheduled_staged_and_loaded(fake_clock):
    with VllmOpenAIDouble(DoubleConfig(ready_after_s=2.5, clock=fake_clock)) as d:
        cluster = FakeCluster(d.url, [(0.6, [pod(phase="Pending", scheduled=False, container=None)]),
                                      (1.2, [pod(phase="Pending", container=None, init="running")]),
                                      (9e9, [pod()])], fake_clock)
        ph = Phase()
        r = gate(cluster, 20, fake_clock, phase=ph)
    assert 2.5 <= r.elapsed_s <= 2.5 + 0.2 + 1e-9   # ready at the first poll after the warm-up
    assert r.ready and r.via == "port-forward to pod kimi-k3-7d9f-abcde"
    assert r.last_seen.startswith("a chat completion answered")
    text = "\n".join(ph.seen)
    assert "Pending, not scheduled: Unschedulable 0/2 nodes are available" in text
    assert "init container stage-weights running (staging weights)" in text
    assert "health: GET /health: HTTP 503" in text  # vLLM still loading
    assert d.chat_requests >= 1  # a real chat completion was made


def test_a_gate_that_times_out_fails_with_the_last_thing_it_saw(fake_clock):
    with VllmOpenAIDouble(DoubleConfig(faults=frozenset({"health_down"}))) as d:
        cluster = FakeCluster(d.url, [(9e9, [pod()])], fake_clock)
        with pytest.raises(rd.GateFailed) as e:
            gate(cluster, 1.5, fake_clock)
    assert fake_clock.elapsed() == pytest.approx(1.5)  # the deadline is kept, not overslept
    assert all(s <= 0.2 + 1e-9 for s in fake_clock.slept)
    msg = str(e.value)
    assert "did not serve within 1.5 s" in msg and "\n" not in msg
    assert "last seen: pod kimi-k3-7d9f-abcde: waiting for health; last seen: GET /health: HTTP 503" in msg


def test_a_pod_that_never_schedules_is_named_in_the_failure(fake_clock):
    cluster = FakeCluster("http://127.0.0.1:9/v1", [(9e9, [pod(phase="Pending", scheduled=False, container=None,
                                                               message="0/2 nodes: Insufficient nvidia.com/gpu")])],
                          fake_clock)
    with pytest.raises(rd.GateFailed) as e:
        gate(cluster, 0.5, fake_clock)
    assert "Pending, not scheduled: Unschedulable 0/2 nodes: Insufficient nvidia.com/gpu" in str(e.value)
    assert cluster.forwards == []  # nothing to tunnel to


def test_crash_looping_and_missing_pods_are_reported(fake_clock):
    assert "waiting: CrashLoopBackOff back-off" in kube_api.pod_summary(pod(container="CrashLoopBackOff"))
    cluster = FakeCluster("http://127.0.0.1:9/v1", [(9e9, [])], fake_clock)
    with pytest.raises(rd.GateFailed, match="no pod labelled"):
        gate(cluster, 0.3, fake_clock)


def test_the_api_key_is_used_and_a_wrong_one_fails_at_models(fake_clock):
    with VllmOpenAIDouble(DoubleConfig(api_key="sk-right-key")) as d:
        cluster = FakeCluster(d.url, [(9e9, [pod()])], fake_clock)
        assert gate(cluster, 10, fake_clock, api_key="sk-right-key").ready
        with pytest.raises(rd.GateFailed) as e:
            gate(cluster, 1.0, fake_clock, api_key="sk-wrong-key")
    assert "waiting for models" in str(e.value) and "401" in str(e.value)
    assert "sk-wrong-key" not in str(e.value)


def test_after_ready_runs_while_the_tunnel_is_open(fake_clock):
    calls = []
    with VllmOpenAIDouble(DoubleConfig()) as d:
        cluster = FakeCluster(d.url, [(9e9, [pod()])], fake_clock)
        r = gate(cluster, 10, fake_clock, after_ready=lambda url: calls.append(url) or {"ok": True})
    assert calls == [d.url] and r.acceptance == {"ok": True}


# ---------------------------------------------------------------- the provider: block timing, diff, progress

def props(block_start, **kw):
    return {"clusterName": "kimi-k3-aws-eks", "apiEndpoint": "https://x.eks.amazonaws.com", "caData": "",
            "region": "us-east-2", "aws": {"region": "us-east-2", "profile": None}, "namespace": "kimi-k3",
            "serviceName": "kimi-k3-api", "port": 8000, "podSelector": SELECTOR, "servedModelName": "Kimi-K3",
            "apiKey": "", "blockStart": block_start, "reservationId": "cr-0aaaaaaaaaaaaaaaa",
            "budgetS": 20, "expectedS": 3444, "blockWaitMaxS": 1800, "pollIntervalS": 0.2,
            "launchFingerprint": "f1", **kw}


def test_a_block_in_the_future_returns_at_once_and_a_later_up_gates(tmp_path, monkeypatch):
    progress = str(tmp_path / "aws-eks.jsonl")
    now = datetime(2026, 12, 1, 9, 0, tzinfo=timezone.utc)
    monkeypatch.setattr(rd, "_now", lambda: now)
    p = rd.EndpointReadinessProvider()
    start = "2026-12-02T11:30:00Z"
    t0 = time.monotonic()
    created = p.create({**props(start), "progressFile": progress})
    assert time.monotonic() - t0 < 1
    outs = created.outs
    assert outs["ready"] is False and outs["state"] == "waiting-for-block"
    assert outs["servingExpectedBy"] == rd.fmt(datetime(2026, 12, 2, 11, 30, tzinfo=timezone.utc)
                                              + timedelta(seconds=3444))  # expectedS: block start to first token
    assert "run `pulumi up` (or `pulumi refresh`) after that" in outs["lastSeen"]
    # the next `up`: nothing changed in the inputs, but not ready -> an update, which gates
    assert p.diff(created.id, outs, props(start)).changes is True
    monkeypatch.setattr(rd, "_now", lambda: datetime(2026, 12, 2, 12, 0, tzinfo=timezone.utc))
    with VllmOpenAIDouble(DoubleConfig()) as d:
        monkeypatch.setattr(rd.EndpointReadinessProvider, "cluster_factory",
                            lambda self_or_props, *a: FakeCluster(d.url, [(9e9, [pod()])]))
        updated = p.update(created.id, outs, {**props(start), "progressFile": progress})
    assert updated.outs["ready"] is True and updated.outs["endpoint"] == "http://nlb.example.elb.amazonaws.com:8000/v1"
    # ready and unchanged: no more gating; a different launch spec gates again
    assert p.diff(created.id, updated.outs, {**props(start), "progressFile": "/elsewhere"}).changes is False
    assert p.diff(created.id, updated.outs, props(start, launchFingerprint="f2")).changes is True
    # another replica (the pods' template unchanged): the gate asks every replica again
    assert p.diff(created.id, updated.outs, props(start, replicas=3)).changes is True
    recs = read_records(progress)
    gate_recs = [r for r in recs if r["phase"] == "readiness-gate"]
    assert gate_recs[0]["event"] == "start" and gate_recs[-1]["event"] == "done"


def test_a_failed_gate_fails_the_update_and_a_refresh_reports_without_failing(monkeypatch, tmp_path):
    monkeypatch.setattr(rd, "_now", lambda: datetime(2026, 12, 2, 12, 0, tzinfo=timezone.utc))
    p = rd.EndpointReadinessProvider()
    cluster = FakeCluster("http://127.0.0.1:9/v1", [(9e9, [pod(phase="Pending", scheduled=False, container=None)])])
    monkeypatch.setattr(rd.EndpointReadinessProvider, "cluster_factory", lambda *a: cluster)
    monkeypatch.setattr(rd, "REFRESH_MIN_S", 0.3)
    with pytest.raises(rd.GateFailed):
        p.create(props("2026-12-02T11:30:00Z", budgetS=0.3, progressFile=str(tmp_path / "p.jsonl")))
    read = p.read("kimi-k3/kimi-k3-api", {**props("2026-12-02T11:30:00Z", budgetS=0.3), "ready": False})
    assert read.outs["ready"] is False and "Pending, not scheduled" in read.outs["lastSeen"]
    assert any(r["phase"] == "readiness-gate" and r["event"] == "failed"
               for r in read_records(str(tmp_path / "p.jsonl")))


def test_block_timing():
    now = datetime(2026, 12, 1, 11, 0, tzinfo=timezone.utc)
    assert rd.block_timing(None, now, 1800) == "started"
    assert rd.block_timing("2026-12-01T10:00:00Z", now, 1800) == "started"
    assert rd.block_timing("2026-12-01T11:20:00Z", now, 1800) == "wait"
    assert rd.block_timing("2026-12-01T11:31:00Z", now, 1800) == "defer"


# ---------------------------------------------------------------- the port-forward tunnel

class KubeletPortForwardDouble:
    """The server side of a pod port-forward WebSocket, per the kubelet's websocket.go:
    binary frames `[channel][payload]`; channel 0 data, 1 errors; the first frame on each
    channel is the port number (uint16 little endian). Forwards channel 0 to `target`."""

    def __init__(self, target_port, fail_with=None):
        self.target_port, self.fail_with = target_port, fail_with
        self.opened = 0

    def open(self):
        self.opened += 1
        if self.fail_with:
            raise ConnectionRefusedError(self.fail_with)
        return _WsEnd(socket.create_connection(("127.0.0.1", self.target_port)), self.target_port)


class _WsEnd:
    def __init__(self, sock, port):
        self.sock, self.frames, self.closed = sock, [bytes([0]) + port.to_bytes(2, "little"),
                                                     bytes([1]) + port.to_bytes(2, "little")], False

    def send_binary(self, data):
        assert data[0] == 0, "the client writes data on channel 0 only"
        self.sock.sendall(data[1:])

    def recv_data(self):
        if self.frames:
            return 2, self.frames.pop(0)
        try:
            chunk = self.sock.recv(65536)
        except OSError:
            chunk = b""
        return (2, bytes([0]) + chunk) if chunk else (8, b"")

    def close(self):  # as a WebSocket close does: the connection ends for a blocked reader too
        if not self.closed:
            self.closed = True
            try:
                self.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            self.sock.close()


def test_the_gate_through_the_port_forward_protocol(fake_clock):
    from components.accept import wait_ready

    with VllmOpenAIDouble(DoubleConfig(api_key="sk-k")) as d:
        kubelet = KubeletPortForwardDouble(d.port)
        with PortForward(kubelet.open) as fw:
            r = wait_ready(fw.url, "Kimi-K3", "sk-k", timeout_s=10, poll_interval_s=0.2,
                           clock=fake_clock, sleep=fake_clock.asleep)
        assert r.ready, r.last_seen
        assert kubelet.opened >= 1


def test_a_refused_port_forward_is_reported(fake_clock):
    from components.accept import wait_ready

    kubelet = KubeletPortForwardDouble(9, fail_with="Handshake status 403 Forbidden")
    with PortForward(kubelet.open) as fw:
        r = wait_ready(fw.url, "Kimi-K3", None, timeout_s=0.6, poll_interval_s=0.2,
                       clock=fake_clock, sleep=fake_clock.asleep)
        assert not r.ready and "403 Forbidden" in (fw.last_error or "")


def test_websocket_url():
    assert ws_url("https://ABC.gr7.us-east-2.eks.amazonaws.com", "kimi-k3", "kimi-k3-0", 8000) == \
        "wss://ABC.gr7.us-east-2.eks.amazonaws.com/api/v1/namespaces/kimi-k3/pods/kimi-k3-0/portforward?ports=8000"


# ---------------------------------------------------------------- the EKS token

def test_eks_token_is_a_presigned_get_caller_identity_bound_to_the_cluster():
    import boto3

    sess = boto3.Session(aws_access_key_id="AKIDEXAMPLE", aws_secret_access_key="secret", region_name="us-east-2")
    token = kube_api.eks_token(sess, "kimi-k3-aws-eks", "us-east-2")
    assert token.startswith("k8s-aws-v1.") and "=" not in token
    raw = token[len("k8s-aws-v1."):]
    url = base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4)).decode()
    parts = urlsplit(url)
    q = parse_qs(parts.query)
    assert parts.netloc == "sts.us-east-2.amazonaws.com"
    assert q["Action"] == ["GetCallerIdentity"] and q["Version"] == ["2011-06-15"]
    assert q["X-Amz-Expires"] == ["60"] and q["X-Amz-SignedHeaders"] == ["host;x-k8s-aws-id"]
    assert q["X-Amz-Credential"][0].startswith("AKIDEXAMPLE/") and "/us-east-2/sts/aws4_request" in q["X-Amz-Credential"][0]
    assert "secret" not in url
