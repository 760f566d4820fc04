"""The fault matrix: every injected fault x every cluster operation, against the emulator.

Used by tests/integration/test_ctyun_faults.py (asserts) and bench/ctyun_provider.py (counts).
A scenario runs the operation the way a user does, as a whole `pulumi up` / `pulumi destroy`
of the stack (tests/integration/ctyun_stack.py keeps the state an engine would keep), with one
fault injected on the API call that carries the operation; a failed run is run again (up to 3
times), as a user would. Then the stack is destroyed and the emulator's report is read
(tests/emulators/ctyun/state.py):

- `duplicate_orders`: create orders beyond the one needed plus compute nodes ordered beyond
  what the operation needed; an order whose E-HPC job failed is not a duplicate (its leftovers
  are removed and it is ordered again on purpose);
- `leaked`: what the stack still holds after its destroy (orphaned compute nodes included);
- `foreign_touched`: calls that changed or used a resource of another stack.

Besides the seven faults, `same_names` plants another stack's security group and cluster under
the names this stack uses (emulator `seed_foreign`, in that stack's VPC), before the create or
before the delete: nothing of theirs may be adopted, changed or deleted (the create stops
before ordering: the name is taken by a cluster this stack cannot prove it made).
`lost_response` on create is "the create answer is lost": the order went through, the client
never heard. `http500`/`http502`/`drop` on create: the client cannot tell whether it ran (here
it did not); the order is recorded unconfirmed and never re-sent on its own: the run fails
saying so, and the user, finding nothing in the console, removes the record on purpose
(`pulumi state delete` of the order: its delete would look for the cluster, and fail rather
than drop a record whose cluster may still appear), then `pulumi up` orders once.
"""

from __future__ import annotations

from typing import Any, Dict, List

from tests.emulators.ctyun.state import SUBNET, VPC
from tests.integration.ctyun_stack import Stack

OPS = {
    "create": "/v4/cthpc/hpc/create-cluster",
    "expand": "/v4/cthpc/hpc/expand-cluster",
    "shrink": "/v4/cthpc/hpc/shrink-cluster",
    "delete": "/v4/cthpc/delete-cluster",
}
FAULTS = ("http500", "http502", "throttle", "drop", "lost_response", "slow_job", "fail_job")
OWNERSHIP = ("same_names",)
#: faults after which the client never hears an answer (the call may have run)
NO_ANSWER = ("http500", "http502", "drop")
TIGHT_S = 0.4   # deadline of the first attempt in slow_job scenarios
SLOW_S = 0.8    # extra simulated time of the slowed job
#: the account's existing VPC and subnet: the cluster calls are what the matrix is about (the
#: network side has its own fault test in test_ctyun_faults.py)
SHARED = {"vpcId": VPC, "subnetId": SUBNET}
#: kimi-k3:nodes (master serves too) before and after the operation
NODES = {"create": (4, 4), "expand": (3, 5), "shrink": (4, 2), "delete": (4, 4)}


def scenarios() -> List[tuple]:
    return [(f, op) for op in OPS for f in FAULTS] + [(f, op) for f in OWNERSHIP
                                                      for op in ("create", "delete")]


def _seed_same_names(emu, s: Stack) -> Dict[str, Any]:
    """Another stack's cluster and group under this stack's names, in that stack's VPC."""
    names = s.config()[0].names
    return emu.seed_foreign(owner="other-stack", vpc_name="k3-other-stack-vpc",
                            sg_name=names.security_group, cluster_name=names.cluster,
                            compute_nodes=1)


def _duplicates(report: Dict[str, Any], before: int, needed_nodes: int) -> int:
    orders = report["orders"][before:]
    failed = {api: [j["status"] in ("failed", "cancel", "console_failed")
                    for j in report["jobs"] if j["api"] == api]
              for api in ("hpc/create-cluster", "hpc/expand-cluster")}
    out, nodes = 0, 0
    seen = {"hpc/create-cluster": 0, "hpc/expand-cluster": 0}
    creates_ok = 0
    for o in report["orders"]:
        api = o["api"]
        if api not in seen:
            continue
        i = seen[api]
        seen[api] += 1
        if o not in orders:
            continue
        job_failed = i < len(failed[api]) and failed[api][i]
        if api == "hpc/create-cluster" and not job_failed:
            creates_ok += 1
        if api == "hpc/expand-cluster" and not job_failed:
            nodes += o["nodes"]
    out += max(0, creates_ok - 1)
    out += max(0, nodes - needed_nodes)
    return out


def run_scenario(emu, fault: str, op: str, max_attempts: int = 3) -> Dict[str, Any]:
    start, target = NODES[op]
    s = Stack(ctyun=SHARED)
    foreign = None
    if fault == "same_names" and op == "create":
        foreign = _seed_same_names(emu, s)
    if op != "create":
        s.up(kimi={"nodes": str(start)})
    if fault == "same_names" and op == "delete":
        foreign = _seed_same_names(emu, s)
    before = len(emu.report()["orders"])
    if fault in FAULTS:
        emu.faults({"path": OPS[op], "kind": fault, "seconds": SLOW_S})
    errors: List[str] = []
    done, out = False, None
    for attempt in range(max_attempts):
        # no answer to the create: its order is recorded unconfirmed and looked for during
        # createTimeoutS (kept short here: the emulator never ran it)
        tight = attempt == 0 and (fault == "slow_job" or (op == "create" and fault in NO_ANSWER))
        t = TIGHT_S if tight else 60
        s.fast.update(createTimeoutS=t, updateTimeoutS=t, deleteTimeoutS=t)
        try:
            if op == "delete":
                s.destroy()
            else:
                out = s.up(kimi={"nodes": str(target)})
            done = True
        except Exception as e:  # noqa: BLE001 - the scenario records what the user would see
            errors.append(f"{type(e).__name__}: {str(e)[:200]}")
            # what the message asks of the user: check the console; nothing of this stack
            # there, so the record is removed on purpose (`pulumi state delete` of the order)
            if "pulumi state delete" in str(e) and not emu.inventory()["clusters"]:
                s.state_delete("order")
        if done:
            break
    converged = done
    if done and op != "delete":
        converged = out["computeNodeCount"] == target - 1 and out["clusterStatus"] == "available"
    if foreign is not None and out and out.get("clusterUUID") == foreign.get("clusterUUID"):
        converged = False   # it took the other stack's cluster as its own
    s.fast.update(createTimeoutS=60, updateTimeoutS=60, deleteTimeoutS=60)
    s.destroy()
    report = emu.report()
    needed = max(0, target - start) if op == "expand" else 0
    return {"fault": fault, "op": op, "attempts": len(errors) + (1 if done else 0),
            "errors": errors, "converged": converged,
            "duplicate_orders": _duplicates(report, before, needed),
            "leaked": report["leakedTotal"], "leaked_items": report["leakedItems"],
            "foreign_touched": len(report["foreignTouched"]),
            "foreign_calls": report["foreignTouched"], "refused": report["refused"],
            "nothing_ordered": len(report["orders"]) == before}
