"""ctyun:* keys at edges the first behaviour tests left: an empty value means the default, a CIDR
with host bits is refused (CTyun's VPC API takes a network address: CTyun contract 3, create VPC
`CIDR`), and the local RAID choice reaches the server order (doc 23930 `localSystemVolumeRaidUuid`)."""

import pytest

from components.inference.errors import ConfigError
from tests.unit.test_ctyun_config_behaviour import parse


def test_empty_values_mean_the_defaults():
    d, e = parse(), parse(clusterName="", storageSizeGb="", vpcCidr="", queueName="")
    assert (e.names, e.storage_size_gb, e.vpc_cidr, e.queue_name) == (d.names, d.storage_size_gb, d.vpc_cidr,
                                                                      d.queue_name)


@pytest.mark.parametrize("key,value", [("vpcCidr", "192.168.0.1/16"), ("subnetCidr", "192.168.0.7/24")])
def test_a_cidr_with_host_bits_is_refused(key, value):
    with pytest.raises(ConfigError) as e:
        parse(vpcId="create", subnetId="create", **{key: value})
    assert str(e.value) == (f"ctyun:{key}={value!r} is not a CIDR ({value} has host bits set); "
                            "give a CIDR such as 192.168.0.0/24")


UUID = "r-wtzluqacgzzxgunnabdkpnpjew3d"   # doc 23930's example value (RAID1 in API 4576's example)


def test_the_local_raid_choices_reach_the_server_order():
    got = dict(parse(localSystemRaid="RAID1", localDataRaid=UUID, bmsDeviceType="physical.t2.large.1").server_fields)
    assert (got["localSystemRaid"], got["localDataRaid"], got["bmsDeviceType"]) == ("RAID1", UUID,
                                                                                    "physical.t2.large.1")
    assert dict(parse(localDataRaid="none").server_fields)["localDataRaid"] == "none"
    assert dict(parse().server_fields)["localSystemRaid"] == ""
    # the former keys are read the same way
    got = dict(parse(localSystemVolumeRaidUuid=UUID, localDataVolumeRaidUuid="none").server_fields)
    assert (got["localSystemRaid"], got["localDataRaid"]) == (UUID, "none")


@pytest.mark.parametrize("kw, message", [
    ({"localDataRaid": "RAID 1"}, "ctyun:localDataRaid='RAID 1' is not none, a RAID name as raid-type-list "
     "lists it (RAID1) or its uuid (r-...); give none, a RAID name such as RAID1 or a uuid r-... from "
     "/v4/ebm/raid-type-list (docs/ctyun-hcc.md, 'Local disks')"),
    ({"localSystemRaid": "$(reboot)"}, "ctyun:localSystemRaid='$(reboot)' is not none"),
    ({"localSystemVolumeRaidUuid": "r-x;y"}, "ctyun:localSystemVolumeRaidUuid='r-x;y' is not none"),
    ({"localDataRaid": "RAID1", "localDataVolumeRaidUuid": UUID},
     f"ctyun:localDataVolumeRaidUuid={UUID!r} repeats ctyun:localDataRaid; keep only ctyun:localDataRaid"),
    ({"bmsDeviceType": "physical t2"}, "ctyun:bmsDeviceType='physical t2' is not a bare-metal device type"),
    ({"bmsDeviceType": "../etc"}, "ctyun:bmsDeviceType='../etc' is not a bare-metal device type"),
    ({"subnetType": "cbm", "storageType": "oceanfs"}, "ctyun:subnetType='cbm' cannot serve an OceanFS order"),
    ({"subnetType": "bare-metal"}, "ctyun:subnetType='bare-metal' is not a documented value"),
])
def test_raid_device_type_and_subnet_refusals_name_key_and_value(kw, message):
    with pytest.raises(ConfigError) as e:
        parse(**kw)
    assert str(e.value).startswith(message), str(e.value)


def test_the_subnet_type_defaults_to_common_and_cbm_is_kept_where_it_can_serve():
    assert parse().subnet_type == "common"
    assert parse(subnetType="cbm").subnet_type == "cbm"                       # SFS has no subnet
    assert parse(subnetType="cbm", storageType="oceanfs", storageUid="fs-1").subnet_type == "cbm"


@pytest.mark.parametrize("password, problem", [
    ("Aa1!abcd", "must not contain 3 consecutive characters such as abc or 123"),
    ("Kq7|mX9pW", "uses the ASCII '|'"),
    ("Kq7!mX9pWroot", "must not contain root, toor, ecs-user or resu-sce in any case"),
])
def test_root_password_refusals_follow_ctyuns_text_and_never_echo(password, problem):
    with pytest.raises(ConfigError) as e:
        parse(rootPassword=password)
    assert problem in str(e.value) and password not in str(e.value)


@pytest.mark.parametrize("password", ["Kq7\uff5cmX9pW", "Aa1!aaaa", "Kq7!mX9pWzyx"])
def test_root_passwords_doc_23930_accepts_are_accepted(password):
    # the full-width '｜' is listed; repeats and falling runs are not in rule 4's text
    parse(rootPassword=password)


def test_the_vpc_and_subnet_ranges_are_read_as_given():
    c = parse(vpcId="create", subnetId="create", vpcCidr="10.20.0.0/16", subnetCidr="10.20.3.0/24")
    assert (c.vpc_cidr, c.subnet_cidr) == ("10.20.0.0/16", "10.20.3.0/24")
