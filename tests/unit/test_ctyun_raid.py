"""RAID of the bare-metal orders (components/ctyun_hcc/raid.py; CTyun contract 7, doc 23930):
looked up for a specification with local disks, defaults only where the sources settle them, and
every refusal names the field, the value and the config key. Over the scripted network double."""

import pytest

from components.ctyun_hcc.api.ebm import Ebm
from components.ctyun_hcc.api.ehpc import Ehpc
from components.ctyun_hcc.api.errors import ApiError
from components.ctyun_hcc.catalog import Choice, Resolved, resolve
from components.ctyun_hcc.raid import (RaidChoice, RaidError, RaidLayout, choice_problem,
                                       explain_refusal, layout_for)
from tests.unit.ctyun_api_double import ok, refused, transport

REGION, AZ = "bb9fdb42056f11eda1610242ac110002", "cn-huadong1-jsnj1A-public-ctcloud"
R0 = "r-" + "a" * 28
R1 = "r-" + "b" * 28
D0 = "r-" + "c" * 28


def device(name="a3", system=2, data=0, nvme=2):
    return ok({"totalCount": 1, "results": [{
        "deviceType": name, "systemVolumeAmount": system, "dataVolumeAmount": data,
        "nvmeVolumeAmount": nvme, "nvmeVolumeSize": 3200, "cloudBoot": False,
        "project": "standard"}]})


def raids(volume="SYSTEM", *rows):
    rows = rows or (("RAID0", R0), ("RAID1", R1))
    return ok({"totalCount": len(rows), "results": [
        {"deviceType": "a3", "volumeType": volume, "uuid": u, "nameEn": n, "nameZh": n,
         "volumeDetail": "2*480 SSD", "descriptionEn": "", "descriptionZh": ""} for n, u in rows]})


def run(script, **choice):
    t, net, _ = transport(script)
    return layout_for(Ebm(t, REGION), AZ, "a3", RaidChoice(**choice)), net


def test_default_layout_of_an_a3_whose_nvme_take_no_raid():
    lay, net = run([device(), raids()])
    assert (lay.system_uuid, lay.data_uuid, lay.system_name) == (R1, "", "RAID1")
    assert lay.disks == "2 system, 2 NVMe" and lay.device_type == "a3"
    assert [net.sent(i)[1] for i in range(2)] == ["/v4/ebm/device-type-list",
                                                  "/v4/ebm/raid-type-list"]
    assert net.sent(0)[2]["deviceType"] == "a3" and net.sent(1)[2]["volumeType"] == "system"
    assert "localSystemVolumeRaidUUID=" + R1 + " (RAID1)" in lay.describe()


def test_data_disks_have_no_default_and_stop_the_order_naming_the_field():
    with pytest.raises(RaidError) as e:
        run([device(data=2, nvme=0), raids(), raids("DATA", ("RAID0", D0))])
    text = str(e.value)
    assert "ctyun:localDataRaid unset: localDataVolumeRaidUUID is required" in text
    assert "device type a3 has local data disks (2 system, 2 data" in text
    assert f"RAID0 ({D0}" in text and "/dev/nvme0n1" in text


def test_a_chosen_data_raid_is_taken_by_name_in_any_case_or_by_uuid():
    lay, _ = run([device(data=2, nvme=0), raids(), raids("DATA", ("RAID0", D0))],
                 data="raid0")
    assert (lay.system_uuid, lay.data_uuid, lay.data_name) == (R1, D0, "RAID0")
    lay, _ = run([device(data=2, nvme=0), raids(), raids("DATA", ("RAID0", D0))],
                 system=R0, data=D0)
    assert (lay.system_uuid, lay.data_uuid) == (R0, D0)


@pytest.mark.parametrize("choice, script, message", [
    ({"data": "RAID5"}, [device(data=2), raids(), raids("DATA", ("RAID0", D0))],
     "ctyun:localDataRaid='RAID5': localDataVolumeRaidUUID is required"),
    ({"system": "none"}, [device(), raids()],
     "ctyun:localSystemRaid='none': localSystemVolumeRaidUUID is required"),
    ({"data": "RAID0"}, [device()],   # the A3's NVMe disks take no RAID field
     "ctyun:localDataRaid='RAID0', but device type a3 has no local data disks (2 system, 2 NVMe)"),
    ({}, [device(), raids("SYSTEM", ("RAID0", R0))],
     "ctyun:localSystemRaid unset: localSystemVolumeRaidUUID is required"),
    ({"system": R0, "data": "RAID1"}, [device()],
     "ctyun:localDataRaid='RAID1', but device type a3 has no local data disks"),
])
def test_every_refusal_names_key_field_and_value(choice, script, message):
    with pytest.raises(RaidError, match=message.replace("(", r"\(").replace(")", r"\)")):
        run(script, **choice)


def test_an_unlisted_device_type_stops_naming_the_key_and_value():
    with pytest.raises(RaidError) as e:
        run([ok({"totalCount": 0, "results": []})])
    assert "ctyun:bmsDeviceType (unset: the specification name)='a3' is listed 0 times" in \
        str(e.value) and "open question 15" in str(e.value)
    with pytest.raises(RaidError, match="ctyun:bmsDeviceType='physical.x'"):
        run([ok({"totalCount": 0, "results": []})], device_type="physical.x")
    with pytest.raises(RaidError, match="device-type-list .API 4574. was refused .CTIAM_0005"):
        run([refused("CTIAM_0005", "no permission", key="errorCode")])


def test_uuids_or_none_for_both_kinds_need_no_lookup():
    lay, net = run([], system=R0, data="none")
    assert (lay.system_uuid, lay.data_uuid) == (R0, "") and net.requests == []
    lay, net = run([], system="NONE", data="none")
    assert (lay.system_uuid, lay.data_uuid) == ("", "") and net.requests == []


@pytest.mark.parametrize("value, ok_", [("", True), ("none", True), ("RAID1", True),
                                        ("raid10", True), (R0, True), ("r-short", True),
                                        ("RAID 1", False), ("1RAID", False), ("r-" + "A" * 28, True),
                                        ("$(reboot)", False), ("x" * 33, False)])
def test_the_choice_grammar(value, ok_):
    assert (choice_problem(value) is None) == ok_


def test_refusals_over_raid_or_subnet_are_explained():
    lay = RaidLayout(R1, "", "a3", "2 system, 2 NVMe", "RAID1")
    err = ApiError("hpc/create-cluster", "Hpc.ParamCheck.Invalid",
                   "localDataVolumeRaidUUID must not be blank")
    text = explain_refusal(err, {"compute": lay})
    assert "RAID field" in text and f"localSystemVolumeRaidUUID={R1} (RAID1)" in text
    assert "ctyun:localDataRaid" in text
    err = ApiError("hpc/create-cluster", "Hpc.ParamCheck.Invalid", "子网类型不匹配")
    assert "ctyun:subnetType=cbm" in explain_refusal(err, {}, "common")
    assert explain_refusal(ApiError("x", "Hpc.Quota.Exceeded", "quota"), {}, "common") is None


def test_resolved_keeps_the_layouts_and_reads_old_states():
    base = {k: "x" for k in Resolved.__dataclass_fields__ if not k.endswith("_raid")}
    old = Resolved.from_dict(base)   # a state written before RAID was resolved
    assert old.master_raid == {} and old.raid("compute").system_uuid == ""
    lay = RaidLayout(R1, D0, "a3", "2 system, 2 data", "RAID1", "RAID0")
    new = Resolved.from_dict({**base, "compute_raid": lay.to_dict()})
    assert new.raid("compute") == lay and Resolved.from_dict(new.to_dict()) == new


def test_resolve_asks_for_the_bare_metal_roles_only():
    from tests.unit.test_ctyun_catalog_ownership import images, regions, specs, types
    t, net, _ = transport([regions(), types(), specs([("a3", "BMS")], [("m1", "VM")]),
                           images(master=()), images(master=(("CTyunOS", "VM"),), compute=()),
                           device(), raids()])
    r = resolve(Ehpc(t, REGION), AZ, Choice(master_specification="m1"), raid=RaidChoice())
    assert r.master_raid == {} and r.raid("compute").system_uuid == R1
    assert len(net.requests) == 7
