"""`./run test` leaves the machine as it found it: .ci/services/session.sh starts the local
services when none runs, stops what it started when the command ends (also on failure and on
interrupt), and leaves services it did not start alone, even when several runs overlap.

The real start.sh/stop.sh change network namespaces, /etc/hosts and daemons shared by every run
on the machine, so here session.sh runs beside stand-ins with the same interface: start.sh writes
the seven pid files (sshd, munged, slurmctld, four slurmd) of live `sleep` processes under
KK3_CI_DIR/run, stop.sh kills what those pid files name and removes them. The real pair is
exercised end to end by .ci/services/check_cleanup.sh (root; it stops the shared services).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.child_signals import default_signals

ROOT = Path(__file__).resolve().parents[2]
DAEMONS = ("sshd", "munged", "slurmctld", "slurmd.kk3n0", "slurmd.kk3n1", "slurmd.kk3n2",
           "slurmd.kk3n3")

FAKE_START = """#!/bin/bash
set -euo pipefail
run=$KK3_CI_DIR/run
mkdir -p "$run"
echo start >>"$KK3_CI_DIR/calls"
for d in %s; do
  f=$run/$d.pid
  if [ -f "$f" ] && kill -0 "$(cat "$f")" 2>/dev/null; then continue; fi
  setsid sleep 300 </dev/null >/dev/null 2>&1 &
  echo $! >"$f"
done
""" % " ".join(DAEMONS)

FAKE_STOP = """#!/bin/bash
set -euo pipefail
echo stop >>"$KK3_CI_DIR/calls"
for f in "$KK3_CI_DIR"/run/*.pid; do
  [ -f "$f" ] || continue
  kill "$(cat "$f")" 2>/dev/null || true
  rm -f "$f"
done
"""


@pytest.fixture
def ci(tmp_path):
    """A copy of session.sh beside the stand-ins, and KK3_CI_DIR for it."""
    services = tmp_path / "services"
    services.mkdir()
    shutil.copy(ROOT / ".ci" / "services" / "session.sh", services / "session.sh")
    (services / "start.sh").write_text(FAKE_START)
    (services / "stop.sh").write_text(FAKE_STOP)
    for f in services.iterdir():
        f.chmod(0o755)
    state = tmp_path / "ci"
    state.mkdir()
    env = {**os.environ, "KK3_CI_DIR": str(state)}
    yield services / "session.sh", state, env
    for pid in _pids(state):
        _kill(pid)


def _pids(state):
    return [int(f.read_text()) for f in (state / "run").glob("*.pid")] if (state / "run").exists() else []


def _kill(pid):
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is not alive: its parent (the stand-in's shell) is gone, init reaps it
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split(") ")[-1][0] != "Z"


def _calls(state):
    f = state / "calls"
    return f.read_text().split() if f.exists() else []


def _wait_for(path, timeout=10.0):
    end = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < end, f"{path} never appeared"
        time.sleep(0.02)


def test_starts_when_nothing_runs_and_stops_after_success(ci):
    session, state, env = ci
    seen = state / "seen"
    r = subprocess.run([str(session), "sh", "-c", f"ls {state}/run > {seen}"], env=env,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert sorted(seen.read_text().split()) == sorted(
        [f"{d}.pid" for d in DAEMONS] + ["session-started", "session.lock", "sessions"])
    assert _calls(state) == ["start", "stop"]
    assert _pids(state) == [] and not (state / "run" / "session-started").exists()
    assert "stopping the services this test run started" in r.stdout


def test_a_failing_command_keeps_its_status_and_still_stops(ci):
    session, state, env = ci
    r = subprocess.run([str(session), "sh", "-c", "exit 3"], env=env, capture_output=True,
                       timeout=60)
    assert r.returncode == 3
    assert _calls(state) == ["start", "stop"] and _pids(state) == []


@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143),
                                       (signal.SIGHUP, 129)])
def test_an_interrupt_stops_what_it_started(ci, sig, code):
    session, state, env = ci
    ready = state / "ready"
    p = subprocess.Popen([str(session), "sh", "-c", f"touch {ready}; sleep 60"], env=env,
                         start_new_session=True, preexec_fn=default_signals,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _wait_for(ready)
    daemons = _pids(state)
    assert len(daemons) == 7 and all(_alive(pid) for pid in daemons)
    os.killpg(p.pid, sig)   # as a terminal's Ctrl-C (or a CI job's cancel) reaches the group
    assert p.wait(timeout=30) == code
    assert _calls(state) == ["start", "stop"]
    assert _pids(state) == []
    # stop.sh signalled them; a signalled process is gone once it has been scheduled to die
    # (on a busy machine, not always before the next line: seen once in a full run)
    end = time.monotonic() + 10
    while any(_alive(pid) for pid in daemons):
        assert time.monotonic() < end, [pid for pid in daemons if _alive(pid)]
        time.sleep(0.05)


def test_services_already_running_are_used_and_left_up(ci):
    session, state, env = ci
    start = session.parent / "start.sh"
    subprocess.run([str(start)], env=env, check=True, timeout=30)   # by hand, as a developer would
    before = _pids(state)
    r = subprocess.run([str(session), "sh", "-c", "exit 1"], env=env, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 1 and "already running" in r.stdout
    assert _calls(state) == ["start"]           # the hand start only: no start, no stop
    assert sorted(_pids(state)) == sorted(before) and all(_alive(pid) for pid in before)


def test_partly_running_services_are_completed_and_left_up(ci):
    session, state, env = ci
    start = session.parent / "start.sh"
    subprocess.run([str(start)], env=env, check=True, timeout=30)
    victim = state / "run" / "slurmd.kk3n2.pid"
    _kill(int(victim.read_text()))
    gone = subprocess.run(["sh", "-c", "echo $$"], capture_output=True, text=True).stdout
    victim.write_text(gone)                     # a pid no process has any more (reaped)
    r = subprocess.run([str(session), "true"], env=env, capture_output=True, timeout=60)
    assert r.returncode == 0
    assert _calls(state) == ["start", "start"]  # filled in, not stopped: they were not its own
    assert len(_pids(state)) == 7 and all(_alive(pid) for pid in _pids(state))


def test_overlapping_runs_stop_only_when_the_last_one_ends(ci):
    session, state, env = ci
    a_ready, a_go = state / "a-ready", state / "a-go"
    b_ready, b_go = state / "b-ready", state / "b-go"

    def run(ready, go):
        return subprocess.Popen([str(session), "sh", "-c",
                                 f"touch {ready}; while [ ! -e {go} ]; do sleep 0.05; done"],
                                env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    a = run(a_ready, a_go)
    _wait_for(a_ready)
    b = run(b_ready, b_go)
    _wait_for(b_ready)
    a_go.touch()                                 # the run that started them ends first
    assert a.wait(timeout=30) == 0
    assert _calls(state) == ["start"] and len(_pids(state)) == 7
    b_go.touch()
    assert b.wait(timeout=30) == 0
    assert _calls(state) == ["start", "stop"] and _pids(state) == []


def test_a_run_killed_outright_is_cleaned_up_by_the_next_one(ci):
    session, state, env = ci
    ready = state / "ready"
    p = subprocess.Popen([str(session), "sh", "-c", f"touch {ready}; exec sleep 60"], env=env,
                         start_new_session=True, preexec_fn=default_signals,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _wait_for(ready)
    os.killpg(p.pid, signal.SIGKILL)            # no trap runs
    p.wait(timeout=30)
    assert len(_pids(state)) == 7
    r = subprocess.run([str(session), "true"], env=env, capture_output=True, timeout=60)
    assert r.returncode == 0
    assert _calls(state) == ["start", "stop"] and _pids(state) == []


def test_run_test_goes_through_the_session_unless_only_unit_tests_are_named():
    script = (ROOT / "run").read_text()
    body = script.split("needs_services() {", 1)[1].split("\n}\n", 1)[0]
    probe = f"cd {ROOT}\nneeds_services() {{{body}\n}}\n" + "\n".join(
        f'if needs_services {args}; then echo yes; else echo no; fi' for args in (
            "", "-q -x", "tests/unit", "tests/unit/test_planner.py::test_x -q",
            "tests/integration", "tests/unit tests/integration/test_run_services.py",
            "-k slurm tests", "-p no:cacheprovider tests/unit/"))
    out = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["yes", "yes", "no", "no", "yes", "yes", "yes", "no"]
    assert 'exec .ci/services/session.sh "$VENV/bin/python" -m pytest "${xdist[@]}" "$@"' in script


def test_start_sh_does_not_hand_a_callers_lock_to_the_daemons(tmp_path):
    """`flock LOCK .ci/services/start.sh`: the daemons it starts (munged keeps what it inherits)
    must not hold LOCK after start.sh ends. The prologue of start.sh that closes inherited
    descriptors runs here before a stand-in daemon (the real script would start the shared ones)."""
    text = (ROOT / ".ci" / "services" / "start.sh").read_text()
    prologue = text[text.index("# The daemons started below"):text.index("\ndone\n") + 6]
    pidfile, lock = tmp_path / "daemon.pid", tmp_path / "services.lock"

    def run(with_prologue):
        script = tmp_path / "start.sh"
        script.write_text("#!/bin/bash\nset -euo pipefail\n" + (prologue if with_prologue else "")
                          + f"setsid sleep 60 </dev/null >/dev/null 2>&1 &\necho $! > {pidfile}\n")
        script.chmod(0o755)
        subprocess.run(["flock", str(lock), str(script)], check=True, timeout=30)
        try:
            free = subprocess.run(["flock", "-n", str(lock), "true"], timeout=30).returncode == 0
        finally:
            _kill(int(pidfile.read_text()))
        return free

    assert run(with_prologue=False) is False     # the hostile case: the daemon holds the lock
    assert run(with_prologue=True) is True


def test_start_sh_runs_one_copy_at_a_time(tmp_path):
    """Two start.sh at once (two sessions, or a session and a test's `services` fixture) must
    not interleave: both would start a missing daemon and rewrite the same files. Its lock
    block runs here before a critical section that notices a second copy inside it (the real
    script would restart the shared services); each run is started twice at the same moment."""
    text = (ROOT / ".ci" / "services" / "start.sh").read_text()
    block = text[text.index("# One start.sh at a time"):text.index("unset KK3_START_LOCKED\n")]
    state = tmp_path / "ci"

    def run(with_lock):
        script = tmp_path / "start.sh"
        script.write_text(
            "#!/bin/bash\nset -euo pipefail\nscript=$(readlink -f \"${BASH_SOURCE[0]}\")\n"
            f"dir={state}\n" + (block + "unset KK3_START_LOCKED\n" if with_lock else "")
            + "mkdir \"$dir/inside\"\nsleep 0.5\n[ -z \"${KK3_START_LOCKED:-}\" ]\n"
            "rmdir \"$dir/inside\"\n")
        state.mkdir(exist_ok=True)
        copies = [subprocess.Popen(["bash", str(script)], stderr=subprocess.PIPE)
                  for _ in range(2)]
        return [p.wait(timeout=30) for p in copies]

    assert sorted(run(with_lock=False)) == [0, 1]  # the hostile case: the second copy got in
    shutil.rmtree(state)
    assert run(with_lock=True) == [0, 0]


def test_each_test_session_starts_a_new_doubles_log(tmp_path):
    """The `services` fixture moves the last session's doubles log aside (one kept)."""
    from tests.integration.conftest import _new_doubles_log

    log = tmp_path / "doubles.log"
    _new_doubles_log(log)  # none yet: nothing to do
    assert not log.exists()
    log.write_text('{"tool": "vllm"}\n')
    _new_doubles_log(log)
    assert not log.exists() and (tmp_path / "doubles.log.1").read_text() == '{"tool": "vllm"}\n'
    log.write_text('{"tool": "npu-smi"}\n')
    _new_doubles_log(log)
    assert [p.name for p in tmp_path.iterdir()] == ["doubles.log.1"]
    assert (tmp_path / "doubles.log.1").read_text() == '{"tool": "npu-smi"}\n'
