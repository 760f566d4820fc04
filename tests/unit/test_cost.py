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
            assert p.read == "" and p.regions == ()
        else:
            assert p.usd_per_hour > 0 and len(p.read) == 10 and p.source.startswith("https://")
            assert p.note  # the figure's words at its source
            assert all(r.count("-") == 2 for r in p.regions)  # region codes, e.g. us-east-1


def test_aws_default_parts_known_floor_and_unknown_total():
    c = est.estimate("aws-eks", AWS, "p6-b300.48xlarge", 1, region="us-east-2", stored_gb=1454)
    parts = by_key(c)
    assert parts["aws:eks-control-plane"]["usd_per_hour"] == 0.10
    assert parts["aws:nat-gateway"]["usd_per_hour"] == 0.045  # "in US East": both US East regions
    assert parts["aws:public-ipv4"]["usd_per_hour"] == 0.005
    assert parts["aws:ec2:m7i.xlarge"]["quantity"] == 2
    # every replica's node while the block runs, priced as a block (not on demand)
    assert parts["aws:capacity-block:p6-b300.48xlarge"]["quantity"] == 2
    assert c["usd_per_hour"] is None and c["known_usd_per_hour"] == 0.15 and c["region"] == "us-east-2"
    assert c["unknown"] == ["aws:ec2:m7i.xlarge", "aws:capacity-block:p6-b300.48xlarge", "aws:s3-storage"]
    assert "no public price for aws:ec2:m7i.xlarge" in c["source"]


def test_a_figure_read_for_us_east_1_prices_only_us_east_1():
    east1 = by_key(est.estimate("aws-eks", AWS, "p6-b300.48xlarge", 1, region="us-east-1", stored_gb=1454))
    assert east1["aws:ec2:m7i.xlarge"]["usd_per_hour"] == pytest.approx(2 * 0.2016)
    assert "karpenter-provider-aws" in east1["aws:ec2:m7i.xlarge"]["source"]
    assert east1["aws:ec2:m7i.xlarge"]["read"] == "2026-12-02"
    assert east1["aws:s3-storage"]["usd_per_hour"] == pytest.approx(1454 * 0.023 / 730, abs=1e-6)
    for region in ("us-east-2", "us-west-2", "eu-west-1", None):
        other = by_key(est.estimate("aws-eks", AWS, "p6-b300.48xlarge", 1, region=region, stored_gb=1454))
        for key in ("aws:ec2:m7i.xlarge", "aws:s3-storage"):
            assert other[key]["usd_per_hour"] is None and other[key]["read"] == "", (region, key)
            assert "us-east-1 only: $" in other[key]["note"] and "not applied" in other[key]["note"]
        assert other["aws:eks-control-plane"]["usd_per_hour"] == 0.10  # one price for every region
    west = by_key(est.estimate("aws-eks", AWS, "p6-b300.48xlarge", 1, region="us-west-2"))
    assert west["aws:nat-gateway"]["usd_per_hour"] is None  # read "in US East" only
    assert west["aws:ec2:m7i.xlarge"]["source"] == "no figure read for us-west-2"


def test_a_capacity_block_never_takes_the_on_demand_price():
    c = est.estimate("aws-eks", AWS, "p6-b300.48xlarge", 1, region="us-east-1", stored_gb=1454)
    block = by_key(c)["aws:capacity-block:p6-b300.48xlarge"]
    assert price("aws:ec2:p6-b300.48xlarge", "us-east-1").usd_per_hour == 142.416  # on demand exists
    assert block["usd_per_hour"] is None and "UpfrontFee" in block["note"]
    assert c["usd_per_hour"] is None and c["unknown"] == ["aws:capacity-block:p6-b300.48xlarge"]


def test_the_mirror_is_priced_per_gb_stored_or_unknown_without_a_size():
    c = est.estimate("aws-eks", AWS, "p6-b300.48xlarge", 1, region="us-east-1", stored_gb=100)
    assert (by_key(c)["aws:s3-storage"]["quantity"], by_key(c)["aws:s3-storage"]["unit"]) == (100, "GB-hour")
    assert by_key(c)["aws:s3-storage"]["usd_per_hour"] == pytest.approx(100 * 0.023 / 730, abs=1e-6)
    for size in (None, 0, -5):
        s3 = by_key(est.estimate("aws-eks", AWS, "p6-b300.48xlarge", 1, region="us-east-1",
                                 stored_gb=size))["aws:s3-storage"]
        assert s3["usd_per_hour"] is None and "the stored size is not known" in s3["note"]


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
    c = est.estimate("aws-eks", AWS[:3], "p6-b300.48xlarge", 1, region="us-east-2")  # no node groups, no bucket
    assert c["unknown"] == ["aws:your-capacity:p6-b300.48xlarge"]  # a HyperPod cluster of the user's
    key = "aws:your-capacity:p6-b300.48xlarge"
    monkeypatch.setitem(PRICES, key, price(key).__class__(key, "x", "instance-hour", 10.0, "https://t",
                                                          "2026-12-01"))
    c = est.estimate("aws-eks", AWS[:3], "p6-b300.48xlarge", 1, region="us-east-2")
    assert c["usd_per_hour"] == pytest.approx(10.15) and c["unknown"] == []
    assert c["source"].startswith("list prices")
    # a contracted price wins over a complete list total
    c = est.estimate("aws-eks", AWS[:3], "p6-b300.48xlarge", 1, 7.25, region="us-east-2")
    assert c["usd_per_hour"] == 7.25 and c["known_usd_per_hour"] == pytest.approx(10.15)


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
    assert [p["key"] for p in aws["parts"]] == ["aws:your-capacity:p6-b300.48xlarge"]
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
    line = est.summary_line(est.estimate("aws-eks", AWS, "p6-b300.48xlarge", 1, region="us-east-2",
                                         stored_gb=1454))
    assert line.startswith("unknown: at least $0.15/h known (EKS control plane")
    assert ("no public price for EC2 m7i.xlarge on demand (system nodes) x2 (a figure for other regions, "
            "none for us-east-2), EC2 p6-b300.48xlarge on a Capacity Block (GPU node) x2, ") in line
    line = est.summary_line(est.estimate("aws-eks", AWS[:4], "p6-b300.48xlarge", 1, region="us-east-1"))
    assert line.startswith("unknown: at least $0.55/h known (") and "m7i.xlarge on demand (system nodes) x2" \
        in line.split(";")[0]


def test_the_blocks_upfront_fee_read_at_run_time_is_its_price():
    """The catalog has no Capacity Block rate (the part stays unknown in plan.json); once a block is
    bought, its fee from AWS is what the stack output capacityCost states, per hour of the block."""
    from types import SimpleNamespace

    from components.aws_eks.config import CapacityRequest
    from components.aws_eks.target import _cost_text

    buy = CapacityRequest(None, 2, 24, None, None, 5000.0)
    plan = SimpleNamespace(usd_per_hour=None)
    assert _cost_text(buy, True, 2400.0, plan, 2) == "$2,400.00 paid upfront ($100.00/h for 24 h)"
    assert _cost_text(buy, False, None, plan, 2).startswith("not bought yet: a 24 h block of 2 instances")
    adopted = CapacityRequest("cr-0123456789abcdef0", 1, 24, None, None, 0.0)
    assert _cost_text(adopted, True, None, plan, 1) == \
        "adopted reservation: prepaid when it was bought (see its upfront fee in the EC2 console)"
