"""Wall time of `python -m components plan` per stack, interpreter start included.

Targets (issue 2): at most 2 s per stack on a 2-core machine; a 64-node CTyun plan at most
1.5 x the 4-node time. Prints figures; asserts nothing (tests assert behaviour, not timings).
The CPU column (user + system time of the plan process) moves less than the wall time when
other work shares the machine.

    .venv/bin/python bench/plan_speed.py [--runs 5]
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CASES = [
    ("ctyun-hcc", []),
    ("aws-eks", []),
    ("ctyun-hcc 64 nodes", ["--set", "kimi-k3:nodes=64"]),
]


def _children_cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def time_plan(stack: str, extra, runs: int):
    """(wall seconds, CPU seconds) of each run."""
    times, cpu = [], []
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as out:
            c0, t0 = _children_cpu_s(), time.perf_counter()
            subprocess.run([sys.executable, "-m", "components", "plan", "--stack", stack, "--quiet",
                            "--out", out, *extra], cwd=ROOT, check=True, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
            times.append(time.perf_counter() - t0)
            cpu.append(_children_cpu_s() - c0)
    return times, cpu


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    results = {}
    print(f"{'case':<22} {'median s':>9} {'min s':>7} {'max s':>7} {'median cpu s':>13}  (runs={args.runs})")
    for label, extra in CASES:
        stack = label.split()[0]
        t, cpu = time_plan(stack, extra, args.runs)
        results[label] = statistics.median(t)
        print(f"{label:<22} {statistics.median(t):>9.3f} {min(t):>7.3f} {max(t):>7.3f} "
              f"{statistics.median(cpu):>13.3f}")
    ratio = results["ctyun-hcc 64 nodes"] / results["ctyun-hcc"]
    print(f"64-node / 4-node CTyun plan time: {ratio:.2f}x (target <= 1.5x)")
    worst = max(results["ctyun-hcc"], results["aws-eks"])
    print(f"slowest default stack: {worst:.3f} s (target <= 2 s)")


if __name__ == "__main__":
    main()
