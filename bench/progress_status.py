"""Cost of progress: writing records in a wait loop, and the status view over a large file.

The live view redraws every 2 s from a file that every `pulumi up` appends to; a provider calls
`update` on every poll. Prints figures; asserts nothing (tests assert behaviour, not timings).

    .venv/bin/python bench/progress_status.py [--runs 20]

`--runs` earlier `pulumi up`s of 8 phases each, the longest 2 h with a detail changing every
10 s (720 updates), are written first (the history a file has after many runs).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from components.progress.record import ProgressLog, RecordReader  # noqa: E402
from components.progress.view import latest_run, plain, summarize, view_lines  # noqa: E402


class Clock:
    def __init__(self):
        self.t = 1_800_000_000.0

    def __call__(self):
        return self.t


def write_run(path: str, clock: Clock) -> int:
    log = ProgressLog(path, clock=clock, echo=False)
    log.run_started("bench")
    n = 1
    for i in range(8):
        long = i == 7
        with log.phase(f"phase-{i}", "something", expected_s=3600 if long else 120) as p:
            n += 2
            for k in range(720 if long else 12):
                clock.t += 10
                p.update(f"step {k}")
                n += 1
    return n


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=20)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "bench.jsonl")
        clock = Clock()
        t0 = time.perf_counter()
        written = sum(write_run(path, clock) for _ in range(args.runs))
        dt = time.perf_counter() - t0
        size = os.path.getsize(path)
        print(f"write: {written} update calls in {dt:.2f} s = {dt / written * 1e6:.0f} us per call "
              f"(rate-limited: {sum(1 for _ in open(path))} lines, {size / 1e6:.1f} MB)")

        def render(reader: RecordReader) -> str:
            marker, recs = latest_run(reader.read())
            return plain(view_lines("bench", marker, summarize(recs, clock.t), clock.t))

        t0 = time.perf_counter()
        reader = RecordReader(path)
        render(reader)
        first = time.perf_counter() - t0
        write_run(path, clock)  # one more run arrives while the view is open
        t0 = time.perf_counter()
        render(reader)
        again = time.perf_counter() - t0
        t0 = time.perf_counter()
        for _ in range(10):
            render(reader)
        idle = (time.perf_counter() - t0) / 10
        print(f"status: first read + render {first * 1e3:.0f} ms; after one more run appended "
              f"{again * 1e3:.0f} ms; redraw with nothing new {idle * 1e3:.0f} ms")


if __name__ == "__main__":
    main()
