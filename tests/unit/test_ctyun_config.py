"""`ctyun:*` config parsing and the validators shared with the provider's check."""

import pytest
from hypothesis import given, strategies as st

from components.ctyun_hcc import config as cfg
from components.inference.errors import ConfigError
from components.settings import parse_settings

BASE = {"regionId": "bb9fdb42056f11eda1610242ac110002",
        "azName": "cn-huadong1-jsnj1A-public-ctcloud", "vpcId": "vpc-1", "subnetId": "subnet-1"}


def shared(nodes=4, stack="ctyun-hcc"):
    return parse_settings({"target": "ctyun-hcc", "nodes": str(nodes)}, stack)


def parse(nodes=4, **extra):
    return cfg.parse_hcc_config({**BASE, **extra}, shared(nodes))


def test_seed_defaults():
    c = parse()
    assert c.compute_node_count == 3 and c.master_in_compute and c.serving_nodes == 4
    assert c.queue_name == "batch" and c.storage_type == "sfs" and c.storage_size_gb == 500
    assert c.cluster_type == "大模型精简版" and c.security_group == "create"
    assert c.cluster_name == "k3-ctyun-hcc" and c.storage_name == "k3-ctyun-hcc-fs"
    assert (c.create_timeout_s, c.delete_timeout_s, c.poll_interval_s) == (7200, 3600, 30)
    assert c.public_ip and c.on_demand and c.specification is None


def test_master_out_of_queue_orders_all_nodes_as_compute():
    c = parse(masterInCompute="false")
    assert c.compute_node_count == 4 and c.serving_nodes == 4


def test_values_are_parsed():
    c = parse(nodes=8, clusterName="kimi-a3", storageType="oceanfs", storageSizeGb="2048",
              securityGroup="sg-abc", createTimeoutS="600", endpoint="http://127.0.0.1:8080",
              specification="physical.lcas910c.2xlarge1", queueName="infer")
    assert (c.cluster_name, c.storage_type, c.storage_size_gb, c.security_group) == \
        ("kimi-a3", "oceanfs", 2048, "sg-abc")
    assert c.compute_node_count == 7 and c.create_timeout_s == 600
    assert c.endpoint == "http://127.0.0.1:8080" and c.queue_name == "infer"


def test_location_may_be_missing_for_the_offline_plan():
    c = cfg.parse_hcc_config({}, shared())
    assert c.region_id is None and c.az_name is None and c.compute_node_count == 3


@pytest.mark.parametrize("key,value,needle", [
    ("clusterName", "1abc", "starting with a letter"),
    ("clusterName", "a", "2-20 characters"),
    ("clusterName", "k3_under", "letters, digits and '-'"),
    ("clusterName", "x" * 21, "2-20 characters"),
    ("storageType", "nas", "sfs or oceanfs"),
    ("storageSizeGb", "100", "500 to 32768"),
    ("storageSizeGb", "big", "not an integer"),
    ("masterInCompute", "maybe", "true or false"),
    ("createTimeoutS", "5", "60 to 86400"),
    ("endpoint", "cthpc.example", "not an http(s) URL"),
    ("queueName", "bad queue", "Slurm partition"),
    ("vpcId", "default", "is not a CTyun id"),
    ("subnetId", "sub1", "is not a CTyun id"),
    ("subnetCidr", "10.0.0.0/33", "is not a CIDR"),
    ("regionid", "x", "is not a known key"),
])
def test_bad_values_name_key_value_and_fix(key, value, needle):
    with pytest.raises(ConfigError) as e:
        parse(**{key: value})
    msg = str(e.value)
    assert msg.startswith(f"ctyun:{key}=") and needle in msg and "\n" not in msg


def test_single_node_with_master_in_queue_is_refused():
    with pytest.raises(ConfigError) as e:
        cfg.parse_hcc_config(BASE, parse_settings({"target": "ctyun-hcc", "nodes": "1"}, "s"))
    assert str(e.value).startswith("kimi-k3:nodes=1 ") and "masterInCompute" in str(e.value)


def test_secret_keys_are_known_and_never_echoed():
    c = parse(rootPassword="Sup3r$ecret", accessKey="AK", secretKey="SK-VALUE")
    assert "Sup3r$ecret" not in repr(c) and "SK-VALUE" not in repr(c)


@pytest.mark.parametrize("pw,ok", [
    ("Passw0rd!", True), ("passw0rd!", False), ("PASSW0RD!", False), ("Password!", False),
    ("Passw0rdx", False), ("P0!a", False), ("/Passw0rd!", False), ("Aa0!" * 8, False),
    ("Aa0!" * 7 + "xy", True),
])
def test_root_password_rules(pw, ok):
    problem = cfg.root_password_problem(pw)
    assert (problem is None) == ok
    if problem:
        assert pw not in problem


@given(st.text(min_size=0, max_size=40))
def test_default_cluster_name_always_valid(stack):
    assert cfg.cluster_name_problem(cfg.default_cluster_name(stack)) is None


def test_keys_parsed_by_other_modules_can_be_declared():
    raw = {**BASE, "sshPrivateKey": "x"}
    with pytest.raises(ConfigError, match="ctyun:sshPrivateKey"):
        cfg.parse_hcc_config(raw, shared())
    assert cfg.parse_hcc_config(raw, shared(), other_known={"sshPrivateKey"}).vpc_id == "vpc-1"


def test_network_is_created_by_default():
    c = cfg.parse_hcc_config({"regionId": "r", "azName": "a"}, shared())
    assert (c.vpc_id, c.subnet_id, c.vpc_cidr, c.subnet_cidr) == (
        "create", "create", "192.168.0.0/16", "192.168.0.0/24")
    with pytest.raises(ConfigError, match="^ctyun:subnetId='subnet-1' cannot belong"):
        cfg.parse_hcc_config({"regionId": "r", "azName": "a", "subnetId": "subnet-1"}, shared())
    with pytest.raises(ConfigError, match="^ctyun:subnetCidr='10.0.0.0/24' is not inside"):
        cfg.parse_hcc_config({"regionId": "r", "azName": "a", "subnetCidr": "10.0.0.0/24"},
                             shared())
    c = cfg.parse_hcc_config({"regionId": "r", "azName": "a", "vpcId": "vpc-9"}, shared())
    assert (c.vpc_id, c.subnet_id) == ("vpc-9", "create")
