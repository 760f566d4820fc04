"""aws-eks target keys: defaults, every refusal is one line naming key, value and fix."""

from __future__ import annotations

import pytest

from components.aws_eks import config as c
from components.config.shared import parse_settings
from components.inference.errors import ConfigError


BASE = {"target": "aws-eks"}


def parse(**kw):
    return c.parse(parse_settings({**BASE, **kw}, "aws-eks"))


def test_defaults_quote_a_one_day_block_and_never_buy():
    cfg = parse()
    assert cfg.serving == "eks" and cfg.replicas == 1
    cap = cfg.capacity
    assert not cap.adopt and cap.instance_count == 1 and cap.duration_hours == 24
    assert cap.max_upfront_fee_usd == 0
    assert cfg.api_access_cidrs == ()  # private API endpoint unless CIDRs are given
    assert cfg.vpc_cidr == "10.0.0.0/16" and cfg.namespace == "kimi-k3"


def test_adopt_and_purchase_keys():
    cfg = parse(capacityReservationId="cr-0123456789abcdef0", nodes="2")
    assert cfg.capacity.adopt and cfg.capacity.instance_count == 2
    cfg = parse(maxUpfrontFeeUsd="120000", capacityDurationHours="168",
                capacityEarliestStart="2026-12-01T00:00:00+08:00")
    assert cfg.capacity.max_upfront_fee_usd == 120000.0
    assert cfg.capacity.earliest_start == "2026-11-30T16:00:00Z"


def test_api_cidrs_are_their_own_key():
    # a public model endpoint never means a public Kubernetes API
    tls = {"tlsDomain": "k3.example.com"}  # a public endpoint serves TLS (issue 21)
    assert parse(allowedCidrs="198.51.100.0/24", **tls).api_access_cidrs == ()
    assert parse(allowedCidrs="198.51.100.0/24", apiAccessCidrs="192.0.2.0/24", **tls).api_access_cidrs == \
        ("192.0.2.0/24",)


def test_internet_wide_api_needs_the_same_opt_in_as_the_endpoint():
    with pytest.raises(ConfigError) as e:
        parse(apiAccessCidrs="0.0.0.0/0")
    assert "kimi-k3:apiAccessCidrs" in str(e.value) and "allowInternet" in str(e.value)
    assert parse(apiAccessCidrs="0.0.0.0/0", allowInternet="true").api_access_cidrs == ("0.0.0.0/0",)


def test_api_reachability_requirement():
    from components.aws_eks.reachability import api_requirement

    req = api_requirement(parse())
    assert req.key == "kimi-k3:apiAccessCidrs" and "/32" in req.fix and "kimi-k3:privateApi" in req.fix
    assert "\n" not in req.text()
    assert api_requirement(parse(apiAccessCidrs="203.0.113.10/32")) is None
    vpc = dict(vpcId="vpc-0123456789abcdef0", privateSubnetIds="subnet-0123456789abcdef0,subnet-0123456789abcdef1")
    assert api_requirement(parse(privateApi="true", **vpc)) is None
    # HyperPod: this stack applies one object to a cluster it does not build; no requirement
    assert api_requirement(parse(serving="hyperpod", hyperpodClusterName="hp")) is None


@pytest.mark.parametrize("fee", ["nan", "inf", "-inf", "1e309", "NaN"])
def test_fee_must_be_finite(fee):
    with pytest.raises(ConfigError) as e:
        parse(maxUpfrontFeeUsd=fee)
    # a number as typed is shown bare (1e309), other text quoted ('nan'): the value as written
    shown = fee if fee[0].isdigit() else f"'{fee}'"
    assert str(e.value).startswith(f"kimi-k3:maxUpfrontFeeUsd={shown} is not finite")


@pytest.mark.parametrize("key,value", [
    ("capacityReservationId", "cr-0123456789abcdef0"), ("maxUpfrontFeeUsd", "100"), ("vpcCidr", "10.1.0.0/16"),
    ("apiAccessCidrs", "203.0.113.10/32"), ("systemNodeCount", "3"), ("rootVolumeGib", "300"),
    ("allowedCidrs", "203.0.113.0/24"), ("weightsSource", "s3"), ("streamWeights", "true"),
])
def test_hyperpod_refuses_keys_it_cannot_honour(key, value):
    with pytest.raises(ConfigError) as e:
        parse(serving="hyperpod", hyperpodClusterName="hp", **{key: value})
    # the refusal names the key that was set (it named weightsSource for streamWeights before)
    assert f"kimi-k3:{key}" in str(e.value)
    assert "hyperpod" in str(e.value)


@pytest.mark.parametrize("hours,ok", [(24, True), (336, True), (360, False), (504, True), (4368, True),
                                      (4392, False), (25, False), (0, False)])
def test_block_durations(hours, ok):
    assert c.valid_block_hours(hours) is ok


@pytest.mark.parametrize("kw,fragment", [
    ({"capacityReservationID": "cr-1"}, "kimi-k3:capacityReservationID=<not shown> is not a known key; did you mean kimi-k3:capacityReservationId"),
    ({"serving": "sagemaker"}, "kimi-k3:serving='sagemaker' is not a serving mode"),
    ({"capacityReservationId": "r-123"}, "is not a capacity reservation id"),
    ({"capacityDurationHours": "360"}, "is not a Capacity Block duration"),
    ({"capacityInstanceCount": "1", "nodes": "2"}, "is fewer than nodes x replicas"),
    ({"maxUpfrontFeeUsd": "lots"}, "kimi-k3:maxUpfrontFeeUsd='lots' is not a number"),
    ({"maxUpfrontFeeUsd": "-1"}, "is negative"),
    ({"capacityReservationId": "cr-0123456789abcdef0", "maxUpfrontFeeUsd": "5"}, "conflicts with the purchase"),
    ({"capacityReservationId": "cr-0123456789abcdef0", "capacityAllowLocalZones": "true"},
     "conflicts with the purchase"),
    ({"capacityAllowLocalZones": "true"}, "kimi-k3:capacityAllowLocalZones='true' needs your own VPC"),
    ({"capacityAllowLocalZones": "sometimes"}, "is not a boolean"),
    ({"capacityEarliestStart": "tomorrow"}, "is not a time"),
    ({"capacityEarliestStart": "2026-12-05T00:00:00Z", "capacityLatestStart": "2026-12-01T00:00:00Z"},
     "is before the earliest start"),
    ({"vpcId": "vpc-0123456789abcdef0"}, "kimi-k3:privateSubnetIds (not set) is needed with kimi-k3:vpcId"),
    ({"privateSubnetIds": "subnet-0123456789abcdef0"}, "kimi-k3:vpcId (not set) is needed"),
    ({"vpcId": "vpc-0123456789abcdef0", "privateSubnetIds": "subnet-1,subnet-2"}, "is not a valid id"),
    ({"vpcCidr": "10.0.0.0/20"}, "is not an IPv4 /16"),
    ({"clusterVersion": "1.9"}, "is not a Kubernetes minor version"),
    ({"apiAccessCidrs": "10.0.0.1/8"}, "is not a CIDR"),
    ({"weightsSource": "s3"}, "kimi-k3:weightsS3Uri (not set) is needed"),
    ({"weightsS3Uri": "https://bucket"}, "is not an S3 URI"),
    # without hyperpodClusterName the stack builds the HyperPod cluster (hyperpod/settings.py)
    ({"serving": "hyperpod", "capacityReservationId": "cr-0123456789abcdef0"},
     "does not apply to the HyperPod cluster this stack builds"),
    ({"serving": "hyperpod", "hyperpodClusterName": "hp", "nodes": "2"}, "HyperPod's one node per replica"),
    ({"replicas": "40", "nodes": "2"}, "more than one Capacity Block holds"),
    ({"namespace": "Kimi"}, "is not a Kubernetes namespace name"),
    ({"privateApi": "maybe"}, "kimi-k3:privateApi='maybe' is not a boolean"),
    ({"privateApi": "true"}, "needs an existing VPC"),
    ({"privateApi": "true", "apiAccessCidrs": "203.0.113.10/32"}, "conflicts with kimi-k3:apiAccessCidrs"),
])
def test_refusals_are_one_line(kw, fragment):
    with pytest.raises(ConfigError) as e:
        parse(**kw)
    msg = str(e.value)
    assert fragment in msg and "\n" not in msg and ";" in msg


def test_local_zones_only_when_asked_for_and_with_your_own_vpc():
    assert parse().capacity.allow_local_zones is False
    cfg = parse(capacityAllowLocalZones="true", vpcId="vpc-0123456789abcdef0",
                privateSubnetIds="subnet-0123456789abcdef0,subnet-0123456789abcdef1")
    assert cfg.capacity.allow_local_zones is True


def test_existing_vpc_accepted():
    cfg = parse(vpcId="vpc-0123456789abcdef0",
                privateSubnetIds='["subnet-0123456789abcdef0", "subnet-0123456789abcdef1"]',
                publicSubnetIds="subnet-0123456789abcdef2")
    assert cfg.private_subnet_ids == ("subnet-0123456789abcdef0", "subnet-0123456789abcdef1")
    assert cfg.public_subnet_ids == ("subnet-0123456789abcdef2",)


def test_hyperpod_model_name_follows_the_crd():
    with pytest.raises(ConfigError) as e:
        parse(serving="hyperpod", hyperpodClusterName="hp", servedModelName="K" * 64)
    assert "is not a HyperPod modelName" in str(e.value)
    assert parse(serving="hyperpod", hyperpodClusterName="hp", servedModelName="Kimi-K3").serving == "hyperpod"


@pytest.mark.parametrize("name", ["-lead", "a b", "x;rm", "a" * 101, "$(id)", "é"])
def test_hyperpod_cluster_name_follows_the_eks_grammar(name):
    with pytest.raises(ConfigError) as e:
        parse(serving="hyperpod", hyperpodClusterName=name)
    assert e.value.key == "kimi-k3:hyperpodClusterName"


def test_a_real_eks_cluster_name_passes():
    cfg = parse(serving="hyperpod", hyperpodClusterName="hp-eks_01")
    assert cfg.hyperpod_cluster_name == "hp-eks_01"


# ---- merged from test_aws_config_behaviour.py:
# aws-eks keys at their edges: just inside accepted, just outside refused with the exact line a
# user reads (key, value, problem; fix), every default, and the purchase/adopt exclusions.
#
# The durations are AWS's Capacity Block rule (EC2 API reference, PurchaseCapacityBlock /
# DescribeCapacityBlockOfferings: 1-14 days in 1-day steps, then 7-day steps up to 182 days).

V = "vpc-0123456789abcdef0"
S1, S2 = "subnet-0123456789abcdef0", "subnet-0123456789abcdef1"
CR = "cr-0123456789abcdef0"
HP = {"serving": "hyperpod", "hyperpodClusterName": "hp"}


def test_every_default():
    cfg = parse()
    assert cfg.serving == "eks" and cfg.applies_kubernetes_objects
    assert cfg.capacity == c.CapacityRequest(None, 1, 24, None, None, 0.0) and not cfg.capacity.adopt
    assert (cfg.replicas, cfg.vpc_id, cfg.private_subnet_ids, cfg.public_subnet_ids) == (1, None, (), ())
    assert (cfg.vpc_cidr, cfg.cluster_version, cfg.api_access_cidrs, cfg.kms_key_arn) == ("10.0.0.0/16", "1.35", (), None)
    assert (cfg.system_instance_type, cfg.system_node_count, cfg.root_volume_gib) == ("m7i.xlarge", 2, 200)
    assert (cfg.namespace, cfg.hyperpod_cluster_name, cfg.private_api, cfg.weights_s3_uri) == ("kimi-k3", None, False, None)


def test_values_are_read_as_given():
    cfg = parse(replicas="2", nodes="2", capacityInstanceCount="6", capacityDurationHours="504",
                capacityEarliestStart="2026-12-01T19:30:00+08:00", capacityLatestStart="2026-12-02T00:00:00",
                maxUpfrontFeeUsd="120_000", vpcId=V, privateSubnetIds=f" {S1} , {S2} ",
                publicSubnetIds=f'["{S1}"]', vpcCidr="10.20.0.0/16", clusterVersion="1.29",
                kmsKeyArn="arn:aws:kms:us-east-2:111122223333:key/k", systemInstanceType="m7i.2xlarge",
                systemNodeCount="10", rootVolumeGib="16384", namespace="k3-prod", privateApi="yes")
    assert cfg.capacity == c.CapacityRequest(None, 6, 504, "2026-12-01T11:30:00Z", "2026-12-02T00:00:00Z", 120000.0)
    assert (cfg.replicas, cfg.vpc_id, cfg.private_subnet_ids, cfg.public_subnet_ids) == (2, V, (S1, S2), (S1,))
    assert (cfg.vpc_cidr, cfg.cluster_version, cfg.system_instance_type) == ("10.20.0.0/16", "1.29", "m7i.2xlarge")
    assert (cfg.system_node_count, cfg.root_volume_gib, cfg.namespace, cfg.private_api) == (10, 16384, "k3-prod", True)
    assert cfg.kms_key_arn == "arn:aws:kms:us-east-2:111122223333:key/k"
    adopt = parse(capacityReservationId=CR, capacityInstanceCount="64")
    assert adopt.capacity.adopt and adopt.capacity.reservation_id == CR and adopt.capacity.instance_count == 64
    hp = parse(**HP, replicas="2")
    assert hp.serving == "hyperpod" and hp.hyperpod_cluster_name == "hp" and not hp.applies_kubernetes_objects


@pytest.mark.parametrize("value,want", [("true", True), ("TRUE", True), ("1", True), ("yes", True),
                                        ("false", False), ("0", False), ("No", False), ("", False)])
def test_booleans(value, want):
    assert parse(privateApi=value, vpcId=V, privateSubnetIds=f"{S1},{S2}").private_api is want


@pytest.mark.parametrize("hours,ok", [(24, True), (48, True), (336, True), (360, False), (504, True),
                                      (4368, True), (4200, True), (4224, False), (25, False), (0, False),
                                      (-24, False), (4536, False)])
def test_block_durations_are_awss(hours, ok):
    assert c.valid_block_hours(hours) is ok


@pytest.mark.parametrize("kw", [{"replicas": "64"}, {"replicas": "32", "nodes": "2"}, {"replicas": "1", "nodes": "64"},
                                {"capacityInstanceCount": "64"}, {"capacityInstanceCount": "2", "nodes": "2"},
                                {"capacityDurationHours": "24"}, {"capacityDurationHours": "4368"},
                                {"maxUpfrontFeeUsd": "0"}, {"systemNodeCount": "1"}, {"rootVolumeGib": "50"},
                                {"clusterVersion": "1.28"}, {"clusterVersion": "1.39"}, {"namespace": "a"},
                                {"namespace": "a" * 63}, {"capacityEarliestStart": "2026-12-01T00:00:00Z",
                                                          "capacityLatestStart": "2026-12-01T00:00:00Z"}])
def test_edges_accepted(kw):
    parse(**kw)


REFUSALS = [
    ({'serving': 'sagemaker'},
     "kimi-k3:serving='sagemaker' is not a serving mode; use one of eks, hyperpod"),
    ({'replicas': 'x'},
     "kimi-k3:replicas='x' is not an integer; give an integer"),
    ({'replicas': '0'},
     'kimi-k3:replicas=0 is out of range; use 1 to 64'),
    ({'replicas': '65'},
     'kimi-k3:replicas=65 is out of range; use 1 to 64'),
    ({'replicas': '33', 'nodes': '2'},
     'kimi-k3:replicas=33 needs 66 instances, more than one Capacity Block holds; keep nodes x replicas at most 64'),
    ({'serving': 'hyperpod', 'hyperpodClusterName': 'hp', 'nodes': '2'},
     "kimi-k3:nodes=2 is more than HyperPod's one node per replica; use kimi-k3:serving=eks for a replica that spans nodes"),
    ({'capacityReservationId': 'r-123'},
     "kimi-k3:capacityReservationId='r-123' is not a capacity reservation id; give the id of your Capacity Block reservation (cr-0123456789abcdef0)"),
    ({'capacityInstanceCount': '0'},
     'kimi-k3:capacityInstanceCount=0 is out of range; use 1 to 64'),
    ({'capacityInstanceCount': '1', 'nodes': '2'},
     'kimi-k3:capacityInstanceCount=1 is fewer than nodes x replicas (2); use at least 2'),
    ({'capacityInstanceCount': '65'},
     'kimi-k3:capacityInstanceCount=65 is out of range; use 1 to 64'),
    ({'capacityDurationHours': '23'},
     'kimi-k3:capacityDurationHours=23 is out of range; use 24 to 4368'),
    ({'capacityDurationHours': '360'},
     'kimi-k3:capacityDurationHours=360 is not a Capacity Block duration; use 24 to 336 in steps of 24, then multiples of 168 up to 4368'),
    ({'capacityDurationHours': '25'},
     'kimi-k3:capacityDurationHours=25 is not a Capacity Block duration; use 24 to 336 in steps of 24, then multiples of 168 up to 4368'),
    ({'capacityDurationHours': '4392'},
     'kimi-k3:capacityDurationHours=4392 is out of range; use 24 to 4368'),
    ({'maxUpfrontFeeUsd': 'lots'},
     "kimi-k3:maxUpfrontFeeUsd='lots' is not a number; give a number of US dollars such as 120000 (0 never buys)"),
    ({'maxUpfrontFeeUsd': 'nan'},
     "kimi-k3:maxUpfrontFeeUsd='nan' is not finite; give a finite number of US dollars such as 120000 (0 never buys)"),
    ({'maxUpfrontFeeUsd': '-1'},
     'kimi-k3:maxUpfrontFeeUsd=-1 is negative; use 0 (never buy) or more'),
    ({'capacityReservationId': 'cr-0123456789abcdef0', 'maxUpfrontFeeUsd': '5'},
     "kimi-k3:capacityReservationId='cr-0123456789abcdef0' conflicts with the purchase keys; either adopt this reservation or unset it to buy one (maxUpfrontFeeUsd, capacity* keys), not both"),
    ({'capacityReservationId': 'cr-0123456789abcdef0', 'capacityEarliestStart': '2026-12-05T00:00:00Z'},
     "kimi-k3:capacityReservationId='cr-0123456789abcdef0' conflicts with the purchase keys; either adopt this reservation or unset it to buy one (maxUpfrontFeeUsd, capacity* keys), not both"),
    ({'capacityReservationId': 'cr-0123456789abcdef0', 'capacityLatestStart': '2026-12-05T00:00:00Z'},
     "kimi-k3:capacityReservationId='cr-0123456789abcdef0' conflicts with the purchase keys; either adopt this reservation or unset it to buy one (maxUpfrontFeeUsd, capacity* keys), not both"),
    ({'capacityReservationId': 'cr-0123456789abcdef0', 'capacityDurationHours': '48'},
     "kimi-k3:capacityReservationId='cr-0123456789abcdef0' conflicts with the purchase keys; either adopt this reservation or unset it to buy one (maxUpfrontFeeUsd, capacity* keys), not both"),
    ({'capacityEarliestStart': 'tomorrow'},
     "kimi-k3:capacityEarliestStart='tomorrow' is not a time; give an ISO-8601 time such as 2026-12-01T11:30:00Z"),
    ({'capacityEarliestStart': '2026-12-05T00:00:00Z', 'capacityLatestStart': '2026-12-01T00:00:00Z'},
     "kimi-k3:capacityLatestStart='2026-12-01T00:00:00Z' is before the earliest start; give a time after capacityEarliestStart"),
    ({'vpcId': 'vpc-1'},
     "kimi-k3:vpcId='vpc-1' is not a VPC id; give an id such as vpc-0123456789abcdef0"),
    ({'vpcId': 'vpc-0123456789abcdef0'},
     "kimi-k3:privateSubnetIds (not set) is needed with kimi-k3:vpcId; give at least two private subnets of that VPC (in two zones, one in the block's zone)"),
    ({'vpcId': 'vpc-0123456789abcdef0', 'privateSubnetIds': 'subnet-0123456789abcdef0'},
     "kimi-k3:privateSubnetIds='subnet-0123456789abcdef0' is needed with kimi-k3:vpcId; give at least two private subnets of that VPC (in two zones, one in the block's zone)"),
    ({'privateSubnetIds': 'subnet-0123456789abcdef0,subnet-0123456789abcdef1'},
     'kimi-k3:vpcId (not set) is needed with subnet ids; give the VPC of those subnets'),
    ({'publicSubnetIds': 'subnet-0123456789abcdef0'},
     'kimi-k3:vpcId (not set) is needed with subnet ids; give the VPC of those subnets'),
    ({'vpcId': 'vpc-0123456789abcdef0', 'privateSubnetIds': 'subnet-1,subnet-2'},
     "kimi-k3:privateSubnetIds='subnet-1' is not a valid id; give ids such as subnet-0123456789abcdef0"),
    ({'vpcCidr': 'nonsense'},
     "kimi-k3:vpcCidr='nonsense' is not a CIDR ('nonsense' does not appear to be an IPv4 or IPv6 network); give an IPv4 /16 such as 10.0.0.0/16"),
    ({'vpcCidr': '10.0.0.0/20'},
     "kimi-k3:vpcCidr='10.0.0.0/20' is not an IPv4 /16; give an IPv4 /16 such as 10.0.0.0/16"),
    ({'vpcCidr': 'fd00::/16'},
     "kimi-k3:vpcCidr='fd00::/16' is not an IPv4 /16; give an IPv4 /16 such as 10.0.0.0/16"),
    ({'clusterVersion': '1.9'},
     "kimi-k3:clusterVersion=1.9 is not a Kubernetes minor version; give an EKS version such as 1.35"),
    ({'clusterVersion': '1.40'},
     "kimi-k3:clusterVersion=1.40 is not a Kubernetes minor version; give an EKS version such as 1.35"),
    ({'privateApi': 'maybe'},
     "kimi-k3:privateApi='maybe' is not a boolean; use true or false"),
    ({'privateApi': 'true'},
     "kimi-k3:privateApi='true' needs an existing VPC (a VPC this stack creates cannot contain the machine creating it); give kimi-k3:vpcId (and its subnets) of the VPC that `pulumi up` runs in, or use kimi-k3:apiAccessCidrs with your address"),
    ({'privateApi': 'true', 'apiAccessCidrs': '203.0.113.10/32'},
     "kimi-k3:privateApi='true' conflicts with kimi-k3:apiAccessCidrs; either keep the API private (unset kimi-k3:apiAccessCidrs) or open it to those CIDRs (unset kimi-k3:privateApi)"),
    ({'kmsKeyArn': 'key-1'},
     "kimi-k3:kmsKeyArn='key-1' is not a KMS key ARN; give the ARN of a KMS key or alias in aws:region (arn:aws:kms:REGION:ACCOUNT:key/ID)"),
    # an ARN of another service passed the old `startswith("arn:aws")` check, and EKS refused it
    # only after the Capacity Block was bought
    ({'kmsKeyArn': 'arn:aws:iam::111122223333:role/admin'},
     "kimi-k3:kmsKeyArn='arn:aws:iam::111122223333:role/admin' is not a KMS key ARN; give the ARN of a KMS key or alias in aws:region (arn:aws:kms:REGION:ACCOUNT:key/ID)"),
    ({'kmsKeyArn': 'arn:awsx:kms:us-east-2:111122223333:key/k'},
     "kimi-k3:kmsKeyArn='arn:awsx:kms:us-east-2:111122223333:key/k' is not a KMS key ARN; give the ARN of a KMS key or alias in aws:region (arn:aws:kms:REGION:ACCOUNT:key/ID)"),
    ({'systemInstanceType': 'm7g.xlarge'},
     "kimi-k3:systemInstanceType='m7g.xlarge' is an AWS Graviton (Arm) type; the system node group runs the "
     "x86_64 AMI (AL2023_x86_64_STANDARD); use an x86_64 type such as m7i.xlarge"),
    ({'systemInstanceType': 'm7i.xlarge; curl x|sh'},
     "kimi-k3:systemInstanceType='m7i.xlarge; curl x|sh' is not an EC2 instance type; use an x86_64 type such "
     "as m7i.xlarge"),
    ({'systemInstanceType': 'M7i.XLARGE'},
     "kimi-k3:systemInstanceType='M7i.XLARGE' is not an EC2 instance type; use an x86_64 type such as m7i.xlarge"),
    ({'namespace': 'Kimi'},
     "kimi-k3:namespace='Kimi' is not a Kubernetes namespace name; use lower-case letters, digits and '-'"),
    ({'namespace': '-k3'},
     "kimi-k3:namespace='-k3' is not a Kubernetes namespace name; use lower-case letters, digits and '-'"),
    ({'serving': 'hyperpod', 'clusterVersion': '1.35'},
     "kimi-k3:clusterVersion=1.35 is not a Kubernetes version SageMaker HyperPod documents; CreateCluster would refuse it only after the training plan is bought (no refund); use 1.34 (unset it) or another of 1.28, 1.29, 1.30, 1.31, 1.32, 1.33, 1.34; if AWS now lists it for HyperPod (https://docs.amazonaws.cn/sagemaker/latest/dg/sagemaker-hyperpod-eks-prerequisites.md), add it to components/aws_eks/hyperpod/catalog.py"),
    ({'serving': 'hyperpod', 'hyperpodClusterName': 'hp', 'vpcId': 'vpc-0123456789abcdef0'},
     "kimi-k3:vpcId='vpc-0123456789abcdef0' does not apply to kimi-k3:serving=hyperpod (your HyperPod cluster already decides it); unset it (pulumi config rm kimi-k3:vpcId), or use kimi-k3:serving=eks for a cluster this stack builds"),
    ({'serving': 'hyperpod', 'hyperpodClusterName': 'hp', 'servedModelName': 'KKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKK'},
     "kimi-k3:servedModelName='KKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKK' is not a HyperPod modelName (InferenceEndpointConfig CRD); use at most 63 characters starting with a letter or digit"),
    ({'serving': 'hyperpod', 'hyperpodClusterName': 'hp', 'servedModelName': '_k3'},
     "kimi-k3:servedModelName='_k3' is not a usable model name; use up to 128 letters, digits and . _ : - / (one '/' at a time), starting with a letter or digit, e.g. Kimi-K3"),
    ({'serving': 'hyperpod', 'hyperpodClusterName': 'hp', 'allowedCidrs': '198.51.100.0/24'},
     "kimi-k3:allowedCidrs='198.51.100.0/24' does not apply to kimi-k3:serving=hyperpod; unset it; the HyperPod Inference Operator decides how its endpoint is exposed (docs/aws-eks.md)"),
    ({'serving': 'hyperpod', 'hyperpodClusterName': 'hp', 'weightsSource': 's3', 'weightsS3Uri': 's3://bucket-1/k3/'},
     "kimi-k3:weightsSource='s3' is not wired for kimi-k3:serving=hyperpod (the endpoint config downloads from Hugging Face); use the hub (unset weightsSource, streamWeights and weightsS3Uri) with serving=hyperpod"),
    ({'serving': 'hyperpod', 'hyperpodClusterName': 'hp', 'streamWeights': 'true'},
     "kimi-k3:streamWeights='true' is not wired for kimi-k3:serving=hyperpod (the endpoint config downloads from Hugging Face); use the hub (unset weightsSource, streamWeights and weightsS3Uri) with serving=hyperpod"),
    ({'systemNodeCount': '0'},
     'kimi-k3:systemNodeCount=0 is out of range; use 1 to 10'),
    ({'systemNodeCount': '11'},
     'kimi-k3:systemNodeCount=11 is out of range; use 1 to 10'),
    ({'rootVolumeGib': '49'},
     'kimi-k3:rootVolumeGib=49 is out of range; use 50 to 16384'),
    ({'rootVolumeGib': '16385'},
     'kimi-k3:rootVolumeGib=16385 is out of range; use 50 to 16384'),
    ({"vpcCidr": "10.0.0.1/16"},
     "kimi-k3:vpcCidr='10.0.0.1/16' is not a CIDR (10.0.0.1/16 has host bits set); give an IPv4 /16 such as 10.0.0.0/16"),
    ({"apiAccessCidrs": "bad"},
     "kimi-k3:apiAccessCidrs='bad' is not a CIDR ('bad' does not appear to be an IPv4 or IPv6 network); give "
     'CIDRs such as ["203.0.113.0/24"] or 203.0.113.0/24,198.51.100.7/32'),
    ({"apiAccessCidrs": "0.0.0.0/0"},
     "kimi-k3:apiAccessCidrs='0.0.0.0/0' opens to the whole internet; list your own networks (e.g. "
     "203.0.113.10/32), or set kimi-k3:allowInternet=true if the whole internet is meant"),
    ({"vpcId": V, "privateSubnetIds": f"{S1},{S2}", "publicSubnetIds": "subnet-1"},
     "kimi-k3:publicSubnetIds='subnet-1' is not a valid id; give ids such as subnet-0123456789abcdef0"),
    ({**HP, "weightsS3Uri": "s3://bucket-1/k3/"},
     "kimi-k3:weightsS3Uri='s3://bucket-1/k3/' is not wired for kimi-k3:serving=hyperpod (the endpoint config downloads from "
     "Hugging Face); use the hub (unset weightsSource, streamWeights and weightsS3Uri) with serving=hyperpod"),
    ({"namespace": "a" * 64},
     f"kimi-k3:namespace='{'a' * 64}' is not a Kubernetes namespace name; use lower-case letters, digits and '-'"),
]


@pytest.mark.parametrize("kw,message", REFUSALS)
def test_refusals_are_exactly_one_line_naming_key_value_and_fix(kw, message):
    with pytest.raises(ConfigError) as e:
        parse(**kw)
    assert str(e.value) == message


def test_empty_values_mean_unset_and_lists_may_be_lists():
    cfg = parse(maxUpfrontFeeUsd="", vpcId=V, privateSubnetIds=[S1, " ", S2], publicSubnetIds="")
    assert cfg.capacity.max_upfront_fee_usd == 0.0 and cfg.private_subnet_ids == (S1, S2)
    assert cfg.public_subnet_ids == ()
    assert parse(vpcId=V, privateSubnetIds=f"{S1},,{S2},").private_subnet_ids == (S1, S2)
    hp = parse(**HP, vpcId="", systemNodeCount="", servedModelName="K" * 63)
    assert hp.serving == "hyperpod" and hp.vpc_id is None


# ---- merged from test_aws_config_edges_behaviour.py:
# aws-eks keys added since the first behaviour tests, at their edges, with the exact line a user
# reads: the namespace the stack declares (and deletes on destroy) must be its own; HyperPod has no
# acceptance gate to size; start times are UTC whatever the deployer's machine says.
#
# Kubernetes facts: `default` and `kube-*` namespaces exist in every cluster; the add-ons' Helm
# releases own theirs (components/aws_eks/addons.py: kube-system, lws-system).

FIX = "use a namespace of the stack's own, such as kimi-k3 (the default): unset kimi-k3:namespace"
TAIL = "; the stack would declare it as its own and delete it on destroy; " + FIX


@pytest.mark.parametrize("ns", ["default", "kube-system", "kube-public", "kube-node-lease", "kube-x"])
def test_the_clusters_own_namespaces_are_refused(ns):
    with pytest.raises(ConfigError) as e:
        parse(namespace=ns)
    assert str(e.value) == f"kimi-k3:namespace={ns!r} is a namespace of the cluster's own (default, kube-*)" + TAIL


@pytest.mark.parametrize("nodes", ["1", "2"])
def test_the_add_ons_namespace_is_refused_on_any_layout(nodes):
    with pytest.raises(ConfigError) as e:
        parse(namespace="lws-system", nodes=nodes)
    assert str(e.value) == "kimi-k3:namespace='lws-system' is the namespace of the add-ons' Helm release" + TAIL


@pytest.mark.parametrize("ns", ["kimi-k3", "kubeflow", "kube", "k3-default", "lws"])
def test_other_namespaces_are_the_stacks_own(ns):
    assert parse(namespace=ns).namespace == ns


def test_hyperpod_has_no_acceptance_gate_to_size():
    with pytest.raises(ConfigError) as e:
        parse(serving="hyperpod", hyperpodClusterName="hp", acceptLoad="32")
    assert str(e.value) == (
        "kimi-k3:acceptLoad=32 does not apply to kimi-k3:serving=hyperpod (there is no readiness or "
        "acceptance gate on that path); unset it (or set off) and run `python -m components accept "
        "--endpoint URL/v1 --model NAME` once the operator reports the endpoint")
    assert parse(serving="hyperpod", hyperpodClusterName="hp", acceptLoad="off").serving == "hyperpod"


def test_a_hyperpod_cluster_name_that_eks_cannot_have_is_refused():
    with pytest.raises(ConfigError) as e:
        parse(serving="hyperpod", hyperpodClusterName="-bad name")
    assert str(e.value) == ("kimi-k3:hyperpodClusterName='-bad name' is not an EKS cluster name; give the EKS "
                            "cluster's name as `aws eks list-clusters` shows it (letters, digits, '-', '_'; up to 100)")


def test_your_bucket_is_kept_as_given():
    assert parse(weightsSource="s3", weightsS3Uri="s3://my-bucket/k3").weights_s3_uri == "s3://my-bucket/k3"
    assert parse().weights_s3_uri is None


@pytest.mark.parametrize("given,utc", [("2026-12-01T19:30:00+08:00", "2026-12-01T11:30:00Z"),
                                       ("2026-12-01T11:30:00Z", "2026-12-01T11:30:00Z"),
                                       ("2026-12-01T11:30:00", "2026-12-01T11:30:00Z")])
def test_start_times_are_utc_on_a_machine_in_utc_plus_8(shanghai, given, utc):
    """A time without a zone means UTC (as AWS reads it), not the deployer's local time."""
    assert parse(capacityEarliestStart=given).capacity.earliest_start == utc


def test_the_chart_facts_are_the_data_yaml_safe_load_reads():
    """addons.facts() parses with libyaml's loader when PyYAML has it: the same data."""
    import yaml

    from components.aws_eks import addons

    assert addons.facts() == yaml.safe_load(addons.FACTS_FILE.read_text())


def test_the_instance_type_grammar_takes_every_type_of_the_pinned_ec2_model_and_knows_gravitons():
    import botocore.session

    types = botocore.session.get_session().get_service_model("ec2").shape_for("InstanceType").enum
    assert [t for t in types if not c._INSTANCE_TYPE.fullmatch(t)] == []
    # AWS's list of Graviton families (aws/aws-graviton-getting-started README.md), each in the model
    graviton = ["c6g", "c6gd", "m6g", "m6gd", "r6g", "r6gd", "t4g", "x2gd", "c6gn", "i4g", "im4gn", "is4gen", "g5g",
                "c7g", "c7gd", "c7gn", "m7g", "m7gd", "r7g", "r7gd", "r8g", "a1"]
    for family in graviton:
        sized = [t for t in types if t.split(".")[0] == family]
        assert sized and all(c._GRAVITON.match(t) for t in sized), family
    x86 = ["m7i.xlarge", "m7i-flex.large", "m7a.xlarge", "c7i.2xlarge", "m6in.xlarge", "r7iz.large", "t3.large",
           "m5zn.large", "c5n.xlarge", "g6e.xlarge", "p6-b300.48xlarge", "u-12tb1.112xlarge", "m8azn.large"]
    assert [t for t in x86 if t not in types or c._GRAVITON.match(t)] == []


def test_a_kms_key_of_another_region_is_refused_and_its_own_region_passes():
    arn = "arn:aws:kms:us-west-2:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"
    assert parse(kmsKeyArn=arn).kms_key_arn == arn  # the grammar takes it; the region is checked with aws:region
    err = c.kms_region_refusal(arn, "us-east-2")
    assert str(err) == (f"kimi-k3:kmsKeyArn={arn!r} is in us-west-2, not in aws:region (us-east-2): EKS encrypts "
                        "secrets only with a KMS key of the cluster's region; use a key in us-east-2 (or unset it: "
                        "kimi-k3 then creates one)")
    assert c.kms_region_refusal(arn, "us-west-2") is None and c.kms_region_refusal(None, "us-east-2") is None
    assert c.kms_region_refusal("arn:aws:kms:us-east-2:111122223333:alias/eks", "us-east-2") is None


@pytest.mark.parametrize("region", ["us-east-2", "eu-central-1", "ap-southeast-5", "mx-central-1", "eu-central-3"])
def test_a_region_of_the_aws_partition_passes(region):
    from components.aws_eks.config import region_refusal

    assert region_refusal(region) is None


@pytest.mark.parametrize("region,problem", [
    ("cn-north-1", "is in aws-cn: kimi-k3 supports the aws partition only"),
    ("us-gov-west-1", "is in aws-us-gov"),
    ("us-isob-east-1", "is in an AWS ISO partition"),
    ("eusc-de-east-1", "is in aws-eusc"),
    ("us-east-2\n", "is not an AWS region name"),
    ("us-east-2x", "is not an AWS region name"),
    ("x.evil.example#", "is not an AWS region name"),
    ("us-éast-2", "is not an AWS region name"),
])
def test_another_partition_or_not_a_region_is_one_line(region, problem):
    from components.aws_eks.config import region_refusal

    text = str(region_refusal(region))
    assert text.startswith(f"aws:region={region!r} {problem}") and "\n" not in text.replace(repr(region), "")
    assert "pulumi config set aws:region us-east-2" in text


def test_the_program_stops_on_another_partition_before_anything_is_created():
    from pulumi import RunError

    from components.offline.runner import run_program

    with pytest.raises((RunError, Exception), match="aws:region='cn-north-1' is in aws-cn"):
        run_program("aws-eks", {"aws:region": "cn-north-1"})
