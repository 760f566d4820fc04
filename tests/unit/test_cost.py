"""Cost as pure logic: parts counted from what the program registers, each priced from the dated
catalog or stated unknown (never guessed), a total only when everything is priced or contracted."""

import math

import pytest

from components.cost import estimate as est
from components.cost.prices import PRICES, price

AWS = [
    {"type": "eks:index:Cluster", "name": "k-eks", "inputs": {}},
    {"type": "aws:ec2/natGateway:NatGateway", "name": "k-nat", "inputs": {}},
    {"type": "aws:ec2/eip:Eip", "name": "k-nat-ip", "inputs": {}},
    {"type": "aws:eks/nodeGroup:NodeGroup", "name": "k-system",
     "inputs": {"capacityType": "ON_DEMAND", "instanceTypes": ["m7i.xlarge"],
                "scalingConfig": {"desiredSize": 2, "maxSize": 3, "minSize": 2}}},
    {"type": "aws:eks/nodeGroup:NodeGroup", "name": "k-gpu",
     "inputs": {"capacityType": "CAPACITY_BLOCK", "scalingConfig": {"desiredSize": 0, "maxSize": 2}}},
    {"type": "aws:s3/bucket:Bucket", "name": "k-weights", "inputs": {}},
]
CTYUN = [{"type": "pulumi-python:dynamic/ctyun:HccClusterOrder", "name": "k-order",
          "inputs": {"computeNodeCount": 3, "storageType": "sfs", "storageSizeGB": 500,
                     "sfsType": "performance", "eipBandwidthMbps": 100}}]


def by_key(cost):
    return {p["key"]: p for p in cost["parts"]}


def test_every_price_has_a_source_and_a_date_or_is_unknown():
    for p in PRICES.values():
        assert p.source
        if p.usd_per_hour is None:
            assert p.read == ""
        else:
            assert p.usd_per_hour > 0 and len(p.read) == 10 and p.source.startswith("https://")


def test_aws_default_parts_known_floor_and_unknown_total():
    c = est.estimate("aws-eks", AWS, "p6-b300.48xlarge", 1)
    parts = by_key(c)
    assert parts["aws:eks-control-plane"]["usd_per_hour"] == 0.10
    assert parts["aws:nat-gateway"]["usd_per_hour"] == 0.045
    assert parts["aws:public-ipv4"]["usd_per_hour"] == 0.005
    assert parts["aws:ec2:m7i.xlarge"]["quantity"] == 2
    assert parts["aws:ec2:p6-b300.48xlarge"]["quantity"] == 2  # every replica's node while the block runs
    assert c["usd_per_hour"] is None and c["known_usd_per_hour"] == 0.15
    assert c["unknown"] == ["aws:ec2:m7i.xlarge", "aws:ec2:p6-b300.48xlarge", "aws:s3-storage"]
    assert "no public price for aws:ec2:m7i.xlarge" in c["source"]


def test_ctyun_default_parts_are_all_unknown():
    c = est.estimate("ctyun-hcc", CTYUN, "atlas-800-a3", 4)
    assert [p["key"] for p in c["parts"]] == ["ctyun:atlas-800-a3", "ctyun:sfs", "ctyun:eip"]
    assert by_key(c)["ctyun:atlas-800-a3"]["quantity"] == 4
    assert c["usd_per_hour"] is None and c["known_usd_per_hour"] == 0


def test_a_master_outside_the_serving_nodes_is_a_part():
    order = [{**CTYUN[0], "inputs": {**CTYUN[0]["inputs"], "computeNodeCount": 4}}]
    assert by_key(est.estimate("ctyun-hcc", order, "atlas-800-a3", 4))["ctyun:ehpc-master"]["quantity"] == 1


def test_a_contract_is_the_total_and_the_parts_stay():
    c = est.estimate("ctyun-hcc", CTYUN, "atlas-800-a3", 4, 98.5)
    assert c["usd_per_hour"] == 98.5 and c["contract_usd_per_hour"] == 98.5
    assert c["source"] == "contracted price (kimi-k3:usdPerHour)" and len(c["parts"]) == 3


def test_a_fully_priced_stack_has_a_total(monkeypatch):
    c = est.estimate("aws-eks", AWS[:3], "p6-b300.48xlarge", 1)  # no node groups, no bucket
    assert c["unknown"] == ["aws:ec2:p6-b300.48xlarge"]
    monkeypatch.setitem(PRICES, "aws:ec2:p6-b300.48xlarge",
                        price("aws:ec2:p6-b300.48xlarge").__class__(
                            "aws:ec2:p6-b300.48xlarge", "x", "instance-hour", 10.0, "https://t", "2026-12-01"))
    c = est.estimate("aws-eks", AWS[:3], "p6-b300.48xlarge", 1)
    assert c["usd_per_hour"] == pytest.approx(10.15) and c["unknown"] == []


@pytest.mark.parametrize("bad", [0, -1, math.nan, math.inf, -math.inf, True, "98", None.__class__])
def test_a_contract_that_is_not_a_price_is_refused(bad):
    with pytest.raises(ValueError, match=r"kimi-k3:usdPerHour .* is not a price; give the stack's "
                                         r"contracted USD per hour as a positive number"):
        est.estimate("aws-eks", AWS, "p6-b300.48xlarge", 1, bad)


def test_junk_resource_inputs_count_as_nothing():
    junk = [{"type": "aws:eks/nodeGroup:NodeGroup", "name": "x",
             "inputs": {"capacityType": "ON_DEMAND", "instanceTypes": "m7i.xlarge",
                        "scalingConfig": {"desiredSize": -3}}},
            {"type": "aws:eks/nodeGroup:NodeGroup", "name": "y", "inputs": None},
            {"type": "aws:eks/nodeGroup:NodeGroup", "name": "z",
             "inputs": {"capacityType": "CAPACITY_BLOCK", "scalingConfig": {"maxSize": True}}},
            {"type": "pulumi-python:dynamic/ctyun:HccClusterOrder", "name": "o",
             "inputs": {"computeNodeCount": "9", "eipBandwidthMbps": -1}}]
    aws = est.estimate("aws-eks", junk, "p6-b300.48xlarge", 1)
    assert [p["key"] for p in aws["parts"]] == ["aws:ec2:p6-b300.48xlarge"]
    assert aws["parts"][0]["quantity"] == 1  # the plan's nodes
    assert [p["key"] for p in est.estimate("ctyun-hcc", junk, "atlas-800-a3", 2)["parts"]] == \
        ["ctyun:atlas-800-a3"]


def test_an_item_missing_from_the_catalog_is_unknown_not_free():
    c = est.estimate("aws-eks", [{"type": "aws:eks/nodeGroup:NodeGroup", "name": "s",
                                  "inputs": {"capacityType": "ON_DEMAND", "instanceTypes": ["zz9.huge"],
                                             "scalingConfig": {"desiredSize": 1}}}], "p5.48xlarge", 1)
    part = by_key(c)["aws:ec2:zz9.huge"]
    assert part["usd_per_hour"] is None and part["source"] == "not in the price catalog"


def test_unknown_target_is_refused():
    with pytest.raises(KeyError, match="gcp"):
        est.estimate("gcp", [], "x", 1)


def test_summary_lines():
    assert est.summary_line(est.estimate("ctyun-hcc", CTYUN, "atlas-800-a3", 4, 98.5)) == \
        "$98.50/h (contracted price (kimi-k3:usdPerHour))"
    line = est.summary_line(est.estimate("aws-eks", AWS, "p6-b300.48xlarge", 1))
    assert line.startswith("unknown: at least $0.15/h known (EKS control plane")
    assert "no public price for EC2 m7i.xlarge on demand (system nodes) x2" in line
