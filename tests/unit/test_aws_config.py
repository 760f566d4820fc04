"""aws-eks target keys: defaults, every refusal is one line naming key, value and fix."""

import pytest

from components.aws_eks import config as c
from components.inference.errors import ConfigError
from components.config.shared import parse_settings

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
