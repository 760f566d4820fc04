"""`ctyun:*` keys at their edges (CTyun contract 4.4 limits): just inside accepted, just outside
refused with the exact line a user reads; the root password's 8-30 length at program time."""

import pytest

from components.ctyun_hcc import config as cfg
from components.inference.errors import ConfigError
from components.config.shared import parse_settings

BASE = {"regionId": "bb9fdb42056f11eda1610242ac110002",
        "azName": "cn-huadong1-jsnj1A-public-ctcloud", "vpcId": "vpc-1", "subnetId": "subnet-1"}
FILLER = "Zq7#mX9!pWk2@Ly5$Hn8%Tf4&Rv"  # passes every password rule but length (no runs, no names)


def parse(nodes=4, **extra):
    return cfg.parse_hcc_config({**BASE, **extra},
                                parse_settings({"target": "ctyun-hcc", "nodes": str(nodes)}, "ctyun-hcc"))


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
