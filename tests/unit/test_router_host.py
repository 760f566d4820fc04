"""The router as a service on the CTyun master (components/router/host.py, ctyun_hcc/router_service.py):
the rendered units and scripts, and the guards on every word they carry."""

import json
import os
import shlex
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from components.ctyun_hcc.router_service import STEP_INPUTS, RouterServiceProvider, files_of
from components.router import host
from components.router.settings import ROUTER_REQUIREMENTS, ROUTER_REQUIREMENTS_LEGACY
from components.router.wheels import hashes, requirements_txt

PYTHON_DOUBLE = Path(__file__).resolve().parent.parent / "doubles" / "python_version_double.py"

URLS = ["http://10.0.0.2:11026", "http://10.0.0.6:11026"]


def _files(**kw):
    return files_of({**STEP_INPUTS, "workerUrls": URLS, **kw})


def test_units_restart_for_ever_and_run_the_router_on_loopback():
    f = _files()
    router, front = f["kimi-k3-router.service"], f["kimi-k3-front.service"]
    for unit in (router, front):
        assert "Restart=always\n" in unit and "RestartSec=2\n" in unit
        assert "StartLimitIntervalSec=0\n" in unit  # never gives up after quick exits
        assert "Environment=PYTHONPATH=/home/kimi-k3/router/site PYTHONUNBUFFERED=1\n" in unit
    exec_router = next(l for l in router.splitlines() if l.startswith("ExecStart="))
    assert exec_router.startswith("ExecStart=/usr/bin/python3 -m vllm_router.launch_router "
                                  "--host 127.0.0.1 --port 30000 --policy cache_aware "
                                  "--worker-urls http://10.0.0.2:11026 http://10.0.0.6:11026 "
                                  "--worker-startup-timeout-secs 7200 ")
    assert "--prometheus-host 127.0.0.1" in exec_router
    assert f["front.argv"] == ("/usr/bin/python3 /home/kimi-k3/router/kk3_front.py --listen "
                               "0.0.0.0:11025 --upstream http://127.0.0.1:30000\n")
    assert f["requirements.txt"] == requirements_txt(ROUTER_REQUIREMENTS)  # every pin with its hashes
    assert f["requirements-py38-py310.txt"] == requirements_txt(ROUTER_REQUIREMENTS_LEGACY,
                                                                hashes("legacy"))
    assert f["kk3_front.py"] == host.front_source()


def test_scripts_are_valid_bash():
    for name in ("install.sh", "supervise.sh", "service.sh"):
        res = subprocess.run(["bash", "-n"], input=_files()[name], text=True, capture_output=True)
        assert res.returncode == 0, (name, res.stderr)


@pytest.mark.parametrize("urls", [
    [], ["http://10.0.0.2:11026; rm -rf /"], ["http://10.0.0.2:11026\nExecStartPre=/bin/sh"],
    ["http://$(id):1"], ["https://10.0.0.2:1"], ["http://10.0.0.2"], ["http://a b:1"],
    ["http://10.0.0.2:11026/v1"], ["http://user@10.0.0.2:1"],
])
def test_hostile_replica_urls_are_refused(urls):
    with pytest.raises(ValueError):
        _files(workerUrls=urls)
    if urls:
        (failure,) = RouterServiceProvider().check_inputs({**STEP_INPUTS, "workerUrls": urls})
        assert failure.property == "workerUrls"


@pytest.mark.parametrize("key,value", [
    ("routerDir", "/home/kimi k3/router"), ("routerDir", "relative/router"),
    ("routerDir", "/home/../etc"), ("routerDir", "/home/$(id)"), ("routerDir", "/home/a\nb"),
    ("python", "python3; id"), ("python", "/usr/bin/python3 -c x"),
    ("jobName", "kimi k3"), ("jobName", "a\n[Service]"),
])
def test_hostile_words_never_reach_a_unit_or_a_shell(key, value):
    with pytest.raises(ValueError):
        _files(**{key: value})


@pytest.mark.parametrize("port", [30000, 29000])
def test_the_front_cannot_take_the_routers_ports(port):
    with pytest.raises(ValueError, match="also the router's"):
        _files(port=port)


def test_replica_url_from_a_node_address():
    assert host.worker_url("10.77.0.12", 11026) == "http://10.77.0.12:11026"
    for bad in ("10.0.0.1:1", "a b", "", "x/y", "[::1]"):
        with pytest.raises(ValueError):
            host.worker_url(bad, 11026)


def test_neither_service_runs_as_root(tmp_path):
    """systemd: a dynamic user each (the front allowed a low port only when it has one);
    the loop: setpriv to 65534 (the front stays root only on a port below 1024). The units pass
    `systemd-analyze verify` as they are."""
    f = _files(routerDir=str(tmp_path))
    for name in ("kimi-k3-router.service", "kimi-k3-front.service"):
        assert "DynamicUser=yes\n" in f[name] and "CAP_NET_BIND_SERVICE" not in f[name]
        (tmp_path / name).write_text(f[name])
    res = subprocess.run(["systemd-analyze", "verify", *(str(tmp_path / n) for n in
                          ("kimi-k3-router.service", "kimi-k3-front.service"))],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0 and not res.stderr.strip(), res.stderr
    assert (f["router.user"], f["front.user"]) == ("65534\n", "65534\n")
    assert 'drop=(setpriv "--reuid=$as" "--regid=$as" --clear-groups --)' in f["supervise.sh"]
    low = _files(port=443)
    assert "AmbientCapabilities=CAP_NET_BIND_SERVICE\n" in low["kimi-k3-front.service"]
    assert "CAP_NET_BIND_SERVICE" not in low["kimi-k3-router.service"]
    assert (low["router.user"], low["front.user"]) == ("65534\n", "root\n")


def test_the_loop_drops_to_the_uid_it_is_given_and_says_when_it_cannot(tmp_path):
    """supervise.sh as root with a .user file runs the command through setpriv (a stand-in on
    PATH that records its argv); without setpriv on PATH it says so in the service's log and
    runs the command as it is."""
    import os
    import shutil
    if os.geteuid() != 0:
        pytest.fail("this test runs as root, as the master's SSH user does")
    d = tmp_path / "r"
    (d / "logs").mkdir(parents=True)
    (d / "supervise.sh").write_text(_files()["supervise.sh"])
    (d / "w.user").write_text("65534\n")
    cmd = tmp_path / "cmd.sh"  # the service: says who it is, then stops its own loop
    cmd.write_text(f'#!/bin/sh\necho "ran as $(id -u)"\ntouch {d}/w.stop\n')
    cmd.chmod(0o755)
    tools = tmp_path / "bin"
    tools.mkdir()
    for t in ("cat", "id", "date", "sleep", "touch", "sh"):
        (tools / t).symlink_to(shutil.which(t))
    (tools / "setpriv").write_text('#!/bin/sh\necho "setpriv $*"\nshift 4\nexec "$@"\n')
    (tools / "setpriv").chmod(0o755)
    env = {"PATH": str(tools), "KK3_RESTART_S": "0"}

    def loop():
        (d / "w.stop").unlink(missing_ok=True)
        subprocess.run(["/bin/bash", str(d / "supervise.sh"), "w", str(d), "--", str(cmd)],
                       env=env, timeout=20, check=True)
        return (d / "logs" / "w.log").read_text()

    log = loop()
    assert f"setpriv --reuid=65534 --regid=65534 --clear-groups -- {cmd}\nran as 0\n" in log
    (tools / "setpriv").unlink()
    log = loop()
    assert "setpriv not found: w runs as root" in log.splitlines()[-2]


def _install(tmp_path, version):
    """install.sh as rendered, run by bash with the python3 double of `version` (the probe and
    the choice are the script's; only pip's install is recorded instead of run)."""
    d = tmp_path / "router"
    d.mkdir()
    script = host.install_sh(str(d), str(PYTHON_DOUBLE))
    log = tmp_path / "pip.log"
    env = {**os.environ, "KK3_DOUBLE_PYTHON_VERSION": version, "KK3_DOUBLE_PYTHON_LOG": str(log)}
    res = subprocess.run(["bash", "-c", script], env=env, text=True, capture_output=True,
                         timeout=60)
    calls = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return res, calls, d


@pytest.mark.parametrize("version,req", [
    ("3.8.10", "requirements-py38-py310.txt"), ("3.9.18", "requirements-py38-py310.txt"),
    ("3.10.12", "requirements-py38-py310.txt"), ("3.11.4", "requirements.txt"),
    ("3.12.3", "requirements.txt"), ("3.13.1", "requirements.txt"),
])
def test_install_picks_the_closure_of_the_masters_python(tmp_path, version, req):
    res, calls, d = _install(tmp_path, version)
    assert res.returncode == 0, res.stderr
    (pip,) = calls
    assert pip[pip.index("-r") + 1] == req
    assert {"--require-hashes", "--no-deps", ":all:"} <= set(pip)
    assert pip[pip.index("--only-binary") + 1] == ":all:"
    assert (d / "site").is_dir() and not (d / "site.new").exists()
    assert f"python3 {version.rsplit('.', 1)[0]}: installing {req}" in res.stdout


@pytest.mark.parametrize("version", ["3.7.9", "3.6.8", "2.7.18"])
def test_install_refuses_a_python_below_the_lowest_closure_in_one_line(tmp_path, version):
    res, calls, d = _install(tmp_path, version)
    assert res.returncode == 1 and not calls and not (d / "site").exists()
    (line,) = res.stderr.splitlines()
    found = version.rsplit(".", 1)[0]
    assert line.startswith("the router needs Python 3.8 or later on ")
    assert line.endswith(f": {PYTHON_DOUBLE} is Python {found}; install Python 3.8 or later on the "
                         f"master as {PYTHON_DOUBLE} or elsewhere and name it with "
                         "kimi-k3:routerPython (openEuler 22.03 LTS's python3 is 3.9)")


@pytest.mark.parametrize("answer", ["3.9; id", "3.9\n3.11", "", "$(id).1", "3.x"])
def test_install_refuses_a_python_whose_version_is_not_a_version(tmp_path, answer):
    res, calls, d = _install(tmp_path, answer)
    assert res.returncode == 1 and not calls and not (d / "site").exists()
    (line,) = res.stderr.splitlines()
    assert "the router needs Python 3.8 or later on " in line and \
        f"{PYTHON_DOUBLE} does not run" in line


class _Answers:
    """A runner that answers `service.sh status` and the admin script as scripted (the real
    router and sshd: tests/integration/test_ctyun_router_service.py)."""

    def __init__(self, status: str, listed: str, code: int = 0):
        self.status, self.listed, self.code, self.commands = status, listed, code, []

    def run(self, command, check=True, label="", timeout_s=None):
        self.commands.append(command)
        out = (self.status if command.endswith(" status") else "supervisor loop"
               if command.endswith(" refresh") else self.listed)
        return type("R", (), {"stdout": out, "code": self.code if "-c" in command else 0})()


def _live_props(urls):
    return {**STEP_INPUTS, "routerDir": "/home/kimi-k3/router", "workerUrls": urls}


NEW = ["http://10.0.0.5:11026", "http://10.0.0.7:11026"]
OLD = ["http://10.0.0.5:11026", "http://10.0.0.6:11026"]


def test_a_new_replica_set_is_told_to_the_running_router():
    runner = _Answers("router active 10\nfront active 11\n", json.dumps({"urls": NEW[::-1]}))
    assert RouterServiceProvider()._tell_router(runner, _live_props(NEW), OLD) == "loop"
    script = shlex.split(runner.commands[-1])[2]  # python3 -c SCRIPT
    assert "add_worker', 'http://10.0.0.7:11026'" in script
    assert "remove_worker', 'http://10.0.0.6:11026'" in script and "10.0.0.5" not in script
    assert not any(c.endswith(" start") for c in runner.commands)


@pytest.mark.parametrize("status, listed, code", [
    ("router inactive\nfront active 11\n", json.dumps({"urls": NEW}), 0),  # the router is down
    ("router active 10\nfront active 11\n", json.dumps({"urls": OLD}), 0),  # it did not take them
    ("router active 10\nfront active 11\n", "Internal Server Error", 1),  # it refused
    ("router active 10\nfront active 11\n", "[]", 0)])  # an answer of another shape
def test_the_update_restarts_the_services_when_the_router_cannot_be_told(status, listed, code):
    assert RouterServiceProvider()._tell_router(_Answers(status, listed, code), _live_props(NEW), OLD) is None


def test_only_a_changed_replica_set_is_told_anything_else_restarts(monkeypatch):
    prov, seen = RouterServiceProvider(), []
    monkeypatch.setattr(RouterServiceProvider, "_apply", lambda self, p: seen.append(p) or {})
    olds = _live_props(OLD)
    prov.update("id", olds, _live_props(NEW))
    prov.update("id", olds, {**_live_props(NEW), "metricsPort": 29001})
    prov.update("id", olds, {**olds, "port": 8443})
    assert [p.get("liveFromWorkerUrls") for p in seen] == [OLD, None, None]


def test_the_loop_runs_the_argv_file_as_it_is_at_each_start(tmp_path):
    """`service.sh refresh` leaves the running services alone; the loop reads `<s>.argv` at
    every start, so a restart runs what the last update wrote."""
    (tmp_path / "supervise.sh").write_text(host.supervise_sh())
    argv = tmp_path / "cmd.argv"
    argv.write_text("/bin/sh -c exit\n")
    (tmp_path / "cmd.stop").unlink(missing_ok=True)
    script = (f"echo 'echo second' >{argv}; sleep 0.3; touch {tmp_path}/cmd.stop")
    env = {**os.environ, "KK3_ARGV_FILE": str(argv), "KK3_RESTART_S": "0.1"}
    loop = subprocess.Popen(["bash", str(tmp_path / "supervise.sh"), "cmd", str(tmp_path), "--",
                             "echo", "first"], env=env)
    subprocess.run(["bash", "-c", script], check=True)
    loop.wait(timeout=10)
    log = (tmp_path / "logs" / "cmd.log").read_text()
    assert "second" in log and "first" not in log


def test_the_loop_ends_when_its_directory_is_gone(tmp_path):
    """A loop whose directory was removed without `stop` (a killed run, a hand-made `rm -rf`)
    can never be stopped by its .stop file: it ends instead of restarting for ever (seen: two
    loops with KK3_RESTART_S=0 spinning for hours after an interrupted test)."""
    d = tmp_path / "router"
    d.mkdir()
    (tmp_path / "supervise.sh").write_text(host.supervise_sh())
    env = {**os.environ, "KK3_RESTART_S": "0", "KK3_LOG_FILE": str(tmp_path / "loop.log"),
           "KK3_PID_FILE": str(tmp_path / "loop.pid")}
    loop = subprocess.Popen(["bash", str(tmp_path / "supervise.sh"), "cmd", str(d), "--",
                             "sleep", "0.05"], env=env)
    try:
        time.sleep(0.3)
        assert loop.poll() is None  # restarting its command while the directory exists
        shutil.rmtree(d)
        assert loop.wait(timeout=10) == 0
    finally:
        if loop.poll() is None:
            loop.kill()
