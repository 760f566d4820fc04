"""Progress of long waits, appended to a per-stack file on the machine running `pulumi up`.

Why a file: the waits that take minutes to hours (an E-HPC order, a weight download, a vLLM
start, a Capacity Block's start) happen inside dynamic providers, and what those print is not
reliably shown by `pulumi up` (see docs/progress.md). A JSON-lines file that the program names
(it knows the stack; a provider does not: the dynamic-provider host reports the stack as
`stack`) can be followed with `python -m components status --stack STACK`.

Each line is one event of one phase:
`{"ts", "phase", "event": "start"|"update"|"done"|"failed", "waiting_for", "elapsed_s",
"expected_s", "assumption", "detail", "slow"}`. `slow` is true once the elapsed time is past
`SLOW_FACTOR` x the expected time, so a reader can tell "slow" from "stuck". No secret may be
passed in; as a second guard every text field is scrubbed of the values given in `secrets`.

Pure of Pulumi. A `ProgressLog(None)` records nothing (a provider used without a progress file,
e.g. in a unit test), so callers never branch on it.
"""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Optional

#: a phase running past this multiple of its expected time is flagged `slow`
SLOW_FACTOR = 1.5
#: updates closer together than this are not written (a poll loop may call update every second)
MIN_UPDATE_INTERVAL_S = 5.0
#: where the program puts progress files, below the project directory
PROGRESS_DIR = ".kimi-k3/progress"
_BEARER = re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._~+/=-]+")


def progress_file_for(stack: str, root: Optional[os.PathLike] = None) -> str:
    """The progress file of `stack` (absolute): `<root>/.kimi-k3/progress/<stack>.jsonl`.

    `root` defaults to `KK3_PROGRESS_ROOT` or the current directory (the project directory
    under `pulumi up`). Only the program calls this: it knows the real stack name.
    """
    base = Path(root or os.environ.get("KK3_PROGRESS_ROOT") or os.getcwd())
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", stack) or "stack"
    return str((base / PROGRESS_DIR / f"{safe}.jsonl").resolve())


def scrub(text: str, secrets: Iterable[str] = ()) -> str:
    """`text` with every secret value and any bearer token replaced by `[secret]`."""
    out = str(text)
    for s in sorted((s for s in secrets if s and len(str(s)) >= 4), key=len, reverse=True):
        out = out.replace(str(s), "[secret]")
    return _BEARER.sub(r"\1[secret]", out)


class ProgressLog:
    """Appends progress events to one file (or nowhere when `path` is falsy)."""

    def __init__(self, path: Optional[str], secrets: Iterable[str] = (),
                 clock: Callable[[], float] = time.time):
        self.path = str(path) if path else ""
        self.secrets = [str(s) for s in secrets if s]
        self.clock = clock

    def phase(self, phase: str, waiting_for: str, expected_s: Optional[float] = None,
              assumption: str = "") -> "Phase":
        """Start a phase (`with log.phase(...) as p: ... p.update("job is RUNNING")`)."""
        return Phase(self, phase, waiting_for, expected_s, assumption)

    def write(self, record: Dict[str, Any]) -> None:
        if not self.path:
            return
        clean = {k: scrub(v, self.secrets) if isinstance(v, str) else v for k, v in record.items()}
        line = json.dumps(clean, ensure_ascii=False, sort_keys=True) + "\n"
        os.makedirs(os.path.dirname(self.path) or ".", exist_ok=True)
        # one write() of one line in append mode: concurrent writers never interleave a line
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line.encode("utf-8"))
        finally:
            os.close(fd)


class Phase:
    """One wait: start, updates, then done or failed (failed when the `with` body raises)."""

    def __init__(self, log: ProgressLog, phase: str, waiting_for: str,
                 expected_s: Optional[float], assumption: str):
        self.log, self.name, self.waiting_for = log, phase, waiting_for
        self.expected_s = float(expected_s) if expected_s else None
        self.assumption = assumption
        self.started = log.clock()
        self._last_written = 0.0
        self.closed = False

    def elapsed(self) -> float:
        return max(0.0, self.log.clock() - self.started)

    def _record(self, event: str, detail: str) -> None:
        elapsed = self.elapsed()
        self.log.write({
            "ts": self.log.clock(), "phase": self.name, "event": event,
            "waiting_for": self.waiting_for, "elapsed_s": round(elapsed, 1),
            "expected_s": self.expected_s, "assumption": self.assumption, "detail": detail,
            "slow": bool(self.expected_s and elapsed > SLOW_FACTOR * self.expected_s),
        })

    def __enter__(self) -> "Phase":
        self._record("start", "")
        self._last_written = self.log.clock()
        return self

    def update(self, detail: str, force: bool = False) -> None:
        """The last thing seen (a job state, a log tail's last line); rate-limited."""
        now = self.log.clock()
        if force or now - self._last_written >= MIN_UPDATE_INTERVAL_S:
            self._record("update", detail)
            self._last_written = now

    def done(self, detail: str = "") -> None:
        if not self.closed:
            self.closed = True
            self._record("done", detail)

    def failed(self, detail: str) -> None:
        if not self.closed:
            self.closed = True
            self._record("failed", detail)

    def __exit__(self, exc_type, exc, tb) -> bool:
        if exc is not None:
            self.failed(f"{exc_type.__name__}: {exc}")
        else:
            self.done()
        return False


def read_records(path: str) -> List[Dict[str, Any]]:
    """Every well-formed record of a progress file, in order (a torn last line is skipped)."""
    out: List[Dict[str, Any]] = []
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue
                if isinstance(rec, dict) and "phase" in rec and "event" in rec:
                    out.append(rec)
    except FileNotFoundError:
        pass
    return out
