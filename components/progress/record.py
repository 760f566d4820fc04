"""Progress of long waits, appended to a per-stack file on the machine running `pulumi up`.

Why a file: the waits that take minutes to hours (an E-HPC order, a weight download, a vLLM
start, a Capacity Block's start) happen inside dynamic providers. Their host process has no
connection to the engine: `pulumi.log` there degrades to a plain line on stderr, `ephemeral` is
lost, `pulumi.log.debug` and Python `logging` below WARNING vanish (docs/progress.md has the
evidence). What the host writes to stderr does reach `pulumi up`, as a non-ephemeral message of
the stack row, so this module writes there too, sparingly (start, slow, a heartbeat every
`ECHO_INTERVAL_S`, done/failed), and keeps the full story in a JSON-lines file that the
program names (it knows the stack; a provider does not: the host reports the stack as `stack`).
`python -m components status --stack STACK` follows that file.

Each line is one event:
`{"ts", "phase", "event": "start"|"update"|"done"|"failed", "waiting_for", "elapsed_s",
"expected_s", "deadline_s", "assumption", "detail", "unchanged_s", "fraction", "slow", "pid",
"host"}`; the program adds `{"event": "run", "stack"}` at the start of each `pulumi up`.
`slow` is true once the elapsed time is past `SLOW_FACTOR` x the expected time; with
`assumption` (what the plan assumed: source, bandwidth) and `unchanged_s` (how long the last
thing seen has stayed the same) a reader can tell "slow" from "stuck".

No secret may be passed in; as a second guard every text field is redacted of the values given
in `secrets` and of recognisable credentials (dynamic/redact.py, the one scrubber). Writing
progress never fails a deployment: an I/O error switches the log off. A `ProgressLog(None)`
records nothing (a provider used without a progress file, e.g. in a unit test), so callers
never branch on it. Pure of Pulumi.
"""

from __future__ import annotations

import contextvars
import json
import math
import os
import re
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional

from ..dynamic.redact import redact_text
from ..inference.quoting import terminal_text

#: a phase running past this multiple of its expected time is flagged `slow`
SLOW_FACTOR = 1.5
#: a changed detail is written at most this often (a poll loop may call update every second)
MIN_UPDATE_INTERVAL_S = 5.0
#: an unchanged detail is written again after this long, so a reader sees the waiter is alive
HEARTBEAT_S = 60.0
#: a running phase prints one line to stderr (what `pulumi up` shows) this often
ECHO_INTERVAL_S = 600.0
#: the longest text a record keeps per field (a log line or a server's answer can be megabytes;
#: the status view shows one line of it), cut after scrubbing so no prefix of a secret shows
MAX_TEXT_CHARS = 2000
#: where the program puts progress files, below the project directory
PROGRESS_DIR = ".kimi-k3/progress"
#: the input naming the progress file; `EXPECT_INPUT` carries the plan's expectations
PROGRESS_INPUT = "progressFile"
EXPECT_INPUT = "progressExpect"
#: inputs that steer how progress is reported, never what a resource is: a change of only
#: these must not cause an update (drop them before comparing olds and news in `diff`)
STEERING_INPUTS = (PROGRESS_INPUT, EXPECT_INPUT)
ECHO_PREFIX = "kimi-k3 progress:"

def progress_file_for(stack: str, root: Optional[os.PathLike] = None) -> str:
    """The progress file of `stack` (absolute): `<root>/.kimi-k3/progress/<stack>.jsonl`.

    `root` defaults to `KK3_PROGRESS_ROOT` or the current directory (the project directory
    under `pulumi up`). Only the program calls this: it knows the real stack name.
    """
    base = Path(root or os.environ.get("KK3_PROGRESS_ROOT") or os.getcwd())
    return str((base / PROGRESS_DIR / f"{_safe(stack)}.jsonl").resolve())


def _safe(stack: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", stack).lstrip(".") or "stack"


def without_steering(props: Mapping[str, Any]) -> Dict[str, Any]:
    """`props` less the steering inputs (what `diff` should compare)."""
    return {k: v for k, v in props.items() if k not in STEERING_INPUTS}


def clip(text: str, limit: int = MAX_TEXT_CHARS) -> str:
    """`text` cut to `limit` characters, saying how much was left out."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text) - limit} more characters)"


def fmt_duration(seconds: Optional[float]) -> str:
    """`1h02m`, `12m05s`, `45s` (a person reads these; `?` when unknown or not a finite
    number: a progress file is read as found, and int(inf) raises)."""
    if seconds is None or not math.isfinite(float(seconds)):
        return "?"
    s = int(round(max(0.0, float(seconds))))
    if s >= 3600:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    if s >= 60:
        return f"{s // 60}m{s % 60:02d}s" if s % 60 else f"{s // 60}m"
    return f"{s}s"


def follow_hint(path: str) -> str:
    """The command that follows `path` (by stack when it is in this directory's progress dir)."""
    p = Path(path)
    if p.parent == (Path.cwd() / PROGRESS_DIR).resolve() and p.suffix == ".jsonl":
        return f"python -m components status --stack {p.stem}"
    return f"python -m components status --file {path}"


class ProgressLog:
    """Appends progress events to one file (or nowhere when `path` is falsy).

    `expect` is the program's `progressExpect` input: {phase: {"expected_s", "assumption"}},
    used for a phase started without its own expectation. `echo` prints sparse lines to
    stderr, which `pulumi up` shows (see the module docstring). A phase's heartbeat thread runs
    on the real clock, or on any clock given together with `wait` (how the thread waits between
    beats: `wait(stop_event, seconds)` -> stopped?, `threading.Event.wait` by default).
    """

    def __init__(self, path: Optional[str], secrets: Iterable[str] = (),
                 clock: Callable[[], float] = time.time,
                 expect: Optional[Mapping[str, Mapping[str, Any]]] = None, echo: bool = True,
                 wait: Optional[Callable[[threading.Event, float], bool]] = None):
        self.path = str(path) if path else ""
        self.secrets = [str(s) for s in secrets if s]
        self.clock = clock
        self.expect = dict(expect or {})
        self.echo = echo
        self.wait = wait
        self.broken = ""

    def phase(self, phase: str, waiting_for: str, expected_s: Optional[float] = None,
              assumption: str = "", *, deadline_s: Optional[float] = None) -> "Phase":
        """Start a phase (`with log.phase(...) as p: ... p.update("job is RUNNING")`).

        `expected_s` is what the plan expects (not the deadline); `deadline_s`, when the
        waiter has one, is when it gives up. Inside the `with`, code that does not hold `p`
        (a shared poll helper) reaches it as `current_phase()`.
        """
        planned = self._planned(phase)
        if expected_s is None:
            expected_s = planned.get("expected_s")
        if not assumption:
            assumption = str(planned.get("assumption") or "")
        return Phase(self, phase, waiting_for, expected_s, assumption, deadline_s)

    def _planned(self, phase: str) -> Mapping[str, Any]:
        """The expectation of `phase`, or of its longest `-`-separated prefix."""
        name = phase
        while name:
            if isinstance(self.expect.get(name), Mapping):
                return self.expect[name]
            name = name.rpartition("-")[0]
        return {}

    def write(self, record: Dict[str, Any]) -> None:
        """Append one record; never raises (an I/O error switches this log off)."""
        if not self.path or self.broken:
            return
        record = {**record, "pid": os.getpid(), "host": socket.gethostname()}
        clean = {k: clip(redact_text(v, self.secrets)) if isinstance(v, str) else v
                 for k, v in record.items()}
        line = json.dumps(clean, ensure_ascii=False, sort_keys=True) + "\n"
        try:
            os.makedirs(os.path.dirname(self.path) or ".", exist_ok=True)
            # one write() of one line in append mode: concurrent writers never interleave a line
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, line.encode("utf-8"))
            finally:
                os.close(fd)
        except OSError as e:
            self.broken = f"{type(e).__name__}: {e}"
            self.say(f"cannot write {self.path} ({self.broken}); progress is not recorded")

    def say(self, text: str) -> None:
        """One line on stderr, which `pulumi up` shows on the stack's row and in Diagnostics."""
        if self.path and self.echo:
            try:
                print(f"{ECHO_PREFIX} {terminal_text(redact_text(text, self.secrets))}",
                      file=sys.stderr, flush=True)
            except (OSError, ValueError):
                pass

    def run_started(self, stack: str, clock: Optional[Dict[str, Any]] = None,
                    usd_per_hour: Optional[float] = None) -> None:
        """Mark the start of a `pulumi up` (the status view shows what came after), with the
        plan's clock (components/progress/clock.py) and cost per hour when known."""
        rec: Dict[str, Any] = {"ts": self.clock(), "phase": "", "event": "run", "stack": stack}
        if clock:
            rec["clock"] = clock
        if usd_per_hour is not None:
            rec["usd_per_hour"] = usd_per_hour
        self.write(rec)


    def billing_started(self, start_ts: float, basis: str, end_ts: Optional[float] = None) -> None:
        """Record when the stack's billing starts (or started), as the program learnt it at run
        time (`basis` says from what: the Capacity Block's start, the training plan's, the
        cluster order): `status` counts the spend from there, not from `pulumi up`; and, for
        capacity bought for a window (the block's or the plan's end), when its nodes stop
        billing: `status` stops counting the plan's rate there instead of growing forever."""
        rec = {"ts": self.clock(), "phase": "", "event": "billing", "billing_start": float(start_ts),
               "basis": str(basis)}
        if end_ts is not None:
            rec["billing_end"] = float(end_ts)
        self.write(rec)


class Phase:
    """One wait: start, updates, then done or failed (failed when the `with` body raises)."""

    def __init__(self, log: ProgressLog, phase: str, waiting_for: str,
                 expected_s: Optional[float], assumption: str,
                 deadline_s: Optional[float] = None):
        self.log, self.name, self.waiting_for = log, phase, waiting_for
        self.expected_s = float(expected_s) if expected_s else None
        self.deadline_s = float(deadline_s) if deadline_s else None
        self.assumption = assumption
        self.started = log.clock()
        self._last_written = 0.0
        self._last_echo = self.started
        self._detail = ""
        self._detail_since = self.started
        self._fraction: Optional[float] = None
        self._said_slow = False
        self.closed = False
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._token: Optional[contextvars.Token] = None

    def elapsed(self) -> float:
        return max(0.0, self.log.clock() - self.started)

    def slow(self) -> bool:
        return bool(self.expected_s and self.elapsed() > SLOW_FACTOR * self.expected_s)

    def _record(self, event: str, detail: str) -> None:
        now = self.log.clock()
        self.log.write({
            "ts": now, "phase": self.name, "event": event,
            "waiting_for": self.waiting_for, "elapsed_s": round(self.elapsed(), 1),
            "expected_s": self.expected_s, "deadline_s": self.deadline_s,
            "assumption": self.assumption, "detail": detail,
            "unchanged_s": round(max(0.0, now - self._detail_since), 1),
            "fraction": self._fraction, "slow": self.slow(),
        })

    def _plan_words(self) -> str:
        if not self.expected_s:
            return "no plan figure"
        words = f"plan expects ~{fmt_duration(self.expected_s)}"
        return f"{words}: {self.assumption}" if self.assumption else words

    def start(self) -> "Phase":
        """Record the start (the `with` statement does this); then call `done` or `failed`."""
        self._record("start", "")
        self._last_written = self.log.clock()
        self.log.say(f"{self.name}: waiting for {self.waiting_for} ({self._plan_words()}); "
                     f"follow: {follow_hint(self.log.path)}")
        if self.log.path and (self.log.clock is time.time or self.log.wait is not None):
            # a blocking call (one SSH command that runs for an hour) still shows a live writer
            self._thread = threading.Thread(target=self._heartbeat, name=f"progress-{self.name}",
                                            daemon=True)
            self._thread.start()
        return self

    def __enter__(self) -> "Phase":
        self.start()
        self._token = _CURRENT.set(self)
        return self

    def _heartbeat(self) -> None:
        wait = self.log.wait or threading.Event.wait
        while not wait(self._stop, HEARTBEAT_S / 2):
            if self.log.broken:
                return
            self.update(self._detail)

    def update(self, detail: str, force: bool = False, *, fraction: Optional[float] = None) -> None:
        """The last thing seen (a job state, a log tail's last line); rate-limited.

        `fraction` (0..1), when the waiter can measure it (bytes copied of bytes planned),
        fills the status bar instead of elapsed/expected.
        """
        with self._lock:
            if not self.closed:
                self._update(str(detail), force, fraction)

    def _update(self, detail: str, force: bool, fraction: Optional[float]) -> None:
        now = self.log.clock()
        changed = detail != self._detail
        if changed:
            self._detail, self._detail_since = detail, now
        if fraction is not None:
            self._fraction = min(1.0, max(0.0, float(fraction)))
        since = now - self._last_written
        if force or (changed and since >= MIN_UPDATE_INTERVAL_S) or since >= HEARTBEAT_S:
            self._record("update", detail)
            self._last_written = now
        if self.slow() and not self._said_slow:
            self._said_slow = True
            self.log.say(f"{self.name}: SLOW, {fmt_duration(self.elapsed())} so far "
                         f"({self._plan_words()}); last seen: {detail}")
            self._last_echo = now
        elif now - self._last_echo >= ECHO_INTERVAL_S:
            self._last_echo = now
            self.log.say(f"{self.name}: {fmt_duration(self.elapsed())} of "
                         f"~{fmt_duration(self.expected_s)}; last seen: {detail}")

    def done(self, detail: str = "") -> None:
        if self._close():
            self._record("done", detail or self._detail)
            self.log.say(f"{self.name}: done after {fmt_duration(self.elapsed())}")

    def failed(self, detail: str) -> None:
        if self._close():
            self._record("failed", detail)
            self.log.say(f"{self.name}: FAILED after {fmt_duration(self.elapsed())}: {detail}")

    def _close(self) -> bool:
        """True once: the first caller closes the phase (and stops its heartbeat)."""
        with self._lock:
            if self.closed:
                return False
            self.closed = True
        self._stop.set()
        return True

    def __exit__(self, exc_type, exc, tb) -> bool:
        if self._token is not None:
            _CURRENT.reset(self._token)
            self._token = None
        if exc is not None:
            self.failed(f"{exc_type.__name__}: {exc}")
        else:
            self.done()
        return False


#: the innermost open phase of this thread/task (see `current_phase`)
_CURRENT: contextvars.ContextVar[Optional[Phase]] = contextvars.ContextVar("kimi_k3_progress_phase",
                                                                          default=None)


def current_phase() -> Phase:
    """The phase the caller runs inside, or one that records nothing.

    For helpers shared by many waits (a poll loop, a Slurm job wait): they report the last
    thing seen with `current_phase().update(...)` without being handed a phase.
    """
    return _CURRENT.get() or Phase(ProgressLog(None), "", "", None, "")


def read_records(path: str) -> List[Dict[str, Any]]:
    """Every well-formed record of a progress file, in order (a torn last line is skipped)."""
    return RecordReader(path).read()


class RecordReader:
    """Reads a progress file incrementally: each `read()` parses only what was appended since.

    The live status view re-reads every two seconds a file that grows with every `pulumi up`;
    a file that shrank or was replaced is read again from the start. A last line without its
    newline (a writer mid-`write`) waits for the next call.
    """

    def __init__(self, path: str):
        self.path = path
        self.records: List[Dict[str, Any]] = []
        self._offset = 0
        self._ino: Optional[int] = None

    def read(self) -> List[Dict[str, Any]]:
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            self.records, self._offset, self._ino = [], 0, None
            return self.records
        if st.st_ino != self._ino or st.st_size < self._offset:
            self.records, self._offset, self._ino = [], 0, st.st_ino
        if st.st_size == self._offset:
            return self.records
        try:
            with open(self.path, "rb") as f:
                f.seek(self._offset)
                chunk = f.read(st.st_size - self._offset)
        except FileNotFoundError:  # removed since the stat (a stack's files being cleaned up)
            self.records, self._offset, self._ino = [], 0, None
            return self.records
        end = chunk.rfind(b"\n") + 1
        self._offset += end
        for line in chunk[:end].splitlines():
            try:
                rec = json.loads(line)
            except (ValueError, RecursionError):  # not JSON, or nested past the parser's depth
                continue
            if isinstance(rec, dict) and isinstance(rec.get("phase"), str) \
                    and isinstance(rec.get("event"), str):
                self.records.append(rec)
        return self.records
