"""`ctyun:*` config parsing: documented rules, stack-unique names, separate exposure lists."""

import pytest
from hypothesis import given, strategies as st

from components.config.shared import parse_settings
from components.ctyun_hcc import config as cfg
from components.ctyun_hcc.api import rules
from components.ctyun_hcc.ownership import default_cluster_name, names_for
from components.inference.errors import ConfigError


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


# ---- merged from test_ctyun_config_behaviour.py:
# `ctyun:*` keys at their edges (CTyun contract 4.4 limits): just inside accepted, just outside
# refused with the exact line a user reads; the root password's 8-30 length at program time.

FILLER = "Zq7#mX9!pWk2@Ly5$Hn8%Tf4&Rv"  # passes every password rule but length (no runs, no names)


@pytest.mark.parametrize("n", [8, 9, 29, 30])
def test_root_passwords_of_8_to_30_characters_pass(n):
    parse(rootPassword=(FILLER * 2)[:n])


@pytest.mark.parametrize("kw,field,want", [
    ({"storageSizeGb": "500"}, "storage_size_gb", 500), ({"storageSizeGb": "1048576"}, "storage_size_gb", 1048576),
    ({"storageType": "oceanfs", "storageSizeGb": "100"}, "storage_size_gb", 100),
    ({"eipBandwidthMbps": "1"}, "eip_bandwidth_mbps", 1), ({"eipBandwidthMbps": "300"}, "eip_bandwidth_mbps", 300),
    ({"publicIp": "false", "eipBandwidthMbps": "999"}, "eip_bandwidth_mbps", 0),
    ({"createTimeoutS": "60"}, "create_timeout_s", 60), ({"createTimeoutS": "86400"}, "create_timeout_s", 86400),
    ({"updateTimeoutS": "60"}, "update_timeout_s", 60), ({"deleteTimeoutS": "86400"}, "delete_timeout_s", 86400),
    ({"lostAnswerWaitS": "30"}, "lost_answer_wait_s", 30), ({"pollIntervalS": "1"}, "poll_interval_s", 1),
    ({"pollIntervalS": "600"}, "poll_interval_s", 600),
    ({"onDemand": "false", "cycleType": "MONTH", "cycleCount": "11"}, "cycle_count", 11),
    ({"onDemand": "false", "cycleType": "YEAR", "cycleCount": "1"}, "cycle_count", 1),
    ({"onDemand": "false", "cycleType": "YEAR", "cycleCount": "3"}, "cycle_type", "YEAR"),
    ({"cycleType": "YEAR"}, "cycle_type", ""),  # on demand: a cycle type alone means nothing
    ({"masterInCompute": "false"}, "compute_node_count", 4), ({}, "compute_node_count", 3),
    ({"subnetType": "cbm"}, "subnet_type", "cbm"), ({"sfsType": "capacity"}, "sfs_type", "capacity"),
    ({"queueName": "q" * 15}, "queue_name", "q" * 15), ({"clusterName": "ab"}, "cluster_name", "ab"),
    ({"clusterName": "a" * 20}, "cluster_name", "a" * 20),
    ({"adoptClusterUuid": "cl-123"}, "adopt_cluster_uuid", "cl-123"),
    ({"endpoint": "https://cthpc.example:8443"}, "endpoint", "https://cthpc.example:8443"),
    ({"vpcCidr": "10.0.0.0/16", "subnetCidr": "10.0.1.0/24", "vpcId": "create", "subnetId": "create"},
     "subnet_cidr", "10.0.1.0/24"),
    ({"vpcId": "vpc-2", "subnetId": "subnet-2", "subnetCidr": "172.16.0.0/24"}, "subnet_cidr", "172.16.0.0/24"),
    ({"securityGroup": "sg-1"}, "security_group", "sg-1"),
])
def test_edges_accepted(kw, field, want):
    assert getattr(parse(**kw), field) == want


def test_system_disk_fields_in_the_documented_order():
    c = parse(systemDiskType="SAS", systemDiskSizeGb="2048", cloudSystemDiskType="SSD", cloudSystemDiskSizeGb="100")
    assert c.server_fields == (("localSystemRaid", ""), ("localDataRaid", ""), ("bmsDeviceType", ""),
                               ("cloudSystemDiskType", "SSD"), ("cloudSystemDiskSizeGb", 100),
                               ("systemDiskType", "SAS"), ("systemDiskSizeGb", 2048))
    assert dict(parse().server_fields) == {"localSystemRaid": "", "localDataRaid": "", "bmsDeviceType": "",
                                           "cloudSystemDiskType": "", "cloudSystemDiskSizeGb": 0,
                                           "systemDiskType": "SSD", "systemDiskSizeGb": 100}


def test_a_subscription_needs_its_count():
    with pytest.raises(ConfigError) as e:
        parse(onDemand="false", cycleType="YEAR")
    assert e.value.key == "ctyun:cycleCount" and e.value.value is None
    assert e.value.problem == "is required for a subscription" and "YEAR" in e.value.fix


def test_one_node_with_the_master_in_the_queue_leaves_no_compute_node():
    with pytest.raises(ConfigError) as e:
        parse(nodes=1)
    assert str(e.value) == ("kimi-k3:nodes=1 leaves no compute node (E-HPC's large-model edition needs one); "
                            "use at least 2 nodes, or set ctyun:masterInCompute=false")
    assert parse(nodes=1, masterInCompute="false").compute_node_count == 1


REFUSALS = [
    ({'clusterName': '1abc'},
     "ctyun:clusterName='1abc' may hold only letters, digits and '-' and must start with a letter; pick another name (2-20 letters, digits and '-', starting with a letter)"),
    ({'clusterName': 'xxxxxxxxxxxxxxxxxxxxx'},
     "ctyun:clusterName='xxxxxxxxxxxxxxxxxxxxx' must be 2-20 characters long (is 21); pick another name (2-20 letters, digits and '-', starting with a letter)"),
    ({'regionid': 'x'},
     "ctyun:regionid=<not shown> is not a known key; did you mean ctyun:regionId? remove it or check the spelling (docs/ctyun-hcc.md lists the keys)"),
    ({'vpcId': 'create', 'subnetId': 'subnet-1'},
     "ctyun:subnetId='subnet-1' cannot belong to a VPC still to be created; leave it unset (a subnet is created in the new VPC) or give ctyun:vpcId"),
    ({'vpcId': 'default'},
     "ctyun:vpcId='default' is not a CTyun id; give an id (vpc-...) or create"),
    ({'subnetId': 'sub1'},
     "ctyun:subnetId='sub1' is not a CTyun id; give an id (subnet-...) or create"),
    ({'vpcId': 'create', 'subnetId': 'create', 'vpcCidr': '10.0.0.0/16', 'subnetCidr': '192.168.0.0/24'},
     "ctyun:subnetCidr='192.168.0.0/24' is not inside the VPC; pick a range inside ctyun:vpcCidr (10.0.0.0/16)"),
    ({'vpcCidr': '10.0.0.0/33'},
     "ctyun:vpcCidr='10.0.0.0/33' is not a CIDR ('10.0.0.0/33' does not appear to be an IPv4 or IPv6 network); give a CIDR such as 192.168.0.0/24"),
    ({'subnetCidr': 'x'},
     "ctyun:subnetCidr='x' is not a CIDR ('x' does not appear to be an IPv4 or IPv6 network); give a CIDR such as 192.168.0.0/24"),
    ({'securityGroup': 'mygroup'},
     "ctyun:securityGroup='mygroup' is not a CTyun security group id; give a group id (sg-...) or create"),
    ({'storageType': 'nas'},
     "ctyun:storageType='nas' is not a documented value; use one of sfs, oceanfs"),
    ({'storageSizeGb': '499'},
     'ctyun:storageSizeGb=499 is out of range; use 500 to 1048576'),
    ({'storageSizeGb': '1048577'},
     'ctyun:storageSizeGb=1048577 is out of range; use 500 to 1048576'),
    ({'storageSizeGb': 'big'},
     "ctyun:storageSizeGb='big' is not an integer; give an integer"),
    ({'storageType': 'oceanfs', 'storageSizeGb': '99'},
     'ctyun:storageSizeGb=99 is out of range; use 100 to 1048576'),
    ({'storageName': '9fs'},
     "ctyun:storageName='9fs' may hold only letters, digits and '-' and must start with a letter; use 2-255 letters, digits and '-', starting with a letter"),
    ({'masterInCompute': 'maybe'},
     "ctyun:masterInCompute='maybe' is not a boolean; use true or false"),
    ({'queueName': 'default'},
     "ctyun:queueName='default' must not be 'default' (reserved); use 1-15 letters, digits and '_' starting with a letter, not 'default' (e.g. batch)"),
    ({'onDemand': 'false'},
     'ctyun:cycleType (not set) is required for a subscription; use one of MONTH, YEAR'),
    ({'onDemand': 'false', 'cycleType': 'YEAR', 'cycleCount': '4'},
     'ctyun:cycleCount=4 is out of range; use 1 to 3'),
    ({'onDemand': 'false', 'cycleType': 'MONTH', 'cycleCount': '0'},
     'ctyun:cycleCount=0 is out of range; use 1 to 11'),
    ({'eipBandwidthMbps': '0'},
     'ctyun:eipBandwidthMbps=0 is out of range; use 1 to 300'),
    ({'eipBandwidthMbps': '301'},
     'ctyun:eipBandwidthMbps=301 is out of range; use 1 to 300'),
    ({'systemDiskType': 'NVME'},
     "ctyun:systemDiskType='NVME' is not a documented value; use one of SATA, SAS, SSD, SSD-genric"),
    ({'cloudSystemDiskType': 'SSD'},
     "ctyun:cloudSystemDiskType='SSD' comes without its pair; set both ctyun:cloudSystemDiskType and ctyun:cloudSystemDiskSizeGb, or neither"),
    ({'cloudSystemDiskSizeGb': '100'},
     "ctyun:cloudSystemDiskType (not set) comes without its pair; set both ctyun:cloudSystemDiskType and ctyun:cloudSystemDiskSizeGb, or neither"),
    ({'endpoint': 'cthpc.example'},
     "ctyun:endpoint='cthpc.example' is not an http(s) URL; give a URL such as https://host:port"),
    ({'adoptClusterUuid': 'my-cluster'},
     "ctyun:adoptClusterUuid='my-cluster' is not a cluster UUID; give the cluster's UUID (cl-...) from hpc/list-clusters"),
    ({'createTimeoutS': '59'},
     'ctyun:createTimeoutS=59 is out of range; use 60 to 86400'),
    ({'createTimeoutS': '86401'},
     'ctyun:createTimeoutS=86401 is out of range; use 60 to 86400'),
    ({'updateTimeoutS': '59'},
     'ctyun:updateTimeoutS=59 is out of range; use 60 to 86400'),
    ({'deleteTimeoutS': '86401'},
     'ctyun:deleteTimeoutS=86401 is out of range; use 60 to 86400'),
    ({'lostAnswerWaitS': '29'},
     'ctyun:lostAnswerWaitS=29 is out of range; use 30 to 86400'),
    ({'pollIntervalS': '0'},
     'ctyun:pollIntervalS=0 is out of range; use 1 to 600'),
    ({'pollIntervalS': '601'},
     'ctyun:pollIntervalS=601 is out of range; use 1 to 600'),
    ({'subnetType': 'x'},
     "ctyun:subnetType='x' is not a documented value; use one of common, cbm"),
    ({'sfsType': 'fast'},
     "ctyun:sfsType='fast' is not a documented value; use one of capacity, performance"),
    ({'systemDiskSizeGb': '1'},
     'ctyun:systemDiskSizeGb=1 is out of range; use 100 to 2048'),
]


@pytest.mark.parametrize("kw,message", REFUSALS)
def test_refusals_are_exactly_one_line_naming_key_value_and_fix(kw, message):
    with pytest.raises(ConfigError) as e:
        parse(**kw)
    assert str(e.value) == message


@pytest.mark.parametrize("n", [7, 31])
def test_root_passwords_of_7_or_31_characters_are_refused_without_being_shown(n):
    pw = (FILLER * 2)[:n]
    with pytest.raises(ConfigError) as e:
        parse(rootPassword=pw)
    assert str(e.value) == ("ctyun:rootPassword=<not shown> must be 8-30 characters long; set another with "
                            "`pulumi config set --secret ctyun:rootPassword ...`")


def test_catalog_choices_are_read_as_given():
    c = parse(clusterType="ct-1", specification="spec-c", masterSpecification="spec-m", image="im-c",
              masterImage="im-m", storageUid="fs-1")
    assert (c.region_id, c.az_name) == (BASE["regionId"], BASE["azName"])
    assert (c.cluster_type, c.specification, c.master_specification) == ("ct-1", "spec-c", "spec-m")
    assert (c.image, c.master_image, c.storage_uid) == ("im-c", "im-m", "fs-1")
    d = parse()
    assert (d.cluster_type, d.specification, d.master_specification, d.image, d.master_image) == ("",) * 5


@pytest.mark.parametrize("value,want", [("true", True), ("TRUE", True), ("1", True), ("yes", True), ("YES", True),
                                        ("false", False), ("0", False), ("no", False), ("No", False), ("", True)])
def test_booleans(value, want):
    assert parse(masterInCompute=value).master_in_compute is want


def test_defaults_that_reach_the_providers():
    c = parse()
    assert (c.update_timeout_s, c.lost_answer_wait_s, c.adopt_cluster_uuid, c.storage_uid) == (5400, 900, "", "")
    assert (c.cycle_type, c.cycle_count, c.subnet_type, c.vpc_cidr, c.subnet_cidr) == (
        "", 0, "common", "192.168.0.0/16", "192.168.0.0/24")
    assert parse(rootPassword="").cluster_name == c.cluster_name  # an unset secret is not checked here
    assert parse(cycleType="MONTH").cycle_type == ""


def test_the_endpoint_cidrs_follow_the_exposure_rule():
    keys = {"allowedCidrs": "0.0.0.0/0"}
    with pytest.raises(ConfigError) as e:
        cfg.parse_hcc_config(BASE, parse_settings({"target": "ctyun-hcc", **keys}, "s"))
    assert str(e.value).startswith("kimi-k3:allowedCidrs='0.0.0.0/0' opens to the whole internet; ")
    ok = cfg.parse_hcc_config(BASE, parse_settings({"target": "ctyun-hcc", "allowInternet": "true", **keys}, "s"))
    assert ok.endpoint_cidrs == ("0.0.0.0/0",)


# ---- merged from test_ctyun_config_edges_behaviour.py:
# ctyun:* keys at edges the first behaviour tests left: an empty value means the default, a CIDR
# with host bits is refused (CTyun's VPC API takes a network address: CTyun contract 3, create VPC
# `CIDR`), and the local RAID choice reaches the server order (doc 23930 `localSystemVolumeRaidUuid`).

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
