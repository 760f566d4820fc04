"""`ctyun:*` config parsing: documented rules, stack-unique names, separate exposure lists."""

import pytest
from hypothesis import given, strategies as st

from components.ctyun_hcc import config as cfg
from components.ctyun_hcc.api import rules
from components.ctyun_hcc.ownership import default_cluster_name, names_for
from components.inference.errors import ConfigError
from components.config.shared import parse_settings

BASE = {"regionId": "bb9fdb42056f11eda1610242ac110002",
        "azName": "cn-huadong1-jsnj1A-public-ctcloud", "vpcId": "vpc-1", "subnetId": "subnet-1"}


def shared(nodes=4, stack="ctyun-hcc", **keys):
    return parse_settings({"target": "ctyun-hcc", "nodes": str(nodes), **keys}, stack)


def parse(nodes=4, **extra):
    return cfg.parse_hcc_config({**BASE, **extra}, shared(nodes))


def test_seed_defaults():
    c = parse()
    assert c.compute_node_count == 3 and c.master_in_compute and c.serving_nodes == 4
    assert c.queue_name == "batch" and c.storage_type == "sfs" and c.storage_size_gb == 500
    assert c.cluster_type == "" and c.security_group == "create" and c.sfs_type == "performance"
    assert c.cluster_name == default_cluster_name("organization", "kimi-k3", "ctyun-hcc")
    assert c.storage_name == f"{c.cluster_name}-fs"
    assert (c.create_timeout_s, c.delete_timeout_s, c.poll_interval_s) == (7200, 3600, 30)
    assert c.eip_bandwidth_mbps == 100 and c.on_demand and c.specification == ""
    assert c.order_count == 3


def test_default_names_are_unique_to_organization_project_and_stack():
    a = cfg.parse_hcc_config({}, shared(), organization="alice").cluster_name
    b = cfg.parse_hcc_config({}, shared(), organization="bob").cluster_name
    c = cfg.parse_hcc_config({}, shared(stack="dev"), organization="alice").cluster_name
    d = cfg.parse_hcc_config({}, shared(), organization="alice", project="other").cluster_name
    assert len({a, b, c, d}) == 4 and all(n.startswith("k3-") for n in (a, b, c, d))


@given(st.text(min_size=0, max_size=60), st.text(max_size=20), st.text(max_size=20))
def test_default_names_always_fit_the_documented_rules(stack, org, project):
    name = default_cluster_name(org, project, stack)
    assert rules.cluster_name_problem(name) is None
    n = names_for(name)
    for derived in (n.vpc, n.subnet, n.security_group):
        assert rules.vpc_name_problem(derived) is None
    assert rules.fs_name_problem(n.storage) is None


def test_master_out_of_queue_orders_all_nodes_as_compute():
    c = parse(masterInCompute="false")
    assert c.compute_node_count == 4 and c.serving_nodes == 4


def test_more_than_49_compute_nodes_order_49_then_expand():
    c = parse(nodes=64)
    assert c.compute_node_count == 63 and c.order_count == 49


def test_values_are_parsed():
    c = parse(nodes=8, clusterName="kimi-a3", storageType="oceanfs", storageSizeGb="2048",
              securityGroup="sg-abc", createTimeoutS="600", endpoint="http://127.0.0.1:8080",
              specification="physical.lcas910c.2xlarge1", queueName="infer", onDemand="false",
              cycleType="MONTH", cycleCount="3", publicIp="false",
              localDataRaid="RAID0", adoptClusterUuid="cl-abc")
    assert (c.cluster_name, c.storage_type, c.storage_size_gb, c.security_group) == \
        ("kimi-a3", "oceanfs", 2048, "sg-abc")
    assert c.compute_node_count == 7 and c.create_timeout_s == 600
    assert c.endpoint == "http://127.0.0.1:8080" and c.queue_name == "infer"
    assert (c.on_demand, c.cycle_type, c.cycle_count, c.eip_bandwidth_mbps) == (
        False, "MONTH", 3, 0)
    assert dict(c.server_fields)["localDataRaid"] == "RAID0"
    assert c.adopt_cluster_uuid == "cl-abc" and c.names.vpc == "kimi-a3-vpc"


def test_location_may_be_missing_for_the_offline_plan():
    c = cfg.parse_hcc_config({}, shared())
    assert c.region_id is None and c.az_name is None and c.compute_node_count == 3


@pytest.mark.parametrize("key,value,needle", [
    ("clusterName", "1abc", "start with a letter"),
    ("clusterName", "a", "2-20 characters"),
    ("clusterName", "k3_under", "letters, digits and '-'"),
    ("clusterName", "x" * 21, "2-20 characters"),
    ("clusterName", "k3-", "end with '-'"),
    ("clusterName", "k3--a", "'--'"),
    ("storageType", "nas", "sfs, oceanfs"),
    ("storageSizeGb", "100", "500 to 1048576"),
    ("storageSizeGb", "big", "not an integer"),
    ("storageName", "9fs", "start with a letter"),
    ("sfsType", "fast", "capacity, performance"),
    ("masterInCompute", "maybe", "true or false"),
    ("createTimeoutS", "5", "60 to 86400"),
    ("endpoint", "cthpc.example", "not an http(s) URL"),
    ("queueName", "bad queue", "letters, digits and '_'"),
    ("queueName", "default", "reserved"),
    ("queueName", "q" * 16, "1-15"),
    ("vpcId", "default", "is not a CTyun id"),
    ("subnetId", "sub1", "is not a CTyun id"),
    ("securityGroup", "mygroup", "security group id"),
    ("subnetCidr", "10.0.0.0/33", "is not a CIDR"),
    ("eipBandwidthMbps", "301", "1 to 300"),
    ("systemDiskType", "NVME", "SATA, SAS, SSD"),
    ("cloudSystemDiskType", "SSD", "comes without its pair"),
    ("adoptClusterUuid", "my-cluster", "cl-"),
    ("regionid", "x", "is not a known key"),
])
def test_bad_values_name_key_value_and_fix(key, value, needle):
    with pytest.raises(ConfigError) as e:
        parse(**{key: value})
    msg = str(e.value)
    assert msg.startswith(f"ctyun:{key}=") and needle in msg and "\n" not in msg


def test_oceanfs_sizes_and_subscriptions_follow_their_own_limits():
    assert parse(storageType="oceanfs", storageSizeGb="100").storage_size_gb == 100
    with pytest.raises(ConfigError, match="ctyun:cycleType"):
        parse(onDemand="false")
    with pytest.raises(ConfigError, match="ctyun:cycleCount"):
        parse(onDemand="false", cycleType="YEAR")
    with pytest.raises(ConfigError, match="ctyun:cycleCount=4"):
        parse(onDemand="false", cycleType="YEAR", cycleCount="4")


def test_single_node_with_master_in_queue_is_refused():
    with pytest.raises(ConfigError) as e:
        cfg.parse_hcc_config(BASE, parse_settings({"target": "ctyun-hcc", "nodes": "1"}, "s"))
    assert str(e.value).startswith("kimi-k3:nodes=1 ") and "masterInCompute" in str(e.value)


@pytest.mark.parametrize("pw", ["short", "k3-passw0rd!", "K3-Pxabc9!q", "K3-Px#Root9",
                                "K3-tOOr#x9q"])
def test_root_password_is_checked_at_program_time_and_never_echoed(pw):
    with pytest.raises(ConfigError) as e:
        parse(rootPassword=pw)
    # <not shown>, as every secret (it was a look-alike value, '(hidden)', before)
    assert str(e.value).startswith("ctyun:rootPassword=<not shown> ") and pw not in str(e.value)
    parse(rootPassword="K3-Passw0rd!")
    parse(rootPassword=cfg.OFFLINE_SECRET)  # the offline plan cannot decrypt secrets


def test_secret_keys_are_known_and_never_echoed():
    c = parse(rootPassword="Sup3r$ecret", accessKey="AK", secretKey="SK-VALUE")
    assert "Sup3r$ecret" not in repr(c) and "SK-VALUE" not in repr(c)


def test_ssh_and_endpoint_have_separate_cidr_lists():
    s = shared(allowedCidrs="203.0.113.0/24", sshAllowedCidrs='["198.51.100.7/32"]')
    c = cfg.parse_hcc_config(BASE, s)
    assert c.endpoint_cidrs == ("203.0.113.0/24",) and c.ssh_cidrs == ("198.51.100.7/32",)
    assert c.ssh_required
    c = cfg.parse_hcc_config(BASE, shared(sshBastion="ops@bastion.example:22"))
    assert not c.ssh_required and c.ssh_cidrs == ()
    with pytest.raises(ConfigError, match="^kimi-k3:sshAllowedCidrs=.*allowInternet"):
        cfg.parse_hcc_config(BASE, shared(sshAllowedCidrs="0.0.0.0/0"))
    c = cfg.parse_hcc_config(BASE, shared(sshAllowedCidrs="0.0.0.0/0", allowInternet="true"))
    assert c.ssh_cidrs == ("0.0.0.0/0",)
    with pytest.raises(ConfigError, match="^kimi-k3:sshAllowedCidrs='x' is not a CIDR"):
        cfg.parse_hcc_config(BASE, shared(sshAllowedCidrs="x"))


def test_keys_parsed_by_other_modules_can_be_declared():
    raw = {**BASE, "sshPrivateKey": "x"}
    with pytest.raises(ConfigError, match="ctyun:sshPrivateKey"):
        cfg.parse_hcc_config(raw, shared())
    assert cfg.parse_hcc_config(raw, shared(), other_known={"sshPrivateKey"}).vpc_id == "vpc-1"


def test_network_is_created_by_default():
    c = cfg.parse_hcc_config({"regionId": "r", "azName": "a"}, shared())
    assert (c.vpc_id, c.subnet_id, c.vpc_cidr, c.subnet_cidr, c.subnet_type) == (
        "create", "create", "192.168.0.0/16", "192.168.0.0/24", "common")
    with pytest.raises(ConfigError, match="^ctyun:subnetId='subnet-1' cannot belong"):
        cfg.parse_hcc_config({"regionId": "r", "azName": "a", "subnetId": "subnet-1"}, shared())
    with pytest.raises(ConfigError, match="^ctyun:subnetCidr='10.0.0.0/24' is not inside"):
        cfg.parse_hcc_config({"regionId": "r", "azName": "a", "subnetCidr": "10.0.0.0/24"},
                             shared())
    c = cfg.parse_hcc_config({"regionId": "r", "azName": "a", "vpcId": "vpc-9"}, shared())
    assert (c.vpc_id, c.subnet_id) == ("vpc-9", "create")
