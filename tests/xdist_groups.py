"""Which xdist worker runs what, for `./run test` (pytest-xdist, `--dist loadscope`).

One unit of work ("scope") is one test module, so its module-scoped servers start once; every
module with a test on the shared sshd + 4-node Slurm (a test that uses the `services` fixture)
is in the one scope "services", so those tests run on one worker, one after the other, never
beside each other (they drain nodes, kill slurmd, bind the model port on the head). That scope
goes first: it is the longest chain of waits in the suite.

Only a worker knows which tests use a fixture (the controller collects nothing), so each worker
writes the services modules to a file the controller named (`pytest_configure_node`) before it
reports its collection; the controller's scheduler reads it when it splits the collection.
(pytest-xdist's own `xdist_group` marks cannot carry this under pytest 9.2: xdist 3.8 appends
the group to `item._nodeid`, which pytest 9.2's `Item.nodeid` no longer reads.)
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Iterable, Optional, Set

from xdist.scheduler import LoadScopeScheduling

#: the scope of every module with a test on the shared services
SERVICES = "services"
#: the workerinput key naming the file
KEY = "kk3_services_modules"


def module_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def services_modules(items: Iterable) -> Set[str]:
    return {module_of(i.nodeid) for i in items if "services" in getattr(i, "fixturenames", ())}


def groups_file(config) -> str:
    """The controller's file (made once per run) that the workers write."""
    if not hasattr(config, "_kk3_groups_file"):
        fd, name = tempfile.mkstemp(prefix="kk3-xdist-services-")
        os.close(fd)
        config._kk3_groups_file = name
    return config._kk3_groups_file


def remove_groups_file(config) -> None:
    name = getattr(config, "_kk3_groups_file", None)
    if name:
        Path(name).unlink(missing_ok=True)


def on_worker(config, items: list) -> None:
    """On a worker: the services modules first (the scheduler keeps the collection order:
    `--no-loadscope-reorder`), and written down for the controller (atomically: every worker
    writes the same list)."""
    workerinput = getattr(config, "workerinput", None)
    if not workerinput or KEY not in workerinput:
        return
    services = services_modules(items)
    items.sort(key=lambda i: module_of(i.nodeid) not in services)  # stable within each part
    path = Path(workerinput[KEY])
    tmp = path.with_name(f"{path.name}.{workerinput['workerid']}")
    tmp.write_text("\n".join(sorted(services)) + "\n")
    os.replace(tmp, path)


class ServicesFirstScheduling(LoadScopeScheduling):
    """xdist's load-by-scope scheduling, with a module as the scope except for the services
    modules, which share one."""

    def __init__(self, config, log=None):
        super().__init__(config, log)
        self._file = groups_file(config)
        self._services: Optional[Set[str]] = None

    def _split_scope(self, nodeid: str) -> str:
        if self._services is None:  # first called once every worker has collected
            self._services = set(Path(self._file).read_text().split())
        module = module_of(nodeid)
        return SERVICES if module in self._services else module
