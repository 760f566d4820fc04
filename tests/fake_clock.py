"""A clock the tests move by hand, for code that takes `clock`, `sleep` or `wait` parameters.

Waits, polls, deadlines and heartbeats are then tested in simulated time: a gate with a
20-minute budget runs in milliseconds, and every figure is exact. Real I/O (an HTTP double, a
file) still happens for real; only waiting is simulated. Tests get one through the
`fake_clock` fixture (tests/conftest.py).

- `clock()` / `clock.now()`: the time now (starts at `start`);
- `clock.sleep(s)`: returns at once, time moves on by `s` (for `sleep=` parameters);
- `await clock.asleep(s)`: the same for asyncio code (yields to the loop once);
- `clock.wait(event, s)`: `threading.Event.wait` in simulated time, for loops in threads
  (`while not wait(stop, poll)`): returns True at once when `event` is set; otherwise time
  moves on by `s`, but only while the test is blocked in `until` (the program's "blocking
  call"), so a thread cannot run ahead of the code the test drives;
- `clock.until(t)`: the test's blocking call: block (in real time, up to `real_timeout_s`)
  until the threads' waiting has moved the clock to `t` and the thread that moved it last has
  finished that turn of its loop (is waiting again, or gone).
"""

from __future__ import annotations

import asyncio
import threading
from typing import List


class FakeClock:
    def __init__(self, start: float = 1000.0, real_step_s: float = 0.001):
        self.t = float(start)
        self.start = float(start)
        self.real_step_s = real_step_s
        self.slept: List[float] = []
        self._cond = threading.Condition()
        self._blocked = 0
        self._entries = 0
        self._entries_at_advance = 0
        self._target = float("inf")

    def __call__(self) -> float:
        return self.t

    def now(self) -> float:
        return self.t

    def elapsed(self) -> float:
        return self.t - self.start

    def advance(self, s: float) -> None:
        with self._cond:
            self.t += max(0.0, float(s))
            self._cond.notify_all()

    def sleep(self, s: float) -> None:
        self.slept.append(float(s))
        self.advance(s)

    async def asleep(self, s: float) -> None:
        self.sleep(s)
        await asyncio.sleep(0)

    def wait(self, event: threading.Event, s: float) -> bool:
        with self._cond:
            self._entries += 1
            self._cond.notify_all()
            while not event.is_set() and (self._blocked == 0 or self.t >= self._target):
                self._cond.wait(self.real_step_s)
            if event.is_set():
                return True
            self.slept.append(float(s))
            self.t += max(0.0, float(s))
            self._entries_at_advance = self._entries
            self._cond.notify_all()
            return False

    def until(self, t: float, real_timeout_s: float = 10.0) -> None:
        with self._cond:
            self._blocked += 1
            self._target = t
            self._cond.notify_all()
            try:
                if not self._cond.wait_for(lambda: self.t >= t, timeout=real_timeout_s):
                    raise TimeoutError(f"simulated time never reached {t} (it is {self.t})")
                # the advancing thread's turn is over once it waits again (or has ended)
                self._cond.wait_for(lambda: self._entries > self._entries_at_advance,
                                    timeout=real_timeout_s)
            finally:
                self._blocked -= 1
