"""Capacity Blocks: pure offering choice and fee guard on AWS's documented response shapes; boto3
calls checked with botocore's Stubber against the real EC2 service model (no AWS account)."""

from datetime import datetime, timedelta, timezone

import boto3
import pytest
from botocore.stub import ANY, Stubber
from hypothesis import given, settings
from hypothesis import strategies as st

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
    assert d.replaces == ["reservationId"]


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
