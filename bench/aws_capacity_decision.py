"""Figures of issue 20 from the real __main__.py under Pulumi's mock engine: how many resources
the engine could create before the capacity decision (the Capacity Block, or the training plan
on the HyperPod path), what wave 0 holds, and the inter-node transport a two-node plan states;
then the EC2 calls of adopting and buying the block and of the next `up` after its end.

"Before the decision" is every resource that creates something (components/offline/order.py
`creates`) and does not wait for the decision's resource, directly or through what it waits for
(explicit dependencies, those through its inputs, its provider: `order.not_waiting_for`), the
stack's ownership token aside (a record in the stack's state, no cloud object: the purchase is
tagged with it). Before issue 20 the shipped stack created these first: the weights bucket and its five
settings, two IAM roles with their policies, the mirror notice, the NAT gateway's Elastic IP.

    .venv/bin/python bench/aws_capacity_decision.py
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

OWNER = {"pulumi-python:dynamic/aws:StackOwner": "state only"}
KEY = "kk3-hyperpod-key-0123456789abcdefghij"


def variants():
    from tests.integration.test_aws_order import VARIANTS

    out = {f"eks: {k}": (v, "pulumi-python:dynamic/aws:CapacityBlock") for k, v in VARIANTS.items()}
    plan = "pulumi-python:dynamic/aws:TrainingPlan"
    out["hyperpod end to end: lists offers"] = ({"kimi-k3:serving": "hyperpod", "kimi-k3:apiKey": KEY}, plan)
    out["hyperpod end to end: buys under a cap"] = ({"kimi-k3:serving": "hyperpod", "kimi-k3:apiKey": KEY,
                                                     "kimi-k3:maxUpfrontFeeUsd": "150000"}, plan)
    return out


def main() -> None:
    from components.cli.plan import plan_document
    from components.offline import order
    from components.offline.runner import run_program

    print("resources the engine could create before the capacity decision (mock engine, real __main__.py):")
    for name, (cfg, decision) in variants().items():
        t0 = time.perf_counter()
        run = run_program("aws-eks", cfg)
        wall = time.perf_counter() - t0
        (d,) = run.of_type(decision)
        creating = [r for r in run.resources if order.creates(r)]
        early = order.not_waiting_for(run.resources, d["urn"], exempt_types=OWNER)
        wave0 = sorted(u.rsplit("::", 1)[-1] for u in order.waves(run.resources)[0])
        print(f"  {name:<60} {len(early)} of {len(creating)} creating resources"
              f"   wave 0: {', '.join(wave0)}   ({wall:.1f} s)")
        if cfg.get("kimi-k3:nodes") == "2":
            inter = plan_document(run)["plan"].get("inter_node") or {}
            print(f"    two-node transport as the plan states it: {inter.get('summary')}")


def block_calls() -> None:
    """EC2 calls of adopting and buying a Capacity Block, and of the next `up` after its end,
    counted through botocore's Stubber on the pinned EC2 model (no AWS account here: counted,
    not timed). The canned answers are the unit tests' (tests/unit/test_aws_capacity.py)."""
    from collections import Counter
    from datetime import timedelta

    import boto3
    from botocore.stub import Stubber

    from components.aws_eks import capacity as cap
    from tests.unit import test_aws_capacity as t

    cr, before, after = "cr-0123456789abcdef0", t.T0 - timedelta(hours=5), t.T0 + timedelta(hours=25)
    listed = [("describe_capacity_reservations", {"CapacityReservations": []}, t.LOOKUP),
              ("describe_capacity_block_offerings", {"CapacityBlockOfferings": [t.offer_api("cbo-1", 60_000)]}, None)]
    bought = ("purchase_capacity_block", {"CapacityReservation": t.reservation_api(cr, tags=t.STACK_TAGS)},
              t.purchase_params("cbo-1"))
    tagged = [("describe_capacity_reservations", {"CapacityReservations": [
        t.reservation_api(cr, state="active", hours=24 * 8, tags=t.STACK_TAGS)]}, t.LOOKUP)]
    cases = {
        "adopt kimi-k3:capacityReservationId": (
            [("describe_capacity_reservations", {"CapacityReservations": [t.reservation_api(cr)]},
              {"CapacityReservationIds": [cr]})], {"instanceType": t.ITYPE, "instanceCount": 1, "reservationId": cr},
            before),
        "buy the cheapest under the cap": (listed + [bought], dict(t.BUY), before),
        "maxUpfrontFeeUsd 0: list and stop": (listed, {**t.BUY, "maxUpfrontFeeUsd": 0}, before),
        "re-run after an interrupted purchase": (tagged, dict(t.BUY), before),
        "next up after the end: the next block bought": (listed + [bought], dict(t.BUY), after),
        "next up after the end: the block was extended": (tagged, dict(t.BUY), after),
    }
    print("EC2 calls of the Capacity Block (Stubber on the pinned botocore EC2 model):")
    for name, (queue, props, now) in cases.items():
        ec2, seen = boto3.client("ec2", region_name="us-east-2", aws_access_key_id="testing",
                                   aws_secret_access_key="testing"), Counter()
        ec2.meta.events.register("before-parameter-build.ec2", lambda model, **kw: seen.update([model.name]))
        with Stubber(ec2) as stub:
            for op, answer, params in queue:
                stub.add_response(op, answer, params)
            try:
                cap.acquire(ec2, props, now)
                outcome = "ok"
            except cap.CapacityError:
                outcome = "stopped (one line, nothing bought)"
            stub.assert_no_pending_responses()
        text = ", ".join(f"{k} {v}" for k, v in sorted(seen.items()))
        print(f"  {name:<48} {sum(seen.values())} ({text})  -> {outcome}")


if __name__ == "__main__":
    main()
    block_calls()
