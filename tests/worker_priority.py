"""The CPU goes to the services chain first: xdist workers that do not run it step back.

Why: the suite's floor is the chain of tests on the shared sshd + 4-node Slurm, which runs on one
worker, one test after the other (tests/xdist_groups.py), while the other workers run CPU-bound
modules. The services worker's own work (paramiko, the providers, the local Slurm commands and
servers it starts) should not queue behind theirs.

How: a worker that does not hold the services scope sets its nice value to 19 (every thread:
Linux keeps a nice value per thread; what it starts afterwards inherits it). Raising a nice value
needs no privilege, and cannot be undone without one: so it is done only once the worker knows
it will never run a services test. Under `--dist loadscope` with tests/xdist_groups.py's
scheduler the services scope is the first unit of work and is given to one worker whole, before
any other scope (xdist's LoadScopeScheduling.schedule), so a worker's first test tells: a test
of another module means the chain is elsewhere.

What it does not do: with autogroups (sched(7), "The autogroup feature" and "The nice value and
group scheduling", https://man7.org/linux/man-pages/man7/sched.7.html; enabled on these
machines, /proc/sys/kernel/sched_autogroup_enabled = 1) a nice value only counts against the
processes of the same session, i.e. the pytest run itself: sshd's sessions and the Slurm
daemons, in sessions of their own, are not helped, and nothing outside the run is slowed. A
worker could leave the session (setsid) and give its own autogroup the lowest weight, which
would also yield to those daemons, but then to every other program on the machine too: on a
shared or busy machine the stepped-back workers, and the servers their tests start, would get
almost no CPU and their tests' real deadlines (timeouts against local servers) would fail.

Nothing happens with `-n 0`, another `--dist`, or a run without services tests (then nothing
needs the CPU more than the workers do). It is best effort: a thread the kernel refuses keeps
its priority (the suite is only slower).
"""

from __future__ import annotations

import os
from typing import List

#: the nice value of a worker that steps back (the lowest priority there is)
NICE = 19
#: the workeroutput key a worker reports what it did under
KEY = "kk3_stepped_back"
#: the workerinput key by which the controller says its scheduler is the services-first one
#: (a worker cannot tell: xdist sets a worker's own --dist to "no")
SERVICES_FIRST = "kk3_services_first"


def should_step_back(config, first_module: str, services: set) -> bool:
    """On an xdist worker of a `--dist loadscope` run: its first test is of `first_module`; does
    this worker step back? Only if there is a services chain and it runs elsewhere."""
    if not (getattr(config, "workerinput", None) or {}).get(SERVICES_FIRST):
        return False
    return bool(services) and first_module not in services


def step_back() -> List[str]:
    """Every thread of this process at nice NICE; returns what was done."""
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:  # no /proc: the calling thread, which runs the tests and starts processes
        tasks = [str(os.getpid())]
    for tid in tasks:
        try:
            os.setpriority(os.PRIO_PROCESS, int(tid), NICE)
        except OSError:
            continue  # a thread that ended meanwhile
    return [f"nice {NICE}"] if os.getpriority(os.PRIO_PROCESS, 0) == NICE else []


def on_first_test(item) -> None:
    """On a worker, before its first test: step back if the services chain is elsewhere (once)."""
    config = item.config
    if getattr(config, "_kk3_priority_checked", False):
        return
    config._kk3_priority_checked = True
    module = item.nodeid.split("::", 1)[0]
    if should_step_back(config, module, getattr(config, "_kk3_services", set())):
        config.workeroutput[KEY] = ", ".join(step_back()) or "nothing (the kernel refused)"


def summary_line(reports: dict) -> str:
    """The controller's line for `{worker id: what it did}` (empty: nothing to say)."""
    if not reports:
        return ""
    return "CPU priority lowered for the services chain's sake (tests/worker_priority.py): " + \
        "; ".join(f"{w}: {what}" for w, what in sorted(reports.items()))
