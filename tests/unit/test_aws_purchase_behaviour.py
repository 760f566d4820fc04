"""What a Capacity Block purchase asks AWS for, what it buys, and what it says when it cannot tell.

EC2 is botocore's Stubber on the real EC2 service model: the expected parameters of
DescribeCapacityBlockOfferings are AWS's (EC2 API reference: `StartDateRange` the earliest start,
`EndDateRange` the latest *end* of the block, so the latest start plus the duration).
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from botocore.stub import Stubber

from components.aws_eks import capacity as cap
from tests.unit.test_aws_capacity import (BUY, IDENTITY, ITYPE, LOOKUP, STACK_TAGS, T0, offer_api,
                                          purchase_params, reservation_api)
from tests.unit.test_aws_purchase import ec2_client, lose_purchase_responses

NOW = T0 - timedelta(days=2)
EARLIEST = datetime(2026, 12, 1, 0, 0, tzinfo=timezone.utc)
OFFERS = {"InstanceType": ITYPE, "InstanceCount": 1, "CapacityDurationHours": 24, "StartDateRange": EARLIEST}
OUTPUT_KEYS = {"reservation_id", "instance_type", "availability_zone", "instance_count", "start_date",
               "end_date", "state", "instances_stop_at", "purchased", "upfront_fee_usd", "requested"}


def _bought(rid, zone="us-east-2b", start=T0):
    return {**reservation_api(rid, state="payment-pending", start=start, tags=STACK_TAGS), "AvailabilityZone": zone}


def test_the_latest_start_bounds_the_blocks_end_sent_to_aws():
    props = {**BUY, "latestStart": "2026-12-03T08:00:00+08:00"}
    client = ec2_client()
    with Stubber(client) as stub:
        stub.add_response("describe_capacity_reservations", {"CapacityReservations": []}, LOOKUP)
        stub.add_response("describe_capacity_block_offerings",
                          {"CapacityBlockOfferings": [offer_api("cb-a", 80_000)]},
                          {**OFFERS, "EndDateRange": datetime(2026, 12, 3, 0, 0, tzinfo=timezone.utc)
                           + timedelta(hours=24)})
        stub.add_response("purchase_capacity_block", {"CapacityReservation": _bought("cr-0aaaaaaaaaaaaaaaa")},
                          purchase_params("cb-a"))
        out = cap.acquire(client, props, NOW)
        stub.assert_no_pending_responses()
    assert out["reservation_id"] == "cr-0aaaaaaaaaaaaaaaa" and out["upfront_fee_usd"] == 80_000


@pytest.mark.parametrize("here_fee,want", [
    (95_000, "cb-there"),   # the preferred zone is above the cap: the cheaper one elsewhere
    (90_000, "cb-here"),    # exactly the cap is within it: the node group stays in its zone
])
def test_the_preferred_zone_wins_only_within_the_fee_cap(here_fee, want):
    offers = [offer_api("cb-here", here_fee, az="us-east-2b"), offer_api("cb-there", 85_000, az="us-east-2a")]
    client = ec2_client()
    with Stubber(client) as stub:
        stub.add_response("describe_capacity_reservations", {"CapacityReservations": []}, LOOKUP)
        stub.add_response("describe_capacity_block_offerings", {"CapacityBlockOfferings": offers}, OFFERS)
        stub.add_response("purchase_capacity_block", {"CapacityReservation": _bought("cr-0aaaaaaaaaaaaaaaa")},
                          purchase_params(want))
        cap.acquire(client, BUY, NOW, prefer_zone="us-east-2b")
        stub.assert_no_pending_responses()


def test_without_a_fee_cap_nothing_is_bought_however_cheap():
    props = {k: v for k, v in BUY.items() if k != "maxUpfrontFeeUsd"}
    client = ec2_client()
    with Stubber(client) as stub:
        stub.add_response("describe_capacity_reservations", {"CapacityReservations": []}, LOOKUP)
        stub.add_response("describe_capacity_block_offerings",
                          {"CapacityBlockOfferings": [offer_api("cb-a", 0.5)]}, OFFERS)
        with pytest.raises(cap.CapacityError, match="maxUpfrontFeeUsd"):
            cap.acquire(client, props, NOW)
        stub.assert_no_pending_responses()  # no PurchaseCapacityBlock


def _lost_purchase(client, stub, relooks):
    lose_purchase_responses(client)
    stub.add_response("describe_capacity_reservations", {"CapacityReservations": []}, LOOKUP)
    stub.add_response("describe_capacity_block_offerings",
                      {"CapacityBlockOfferings": [offer_api("cb-a", 80_000, az="us-east-2c")]}, OFFERS)
    stub.add_response("purchase_capacity_block", {"CapacityReservation": _bought("cr-0aaaaaaaaaaaaaaaa")},
                      purchase_params("cb-a"))
    for listed in relooks:
        stub.add_response("describe_capacity_reservations", {"CapacityReservations": listed}, LOOKUP)


def test_a_lost_purchase_never_listed_stops_after_every_relook_naming_what_to_check():
    client = ec2_client()
    sleeps = []
    with Stubber(client) as stub:
        _lost_purchase(client, stub, [[]] * cap.RELOOK_TRIES)
        with pytest.raises(cap.CapacityError) as e:
            cap.acquire(client, BUY, NOW, sleep=sleeps.append)
        stub.assert_no_pending_responses()  # one purchase, RELOOK_TRIES looks, nothing more
    assert sleeps == [cap.RELOOK_INTERVAL_S] * (cap.RELOOK_TRIES - 1)  # no sleep after the last look
    assert str(e.value) == (
        "kimi-k3:maxUpfrontFeeUsd=90000 purchase of cb-a got no answer (ReadTimeoutError) and no tagged "
        "block is listed yet; check the EC2 console (Capacity Reservations) for a block tagged "
        f"{cap.IDENTITY_TAG}={IDENTITY}, then run `pulumi up` again: it adopts that block before it would buy")


def test_a_lost_purchase_adopts_the_listed_block_in_the_offerings_zone():
    other = _bought("cr-0bbbbbbbbbbbbbbbb", zone="us-east-2a", start=T0 - timedelta(hours=1))
    ours = _bought("cr-0cccccccccccccccc", zone="us-east-2c")
    client = ec2_client()
    with Stubber(client) as stub:
        _lost_purchase(client, stub, [[other, ours]])
        out = cap.acquire(client, BUY, NOW, sleep=lambda s: None)
    assert out["reservation_id"] == "cr-0cccccccccccccccc" and out["upfront_fee_usd"] == 80_000


def test_every_way_to_a_block_gives_the_same_outputs():
    client = ec2_client()
    rid = "cr-0aaaaaaaaaaaaaaaa"
    with Stubber(client) as stub:  # adopted by id
        stub.add_response("describe_capacity_reservations",
                          {"CapacityReservations": [reservation_api(rid, state="scheduled")]},
                          {"CapacityReservationIds": [rid]})
        by_id = cap.acquire(client, {**BUY, "reservationId": rid}, NOW)
    with Stubber(client) as stub:  # found again by its tag
        stub.add_response("describe_capacity_reservations", {"CapacityReservations": [_bought(rid)]}, LOOKUP)
        by_tag = cap.acquire(client, BUY, NOW)
    assert set(by_id) == OUTPUT_KEYS and by_id["upfront_fee_usd"] is None and by_id["purchased"] is False
    assert set(by_tag) == OUTPUT_KEYS | {"adopted_by_tag"} and by_tag["upfront_fee_usd"] is None


def test_within_the_preferred_zone_the_cheapest_offering_wins():
    offers = [offer_api("cb-dear", 88_000, az="us-east-2b"), offer_api("cb-cheap", 70_000, az="us-east-2b"),
              offer_api("cb-else", 60_000, az="us-east-2a")]
    client = ec2_client()
    with Stubber(client) as stub:
        stub.add_response("describe_capacity_reservations", {"CapacityReservations": []}, LOOKUP)
        stub.add_response("describe_capacity_block_offerings", {"CapacityBlockOfferings": offers}, OFFERS)
        stub.add_response("purchase_capacity_block", {"CapacityReservation": _bought("cr-0aaaaaaaaaaaaaaaa")},
                          purchase_params("cb-cheap"))
        cap.acquire(client, BUY, NOW, prefer_zone="us-east-2b")
        stub.assert_no_pending_responses()


def test_buying_needs_the_stacks_identity():
    with pytest.raises(ValueError) as e:
        cap.acquire(ec2_client(), {k: v for k, v in BUY.items() if k != "stackIdentity"}, NOW)
    assert str(e.value) == "stackIdentity is required to buy (the program passes it)"


@pytest.mark.parametrize("start", [T0, T0.replace(tzinfo=None), T0.astimezone(timezone(timedelta(hours=8)))])
def test_block_times_are_utc_whatever_the_deployers_zone(shanghai, start):
    """AWS's times (aware, or naive meaning UTC) are kept and printed in UTC on any machine."""
    block = cap.Block.from_api({**reservation_api(), "StartDate": start, "EndDate": start + timedelta(hours=24)})
    out = block.outputs()
    assert (out["start_date"], out["end_date"]) == ("2026-12-01T11:30:00Z", "2026-12-02T11:30:00Z")
    cap.check_block(block, ITYPE, 1, NOW)  # compares with an aware "now" without error


@pytest.mark.parametrize("olds_count,want_count,refused", [(2, 2, False), (2, 1, False), (2, 3, True),
                                                             (None, 1, True)])
def test_a_running_block_holds_the_same_or_a_smaller_request(olds_count, want_count, refused):
    olds = {"instance_type": ITYPE, "reservation_id": "cr-0aaaaaaaaaaaaaaaa", "end_date": "2026-12-02T11:30:00Z"}
    if olds_count is not None:
        olds["instance_count"] = olds_count
    err = cap.request_refusal(olds, {**BUY, "instanceCount": want_count})
    assert (err is not None) is refused
    if refused:
        assert str(err) == (
            f"kimi-k3:nodes='{want_count} x {ITYPE}' does not fit Capacity Block cr-0aaaaaaaaaaaaaaaa that "
            f"this stack bought ({olds_count or 0} x {ITYPE}); a purchase cannot be cancelled, so kimi-k3 "
            "does not buy another while it runs; keep the request the block holds, adopt a block that fits "
            "with kimi-k3:capacityReservationId, or change it after the block ends (2026-12-02T11:30:00Z)")
