"""Wall time of `python -m components plan` per stack, interpreter start included.

Targets (issue 2): at most 2 s per stack on a 2-core machine; a 64-node CTyun plan at most
1.5 x the 4-node time. Issue 18: aws-eks at most 1.2 s, ctyun-hcc at most 0.6 s. Prints
figures; asserts nothing (tests assert behaviour, not timings). The CPU column (user + system
time of the plan process) moves less than the wall time when other work shares the machine.

Bytecode: by default every case runs once untimed first, with Python's bytecode cache in a
private temporary directory (PYTHONPYCACHEPREFIX, PYTHONDONTWRITEBYTECODE removed), so the
timed runs load compiled modules as a user's second plan does (Python writes `__pycache__` by
default). `--no-bytecode-cache` keeps the caller's environment instead: with
PYTHONDONTWRITEBYTECODE=1 (as on the project's helper machines) every run compiles the
project's own modules from source again, about 0.4-0.6 s per plan.

`--floor` adds, per case, the import floor: a fresh interpreter importing, in the same order,
every module the plan loads except the project's own (`components`) and the program file
(Pulumi's SDKs, grpc, protobuf, yaml, the standard library...), and nothing else. The plan
cannot be faster than that without importing less of the SDKs. It imports with Python's cycle
collector off, as the plan runs its program (components/offline/runner.py), and leaves what it
imported out of the collector's passes at shutdown, as `python -m components` does
(components/__main__.py); "floor, collector on" is the same imports with the collector on and a
plain exit (the floor as this script measured it before the plan did either).

`--instructions` counts, instead of timing, the instructions each case executes, under
valgrind's cachegrind (`valgrind --tool=cachegrind --cache-sim=no`, https://valgrind.org/docs/manual/cg-manual.html,
read 2026-12-02; about 25 x slower): the same count whatever else the machine runs, so two
trees can be compared on a shared, loaded machine where CPU seconds move by 30 % from run to run.
With `--floor` it counts the import floor too, and the floor plus the project's own modules
(imported in the plan's order, collector off): what is left above that is the program's run, the
files and the exit. String hashing is fixed (PYTHONHASHSEED=0) so dict and set orders repeat.

    .venv/bin/python bench/plan_speed.py [--runs 5] [--no-bytecode-cache] [--floor] [--instructions]
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
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


def _plan(stack: str, extra, env) -> None:
    with tempfile.TemporaryDirectory() as out:
        subprocess.run([sys.executable, "-m", "components", "plan", "--stack", stack, "--quiet",
                        "--out", out, *extra], cwd=ROOT, check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, env=env)


def time_plan(stack: str, extra, runs: int, env=None):
    """(wall seconds, CPU seconds) of each run."""
    times, cpu = [], []
    for _ in range(runs):
        c0, t0 = _children_cpu_s(), time.perf_counter()
        _plan(stack, extra, env)
        times.append(time.perf_counter() - t0)
        cpu.append(_children_cpu_s() - c0)
    return times, cpu


#: what cachegrind prints of the instructions a process executed ("I   refs:      1,962,765,734")
_I_REFS = re.compile(r"I\s+refs:\s+([\d,]+)")


def instructions(argv, env) -> int:
    """The instructions `argv` executes, counted by valgrind's cachegrind (no cache simulation)."""
    env = dict(env or os.environ, PYTHONHASHSEED="0")
    done = subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
                           *argv], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    return int(_I_REFS.search(done.stderr).group(1).replace(",", ""))


def count_instructions(args, env) -> None:
    """--instructions: the count per case (and its floor, with --floor), in millions."""
    if shutil.which("valgrind") is None:
        sys.exit("--instructions needs valgrind on PATH (Debian: apt-get install valgrind)")
    print(f"{'case':<22} {'M instructions':>15}  (valgrind cachegrind; one run each)")
    for label, extra in CASES:
        stack = label.split()[0]
        with tempfile.TemporaryDirectory() as out:
            argv = [sys.executable, "-m", "components", "plan", "--stack", stack, "--quiet", "--out", out, *extra]
            if env is not None:
                subprocess.run(argv, cwd=ROOT, env=env, check=True, capture_output=True)  # fills the cache
            plan = instructions(argv, env)
        print(f"{label:<22} {plan / 1e6:>15.0f}")
        if args.floor:
            names = _loaded(stack, extra, env)
            start = instructions([sys.executable, "-c", "pass"], env)
            floor_ = instructions([sys.executable, "-W", "ignore", "-c", _IMPORT, "--no-collector", *names], env)
            own = instructions([sys.executable, "-W", "ignore", "-c", _IMPORT, "--no-collector", *names,
                                *_own_modules(stack, extra, env)], env)
            for what, n in (("  interpreter start", start), ("  its import floor", floor_),
                            ("  floor + own modules", own), ("  run, files, exit", plan - own)):
                print(f"{what:<22} {n / 1e6:>15.0f}")


#: run in the plan's process after the plan: the modules it loaded, in load order, but the
#: project's own, and the SDKs' lazy modules nobody touched (pulumi._utils._LazyModule)
_LOADED = """
import os, sys, tempfile
from components.cli.main import main
with tempfile.TemporaryDirectory() as out:
    main(["plan", "--quiet", "--out", out] + sys.argv[1:])
want_own = bool(os.environ.get("KK3_BENCH_OWN"))
for name, mod in list(sys.modules.items()):
    own = name == "components" or name.startswith("components.")
    if own == want_own and not name.startswith("__") and type(mod).__name__ != "_LazyModule":
        print(name)
"""

#: imports `names` (argv) in order in a fresh interpreter; a name that cannot be imported alone
#: (an alias a package registers, a module of the interpreter's) is skipped
_IMPORT = """
import gc, importlib, sys
if sys.argv[1] == "--no-collector":  # as the plan's program run (components/offline/runner.py)
    gc.disable()
for name in sys.argv[2:]:
    try:
        mod = importlib.import_module(name)
        getattr(mod, "__all__", None)  # a lazily loaded SDK module loads on attribute access
    except Exception:
        pass
if sys.argv[1] == "--no-collector":  # and out of the shutdown's passes, as components/__main__.py
    gc.freeze()
"""


def _loaded(stack: str, extra, env, own: bool = False):
    """The modules a plan of `stack` loads, in load order: the project's own if `own`, else all
    the others."""
    names = subprocess.run([sys.executable, "-c", _LOADED, "--stack", stack, *extra], cwd=ROOT,
                           check=True, capture_output=True, text=True,
                           env=dict(env or os.environ, KK3_BENCH_OWN="1" if own else "")).stdout.split()
    return names


def _own_modules(stack: str, extra, env):
    return _loaded(stack, extra, env, own=True)


def floor(stack: str, extra, runs: int, env, collector: str = "--no-collector"):
    """(wall seconds, CPU seconds) of importing what the plan imports, but the project's own;
    with Python's cycle collector off (`--no-collector`, as the plan runs its program) or on
    (`--collector`)."""
    names = _loaded(stack, extra, env)
    times, cpu = [], []
    for _ in range(runs + (env is not None)):  # one untimed run fills the bytecode cache
        c0, t0 = _children_cpu_s(), time.perf_counter()
        subprocess.run([sys.executable, "-W", "ignore", "-c", _IMPORT, collector, *names], cwd=ROOT,
                       check=True, env=env)
        times.append(time.perf_counter() - t0)
        cpu.append(_children_cpu_s() - c0)
    return times[-runs:], cpu[-runs:]


def bytecode_env(cache_dir: str) -> dict:
    """The environment of a plan that reads (and writes) compiled modules in `cache_dir`."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = cache_dir
    return env


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--no-bytecode-cache", action="store_true",
                    help="run in the caller's environment (no warm-up, no private bytecode cache)")
    ap.add_argument("--floor", action="store_true",
                    help="also time importing everything the plan imports but the project's own")
    ap.add_argument("--instructions", action="store_true",
                    help="count instructions under valgrind instead of timing (same on a loaded machine)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="plan-speed-pyc-") as cache:
        env = None if args.no_bytecode_cache else bytecode_env(cache)
        if args.instructions:
            return count_instructions(args, env)
        mode = ("caller's environment, PYTHONDONTWRITEBYTECODE="
                f"{os.environ.get('PYTHONDONTWRITEBYTECODE', '(unset)')}" if env is None
                else "bytecode cache warm (one untimed run per case first)")
        results = {}
        print(f"{'case':<22} {'median s':>9} {'min s':>7} {'max s':>7} {'median cpu s':>13}  "
              f"(runs={args.runs}; {mode})")
        for label, extra in CASES:
            stack = label.split()[0]
            if env is not None:
                _plan(stack, extra, env)
            t, cpu = time_plan(stack, extra, args.runs, env)
            results[label] = statistics.median(t)
            print(f"{label:<22} {statistics.median(t):>9.3f} {min(t):>7.3f} {max(t):>7.3f} "
                  f"{statistics.median(cpu):>13.3f}")
            if args.floor:
                for label, collector in (("  its import floor", "--no-collector"),
                                         ("  floor, collector on", "--collector")):
                    t, cpu = floor(stack, extra, args.runs, env, collector)
                    print(f"{label:<22} {statistics.median(t):>9.3f} {min(t):>7.3f} "
                          f"{max(t):>7.3f} {statistics.median(cpu):>13.3f}")
    ratio = results["ctyun-hcc 64 nodes"] / results["ctyun-hcc"]
    print(f"64-node / 4-node CTyun plan time: {ratio:.2f}x (target <= 1.5x)")
    print(f"aws-eks {results['aws-eks']:.3f} s (target <= 1.2 s), ctyun-hcc {results['ctyun-hcc']:.3f} s "
          "(target <= 0.6 s)")
    print(f"load average during the run: {os.getloadavg()[0]:.1f} (1 min) on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
