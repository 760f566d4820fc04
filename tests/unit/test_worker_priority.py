"""tests/worker_priority.py: which xdist worker steps back, and what stepping back does."""

import subprocess
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace

from tests import worker_priority
from tests.worker_priority import NICE, should_step_back

ROOT = Path(__file__).resolve().parents[2]
SERVICES = {"tests/integration/test_bootstrap.py", "tests/integration/test_slurm_day2.py"}


def _config(worker=True, dist="loadscope"):
    """A config as a worker sees it (xdist sets the worker's own --dist to "no")."""
    options = {"dist": "no" if worker else dist}
    workerinput = {"workerid": "gw1", worker_priority.SERVICES_FIRST: dist == "loadscope"}
    return SimpleNamespace(workerinput=workerinput if worker else None,
                           getvalue=options.__getitem__, workeroutput={})


def test_a_worker_whose_first_test_is_off_the_chain_steps_back():
    assert should_step_back(_config(), "tests/unit/test_planner.py", SERVICES)


def test_the_worker_that_runs_the_chain_keeps_its_priority():
    assert not should_step_back(_config(), "tests/integration/test_bootstrap.py", SERVICES)


def test_nothing_changes_without_a_chain_in_one_process_or_under_another_dist():
    assert not should_step_back(_config(), "tests/unit/test_planner.py", set())
    assert not should_step_back(_config(worker=False), "tests/unit/test_planner.py", SERVICES)
    assert not should_step_back(_config(dist="load"), "tests/unit/test_planner.py", SERVICES)


def test_the_decision_is_taken_once_at_the_first_test(monkeypatch):
    calls = []
    monkeypatch.setattr(worker_priority, "step_back", lambda: calls.append(1) or ["nice 19"])
    config = _config()
    config._kk3_services = SERVICES
    worker_priority.on_first_test(SimpleNamespace(config=config, nodeid="tests/unit/a.py::t"))
    worker_priority.on_first_test(SimpleNamespace(config=config, nodeid="tests/unit/b.py::t"))
    assert calls == [1] and config.workeroutput[worker_priority.KEY] == "nice 19"
    # a worker that started on the chain never steps back later
    config = _config()
    config._kk3_services = SERVICES
    worker_priority.on_first_test(SimpleNamespace(
        config=config, nodeid="tests/integration/test_bootstrap.py::t"))
    worker_priority.on_first_test(SimpleNamespace(config=config, nodeid="tests/unit/a.py::t"))
    assert calls == [1] and worker_priority.KEY not in config.workeroutput


def test_stepping_back_moves_every_thread_and_what_it_starts_to_the_lowest_priority():
    """In a child process (it cannot be undone): a thread started before, the process, and a
    process started after all end at nice 19; the session stays the same (nothing outside the
    run is yielded to)."""
    probe = textwrap.dedent("""
        import os, subprocess, threading
        from tests.worker_priority import step_back
        stop = threading.Event()
        t = threading.Thread(target=stop.wait); t.start()
        before = os.getsid(0)
        done = step_back()
        child = subprocess.run(["nice"], capture_output=True, text=True).stdout.strip()
        thread = os.getpriority(os.PRIO_PROCESS, t.native_id)
        stop.set(); t.join()
        print(done, before == os.getsid(0), thread, os.getpriority(os.PRIO_PROCESS, 0), child)
    """)
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True, timeout=60, cwd=ROOT).stdout.strip()
    assert out == f"['nice {NICE}'] True {NICE} {NICE} {NICE}"
