"""Ownership: nothing is adopted, changed or deleted that this stack cannot prove it created.

Another stack's resources are planted with the emulator's `seed_foreign` (owned by
"foreign:<who>"); `report()["foreignTouched"]` lists every call that changed or used one of
them (reads do not count) and must stay empty. Interrupted and lost-answer creates resume by
what the stack recorded or can prove, never by a name match, and never order twice.
"""

import time

import pytest

from components.ctyun_hcc import cluster as wiring
from components.ctyun_hcc import provider_runtime as rt
from components.ctyun_hcc.api.ehpc import Ehpc
from components.ctyun_hcc.api.transport import RetryPolicy
from components.ctyun_hcc.cluster_ops import ClusterProblem, LostOrder
from components.ctyun_hcc.cluster_order import HccClusterOrderProvider, NotOurs
from components.ctyun_hcc.network_provider import NotOurs as NetworkNotOurs
from components.ctyun_hcc.sg_provider import GroupProblem
from tests.emulators.ctyun.state import REGION, SUBNET, VPC
from tests.integration.ctyun_stack import PASSWORD, Stack, clean

SHARED = {"vpcId": VPC, "subnetId": SUBNET}


def creates(emu):
    return [o for o in emu.report()["orders"] if o["api"] == "hpc/create-cluster"]


def test_two_people_with_the_same_stack_never_share_resources(emu):
    """Same organization, project and stack (local backends): same names, different tokens."""
    a, b = Stack(), Stack()
    assert a.config()[0].names == b.config()[0].names
    a.up()
    with pytest.raises(NetworkNotOurs, match="exists .* and is not this stack's"):
        b.up()
    b.destroy()
    assert len(creates(emu)) == 1
    inv = emu.inventory()
    assert (len(inv["clusters"]), len(inv["vpcs"]), len(inv["securityGroups"])) == (1, 1, 1)
    a.destroy()
    assert clean(emu)["leakedTotal"] == 0


def test_another_stacks_vpc_under_our_name_is_refused_before_ordering(emu):
    s = Stack()
    names = s.config()[0].names
    emu.seed_foreign(owner="other", vpc_name=names.vpc)
    with pytest.raises(NetworkNotOurs, match=f"VPC {names.vpc} exists"):
        s.up()
    s.destroy()
    assert creates(emu) == [] and clean(emu)["leakedTotal"] == 0


def test_another_stacks_group_under_our_name_is_neither_adopted_nor_changed(emu):
    s = Stack(ctyun=SHARED)
    names = s.config()[0].names
    theirs = emu.seed_foreign(owner="other", vpc_id=VPC, sg_name=names.security_group)
    before = rt.vpc({"regionID": REGION}).describe_security_group(theirs["securityGroupID"])
    with pytest.raises(GroupProblem, match="is not this stack's.*ctyun:securityGroup"):
        s.up()
    after = rt.vpc({"regionID": REGION}).describe_security_group(theirs["securityGroupID"])
    assert after == before and creates(emu) == []
    s.destroy()
    assert clean(emu)["leakedTotal"] == 0


def test_another_stacks_cluster_under_our_name_is_refused_with_the_adoption_hint(emu):
    s = Stack(ctyun=SHARED)
    name = s.config()[0].names.cluster
    theirs = emu.seed_foreign(owner="other", vpc_id=VPC, cluster_name=name, compute_nodes=2)
    with pytest.raises(NotOurs) as e:
        s.up()
    assert f"cluster {name} exists ({theirs['clusterUUID']}) and is not this stack's" in \
        str(e.value) and "ctyun:adoptClusterUuid" in str(e.value)
    assert creates(emu) == []
    s.destroy()
    report = clean(emu)
    assert report["leakedTotal"] == 0
    assert any(c["id"] == theirs["clusterUUID"] for c in report["held"]["clusters"])


def test_a_same_named_cluster_made_later_is_never_torn_down(emu):
    s = Stack(ctyun=SHARED)
    out = s.up()
    theirs = emu.seed_foreign(owner="other", vpc_id=VPC, cluster_name=out["clusterName"],
                              compute_nodes=1)
    s.destroy()
    report = clean(emu)
    assert report["leakedTotal"] == 0
    held = {c["id"] for c in report["held"]["clusters"]}
    assert theirs["clusterUUID"] in held and out["clusterUUID"] not in held


def test_an_order_without_a_recorded_uuid_deletes_only_what_it_can_prove(emu):
    """The order's delete looks by name only inside the VPC it ordered in."""
    s = Stack(ctyun=SHARED)
    cfg, shared = s.config()
    name = cfg.names.cluster
    theirs = emu.seed_foreign(owner="other", vpc_name="other-vpc", cluster_name=name)
    props = {**wiring.order_inputs(cfg, VPC, SUBNET, "k3-sg", PASSWORD, ""),
             "clusterUUID": "", "jobUUID": "job-x", "orderedAt": "t", "origin": "ordered",
             "pollIntervalS": 0.05, "deleteTimeoutS": 30}
    HccClusterOrderProvider().delete(f"{REGION}/{name}", props)
    assert clean(emu)["foreignTouched"] == []
    assert any(c["id"] == theirs["clusterUUID"]
               for c in emu.report()["held"]["clusters"])


def _order_then_lose_the_state(s: Stack) -> str:
    """`pulumi up` ordered, then died before the engine wrote the order into the state."""
    s.up()
    s.state.pop("order")
    cluster_id, _ = s.state.pop("cluster")
    return cluster_id


def test_an_order_lost_from_state_is_resumed_in_the_stacks_own_vpc(emu):
    s = Stack()
    s.up()
    s.state.pop("cluster")
    s.state.pop("order")
    assert s.up()["clusterStatus"] == "available"
    assert s.outs("order")["origin"] == "resumed-own-vpc" and len(creates(emu)) == 1
    s.destroy()
    assert clean(emu)["leakedTotal"] == 0


def test_an_order_lost_from_state_in_a_shared_vpc_needs_explicit_adoption(emu):
    s = Stack(ctyun=SHARED)
    uuid = _order_then_lose_the_state(s)
    with pytest.raises(NotOurs, match=f"adoptClusterUuid {uuid}"):
        s.up()
    out = s.up(ctyun={"adoptClusterUuid": uuid})
    assert out["clusterUUID"] == uuid and s.outs("order")["origin"] == "adopted"
    assert len(creates(emu)) == 1
    third = Stack(stack="third", ctyun={**SHARED, "adoptClusterUuid": uuid})
    with pytest.raises(NotOurs, match="no cluster named"):
        third.up()  # the key adopts only a cluster of this stack's name
    third.destroy()
    s.destroy()
    assert clean(emu)["leakedTotal"] == 0


def test_the_create_answer_is_lost_and_the_new_cluster_is_proven_by_listing(emu):
    emu.faults({"path": "/v4/cthpc/hpc/create-cluster", "kind": "lost_response"})
    s = Stack()
    out = s.up()
    assert s.outs("order")["origin"] == "ordered-answer-lost" and s.outs("order")["jobUUID"] == ""
    assert out["clusterStatus"] == "available" and len(creates(emu)) == 1
    s.destroy()
    assert clean(emu)["leakedTotal"] == 0


def test_a_lost_answer_whose_cluster_is_listed_only_after_its_job_is_never_ordered_twice(emu):
    """CTyun contract 6.4: a cluster may be listed only once its create job ends (bare metal takes
    long). The lost order is recorded; every later `pulumi up` looks for it, none re-orders."""
    emu.settings(list_during_create=False, job_seconds=1.0)
    emu.faults({"path": "/v4/cthpc/hpc/create-cluster", "kind": "lost_response"})
    s = Stack(fast={"createTimeoutS": 0.3})
    with pytest.raises(ClusterProblem) as e:
        s.up()
    msg = str(e.value)
    assert "not sent again" in msg and "adoptClusterUuid" in msg and "pulumi state delete" in msg
    assert "orders again" not in msg
    order = s.outs("order")
    assert order["origin"] == "answer-lost-unconfirmed" and order["clusterUUID"] == ""
    assert order["jobUUID"] == "" and order["orderedAt"] and order["vpcID"]
    with pytest.raises(ClusterProblem, match="not sent again"):
        s.up()  # still not listed: waits again, orders nothing
    s.fast["createTimeoutS"] = 60
    assert s.up()["clusterStatus"] == "available"
    assert len(creates(emu)) == 1
    s.destroy()
    assert clean(emu)["leakedTotal"] == 0


def test_an_unconfirmed_order_is_adopted_by_uuid_only_for_its_name_and_vpc(emu):
    emu.settings(list_during_create=False, job_seconds=1.0)
    emu.faults({"path": "/v4/cthpc/hpc/create-cluster", "kind": "lost_response"})
    s = Stack(ctyun=SHARED, fast={"createTimeoutS": 0.3})
    with pytest.raises(ClusterProblem):
        s.up()
    theirs = emu.seed_foreign(owner="other", vpc_id=VPC, cluster_name="k3-someone-else")
    with pytest.raises(NotOurs, match="is k3-someone-else"):
        s.up(ctyun={"adoptClusterUuid": theirs["clusterUUID"]})
    mine = [c["id"] for c in emu.inventory()["clusters"]]
    assert len(mine) == 1
    ehpc = rt.ehpc({"regionID": REGION})
    for _ in range(100):  # the console shows it; the API lists it once its job ended
        if ehpc.get_cluster(mine[0]) is not None:
            break
        time.sleep(0.05)
    s.fast["createTimeoutS"] = 60
    out = s.up(ctyun={"adoptClusterUuid": mine[0]})
    assert out["clusterUUID"] == mine[0] and s.outs("order")["origin"] == "adopted"
    assert len(creates(emu)) == 1
    s.destroy()
    assert clean(emu)["leakedTotal"] == 0


def test_a_lost_answer_whose_cluster_never_appears_is_reordered_only_deliberately(emu):
    emu.faults({"path": "/v4/cthpc/hpc/create-cluster", "kind": "drop"})  # never ran
    # the order's window (its timeoutS, recorded in its state at create: what its delete reads)
    # is half a second here, so the destroy below gives up after that rather than FAST's 60 s
    s = Stack(fast={"createTimeoutS": 0.3, "timeoutS": 0.5})
    for _ in range(2):
        with pytest.raises(ClusterProblem,
                           match="not sent again.*adoptClusterUuid.*pulumi state delete"):
            s.up()
    assert creates(emu) == [] and s.outs("order")["origin"] == "answer-lost-unconfirmed"
    assert s.outs("order")["timeoutS"] == 0.5
    # a replace (or a destroy) of the order would delete it: its delete looks for the cluster
    # for the rest of its window and then fails naming it, never dropping the record
    with pytest.raises(LostOrder, match="Its record is kept, not dropped.*pulumi state delete"):
        s.destroy()
    assert "order" in s.state and creates(emu) == []
    s.fast["createTimeoutS"] = s.fast["timeoutS"] = 60
    # the user checked the console, found nothing, and removed the record on purpose
    s.state_delete("order")
    assert s.up()["clusterStatus"] == "available"
    assert len(creates(emu)) == 1
    s.destroy()
    assert clean(emu)["leakedTotal"] == 0


def test_a_destroy_right_after_a_lost_answer_waits_for_the_cluster_and_deletes_it(emu):
    """Issue 19 item 8: a destroy that runs after a lost create answer, before E-HPC lists the
    new cluster, used to drop the order's record; the cluster then appeared, billed and
    unknown to the stack. The destroy now keeps looking for it inside the order's window."""
    emu.settings(list_during_create=False, job_seconds=1.0)
    emu.faults({"path": "/v4/cthpc/hpc/create-cluster", "kind": "lost_response"})
    s = Stack(fast={"createTimeoutS": 0.3, "timeoutS": 30})
    with pytest.raises(ClusterProblem):
        s.up()                      # the cluster is not listed yet: nothing but the order
    assert "cluster" not in s.state and emu.inventory()["clusters"]
    s.destroy()                     # looks for it until it is listed, then deletes it
    assert s.state == {} and clean(emu)["leakedTotal"] == 0


def test_the_cluster_of_a_lost_answer_is_deleted_by_its_order_without_waiting(emu):
    """The cluster found for an order that lost its answer is left by HccCluster's delete to
    the order's, which finds it listed at once (never waits its window for a deleted one)."""
    emu.settings(list_during_create=False)
    emu.faults({"path": "/v4/cthpc/hpc/create-cluster", "kind": "lost_response"})
    s = Stack(fast={"timeoutS": 3600})
    assert s.up()["clusterStatus"] == "available"
    assert s.outs("order")["origin"] == "answer-lost-unconfirmed"
    started = time.monotonic()
    s.destroy()
    assert time.monotonic() - started < 30 and s.state == {}
    assert clean(emu)["leakedTotal"] == 0


def test_our_own_vpc_never_makes_a_same_named_cluster_elsewhere_ours(emu):
    """The default stack creates its VPC: a same-named cluster of another stack in another VPC
    is not resumed as ours (only one inside our VPC could be)."""
    s = Stack()
    name = s.config()[0].names.cluster
    theirs = emu.seed_foreign(owner="other", cluster_name=name, vpc_name="other")
    with pytest.raises(NotOurs, match="is not this stack's"):
        s.up()
    assert creates(emu) == [] and "order" not in s.state
    s.destroy()
    report = clean(emu)
    assert report["foreignTouched"] == [] and report["leakedTotal"] == 0
    assert any(c["id"] == theirs["clusterUUID"] for c in report["held"]["clusters"])


def test_an_accepted_order_reaches_the_state_when_the_listing_after_it_fails(emu, monkeypatch):
    """The listing right after an accepted create fails for good: the order (job id) is kept,
    the cluster is found later by name in the VPC."""
    real = Ehpc.create_cluster

    def then_break_the_listing(self, request, deadline=None):
        accepted = real(self, request, deadline)
        emu.faults({"path": "/v4/cthpc/hpc/list-clusters", "kind": "http502",
                    "times": RetryPolicy().max_attempts})  # every retry of that listing
        return accepted
    monkeypatch.setattr(Ehpc, "create_cluster", then_break_the_listing)
    monkeypatch.setattr(RetryPolicy, "delay", lambda self, attempt, rng: 0.0)
    s = Stack()
    out = s.up()
    order = s.outs("order")
    assert order["origin"] == "ordered" and order["jobUUID"] and order["clusterUUID"] == ""
    assert out["clusterStatus"] == "available" and len(creates(emu)) == 1
    s.destroy()
    assert clean(emu)["leakedTotal"] == 0
