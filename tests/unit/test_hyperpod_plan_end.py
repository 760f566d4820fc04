"""The next `up` once a training plan's end (as the stack last read it) has passed, HyperPod path.

SageMaker extends a plan in place (ExtendTrainingPlan; DescribeTrainingPlanExtensionHistory:
the pinned SageMaker model of botocore 1.44.8), so an `up` without a refresh must read the held
plan again before buying: the generation search starts after the held generation, so an
extended plan would otherwise be paid for twice. And the preview says what the update will do
(buy under the cap, list and stop, or stop for an adopted plan), never a silent purchase.

SageMaker is botocore's Stubber on the pinned model: an unexpected call (a search, a purchase)
fails the test.
"""

from datetime import timedelta

import pytest
from botocore.stub import Stubber

from components.aws_eks.hyperpod import training_plan as tp
from tests.unit.test_hyperpod_training_plan import (ADOPT, ARN, BUY, NAME1, NAME2, SEARCH, START, _bought_state,
                                                    _created, _with_client, create_params, not_found, offer,
                                                    plan_api)

OLD_END = START + timedelta(hours=24)
NEW_END = OLD_END + timedelta(days=7)


def past_the_old_end(monkeypatch):
    monkeypatch.setattr(tp, "_now", lambda: OLD_END + timedelta(hours=2))


def test_an_extended_plan_is_kept_and_nothing_is_bought(monkeypatch):
    bought = _bought_state(monkeypatch)  # generation 1, state Scheduled, ends OLD_END
    past_the_old_end(monkeypatch)
    sm = _with_client(monkeypatch)
    assert tp.TrainingPlanProvider().diff(bought.id, bought.outs, dict(BUY)).changes
    with Stubber(sm) as stub:  # nothing but the held plan is read: a search or purchase fails here
        stub.add_response("describe_training_plan", plan_api(status="Active", end=NEW_END), {"TrainingPlanName": ARN})
        outs = tp.TrainingPlanProvider().update(bought.id, bought.outs, dict(BUY)).outs
        stub.assert_no_pending_responses()
    assert (outs["trainingPlanName"], outs["generation"], outs["status"]) == (NAME1, 1, "Active")
    assert outs["endTime"] == tp.fmt(NEW_END) and outs["purchased"] is True
    assert outs["upfrontFeeUsd"] == bought.outs["upfrontFeeUsd"]


def test_a_plan_that_was_not_extended_is_followed_by_the_next_generation(monkeypatch):
    bought = _bought_state(monkeypatch)
    past_the_old_end(monkeypatch)
    sm = _with_client(monkeypatch)
    with Stubber(sm) as stub:
        stub.add_response("describe_training_plan", plan_api(status="Expired"), {"TrainingPlanName": ARN})
        not_found(stub, NAME2)
        stub.add_response("search_training_plan_offerings",
                          {"TrainingPlanOfferings": [offer("tpo-b", 80_000, start=NEW_END)]}, SEARCH)
        stub.add_response("create_training_plan", {"TrainingPlanArn": ARN.replace(NAME1, NAME2)},
                          create_params("tpo-b", NAME2))
        stub.add_response("describe_training_plan", plan_api(name=NAME2, status="Pending"), {"TrainingPlanName": NAME2})
        outs = tp.TrainingPlanProvider().update(bought.id, bought.outs, dict(BUY)).outs
        stub.assert_no_pending_responses()
    assert outs["generation"] == 2 and outs["trainingPlanName"] == NAME2


def test_an_extended_plan_that_cannot_hold_a_new_request_is_refused_not_bought_again(monkeypatch):
    bought = _bought_state(monkeypatch)
    past_the_old_end(monkeypatch)
    sm = _with_client(monkeypatch)
    with Stubber(sm) as stub:
        stub.add_response("describe_training_plan", plan_api(status="Active", end=NEW_END), {"TrainingPlanName": ARN})
        with pytest.raises(tp.TrainingPlanError, match="a purchase cannot be cancelled, so kimi-k3 does not buy"):
            tp.TrainingPlanProvider().update(bought.id, bought.outs, {**BUY, "instanceCount": 2})
        stub.assert_no_pending_responses()


# ---------------------------------------------------------------- said at preview

def notices(monkeypatch, olds, news):
    said = []
    monkeypatch.setattr(tp.TrainingPlanProvider, "warn", lambda self, text: said.append(text))
    sm = _with_client(monkeypatch)
    with Stubber(sm):  # diff calls nothing
        tp.TrainingPlanProvider().diff("id", olds, news)
    return said


def test_the_preview_after_the_end_says_what_the_up_will_buy(monkeypatch):
    bought = _bought_state(monkeypatch)
    past_the_old_end(monkeypatch)
    (said,) = notices(monkeypatch, bought.outs, dict(BUY))
    assert said.startswith(f"training plan {NAME1} ended at {tp.fmt(OLD_END)} (Scheduled when last read): this "
                           "`pulumi up` keeps it if it was extended, else BUYS the next training plan of 1 x "
                           "ml.p6-b300.48xlarge, the cheapest fitting offer if its upfront fee is at most $100,000.00")
    (said,) = notices(monkeypatch, bought.outs, {**BUY, "maxUpfrontFeeUsd": 0})
    assert "buying nothing" in said and "BUYS" not in said


def test_the_preview_after_an_adopted_plans_end_names_the_fix_and_nothing_while_it_runs(monkeypatch):
    adopted = _created(monkeypatch, ADOPT, ("describe_training_plan", plan_api(), {"TrainingPlanName": ARN}))
    assert notices(monkeypatch, adopted.outs, dict(ADOPT)) == []  # the plan still runs: nothing to say
    past_the_old_end(monkeypatch)
    (said,) = notices(monkeypatch, adopted.outs, dict(ADOPT))
    assert "re-reads it and stops unless it was extended" in said and "kimi-k3:trainingPlanArn arn:..." in said
