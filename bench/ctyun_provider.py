"""Benchmark of the CTyun providers against the CTyun emulator.

Drives the whole CTyun resource chain as `pulumi up` / `pulumi destroy` do
(tests/integration/ctyun_stack.py: owner token, network, security group, cluster order,
cluster) and prints, per operation, wall time next to the emulator's simulated provisioning
time (its jobs plus the delete delay), the overhead against the target "at most 10% plus one
poll interval", and the API calls made (E-HPC; VPC and EIP; bare metal: RAID lookups; file
services: the release proof); then the fault-matrix counts
(scenarios, converged, duplicate orders, leaks, foreign resources touched).

    .venv/bin/python bench/ctyun_provider.py [--job-seconds 3] [--poll 0.5] [--runs 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.emulators.ctyun.harness import EmulatorProcess  # noqa: E402
from tests.integration.ctyun_stack import Stack  # noqa: E402


def _measure(emu, op):
    before_sim = emu.report()["simulatedSeconds"]
    before = Counter(emu.calls())
    t0 = time.monotonic()
    op()
    wall = time.monotonic() - t0
    sim = emu.report()["simulatedSeconds"] - before_sim
    calls = Counter(emu.calls())
    calls.subtract(before)

    def on(*prefixes):
        return sum(n for p, n in calls.items() if p.startswith(prefixes))
    # E-HPC; VPC (its host also serves /v4/eip/); bare metal (RAID); file services
    return (wall, sim, on("/v4/cthpc/"), on("/v4/vpc/", "/v4/eip/"), on("/v4/ebm/"),
            on("/v4/sfs/", "/v4/oceanfs/"))


def answer_latency(emu, samples: int = 20) -> float:
    """Median seconds the emulator takes to answer one signed call (list-regions)."""
    from components.ctyun_hcc.api.ehpc import Ehpc
    from components.ctyun_hcc.api.transport import Transport
    from tests.emulators.ctyun.state import REGION

    api = Ehpc(Transport(), REGION)
    times = []
    for _ in range(samples):
        t0 = time.monotonic()
        api.list_regions()
        times.append(time.monotonic() - t0)
    return statistics.median(times)


def lifecycle(emu, poll: float, runs: int, nodes: int):
    fast = {"pollIntervalS": poll, "timeoutS": 600, "createTimeoutS": 600,
            "updateTimeoutS": 600, "deleteTimeoutS": 600, "lostAnswerWaitS": 60}
    rows = {"create": [], "expand +2": [], "delete": []}
    for i in range(runs):
        emu.reset()
        s = Stack(stack=f"bench-{i}", fast=fast)
        rows["create"].append(_measure(emu, lambda: s.up(kimi={"nodes": str(nodes + 1)})))
        rows["expand +2"].append(_measure(emu, lambda: s.up(kimi={"nodes": str(nodes + 3)})))
        rows["delete"].append(_measure(emu, s.destroy))
        report = emu.report()
        assert report["leakedTotal"] == 0 and report["foreignTouched"] == [], report
    latency = answer_latency(emu)
    print(f"emulator answer time per call: {latency * 1000:.0f} ms (median of 20)")
    print(f"{'operation':<10} {'wall s':>7} {'sim s':>6} {'overhead s':>10} {'budget s':>8} "
          f"{'E-HPC calls':>11} {'VPC+EIP calls':>13} {'EBM calls':>9} {'SFS calls':>9}")
    for name, ms in rows.items():
        wall, sim, hpc, vpc, ebm, sfs = (statistics.median(m[k] for m in ms) for k in range(6))
        budget = 0.10 * sim + poll
        verdict = "ok" if wall - sim <= budget else "OVER"
        print(f"{name:<10} {wall:7.2f} {sim:6.2f} {wall - sim:10.2f} {budget:8.2f} "
              f"{hpc:11.0f} {vpc:13.0f} {ebm:9.0f} {sfs:9.0f}  {verdict}")
    return rows


def matrix(emu, job_seconds: float):
    from tests.integration.ctyun_fault_matrix import run_scenario, scenarios

    results = []
    for fault, op in scenarios():
        emu.reset()
        emu.settings(job_seconds=job_seconds)
        results.append(run_scenario(emu, fault, op))
    ops = sorted({r["op"] for r in results})
    print(f"fault matrix: {len(results)} scenarios ({len({r['fault'] for r in results})} kinds "
          f"x {len(ops)} operations, same_names on create and delete)")
    ok = sum(r["converged"] or (r["fault"] == "same_names" and r["nothing_ordered"])
             for r in results)
    print(f"  converged (or refused with nothing ordered): {ok}/{len(results)}; duplicate "
          f"orders: {sum(r['duplicate_orders'] for r in results)}; leaks: "
          f"{sum(r['leaked'] for r in results)}; foreign resources touched: "
          f"{sum(r['foreign_touched'] for r in results)}")
    refused = [r for r in results if r["fault"] == "same_names" and not r["converged"]]
    print(f"  no error shown: {sum(not r['errors'] for r in results)}; one clear error then "
          f"converged on re-run: {sum(len(r['errors']) == 1 and r['converged'] for r in results)}"
          f"; refused on every run with nothing ordered (another stack's names): "
          f"{sum(r['nothing_ordered'] for r in refused)}")
    for r in results:
        if r["errors"]:
            print(f"    {r['fault']:>13} x {r['op']:<6} first attempt: {r['errors'][0][:100]}")


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--job-seconds", type=float, default=3.0,
                   help="simulated provisioning time of each E-HPC job")
    p.add_argument("--poll", type=float, default=0.5, help="provider poll interval (s)")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--nodes", type=int, default=3, help="compute nodes")
    p.add_argument("--matrix-job-seconds", type=float, default=0.08)
    p.add_argument("--no-matrix", action="store_true")
    args = p.parse_args()
    with EmulatorProcess(job_seconds=args.job_seconds) as emu:
        os.environ.update(emu.env())
        print(f"CTyun emulator at {emu.url}; each job takes {args.job_seconds} s; "
              f"poll interval {args.poll} s; median of {args.runs} runs")
        lifecycle(emu, args.poll, args.runs, args.nodes)
        if not args.no_matrix:
            matrix(emu, args.matrix_job_seconds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
