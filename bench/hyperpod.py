"""Figures of the HyperPod path (issue 24): resources per mode, SageMaker calls of adopting and of
buying a training plan (and of the cases that must never buy twice), the EKS calls that check the
add-ons before either, the destroy proofs' calls,
and the plan's clock from `pulumi up` to the first accepted token.

Resources: the real __main__.py under Pulumi's mock engine (components/offline/runner.py), the
apply-to-your-cluster mode against the end-to-end mode. Calls: the training-plan code
(components/aws_eks/hyperpod/training_plan.py) and the proofs (proof.py) driven through
botocore's Stubber on the pinned SageMaker/ELB models, every call counted by the client's
event hooks (the stubbed answers are the shapes the model defines; no AWS is reached).

    .venv/bin/python bench/hyperpod.py
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

KEY = "kk3-hyperpod-key-0123456789abcdefghij"
MODES = {
    "apply to your HyperPod cluster": {"kimi-k3:serving": "hyperpod", "kimi-k3:hyperpodClusterName": "hp-eks"},
    "end to end, lists offers (default)": {"kimi-k3:serving": "hyperpod", "kimi-k3:apiKey": KEY},
    "end to end, adopts a plan": {"kimi-k3:serving": "hyperpod", "kimi-k3:apiKey": KEY,
                                  "kimi-k3:trainingPlanArn": "arn:aws:sagemaker:us-east-2:111122223333:training-plan/p"},
    "end to end, monitoring off": {"kimi-k3:serving": "hyperpod", "kimi-k3:apiKey": KEY, "kimi-k3:monitoring": "false"},
    "eks path (Capacity Block), for comparison": {},
}


def resources() -> None:
    from components.offline.runner import run_program

    print("resources registered (custom resources + providers / components), mock engine:")
    for mode, cfg in MODES.items():
        run = run_program("aws-eks", cfg)
        custom = sum(1 for r in run.resources if r["custom"])
        comps = len(run.resources) - custom
        kinds = Counter(r["type"].split(":")[0] for r in run.resources if r["custom"])
        print(f"  {mode:<44} {len(run.resources):>3} ({custom} + {comps})   "
              + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())))


class Calls:
    def __init__(self, *clients):
        self.seen = Counter()
        for c in clients:
            c.meta.events.register("before-call.*.*", self._count)

    def _count(self, model, **kw):
        self.seen[model.name] += 1

    def text(self) -> str:
        return f"{sum(self.seen.values())} ({', '.join(f'{k} {v}' for k, v in sorted(self.seen.items()))})"


def plan_calls() -> None:
    from botocore.stub import Stubber
    from botocore.exceptions import ReadTimeoutError

    from components.aws_eks.hyperpod import training_plan as tp
    from tests.unit import test_hyperpod_training_plan as t

    print("SageMaker calls of the training plan (Stubber on botocore 1.44.8's model):")

    def case(name, queue, props, **kw):
        sm = t.sm_client()
        calls = Calls(sm)
        with Stubber(sm) as stub:
            queue(stub)
            try:
                tp.acquire(sm, props, t.NOW, **kw)
                outcome = "ok"
            except tp.TrainingPlanError:
                outcome = "stopped (one line, nothing bought)"
            stub.assert_no_pending_responses()
        print(f"  {name:<52} {calls.text()}  -> {outcome}")

    case("adopt kimi-k3:trainingPlanArn", lambda s: s.add_response(
        "describe_training_plan", t.plan_api(status="Active"), {"TrainingPlanName": t.ARN}), t.ADOPT)

    def buy(s):
        t.not_found(s, t.NAME1)
        s.add_response("search_training_plan_offerings", {"TrainingPlanOfferings": [t.offer("a", 80_000),
                                                                                      t.offer("b", 90_000)]}, t.SEARCH)
        s.add_response("create_training_plan", {"TrainingPlanArn": t.ARN}, t.create_params("a"))
        s.add_response("describe_training_plan", t.plan_api(status="Pending"), {"TrainingPlanName": t.NAME1})
    case("buy the cheapest under the cap", buy, t.BUY)

    def listing(s):
        t.not_found(s, t.NAME1)
        s.add_response("search_training_plan_offerings", {"TrainingPlanOfferings": [t.offer("a", 80_000)]}, t.SEARCH)
    case("no cap (maxUpfrontFeeUsd 0): list and stop", listing, {**t.BUY, "maxUpfrontFeeUsd": 0})
    case("re-run after an interrupted purchase", lambda s: s.add_response(
        "describe_training_plan", t.plan_api(), {"TrainingPlanName": t.NAME1}), t.BUY)

    sm, buyer = t.sm_client(), t.sm_client()
    buyer.meta.events.register("after-call.sagemaker.CreateTrainingPlan",
                               lambda **k: (_ for _ in ()).throw(ReadTimeoutError(endpoint_url="x")))
    calls = Calls(sm, buyer)
    with Stubber(sm) as s, Stubber(buyer) as b:
        t.not_found(s, t.NAME1)
        s.add_response("search_training_plan_offerings", {"TrainingPlanOfferings": [t.offer("a", 80_000)]}, t.SEARCH)
        b.add_response("create_training_plan", {"TrainingPlanArn": t.ARN}, t.create_params("a"))
        t.not_found(s, t.NAME1)
        s.add_response("describe_training_plan", t.plan_api(status="Pending"), {"TrainingPlanName": t.NAME1})
        tp.acquire(sm, t.BUY, t.NOW, purchase_client=buyer, sleep=lambda _: None)
    print(f"  {'purchase answer lost, found on the second look':<52} {calls.text()}  -> ok, one purchase")

    from components.aws_eks.hyperpod import addon_check, catalog
    from tests.unit import test_hyperpod_addon_check as a

    print("EKS calls before every adopt or purchase (the add-ons after the plan, addon_check.py):")
    eks = a.eks_client()
    calls = Calls(eks)
    with Stubber(eks) as s:
        a.expect_versions(s)
        a.expect_schema(s, a.SCHEMA)
        addon_check.verify(eks, a.K8S, catalog.ADDON_VERSIONS)
        s.assert_no_pending_responses()
    print(f"  {'five pinned add-ons offered, the schema takes IRSA':<52} {calls.text()}  -> ok")


def proof_calls() -> None:
    from botocore.stub import Stubber

    from components.aws_eks.hyperpod import proof
    from tests.unit.test_hyperpod_cluster import client

    print("destroy proofs, calls when everything is gone:")
    sm = client("sagemaker")
    calls = Calls(sm)
    with Stubber(sm) as s:
        s.add_client_error("describe_cluster", service_error_code="ResourceNotFound", http_status_code=400,
                           expected_params={"ClusterName": "kimi-k3-aws-eks"})
        assert proof.cluster_left(sm, "kimi-k3-aws-eks") == []
    print(f"  {'HyperPod cluster and nodes gone':<52} {calls.text()}")
    elbv2, elb = client("elbv2"), client("elb")
    calls = Calls(elbv2, elb)
    with Stubber(elbv2) as s2, Stubber(elb) as s1:
        s2.add_response("describe_load_balancers", {"LoadBalancers": []}, {})
        s1.add_response("describe_load_balancers", {"LoadBalancerDescriptions": []}, {})
        assert proof.operator_load_balancers(elbv2, elb, "kimi-k3-aws-eks") == []
    print(f"  {'the operator load balancers gone':<52} {calls.text()}")


def clock() -> None:
    from components.cli import plan_ops
    from components.offline.runner import run_program
    from components.progress import clock as clocks

    for mode in ("end to end, lists offers (default)", "apply to your HyperPod cluster"):
        doc = plan_ops.clock(run_program("aws-eks", MODES[mode]))
        print(f"the plan's clock, {mode}: " + clocks.summary_line(doc))
        for line in clocks.phase_table(doc):
            print(line)


if __name__ == "__main__":
    resources()
    plan_calls()
    proof_calls()
    clock()
