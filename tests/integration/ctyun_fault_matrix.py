"""The fault matrix: every injected fault x every cluster operation, run against the emulator.

Used by tests/integration/test_ctyun_faults.py (asserts) and bench/ctyun_provider.py (counts).
A scenario injects one fault on the API call that carries the operation, runs the operation,
and if it fails runs it again, as a user re-running `pulumi up`/`destroy` would; then it tears
down and reads the emulator's report (tests/emulators/ctyun/state.py):

- `duplicate_orders`: create-cluster orders beyond one, plus compute nodes ordered beyond what
  the operation needed (an expand repeated after a lost answer shows here);
- `leaked`: what the stack still holds after teardown (clusters, nodes incl. orphans left by
  delete-cluster, EIPs, file systems, VPCs, subnets, groups, rules);
- `foreign_touched`: calls that changed or used a resource of another stack.

Besides the seven faults, `same_names` plants another stack's VPC, security group and cluster
under the names this stack uses (emulator `seed_foreign`) before the operation: nothing of
theirs may be adopted, changed or deleted. `lost_response` on create is "the create answer is
lost": the order went through, the client never heard.
"""

from __future__ import annotations

from typing import Any, Dict, List

from components.ctyun_hcc.cluster_provider import HccClusterProvider
from tests.integration.ctyun_fixtures import cluster_inputs

OPS = {
    "create": "/v4/cthpc/hpc/create-cluster",
    "expand": "/v4/cthpc/hpc/expand-cluster",
    "shrink": "/v4/cthpc/hpc/shrink-cluster",
    "delete": "/v4/cthpc/delete-cluster",
}
FAULTS = ("http500", "http502", "throttle", "drop", "lost_response", "slow_job", "fail_job")
OWNERSHIP = ("same_names",)
TIGHT_S = 0.8   # deadline of the first attempt in slow_job scenarios
SLOW_S = 1.5    # extra simulated time of the slowed job


def scenarios() -> List[tuple]:
    return [(f, op) for op in OPS for f in FAULTS] + [(f, op) for f in OWNERSHIP
                                                      for op in ("create", "delete")]


def _seed_same_names(emu) -> Dict[str, Any]:
    base = cluster_inputs()
    return emu.seed_foreign(owner="other-stack", vpc_name="k3-other-stack-vpc",
                            sg_name=base.get("securityGroupName") or "k3-sg",
                            cluster_name=base["clusterName"], compute_nodes=1)


def run_scenario(emu, fault: str, op: str, max_attempts: int = 3) -> Dict[str, Any]:
    provider = HccClusterProvider()
    start_count = {"expand": 2, "shrink": 3}.get(op, 3)
    target = {"expand": 4, "shrink": 1}.get(op, start_count)
    most_clusters = 0
    cid, outs, foreign = None, None, None
    if fault == "same_names" and op == "create":
        foreign = _seed_same_names(emu)
    if op != "create":
        r = provider.create(cluster_inputs(computeNodeCount=start_count))
        cid, outs = r.id, r.outs
    if fault == "same_names" and op == "delete":
        foreign = _seed_same_names(emu)
    orders_before = len(emu.report()["orders"])
    if fault in FAULTS:
        emu.faults({"path": OPS[op], "kind": fault, "seconds": SLOW_S})
    errors: List[str] = []
    done = False
    for attempt in range(max_attempts):
        tight = fault == "slow_job" and attempt == 0
        t = TIGHT_S if tight else 60
        props = cluster_inputs(computeNodeCount=target, createTimeoutS=t, updateTimeoutS=t,
                               deleteTimeoutS=t)
        try:
            if op == "create":
                r = provider.create(props)
                cid, outs = r.id, r.outs
            elif op in ("expand", "shrink"):
                outs = provider.update(cid, outs, props).outs
            else:
                provider.delete(cid, {**outs, **props})
            done = True
        except Exception as e:  # noqa: BLE001 - the scenario records what the user would see
            errors.append(f"{type(e).__name__}: {str(e)[:200]}")
        most_clusters = max(most_clusters, len(emu.inventory()["clusters"]))
        if done:
            break
    orders = emu.report()["orders"][orders_before:]
    creates = [o for o in orders if o["api"] == "hpc/create-cluster"]
    expanded = sum(o["nodes"] for o in orders if o["api"] == "hpc/expand-cluster")
    needed = max(0, target - start_count) if op == "expand" else 0
    duplicate_orders = max(0, len(creates) - 1) + max(0, expanded - needed)
    converged = done
    if done and op != "delete":
        converged = outs["computeNodeCount"] == target and outs["clusterStatus"] == "available"
    if foreign is not None and cid == foreign.get("clusterUUID"):
        converged = False   # it took the other stack's cluster as its own
    if op != "delete" and cid is not None and (foreign is None
                                               or cid != foreign.get("clusterUUID")):
        provider.delete(cid, {**outs, **cluster_inputs()})
    report = emu.report()
    inv = emu.inventory()
    return {"fault": fault, "op": op, "attempts": len(errors) + (1 if done else 0),
            "errors": errors, "converged": converged, "most_clusters": most_clusters,
            "duplicate_orders": duplicate_orders, "leaked": report["leakedTotal"],
            "leaked_items": report["leakedItems"],
            "foreign_touched": len(report["foreignTouched"]),
            "foreign_calls": report["foreignTouched"], "refused": report["refused"],
            "inventory": inv}
