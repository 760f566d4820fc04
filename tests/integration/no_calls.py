"""A test double of the network and of process start, for a dynamic-provider host that must call
nothing (tests/integration/test_preview_unknowns.py).

Why: at preview the engine sends a dynamic provider `check` and `diff` (pulumi's
pkg/resource/deploy/step_generator.go) with the unknown sentinel in every input computed from
a resource not created yet. Neither may reach a cloud API, an SSH server or a program: a
preview changes nothing and may run where nothing is reachable. `install()` runs inside the
`python -m pulumi.dynamic` host before it starts (`GuardedHost`; `refuse_calls` does the same in
the test's own process, undone after the test) and replaces every way out of
the process that kimi-k3's providers use - a TCP/Unix connect (paramiko, httpx, requests and
botocore all end in `socket.socket.connect` after `socket.getaddrinfo`) and starting a process
(`subprocess.Popen`, `os.system`) - by one that writes what was tried to the file named by
`KK3_NO_CALLS_LOG` and fails the way an unreachable network does (ConnectionRefusedError), so a
provider that swallows the failure is still seen.

The gRPC server the host answers on is grpc's C core (no Python socket call), and asyncio's
self-pipe is a `socketpair` (no connect): neither is touched.
"""

from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path
from typing import Callable, List

from tests.integration.dynamic_host import DynamicProviderHost

LOG_ENV = "KK3_NO_CALLS_LOG"


def _record(what: str) -> None:
    with open(os.environ[LOG_ENV], "a", encoding="utf-8") as f:
        f.write(what.replace("\n", " ") + "\n")


class CallRefused(ConnectionRefusedError):
    """What a guarded call raises (an OSError, as an unreachable host gives)."""


def _guards(record: Callable[[str], None]):
    """(object, attribute, replacement) of every way out, each recording what was tried."""

    def connect(self, address):
        record(f"connect {address!r}")
        raise CallRefused(f"no calls at preview (connect {address!r})")

    def connect_ex(self, address):
        record(f"connect {address!r}")
        return 111  # ECONNREFUSED

    def getaddrinfo(host, *args, **kwargs):
        record(f"resolve {host!r}")
        raise CallRefused(f"no calls at preview (resolve {host!r})")

    def popen(self, args, *rest, **kwargs):
        record(f"run {args!r}")
        raise PermissionError(f"no calls at preview (run {args!r})")

    def system(command):
        record(f"run {command!r}")
        return 1

    return [(socket.socket, "connect", connect), (socket.socket, "connect_ex", connect_ex),
            (socket, "getaddrinfo", getaddrinfo), (subprocess.Popen, "__init__", popen),
            (os, "system", system)]


def install() -> None:
    """In the provider host, for good (the process ends with the test's host)."""
    for obj, name, replacement in _guards(_record):
        setattr(obj, name, replacement)


def refuse_calls(monkeypatch) -> List[str]:
    """In this process, until the test ends (`monkeypatch` undoes it): the list of what was tried."""
    tried: List[str] = []
    for obj, name, replacement in _guards(tried.append):
        monkeypatch.setattr(obj, name, replacement)
    return tried


class GuardedHost(DynamicProviderHost):
    """Pulumi's dynamic-provider host with `install()` run first; `calls()` is what was tried."""

    LAUNCH = ("-c", "from tests.integration.no_calls import install; install(); "
                    "import runpy; runpy.run_module('pulumi.dynamic', run_name='__main__')")

    def __init__(self, log: Path, **kwargs):
        super().__init__(**kwargs)
        self.log = log
        self.env[LOG_ENV] = str(log)

    def calls(self) -> List[str]:
        return self.log.read_text().splitlines() if self.log.exists() else []

    def forget_calls(self) -> None:
        self.log.unlink(missing_ok=True)
