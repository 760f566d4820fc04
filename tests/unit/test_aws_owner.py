"""The Capacity Block's owner is a token the stack keeps in its state, not its names
(components/aws_eks/owner.py, capacity.purchase/stack_blocks): two stacks with the same
organization/project/stack names never adopt each other's block."""

from datetime import timedelta

import boto3
from botocore.stub import ANY, Stubber

from components.aws_eks import capacity as cap
from components.aws_eks.owner import StackOwnerProvider
from tests.unit.test_aws_capacity import ITYPE, LOOKUP, T0, offer_api, reservation_api

NOW = T0 - timedelta(days=2)
NAMES = "organization/kimi-k3/aws-eks"  # what two users of the shipped stack both have


def test_the_token_is_random_once_and_never_changes():
    p = StackOwnerProvider()
    a, b = p.create({}), p.create({})
    assert a.id != b.id and len(a.id) == 32 and a.outs["ownerToken"] == a.id
    assert p.diff(a.id, a.outs, {}).changes is False  # a new token would orphan the bought block
    assert p.read(a.id, {}).outs["ownerToken"] == a.id


def test_a_block_tagged_by_another_stack_of_the_same_names_is_never_adopted():
    mine, theirs = StackOwnerProvider().create({}).id, StackOwnerProvider().create({}).id
    client = boto3.client("ec2", region_name="us-east-2", aws_access_key_id="t", aws_secret_access_key="t")
    foreign = reservation_api("cr-0bbbbbbbbbbbbbbbb", state="active",
                              tags=[{"Key": cap.IDENTITY_TAG, "Value": theirs}, {"Key": "Name", "Value": f"kimi-k3 {NAMES}"}])
    bought = reservation_api("cr-0aaaaaaaaaaaaaaaa", tags=[{"Key": cap.IDENTITY_TAG, "Value": mine}])
    props = {"instanceType": ITYPE, "instanceCount": 1, "durationHours": 24, "stackIdentity": mine,
             "stackName": NAMES, "earliestStart": "2026-12-01T00:00:00Z", "maxUpfrontFeeUsd": 90_000}
    with Stubber(client) as stub:
        stub.add_response("describe_capacity_reservations", {"CapacityReservations": [foreign]}, LOOKUP)
        stub.add_response("describe_capacity_block_offerings", {"CapacityBlockOfferings": [offer_api("cb-a", 80_000)]},
                          {"InstanceType": ITYPE, "InstanceCount": 1, "CapacityDurationHours": 24,
                           "StartDateRange": ANY})
        # the purchase carries the token for matching and the names only as its Name
        stub.add_response("purchase_capacity_block", {"CapacityReservation": bought}, {
            "CapacityBlockOfferingId": "cb-a", "InstancePlatform": "Linux/UNIX",
            "TagSpecifications": [{"ResourceType": "capacity-reservation", "Tags": [
                {"Key": cap.IDENTITY_TAG, "Value": mine}, {"Key": "Name", "Value": f"kimi-k3 {NAMES}"}]}]})
        out = cap.acquire(client, props, NOW)
        stub.assert_no_pending_responses()
    assert out["reservation_id"] == "cr-0aaaaaaaaaaaaaaaa" and out["purchased"] is True
