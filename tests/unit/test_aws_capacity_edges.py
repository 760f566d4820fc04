"""The edges of buying and adopting a Capacity Block: zone types, unknown ids, blocks EC2 stopped
listing. EC2 is botocore's Stubber on the real EC2 model of the pinned botocore (1.44.8), whose
CapacityBlockOffering carries `ZoneType`; errors are EC2's codes as terraform-provider-aws matches
them (`InvalidCapacityReservationId.NotFound`)."""

from datetime import timedelta

import boto3
import pytest
from botocore.stub import ANY, Stubber

from components.aws_eks import capacity as cap
from tests.unit.test_aws_capacity import ITYPE, LOOKUP, STACK_TAGS, T0, BUY, offer_api, purchase_params, \
    reservation_api

NOW = T0 - timedelta(days=2)
OFFERS = {"InstanceType": ITYPE, "InstanceCount": 1, "CapacityDurationHours": 24, "StartDateRange": ANY}
CR = "cr-0123456789abcdef0"


@pytest.fixture
def ec2():
    client = boto3.client("ec2", region_name="us-east-2", aws_access_key_id="testing",
                          aws_secret_access_key="testing")
    with Stubber(client) as stub:
        yield client, stub
        stub.assert_no_pending_responses()


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
