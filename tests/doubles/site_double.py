"""Shared plumbing of the site-tool test doubles in tests/doubles/bin.

The CTyun site tools (`launcher`, `cthpc`, `cthpc_model_bcast`, `apptainer`, `npu-smi`) and vLLM
cannot exist on a CI machine, so the integration tests put these doubles first on PATH. Each one
appends a JSON line per call to $KK3_DOUBLES_LOG ({tool, host, argv, pid, t}) so tests can assert
what ran where, keeps per-host state under $KK3_DOUBLES_STATE, and can be told to fail once by a
fault file ($KK3_DOUBLES_STATE/faults/<name>) that the test writes and the double consumes.
"""

import fcntl
import json
import os
import socket
import sys
import time


def host() -> str:
    return socket.gethostname().split(".")[0]


def state_dir(*parts: str) -> str:
    base = os.environ.get("KK3_DOUBLES_STATE") or "/tmp/kimi-k3-doubles"
    path = os.path.join(base, *parts)
    os.makedirs(path, exist_ok=True)
    return path


def record(tool: str, argv=None) -> None:
    """Append this call to the call log (one JSON object per line, locked)."""
    log = os.environ.get("KK3_DOUBLES_LOG") or os.path.join(state_dir(), "calls.log")
    line = json.dumps({"tool": tool, "host": host(), "argv": list(argv if argv is not None
                                                                   else sys.argv[1:]),
                       "pid": os.getpid(), "t": time.time()})
    with open(log, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        f.write(line + "\n")


def take_fault(name: str) -> str:
    """The content of fault file `name` if present (and remove it: a fault fires once), else ''."""
    path = os.path.join(state_dir("faults"), name)
    try:
        with open(path) as f:
            value = f.read().strip() or "1"
        os.unlink(path)
        return value
    except FileNotFoundError:
        return ""


def die(msg: str, code: int = 1) -> None:
    print(msg, file=sys.stderr, flush=True)
    sys.exit(code)
