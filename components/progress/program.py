"""The program's side of progress: which file, what the plan expects, how to follow it.

The program is the only place that knows the real stack name (a dynamic provider's host
reports it as `stack`), so it computes the progress file and passes it, with the plan's
expectations, to every long-waiting dynamic resource as steering inputs (`progress_inputs`).
`announce` prints, through `pulumi.log` (which does reach `pulumi up`'s output, preview
included: the program, unlike a provider, is connected to the engine), how to follow progress,
and marks the start of a real update in the file.
"""

from __future__ import annotations

from typing import Any, Dict, Optional

import pulumi

from .record import EXPECT_INPUT, PROGRESS_INPUT, ProgressLog, follow_hint, progress_file_for


def progress_inputs(plan: Optional[Any] = None) -> Dict[str, Any]:
    """`{"progressFile": ..., "progressExpect": ...}` for a dynamic resource's inputs."""
    out: Dict[str, Any] = {PROGRESS_INPUT: progress_file_for(pulumi.get_stack())}
    if plan is not None:
        from .plan import planned_waits

        out[EXPECT_INPUT] = planned_waits(plan)
    return out


def _under_mocks() -> bool:
    from pulumi.runtime.mocks import MockMonitor
    from pulumi.runtime.settings import get_monitor

    return isinstance(get_monitor(), MockMonitor)


def announce(clock: Optional[Dict[str, Any]] = None, usd_per_hour: Optional[float] = None) -> str:
    """Tell the user how to follow the long waits; mark a real update's start, with the plan's
    clock and cost per hour for `status` (components/progress/clock.py). Returns the hint."""
    stack = pulumi.get_stack()
    path = progress_file_for(stack)
    hint = f"long waits (cluster order, weights, vLLM start) are recorded: follow them with " \
           f"`{follow_hint(path)}` (in another terminal, from this directory)"
    pulumi.log.info(hint)
    if not pulumi.runtime.is_dry_run() and not _under_mocks():
        ProgressLog(path, echo=False).run_started(stack, clock, usd_per_hour)
    return hint


#: what each target's billing starts with (the `basis` of a `billing` record)
BILLING_BLOCK = "the Capacity Block's start (EC2 StartDate)"
BILLING_TRAINING_PLAN = "the training plan's start (SageMaker StartTime)"
BILLING_ORDER = "the cluster order (E-HPC create-cluster, orderedAt)"


def parse_utc(value: Any) -> Optional[float]:
    """An ISO-8601 UTC time as the providers write it (`2026-12-02T05:00:00Z`) as epoch seconds;
    None for nothing or a value that is not one (no record rather than a wrong one)."""
    from datetime import datetime, timezone

    if not isinstance(value, str) or not value:
        return None
    try:
        t = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if t.tzinfo is None:
        t = t.replace(tzinfo=timezone.utc)
    return t.timestamp()


def record_billing_start(when: Any, basis: str, ends: Any = None) -> None:
    """Once `when` (an Output of the start time, from AWS or the order at run time) is known
    during a real `pulumi up`, record it in the progress file for `status`'s spend; nothing at
    preview, offline or while it is unknown (a block not bought yet). `ends`: when capacity
    bought for a window stops billing (the Capacity Block's or training plan's end)."""
    if pulumi.runtime.is_dry_run() or _under_mocks():
        return
    path = progress_file_for(pulumi.get_stack())
    pulumi.Output.all(when, ends).apply(lambda v: write_billing_start(path, v[0], basis, v[1]))


def write_billing_start(path: str, value: Any, basis: str, end: Any = None) -> Any:
    """The `billing` record for `value` (a provider's time string) in the progress file `path`,
    with `end` when that is a time after it; nothing for a value that is not a time. Returns
    `value` (an apply's result)."""
    ts = parse_utc(value)
    if ts is not None:
        end_ts = parse_utc(end)
        ProgressLog(path, echo=False).billing_started(ts, basis, end_ts if end_ts and end_ts > ts else None)
    return value
