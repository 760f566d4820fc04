"""The master unreachable on `pulumi up` (issue 19, day two): one line naming the host, the port
and what to check, from every SSH step, before anything is sent; the resize stops before any
node is ordered or removed; a refresh keeps what it cannot look at."""

from __future__ import annotations

import logging
import socket

import pytest

from components.ctyun_hcc import reach
from components.ctyun_hcc.reach import MasterUnreachable
from components.ctyun_hcc.ssh import remote_errors
from components.ctyun_hcc.ssh_resource import STATS
from tests.unit.test_ctyun_day2 import _closed_port, _ssh_steps, _unreachable

STEPS = _ssh_steps()


def _inputs(cls, **extra):
    return {**cls().input_defaults(), **_unreachable(jobId="12", nodes=["n1"], jobName="kimi-k3",
                                                     partition="batch", workDir="/home/kimi-k3"),
            **extra}


@pytest.mark.parametrize("cls", STEPS, ids=lambda c: c.__name__)
def test_every_step_says_in_one_line_which_master_it_could_not_reach(cls):
    props = _inputs(cls)
    with pytest.raises(MasterUnreachable) as e:
        cls()._run(lambda runner, p: pytest.fail("ran with no connection"), props)
    text = str(e.value)
    assert "\n" not in text
    assert f"root@127.0.0.1:{props['sshPort']}" in text and "ConnectionRefusedError" in text
    assert "kimi-k3:sshAllowedCidrs" in text and "nothing was changed" in text
    assert cls.__name__.removesuffix("Provider") in text
    assert isinstance(e.value, remote_errors())  # deletes still warn and go on (issue 19 item 4)


def test_the_line_names_the_bastion_it_went_through():
    from components.ctyun_hcc.bootstrap import NvmeMountProvider

    port = _closed_port()
    props = _inputs(NvmeMountProvider, sshHost="192.168.0.5", sshBastion=f"ops@127.0.0.1:{port}",
                    sshBastionPrivateKey="not-read-before-connecting")
    with pytest.raises(MasterUnreachable) as e:
        NvmeMountProvider()._run(lambda runner, p: None, props)
    assert (f"root@192.168.0.5:{props['sshPort']} through the bastion ops@127.0.0.1:{port}"
            in str(e.value))


def test_a_refused_login_keeps_its_own_message(monkeypatch):
    """The master answered: its refusal is not "unreachable" (the hostile side of the guard)."""
    from components.ctyun_hcc.bootstrap import NvmeMountProvider
    from components.ctyun_hcc.ssh import SshError, SshRunner

    def refuse(self):
        raise SshError("SSH login as root@127.0.0.1:22 (master) was refused")
    monkeypatch.setattr(SshRunner, "connect", refuse)
    with pytest.raises(SshError) as e:
        NvmeMountProvider()._run(lambda runner, p: None, _inputs(NvmeMountProvider))
    assert not isinstance(e.value, MasterUnreachable) and "was refused" in str(e.value)


@pytest.mark.parametrize("cls", STEPS, ids=lambda c: c.__name__)
def test_a_refresh_keeps_the_record_of_a_master_it_cannot_reach(cls, caplog):
    props = _inputs(cls)
    with caplog.at_level(logging.WARNING):
        r = cls().read("x", props)
    assert r.id == "x" and r.outs == props
    if cls.__name__ != "HccShrinkProvider":  # its read asks nothing of the master
        assert "kept as recorded" in caplog.text and "127.0.0.1" in caplog.text


def _listening():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(16)
    return s


def test_the_probe_passes_an_answering_port_and_names_a_refused_one():
    with _listening() as s:
        port = s.getsockname()[1]
        reach.check_master({"host": "", "port": port, "bastion": ""}, "127.0.0.1", "x")
        reach.check_master({"host": "127.0.0.1", "port": port, "bastion": ""}, "", "x")
        reach.check_master({"host": "", "port": 1, "bastion": f"127.0.0.1:{port}"}, "", "x")
    closed = _closed_port()
    with pytest.raises(MasterUnreachable) as e:
        reach.check_master({"host": "", "port": closed, "bastion": ""}, "127.0.0.1",
                           "changing cluster k3 from 3 to 4 compute nodes")
    text = str(e.value)
    assert f"127.0.0.1:{closed} for changing cluster k3 from 3 to 4" in text and "\n" not in text
    with pytest.raises(MasterUnreachable, match="through the bastion"):
        reach.check_master({"host": "", "port": 22, "bastion": f"jump@127.0.0.1:{closed}"},
                           "203.0.113.9", "x")
    reach.check_master({}, "127.0.0.1", "x")  # no bootstrap: nothing to probe
    reach.check_master({"host": "", "port": closed, "bastion": ""}, "", "x")  # no address yet


def test_a_resize_with_the_master_unreachable_calls_nothing(monkeypatch):
    """HccCluster.update probes before its first API call: no client is even built."""
    from components.ctyun_hcc import cluster_provider

    def no_calls(*a, **k):
        raise AssertionError("an API call was made")
    monkeypatch.setattr(cluster_provider, "_ctx", no_calls)
    p = cluster_provider.HccClusterProvider()
    closed = _closed_port()
    olds = {"computeNodeCount": 3, "masterPublicIP": "127.0.0.1", "clusterName": "k3-a"}
    news = {**olds, "computeNodeCount": 4,
            "masterProbe": {"host": "", "port": closed, "bastion": ""}}
    before = STATS["connects"]
    with pytest.raises(MasterUnreachable, match=f"127.0.0.1:{closed} for changing cluster k3-a "
                                                "from 3 to 4 compute nodes"):
        p.update("cl-1", olds, news)
    assert STATS["connects"] == before


# --- a cluster ordered anew: every step is done again on it ----------------------------------

UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"  # the engine's unknown value in a preview


@pytest.mark.parametrize("cls", STEPS, ids=lambda c: c.__name__)
def test_a_step_done_on_another_cluster_is_replaced(cls):
    """A cluster deleted outside Pulumi and ordered anew has empty disks and a new master, while
    a step's inputs but the SSH ones may all be the same (which alone only reconnect): the
    step must be replaced, or the weights, image and service never reach the new cluster."""
    prov = cls()
    olds = _inputs(cls, clusterUUID="cl-old")
    for new in ("cl-new", UNKNOWN):
        d = prov.diff("x", olds, {**olds, "clusterUUID": new})
        assert d.changes and "clusterUUID" in d.replaces, new
        assert d.delete_before_replace == prov.DELETE_BEFORE_REPLACE


@pytest.mark.parametrize("cls", STEPS, ids=lambda c: c.__name__)
def test_the_same_cluster_or_a_state_without_its_uuid_is_no_change(cls):
    prov = cls()
    olds = _inputs(cls, clusterUUID="cl-old")
    assert not prov.diff("x", olds, dict(olds)).replaces
    before = _inputs(cls, clusterUUID="")  # a stack deployed before this input
    d = prov.diff("x", before, {**before, "clusterUUID": "cl-old"})
    assert not d.replaces and not d.changes
