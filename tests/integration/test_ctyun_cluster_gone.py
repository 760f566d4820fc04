"""A cluster deleted outside Pulumi (CTyun's console, or released when its subscription's
billing period ended), against the emulator, driven as the engine drives the providers
(tests/integration/ctyun_stack.py): `pulumi up` stops in one line before anything changes,
`pulumi refresh` drops the cluster with its order so the next `up` orders one new cluster (the
old one is not waited for, nothing else is adopted), and `pulumi destroy` removes the rest.

"The console" here is what its delete does through the API the stack itself uses: every
compute node shrunk away, then hpc/delete-cluster (the emulator's delete-cluster, like
CTyun's documented one, releases the master only: docs/ctyun-hcc.md open question 3)."""

from __future__ import annotations

import time

import pytest

from components.ctyun_hcc import provider_runtime as rt
from components.ctyun_hcc.cluster_ops import ClusterGone
from components.ctyun_hcc.cluster_order import HccClusterOrderProvider
from components.ctyun_hcc.cluster_provider import HccClusterProvider
from tests.integration.ctyun_stack import Stack, clean

#: a wait for the old cluster would take the whole createTimeoutS: 30 s here, well past a
#: test that finds the cluster gone at once
FAST = {"createTimeoutS": 30, "deleteTimeoutS": 30}


def orders(emu):
    return [o for o in emu.report()["orders"] if o["api"] == "hpc/create-cluster"]


def delete_in_console(out) -> None:
    ehpc = rt.ehpc(out)
    compute = [n["nodeUUID"] for n in out["nodes"] if n["role"] == "compute"]
    if compute:
        ehpc.shrink_cluster(out["azName"], out["clusterUUID"], compute)
    deadline = time.monotonic() + 20
    while any(n.role != 0 for n in ehpc.list_nodes(out["azName"], out["clusterUUID"])):
        assert time.monotonic() < deadline, "the emulator did not shrink"
        time.sleep(0.05)
    ehpc.delete_cluster(out["clusterUUID"])
    while ehpc.get_cluster(out["clusterUUID"]) is not None:
        assert time.monotonic() < deadline, "the emulator did not delete"
        time.sleep(0.05)


def test_a_plain_up_stops_in_one_line_naming_the_gone_cluster_and_changes_nothing(emu):
    s = Stack(fast=FAST)
    out = s.up()
    delete_in_console(out)
    before = emu.calls()
    with pytest.raises(ClusterGone) as e:
        s.up(kimi={"nodes": "5"})  # a resize would have called expand on nothing
    message = str(e.value)
    assert "\n" not in message
    assert out["clusterUUID"] in message and out["clusterName"] in message
    assert "pulumi refresh" in message and "billing period" in message
    changed = {k for k, n in emu.calls().items() if n != before.get(k, 0)}
    assert all(k.split("/")[-1].startswith(("list", "show", "query", "describe", "info",
                                             "get", "detail")) for k in changed), changed
    assert len(orders(emu)) == 1
    s.refresh()
    s.destroy()
    assert clean(emu)["leakedTotal"] == 0


def test_refresh_drops_the_cluster_and_its_order_and_the_next_up_orders_once(emu):
    s = Stack(fast=FAST)
    out = s.up()
    delete_in_console(out)
    s.refresh()
    assert "cluster" not in s.state and "order" not in s.state
    assert {"owner", "net", "sg"} <= set(s.state)  # the rest is still the stack's
    start = time.monotonic()
    new = s.up()
    assert time.monotonic() - start < FAST["createTimeoutS"]  # the old one was not waited for
    assert new["clusterUUID"] != out["clusterUUID"]
    assert len(orders(emu)) == 2
    s.destroy()
    assert clean(emu)["leakedTotal"] == 0


def test_destroy_after_the_console_deleted_the_cluster_removes_the_rest(emu):
    s = Stack(fast=FAST)
    out = s.up()
    delete_in_console(out)
    s.destroy()
    assert s.state == {}
    report = clean(emu)
    assert report["leakedTotal"] == 0 and len(orders(emu)) == 1


def test_a_kept_order_of_a_gone_cluster_is_not_waited_for(emu):
    """State where the cluster left and its order stayed (a refresh of an older kimi-k3): the
    next `up` says the cluster is gone at once instead of waiting `createTimeoutS`."""
    s = Stack(fast=FAST)
    out = s.up()
    delete_in_console(out)
    s.state.pop("cluster")
    start = time.monotonic()
    with pytest.raises(ClusterGone, match=out["clusterUUID"]):
        s.up()
    assert time.monotonic() - start < FAST["createTimeoutS"]
    assert len(orders(emu)) == 1
    s.refresh()
    assert "order" not in s.state
    s.destroy()
    assert clean(emu)["leakedTotal"] == 0


def test_refresh_keeps_an_order_whose_cluster_is_listed_or_was_never_seen(emu):
    s = Stack(fast=FAST)
    out = s.up()
    order_id, order = s.state["order"]
    p = HccClusterOrderProvider()
    assert p.read(order_id, order).id == order_id
    lost = {**order, "clusterUUID": ""}  # a lost create answer: it may still appear
    delete_in_console(out)
    assert p.read(order_id, lost).id == order_id
    assert p.read(order_id, order).id is None
    s.destroy()
    assert clean(emu)["leakedTotal"] == 0


def test_diff_concludes_nothing_when_it_cannot_ask(emu, monkeypatch):
    s = Stack(fast=FAST)
    out = s.up()
    cluster_id, olds = s.state["cluster"]
    delete_in_console(out)
    monkeypatch.setenv("CTYUN_SK", "not-the-key")  # every call refused
    d = HccClusterProvider().diff(cluster_id, olds, olds)
    assert not d.changes and not d.replaces
    monkeypatch.undo()
    for key, value in emu.env().items():
        monkeypatch.setenv(key, value)
    s.destroy()
    assert clean(emu)["leakedTotal"] == 0
