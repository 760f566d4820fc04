"""Never buy twice: purchases are tagged with the stack's identity, a tagged block is adopted
before buying, and a purchase whose response is lost is looked up, not repeated.

EC2 is botocore's Stubber on the real EC2 service model (parameters validated against it). A
lost response is an `after-call` hook that raises ReadTimeoutError *after* the Stubber has
consumed the purchase: AWS bought, the client never heard.
"""

from __future__ import annotations

import boto3
import pytest
from botocore.exceptions import ReadTimeoutError
from botocore.stub import ANY, Stubber
from datetime import datetime, timedelta, timezone

from components.aws_eks import aws_api, capacity as cap
from tests.unit.test_aws_capacity import (
    BUY,
    IDENTITY,
    ITYPE,
    LOOKUP,
    OTHER,
    STACK_TAGS,
    T0,
    offer_api,
    purchase_params,
    reservation_api,
)


NOW = T0 - timedelta(days=2)
OFFERS = {"InstanceType": ITYPE, "InstanceCount": 1, "CapacityDurationHours": 24, "StartDateRange": ANY}


def ec2_client():
    return boto3.client("ec2", region_name="us-east-2", aws_access_key_id="testing",
                        aws_secret_access_key="testing")


def lose_purchase_responses(client):
    def lost(**kwargs):
        raise ReadTimeoutError(endpoint_url="https://ec2.us-east-2.amazonaws.com")
    client.meta.events.register("after-call.ec2.PurchaseCapacityBlock", lost)


def test_lost_response_buys_once_and_adopts_the_tagged_block():
    client = ec2_client()
    lose_purchase_responses(client)
    bought = reservation_api("cr-0aaaaaaaaaaaaaaaa", state="payment-pending", tags=STACK_TAGS)
    with Stubber(client) as stub:
        stub.add_response("describe_capacity_reservations", {"CapacityReservations": []}, LOOKUP)
        stub.add_response("describe_capacity_block_offerings",
                          {"CapacityBlockOfferings": [offer_api("cb-a", 80_000)]}, OFFERS)
        stub.add_response("purchase_capacity_block", {"CapacityReservation": bought}, purchase_params("cb-a"))
        # eventual consistency: the first look after the timeout does not list it yet
        stub.add_response("describe_capacity_reservations", {"CapacityReservations": []}, LOOKUP)
        stub.add_response("describe_capacity_reservations", {"CapacityReservations": [bought]}, LOOKUP)
        sleeps = []
        out = cap.acquire(client, BUY, NOW, sleep=sleeps.append)
        stub.assert_no_pending_responses()  # exactly one PurchaseCapacityBlock was made
    assert out["reservation_id"] == "cr-0aaaaaaaaaaaaaaaa" and out["purchased"] is True
    assert out["adopted_by_tag"] is True and out["upfront_fee_usd"] == 80_000
    assert sleeps == [cap.RELOOK_INTERVAL_S]


def test_interrupted_run_adopts_on_the_next_up_without_buying():
    """`pulumi up` died after the purchase: state has nothing; the next create finds the tag."""
    client = ec2_client()
    bought = reservation_api("cr-0aaaaaaaaaaaaaaaa", state="scheduled", tags=STACK_TAGS)
    foreign = reservation_api("cr-0bbbbbbbbbbbbbbbb", state="active",
                              tags=[{"Key": cap.IDENTITY_TAG, "Value": OTHER}])
    untagged = reservation_api("cr-0cccccccccccccccc", state="active")
    with Stubber(client) as stub:
        stub.add_response("describe_capacity_reservations",
                          {"CapacityReservations": [foreign, untagged], "NextToken": "p2"}, LOOKUP)
        stub.add_response("describe_capacity_reservations", {"CapacityReservations": [bought]},
                          {**LOOKUP, "NextToken": "p2"})
        # no offering lookup, no purchase queued: either would fail the Stubber
        out = cap.acquire(client, BUY, NOW)
        stub.assert_no_pending_responses()
    assert out["reservation_id"] == "cr-0aaaaaaaaaaaaaaaa" and out["adopted_by_tag"] is True


def test_blocks_of_other_stacks_or_ended_are_never_adopted():
    client = ec2_client()
    foreign = reservation_api("cr-0bbbbbbbbbbbbbbbb", tags=[{"Key": cap.IDENTITY_TAG, "Value": OTHER}])
    ending = reservation_api("cr-0dddddddddddddddd", state="active", start=NOW - timedelta(hours=23, minutes=40),
                             tags=STACK_TAGS)  # ends in 20 min: AWS already terminates
    small = reservation_api("cr-0eeeeeeeeeeeeeeee", tags=STACK_TAGS, count=1)
    with Stubber(client) as stub:
        stub.add_response("describe_capacity_reservations",
                          {"CapacityReservations": [foreign, ending, small]}, LOOKUP)
        stub.add_response("describe_capacity_block_offerings",
                          {"CapacityBlockOfferings": [offer_api("cb-a", 10, count=2)]},
                          {**OFFERS, "InstanceCount": 2})
        stub.add_response("purchase_capacity_block",
                          {"CapacityReservation": reservation_api("cr-0ffffffffffffffff", count=2, tags=STACK_TAGS)},
                          purchase_params("cb-a"))
        out = cap.acquire(client, {**BUY, "instanceCount": 2}, NOW)
        stub.assert_no_pending_responses()
    assert out["reservation_id"] == "cr-0ffffffffffffffff" and "adopted_by_tag" not in out


def test_a_refused_purchase_is_not_looked_up_again():
    client = ec2_client()
    with Stubber(client) as stub:
        stub.add_response("describe_capacity_reservations", {"CapacityReservations": []}, LOOKUP)
        stub.add_response("describe_capacity_block_offerings",
                          {"CapacityBlockOfferings": [offer_api("cb-a", 10)]}, OFFERS)
        stub.add_client_error("purchase_capacity_block", "InsufficientInstanceCapacity", "gone", 400,
                              expected_params=purchase_params("cb-a"))
        with pytest.raises(Exception) as e:
            cap.acquire(client, BUY, NOW, sleep=lambda s: None)
        stub.assert_no_pending_responses()
    assert "InsufficientInstanceCapacity" in str(e.value)


def test_no_answer_and_no_tagged_block_stops_loudly_with_the_way_out():
    client = ec2_client()
    lose_purchase_responses(client)
    with Stubber(client) as stub:
        stub.add_response("describe_capacity_reservations", {"CapacityReservations": []}, LOOKUP)
        stub.add_response("describe_capacity_block_offerings",
                          {"CapacityBlockOfferings": [offer_api("cb-a", 10)]}, OFFERS)
        stub.add_response("purchase_capacity_block", {"CapacityReservation": reservation_api()},
                          purchase_params("cb-a"))
        for _ in range(cap.RELOOK_TRIES):
            stub.add_response("describe_capacity_reservations", {"CapacityReservations": []}, LOOKUP)
        with pytest.raises(cap.CapacityError) as e:
            cap.acquire(client, BUY, NOW, sleep=lambda s: None)
        stub.assert_no_pending_responses()
    msg = str(e.value)
    assert "got no answer (ReadTimeoutError)" in msg and f"{cap.IDENTITY_TAG}={IDENTITY}" in msg
    assert "run `pulumi up` again: it adopts that block" in msg and "\n" not in msg


def test_buying_needs_the_stack_identity():
    with pytest.raises(ValueError, match="stackIdentity"):
        cap.acquire(ec2_client(), {**BUY, "stackIdentity": None}, NOW)


def test_multi_segment_and_ultraserver_offers_are_never_chosen():
    seg = {**offer_api("cb-s", 1), "CapacityBlockOfferingSegments": [{}, {}]}
    ultra = {**offer_api("cb-u", 1), "UltraserverType": "u-p6e-gb200x72", "UltraserverCount": 1}
    plain = offer_api("cb-p", 5)
    chosen = cap.choose_offering([cap.Offering.from_api(o) for o in (seg, ultra, plain)], ITYPE, 1, 24)
    assert chosen.offering_id == "cb-p"


# ---------------------------------------------------------------- block lifecycle in the provider

def test_an_ended_block_is_followed_in_buy_mode_and_fails_loudly_when_adopted(monkeypatch):
    p = cap.CapacityBlockProvider()
    now = datetime(2026, 12, 3, 12, 0, tzinfo=timezone.utc)
    monkeypatch.setattr(cap, "_now", lambda: now)
    old = {"reservationId": None, "region": "us-east-2", "end_date": "2026-12-02T11:30:00Z",
           "state": "active", "maxUpfrontFeeUsd": 100}
    d = p.diff("cr-1", old, {**old, "__provider": "x"})
    # an update, so the next purchase knows the ended block's zone (test_aws_block_request.py)
    assert d.changes and d.replaces == []
    running = {**old, "end_date": "2026-12-05T11:30:00Z"}
    assert p.diff("cr-1", running, {**running, "maxUpfrontFeeUsd": 5}).changes is False
    adopted = {**old, "reservationId": "cr-0123456789abcdef0", "reservation_id": "cr-0123456789abcdef0"}
    d = p.diff("cr-0123456789abcdef0", adopted, adopted)
    assert d.changes and d.replaces == []  # an update, which re-checks the block ...
    client = ec2_client()
    monkeypatch.setattr(cap, "ec2_client", lambda props, max_attempts=5: client)
    with Stubber(client) as stub:
        stub.add_response("describe_capacity_reservations", {"CapacityReservations": [
            reservation_api(state="expired", start=now - timedelta(days=2))]},
            {"CapacityReservationIds": ["cr-0123456789abcdef0"]})
        with pytest.raises(cap.CapacityError) as e:  # ... and fails naming the id and the fix
            p.update("cr-0123456789abcdef0", adopted, {**adopted, "instanceType": ITYPE, "instanceCount": 1})
    assert "kimi-k3:capacityReservationId='cr-0123456789abcdef0' is expired" in str(e.value)
    gone = {**running, "state": "payment-failed"}
    d = p.diff("cr-1", gone, gone)
    assert d.changes and d.replaces == []


# ---------------------------------------------------------------- the stack's own account and region

def test_calls_use_the_stacks_profile_and_region_not_ambient_credentials(tmp_path, monkeypatch):
    cfg = tmp_path / "config"
    cfg.write_text("[profile kk3-deploy]\nregion = eu-west-1\n")
    creds = tmp_path / "credentials"
    creds.write_text("[kk3-deploy]\naws_access_key_id = AKIAPROFILEKEY000000\naws_secret_access_key = p\n")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(cfg))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(creds))
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAAMBIENTKEY000000")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "a")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "ap-south-1")
    props = {"region": "us-east-2", "aws": {"region": "us-east-2", "profile": "kk3-deploy"}}
    c = cap.ec2_client(props)
    assert c.meta.region_name == "us-east-2"
    assert aws_api.session(props).get_credentials().access_key == "AKIAPROFILEKEY000000"
    explicit = {**props, "awsSecrets": {"accessKey": "AKIASTACKKEY00000000", "secretKey": "s", "token": None}}
    assert aws_api.session(explicit).get_credentials().access_key == "AKIASTACKKEY00000000"
    # what every AWS provider redacts: the stack's keys and the ambient ones
    assert {"s", "AKIASTACKKEY00000000", "AKIAAMBIENTKEY000000"} <= \
        set(aws_api.AwsProvider().secrets(explicit))


def test_aws_config_keys_our_calls_cannot_honour_are_refused():
    from components.inference.errors import ConfigError

    conf = {"region": "us-east-2", "assumeRoles": '[{"roleArn": "arn:aws:iam::1:role/x"}]'}
    with pytest.raises(ConfigError) as e:
        aws_api.aws_inputs_from_config(conf.get, lambda k: None)
    assert str(e.value).startswith("aws:assumeRoles='[set]' is not used by kimi-k3's own AWS calls")
    with pytest.raises(ConfigError, match="aws:secretKey"):
        aws_api.aws_inputs_from_config({"region": "us-east-2"}.get,
                                       {"accessKey": "AKIA"}.get)
    out = aws_api.aws_inputs_from_config({"region": "us-east-2", "profile": "p"}.get, lambda k: None)
    assert out == {"aws": {"region": "us-east-2", "profile": "p"}}


# ---- merged from test_aws_purchase_behaviour.py:
# What a Capacity Block purchase asks AWS for, what it buys, and what it says when it cannot tell.
#
# EC2 is botocore's Stubber on the real EC2 service model: the expected parameters of
# DescribeCapacityBlockOfferings are AWS's (EC2 API reference: `StartDateRange` the earliest start,
# `EndDateRange` the latest *end* of the block, so the latest start plus the duration).

EARLIEST = datetime(2026, 12, 1, 0, 0, tzinfo=timezone.utc)
OFFERS_FROM_EARLIEST = {"InstanceType": ITYPE, "InstanceCount": 1, "CapacityDurationHours": 24, "StartDateRange": EARLIEST}
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
                          {**OFFERS_FROM_EARLIEST, "EndDateRange": datetime(2026, 12, 3, 0, 0, tzinfo=timezone.utc)
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
        stub.add_response("describe_capacity_block_offerings", {"CapacityBlockOfferings": offers}, OFFERS_FROM_EARLIEST)
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
                          {"CapacityBlockOfferings": [offer_api("cb-a", 0.5)]}, OFFERS_FROM_EARLIEST)
        with pytest.raises(cap.CapacityError, match="maxUpfrontFeeUsd"):
            cap.acquire(client, props, NOW)
        stub.assert_no_pending_responses()  # no PurchaseCapacityBlock


def _lost_purchase(client, stub, relooks):
    lose_purchase_responses(client)
    stub.add_response("describe_capacity_reservations", {"CapacityReservations": []}, LOOKUP)
    stub.add_response("describe_capacity_block_offerings",
                      {"CapacityBlockOfferings": [offer_api("cb-a", 80_000, az="us-east-2c")]}, OFFERS_FROM_EARLIEST)
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
        stub.add_response("describe_capacity_block_offerings", {"CapacityBlockOfferings": offers}, OFFERS_FROM_EARLIEST)
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
