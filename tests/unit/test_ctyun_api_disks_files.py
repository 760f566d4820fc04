"""Bare-metal disks (CTyun contract 7) and file systems (CTyun contract 8): requests and strict
answers, over the scripted network double."""

import pytest

from components.ctyun_hcc.api import ebm as b
from components.ctyun_hcc.api import storage as fs
from components.ctyun_hcc.api.errors import ApiError, ResponseError
from tests.contracts.ctyun import EXAMPLES_BY_ID
from tests.unit.ctyun_api_double import ok, refused, transport

REGION, AZ = "bb9fdb42056f11eda1610242ac110002", "cn-huadong1-jsnj1A-public-ctcloud"


def device(name="physical.t2.large.1", system=2, data=0, nvme=2):
    return {"deviceType": name, "systemVolumeAmount": system, "dataVolumeAmount": data,
            "nvmeVolumeAmount": nvme, "nvmeVolumeSize": 3200, "cloudBoot": False,
            "project": "standard", "systemVolumeDescription": "2*480GB(SSD)"}


def test_raid_types_are_asked_per_device_and_volume_type_and_read_strictly():
    doc = EXAMPLES_BY_ID["raid-type-list"].doc()["returnObj"]
    t, net, _ = transport([ok(doc), ok({**doc, "totalCount": 3}), ok({"results": []})])
    api = b.Ebm(t, REGION)
    raids = api.raid_types(AZ, "physical.t2.large.1", "system")
    assert [r.label() for r in raids] == ["RAID0 (r-sfykwibcvcyztuez3mk1klyha9nn, 2*480 SSD)",
                                          "RAID1 (r-wtzluqacgzzxgunnabdkpnpjew3d, 2*960G SSD)"]
    assert net.sent(0)[1:3] == ("/v4/ebm/raid-type-list", {
        "regionID": REGION, "azName": AZ, "deviceType": "physical.t2.large.1",
        "volumeType": "system"})
    with pytest.raises(ResponseError, match="totalCount"):   # no paging: a short list is wrong
        api.raid_types(AZ, "physical.t2.large.1", "system")
    with pytest.raises(ResponseError, match="totalCount is missing"):
        api.raid_types(AZ, "physical.t2.large.1", "data")
    with pytest.raises(ValueError):
        api.raid_types(AZ, "x", "nvme")


def test_the_raid_answer_of_another_volume_type_is_not_taken():
    doc = EXAMPLES_BY_ID["raid-type-list"].doc()["returnObj"]   # two SYSTEM rows
    t, _, _ = transport([ok(doc)])
    assert b.Ebm(t, REGION).raid_types(AZ, "physical.t2.large.1", "data") == []


def test_device_types_count_system_data_and_nvme_disks_apart():
    t, net, _ = transport([ok({"totalCount": 2, "results": [device(), device("other", 0, 2, 0)]}),
                           ok({"totalCount": 1, "results": [{"deviceType": "x"}]})])
    api = b.Ebm(t, REGION)
    [d] = api.device_types(AZ, "physical.t2.large.1")
    assert (d.needs_raid("system"), d.needs_raid("data")) == (True, False)
    assert d.disks() == "2 system, 2 NVMe"
    assert net.sent(0)[2]["deviceType"] == "physical.t2.large.1"
    with pytest.raises(ResponseError, match="systemVolumeAmount is missing"):
        api.device_types(AZ)


def _fs_row(uid, name, status="available"):
    return {"sfsUID": uid, "sfsName": name, "sfsStatus": status}


def test_file_system_info_and_a_refusal_as_it_is():
    t, net, _ = transport([ok(_fs_row("fs-1", "k3-fs")),
                           refused("Sfs.Whatever.Code", key="errorCode"),
                           ok(_fs_row("fs-1", "k3-fs", "released"))])
    api = fs.FileSystems(t, REGION, "sfs")
    assert api.info("fs-1").label() == "sfs file system k3-fs (fs-1, available)"
    assert net.sent(0)[1:3] == ("/v4/sfs/info-sfs", {"sfsUID": "fs-1", "regionID": REGION})
    with pytest.raises(ApiError, match="Sfs.Whatever.Code"):
        api.info("fs-1")   # the not-found code is undocumented: never read as "gone" here
    with pytest.raises(ResponseError, match="sfsStatus"):
        api.info("fs-1")


def test_file_system_listing_is_read_to_its_count_and_matched_exactly():
    page1 = {"list": [_fs_row(f"fs-{i}", f"fs{i}") for i in range(50)], "totalCount": 51,
             "total": 51}
    page2 = {"list": [_fs_row("fs-x", "k3-fs")], "totalCount": 51, "total": 51}
    t, net, _ = transport([ok(page1), ok(page2)])
    [found] = fs.FileSystems(t, REGION, "oceanfs").find("k3-fs")
    assert found.uid == "fs-x" and found.kind == "oceanfs"
    assert [net.sent(i)[2]["pageNo"] for i in range(2)] == ["1", "2"]
    assert net.sent(1)[1] == "/v4/oceanfs/list-sfs"


def test_a_listing_that_stops_short_is_an_error_never_a_shorter_list():
    t, _, _ = transport([ok({"list": [_fs_row("fs-1", "a")], "total": 3}),
                         ok({"list": [], "total": 3})])
    with pytest.raises(ResponseError, match="ended at page 2"):
        fs.FileSystems(t, REGION, "sfs").list_all()


def test_a_listing_whose_count_changes_is_read_again():
    t, net, _ = transport([ok({"list": [_fs_row("fs-1", "a")] * 50, "total": 60}),
                           ok({"list": [_fs_row("fs-2", "b")], "total": 51}),
                           ok({"list": [_fs_row("fs-3", "c")], "total": 1})])
    assert [f.uid for f in fs.FileSystems(t, REGION, "sfs").list_all()] == ["fs-3"]
    assert len(net.requests) == 3
