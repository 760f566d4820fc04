"""A cluster's EIP and file system (components/ctyun_hcc/billables.py): found while it exists,
proven released after it is deleted; a refusal is never read as "released" (CTyun contract
6.19). Over the scripted network double."""

from datetime import datetime, timezone

from components.ctyun_hcc import billables as b
from components.ctyun_hcc.cluster_ops import window_left_s
from tests.unit.ctyun_api_double import ok, refused, transport

REGION = "bb9fdb42056f11eda1610242ac110002"
FS_ID = "73725123-0de1-5424-8115-7da2a24f3dfb"


def eip(status="ACTIVE", eid="eip-1", address="203.0.113.9"):
    return {"ID": eid, "eipAddress": address, "status": status}


def eips(*rows):
    return ok({"eips": list(rows), "totalCount": len(rows), "currentCount": len(rows),
               "totalPage": 1})


def fs(status="available", uid=FS_ID, name="k3-fs"):
    return {"sfsUID": uid, "sfsName": name, "sfsStatus": status}


def fs_list(*rows):
    return ok({"list": list(rows), "total": len(rows), "totalCount": len(rows)})


ORDERED = b.Ordered(eip=True, fs_name="k3-fs", fs_kind="sfs")
HELD = b.Billables("eip-1", "203.0.113.9", FS_ID, "k3-fs", "sfs")


def test_found_by_address_and_name_while_the_cluster_exists():
    t, net, _ = transport([eips(eip(), eip(eid="eip-2", address="203.0.113.90")),
                           fs_list(fs(), fs(uid="x", name="k3-fs-old"))])
    got = b.find(t, REGION, "203.0.113.9", ORDERED)
    assert got == HELD
    assert [net.sent(i)[1] for i in range(2)] == ["/v4/eip/new-list", "/v4/sfs/list-sfs"]
    assert b.Billables.from_dict(got.to_dict()) == got


def test_nothing_is_asked_for_what_the_order_did_not_buy():
    t, net, _ = transport([])
    got = b.find(t, REGION, None, b.Ordered(eip=False, fs_name="theirs", fs_kind=""))
    assert got == b.Billables() and net.requests == []
    assert b.leftovers(t, REGION, got) == ([], False) and net.requests == []


def test_released_as_the_sources_say():
    t, _, _ = transport([refused("Openapi.Eip.NotFound", key="errorCode"),
                         refused("Sfs.Any.Code", key="errorCode"), fs_list()])
    assert b.leftovers(t, REGION, HELD) == ([], False)
    t, _, _ = transport([ok(eip("DELETED")), refused("X", key="errorCode"),
                         fs_list(fs(uid="other"))])
    assert b.leftovers(t, REGION, HELD) == ([], False)


def test_what_is_held_is_named_and_a_refusal_is_not_taken_for_released():
    t, _, _ = transport([ok(eip("DOWN")), refused("Sfs.Whatever", "boom", key="errorCode"),
                         fs_list(fs())])
    held, going = b.leftovers(t, REGION, HELD)
    assert held == ["EIP 203.0.113.9 (eip-1, DOWN)",
                    f"sfs file system k3-fs ({FS_ID}, available) (info-sfs refused it: "
                    "Sfs.Whatever: boom)"]
    assert going is False
    t, _, _ = transport([ok(eip("DELETING")), ok(fs("deleting"))])
    held, going = b.leftovers(t, REGION, HELD)
    assert len(held) == 2 and going is True


def test_without_ids_they_are_looked_for_by_address_and_name():
    t, net, _ = transport([eips(eip("DOWN")), fs_list(fs())])
    held, _ = b.leftovers(t, REGION, b.Billables("", "203.0.113.9", "", "k3-fs", "oceanfs"))
    assert len(held) == 2 and net.sent(1)[1] == "/v4/oceanfs/list-sfs"


def test_the_lost_answer_window_runs_from_the_order():
    now = datetime(2026, 12, 1, 12, 0, 0, tzinfo=timezone.utc)
    assert window_left_s("2026-12-01T11:50:00Z", 900, now) == 300
    assert window_left_s("2026-12-01T11:00:00Z", 900, now) == 0
    assert window_left_s("garbled", 900, now) == 900
