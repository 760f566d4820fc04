"""`python -m components status --stack STACK [--once]`: follow the long waits of `pulumi up`.

Reads the stack's progress file (components/progress/record.py; written by the providers while
`pulumi up` runs, in `.kimi-k3/progress/` of the project directory) and shows each phase of
the latest run with a bar against the plan's expectation, elapsed and remaining time, and the
last thing seen. Live (redrawn every `--interval` seconds, Ctrl-C to leave) on a terminal;
`--once`, or output that is not a terminal, prints one plain snapshot (no ANSI codes).
Exit status of a snapshot: 0, or 1 when the latest attempt of a phase failed; 2 for bad input.

The file's texts come from outside (what a server answered, what a remote command printed):
every segment shown goes through `terminal_text`, so an escape sequence in a record is shown
as `\\x1b...`, never acted on by the terminal.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Callable

from ..config.values import number_in
from ..inference.errors import ConfigError
from ..inference.quoting import terminal_text
from ..progress import clock as clocks
from ..progress.record import RecordReader, progress_file_for
from ..progress.view import fit, latest_run, plain, summarize, view_lines

EXIT_FAILED_PHASE = 1
EXIT_BAD_INPUT = 2
#: --interval bounds, seconds (time.sleep refuses nan and overflows on inf)
MIN_INTERVAL_S, MAX_INTERVAL_S = 0.1, 3600.0


def register(sub) -> None:
    """Add the `status` subcommand to the CLI's subparsers."""
    p = sub.add_parser("status", help="follow the long waits of a running `pulumi up` (cluster, weights, vLLM)")
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--stack", help="stack name, e.g. ctyun-hcc (reads .kimi-k3/progress/STACK.jsonl here)")
    where.add_argument("--file", type=Path, help="a progress file (what `pulumi up` printed)")
    p.add_argument("--once", action="store_true", help="print one plain snapshot and exit")
    p.add_argument("--all", action="store_true", help="include phases of earlier runs")
    p.add_argument("--interval", default="2", help="seconds between redraws (live view; 0.1 to 3600)")
    p.set_defaults(func=run)


def snapshot(reader: RecordReader, title: str, now: float, include_all: bool = False,
             compact: bool = False):
    """(styled lines, any failed phase) of the file now (read from where `reader` left off)."""
    records = reader.read()
    marker, phase_records = latest_run(records)
    if include_all:
        marker, phase_records = None, [r for r in records if r.get("event") != "run"]
    views = summarize(phase_records, now)
    lines = view_lines(title, marker, views, now, compact)
    clock = None if include_all else clocks.for_run(marker, views)
    if clock is not None:  # the phases from `pulumi up` to the first accepted token
        started = clocks.recorded_number(marker.get("ts")) if marker else None
        cost = clocks.recorded_number(marker.get("usd_per_hour")) if marker else None
        lines += clocks.status_lines(clock, views, started, now,
                                     cost if cost is not None and cost >= 0 else None,
                                     clocks.billing_of(phase_records))
    lines = [[(terminal_text(text), style) for text, style in line] for line in lines]
    return lines, any(v.state == "failed" for v in views)


def run(args, clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep) -> int:
    """The command; `clock` and `sleep` are the real ones unless a test hands in its own."""
    try:  # the grammar of config values: the error quotes the flag as typed
        interval = number_in("--interval", args.interval, MIN_INTERVAL_S, MAX_INTERVAL_S, "2",
                             "seconds")
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    path = str(args.file) if args.file else progress_file_for(args.stack)
    name = args.stack or Path(path).stem
    title = f"kimi-k3 progress of stack {name}  ({path})"
    if args.file and not Path(path).exists():
        print(f"error: --file {path} does not exist; `pulumi up` names its file in its first "
              f"lines, or use --stack STACK from the project directory", file=sys.stderr)
        return EXIT_BAD_INPUT
    if Path(path).exists() and not Path(path).is_file():
        print(f"error: {path} is not a progress file (a directory or a device); give the file "
              "`pulumi up` named, or move this out of the way", file=sys.stderr)
        return EXIT_BAD_INPUT
    if args.once or not sys.stdout.isatty():
        try:
            lines, failed = snapshot(RecordReader(path), title, clock(), args.all)
        except OSError as e:
            print(f"error: cannot read {path} ({type(e).__name__}: {e.strerror})", file=sys.stderr)
            return EXIT_BAD_INPUT
        sys.stdout.write(plain(lines))
        return EXIT_FAILED_PHASE if failed else 0
    return _live(path, title, args, interval, clock, sleep)


def _live(path: str, title: str, args, interval: float, clock: Callable[[], float] = time.time,
          sleep: Callable[[float], None] = time.sleep) -> int:
    from rich.console import Console, Group
    from rich.live import Live
    from rich.text import Text

    reader = RecordReader(path)

    console = Console()

    def render():
        lines, _ = snapshot(reader, title, clock(), args.all, compact=True)
        lines = fit(lines, console.height - 3)
        return Group(*(Text.assemble(*line, no_wrap=True, overflow="ellipsis") if line else Text("")
                       for line in lines),
                     Text("\n(Ctrl-C to leave; `pulumi up` goes on)", style="dim"))

    try:
        with Live(render(), console=console, auto_refresh=False, screen=False) as live:
            while True:
                sleep(interval)
                live.update(render(), refresh=True)
    except KeyboardInterrupt:
        pass
    return 0
