"""A changed request (accelerator, nodes x replicas) and the next block, in the Capacity Block
provider's diff/update (issue 9 item 5): adopted blocks are re-checked, a bought block is never
bought again while it runs, and the next purchase prefers the ended block's zone.

EC2 is botocore's Stubber on the real EC2 service model; a purchase that is not expected makes
the Stubber fail, so "nothing was bought" is checked, not assumed.
"""

from datetime import timedelta

import boto3
import pytest
from botocore.stub import ANY, Stubber

from components.aws_eks import capacity as cap
from tests.unit.test_aws_capacity import IDENTITY, ITYPE, LOOKUP, STACK_TAGS, T0, offer_api, reservation_api

CR = "cr-0123456789abcdef0"
NOW = T0 + timedelta(hours=2)  # the block (T0 .. T0+24h) runs


@pytest.fixture
def ec2(monkeypatch):
    client = boto3.client("ec2", region_name="us-east-2", aws_access_key_id="testing",
                          aws_secret_access_key="testing")
    monkeypatch.setattr(cap, "ec2_client", lambda props, max_attempts=5: client)
    monkeypatch.setattr(cap, "_now", lambda: NOW)
    with Stubber(client) as stub:
        yield stub
        stub.assert_no_pending_responses()


def state(**kw):
    """A CapacityBlock's state after create: inputs, then the block's outputs."""
    block = cap.Block.from_api(reservation_api(CR, state="active", count=kw.pop("held", 1)))
    inputs = {"region": "us-east-2", "instanceType": ITYPE, "instanceCount": kw.pop("asked", 1),
              "reservationId": kw.pop("reservationId", CR)}
    outs = {**block.outputs(), "purchased": kw.get("stackIdentity") is not None, "upfront_fee_usd": None,
            "requested": cap.requested(inputs)}
    return {**inputs, **kw, **outs}


def news(old, **kw):
    """The program's next inputs (a bought block's state holds its id as an output only)."""
    keep = {k: old[k] for k in ("region", "maxUpfrontFeeUsd", "durationHours", "stackIdentity") if k in old}
    return {**keep, "reservationId": None if old["purchased"] else CR, "instanceType": ITYPE,
            "instanceCount": 1, "__provider": "x", **kw}


def describe(stub, count=1, itype=ITYPE):
    stub.add_response("describe_capacity_reservations", {"CapacityReservations": [
        reservation_api(CR, state="active", count=count, itype=itype)]}, {"CapacityReservationIds": [CR]})


# ---------------------------------------------------------------- adopted

def test_adopted_a_larger_request_is_an_update_that_rechecks_the_block(ec2):
    p = cap.CapacityBlockProvider()
    old = state()
    new = news(old, instanceCount=2)
    d = p.diff(CR, old, new)
    assert d.changes and d.replaces == []  # not another block: the same one, checked again
    describe(ec2, count=1)
    with pytest.raises(cap.CapacityError) as e:
        p.update(CR, old, new)
    assert str(e.value).startswith(f"kimi-k3:capacityReservationId='{CR}' holds only 1 instances")


def test_adopted_another_accelerator_fails_naming_what_the_block_holds(ec2):
    p = cap.CapacityBlockProvider()
    old = state()
    new = news(old, instanceType="p6-b200.48xlarge")
    assert p.diff(CR, old, new).changes
    describe(ec2)
    with pytest.raises(cap.CapacityError, match=f"holds {ITYPE}"):
        p.update(CR, old, new)


def test_adopted_a_request_the_block_holds_passes_and_is_remembered(ec2):
    p = cap.CapacityBlockProvider()
    old = state(held=2, asked=1)
    new = news(old, instanceCount=2)
    assert p.diff(CR, old, new).changes
    describe(ec2, count=2)
    outs = p.update(CR, old, new).outs
    assert outs["requested"] == {"instance_type": ITYPE, "instance_count": 2} and outs["instance_count"] == 2
    assert p.diff(CR, outs, news(outs, instanceCount=2)).changes is False  # nothing left to do


# ---------------------------------------------------------------- bought

BOUGHT = dict(reservationId=None, maxUpfrontFeeUsd=90_000, durationHours=24, stackIdentity=IDENTITY)


def test_bought_a_request_the_block_cannot_hold_is_refused_at_preview_and_never_buys(ec2):
    p = cap.CapacityBlockProvider()
    old = state(**BOUGHT)
    with pytest.raises(cap.CapacityError) as e:
        p.diff(CR, old, news(old, instanceCount=2))  # no EC2 call at all (the Stubber has none)
    msg = str(e.value)
    assert msg.startswith(f"kimi-k3:nodes='2 x {ITYPE}' does not fit Capacity Block {CR}")
    assert "a purchase cannot be cancelled" in msg and "capacityReservationId" in msg and "\n" not in msg
    with pytest.raises(cap.CapacityError, match="kimi-k3:accelerator="):
        p.diff(CR, old, news(old, instanceType="p6-b200.48xlarge"))


def test_bought_a_smaller_request_rechecks_without_buying(ec2):
    p = cap.CapacityBlockProvider()
    old = state(held=2, asked=2, **BOUGHT)
    new = news(old, instanceCount=1)
    assert p.diff(CR, old, new).changes
    describe(ec2, count=2)  # only a describe: a purchase would find no stubbed response
    outs = p.update(CR, old, new).outs
    assert outs["reservation_id"] == CR and outs["requested"]["instance_count"] == 1


def test_bought_the_next_block_prefers_the_ended_blocks_zone_within_the_cap(ec2, monkeypatch):
    p = cap.CapacityBlockProvider()
    old = state(**BOUGHT)  # in us-east-2b
    later = T0 + timedelta(days=3)
    monkeypatch.setattr(cap, "_now", lambda: later)  # it has ended
    new = news(old)
    d = p.diff(CR, old, new)
    assert d.changes and d.replaces == []  # an update: it knows the old zone
    offers = [offer_api("cb-c", 70_000, start=later + timedelta(days=1), az="us-east-2c"),
              offer_api("cb-b", 85_000, start=later + timedelta(days=1), az="us-east-2b")]
    ec2.add_response("describe_capacity_reservations", {"CapacityReservations": []}, LOOKUP)
    ec2.add_response("describe_capacity_block_offerings", {"CapacityBlockOfferings": offers}, {
        "InstanceType": ITYPE, "InstanceCount": 1, "CapacityDurationHours": 24})
    bought = reservation_api("cr-0bbbbbbbbbbbbbbbb", start=later + timedelta(days=1), tags=STACK_TAGS)
    ec2.add_response("purchase_capacity_block", {"CapacityReservation": bought}, {
        "CapacityBlockOfferingId": "cb-b", "InstancePlatform": "Linux/UNIX", "TagSpecifications": ANY})
    outs = p.update(CR, old, new).outs
    assert outs["reservation_id"] == "cr-0bbbbbbbbbbbbbbbb" and outs["upfront_fee_usd"] == 85_000
    # read follows the block held, not the resource's first id
    ec2.add_response("describe_capacity_reservations", {"CapacityReservations": [bought]},
                     {"CapacityReservationIds": ["cr-0bbbbbbbbbbbbbbbb"]})
    assert p.read(CR, outs).outs["reservation_id"] == "cr-0bbbbbbbbbbbbbbbb"


def test_zone_preference_never_beats_the_fee_cap():
    offers = [cap.Offering.from_api(o) for o in (offer_api("cb-c", 70_000, az="us-east-2c"),
                                                 offer_api("cb-b", 95_000, az="us-east-2b"))]
    assert cap.choose_offering(offers, ITYPE, 1, 24, "us-east-2b", 90_000).offering_id == "cb-c"
    assert cap.choose_offering(offers, ITYPE, 1, 24, "us-east-2b", 99_000).offering_id == "cb-b"
    assert cap.choose_offering(offers, ITYPE, 1, 24).offering_id == "cb-c"  # no preference: cheapest
