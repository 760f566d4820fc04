"""Training plans: adopt, choose and buy under a fee cap, never twice, list and stop at cap 0.

SageMaker is botocore's Stubber on the pinned SageMaker model (botocore 1.44.8): every request's
parameters and every canned response are validated against it. A lost response is an
`after-call` hook raising ReadTimeoutError after the Stubber consumed the purchase (AWS bought,
the client never heard).
"""

from datetime import datetime, timedelta, timezone

import boto3
import pytest
from botocore.exceptions import ReadTimeoutError
from botocore.stub import Stubber

from components.aws_eks.hyperpod import training_plan as tp

ITYPE = "ml.p6-b300.48xlarge"
NOW = datetime(2026, 12, 2, 8, 0, tzinfo=timezone.utc)
START = datetime(2026, 12, 3, 11, 30, tzinfo=timezone.utc)
TOKEN = "0123456789abcdef0123456789abcdef"
NAME1, NAME2 = tp.plan_name(TOKEN, 1), tp.plan_name(TOKEN, 2)
ARN = "arn:aws:sagemaker:us-east-2:111122223333:training-plan/" + NAME1
ZONES = ["us-east-2a", "us-east-2b", "us-east-2c"]
BUY = {"region": "us-east-2", "instanceType": ITYPE, "instanceCount": 1, "durationHours": 24,
       "maxUpfrontFeeUsd": 100_000, "stackToken": TOKEN, "stackName": "org/kimi-k3/aws-eks", "zones": ZONES}
SEARCH = {"InstanceType": ITYPE, "InstanceCount": 1, "DurationHours": 24, "TargetResources": ["hyperpod-cluster"]}


def sm_client():
    return boto3.client("sagemaker", region_name="us-east-2", aws_access_key_id="testing",
                        aws_secret_access_key="testing")


def offer(oid, fee, zone="us-east-2b", count=1, segments=1, kind="Instance", targets=("hyperpod-cluster",),
          currency="USD", itype=ITYPE, hours=24, start=START):
    reserved = [{"ReservedCapacityType": kind, "InstanceType": itype, "InstanceCount": count,
                 "AvailabilityZone": zone, "DurationHours": hours, "StartTime": start + timedelta(days=i),
                 "EndTime": start + timedelta(days=i, hours=hours)} for i in range(segments)]
    return {"TrainingPlanOfferingId": oid, "TargetResources": list(targets), "DurationHours": hours,
            "UpfrontFee": str(fee), "CurrencyCode": currency, "ReservedCapacityOfferings": reserved}


def plan_api(name=NAME1, status="Scheduled", zone="us-east-2b", count=1, itype=ITYPE, end=None,
             targets=("hyperpod-cluster",), zones=None):
    end = end or START + timedelta(hours=24)
    summaries = [{"ReservedCapacityArn": f"arn:aws:sagemaker:us-east-2:111122223333:reserved-capacity/{i}",
                  "InstanceType": itype, "TotalInstanceCount": count, "Status": status, "AvailabilityZone": z,
                  "StartTime": START, "EndTime": end} for i, z in enumerate(zones or [zone])]
    return {"TrainingPlanArn": f"arn:aws:sagemaker:us-east-2:111122223333:training-plan/{name}",
            "TrainingPlanName": name, "Status": status, "StartTime": START, "EndTime": end,
            "UpfrontFee": "80000", "CurrencyCode": "USD", "TotalInstanceCount": count,
            "TargetResources": list(targets), "ReservedCapacitySummaries": summaries}


def not_found(stub, name):
    stub.add_client_error("describe_training_plan", service_error_code="ResourceNotFound",
                          http_status_code=400, expected_params={"TrainingPlanName": name})


def create_params(oid, name=NAME1):
    return {"TrainingPlanName": name, "TrainingPlanOfferingId": oid,
            "Tags": [{"Key": tp.IDENTITY_TAG, "Value": TOKEN}, {"Key": tp.NAME_TAG, "Value": "org/kimi-k3/aws-eks"}]}


# ---------------------------------------------------------------- pure choice

def offers_of(*raw):
    return [tp.Offering.from_api(o) for o in raw]


def test_the_cheapest_fitting_offering_wins_and_odd_products_never_do():
    offers = offers_of(offer("a", 90_000), offer("b", 70_000, zone="us-west-2a"),  # zone without subnet
                       offer("c", 10_000, segments=2), offer("d", 10_000, kind="UltraServer"),
                       offer("e", 10_000, targets=("training-job",)), offer("f", 10_000, currency="EUR"),
                       offer("g", 10_000, itype="ml.p5.48xlarge"), offer("h", 80_000, zone="us-east-2c"))
    assert tp.choose_offering(offers, ITYPE, 1, 24, ZONES).offering_id == "h"


@pytest.mark.parametrize("fee", ["NaN", "-5", "inf", "", "free", "1e309"])
def test_an_offering_with_a_fee_that_is_not_a_price_is_never_chosen(fee):
    """Hostile UpfrontFee strings (a string in the model): never compared as if cheap."""
    offers = offers_of(offer("weird", fee), offer("ok", 50_000))
    assert tp.choose_offering(offers, ITYPE, 1, 24, ZONES).offering_id == "ok"
    with pytest.raises(tp.TrainingPlanError, match="has no training plan offering"):
        tp.choose_offering(offers_of(offer("weird", fee)), ITYPE, 1, 24, ZONES)


def test_the_replaced_plans_zone_is_preferred_only_among_equal_prices():
    offers = offers_of(offer("a", 50_000, zone="us-east-2a"), offer("b", 50_000, zone="us-east-2c"),
                       offer("c", 40_000, zone="us-east-2b"))
    assert tp.choose_offering(offers, ITYPE, 1, 24, ZONES, prefer_zone="us-east-2c").offering_id == "c"
    assert tp.choose_offering(offers[:2], ITYPE, 1, 24, ZONES, prefer_zone="us-east-2c").offering_id == "b"


def test_a_cap_of_zero_never_buys_even_a_free_offering():
    free = offers_of(offer("free", 0))
    with pytest.raises(tp.TrainingPlanError) as e:
        tp.fee_guard(free[0], free, 0.0)
    text = str(e.value)
    assert text.startswith("kimi-k3:maxUpfrontFeeUsd=0") and "buys no training plan" in text
    assert "free 1 x ml.p6-b300.48xlarge in us-east-2b" in text and "\n" not in text


def test_over_the_cap_the_offers_are_listed_with_their_prices():
    offers = offers_of(offer("a", 90_000.5), offer("b", 120_000))
    with pytest.raises(tp.TrainingPlanError) as e:
        tp.fee_guard(offers[0], offers, 50_000)
    assert "raise it to at least 90001" in str(e.value) and "$120,000.00" in str(e.value)


@pytest.mark.parametrize("token", ["", "---", "ü", None])
def test_a_token_without_letters_or_digits_never_names_a_plan(token):
    with pytest.raises(ValueError):
        tp.plan_name(token or "", 1)


def test_plan_names_fit_sagemakers_pattern():
    import re

    import botocore.session

    pattern = botocore.session.get_session().get_service_model("sagemaker").shape_for(
        "TrainingPlanName").metadata["pattern"]
    for token in (TOKEN, "a" * 200, "ab-cd_ef/gh", "X"):
        for gen in (1, 49):
            assert re.fullmatch(pattern, tp.plan_name(token, gen)) and len(tp.plan_name(token, gen)) <= 64


# ---------------------------------------------------------------- adopt

ADOPT = {"region": "us-east-2", "instanceType": ITYPE, "instanceCount": 1, "trainingPlanArn": ARN, "zones": ZONES}


def test_adopt_is_one_describe():
    sm = sm_client()
    with Stubber(sm) as stub:
        stub.add_response("describe_training_plan", plan_api(status="Active"), {"TrainingPlanName": ARN})
        out = tp.acquire(sm, ADOPT, NOW)
        stub.assert_no_pending_responses()
    assert out["availabilityZone"] == "us-east-2b" and out["purchased"] is False and out["status"] == "Active"


@pytest.mark.parametrize("kw, fragment", [
    ({"status": "Expired"}, "is Expired"),
    ({"status": "Failed"}, "is Failed"),
    ({"end": NOW - timedelta(minutes=1)}, "is Scheduled"),
    ({"targets": ("training-job",)}, "not a HyperPod cluster"),
    ({"itype": "ml.p5.48xlarge"}, "holds ml.p5.48xlarge"),
    ({"count": 0}, "holds only 0 instances"),
    ({"zones": ["us-east-2a", "us-east-2b"]}, "spans us-east-2a, us-east-2b"),
    ({"zone": "us-east-2d"}, "where the stack has no subnet"),
])
def test_an_adopted_plan_that_does_not_fit_is_one_line(kw, fragment):
    sm = sm_client()
    with Stubber(sm) as stub:
        stub.add_response("describe_training_plan", plan_api(**kw), {"TrainingPlanName": ARN})
        with pytest.raises(tp.TrainingPlanError) as e:
            tp.acquire(sm, ADOPT, NOW)
    assert str(e.value).startswith(f"kimi-k3:trainingPlanArn={ARN!r}") and fragment in str(e.value)
    assert "\n" not in str(e.value)


def test_an_unknown_plan_is_one_line_with_the_region():
    sm = sm_client()
    with Stubber(sm) as stub:
        not_found(stub, ARN)
        with pytest.raises(tp.TrainingPlanError, match="was not found in us-east-2; check the ARN"):
            tp.acquire(sm, ADOPT, NOW)


# ---------------------------------------------------------------- buy, never twice

def test_buy_looks_up_its_name_searches_buys_once_and_reads_the_plan():
    sm = sm_client()
    with Stubber(sm) as stub:
        not_found(stub, NAME1)
        stub.add_response("search_training_plan_offerings",
                          {"TrainingPlanOfferings": [offer("tpo-b", 95_000), offer("tpo-a", 80_000)]}, SEARCH)
        stub.add_response("create_training_plan", {"TrainingPlanArn": ARN}, create_params("tpo-a"))
        stub.add_response("describe_training_plan", plan_api(status="Pending"), {"TrainingPlanName": NAME1})
        out = tp.acquire(sm, BUY, NOW)
        stub.assert_no_pending_responses()
    assert out["trainingPlanArn"] == ARN and out["purchased"] is True and out["upfrontFeeUsd"] == 80_000
    assert out["generation"] == 1 and out["availabilityZone"] == "us-east-2b"


def test_the_window_bounds_the_search():
    sm = sm_client()
    props = {**BUY, "earliestStart": "2026-12-05T00:00:00Z", "latestStart": "2026-12-06T00:00:00Z",
             "maxUpfrontFeeUsd": 0}
    with Stubber(sm) as stub:
        not_found(stub, NAME1)
        stub.add_response("search_training_plan_offerings", {"TrainingPlanOfferings": [offer("tpo-a", 1)]},
                          {**SEARCH, "StartTimeAfter": datetime(2026, 12, 5, tzinfo=timezone.utc),
                           "EndTimeBefore": datetime(2026, 12, 7, tzinfo=timezone.utc)})
        with pytest.raises(tp.TrainingPlanError, match="buys no training plan"):
            tp.acquire(sm, props, NOW)
        stub.assert_no_pending_responses()  # no purchase was queued: none was made


def test_an_interrupted_run_adopts_its_plan_by_name_without_searching_or_buying():
    sm = sm_client()
    with Stubber(sm) as stub:
        stub.add_response("describe_training_plan", plan_api(status="Scheduled"), {"TrainingPlanName": NAME1})
        out = tp.acquire(sm, BUY, NOW)
        stub.assert_no_pending_responses()
    assert out["adoptedByName"] is True and out["purchased"] is True and out["trainingPlanName"] == NAME1


def test_a_lost_purchase_answer_is_looked_up_not_repeated():
    sm, buyer = sm_client(), sm_client()

    def lost(**kwargs):
        raise ReadTimeoutError(endpoint_url="https://api.sagemaker.us-east-2.amazonaws.com")
    buyer.meta.events.register("after-call.sagemaker.CreateTrainingPlan", lost)
    sleeps = []
    with Stubber(sm) as stub, Stubber(buyer) as bstub:
        not_found(stub, NAME1)
        stub.add_response("search_training_plan_offerings", {"TrainingPlanOfferings": [offer("tpo-a", 80_000)]},
                          SEARCH)
        bstub.add_response("create_training_plan", {"TrainingPlanArn": ARN}, create_params("tpo-a"))
        not_found(stub, NAME1)  # eventual consistency: not listed at the first look
        stub.add_response("describe_training_plan", plan_api(status="Pending"), {"TrainingPlanName": NAME1})
        out = tp.acquire(sm, BUY, NOW, purchase_client=buyer, sleep=sleeps.append)
        stub.assert_no_pending_responses()
        bstub.assert_no_pending_responses()
    assert out["trainingPlanArn"] == ARN and sleeps == [tp.RELOOK_INTERVAL_S]


def test_a_purchase_never_answered_nor_listed_stops_naming_the_plan_to_check():
    sm, buyer = sm_client(), sm_client()
    buyer.meta.events.register("after-call.sagemaker.CreateTrainingPlan",
                               lambda **k: (_ for _ in ()).throw(ReadTimeoutError(endpoint_url="x")))
    with Stubber(sm) as stub, Stubber(buyer) as bstub:
        not_found(stub, NAME1)
        stub.add_response("search_training_plan_offerings", {"TrainingPlanOfferings": [offer("tpo-a", 80_000)]},
                          SEARCH)
        bstub.add_response("create_training_plan", {"TrainingPlanArn": ARN}, create_params("tpo-a"))
        for _ in range(tp.RELOOK_TRIES):
            not_found(stub, NAME1)
        with pytest.raises(tp.TrainingPlanError) as e:
            tp.acquire(sm, BUY, NOW, purchase_client=buyer, sleep=lambda s: None)
    assert f"--training-plan-name {NAME1}" in str(e.value) and "adopts that plan before it would buy" in str(e.value)


def test_a_refused_purchase_is_raised_at_once_and_not_retried():
    sm = sm_client()
    with Stubber(sm) as stub:
        not_found(stub, NAME1)
        stub.add_response("search_training_plan_offerings", {"TrainingPlanOfferings": [offer("tpo-a", 80_000)]},
                          SEARCH)
        stub.add_client_error("create_training_plan", service_error_code="ResourceLimitExceeded",
                              http_status_code=400, expected_params=create_params("tpo-a"))
        with pytest.raises(Exception, match="ResourceLimitExceeded"):
            tp.acquire(sm, BUY, NOW)
        stub.assert_no_pending_responses()


def test_an_ended_plan_of_this_stack_moves_to_the_next_generation():
    sm = sm_client()
    with Stubber(sm) as stub:
        stub.add_response("describe_training_plan", plan_api(status="Expired"), {"TrainingPlanName": NAME1})
        not_found(stub, NAME2)
        stub.add_response("search_training_plan_offerings", {"TrainingPlanOfferings": [offer("tpo-a", 80_000)]},
                          SEARCH)
        stub.add_response("create_training_plan", {"TrainingPlanArn": ARN.replace(NAME1, NAME2)},
                          create_params("tpo-a", NAME2))
        stub.add_response("describe_training_plan", plan_api(name=NAME2, status="Pending"),
                          {"TrainingPlanName": NAME2})
        out = tp.acquire(sm, BUY, NOW)
        stub.assert_no_pending_responses()
    assert out["generation"] == 2 and out["trainingPlanName"] == NAME2


def test_after_max_generations_of_ended_plans_it_stops_and_buys_nothing(monkeypatch):
    monkeypatch.setattr(tp, "MAX_GENERATIONS", 3)
    sm = sm_client()
    with Stubber(sm) as stub:
        for gen in (1, 2, 3):
            name = tp.plan_name(TOKEN, gen)
            stub.add_response("describe_training_plan", plan_api(name=name, status="Expired"),
                              {"TrainingPlanName": name})
        with pytest.raises(tp.TrainingPlanError) as e:
            tp.acquire(sm, BUY, NOW)  # no search, no purchase left in the stub: either would fail here
        stub.assert_no_pending_responses()
    assert str(e.value).startswith("kimi-k3:maxUpfrontFeeUsd=") and "found 3 ended plans" in str(e.value)
    assert "\n" not in str(e.value)


def test_without_a_token_nothing_is_bought():
    with pytest.raises(ValueError, match="stackToken"):
        tp.acquire(sm_client(), {**BUY, "stackToken": None}, NOW)


# ---------------------------------------------------------------- the provider

def _created(monkeypatch, props, *responses):
    """What `create` puts in state for `props` (the engine's olds at the next `up`)."""
    sm = sm_client()
    monkeypatch.setattr(tp, "sagemaker", lambda p, max_attempts=5: sm)
    with Stubber(sm) as stub:
        for op, response, params in responses:
            stub.add_response(op, response, params)
        created = tp.TrainingPlanProvider().create(dict(props))
        stub.assert_no_pending_responses()
    return created


def test_a_second_up_with_nothing_changed_changes_nothing(monkeypatch):
    # the state holds the bought plan's ARN under the input's name: against no ARN given (buy
    # mode) it is the same plan, not a replacement (which would forget and re-adopt it on every
    # `up` and, delete-before-replace, delete the HyperPod cluster that depends on it first)
    bought = _created(monkeypatch, BUY, ("describe_training_plan", plan_api(), {"TrainingPlanName": NAME1}))
    assert bought.outs["trainingPlanArn"] == ARN and bought.outs["purchased"] is True
    d = tp.TrainingPlanProvider().diff(bought.id, bought.outs, dict(BUY))
    assert (d.changes, d.replaces) == (False, [])
    adopt_props = {k: v for k, v in BUY.items() if k not in ("durationHours", "maxUpfrontFeeUsd", "stackToken",
                                                             "stackName")}
    adopt_props["trainingPlanArn"] = ARN
    adopted = _created(monkeypatch, adopt_props, ("describe_training_plan", plan_api(), {"TrainingPlanName": ARN}))
    d = tp.TrainingPlanProvider().diff(adopted.id, adopted.outs, dict(adopt_props))
    assert (d.changes, d.replaces) == (False, [])
    # another plan given by the user is adopted in place (an update, never a delete-before-replace
    # that would first delete the HyperPod cluster), from either mode
    other = ARN.replace(NAME1, "someone-elses-plan")
    for state in (bought.outs, adopted.outs):
        d = tp.TrainingPlanProvider().diff(bought.id, state, {**adopt_props, "trainingPlanArn": other})
        assert (d.changes, d.replaces) == (True, [])
    # ... and the bought plan left behind, still running, is named
    said = []
    monkeypatch.setattr(tp.pulumi.log, "warn", lambda text, *a, **k: said.append(text))
    sm = sm_client()
    monkeypatch.setattr(tp, "sagemaker", lambda p, max_attempts=5: sm)
    with Stubber(sm) as stub:
        stub.add_response("describe_training_plan", plan_api(name="someone-elses-plan"), {"TrainingPlanName": other})
        outs = tp.TrainingPlanProvider().update(bought.id, bought.outs, {**adopt_props, "trainingPlanArn": other}).outs
        stub.assert_no_pending_responses()  # no purchase
    assert outs["trainingPlanArn"] == other and outs["purchased"] is False
    assert said == [f"training plan {NAME1} is forgotten, not cancelled (SageMaker has no API for that): it stays "
                    f"paid until {bought.outs['endTime']}"]
    # another region is another plan, but never a second purchase while the bought one runs
    with pytest.raises(tp.TrainingPlanError) as e:
        tp.TrainingPlanProvider().diff(bought.id, bought.outs, {**BUY, "region": "us-west-2"})
    assert str(e.value).startswith("aws:region='us-west-2' would buy a second training plan while "
                                   f"{NAME1}, bought by this stack in us-east-2, runs") and "\n" not in str(e.value)
    assert tp.TrainingPlanProvider().diff(adopted.id, adopted.outs, {**adopt_props, "region": "us-west-2"}).replaces \
        == ["region"]
    ended = {**bought.outs, "endTime": "2026-01-01T00:00:00Z", "status": "Expired"}
    assert tp.TrainingPlanProvider().diff(bought.id, ended, {**BUY, "region": "us-west-2"}).replaces == ["region"]


def test_a_request_the_bought_plan_cannot_hold_is_refused_at_preview():
    olds = {**BUY, "trainingPlanName": NAME1, "instanceType": ITYPE, "instanceCount": 1, "status": "Scheduled",
            "endTime": "2030-01-01T00:00:00Z", "requested": {"instanceType": ITYPE, "instanceCount": 1}}
    with pytest.raises(tp.TrainingPlanError, match="does not buy another while it runs"):
        tp.TrainingPlanProvider().diff(NAME1, olds, {**BUY, "instanceCount": 2})
    d = tp.TrainingPlanProvider().diff(NAME1, olds, {**BUY, "maxUpfrontFeeUsd": 5})
    assert not d.changes


def test_destroy_forgets_the_plan_and_says_it_stays_paid(monkeypatch):
    said = []
    monkeypatch.setattr(tp.pulumi.log, "warn", lambda text, *a, **k: said.append(text))
    tp.TrainingPlanProvider().delete(ARN, {"trainingPlanName": NAME1, "endTime": "2026-12-04T11:30:00Z"})
    assert said == [f"training plan {NAME1} is forgotten, not cancelled (SageMaker has no API for that): it "
                    "stays paid until 2026-12-04T11:30:00Z"]


def test_every_call_the_module_makes_is_an_operation_of_the_pinned_model():
    import botocore.session

    ops = set(botocore.session.get_session().get_service_model("sagemaker").operation_names)
    assert {"SearchTrainingPlanOfferings", "DescribeTrainingPlan", "CreateTrainingPlan"} <= ops
    assert not [o for o in ops if "TrainingPlan" in o and o.startswith(("Delete", "Cancel"))]


@pytest.mark.parametrize("cap", [0, None])
def test_with_neither_a_plan_nor_a_cap_the_provider_lists_the_offers_and_buys_nothing(monkeypatch, cap):
    """The shipped HyperPod config: create looks up this stack's plan name (an interrupted run's
    purchase would be adopted), searches, and stops in one line with the offers, cheapest first;
    a CreateTrainingPlan would find no stubbed answer and fail the test."""
    sm = sm_client()
    monkeypatch.setattr(tp, "sagemaker", lambda p, max_attempts=5: sm)
    with Stubber(sm) as stub:
        not_found(stub, NAME1)
        stub.add_response("search_training_plan_offerings", {"TrainingPlanOfferings": [
            offer("tpo-dear", 120_000), offer("tpo-cheap", 80_000, zone="us-east-2c")]}, SEARCH)
        with pytest.raises(tp.TrainingPlanError) as e:
            tp.TrainingPlanProvider().create({**BUY, "maxUpfrontFeeUsd": cap})
        stub.assert_no_pending_responses()
    text = str(e.value)
    assert text.startswith("kimi-k3:maxUpfrontFeeUsd=") and "nothing was created" in text and "\n" not in text
    assert text.index("tpo-cheap") < text.index("tpo-dear") and "$80,000.00" in text
    assert "set it to at least 80000" in text


# ---------------------------------------------------------------- refresh, and the next `up` after the plan ended

def _with_client(monkeypatch):
    sm = sm_client()
    monkeypatch.setattr(tp, "sagemaker", lambda p, max_attempts=5: sm)
    return sm


def _bought_state(monkeypatch):
    return _created(monkeypatch, BUY, ("describe_training_plan", plan_api(), {"TrainingPlanName": NAME1}))


@pytest.mark.parametrize("listed", ["Expired", None])
def test_a_refresh_of_an_ended_plan_records_it_and_the_next_up_buys_the_next_generation(monkeypatch, listed):
    """Refresh: SageMaker describes the plan as Expired, or no longer knows it (Unlisted, kimi-k3's
    own word): recorded, never an error. The next `up` (buy mode) sees it over and buys generation
    2 under the same cap, in the ended plan's zone among equal prices."""
    bought = _bought_state(monkeypatch)
    sm = _with_client(monkeypatch)
    with Stubber(sm) as stub:
        if listed:
            stub.add_response("describe_training_plan", plan_api(status=listed), {"TrainingPlanName": ARN})
        else:
            stub.add_client_error("describe_training_plan", service_error_code="ResourceNotFound",
                                  http_status_code=400, expected_params={"TrainingPlanName": ARN})
        refreshed = tp.TrainingPlanProvider().read(bought.id, bought.outs).outs
        stub.assert_no_pending_responses()
    assert refreshed["status"] == (listed or tp.UNLISTED) and refreshed["trainingPlanName"] == NAME1
    d = tp.TrainingPlanProvider().diff(bought.id, refreshed, dict(BUY))
    assert (d.changes, d.replaces) == (True, [])  # an update: the HyperPod cluster is not deleted first
    with Stubber(sm) as stub:  # straight to generation 2: the first is this stack's ended plan
        not_found(stub, NAME2)
        stub.add_response("search_training_plan_offerings", {"TrainingPlanOfferings": [
            offer("tpo-c", 80_000, zone="us-east-2c"), offer("tpo-b", 80_000, zone="us-east-2b")]}, SEARCH)
        stub.add_response("create_training_plan", {"TrainingPlanArn": ARN.replace(NAME1, NAME2)},
                          create_params("tpo-b", NAME2))
        stub.add_response("describe_training_plan", plan_api(name=NAME2, status="Pending"), {"TrainingPlanName": NAME2})
        outs = tp.TrainingPlanProvider().update(bought.id, refreshed, dict(BUY)).outs
        stub.assert_no_pending_responses()
    assert outs["generation"] == 2 and outs["trainingPlanName"] == NAME2 and outs["availabilityZone"] == "us-east-2b"


def test_the_next_up_after_an_adopted_plan_ended_is_one_line_and_buys_nothing(monkeypatch):
    adopt_props = {**ADOPT}
    adopted = _created(monkeypatch, adopt_props, ("describe_training_plan", plan_api(), {"TrainingPlanName": ARN}))
    ended = {**adopted.outs, "status": "Expired", "endTime": "2026-12-01T11:30:00Z"}
    assert tp.TrainingPlanProvider().diff(adopted.id, ended, dict(adopt_props)).changes
    sm = _with_client(monkeypatch)
    with Stubber(sm) as stub:
        stub.add_response("describe_training_plan", plan_api(status="Expired"), {"TrainingPlanName": ARN})
        with pytest.raises(tp.TrainingPlanError) as e:
            tp.TrainingPlanProvider().update(adopted.id, ended, dict(adopt_props))
        stub.assert_no_pending_responses()
    assert str(e.value).startswith(f"kimi-k3:trainingPlanArn={ARN!r} is Expired") and "\n" not in str(e.value)
    assert "adopt or buy a plan that has not ended" in str(e.value)
