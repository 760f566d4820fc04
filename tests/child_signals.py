"""`default_signals`: a `preexec_fn` giving a child process the default INT/HUP/TERM handling.

Why: a test run started in the background (`./run test &`: a non-interactive shell's background
job ignores SIGINT) or under `nohup` (SIGHUP ignored) hands those ignores down to every process
it starts. bash cannot trap a signal ignored on entry (bash(1), SIGNALS), Python keeps SIGINT
ignored if it was at startup (https://docs.python.org/3/library/signal.html, "Python installs a
small number of signal handlers by default ... SIGINT is translated into a KeyboardInterrupt
exception if the parent process has not changed it"), and `sleep` survives a SIGHUP it ignores.
The tests that interrupt or hang up a child use this so that they check the code under test,
not how the suite was launched.
"""

from __future__ import annotations

import signal


def default_signals() -> None:
    """Reset SIGINT, SIGHUP and SIGTERM to their default actions (call in the child)."""
    for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)
