"""One clock from `pulumi up` to the first accepted token: the phases, the plan's estimate of
each, and (from the progress records) the time each really took. Pure.

The planner's cold start (components/inference/coldstart.py) starts when the nodes are up (CTyun)
or the block starts (AWS). A user waits longer than that: for the cluster, the bootstrap, the
weights, the broadcast, the gate. Each phase here names the figure it uses and where it comes
from; a phase nobody documents gets no estimate (None) but its bound (the deadline kimi-k3 gives
it), and the total says so instead of inventing it.

- ctyun-hcc: order (VPC, subnet, security group, the E-HPC order call) -> cluster ready (E-HPC
  provisions the bare-metal nodes) -> bootstrap (host key, master in the queue, NVMe mounts) ->
  weights and image (on the master) -> broadcast (to every node) -> engine (vLLM start) -> gate
  (the acceptance checks);
- aws-eks: infrastructure (VPC, EKS, system nodes, add-ons) -> block wait (until the Capacity
  Block starts) -> nodes -> staging -> engine -> gate;
- aws-eks on HyperPod, end to end: infrastructure (as above) -> HyperPod cluster and operator ->
  plan wait (until the training plan starts) -> nodes (HyperPod provisions them) -> staging (the
  operator's download) -> engine -> gate; on a HyperPod cluster of yours only staging and engine
  (the operator deploys; there is no gate).

`measure(phases, records)` reads the progress records of a run (components/progress/record.py)
and gives each phase the time its progress phases took (`measured_by`: names or name prefixes;
AWS's nodes, staging and engine are measured together by the readiness gate). The records are
the latest run's (a run marker per `pulumi up`), so a second `pulumi up`, a resize or a restart
shows what that update waited for, not the first deployment's times; a phase it did not run
shows no measured time. Progress phases that ran side by side (one `vllm-start-r<i>` per
replica, Pulumi's parallel steps) count once: a clock phase's measure is the wall time its
progress phases covered (the union of their intervals), not the sum of their durations.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

#: aws/containers-roadmap issue #1227 ("[EKS] : Reduction in EKS cluster creation time", read
#: 2026-12-01): "EKS cluster control plane provisioning time currently averages 15 minutes."
EKS_CONTROL_PLANE_S = 15 * 60
EKS_SOURCE = "https://github.com/aws/containers-roadmap/issues/1227"
#: assumption: the system node group and the Helm add-ons after the control plane
EKS_REST_S = 5 * 60
#: assumption: the API calls before E-HPC provisions (VPC, subnet, security group, the order)
ORDER_S = 60
#: assumption: host key pin, the master in the queue and mkfs + mount of the NVMe disks
BOOTSTRAP_S = 5 * 60
#: assumption: the functional checks and the load part of the acceptance gate
GATE_S = 2 * 60
#: the broadcast job's Slurm limit (bcast.sh: #SBATCH --time=01:00:00)
BROADCAST_LIMIT_S = 3600
#: what measures the cluster on CTyun: the order, or on a later `pulumi up` the resize
#: (components/ctyun_hcc/cluster_ops.py)
CLUSTER_BY = ("ehpc-order", "ehpc-expand", "ehpc-shrink")
#: the engine on CTyun: every replica's Slurm job (`vllm-start`, replica i > 0 `vllm-start-r<i>`,
#: service.py) and, with several, the router on the master (router_service.py)
CTYUN_ENGINE_BY = ("vllm-start", "vllm-start-", "router-start")
#: the gate: the acceptance checks and, on aws-eks with several replicas, the wait for every
#: replica's pod before each is asked once (components/aws_eks/readiness.py `replicas`)
GATE_BY = ("accept-gate", "replicas")


@dataclass(frozen=True)
class ClockPhase:
    name: str
    estimate_s: Optional[int]  # None: not documented, not estimated
    basis: str  # where the figure comes from (or why there is none)
    bound_s: Optional[int] = None  # the deadline kimi-k3 gives it, when it has no estimate
    measured_by: Tuple[str, ...] = ()  # progress phase names; a trailing '-' is a prefix

    def to_dict(self) -> Dict[str, Any]:
        d = asdict(self)
        d["measured_by"] = list(self.measured_by)
        return d


def _phase(cold: Mapping[str, Any], name: str) -> Optional[Mapping[str, Any]]:
    return next((p for p in cold.get("phases") or () if p.get("name") == name), None)


def _engine(cold: Mapping[str, Any]) -> Tuple[int, str]:
    parts = [p for n in ("load", "compile", "graphs") if (p := _phase(cold, n))]
    if parts:
        return (sum(int(p["seconds"]) for p in parts),
                "the plan: " + " + ".join(f"{p['name']} {p['seconds']} s" for p in parts))
    return int(cold.get("estimate_s") or 0), "the plan's vLLM start"


def _gate(known: Optional[Tuple[int, str]]) -> ClockPhase:
    """The acceptance gate: GATE_S for the functional checks and the load part, plus the
    known-answer checks' estimate when there is one (accept/known_cost.gate_clock)."""
    base = "assumption: the functional checks and the load part (2 min)"
    seconds, why = known or (0, "")
    return ClockPhase("gate", GATE_S + int(seconds), f"{base}; {why}" if why else base, None,
                      GATE_BY)


def ctyun_phases(cold: Mapping[str, Any], *, checkpoint_bytes: int, nvme_gb_per_s: float,
                 order_timeout_s: Optional[int] = None,
                 known: Optional[Tuple[int, str]] = None) -> List[ClockPhase]:
    stage = _phase(cold, "stage")
    engine_s, engine_why = _engine(cold)
    bcast = int(round(checkpoint_bytes / (nvme_gb_per_s * 1e9)))
    return [
        ClockPhase("order", ORDER_S, "assumption: API calls for the VPC, subnet, security group "
                   "and the E-HPC order"),
        ClockPhase("cluster-ready", None, "E-HPC does not document how long it takes to "
                   "provision bare-metal nodes", order_timeout_s, CLUSTER_BY),
        ClockPhase("bootstrap", BOOTSTRAP_S, "assumption: host key, the master in the queue, "
                   "formatting and mounting the NVMe disks", None,
                   ("bootstrap-host-key-pin", "bootstrap-master-in-queue", "bootstrap-nvme-mount")),
        ClockPhase("weights-and-image", int(stage["seconds"]) if stage else None,
                   (f"the plan: {stage['source']}" if stage else "no staging in the plan")
                   + "; the SIF image's install is not estimated (its size is not in the plan)",
                   None, ("weights-stage", "weights-stage-", "bootstrap-sif-image")),
        ClockPhase("broadcast", bcast, f"assumption: {checkpoint_bytes / 1e9:,.0f} GB over MPI at "
                   f"one NVMe disk's read rate ({nvme_gb_per_s:g} GB/s); the job's limit is 1 h",
                   BROADCAST_LIMIT_S, ("weights-broadcast",)),
        ClockPhase("engine", engine_s, engine_why, int(cold.get("startup_timeout_s") or 0) or None,
                   CTYUN_ENGINE_BY),
        _gate(known),
    ]


def aws_phases(cold: Mapping[str, Any], *, block_start: Optional[str] = None,
               known: Optional[Tuple[int, str]] = None) -> List[ClockPhase]:
    node = _phase(cold, "node")
    wait = _phase(cold, "wait")
    stage = _phase(cold, "stage")
    mirror = _phase(cold, "mirror")
    engine_s, engine_why = _engine(cold)
    gate_by = ("readiness-gate",)
    block = ("until the Capacity Block starts"
             + (f" ({block_start})" if block_start else "") + ": 0 when it is already active")
    if mirror:
        block += (f"; the S3 mirror fills meanwhile (~{int(mirror['seconds']) // 60} min), and a "
                  "block starting sooner stages its first start from the hub")
    return [
        ClockPhase("infrastructure", EKS_CONTROL_PLANE_S + EKS_REST_S,
                   f"EKS control plane provisioning averages 15 min ({EKS_SOURCE}); assumption: "
                   f"{EKS_REST_S // 60} min more for the system nodes and add-ons"),
        ClockPhase("block-wait", None, block, None, ("block-start",)),
        ClockPhase("nodes", int(node["seconds"]) if node else 0,
                   f"the plan: {node['source']}" if node else "the plan has no node phase",
                   None, gate_by),
        ClockPhase("staging", (int(stage["seconds"]) if stage else 0)
                   + (int(wait["seconds"]) if wait else 0),
                   f"the plan: {stage['source']}" if stage else "nothing staged", None, gate_by),
        ClockPhase("engine", engine_s, engine_why, int(cold.get("startup_timeout_s") or 0) or None,
                   gate_by),
        _gate(known),
    ]


#: what the HyperPod path's own waits are recorded as (components/aws_eks/hyperpod/readiness.py)
HYPERPOD_GATE_BY = ("endpoint-deploy", "readiness-gate")


def hyperpod_phases(cold: Mapping[str, Any], *, plan_start: Optional[str] = None,
                    end_to_end: bool = True) -> List[ClockPhase]:
    """The HyperPod path's phases. SageMaker documents no duration for creating a HyperPod
    cluster or provisioning its nodes: those phases are not estimated (said, not invented)."""
    stage = _phase(cold, "stage")
    engine_s, engine_why = _engine(cold)
    staging = ClockPhase("staging", int(stage["seconds"]) if stage else 0,
                         f"the plan: {stage['source']} (the operator's download)" if stage else "nothing staged",
                         None, HYPERPOD_GATE_BY if end_to_end else ())
    engine = ClockPhase("engine", engine_s, engine_why, int(cold.get("startup_timeout_s") or 0) or None,
                        HYPERPOD_GATE_BY if end_to_end else ())
    if not end_to_end:
        return [staging, engine]
    wait = ("until the training plan starts" + (f" ({plan_start})" if plan_start else "")
            + ": 0 when it is already active")
    return [
        ClockPhase("infrastructure", EKS_CONTROL_PLANE_S + EKS_REST_S,
                   f"EKS control plane provisioning averages 15 min ({EKS_SOURCE}); assumption: "
                   f"{EKS_REST_S // 60} min more for the system nodes and add-ons"),
        ClockPhase("hyperpod-cluster", None, "SageMaker does not document how long creating a HyperPod "
                   "cluster and installing the inference operator add-on take"),
        ClockPhase("plan-wait", None, wait, None, ("plan-start",)),
        ClockPhase("nodes", None, "SageMaker does not document how long a HyperPod node takes to "
                   "provision and join", None, HYPERPOD_GATE_BY),
        staging, engine,
        ClockPhase("gate", GATE_S, "assumption: the functional checks and the load part", None, ("accept-gate",)),
    ]


def document(phases: Sequence[ClockPhase]) -> Dict[str, Any]:
    """plan.json's `clock`: the phases, the total of the estimates, and what it leaves out."""
    known = sum(p.estimate_s for p in phases if p.estimate_s is not None)
    missing = [p.name for p in phases if p.estimate_s is None]
    return {"phases": [p.to_dict() for p in phases], "estimate_s": known,
            "complete": not missing, "not_estimated": missing}


def _minutes(s: float) -> str:
    return f"{s / 60:.0f} min" if s >= 600 else f"{s / 60:.1f} min"


def summary_line(clock: Mapping[str, Any]) -> str:
    """`pulumi up` to the first accepted token, in words."""
    text = f"{_minutes(clock['estimate_s'])} from `pulumi up` to the first accepted token"
    for p in clock["phases"]:
        if p["estimate_s"] is None:
            bound = f"; up to {_minutes(p['bound_s'])}" if p.get("bound_s") else ""
            text += f" + {p['name']} (not estimated: {p['basis'].split(';')[0]}{bound})"
    return text


def phase_table(clock: Mapping[str, Any]) -> List[str]:
    return [f"  {p['name']:<18} {'?' if p['estimate_s'] is None else _minutes(p['estimate_s']):>9}"
            f"  {p['basis']}" for p in clock["phases"]]


# ---- measured -------------------------------------------------------------------------------

def _matches(name: str, patterns: Sequence[str]) -> bool:
    return any(name == p or (p.endswith("-") and name.startswith(p)) for p in patterns)


def covered_s(views: Sequence[Any]) -> float:
    """Seconds of wall time the phases covered: the union of their [started, started + elapsed]
    intervals (phases side by side count once; one after another add up)."""
    total, end = 0.0, -math.inf
    for start, stop in sorted((v.started, v.started + max(0.0, v.elapsed_s)) for v in views):
        if stop > end:
            total += stop - max(start, end)
            end = stop
    return total


def measure(clock: Mapping[str, Any], views: Sequence[Any]) -> List[Dict[str, Any]]:
    """Per clock phase: the plan's estimate, the measured seconds (None when no progress phase
    of the run measures it) and the state of those progress phases; phases measured by the
    same progress phases (AWS: nodes, staging, engine by the readiness gate) are merged into one
    row. `views` are components/progress/view.py PhaseView objects of one run."""
    rows: List[Dict[str, Any]] = []
    for p in clock["phases"]:
        by = tuple(p.get("measured_by") or ())
        if rows and by and tuple(rows[-1]["measured_by"]) == by:
            last = rows[-1]
            last["name"] += f" + {p['name']}"
            if last["estimate_s"] is not None and p["estimate_s"] is not None:
                last["estimate_s"] += p["estimate_s"]
            else:
                last["estimate_s"] = None
            continue
        mine = [v for v in views if by and _matches(v.name, by)]
        measured = covered_s(mine) if mine else None
        state = None
        if mine:
            states = {v.state for v in mine}
            state = ("failed" if "failed" in states else "done" if states == {"done"}
                     else next(s for s in ("slow", "running", "quiet", "interrupted") if s in states))
        rows.append({"name": p["name"], "estimate_s": p["estimate_s"], "measured_s": measured,
                     "state": state, "measured_by": list(by)})
    return rows


# ---- the status view ------------------------------------------------------------------------

#: progress phase names that tell which target a run without a recorded clock belongs to
_TELLS = {"ctyun-hcc": ("ehpc-order", "weights-broadcast", "vllm-start"),
          "aws-eks-hyperpod": ("plan-start", "endpoint-deploy"),
          "aws-eks": ("block-start", "readiness-gate", "weights-mirror")}


def unestimated(target: str) -> Dict[str, Any]:
    """The phases of `target` without estimates (a run recorded before the plan's clock was)."""
    empty: Dict[str, Any] = {"phases": []}
    phases = (ctyun_phases(empty, checkpoint_bytes=0, nvme_gb_per_s=1.0) if target == "ctyun-hcc"
              else hyperpod_phases(empty) if target == "aws-eks-hyperpod" else aws_phases(empty))
    return document([ClockPhase(p.name, None, "", None, p.measured_by) for p in phases])


#: the largest magnitude a time or price read back from a progress file may have: the file is
#: read as found (another version's, truncated, edited), and inf or 1e308 is neither
MAX_RECORDED = 1e12


def recorded_number(value: Any) -> Optional[float]:
    """A number read from a progress record: finite and plausible, else None."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return None
    try:
        f = float(value)
    except OverflowError:
        return None
    return f if math.isfinite(f) and abs(f) <= MAX_RECORDED else None


def _recorded_phases(clock: Mapping[str, Any]) -> List[Dict[str, Any]]:
    """The phases of a clock read from a run marker, each with the fields `measure` and
    `status_lines` use and of their types; an entry that is not a phase is left out."""
    phases = clock.get("phases")
    out: List[Dict[str, Any]] = []
    for p in phases if isinstance(phases, list) else ():
        if not isinstance(p, Mapping) or not isinstance(p.get("name"), str):
            continue
        by = p.get("measured_by")
        estimate = recorded_number(p.get("estimate_s"))
        out.append({**p, "estimate_s": None if estimate is None else max(0.0, estimate),
                    "measured_by": [b for b in by if isinstance(b, str)]
                    if isinstance(by, list) else []})
    return out


def for_run(marker: Optional[Mapping[str, Any]], views: Sequence[Any]) -> Optional[Dict[str, Any]]:
    """The clock of a run: the one `pulumi up` recorded in its run marker (its phases checked,
    _recorded_phases), else the target's phases without estimates (told by the progress phases
    seen), else None."""
    if marker and isinstance(marker.get("clock"), Mapping):
        phases = _recorded_phases(marker["clock"])
        if phases:
            return {**marker["clock"], "phases": phases}
    names = {v.name for v in views}
    for target, tells in _TELLS.items():
        if names & set(tells):
            return unestimated(target)
    return None


def _dur(s: Optional[float]) -> str:
    from .record import fmt_duration

    return "-" if s is None else fmt_duration(s)


def billing_of(records: Sequence[Mapping[str, Any]]) -> Optional[Mapping[str, Any]]:
    """The latest `billing` record (ProgressLog.billing_started) among a run's records."""
    found = None
    for rec in records:
        if rec.get("event") == "billing" and recorded_number(rec.get("billing_start")) is not None \
                and rec["billing_start"] > 0 and isinstance(rec.get("basis"), str):
            found = rec
    return found


def spend_line(usd_per_hour: float, started: Optional[float], now: float,
               billing: Optional[Mapping[str, Any]] = None) -> Optional[str]:
    """The spend so far at `usd_per_hour`: from the billing start the program recorded (the
    Capacity Block's or training plan's start, the cluster order), else from this `pulumi up`'s
    start, saying which; $0 with the time left while billing has not started."""
    from datetime import datetime, timezone

    rate = f"${usd_per_hour:,.2f}/h (the plan's cost)"
    if billing is not None:
        since = float(billing["billing_start"])
        when = datetime.fromtimestamp(since, timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        end = recorded_number(billing.get("billing_end"))
        if end is not None and since < end <= now:  # the block or plan is over: its nodes bill no more
            until = datetime.fromtimestamp(end, timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
            return (f"  spend from {when} ({billing['basis']}) to its end at {until}: "
                    f"${usd_per_hour * (end - since) / 3600:,.2f} at {rate}; since then its GPU nodes bill "
                    "nothing, the rest of the stack (EKS control plane, NAT, system node) until `pulumi destroy`")
        if now < since:
            return (f"  spend: $0.00 so far: billing starts in {_dur(since - now)}, at {when} "
                    f"({billing['basis']}), at {rate}")
        return (f"  spend since billing started at {when} ({billing['basis']}): "
                f"${usd_per_hour * (now - since) / 3600:,.2f} at {rate}")
    if started is None:
        return None
    return (f"  spend since this `pulumi up` started (the billing start is not known here): "
            f"${usd_per_hour * max(0.0, now - started) / 3600:,.2f} at {rate}")


def status_lines(clock: Mapping[str, Any], views: Sequence[Any], started: Optional[float],
                 now: float, usd_per_hour: Optional[float] = None,
                 billing: Optional[Mapping[str, Any]] = None) -> List[List[Tuple[str, str]]]:
    """The clock block of `status`: each phase with the plan's estimate and the measured time,
    and the spend so far (`spend_line`)."""
    rows = measure(clock, views)
    width = max([14] + [len(r["name"]) for r in rows])
    out: List[List[Tuple[str, str]]] = [[], [("clock: `pulumi up` to the first accepted token", "bold")]]
    out.append([(f"  {'phase':<{width}}  {'plan':>8}  {'measured':>8}", "dim")])
    for r in rows:
        style = {"done": "green", "failed": "bold red", "slow": "yellow"}.get(r["state"] or "", "")
        state = f"  {r['state']}" if r["state"] else ""
        plan = "?" if r["estimate_s"] is None else _dur(r["estimate_s"])  # ?: not estimated
        out.append([(f"  {r['name']:<{width}}  {plan:>8}  "
                     f"{_dur(r['measured_s']):>8}", ""), (state, style)])
    total = sum(r["estimate_s"] for r in rows if r["estimate_s"] is not None)
    more = "+" if any(r["estimate_s"] is None for r in rows) else ""
    planned = "?" if all(r["estimate_s"] is None for r in rows) else _dur(total) + more
    elapsed = None if started is None else max(0.0, now - started)
    out.append([(f"  {'total':<{width}}  {planned:>8}  {_dur(elapsed):>8}", "bold"),
                ("  (since this `pulumi up` started)" if elapsed is not None else "", "dim")])
    spend = None if usd_per_hour is None else spend_line(usd_per_hour, started, now, billing)
    if spend:
        out.append([(spend, "")])
    return out


# ---- from the program's Deployment ------------------------------------------------------------

def for_deployment(deployment, block_start: Optional[str] = None) -> Dict[str, Any]:
    """The clock of a stack as the program decided it (components/program/contract.py
    Deployment): what plan.json's `clock` holds and what `pulumi up` records for `status`. The
    phases are the target's (`Target.clock_phases`); KeyError for a target not registered."""
    from ..program.registry import load_target  # the targets import this module

    return document(load_target(deployment.shared.target).clock_phases(deployment, block_start))
