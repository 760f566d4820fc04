"""`python -m components plan`: the whole program, offline, written out for review.

Runs the real `__main__.py` under Pulumi's mock engine (no cloud account, no Pulumi CLI, no
network), prints a summary a person reads in a minute, and writes `out/<stack>/`: `plan.json`
(the plan, the exact vLLM argv/env per node, every resource with its inputs, secrets redacted)
and every script or manifest the target would run. Bad input exits 2 with one line.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Dict, List, Optional

from ..offline import order
from ..offline.runner import ROOT as PROJECT_ROOT, ProgramRun, StackNotFound, run_program, without_cycle_collection
from . import plan_ops

EXIT_BAD_INPUT = 2
DEFAULT_STACKS = ("ctyun-hcc", "aws-eks")


def plan_document(run: ProgramRun) -> Dict:
    """The plan.json contract (README.md, "Set up and run"; docs/architecture.md, "The flow")."""
    dep = run.deployment
    plan, spec = dep.plan, dep.spec
    par, mem = plan.parallelism, plan.memory
    plan_dict = plan.to_dict()
    return {
        "stack": run.stack,
        "target": dep.shared.target,
        "model": {"key": plan.model, "name": plan.model_display_name, "repo_id": plan.model_repo_id},
        "hardware": {
            "accelerator": plan.accelerator,
            "node_shape": plan.node_shape,
            "devices_per_node": plan.devices_per_node,
            "device_memory_gib": mem.device_memory_gib,
            "nodes": plan.nodes,
            # serving replicas of `nodes` nodes each, and the instances they take in all
            "replicas": dep.shared.replicas,
            "instances": plan.nodes * dep.shared.replicas,
        },
        "parallelism": {
            "tensor_parallel": par.tensor_parallel,
            "data_parallel": par.data_parallel,
            "pipeline_parallel": par.pipeline_parallel,
            "expert_parallel": par.expert_parallel,
            "enable_expert_parallel": par.enable_expert_parallel,
        },
        "memory": {
            "weights_gib_per_device": mem.weights_gib_per_device,
            "kv_cache_gib_per_device": mem.kv_cache_gib_per_device,
            "reserve_gib_per_device": mem.reserve_gib_per_device,
            "usable_gib_per_device": mem.usable_gib_per_device,
            "gpu_memory_utilization": mem.gpu_memory_utilization,
            "kv_cache_dtype": mem.kv_cache_dtype,
            "kv_tokens_per_replica": mem.kv_tokens_per_replica,
        },
        "serving": {
            "max_model_len": plan.max_model_len,
            "max_num_seqs": plan.max_num_seqs,
            "max_num_batched_tokens": plan.max_num_batched_tokens,
            "full_length_seqs_per_replica": plan.full_length_seqs_per_replica,
            "port": spec.port,
            "served_model_name": spec.served_model_name,
            "image": spec.image,
            "vllm_version": spec.vllm_version,
        },
        "cold_start": plan_dict["cold_start"],
        **plan_ops.document(run),  # cost, clock, metric sources (components/cli/plan_ops.py)
        "notes": list(plan.notes),
        "warnings": list(run.warnings),
        # what is fetched from outside, and whether each is pinned (components/config/pins.py)
        "pins": [p.to_dict() for p in dep.pins],
        # what a real `pulumi up` of this stack would refuse (the offline plan only warns)
        "deploy_requirements": [r.to_dict() for r in dep.requirements],
        "launch": [
            {"role": r.role, "node_rank": r.node_rank, "argv": list(r.argv), "env": r.env_dict,
             "secret_env": list(spec.secret_env)}
            for r in spec.roles()
        ],
        # every resource with its engine URN and the URNs of what it waits for on a real
        # `pulumi up` (explicit dependencies, those through its inputs, its provider: order.py)
        # in a stable order (order.stable: after its parent and what it waits for, ties by URN)
        # with inputs' keys sorted and paths in the project relative: two plans of one config
        # are the same file, from any checkout
        "resources": [
            {"type": r["type"], "name": r["name"], "parent": r["parent"],
             "inputs": order.sorted_keys(order.portable(r["inputs"], str(PROJECT_ROOT))), "urn": r["urn"],
             "dependsOn": order.waits_for(r)}
            for r in order.stable(run.resources)
        ],
        "outputs": order.sorted_keys(run.outputs),
        "plan": plan_dict,
    }


class OutputError(Exception):
    """`--out` cannot be written (a file, or a directory that is not a plan output)."""


#: every path a plan writes (plan.json; the ctyun scripts and the API-key guard; aws-eks
#: manifests `manifests/<kind>-<name>.yaml`; dashboards and alert rules): a directory holding
#: anything else is not (only) an earlier plan, and replacing it would delete that
PLAN_FILES = re.compile(r"plan\.json|[a-z0-9_]+\.sh|api-guard/[A-Za-z0-9_]+\.py"
                        r"|manifests/[a-z0-9.-]+\.yaml|dashboards/[a-z0-9.-]+\.json"
                        r"|prometheus/[a-z0-9.-]+\.yml")
PLAN_DIRS = frozenset({"api-guard", "manifests", "dashboards", "prometheus"})


def check_out_dir(out_dir: Path) -> None:
    """Refuse an output path that is a file, or a directory holding anything but an earlier
    plan (its whole content is replaced, so it must be ours: empty, or with our plan.json and
    nothing a plan does not write: no other file, no symlink)."""
    if out_dir.exists() and not out_dir.is_dir():
        raise OutputError(f"--out {out_dir} is a file; give a directory (it is created)")
    if out_dir.is_dir() and any(out_dir.iterdir()):
        if not _is_plan_output(out_dir):
            raise OutputError(f"--out {out_dir} is a directory that holds something else than a "
                              "plan (no plan.json of this command); give a new or empty directory")
        foreign = _not_written_by_a_plan(out_dir)
        if foreign:
            raise OutputError(f"--out {out_dir} holds {foreign!r}, which no plan writes (the whole "
                              "directory is replaced); move it away or give another directory")
    for parent in out_dir.resolve().parents:
        if parent.exists() and not parent.is_dir():
            raise OutputError(f"--out {out_dir}: {parent} is a file")


def _not_written_by_a_plan(d: Path) -> Optional[str]:
    """The first entry of `d` (relative path) that a plan does not write, or None."""
    for root, dirs, files in os.walk(d):
        for name in sorted(dirs) + sorted(files):
            p = Path(root) / name
            rel = p.relative_to(d).as_posix()
            ok = rel in PLAN_DIRS if name in dirs else PLAN_FILES.fullmatch(rel) and p.is_file()
            if p.is_symlink() or not ok:
                return rel
    return None


def _is_plan_output(d: Path) -> bool:
    try:
        doc = json.loads((d / "plan.json").read_text())
    except (OSError, ValueError):
        return False
    return isinstance(doc, dict) and {"stack", "target", "launch"} <= set(doc)


def write_out(run: ProgramRun, out_dir: Path) -> List[Path]:
    """Write the plan into a fresh sibling directory, then swap it in: `out_dir` holds either
    the previous complete plan or the new complete one, never a mix (a file the new plan does
    not write, e.g. a LeaderWorkerSet after `nodes=2` then the default, is gone)."""
    check_out_dir(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    fresh = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.new-", dir=out_dir.parent))
    try:
        doc = plan_document(run)
        rels = ["plan.json"]
        (fresh / "plan.json").write_text(json.dumps(doc, indent=2, sort_keys=False) + "\n")
        artifacts = {**run.deployment.rendered.files, **plan_ops.files(run)}  # + dashboards, alerts
        for rel, text in sorted(artifacts.items()):
            p = fresh / rel
            if not p.resolve().is_relative_to(fresh.resolve()):
                raise OutputError(f"artifact path {rel!r} leaves the output directory")
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text)
            p.chmod(0o755 if rel.endswith(".sh") else 0o644)
            rels.append(rel)
        fresh.chmod(0o755)
        old = None
        if out_dir.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.old-", dir=out_dir.parent))
            os.replace(out_dir, old / "plan")
        os.replace(fresh, out_dir)
        if old is not None:
            shutil.rmtree(old)
    except BaseException:
        shutil.rmtree(fresh, ignore_errors=True)
        raise
    return [out_dir / rel for rel in rels]


def _other_warnings(run: ProgramRun) -> List[str]:
    """The program's warnings, less those the summary prints as deploy requirements."""
    keys = [r.to_dict()["key"] for r in run.deployment.requirements]
    return [w for w in run.warnings if not ("would stop" in w and any(k in w for k in keys))]


def order_lines(run: ProgramRun) -> List[str]:
    """The resources in the order a real `pulumi up` can create them, each with what it waits for
    (`plan --order`); components of the program create nothing and are listed apart."""
    by = {r["urn"]: r for r in run.resources}

    def label(urn: str) -> str:
        r = by.get(urn)
        return r["name"] if r else urn

    lines = []
    for i, wave in enumerate(order.waves(run.resources)):
        lines.append(f"  wave {i}:")
        for urn in wave:
            r = by[urn]
            deps = sorted({label(d) for d in order.waits_for(r)})
            lines.append(f"    {r['type']:<46} {r['name']}" + (f"  (waits for {', '.join(deps)})" if deps else ""))
    comps = [r["name"] for r in run.resources if not order.creates(r)]
    if comps:
        lines.append(f"  components (create nothing): {', '.join(comps)}")
    return lines


def hardware_line(plan, replicas: int) -> str:
    """The summary's hardware row: every instance the stack runs, replicas included."""
    one = (f"{plan.nodes} x {plan.node_shape} ({plan.devices_per_node} x {plan.accelerator}, "
           f"{plan.memory.device_memory_gib:.0f} GiB each)")
    if replicas == 1:
        return one
    return (f"{plan.nodes * replicas} x {plan.node_shape}: {replicas} replicas of {plan.nodes} "
            f"node{'s' if plan.nodes > 1 else ''} each ({plan.devices_per_node} x "
            f"{plan.accelerator}, {plan.memory.device_memory_gib:.0f} GiB each), behind vllm-router")


def summary(run: ProgramRun, written: List[Path], show_order: bool = False) -> str:
    dep = run.deployment
    ops = plan_ops.document(run)
    explain = plan_ops.replace_row(dep.plan.explain(), "cost",
                                   plan_ops.cost_estimate.summary_line(ops["cost"]))
    explain = plan_ops.replace_row(explain, "hardware", hardware_line(dep.plan, dep.shared.replicas))
    lines = [f"== {run.stack} ({dep.shared.target}) ==", explain, *plan_ops.summary_lines(ops), ""]
    for req in (r.to_dict() for r in dep.requirements):
        lines.append(f"warning: a real `pulumi up` would stop: {req['key']} {req['problem']}; {req['fix']}")
    lines.append("vLLM head:")
    lines.append("  " + " ".join(dep.spec.head.argv))
    lines.append(f"resources ({len(run.resources)}):")
    if show_order:
        lines += order_lines(run)
    else:
        # the order plan.json has (creation order, ties by URN): two plans of one config print alike
        for r in order.stable(run.resources):
            lines.append(f"  {r['type']:<48} {r['name']}" + (f"  (in {r['parent']})" if r["parent"] else ""))
    lines.append(f"follow a real `pulumi up`'s long waits: python -m components status --stack {run.stack}")  # progress
    lines.append("written:")
    lines += [f"  {p.relative_to(Path.cwd()) if p.is_relative_to(Path.cwd()) else p}" for p in written]
    return "\n".join(lines)


def _parse_sets(values: List[str]) -> Dict[str, str]:
    out = {}
    for item in values:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(f"--set {item!r} is not KEY=VALUE; write e.g. --set kimi-k3:nodes=2")
        out[key.strip()] = value
    return out


def register(sub) -> None:
    """Add the `plan` subcommand to the CLI's subparsers."""
    p = sub.add_parser("plan", help="run the program offline and write every script, manifest and the plan")
    p.add_argument("--stack", action="append", help="stack name (repeatable; default: ctyun-hcc and aws-eks)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override stack config, e.g. --set kimi-k3:nodes=8")
    p.add_argument("--out", type=Path, help="output directory (default out/STACK/)")
    p.add_argument("--quiet", action="store_true", help="print only the files written")
    p.add_argument("--order", action="store_true",
                   help="list the resources in the order `pulumi up` creates them, with what each waits for")
    p.set_defaults(func=run)


def run(args) -> int:
    """The command, with Python's cycle collector off from its first import to its last file
    (offline/runner.py `without_cycle_collection`, which the program's run already uses): the
    SDK import before the run and the files written after it cost another ~50 passes over the
    objects imported so far (docs/benchmarks.md, "Offline plan speed")."""
    with without_cycle_collection():
        return _run(args)


def _run(args) -> int:
    import pulumi

    from ..inference.errors import KimiK3Error

    stacks = args.stack or list(DEFAULT_STACKS)
    try:
        overrides = _parse_sets(args.set)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    def out_dir_of(stack: str) -> Path:
        return args.out if args.out and len(stacks) == 1 else (args.out or Path("out")) / stack

    try:  # before any run: a bad --out is one line, not a traceback after the first stack
        for stack in stacks:
            check_out_dir(out_dir_of(stack))
    except OutputError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    for stack in stacks:
        where = f"stack {stack}: " if len(stacks) > 1 else ""
        try:
            run_ = run_program(stack, overrides)
        except (KimiK3Error, pulumi.RunError, StackNotFound) as e:
            print(f"error: {where}{e}", file=sys.stderr)
            return EXIT_BAD_INPUT
        for line in _other_warnings(run_):
            print(f"warning: {where}{line}", file=sys.stderr)
        try:
            written = write_out(run_, out_dir_of(stack))
        except (OutputError, OSError) as e:
            print(f"error: {where}cannot write {out_dir_of(stack)}: {e}", file=sys.stderr)
            return EXIT_BAD_INPUT
        if args.quiet:
            print("\n".join(str(p) for p in written))
        else:
            print(summary(run_, written, show_order=args.order))
            print()
    return 0
