"""Waiting on CTyun: job polling and "until this is true" loops, each with a deadline.

Every wait says what it waits for, records progress through the progress API
(components/progress/record.py: a phase per wait, an update per poll) and, when the deadline passes,
fails with a message that says what was last seen and how to resume. Clock and sleep are
injectable so the logic is tested without waiting.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Callable, TypeVar

from .ehpc import JOB_DONE, JOB_FAILED, Ehpc
from .errors import CtyunError

log = logging.getLogger("kimi_k3.ctyun")
T = TypeVar("T")


class JobFailed(CtyunError):
    def __init__(self, what: str, job_uuid: str, status: str, detail: str = ""):
        self.what, self.job_uuid, self.status = what, job_uuid, status
        super().__init__(f"{what}: E-HPC job {job_uuid} ended {status!r}"
                         + (f"; {detail}" if detail else "")
                         + " (query-job-result gives no reason: see the job in CTyun's console)")


class DeadlineExceeded(CtyunError):
    def __init__(self, what: str, waited_s: float, last_seen: str, setting: str):
        self.what, self.last_seen = what, last_seen
        super().__init__(f"gave up waiting for {what}: the deadline ({setting}) passed after "
                         f"{waited_s:.1f} s of this wait (last seen: {last_seen}); the work may "
                         f"still finish on CTyun's side: run `pulumi up` again to resume, or "
                         f"raise {setting}")


class _NoPhase:
    def update(self, detail: str, force: bool = False) -> None:
        pass


@dataclass
class Waiter:
    """Polls at `interval_s` until a deadline (a time.monotonic() value)."""

    interval_s: float = 30.0
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.monotonic

    def until(self, what: str, probe: Callable[[], "tuple[bool, T, str]"], deadline: float,
              setting: str, phase=None) -> T:
        """Call `probe()` -> (done, value, what was seen) until done; then `value`."""
        started = self.clock()
        phase = phase or _NoPhase()
        while True:
            done, value, seen = probe()
            if done:
                return value
            phase.update(seen)
            now = self.clock()
            if now >= deadline:
                raise DeadlineExceeded(what, now - started, seen, setting)
            log.info("waiting for %s (%s, %.0f s so far)", what, seen, now - started)
            self.sleep(max(0.0, min(self.interval_s, deadline - now)))

    def job(self, ehpc: Ehpc, job_uuid: str, what: str, deadline: float, setting: str,
            phase=None) -> str:
        """Poll query-job-result until the job is done (its status) or raise JobFailed."""
        def probe():
            status = ehpc.job_status(job_uuid, deadline)
            if status in JOB_FAILED:
                raise JobFailed(what, job_uuid, status)
            return status in JOB_DONE, status, f"job {job_uuid} is {status}"
        return self.until(what, probe, deadline, setting, phase)


def remaining(deadline: float, clock: Callable[[], float] = time.monotonic) -> float:
    return max(0.0, deadline - clock())


def deadline_in(seconds: float, clock: Callable[[], float] = time.monotonic) -> float:
    return clock() + float(seconds)
