"""The fault matrix: every injected fault x every cluster operation, run against the emulator.

Used by tests/integration/test_ctyun_faults.py (asserts) and bench/ctyun_provider.py (counts).
A scenario injects one fault on the API call that carries the operation, runs the operation,
and if it fails runs it again, as a user re-running `pulumi up`/`destroy` would. It records the
attempts, the largest number of clusters alive at once (a duplicate order shows up here), and
what the emulator still bills after the scenario has torn everything down.
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
TIGHT_S = 0.8   # deadline of the first attempt in slow_job scenarios
SLOW_S = 1.5    # extra simulated time of the slowed job


def scenarios() -> List[tuple]:
    return [(f, op) for op in OPS for f in FAULTS]


def run_scenario(emu, fault: str, op: str, max_attempts: int = 3) -> Dict[str, Any]:
    provider = HccClusterProvider()
    start_count = {"expand": 2, "shrink": 3}.get(op, 3)
    target = {"expand": 4, "shrink": 1}.get(op, start_count)
    most_clusters = 0
    cid, outs = None, None
    if op != "create":
        r = provider.create(cluster_inputs(computeNodeCount=start_count))
        cid, outs = r.id, r.outs
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
            errors.append(f"{type(e).__name__}: {str(e)[:120]}")
        most_clusters = max(most_clusters, len(emu.inventory()["clusters"]))
        if done:
            break
    converged = done
    if done and op != "delete":
        converged = outs["computeNodeCount"] == target and outs["clusterStatus"] == "available"
    if op != "delete" and cid is not None:
        provider.delete(cid, {**outs, **cluster_inputs()})
    inv = emu.inventory()
    return {"fault": fault, "op": op, "attempts": len(errors) + (1 if done else 0),
            "errors": errors, "converged": converged, "most_clusters": most_clusters,
            "leaked": inv["leaked"], "inventory": inv}
