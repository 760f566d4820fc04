"""Capacity Blocks: pure offering choice and fee guard on AWS's documented response shapes; boto3
calls checked with botocore's Stubber against the real EC2 service model (no AWS account)."""

import boto3
import pytest
from botocore.exceptions import ClientError, EndpointConnectionError
from botocore.stub import ANY, Stubber
from datetime import datetime, timedelta, timezone
from hypothesis import given, settings, strategies as st

from components.aws_eks import capacity as cap


T0 = datetime(2026, 12, 1, 11, 30, tzinfo=timezone.utc)
ITYPE = "p6-b300.48xlarge"
IDENTITY = "acme/kimi-k3/aws-eks"
OTHER = "acme/kimi-k3/aws-eks-staging"
STACK_TAGS = [{"Key": cap.IDENTITY_TAG, "Value": IDENTITY}, {"Key": "Name", "Value": f"kimi-k3 {IDENTITY}"}]
LOOKUP = {"Filters": [{"Name": "instance-type", "Values": [ITYPE]},
                      {"Name": "state", "Values": ["payment-pending", "scheduled", "active"]}]}
BUY = {"instanceType": ITYPE, "instanceCount": 1, "durationHours": 24, "stackIdentity": IDENTITY,
       "earliestStart": "2026-12-01T00:00:00Z", "maxUpfrontFeeUsd": 90_000}


def offer_api(oid, fee, start=T0, count=1, hours=24, az="us-east-2b", itype=ITYPE, zone="availability-zone"):
    # the shape of one DescribeCapacityBlockOfferings item, as documented (UpfrontFee is a string;
    # ZoneType is in the model since the pinned botocore; zone=None leaves it out)
    d = {"CapacityBlockOfferingId": oid, "InstanceType": itype, "AvailabilityZone": az,
         "InstanceCount": count, "StartDate": start, "EndDate": start + timedelta(hours=hours),
         "CapacityBlockDurationHours": hours, "UpfrontFee": f"{fee:.2f}", "CurrencyCode": "USD",
         "Tenancy": "default"}
    if zone is not None:
        d["ZoneType"] = zone
    return d


def reservation_api(rid="cr-0123456789abcdef0", state="scheduled", count=1, itype=ITYPE,
                    start=T0, hours=24, rtype="capacity-block", tags=None):
    r = {"CapacityReservationId": rid, "InstanceType": itype, "InstancePlatform": "Linux/UNIX",
         "AvailabilityZone": "us-east-2b", "TotalInstanceCount": count, "AvailableInstanceCount": count,
         "State": state, "StartDate": start, "EndDate": start + timedelta(hours=hours),
         "ReservationType": rtype, "Tenancy": "default", "InstanceMatchCriteria": "targeted"}
    if tags is not None:
        r["Tags"] = tags
    return r


def purchase_params(oid):
    return {"CapacityBlockOfferingId": oid, "InstancePlatform": "Linux/UNIX",
            "TagSpecifications": [{"ResourceType": "capacity-reservation", "Tags": STACK_TAGS}]}


@pytest.fixture
def ec2():
    client = boto3.client("ec2", region_name="us-east-2", aws_access_key_id="testing",
                          aws_secret_access_key="testing")
    with Stubber(client) as stub:
        yield client, stub
        stub.assert_no_pending_responses()


def _offers(*items):
    return [cap.Offering.from_api(o) for o in items]


def test_choose_cheapest_that_fits_then_earliest():
    offers = _offers(offer_api("cb-a", 90_000), offer_api("cb-b", 80_000, start=T0 + timedelta(days=2)),
                     offer_api("cb-c", 80_000, start=T0 + timedelta(days=1)),
                     offer_api("cb-d", 10_000, itype="p5.48xlarge"),
                     offer_api("cb-e", 10_000, count=1, hours=48))
    chosen = cap.choose_offering(offers, ITYPE, 1, 24)
    assert chosen.offering_id == "cb-c"


def test_choose_refuses_when_nothing_fits():
    with pytest.raises(cap.CapacityError) as e:
        cap.choose_offering(_offers(offer_api("cb-a", 1, count=1)), ITYPE, 2, 24)
    assert "no Capacity Block offering of 2 x p6-b300.48xlarge" in str(e.value)


def test_fee_guard_lists_offers_with_prices():
    offers = _offers(offer_api("cb-a", 91_234.5), offer_api("cb-b", 88_000))
    chosen = cap.choose_offering(offers, ITYPE, 1, 24)
    cap.fee_guard(chosen, offers, 88_000)  # at the limit: allowed
    with pytest.raises(cap.CapacityError) as e:
        cap.fee_guard(chosen, offers, 87_999.99)
    msg = str(e.value)
    assert msg.startswith("kimi-k3:maxUpfrontFeeUsd=87999.99 is below the cheapest")
    assert "cb-b" in msg and "$88,000.00" in msg and "$91,234.50" in msg
    assert msg.index("cb-b") < msg.index("cb-a")  # cheapest first
    assert "\n" not in msg


def test_check_block_rules():
    now = T0 - timedelta(days=1)
    ok = cap.Block.from_api(reservation_api())
    cap.check_block(ok, ITYPE, 1, now)
    for bad, fragment in [
        (reservation_api(rtype="default"), "On-Demand"),
        (reservation_api(itype="p5.48xlarge"), "holds p5.48xlarge"),
        (reservation_api(count=1), "holds only 1"),
        (reservation_api(state="expired"), "is expired"),
    ]:
        with pytest.raises(cap.CapacityError) as e:
            cap.check_block(cap.Block.from_api(bad), ITYPE, 2 if "only" in fragment else 1, now)
        assert fragment in str(e.value)
    # inside the last 30 minutes AWS is already terminating: unusable
    with pytest.raises(cap.CapacityError):
        cap.check_block(ok, ITYPE, 1, ok.end - timedelta(minutes=20))


def test_scaling_times():
    later = cap.scaling_times(T0, T0 + timedelta(days=1), now=T0 - timedelta(hours=3))
    assert later == {"scale_up_at": "2026-12-01T11:30:00Z", "scale_down_at": "2026-12-02T10:30:00Z"}
    started = cap.scaling_times(T0, T0 + timedelta(days=1), now=T0 + timedelta(hours=1))
    assert started["scale_up_at"] is None
    # scale-down comes before AWS starts terminating (30 min before the end)
    end = T0 + timedelta(days=1)
    assert cap._utc(started["scale_down_at"]) < end - cap.TERMINATION_LEAD


def test_describe_offerings_paginates_with_the_real_model(ec2):
    client, stub = ec2
    expected = {"InstanceType": ITYPE, "InstanceCount": 1, "CapacityDurationHours": 24,
                "StartDateRange": ANY, "EndDateRange": ANY}
    stub.add_response("describe_capacity_block_offerings",
                      {"CapacityBlockOfferings": [offer_api("cb-a", 9)], "NextToken": "t1"}, expected)
    stub.add_response("describe_capacity_block_offerings",
                      {"CapacityBlockOfferings": [offer_api("cb-b", 8)]}, {**expected, "NextToken": "t1"})
    offers = cap.describe_offerings(client, ITYPE, 1, 24, T0, T0 + timedelta(days=3))
    assert [o.offering_id for o in offers] == ["cb-a", "cb-b"]
    assert offers[1].upfront_fee_usd == 8.0


def test_acquire_buys_within_the_guard(ec2):
    client, stub = ec2
    stub.add_response("describe_capacity_reservations", {"CapacityReservations": []}, LOOKUP)
    stub.add_response("describe_capacity_block_offerings",
                      {"CapacityBlockOfferings": [offer_api("cb-a", 95_000), offer_api("cb-b", 90_000)]},
                      {"InstanceType": ITYPE, "InstanceCount": 1, "CapacityDurationHours": 24,
                       "StartDateRange": ANY})
    stub.add_response("purchase_capacity_block",
                      {"CapacityReservation": reservation_api(state="payment-pending", tags=STACK_TAGS)},
                      purchase_params("cb-b"))
    out = cap.acquire(client, BUY, now=T0 - timedelta(days=2))
    assert out["purchased"] is True and out["upfront_fee_usd"] == 90_000
    assert out["availability_zone"] == "us-east-2b"
    assert out["instances_stop_at"] == "2026-12-02T11:00:00Z"


def test_acquire_never_buys_above_the_guard(ec2):
    client, stub = ec2
    stub.add_response("describe_capacity_reservations", {"CapacityReservations": []}, LOOKUP)
    stub.add_response("describe_capacity_block_offerings",
                      {"CapacityBlockOfferings": [offer_api("cb-a", 95_000)]},
                      {"InstanceType": ITYPE, "InstanceCount": 1, "CapacityDurationHours": 24})
    # no purchase response queued: a purchase call would fail the Stubber
    with pytest.raises(cap.CapacityError, match="maxUpfrontFeeUsd"):
        cap.acquire(client, {**BUY, "earliestStart": None, "maxUpfrontFeeUsd": 0}, now=T0)


def test_acquire_adopts_an_existing_block(ec2):
    client, stub = ec2
    stub.add_response("describe_capacity_reservations",
                      {"CapacityReservations": [reservation_api(count=2)]},
                      {"CapacityReservationIds": ["cr-0123456789abcdef0"]})
    out = cap.acquire(client, {"instanceType": ITYPE, "instanceCount": 2,
                               "reservationId": "cr-0123456789abcdef0"}, now=T0 - timedelta(days=1))
    assert out == {**out, "reservation_id": "cr-0123456789abcdef0", "instance_count": 2,
                   "start_date": "2026-12-01T11:30:00Z", "end_date": "2026-12-02T11:30:00Z",
                   "purchased": False}


def test_unknown_reservation_is_a_config_error(ec2):
    client, stub = ec2
    stub.add_response("describe_capacity_reservations", {"CapacityReservations": []},
                      {"CapacityReservationIds": ["cr-00000000000000000"]})
    with pytest.raises(cap.CapacityError, match="was not found"):
        cap.describe_block(client, "cr-00000000000000000")


def test_stubber_rejects_a_wrong_parameter_shape(ec2):
    # the Stubber validates against the real model: a misspelt parameter fails here, not in AWS
    client, stub = ec2
    stub.add_response("purchase_capacity_block", {"CapacityReservation": reservation_api()})
    with pytest.raises(Exception):
        client.purchase_capacity_block(CapacityBlockOfferingId="cb-a", InstancePlatfrom="Linux/UNIX")
    client.purchase_capacity_block(CapacityBlockOfferingId="cb-a", InstancePlatform="Linux/UNIX")


def test_provider_holds_no_client_and_forgets_on_delete():
    import pickle

    p = cap.CapacityBlockProvider()
    assert vars(p) == {}
    pickle.dumps(p)
    d = p.diff("cr-1", {"reservationId": None, "region": "us-east-2", "maxUpfrontFeeUsd": 1},
               {"reservationId": None, "region": "us-east-2", "maxUpfrontFeeUsd": 2,
                "__provider": "x"})
    assert d.changes is False  # changing the request never buys a second block
    d = p.diff("cr-1", {"reservationId": "cr-1", "reservation_id": "cr-1", "region": "us-east-2"},
               {"reservationId": "cr-2", "region": "us-east-2"})
    # another block is an update (the node group rolls onto it), never a delete-before-replace,
    # which would first delete what takes a replacing input from the block (docs/aws-eks.md)
    assert d.changes is True and d.replaces == []
    d = p.diff("cr-1", {"reservationId": "cr-1", "reservation_id": "cr-1", "region": "us-east-2"},
               {"reservationId": "cr-1", "region": "us-west-2"})
    assert d.replaces == ["region"]


def test_another_adopted_block_is_adopted_in_place_and_a_bought_one_left_behind_is_named(monkeypatch):
    import boto3
    from botocore.stub import Stubber

    said = []
    p = cap.CapacityBlockProvider()
    monkeypatch.setattr(cap.pulumi.log, "warn", lambda text, *a, **k: said.append(text))
    now = T0 - timedelta(days=1)
    monkeypatch.setattr(cap, "_now", lambda: now)
    client = boto3.client("ec2", region_name="us-east-2", aws_access_key_id="testing", aws_secret_access_key="testing")
    monkeypatch.setattr(cap, "ec2_client", lambda props, max_attempts=5: client)
    # this stack bought cr-0aaa..., still running; the user now adopts cr-0123...
    bought = {**reservation_api("cr-0aaaaaaaaaaaaaaaa"), "TotalInstanceCount": 1}
    olds = {**BUY, "region": "us-east-2", "reservationId": None, **cap.Block.from_api(bought).outputs(),
            "purchased": True, "requested": {"instance_type": ITYPE, "instance_count": 1}}
    news = {"region": "us-east-2", "instanceType": ITYPE, "instanceCount": 1, "reservationId": "cr-0123456789abcdef0"}
    d = p.diff("cr-0aaaaaaaaaaaaaaaa", olds, news)
    assert d.changes is True and d.replaces == []
    with Stubber(client) as stub:
        stub.add_response("describe_capacity_reservations", {"CapacityReservations": [reservation_api()]},
                          {"CapacityReservationIds": ["cr-0123456789abcdef0"]})
        outs = p.update("cr-0aaaaaaaaaaaaaaaa", olds, news).outs
        stub.assert_no_pending_responses()  # no purchase
    assert outs["reservation_id"] == "cr-0123456789abcdef0" and outs["purchased"] is False
    assert said == [f"Capacity Block cr-0aaaaaaaaaaaaaaaa is forgotten, not cancelled: it stays billed until "
                    f"{olds['end_date']}"]
    # another region never buys a second block while the one bought here runs (refused at preview)
    with pytest.raises(cap.CapacityError) as e:
        p.diff("cr-0aaaaaaaaaaaaaaaa", olds, {**BUY, "region": "us-west-2", "reservationId": None})
    assert str(e.value).startswith("aws:region='us-west-2' would buy a second Capacity Block while "
                                   "cr-0aaaaaaaaaaaaaaaa, bought by this stack in us-east-2, runs")
    assert p.diff("cr-0aaaaaaaaaaaaaaaa", {**olds, "end_date": "2026-01-01T11:30:00Z"},
                  {**BUY, "region": "us-west-2", "reservationId": None}).replaces == ["region"]  # it ended
    assert p.diff("cr-0123456789abcdef0", outs, {**news, "region": "us-west-2"}).replaces == ["region"]  # adopted
    # destroy names the block held, not the resource's first id
    p.delete("cr-0aaaaaaaaaaaaaaaa", outs)
    assert said[-1] == f"Capacity Block cr-0123456789abcdef0 is forgotten, not cancelled: it stays billed until " \
                       f"{outs['end_date']}"


def test_provider_survives_pulumis_own_serialization_and_strips_the_provider_key(monkeypatch):
    # what the engine stores in state and what the dynamic-provider host loads back
    import base64

    import dill
    from pulumi.dynamic.dynamic import serialize_provider

    blob = serialize_provider(cap.CapacityBlockProvider())
    # by reference to the importable class, with no instance state (no client, no credentials)
    raw = base64.b64decode(blob)
    assert b"components.aws_eks.capacity" in raw and b"CapacityBlockProvider" in raw and len(raw) < 200
    loaded = dill.loads(base64.b64decode(blob))
    client = boto3.client("ec2", region_name="us-east-2", aws_access_key_id="testing",
                          aws_secret_access_key="testing")
    regions = []

    def fake_client(props, max_attempts=5):
        regions.append(props["region"])
        return client

    monkeypatch.setattr(cap, "ec2_client", fake_client)
    with Stubber(client) as stub:
        # exactly these parameters: no __provider or other input leaks into the API call
        stub.add_response("describe_capacity_reservations",
                          {"CapacityReservations": [reservation_api(start=datetime.now(timezone.utc))]},
                          {"CapacityReservationIds": ["cr-0123456789abcdef0"]})
        res = loaded.create({"__provider": blob, "region": "us-east-2", "instanceType": ITYPE,
                             "instanceCount": 1, "reservationId": "cr-0123456789abcdef0"})
        stub.assert_no_pending_responses()
    assert regions == ["us-east-2", "us-east-2"]
    assert res.id == "cr-0123456789abcdef0" and "__provider" not in res.outs
    assert res.outs["availability_zone"] == "us-east-2b" and res.outs["purchased"] is False


def test_purchases_are_never_retried():
    # PurchaseCapacityBlock has no idempotency token: a retried timeout could buy twice
    props = {"region": "us-east-2", "aws": {"region": "us-east-2", "profile": None}}
    assert cap.ec2_client(props, max_attempts=1).meta.config.retries["total_max_attempts"] == 1
    assert cap.ec2_client(props).meta.config.retries["total_max_attempts"] == 5

_offer = st.builds(
    lambda i, fee, days, count, hours, itype: cap.Offering(
        f"cb-{i}", itype, "us-east-2a", count, T0 + timedelta(days=days),
        T0 + timedelta(days=days, hours=hours), hours, fee, zone_types=("availability-zone",)),
    st.integers(0, 10**6), st.floats(0, 10**6, allow_nan=False), st.integers(0, 30),
    st.integers(1, 4), st.sampled_from([24, 48]), st.sampled_from([ITYPE, "p5.48xlarge"]))


@settings(max_examples=150, deadline=None)
@given(st.lists(_offer, max_size=12), st.integers(1, 4), st.sampled_from([24, 48]),
       st.floats(0, 10**6, allow_nan=False))
def test_choice_is_the_cheapest_fit_and_the_guard_never_lets_more_through(offers, count, hours, max_fee):
    fits = [o for o in offers if o.instance_type == ITYPE and o.instance_count >= count
            and o.duration_hours == hours]
    if not fits:
        with pytest.raises(cap.CapacityError):
            cap.choose_offering(offers, ITYPE, count, hours)
        return
    chosen = cap.choose_offering(offers, ITYPE, count, hours)
    assert chosen in fits and all(chosen.upfront_fee_usd <= o.upfront_fee_usd for o in fits)
    if chosen.upfront_fee_usd <= max_fee:
        cap.fee_guard(chosen, offers, max_fee)
    else:
        with pytest.raises(cap.CapacityError):
            cap.fee_guard(chosen, offers, max_fee)


# ---- merged from test_aws_capacity_behaviour.py:
# Capacity Block decisions (pure parts of components/aws_eks/capacity.py) at their edges.
#
# Field names and shapes are the EC2 API's (DescribeCapacityBlockOfferings' CapacityBlockOffering,
# DescribeCapacityReservations' CapacityReservation); AWS stops a block's instances 30 minutes
# before its end (EC2 User Guide, "Capacity Blocks").

T0_LISTED = datetime(2026, 12, 10, 11, 30, tzinfo=timezone.utc)


def _offering(**kw):
    d = {"CapacityBlockOfferingId": "cb-1", "InstanceType": "p6-b300.48xlarge", "AvailabilityZone": "us-east-2a",
         "InstanceCount": 2, "StartDate": "2026-12-10T11:30:00Z", "EndDate": "2026-12-11T11:30:00Z",
         "CapacityBlockDurationHours": 24, "UpfrontFee": "1234.5", "ZoneType": "availability-zone", **kw}
    return cap.Offering.from_api(d)


def _block(**kw):
    d = {"CapacityReservationId": "cr-1", "InstanceType": "p6-b300.48xlarge", "AvailabilityZone": "us-east-2a",
         "TotalInstanceCount": 2, "StartDate": T0_LISTED, "EndDate": T0_LISTED + timedelta(days=1), "State": "scheduled",
         "ReservationType": "capacity-block", **kw}
    return cap.Block.from_api(d)


def test_offering_fields_from_the_api_with_their_defaults():
    o = _offering()
    assert o == cap.Offering("cb-1", "p6-b300.48xlarge", "us-east-2a", 2, T0_LISTED, T0_LISTED + timedelta(days=1), 24,
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
        "TotalInstanceCount": 1, "StartDate": T0_LISTED, "EndDate": T0_LISTED, "State": "active"}.items()})
    assert plain.reservation_type == "default" and plain.tags == ()  # EC2's default: On-Demand


def test_times_are_utc_whatever_they_came_as():
    assert cap.fmt(datetime(2026, 12, 10, 19, 30, tzinfo=timezone(timedelta(hours=8)))) == "2026-12-10T11:30:00Z"
    assert cap.fmt(datetime(2026, 12, 10, 11, 30)) == "2026-12-10T11:30:00Z"
    assert cap._utc("2026-12-10T19:30:00+08:00") == T0_LISTED


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
    ({"ReservationType": "default"}, T0_LISTED,
     "kimi-k3:capacityReservationId='cr-1' is an On-Demand reservation; give a Capacity Block reservation"),
    ({"InstanceType": "p5.48xlarge"}, T0_LISTED,
     "kimi-k3:capacityReservationId='cr-1' holds p5.48xlarge; use a block of p6-b300.48xlarge or change "
     "kimi-k3:accelerator"),
    ({"TotalInstanceCount": 1}, T0_LISTED,
     "kimi-k3:capacityReservationId='cr-1' holds only 1 instances; use a block of at least 2 instances or lower "
     "kimi-k3:nodes/replicas"),
    ({"State": "expired"}, T0_LISTED,
     "kimi-k3:capacityReservationId='cr-1' is expired (ends 2026-12-11T11:30:00Z); buy or adopt a block that "
     "has not ended"),
    ({}, T0_LISTED + timedelta(days=1, minutes=-30),
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
                        T0_LISTED + timedelta(days=1, minutes=-31))
    end = T0_LISTED + timedelta(days=1)
    assert not cap.ended(end, end - timedelta(minutes=31))
    assert cap.ended(end, end - timedelta(minutes=30)) and cap.ended("2026-12-11T11:30:00Z", end)


def test_adoptable_needs_our_tag_and_a_live_block_of_the_shape():
    mine = dict(Tags=[{"Key": cap.IDENTITY_TAG, "Value": "o/p/s"}])
    ok = _block(**mine)
    assert cap.adoptable(ok, "o/p/s", "p6-b300.48xlarge", 2, T0_LISTED)
    assert not cap.adoptable(ok, "o/p/other", "p6-b300.48xlarge", 2, T0_LISTED)
    assert not cap.adoptable(_block(), "o/p/s", "p6-b300.48xlarge", 2, T0_LISTED)
    assert not cap.adoptable(ok, "o/p/s", "p5.48xlarge", 2, T0_LISTED)
    assert not cap.adoptable(ok, "o/p/s", "p6-b300.48xlarge", 3, T0_LISTED)
    assert not cap.adoptable(_block(State="cancelled", **mine), "o/p/s", "p6-b300.48xlarge", 2, T0_LISTED)
    assert not cap.adoptable(_block(ReservationType="default", **mine), "o/p/s", "p6-b300.48xlarge", 2, T0_LISTED)
    assert not cap.adoptable(ok, "o/p/s", "p6-b300.48xlarge", 2, T0_LISTED + timedelta(days=1, minutes=-30))
    assert cap.adoptable(ok, "o/p/s", "p6-b300.48xlarge", 2, T0_LISTED + timedelta(days=1, minutes=-31))


def test_scaling_times_scale_up_only_for_a_later_start_and_down_an_hour_before_the_end():
    end = T0_LISTED + timedelta(days=1)
    assert cap.scaling_times(T0_LISTED, end, T0_LISTED - timedelta(seconds=1)) == {
        "scale_up_at": "2026-12-10T11:30:00Z", "scale_down_at": "2026-12-11T10:30:00Z"}
    assert cap.scaling_times(T0_LISTED, end, T0_LISTED)["scale_up_at"] is None


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


# ---- merged from test_aws_capacity_edges.py:
# The edges of buying and adopting a Capacity Block: zone types, unknown ids, blocks EC2 stopped
# listing. EC2 is botocore's Stubber on the real EC2 model of the pinned botocore (1.44.8), whose
# CapacityBlockOffering carries `ZoneType`; errors are EC2's codes as terraform-provider-aws matches
# them (`InvalidCapacityReservationId.NotFound`).

NOW = T0 - timedelta(days=2)
OFFERS = {"InstanceType": ITYPE, "InstanceCount": 1, "CapacityDurationHours": 24, "StartDateRange": ANY}
CR = "cr-0123456789abcdef0"


def _buy_with(stub, offers):
    stub.add_response("describe_capacity_reservations", {"CapacityReservations": []}, LOOKUP)
    stub.add_response("describe_capacity_block_offerings", {"CapacityBlockOfferings": offers}, OFFERS)


# ---------------------------------------------------------------- zone types

def test_a_cheaper_local_zone_offering_is_never_bought(ec2):
    client, stub = ec2
    _buy_with(stub, [offer_api("cb-local", 40_000, az="us-east-2-lax-1a", zone="local-zone"),
                     offer_api("cb-wave", 30_000, az="us-east-2-wl1-bos-wlz-1", zone="wavelength-zone"),
                     offer_api("cb-az", 80_000, az="us-east-2b")])
    stub.add_response("purchase_capacity_block", {"CapacityReservation": reservation_api(tags=STACK_TAGS)},
                      purchase_params("cb-az"))
    out = cap.acquire(client, BUY, NOW)
    assert out["upfront_fee_usd"] == 80_000


def test_only_local_zone_offerings_stop_in_one_line_naming_the_key(ec2):
    client, stub = ec2
    _buy_with(stub, [offer_api("cb-local", 40_000, az="us-east-2-lax-1a", zone="local-zone")])
    with pytest.raises(cap.CapacityError) as e:  # nothing is bought: no purchase queued
        cap.acquire(client, BUY, NOW)
    msg = str(e.value)
    assert msg.startswith("kimi-k3:capacityAllowLocalZones (not set) leaves no offering of 1 x p6-b300")
    assert "cb-local 1 x p6-b300.48xlarge in us-east-2-lax-1a (local-zone)" in msg and "\n" not in msg


def test_local_zones_are_bought_when_asked_for(ec2):
    client, stub = ec2
    _buy_with(stub, [offer_api("cb-local", 40_000, az="us-east-2-lax-1a", zone="local-zone"),
                     offer_api("cb-az", 80_000)])
    stub.add_response("purchase_capacity_block", {"CapacityReservation": reservation_api(tags=STACK_TAGS)},
                      purchase_params("cb-local"))
    out = cap.acquire(client, {**BUY, "allowLocalZones": True}, NOW)
    assert out["upfront_fee_usd"] == 40_000


def test_an_offering_without_a_zone_type_is_resolved_by_describe_availability_zones(ec2):
    client, stub = ec2
    _buy_with(stub, [offer_api("cb-a", 40_000, az="us-east-2-lax-1a", zone=None),
                     offer_api("cb-b", 80_000, az="us-east-2b", zone=None)])
    stub.add_response("describe_availability_zones", {"AvailabilityZones": [
        {"ZoneName": "us-east-2-lax-1a", "ZoneType": "local-zone", "State": "available"},
        {"ZoneName": "us-east-2b", "ZoneType": "availability-zone", "State": "available"}]},
        {"ZoneNames": ["us-east-2-lax-1a", "us-east-2b"], "AllAvailabilityZones": True})
    stub.add_response("purchase_capacity_block", {"CapacityReservation": reservation_api(tags=STACK_TAGS)},
                      purchase_params("cb-b"))
    assert cap.acquire(client, BUY, NOW)["upfront_fee_usd"] == 80_000


def test_an_offering_whose_zone_type_stays_unknown_is_never_chosen():
    unknown = cap.Offering.from_api(offer_api("cb-x", 1, zone=None))
    assert unknown.zone_types == () and not unknown.in_availability_zone
    with pytest.raises(cap.CapacityError):
        cap.choose_offering([unknown], ITYPE, 1, 24, allow_local_zones=True)


def test_a_segment_outside_an_availability_zone_makes_the_offering_local():
    d = offer_api("cb-s", 1)
    d["CapacityBlockOfferingSegments"] = [{"ZoneType": "availability-zone"}, {"ZoneType": "local-zone"}]
    o = cap.Offering.from_api(d)
    assert o.zone_types == ("availability-zone", "local-zone") and not o.in_availability_zone


# ---------------------------------------------------------------- unknown ids

@pytest.mark.parametrize("code", ["InvalidCapacityReservationId.NotFound",
                                  "InvalidCapacityReservationId.Malformed"])
def test_an_unknown_id_is_one_line_with_the_id_region_and_what_to_check(ec2, code):
    client, stub = ec2
    stub.add_client_error("describe_capacity_reservations", service_error_code=code,
                          service_message=f"The capacity reservation ID '{CR}' does not exist",
                          http_status_code=400, expected_params={"CapacityReservationIds": [CR]})
    with pytest.raises(cap.CapacityError) as e:
        cap.acquire(client, {"instanceType": ITYPE, "instanceCount": 1, "reservationId": CR}, NOW)
    msg = str(e.value)
    assert msg.startswith(f"kimi-k3:capacityReservationId='{CR}' was not found in us-east-2;")
    assert "aws:region" in msg and "account" in msg and "\n" not in msg
    assert e.value.__cause__ is None and e.value.__suppress_context__  # no ClientError chained on


def test_other_errors_are_not_dressed_up_as_not_found(ec2):
    from botocore.exceptions import ClientError

    client, stub = ec2
    stub.add_client_error("describe_capacity_reservations", service_error_code="UnauthorizedOperation",
                          http_status_code=403)
    with pytest.raises(ClientError):
        cap.describe_block(client, CR)


# ---------------------------------------------------------------- refresh

def test_refresh_of_an_unlisted_block_marks_it_gone_without_an_error(ec2):
    client, stub = ec2
    stub.add_client_error("describe_capacity_reservations",
                          service_error_code="InvalidCapacityReservationId.NotFound", http_status_code=400)
    props = {"reservation_id": CR, "state": "active", "end_date": "2026-12-02T11:30:00Z", "region": "us-east-2"}
    out = cap.read_outputs(client, CR, props)
    assert out == {**props, "state": "unlisted"}


def test_refresh_of_a_block_listed_as_expired_records_it(ec2):
    client, stub = ec2
    stub.add_response("describe_capacity_reservations",
                      {"CapacityReservations": [reservation_api(CR, state="expired")]},
                      {"CapacityReservationIds": [CR]})
    assert cap.read_outputs(client, CR, {"reservation_id": CR})["state"] == "expired"


def test_an_unlisted_block_is_over_for_the_next_up(monkeypatch):
    """diff: a block refresh marked gone is replaced like an expired one (never an error there)."""
    p = cap.CapacityBlockProvider()
    monkeypatch.setattr(cap, "_now", lambda: NOW)
    olds = {"reservationId": None, "reservation_id": CR, "region": "us-east-2", "state": "unlisted",
            "end_date": (NOW + timedelta(days=5)).strftime(cap.TIME_FORMAT), "instanceType": ITYPE,
            "instanceCount": 1, "requested": {"instance_type": ITYPE, "instance_count": 1}}
    news = {"reservationId": None, "region": "us-east-2", "instanceType": ITYPE, "instanceCount": 1}
    d = p.diff(CR, olds, news)
    assert d.changes is True and not d.replaces


def test_the_provider_read_never_raises_for_a_gone_block(monkeypatch):
    client = boto3.client("ec2", region_name="us-east-2", aws_access_key_id="testing",
                          aws_secret_access_key="testing")
    stub = Stubber(client)
    stub.add_response("describe_capacity_reservations", {"CapacityReservations": []},
                      {"CapacityReservationIds": [CR]})
    stub.activate()
    monkeypatch.setattr(cap, "ec2_client", lambda props, max_attempts=5: client)
    got = cap.CapacityBlockProvider().read(CR, {"reservation_id": CR, "instanceType": ITYPE, "__provider": "x"})
    assert got.id == CR and got.outs["state"] == "unlisted" and "__provider" not in got.outs
