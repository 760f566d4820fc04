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


def test_the_local_raid_choices_reach_the_server_order():
    got = dict(parse(localSystemVolumeRaidUuid="raid-sys-1", localDataVolumeRaidUuid="raid-data-2").server_fields)
    assert (got["localSystemVolumeRaidUuid"], got["localDataVolumeRaidUuid"]) == ("raid-sys-1", "raid-data-2")
    assert dict(parse().server_fields)["localSystemVolumeRaidUuid"] == ""


def test_the_vpc_and_subnet_ranges_are_read_as_given():
    c = parse(vpcId="create", subnetId="create", vpcCidr="10.20.0.0/16", subnetCidr="10.20.3.0/24")
    assert (c.vpc_cidr, c.subnet_cidr) == ("10.20.0.0/16", "10.20.3.0/24")
