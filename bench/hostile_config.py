"""Figures for issue 10: hostile values into every string config key that reaches a rendered file.

Runs the harness of tests/integration/test_hostile_config.py (same cases, same judge) with every
fixed payload spliced into each key's known-good value (at the end and at the start), the
payload alone, and N generated values per key, and prints: config keys covered, hostile inputs
tried, refused, accepted and proven inert, accepted with a problem, and executed (commands that
ran although no script means to run them: must be 0).

    sudo .venv/bin/python bench/hostile_config.py [--random N] [--json] [--only KEY ...]

Needs root (the sandbox is a mount namespace + chroot). Prints the open holes by key.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
import warnings
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hypothesis.errors import NonInteractiveExampleWarning  # noqa: E402

from tests.integration.hostile_config import PAYLOADS, Verdict, judge  # noqa: E402
from tests.integration.sandbox import Sandbox, available  # noqa: E402
from tests.integration.test_hostile_config import BENCH_CASES, CASES, INPUTS_ONLY, SEEDS, hostile  # noqa: E402


def seed_of(stack, key):
    return SEEDS.get((stack, key)) or SEEDS[key]


def values_for(seed, valid, secret, n_random):
    out = [seed] + [seed + p for p in PAYLOADS] + [p + seed for p in PAYLOADS]
    if not secret:
        out += list(PAYLOADS)
    strategy = hostile(valid, secret)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NonInteractiveExampleWarning)
        out += [strategy.example() for _ in range(n_random)]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--random", type=int, default=10, help="generated values per key (default 10)")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    ap.add_argument("--only", action="append", metavar="KEY",
                    help="only this config key (e.g. kimi-k3:modelRevision; repeat for more)")
    args = ap.parse_args()
    why = available()
    if why:
        print(f"cannot run: {why}", file=sys.stderr)
        return 2
    sandbox = Sandbox(Path(tempfile.mkdtemp(prefix="kk3-hostile-")))
    totals, per_key, holes = Counter(), defaultdict(Counter), defaultdict(list)
    started = time.monotonic()
    cases = [c for c in CASES + BENCH_CASES if not args.only or c[1] in args.only]
    for stack, key, valid, extra, secret in cases:
        seed = seed_of(stack, key)
        for value in values_for(seed, valid, secret, args.random):
            try:
                v = judge(sandbox, stack, key, value, extra, secret, key in INPUTS_ONLY, seed)
            except subprocess.TimeoutExpired as e:  # a sandbox run that did not end: counted
                v = Verdict(False, problems=[f"the sandbox run did not end within {e.timeout} s"])
            kind = "refused" if v.refused and not v.problems else \
                "inert" if v.inert else "problem"
            for c in (totals, per_key[f"{stack} {key}"]):
                c["tried"] += 1
                c[kind] += 1
                c["executed"] += v.executed
            if kind == "problem" or v.executed:
                holes[f"{stack} {key}"].append((value, v.executed, v.problems[:1]))
    figures = {
        "config_keys_covered": len({k for _, k, _, _, _ in cases}),
        "key_stack_cases": len(cases),
        "hostile_inputs_tried": totals["tried"], "refused": totals["refused"],
        "accepted_inert": totals["inert"], "accepted_with_a_problem": totals["problem"],
        "executed": totals["executed"], "seconds": round(time.monotonic() - started, 1),
        "per_key": {k: dict(c) for k, c in per_key.items()},
        "open": {k: [repr(x[0])[:60] for x in h[:3]] for k, h in holes.items()},
    }
    if args.json:
        print(json.dumps(figures, indent=2))
        return 0
    print(f"config keys covered: {figures['config_keys_covered']} "
          f"({figures['key_stack_cases']} key x stack cases)")
    print(f"hostile inputs tried: {figures['hostile_inputs_tried']}")
    print(f"refused with one line naming the key: {figures['refused']}")
    print(f"accepted and inert: {figures['accepted_inert']}")
    print(f"accepted with a problem: {figures['accepted_with_a_problem']}")
    print(f"executed: {figures['executed']}")
    print(f"({figures['seconds']} s)")
    for k, c in sorted(per_key.items()):
        print(f"  {k:<40} tried {c['tried']:>4}  refused {c['refused']:>4}  inert {c['inert']:>4}"
              f"  problem {c['problem']:>3}  executed {c['executed']:>3}")
    for k, h in holes.items():
        print(f"OPEN {k}: e.g. {h[0][0]!r} ({h[0][2]})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
