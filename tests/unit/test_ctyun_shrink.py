"""Issue 19, "resize while serving": a shrink stops the service first, in the program.

The order logic of `cluster_ops.shrink_to`, `resize.stop_for_shrink` and the `HccShrink` step
(shrink_step.py), with E-HPC's node calls answered by tests/ehpc_nodes_double.py and the master
by a scripted runner (the real sshd + Slurm run: tests/integration/test_slurm_day2.py; the HTTP
emulator: tests/integration/test_ctyun_provider.py)."""

from __future__ import annotations

import socket
import time

import pytest

from components.ctyun_hcc import cluster_ops as ops
from components.ctyun_hcc import provider_runtime as rt
from components.ctyun_hcc import resize
from components.ctyun_hcc import shrink_step
from components.ctyun_hcc.api.waits import Waiter
from components.ctyun_hcc.cluster_provider import node_view
from components.ctyun_hcc.shrink_step import HccShrinkProvider, MasterUnreachable
from components.ctyun_hcc.ssh import CommandFailed, Result
from components.progress.record import ProgressLog
from tests.ehpc_nodes_double import EhpcNodesDouble

NODES = [("kk3n0", "10.77.0.10"), ("kk3n1", "10.77.0.11"), ("kk3n2", "10.77.0.12"),
         ("kk3n3", "10.77.0.13")]


def _ctx(ehpc):
    return ops.Ctx(ehpc, "az1", Waiter(0.001), ProgressLog(None), 1.0)


# --- cluster_ops.shrink_to: the hook before any removal -----------------------------------------

def test_shrink_to_runs_the_hook_once_for_every_leaving_node_before_removing_any():
    many = [("m0", "10.0.0.1")] + [(f"c{i:02d}", f"10.0.1.{i}") for i in range(1, 15)]
    ehpc = EhpcNodesDouble(many)
    seen = []

    def before(leaving, phase):
        seen.append([n.name for n in leaving])
        ehpc.calls.append("hook")

    removed, every = ops.shrink_to(_ctx(ehpc), ehpc.cluster, 2, time.monotonic() + 30,
                                   "ctyun:updateTimeoutS", before)
    # the highest-named 12 leave (what HccCluster removed), the hook sees all of them at once
    assert seen == [[f"c{i:02d}" for i in range(3, 15)]]
    shrinks = [c for c in ehpc.calls if c.startswith("shrink_cluster")]
    assert len(shrinks) == 2  # 10 + 2: the documented batch
    assert ehpc.calls.index("hook") < ehpc.calls.index(shrinks[0])
    assert [n.name for n in removed] == seen[0]
    assert [n.name for n in every] == ["m0", "c01", "c02"]


def test_shrink_to_removes_nothing_when_the_hook_fails():
    ehpc = EhpcNodesDouble(NODES)

    def before(leaving, phase):
        raise RuntimeError("the service could not be stopped")

    with pytest.raises(RuntimeError, match="could not be stopped"):
        ops.shrink_to(_ctx(ehpc), ehpc.cluster, 2, time.monotonic() + 30, "x", before)
    assert not [c for c in ehpc.calls if c.startswith("shrink_cluster")]
    assert len(ehpc.nodes) == 4


def test_shrink_to_with_nothing_above_the_count_calls_no_hook():
    ehpc = EhpcNodesDouble(NODES)
    removed, every = ops.shrink_to(_ctx(ehpc), ehpc.cluster, 3, time.monotonic() + 30, "x",
                                   lambda leaving, phase: pytest.fail("hook called"))
    assert removed == [] and len(every) == 4


def test_a_deferred_resize_grows_but_leaves_the_shrink_to_the_step():
    ehpc = EhpcNodesDouble(NODES)
    calls, every = ops.resize(_ctx(ehpc), ehpc.cluster, 1, None, time.monotonic() + 30, "x",
                              lambda: "q", shrink=False)
    assert calls == 0 and len(every) == 4 and "shrink_cluster" not in " ".join(ehpc.calls)
    calls, every = ops.resize(_ctx(ehpc), ehpc.cluster, 1, None, time.monotonic() + 30, "x",
                              lambda: "q")  # HccCluster without a bootstrap: as before
    assert calls == 1 and [n.name for n in every] == ["kk3n0", "kk3n1"]


# --- resize.stop_for_shrink over a scripted master ------------------------------------------------

class Master:
    """A scripted master: answers each command by the first matching rule, records them."""

    def __init__(self, rules):
        self.rules, self.sent = rules, []

    def run(self, cmd, check=True, timeout_s=None, stdin=None, label=None):
        self.sent.append(label or cmd)
        for key, answer in self.rules:
            if key in cmd:
                out = answer() if callable(answer) else answer
                if isinstance(out, Exception):
                    raise out
                return Result(0, out, "")
        return Result(0, "", "")


def test_stop_for_shrink_drains_stops_this_stacks_job_then_waits_until_idle(monkeypatch):
    states = iter(["kk3n3 draining\n", "kk3n3 drained\n"])
    master = Master([("squeue -h -u", "71|RUNNING|kimi-k3|kk3:kimi-k3/t:fp\n"
                                      "72|RUNNING|kimi-k3|other\n"),
                     ("scontrol show job -o 71", "JobId=71 JobState=RUNNING\n"
                      "HOSTS kk3n0 kk3n1 kk3n2 kk3n3\n"),
                     ("scontrol show job -o 72", "JobId=72 JobState=RUNNING\nHOSTS kk3n3\n"),
                     ("sinfo -h -N -n", lambda: next(states))])
    cancelled = []
    monkeypatch.setattr(resize, "cancel", lambda r, jid, d, i: cancelled.append(jid))
    p = {"serviceJobNames": ["kimi-k3"], "ownerTag": "kimi-k3/t", "workDir": "/w",
         "sshUser": "root"}
    stopped = resize.stop_for_shrink(master, p, ["kk3n3"], time.monotonic() + 5, 0.001)
    assert stopped == ["71"] and cancelled == ["71"]  # job 72 is not this stack's: untouched
    order = [s for s in master.sent if s in ("drain the leaving nodes", "mark the service "
                                             "stopped", "sinfo the leaving nodes")]
    assert order == ["drain the leaving nodes", "mark the service stopped",
                     "sinfo the leaving nodes", "sinfo the leaving nodes"]


def test_a_foreign_job_that_keeps_a_leaving_node_busy_blocks_the_shrink_naming_it(monkeypatch):
    master = Master([("squeue -h -o", ""), ("sinfo -h -N -n", "kk3n3 draining\n"),
                     ("squeue -h -w", "88 (alice, train)\n")])
    with pytest.raises(resize.ShrinkBlocked) as err:
        resize.stop_for_shrink(master, {"serviceJobNames": ["kimi-k3"], "ownerTag": "t",
                                        "workDir": "/w"}, ["kk3n3"], time.monotonic() + 0.05,
                               0.01)
    assert "kk3n3 (draining)" in str(err.value) and "88 (alice, train)" in str(err.value)
    assert "Nothing was removed" in str(err.value)


def test_busy_nodes_reads_sinfo_states_with_their_flags():
    master = Master([("sinfo", "kk3n1 allocated\nkk3n2 drained*\nkk3n3 mixed-\nother idle\n")])
    assert resize.busy_nodes(master, ["kk3n1", "kk3n2", "kk3n3"]) == {
        "kk3n1": "allocated", "kk3n3": "mixed-"}
    assert resize.busy_nodes(master, []) == {}


# --- the HccShrink step -------------------------------------------------------------------------

def _props(ehpc, want, **kw):
    return {"sshHost": "203.0.113.9", "sshPort": 2299, "regionID": "cn-test", "azName": "az1",
            "clusterUUID": ehpc.cluster.uuid, "clusterName": ehpc.cluster.name,
            "computeNodeCount": want, "clusterNodes": [node_view(n) for n in ehpc.nodes],
            "serviceJobNames": ["kimi-k3"], "ownerTag": "kimi-k3/t", "workDir": "/w",
            "pollIntervalS": 0.001, "updateTimeoutS": 30, "lostAnswerWaitS": 1, **kw}


class Runner:
    def __init__(self, fail=None):
        self.fail, self.connected, self.closed = fail, False, False

    def connect(self):
        if self.fail:
            raise self.fail
        self.connected = True
        return self

    def close(self):
        self.closed = True


@pytest.fixture
def step(monkeypatch):
    ehpc = EhpcNodesDouble(NODES)
    runner = Runner()
    monkeypatch.setattr(rt, "ehpc", lambda p: ehpc)
    monkeypatch.setattr(HccShrinkProvider, "runner", lambda self, p: runner)

    def stop(r, p, nodes, deadline, interval):
        ehpc.calls.append("stop " + ",".join(nodes))
        return ["71"]
    monkeypatch.setattr(shrink_step, "stop_for_shrink", stop)
    return ehpc, runner


def test_the_step_stops_the_service_before_the_shrink_and_hands_on_the_nodes_left(step):
    ehpc, runner = step
    out = HccShrinkProvider().update("cl:shrink", {}, _props(ehpc, 2)).outs
    assert [c for c in ehpc.calls if " " in c] == ["stop kk3n3", "shrink_cluster kk3n3"]
    assert [n["name"] for n in out["nodes"]] == ["kk3n0", "kk3n1", "kk3n2"]
    assert out["removed"] == ["kk3n3"] and out["stoppedJobs"] == ["71"]
    assert runner.connected and runner.closed


def test_the_step_with_nothing_to_remove_calls_nothing(step, monkeypatch):
    ehpc, runner = step
    monkeypatch.setattr(rt, "ehpc", lambda p: pytest.fail("E-HPC called"))
    props = _props(ehpc, 3)
    out = HccShrinkProvider().create(props).outs  # a grow's or an unchanged count
    assert out["nodes"] == props["clusterNodes"] and out["removed"] == []
    assert not runner.connected and ehpc.calls == []


def test_an_unreachable_master_stops_the_step_naming_host_and_port_and_removes_nothing(
        monkeypatch):
    ehpc = EhpcNodesDouble(NODES)
    monkeypatch.setattr(rt, "ehpc", lambda p: ehpc)
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nobody listens: refused at once (the real SshRunner, no service needed)
    with pytest.raises(MasterUnreachable) as err:
        HccShrinkProvider().update("cl:shrink", {}, _props(
            ehpc, 2, sshHost="127.0.0.1", sshPort=port, connectTimeoutS=2))
    msg = str(err.value)
    assert f"127.0.0.1:{port}" in msg and "kk3n3" in msg and "no node was removed" in msg
    assert "ConnectionRefusedError" in msg
    assert not [c for c in ehpc.calls if c.startswith("shrink_cluster")] and len(ehpc.nodes) == 4


def test_a_stop_that_fails_on_the_master_removes_nothing_and_says_where(step, monkeypatch):
    ehpc, _ = step

    def failing(r, p, nodes, deadline, interval):
        raise CommandFailed("scancel 71", 1, "", "scancel: error: Access/permission denied")
    monkeypatch.setattr(shrink_step, "stop_for_shrink", failing)
    with pytest.raises(ops.ClusterProblem) as err:
        HccShrinkProvider().update("cl:shrink", {}, _props(ehpc, 2))
    assert "203.0.113.9:2299" in str(err.value) and "no node was removed" in str(err.value)
    assert "permission denied" in str(err.value)
    assert not [c for c in ehpc.calls if c.startswith("shrink_cluster")]


def test_the_step_holds_nothing_to_delete(step):
    ehpc, runner = step
    HccShrinkProvider().delete("cl:shrink", _props(ehpc, 2))
    assert ehpc.calls == [] and not runner.connected
