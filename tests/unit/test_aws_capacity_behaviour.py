"""Capacity Block decisions (pure parts of components/aws_eks/capacity.py) at their edges.

Field names and shapes are the EC2 API's (DescribeCapacityBlockOfferings' CapacityBlockOffering,
DescribeCapacityReservations' CapacityReservation); AWS stops a block's instances 30 minutes
before its end (EC2 User Guide, "Capacity Blocks").
"""

from datetime import datetime, timedelta, timezone

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError

from components.aws_eks import capacity as cap

T0 = datetime(2026, 12, 10, 11, 30, tzinfo=timezone.utc)


def _offering(**kw):
    d = {"CapacityBlockOfferingId": "cb-1", "InstanceType": "p6-b300.48xlarge", "AvailabilityZone": "us-east-2a",
         "InstanceCount": 2, "StartDate": "2026-12-10T11:30:00Z", "EndDate": "2026-12-11T11:30:00Z",
         "CapacityBlockDurationHours": 24, "UpfrontFee": "1234.5", "ZoneType": "availability-zone", **kw}
    return cap.Offering.from_api(d)


def _block(**kw):
    d = {"CapacityReservationId": "cr-1", "InstanceType": "p6-b300.48xlarge", "AvailabilityZone": "us-east-2a",
         "TotalInstanceCount": 2, "StartDate": T0, "EndDate": T0 + timedelta(days=1), "State": "scheduled",
         "ReservationType": "capacity-block", **kw}
    return cap.Block.from_api(d)


def test_offering_fields_from_the_api_with_their_defaults():
    o = _offering()
    assert o == cap.Offering("cb-1", "p6-b300.48xlarge", "us-east-2a", 2, T0, T0 + timedelta(days=1), 24,
                             1234.5, "USD", 1, False, 0, ("availability-zone",))
    o = _offering(CurrencyCode="EUR", CapacityBlockOfferingSegments=[{}, {}], UltraserverType="u-p6e",
                  CapacityBlockDurationMinutes=30)
    assert (o.currency, o.segments, o.ultraserver, o.extra_minutes) == ("EUR", 2, True, 30)
    assert o.describe() == "cb-1 2 x p6-b300.48xlarge in us-east-2a 2026-12-10T11:30:00Z..2026-12-11T11:30:00Z $1,234.50"


def test_block_fields_tags_and_outputs():
    b = _block(Tags=[{"Key": "kimi-k3:stack", "Value": "o/p/s"}, {"Key": "x"}])
    assert b.tag("kimi-k3:stack") == "o/p/s" and b.tag("x") == "" and b.tag("nope") is None
    assert b.outputs() == {"reservation_id": "cr-1", "instance_type": "p6-b300.48xlarge",
                           "availability_zone": "us-east-2a", "instance_count": 2,
                           "start_date": "2026-12-10T11:30:00Z", "end_date": "2026-12-11T11:30:00Z",
                           "state": "scheduled", "instances_stop_at": "2026-12-11T11:00:00Z"}
    plain = cap.Block.from_api({k: v for k, v in {
        "CapacityReservationId": "cr-2", "InstanceType": "p5.48xlarge", "AvailabilityZone": "z",
        "TotalInstanceCount": 1, "StartDate": T0, "EndDate": T0, "State": "active"}.items()})
    assert plain.reservation_type == "default" and plain.tags == ()  # EC2's default: On-Demand


def test_times_are_utc_whatever_they_came_as():
    assert cap.fmt(datetime(2026, 12, 10, 19, 30, tzinfo=timezone(timedelta(hours=8)))) == "2026-12-10T11:30:00Z"
    assert cap.fmt(datetime(2026, 12, 10, 11, 30)) == "2026-12-10T11:30:00Z"
    assert cap._utc("2026-12-10T19:30:00+08:00") == T0


def test_the_cheapest_plain_offering_of_the_exact_shape_wins():
    base = dict(InstanceCount=2)
    offers = [
        _offering(CapacityBlockOfferingId="cheap-wrong-type", InstanceType="p5.48xlarge", UpfrontFee="1"),
        _offering(CapacityBlockOfferingId="cheap-too-small", InstanceCount=1, UpfrontFee="1"),
        _offering(CapacityBlockOfferingId="cheap-other-duration", CapacityBlockDurationHours=48, UpfrontFee="1"),
        _offering(CapacityBlockOfferingId="cheap-eur", CurrencyCode="EUR", UpfrontFee="1"),
        _offering(CapacityBlockOfferingId="cheap-segments", CapacityBlockOfferingSegments=[{}, {}], UpfrontFee="1"),
        _offering(CapacityBlockOfferingId="cheap-ultra", UltraserverType="u", UpfrontFee="1"),
        _offering(CapacityBlockOfferingId="cheap-minutes", CapacityBlockDurationMinutes=30, UpfrontFee="1"),
        _offering(CapacityBlockOfferingId="b-late", StartDate="2026-12-12T11:30:00Z", UpfrontFee="500", **base),
        _offering(CapacityBlockOfferingId="c-early", UpfrontFee="500", **base),
        _offering(CapacityBlockOfferingId="a-early", UpfrontFee="500", **base),
        _offering(CapacityBlockOfferingId="bigger", InstanceCount=4, UpfrontFee="900"),
    ]
    assert cap.choose_offering(offers, "p6-b300.48xlarge", 2, 24).offering_id == "a-early"
    assert cap.choose_offering(offers[-1:], "p6-b300.48xlarge", 2, 24).offering_id == "bigger"
    with pytest.raises(cap.CapacityError) as e:
        cap.choose_offering(offers[:7], "p6-b300.48xlarge", 2, 24)
    assert str(e.value) == ("kimi-k3:capacityEarliestStart (not set) has no Capacity Block offering of 2 x "
                            "p6-b300.48xlarge for 24 h; widen capacityEarliestStart/capacityLatestStart, change "
                            "capacityDurationHours or try another aws:region")


def test_the_fee_guard_lets_the_exact_fee_through_and_lists_every_offer_above_it():
    a, b = _offering(CapacityBlockOfferingId="a", UpfrontFee="1000.4"), _offering(CapacityBlockOfferingId="b", UpfrontFee="2000")
    cap.fee_guard(a, [b, a], 1000.4)
    with pytest.raises(cap.CapacityError) as e:
        cap.fee_guard(a, [b, a], 1000.39)
    assert e.value.key == "kimi-k3:maxUpfrontFeeUsd" and e.value.value == 1000.39
    assert str(e.value) == (
        "kimi-k3:maxUpfrontFeeUsd=1000.39 is below the cheapest fitting offer ($1,000.40); raise it to at least "
        "1001 to buy the cheapest, or adopt a reservation with capacityReservationId (offers: "
        "a 2 x p6-b300.48xlarge in us-east-2a 2026-12-10T11:30:00Z..2026-12-11T11:30:00Z $1,000.40; "
        "b 2 x p6-b300.48xlarge in us-east-2a 2026-12-10T11:30:00Z..2026-12-11T11:30:00Z $2,000.00)")


@pytest.mark.parametrize("kw,now,message", [
    ({"ReservationType": "default"}, T0,
     "kimi-k3:capacityReservationId='cr-1' is an On-Demand reservation; give a Capacity Block reservation"),
    ({"InstanceType": "p5.48xlarge"}, T0,
     "kimi-k3:capacityReservationId='cr-1' holds p5.48xlarge; use a block of p6-b300.48xlarge or change "
     "kimi-k3:accelerator"),
    ({"TotalInstanceCount": 1}, T0,
     "kimi-k3:capacityReservationId='cr-1' holds only 1 instances; use a block of at least 2 instances or lower "
     "kimi-k3:nodes/replicas"),
    ({"State": "expired"}, T0,
     "kimi-k3:capacityReservationId='cr-1' is expired (ends 2026-12-11T11:30:00Z); buy or adopt a block that "
     "has not ended"),
    ({}, T0 + timedelta(days=1, minutes=-30),
     "kimi-k3:capacityReservationId='cr-1' is scheduled (ends 2026-12-11T11:30:00Z); buy or adopt a block "
     "that has not ended"),
])
def test_an_adopted_block_must_be_a_live_block_of_the_right_shape(kw, now, message):
    with pytest.raises(cap.CapacityError) as e:
        cap.check_block(_block(**kw), "p6-b300.48xlarge", 2, now)
    assert str(e.value) == message


def test_usable_blocks_pass_until_half_an_hour_before_their_end():
    for state in ("payment-pending", "scheduled", "active"):
        cap.check_block(_block(State=state, TotalInstanceCount=3), "p6-b300.48xlarge", 2,
                        T0 + timedelta(days=1, minutes=-31))
    end = T0 + timedelta(days=1)
    assert not cap.ended(end, end - timedelta(minutes=31))
    assert cap.ended(end, end - timedelta(minutes=30)) and cap.ended("2026-12-11T11:30:00Z", end)


def test_adoptable_needs_our_tag_and_a_live_block_of_the_shape():
    mine = dict(Tags=[{"Key": cap.IDENTITY_TAG, "Value": "o/p/s"}])
    ok = _block(**mine)
    assert cap.adoptable(ok, "o/p/s", "p6-b300.48xlarge", 2, T0)
    assert not cap.adoptable(ok, "o/p/other", "p6-b300.48xlarge", 2, T0)
    assert not cap.adoptable(_block(), "o/p/s", "p6-b300.48xlarge", 2, T0)
    assert not cap.adoptable(ok, "o/p/s", "p5.48xlarge", 2, T0)
    assert not cap.adoptable(ok, "o/p/s", "p6-b300.48xlarge", 3, T0)
    assert not cap.adoptable(_block(State="cancelled", **mine), "o/p/s", "p6-b300.48xlarge", 2, T0)
    assert not cap.adoptable(_block(ReservationType="default", **mine), "o/p/s", "p6-b300.48xlarge", 2, T0)
    assert not cap.adoptable(ok, "o/p/s", "p6-b300.48xlarge", 2, T0 + timedelta(days=1, minutes=-30))
    assert cap.adoptable(ok, "o/p/s", "p6-b300.48xlarge", 2, T0 + timedelta(days=1, minutes=-31))


def test_scaling_times_scale_up_only_for_a_later_start_and_down_an_hour_before_the_end():
    end = T0 + timedelta(days=1)
    assert cap.scaling_times(T0, end, T0 - timedelta(seconds=1)) == {
        "scale_up_at": "2026-12-10T11:30:00Z", "scale_down_at": "2026-12-11T10:30:00Z"}
    assert cap.scaling_times(T0, end, T0)["scale_up_at"] is None


def _client_error(status, code):
    return ClientError({"Error": {"Code": code, "Message": "m"}, "ResponseMetadata": {"HTTPStatusCode": status}},
                       "PurchaseCapacityBlock")


@pytest.mark.parametrize("err,definitive", [
    (_client_error(400, "InvalidParameterValue"), True),
    (_client_error(499, "X"), True),
    (_client_error(500, "InternalError"), False),
    (_client_error(503, "Unavailable"), False),
    (_client_error(399, "X"), False),
    (_client_error(0, "DryRunOperation"), True),
    (_client_error(0, "UnauthorizedOperation"), True),
    (ClientError({"Error": {"Code": "UnauthorizedOperation"}}, "PurchaseCapacityBlock"), True),
    (ClientError({}, "PurchaseCapacityBlock"), False),
    (EndpointConnectionError(endpoint_url="https://ec2"), False),
    (TimeoutError(), False),
])
def test_only_a_refusal_means_nothing_was_bought(err, definitive):
    assert cap._definitive(err) is definitive
