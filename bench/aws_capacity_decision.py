"""Figures of issue 20 from the real __main__.py under Pulumi's mock engine: how many resources
the engine could create before the capacity decision (the Capacity Block, or the training plan
on the HyperPod path), what wave 0 holds, and the inter-node transport a two-node plan states.

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


if __name__ == "__main__":
    main()
