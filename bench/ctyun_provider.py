"""Benchmark of the HccCluster provider against the CTyun emulator.

Prints, per operation, wall time next to the emulator's simulated provisioning time (the sum of
the jobs it ran), the overhead against the target "at most 10% plus one poll interval", the API
calls made, and the fault-matrix counts (scenarios, converged, duplicate orders, leaks).

    .venv/bin/python bench/ctyun_provider.py [--job-seconds 3] [--poll 0.5] [--runs 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from components.ctyun_hcc.cluster_provider import HccClusterProvider  # noqa: E402
from tests.emulators.ctyun.harness import EmulatorProcess  # noqa: E402
from tests.integration.ctyun_fixtures import cluster_inputs  # noqa: E402


def _measure(emu, op):
    before_sim = emu.inventory()["simulatedSeconds"]
    before_calls = sum(emu.calls().values())
    t0 = time.monotonic()
    result = op()
    wall = time.monotonic() - t0
    sim = emu.inventory()["simulatedSeconds"] - before_sim
    return result, wall, sim, sum(emu.calls().values()) - before_calls


def lifecycle(emu, poll: float, runs: int, nodes: int):
    provider = HccClusterProvider()
    rows = {"create": [], "expand +2": [], "delete": []}
    for _ in range(runs):
        emu.reset()
        props = cluster_inputs(computeNodeCount=nodes, pollIntervalS=poll, createTimeoutS=600,
                               updateTimeoutS=600, deleteTimeoutS=600)
        r, *m = _measure(emu, lambda: provider.create(props))
        rows["create"].append(m)
        grown = dict(props, computeNodeCount=nodes + 2)
        outs, *m = _measure(emu, lambda: provider.update(r.id, r.outs, grown).outs)
        rows["expand +2"].append(m)
        _, *m = _measure(emu, lambda: provider.delete(r.id, outs))
        rows["delete"].append(m)
        assert emu.inventory()["leaked"] == 0
    print(f"{'operation':<10} {'wall s':>8} {'simulated s':>12} {'overhead s':>11} "
          f"{'budget s':>9} {'API calls':>10}")
    for name, ms in rows.items():
        wall = statistics.median(m[0] for m in ms)
        sim = statistics.median(m[1] for m in ms)
        calls = statistics.median(m[2] for m in ms)
        budget = 0.10 * sim + poll
        verdict = "ok" if wall - sim <= budget else "OVER"
        print(f"{name:<10} {wall:8.2f} {sim:12.2f} {wall - sim:11.2f} {budget:9.2f} "
              f"{calls:10.0f}  {verdict}")
    return rows


def matrix(emu):
    from tests.integration.ctyun_fault_matrix import run_scenario, scenarios

    results = []
    emu_poll = os.environ.get("BENCH_MATRIX_JOB_SECONDS", "0.15")
    for fault, op in scenarios():
        emu.reset()
        emu.settings(job_seconds=float(emu_poll))
        results.append(run_scenario(emu, fault, op))
    ops = sorted({r["op"] for r in results})
    print(f"fault matrix: {len(results)} scenarios ({len({r['fault'] for r in results})} faults x "
          f"{len(ops)} operations: {', '.join(ops)})")
    print(f"  converged: {sum(r['converged'] for r in results)}/{len(results)}; "
          f"duplicate orders: {sum(r['most_clusters'] > 1 for r in results)}; "
          f"leaks: {sum(r['leaked'] for r in results)}")
    print(f"  absorbed by retries (no user-visible error): "
          f"{sum(not r['errors'] for r in results)}; "
          f"needed one re-run: {sum(len(r['errors']) == 1 for r in results)}")
    for r in results:
        if r["errors"]:
            print(f"    {r['fault']:>13} x {r['op']:<6} first attempt: {r['errors'][0][:90]}")


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--job-seconds", type=float, default=3.0,
                   help="simulated provisioning time of each E-HPC job")
    p.add_argument("--poll", type=float, default=0.5, help="provider poll interval (s)")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--nodes", type=int, default=3, help="compute nodes")
    p.add_argument("--no-matrix", action="store_true")
    args = p.parse_args()
    with EmulatorProcess(job_seconds=args.job_seconds) as emu:
        os.environ.update(emu.env())
        print(f"CTyun emulator at {emu.url}; each job takes {args.job_seconds} s; "
              f"poll interval {args.poll} s; median of {args.runs} runs")
        lifecycle(emu, args.poll, args.runs, args.nodes)
        if not args.no_matrix:
            matrix(emu)
    return 0


if __name__ == "__main__":
    sys.exit(main())
