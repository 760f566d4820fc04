"""What a progress file says now, as a person reads it: one block per phase with a bar.

Pure: records in (components/progress/record.py), a view model and styled lines out; the `status`
command (components/cli/status.py) draws them with rich, live or once. The bar fills with
the waiter's own measure when it reports one (`fraction`), else with elapsed / the plan's
expectation; past the expectation it stays full and the percentage goes above 100.

A running phase is also judged, so a reader can tell slow from stuck:
- `slow`: past SLOW_FACTOR x the plan's figure (the block says what the plan assumed);
- `quiet`: no record for QUIET_AFTER_S although the waiter writes a heartbeat every minute;
- `interrupted`: the process that wrote it is gone (same host only), so nobody waits any more.
"""

from __future__ import annotations

import math
import os
import socket
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from .record import HEARTBEAT_S, SLOW_FACTOR, clip, fmt_duration

QUIET_AFTER_S = 3 * HEARTBEAT_S
BAR_WIDTH = 20
#: the styles of the states (rich style names); plain output ignores them
STYLES = {"done": "green", "running": "cyan", "slow": "yellow", "quiet": "yellow",
          "failed": "bold red", "interrupted": "red"}

Line = List[Tuple[str, str]]  # (text, rich style) segments


@dataclass
class PhaseView:
    name: str
    state: str  # done | failed | running | slow | quiet | interrupted
    waiting_for: str
    started: float
    elapsed_s: float
    expected_s: Optional[float]
    deadline_s: Optional[float]
    assumption: str
    detail: str
    unchanged_s: float
    fraction: Optional[float]
    news_age_s: float  # seconds since the last record of this phase

    @property
    def open(self) -> bool:
        return self.state not in ("done", "failed")

    @property
    def waiting(self) -> bool:
        """Someone is still waiting (not done, failed or interrupted)."""
        return self.state in ("running", "slow", "quiet")

    def bar_fraction(self) -> Optional[float]:
        """Share of the bar to fill (may exceed 1: past the expectation)."""
        if self.fraction is not None:
            return 1.0 if self.state == "done" else self.fraction
        if self.expected_s:
            return 1.0 if self.state == "done" else self.elapsed_s / self.expected_s
        return 1.0 if self.state == "done" else None

    def remaining_s(self) -> Optional[float]:
        if not self.expected_s or not self.waiting:
            return None
        return self.expected_s - self.elapsed_s


def writer_alive(pid: Any, host: Any) -> Optional[bool]:
    """Is the process that wrote a record still there? None when it cannot be told."""
    if not isinstance(pid, int) or host != socket.gethostname():
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def latest_run(records: Sequence[Dict[str, Any]]) -> Tuple[Optional[Dict[str, Any]], List[Dict[str, Any]]]:
    """The last `run` marker and the phase records after it (all of them if there is none)."""
    start = 0
    marker = None
    for i, rec in enumerate(records):
        if rec.get("event") == "run":
            start, marker = i + 1, rec
    return marker, [r for r in records[start:] if r.get("event") != "run"]


def summarize(records: Sequence[Dict[str, Any]], now: float,
              alive: Callable[[Any, Any], Optional[bool]] = writer_alive) -> List[PhaseView]:
    """One view per phase name: its latest attempt, in the order the attempts started."""
    attempts: Dict[str, List[Dict[str, Any]]] = {}
    for rec in records:
        name = str(rec.get("phase") or "")
        if not name:
            continue
        if rec.get("event") == "start" or name not in attempts:
            attempts[name] = [rec]
        else:
            attempts[name].append(rec)
    views = [_view(name, recs, now, alive) for name, recs in attempts.items()]
    return sorted(views, key=lambda v: v.started)


#: the largest magnitude a time read from a record may have (about 31,700 years, in seconds):
#: a file is read as found, and 1e308 or inf is no time
MAX_SECONDS = 1e12


def _num(value: Any) -> Optional[float]:
    """A record's number, or None when it is not a finite, plausible one (bool, NaN, inf)."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return None
    try:
        f = float(value)
    except OverflowError:  # an int beyond float
        return None
    return f if math.isfinite(f) and abs(f) <= MAX_SECONDS else None


def _text(value: Any) -> str:
    """A record's text field for display, cut to one screenful (record.clip)."""
    return clip(str(value or ""))


def _view(name: str, recs: List[Dict[str, Any]], now: float, alive) -> PhaseView:
    first, last = recs[0], recs[-1]
    ts = _num(last.get("ts")) or now
    elapsed = _num(last.get("elapsed_s")) or 0.0
    unchanged = _num(last.get("unchanged_s")) or 0.0
    started = (_num(first.get("ts")) or ts) - (_num(first.get("elapsed_s")) or 0.0)
    expected = _num(last.get("expected_s"))
    event = last.get("event")
    detail = next((_text(r.get("detail")) for r in reversed(recs) if r.get("detail")), "")
    age = max(0.0, now - ts)
    if event in ("done", "failed"):
        state = event
    elif alive(last.get("pid"), last.get("host")) is False:
        state = "interrupted"  # nobody waits any more: the clock stopped at the last record
    else:
        elapsed += age
        unchanged += age
        if expected and elapsed > SLOW_FACTOR * expected:
            state = "slow"
        elif age > QUIET_AFTER_S:
            state = "quiet"
        else:
            state = "running"
    return PhaseView(
        name=_text(name), state=state, waiting_for=_text(last.get("waiting_for")), started=started,
        elapsed_s=elapsed, expected_s=expected, deadline_s=_num(last.get("deadline_s")),
        assumption=_text(last.get("assumption")), detail=detail, unchanged_s=unchanged,
        fraction=_num(last.get("fraction")), news_age_s=age)


def bar(frac: Optional[float], width: int = BAR_WIDTH) -> str:
    """`[#########...............]`; no figure: `[  no plan figure  ]` of the same width."""
    if frac is None:
        return "[" + "no plan figure".center(width) + "]"
    filled = int(round(min(1.0, max(0.0, frac)) * width))
    return "[" + "#" * filled + "." * (width - filled) + "]"


def phase_lines(v: PhaseView, name_width: int = 18) -> List[Line]:
    """The block of one phase: a headline with the bar, then what it waits for and saw."""
    style = STYLES.get(v.state, "")
    frac = v.bar_fraction()
    head: Line = [(f"{'[' + v.state.upper() + ']':<14}", style), (f"{v.name:<{name_width}} ", "bold"),
                  (bar(frac), style)]
    pct = f" {frac * 100:4.0f}%" if frac is not None else ""
    timing = f"{pct}  {fmt_duration(v.elapsed_s)}"
    if v.expected_s:
        timing += f" of ~{fmt_duration(v.expected_s)}"
    rem = v.remaining_s()
    if rem is not None:
        timing += f", ~{fmt_duration(rem)} left" if rem >= 0 else f", over by {fmt_duration(-rem)}"
    if v.waiting and v.deadline_s:
        timing += f"; gives up in {fmt_duration(max(0.0, v.deadline_s - v.elapsed_s))}"
    head.append((timing, ""))
    lines: List[Line] = [head]
    pad = " " * 14
    if v.waiting_for:
        lines.append([(pad + "waiting for: ", "dim"), (v.waiting_for, "")])
    if v.detail:
        seen = v.detail
        if v.waiting:
            seen += f"  ({fmt_duration(v.news_age_s)} ago"
            if v.unchanged_s >= HEARTBEAT_S:
                seen += f", unchanged for {fmt_duration(v.unchanged_s)}"
            seen += ")"
        label = "failed with: " if v.state == "failed" else "last seen:   "
        lines.append([(pad + label, "dim"), (seen, style if v.state == "failed" else "")])
    if v.assumption and (v.open or v.state == "failed" or _was_slow(v)):
        lines.append([(pad + "plan assumed: ", "dim"), (v.assumption, "")])
    verdict = _verdict(v)
    if verdict:
        lines.append([(pad, ""), (verdict, style)])
    return lines


def _was_slow(v: PhaseView) -> bool:
    return bool(v.expected_s and v.elapsed_s > SLOW_FACTOR * v.expected_s)


def _verdict(v: PhaseView) -> str:
    if v.state == "slow":
        ratio = v.elapsed_s / v.expected_s if v.expected_s else 0
        moving = ("the last thing seen is still changing: slow, not stuck"
                  if v.unchanged_s < 5 * HEARTBEAT_S else
                  f"nothing new for {fmt_duration(v.unchanged_s)}: it may be stuck")
        return f"slower than the plan ({ratio:.1f}x); {moving}"
    if v.state == "quiet":
        return (f"no news for {fmt_duration(v.news_age_s)} (the waiter writes every "
                f"{fmt_duration(HEARTBEAT_S)}): is `pulumi up` still running?")
    if v.state == "interrupted":
        return "the process that waited is gone (`pulumi up` ended or was stopped); run it again to resume"
    if v.state == "done" and _was_slow(v):
        return f"took {v.elapsed_s / v.expected_s:.1f}x the plan"
    return ""


def view_lines(title: str, marker: Optional[Dict[str, Any]], views: Sequence[PhaseView],
               now: float, compact: bool = False) -> List[Line]:
    """The whole view: a title, a one-line tally, then each phase's block.

    `compact` (the live view, which must fit a terminal): a phase done as planned is one line.
    """
    lines: List[Line] = [[(title, "bold")]]
    if marker and _num(marker.get("ts")) is not None:
        lines.append([(f"this `pulumi up` started {fmt_duration(now - marker['ts'])} ago", "dim")])
    if not views:
        lines.append([("no long wait recorded yet (one appears when `pulumi up` starts waiting "
                       "for the cluster, the weights or vLLM)", "")])
        return lines
    tally: Dict[str, int] = {}
    for v in views:
        tally[v.state] = tally.get(v.state, 0) + 1
    order = ("running", "slow", "quiet", "interrupted", "failed", "done")
    lines.append([(", ".join(f"{tally[s]} {s}" for s in order if s in tally), "")])
    width = max([18] + [len(v.name) for v in views])
    one_line = False
    for v in views:
        block = phase_lines(v, width)
        if compact and v.state == "done" and not _was_slow(v):
            if not one_line:
                lines.append([])
            lines.append(block[0])
            one_line = True
            continue
        lines.append([])
        lines.extend(block)
        one_line = False
    return lines


def fit(lines: Sequence[Line], height: int, keep_head: int = 3) -> List[Line]:
    """At most `height` lines: the head (title, tally) and the newest phases, a marker between."""
    if len(lines) <= height or height <= keep_head + 1:
        return list(lines)
    tail = height - keep_head - 1
    skipped = len(lines) - keep_head - tail
    return [*lines[:keep_head], [(f"... {skipped} earlier lines (--once shows all)", "dim")],
            *lines[len(lines) - tail:]]


def plain(lines: Sequence[Line]) -> str:
    """The view as plain text (no styles, no ANSI)."""
    return "\n".join("".join(text for text, _ in line).rstrip() for line in lines) + "\n"
