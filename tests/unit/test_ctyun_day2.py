"""The pure parts of day two (issue 19): node states and GRES as Slurm prints them, which jobs
hold which nodes, the master's report and what it lacks, node names, the fetch commands'
guards, the password-login block in sshd's config, and the watchdog's choices, run by bash
against stubbed Slurm commands. Every guard here has its hostile input.
"""

from __future__ import annotations

import os
import stat
import sys
import subprocess
from pathlib import Path

import pytest

from components.ctyun_hcc import fetch_commands as fc
from components.ctyun_hcc import password_login as pl
from components.ctyun_hcc.cluster_check import check_names, parse_report, problems
from components.ctyun_hcc.health_scripts import render_watchdog_sh
from components.ctyun_hcc.resize import holding, job_owner, new_nodes
from components.ctyun_hcc.scripts import SlurmLayout
from components.ctyun_hcc.slurm_jobs import JobInfo, parse_gres, parse_job, split_usable
from tests.child_signals import default_signals


# --- Slurm's own words ---------------------------------------------------------------------------

@pytest.mark.parametrize("text,want", [
    ("gpu:16\ngpu:16\n", {"gpu": 16}),
    ("gpu:16(S:0-1)\n", {"gpu": 16}),
    ("gpu:a100:8,npu:16\n", {"gpu": 8, "npu": 16}),
    ("gpu:16\ngpu:8\n", {"gpu": 8}),          # the smallest node decides
    ("(null)\n", {}),
    ("", {}),
    ("gpu\n", {"gpu": 0}),                    # a name without a count: known, count unknown
])
def test_gres_as_sinfo_prints_it(text, want):
    assert parse_gres(text) == want


def test_only_nodes_a_step_can_start_on_now_are_usable():
    states = {"kk3n0": "allocated", "kk3n1": "idle", "kk3n2": "down*", "kk3n3": "drained",
              "kk3n4": "idle*", "kk3n5": "draining", "kk3n6": "mixed", "kk3n7": "idle~"}
    usable, others = split_usable(states, ["kk3n0", "kk3n1", "kk3n2", "kk3n3", "kk3n4",
                                           "kk3n5", "kk3n6", "kk3n7", "kk3n9"])
    assert usable == ["kk3n0", "kk3n1", "kk3n6", "kk3n7"]
    assert others == {"kk3n2": "down*", "kk3n3": "drained", "kk3n4": "idle*",
                      "kk3n5": "draining", "kk3n9": "not in the partition"}


def test_a_requeued_job_shows_its_restarts():
    info = parse_job("7", "JobId=7 JobName=kimi-k3 JobState=PENDING Reason=BeginTime "
                          "Restarts=1 Comment=kk3:x:y")
    assert (info.state, info.reason, info.restarts) == ("PENDING", "BeginTime", 1)
    assert parse_job("7", "JobId=7 JobState=RUNNING Restarts=x").restarts == 0


def test_which_of_our_jobs_hold_the_nodes_a_step_needs():
    jobs = [JobInfo("1", "RUNNING", ("a", "b")), JobInfo("2", "PENDING", ()),
            JobInfo("3", "RUNNING", ("c",))]
    assert holding(jobs, ["b", "d"]) == {"1": ["b"]}
    assert holding(jobs, ["x"]) == {}
    assert new_nodes(["a", "b"], ["a", "c", "b", "d"]) == ["c", "d"]
    # the owner tag cannot smuggle a separator into the comment it is matched by
    assert job_owner("proj/stack:x y$") == "kk3:proj/stackxy:"


# --- the master's report, the edition, the names ------------------------------------------------

REPORT = """HOSTNAME a3master0001
ADDRESSES 192.168.0.5 172.17.0.1
MODULES yes
TOOL sinfo /usr/bin/sinfo
TOOL sbatch /usr/bin/sbatch
TOOL srun /usr/bin/srun
TOOL scontrol /usr/bin/scontrol
TOOL squeue /usr/bin/squeue
TOOL scancel /usr/bin/scancel
TOOL apptainer /usr/bin/apptainer
TOOL launcher /usr/local/bin/launcher
TOOL cthpc /usr/local/bin/cthpc
TOOL cthpc_model_bcast /opt/cthpc/bin/cthpc_model_bcast
TOOL modelscope -
TOOL python3 /usr/bin/python3
TOOL wget /usr/bin/wget
TOOL tar /usr/bin/tar
LAUNCHERCONF yes
PY38 yes
NODE a3compute0001 192.168.0.6 a3compute0001 192.168.0.6
NODE a3compute0002 a3compute0002 a3compute0002 192.168.0.7
"""
WANT = {"masterInCompute": True, "modelSource": "cthpc", "sifSource": "cthpc",
        "bcastMethod": "auto", "launcherConf": "/x/launcher.conf"}


def _without(report, *tools):
    return "\n".join(ln for ln in report.splitlines()
                     if not any(ln.startswith(f"TOOL {t} ") for t in tools))


def test_the_large_model_edition_needs_nothing_and_falls_back_to_nothing():
    r = parse_report(REPORT)
    assert r.hostname == "a3master0001" and "192.168.0.5" in r.addresses
    assert problems(r, WANT) == ([], [])


def test_everything_missing_is_named_at_once_with_its_fix():
    r = parse_report(_without(REPORT, "apptainer", "launcher", "srun", "cthpc",
                              "cthpc_model_bcast", "wget"))
    hard, soft = problems(r, WANT)
    text = "; ".join(hard)
    assert "Slurm's commands (srun)" in text and "apptainer" in text
    assert "launcher (puts the master into the queue)" in text
    assert "ctyun:masterInCompute=false" in text
    assert "wget (downloads the SIF image without cthpc)" in text
    assert len(hard) == 4
    assert any("ModelScope instead" in s for s in soft) and any("ZOS URL" in s for s in soft)
    assert any("parallel copies" in s for s in soft)
    # the launcher is only needed when the master serves
    assert not any("launcher" in h for h in problems(r, {**WANT, "masterInCompute": False})[0])
    # the launcher without its config is named too
    no_conf = parse_report(REPORT.replace("LAUNCHERCONF yes", "LAUNCHERCONF no"))
    assert "the launcher's config /x/launcher.conf" in problems(no_conf, WANT)[0][0]


def test_no_cthpc_and_no_python_means_no_weights():
    r = parse_report(_without(REPORT, "cthpc").replace("PY38 yes", "PY38 no"))
    hard, _ = problems(r, WANT)
    assert any(h.startswith("Python 3.8 or later") for h in hard)
    # an explicit cthpc_model_bcast with none there is an error, not a fallback
    r = parse_report(_without(REPORT, "cthpc_model_bcast"))
    assert "kimi-k3:bcastMethod=auto or copy" in problems(
        r, {**WANT, "bcastMethod": "cthpc_model_bcast"})[0][0]


def test_a_router_needs_its_python_checked_before_the_jobs_run(tmp_path):
    """With several replicas the router's python (vllm-router's pinned closures need 3.8 or
    later: components/router/wheels.json, 3.11+ or 3.8-3.10) is checked at the cluster check, by
    the same command: an older one is a hard problem naming it and both fixes; without a router
    nothing is asked."""
    import subprocess

    from components.ctyun_hcc.chain import ROUTER_PYTHON
    from components.ctyun_hcc.cluster_check import report_command

    want = {**WANT, "routerPython": ROUTER_PYTHON}
    old = parse_report(REPORT + "PYROUTER no\n")
    assert problems(old, want)[0] == [
        "Python 3.8 or later as /usr/bin/python3 (vllm-router's pinned dependencies, for "
        "kimi-k3:replicas > 1): install it there, name another with kimi-k3:routerPython, or "
        "serve one replica (kimi-k3:replicas=1)"]
    assert problems(parse_report(REPORT + "PYROUTER yes\n"), want) == ([], [])
    assert problems(old, WANT) == ([], [])  # one replica: no router, no question
    assert "PYROUTER" not in report_command("/x")
    # the command's line, run with a python that is too old and with this one
    too_old = tmp_path / "python3"
    too_old.write_text("#!/bin/sh\nexit 1\n")  # sys.exit(True): version_info < (3, 8)
    too_old.chmod(0o755)
    for python, want_line in ((str(too_old), "PYROUTER no"), (sys.executable, "PYROUTER yes")):
        line = report_command("/x", python).splitlines()[0]
        out = subprocess.run(["bash", "-c", line], capture_output=True, text=True).stdout
        assert out.strip() == want_line
    # the command's own version test, by a python3 double that reports another version: 3.9
    # (openEuler 22.03's) has the legacy closure, 3.7 none
    double = Path(__file__).resolve().parent.parent / "doubles" / "python_version_double.py"
    line = report_command("/x", str(double)).splitlines()[0]
    for version, want_line in (("3.9.18", "PYROUTER yes"), ("3.8.0", "PYROUTER yes"),
                               ("3.7.17", "PYROUTER no"), ("3.12.1", "PYROUTER yes")):
        out = subprocess.run(["bash", "-c", line], capture_output=True, text=True,
                             env={**os.environ, "KK3_DOUBLE_PYTHON_VERSION": version}).stdout
        assert out.strip() == want_line, version


NODES = [{"name": "a3master0001", "inner_ip": "192.168.0.5", "role": "master"},
         {"name": "a3compute0001", "inner_ip": "192.168.0.6", "role": "compute"},
         {"name": "a3compute0002", "inner_ip": "192.168.0.7", "role": "compute"}]


def test_names_come_from_the_nodes_by_address():
    r = parse_report(REPORT)
    # the master is not a Slurm node yet: its host name, since the SSH host holds its address
    assert check_names(r, NODES) == ("a3master0001", ["a3compute0001", "a3compute0002"], [])


def test_a_name_the_api_got_wrong_is_an_error_naming_both():
    r = parse_report(REPORT)
    wrong = [dict(n) for n in NODES]
    wrong[0]["name"] = "master0001"
    wrong[2]["name"] = "compute0002"
    _, _, bad = check_names(r, wrong)
    assert bad == ["master at 192.168.0.5: the API calls it 'master0001', the node is "
                   "'a3master0001' (Slurm's NodeName / host name)",
                   "compute at 192.168.0.7: the API calls it 'compute0002', the node is "
                   "'a3compute0002' (Slurm's NodeName / host name)"]
    lost = [dict(n) for n in NODES]
    lost[1]["inner_ip"] = "10.9.9.9"
    lost[0]["inner_ip"] = "10.9.9.8"
    _, _, bad = check_names(r, lost)
    assert "compute 'a3compute0001' (10.9.9.9) from the API: no Slurm node has that address" \
        in bad[1]
    assert "the SSH host is 'a3master0001'" in bad[0]


# --- fetch commands' guards -------------------------------------------------------------------------

@pytest.mark.parametrize("url", [
    "http://jiangsu-10.zos.ctyun.cn/x.sif",          # plain http
    "ftp://host/x.sif",
    "https://host/x.sif; rm -rf /",                  # shell
    "https://user:pw@host/x.sif",                    # userinfo
    "https://host/x.sif\n",                          # a trailing newline ($ would pass it)
    "",
])
def test_only_plain_https_urls_reach_wget(url):
    with pytest.raises(ValueError, match="is not an https:// URL"):
        fc.sif_download_command(url, "/mnt/x.sif")


def test_a_url_reaches_wget_as_one_literal_word(tmp_path):
    (tmp_path / "bin").mkdir()
    _stub(tmp_path / "bin", "wget", f'printf "%s\\n" "$@" > {tmp_path}/argv; printf x > "$4"\n')
    url = "https://host/a$(touch$IFS'pwned');b&d.sif?x=$HOME"
    r = _bash(fc.sif_download_command(url, str(tmp_path / "x.sif")), tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "argv").read_text().splitlines()[-1] == url
    assert not Path("pwned").exists() and not (tmp_path / "pwned").exists()


def test_the_seeds_url_is_the_default_and_passes():
    assert fc.check_url(fc.SEED_SIF_URL) == fc.SEED_SIF_URL
    assert fc.SEED_SIF_URL.startswith("https://jiangsu-10.zos.ctyun.cn/")


@pytest.mark.parametrize("digest", ["0" * 63, "G" * 64, "A" * 64, "0" * 64 + "\n", "x"])
def test_a_sha256_is_64_lower_case_hex_digits(digest):
    with pytest.raises(ValueError, match="is not 64 lower-case hex digits"):
        fc.sif_download_command(fc.SEED_SIF_URL, "/mnt/x.sif", digest)
    with pytest.raises(ValueError, match="is not 64 lower-case hex digits"):
        fc.sha256_check_command("/mnt/x.sif", digest)


def _stub(bindir: Path, name: str, body: str) -> None:
    path = bindir / name
    path.write_text("#!/bin/bash\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def _bash(script: str, tmp: Path, env=None):
    return subprocess.run(["bash", "-c", "set -euo pipefail\n" + script], capture_output=True,
                          text=True, env={"PATH": f"{tmp / 'bin'}:/usr/bin:/bin", **(env or {})},
                          timeout=60)


def test_a_download_becomes_the_image_only_when_its_sum_matches(tmp_path):
    import hashlib

    (tmp_path / "bin").mkdir()
    body = b"SIF image bytes"
    # wget -q -c -O PART URL: writes the served bytes (the double of a finished download)
    _stub(tmp_path / "bin", "wget", f'printf %s {body.decode()!r} > "$4"\n')
    target = tmp_path / "d" / "x.sif"
    good = hashlib.sha256(body).hexdigest()
    r = _bash(fc.sif_download_command(fc.SEED_SIF_URL, str(target), good), tmp_path)
    assert r.returncode == 0, r.stderr
    assert target.read_bytes() == body and not Path(str(target) + ".part").exists()
    target.unlink()
    r = _bash(fc.sif_download_command(fc.SEED_SIF_URL, str(target), "1" * 64), tmp_path)
    assert r.returncode == 3 and f"is {good}, not {'1' * 64}" in r.stderr
    assert not target.exists() and not Path(str(target) + ".part").exists()


PIP_STUB = """#!/bin/bash
echo "pip $*" >> "$CALLS"
if [ "$3" != --upgrade ]; then
  printf '#!/bin/bash\\necho "modelscope $*" >> "$CALLS"\\n' > "$(dirname "$0")/modelscope"
  chmod +x "$(dirname "$0")/modelscope"
fi
"""


def test_modelscope_is_installed_once_into_its_own_venv(tmp_path):
    (tmp_path / "bin").mkdir()
    (tmp_path / "pip").write_text(PIP_STUB)
    venv = tmp_path / "venv"
    # `python3 -c CHECK` passes; `python3 -m venv DIR` makes DIR/bin/pip (the stub above),
    # whose `install modelscope...` makes DIR/bin/modelscope
    _stub(tmp_path / "bin", "python3",
          'if [ "$1" = -c ]; then exit 0; fi\n'
          f'mkdir -p "$3/bin" && cp {tmp_path}/pip "$3/bin/pip" && chmod +x "$3/bin/pip"\n')
    cmd = fc.modelscope_command("Eco-Tech/Kimi-K3-w4a8", str(tmp_path / "m"), "modelscope==1.40.2",
                                fc.SEED_PIP_INDEX, str(venv))
    env = {"CALLS": str(tmp_path / "calls")}
    for _ in range(2):
        r = _bash(cmd, tmp_path, env)
        assert r.returncode == 0, r.stderr
    calls = (tmp_path / "calls").read_text().splitlines()
    assert calls[:2] == [f"pip install -q --upgrade pip -i {fc.SEED_PIP_INDEX}",
                         "pip install -q modelscope==1.40.2"]
    download = f"modelscope download --model Eco-Tech/Kimi-K3-w4a8 --local_dir {tmp_path / 'm'}"
    assert calls[2:] == [download, download]  # installed once, used twice
    # an install cut short (no completion mark) is redone, not trusted
    (venv / ".kk3-complete").unlink()
    assert _bash(cmd, tmp_path, env).returncode == 0
    assert sum(c == "pip install -q modelscope==1.40.2" for c in
               (tmp_path / "calls").read_text().splitlines()) == 2


def test_without_python_38_the_modelscope_fallback_says_so(tmp_path):
    (tmp_path / "bin").mkdir()
    _stub(tmp_path / "bin", "python3", "exit 1\n")
    r = _bash(fc.modelscope_command("a/b", str(tmp_path / "m"), venv=str(tmp_path / "v")),
              tmp_path)
    assert r.returncode == 1 and "modelscope needs Python 3.8 or later" in r.stderr


# --- password login: a block in sshd's config, added once, removed exactly ----------------------

@pytest.fixture
def sshd(tmp_path):
    (tmp_path / "bin").mkdir()
    conf = tmp_path / "sshd_config"
    conf.write_text("Port 22\nPermitRootLogin yes\nPasswordAuthentication yes\n")
    # the "running sshd": a process whose SIGHUP the test can see (sleep dies of it)
    daemon = subprocess.Popen(["sleep", "60"], preexec_fn=default_signals)
    (tmp_path / "sshd.pid").write_text(f"{daemon.pid}\n")
    # sshd -t -f F: refuses a config containing the word REFUSE (the test's bad config), or
    # with STUB_NO_KBD one with KbdInteractiveAuthentication; sshd -T prints the pidfile
    _stub(tmp_path / "bin", "sshd",
          f'if [ "$1" = -T ]; then echo "pidfile {tmp_path}/sshd.pid"; exit 0; fi\n'
          '! grep -q REFUSE "$3" && ! { [ -f "${STUB_NO_KBD:-}" ] && grep -q KbdInteractive "$3"; }\n')
    yield tmp_path, conf, daemon
    daemon.kill()
    daemon.wait()


def _hupped(daemon) -> bool:
    try:
        return daemon.wait(timeout=5) == -1  # ended by SIGHUP (1)
    except subprocess.TimeoutExpired:
        return False


def test_password_login_is_switched_off_once_and_back_on_exactly(sshd):
    tmp, conf, daemon = sshd
    before = conf.read_text()
    r = _bash(pl.off_command("root", "kimi-k3:p/s", str(conf)), tmp)
    assert r.returncode == 0 and r.stdout.strip() == "changed", r.stderr
    text = conf.read_text()
    assert text.startswith(before) and "Match User root\n    PasswordAuthentication no\n" \
        "    KbdInteractiveAuthentication no\n" in text
    assert _hupped(daemon)  # told to re-read its config
    again = subprocess.Popen(["sleep", "60"], preexec_fn=default_signals)
    (tmp / "sshd.pid").write_text(f"{again.pid}\n")
    assert _bash(pl.off_command("root", "kimi-k3:p/s", str(conf)), tmp).stdout.strip() == "as is"
    assert conf.read_text() == text  # once
    assert _bash(pl.state_command("kimi-k3:p/s", str(conf)), tmp).stdout.strip() == "off"
    # another stack's block is another block; ours comes off alone
    _bash(pl.off_command("kk3pw", "kimi-k3:p/other", str(conf)), tmp)
    r = _bash(pl.on_command("kimi-k3:p/s", str(conf)), tmp)
    assert r.returncode == 0 and r.stdout.strip() == "changed", r.stderr
    rest = conf.read_text()
    assert "Match User root" not in rest and "Match User kk3pw" in rest
    _bash(pl.on_command("kimi-k3:p/other", str(conf)), tmp)
    assert conf.read_text() == before
    assert _bash(pl.state_command("kimi-k3:p/s", str(conf)), tmp).stdout.strip() == "on"


def test_a_config_sshd_refuses_is_put_back_as_it_was(sshd):
    tmp, conf, daemon = sshd
    conf.write_text(conf.read_text() + "# REFUSE\n")
    before = conf.read_text()
    r = _bash(pl.off_command("root", "kimi-k3:p/s", str(conf)), tmp)
    assert r.returncode == 1 and "sshd refused the change" in r.stderr
    assert conf.read_text() == before and not _hupped(daemon)
    assert not Path(str(conf) + ".kk3-before").exists()


def test_an_sshd_without_kbd_interactive_in_match_gets_the_password_line_alone(sshd):
    tmp, conf, _ = sshd
    flag = tmp / "no_kbd"
    flag.write_text("")
    r = _bash(pl.off_command("root", "kimi-k3:p/s", str(conf)), tmp, {"STUB_NO_KBD": str(flag)})
    assert r.returncode == 0, r.stderr
    assert "PasswordAuthentication no" in conf.read_text()
    assert "KbdInteractive" not in conf.read_text()


@pytest.mark.parametrize("user", ["root; echo x", "a b", "$(id)"])
def test_the_match_line_is_one_word_whatever_the_user(sshd, user):
    tmp, conf, _ = sshd
    _bash(pl.off_command(user, "kimi-k3:p/s", str(conf)), tmp)
    assert f"Match User {user}\n" in conf.read_text()  # written literally, never run


# --- the watchdog's choices ---------------------------------------------------------------------

@pytest.fixture
def slurm(tmp_path):
    (tmp_path / "bin").mkdir()
    _stub(tmp_path / "bin", "sinfo", f'cat {tmp_path}/down\n')
    _stub(tmp_path / "bin", "scontrol", f'echo "$*" >> {tmp_path}/scontrol\n')
    return tmp_path


def test_the_watchdog_resumes_only_answering_nodes_down_for_not_answering_or_rebooting(slurm):
    (slurm / "down").write_text(
        "n1|down|Not responding\n"
        "n2|down*|Not responding\n"                # slurmd still silent
        "n3|down|Node unexpectedly rebooted\n"
        "n4|down|maintenance [root@2026-12-01T10:00:00]\n"
        "n5|drained|Node unexpectedly rebooted\n"  # drained: an operator's decision
        "n6|down|Kill task failed\n")
    script = slurm / "watchdog.sh"
    script.write_text(render_watchdog_sh(SlurmLayout()))
    r = subprocess.run(["bash", str(script), "--once"], capture_output=True, text=True,
                       env={"PATH": f"{slurm / 'bin'}:/usr/bin:/bin"}, timeout=30)
    assert r.returncode == 0, r.stderr
    assert (slurm / "scontrol").read_text().splitlines() == [
        "update NodeName=n1 State=RESUME", "update NodeName=n3 State=RESUME"]
    assert "resumed n1 (was DOWN: Not responding)" in r.stdout
    r = subprocess.run(["bash", str(script), "--bogus"], capture_output=True, text=True,
                       env={"PATH": f"{slurm / 'bin'}:/usr/bin:/bin"}, timeout=30)
    assert r.returncode == 2 and "Not responding|Node unexpectedly rebooted" in r.stderr


def test_day_two_scripts_quote_the_partition(tmp_path):
    text = render_watchdog_sh(SlurmLayout(partition="a3.batch-1"))
    assert "-p a3.batch-1 -t down" in text
    with pytest.raises(Exception, match="ctyun:queueName"):
        render_watchdog_sh(SlurmLayout(partition="batch; rm -rf /"))



# --- the service job after a node reboots or fails: it requeues itself (srun.sh) ----------------

@pytest.fixture
def batch(tmp_path):
    """srun.sh with stubbed Slurm: the main srun prints $MAIN_ERR and exits $MAIN_RC; each
    probe srun exits the next of $PROBE_RCS; `scontrol -o show job` prints $JOB; `sleep` only
    logs how long it was asked to wait; every scontrol call is logged."""
    from components.ctyun_hcc.scripts import render_srun_sh
    from tests.integration.slurm_env import default_plan_spec

    (tmp_path / "bin").mkdir()
    (tmp_path / "logs").mkdir()
    _stub(tmp_path / "bin", "srun",
          'if [ "${1:-}" = --overlap ]; then\n'
          f'  n=$(cat {tmp_path}/probes 2>/dev/null || echo 0); echo $((n + 1)) > {tmp_path}/probes\n'
          '  set -- $PROBE_RCS; shift "$n"; exit "${1:-0}"\n'
          'fi\n'
          'printf "%b" "${MAIN_ERR:-}" >&2; exit "$MAIN_RC"\n')
    _stub(tmp_path / "bin", "sleep", f'echo "$*" >> {tmp_path}/slept\n')
    _stub(tmp_path / "bin", "scontrol", f'echo "$*" >> {tmp_path}/scontrol\n'
          'case "$*" in\n'
          '  "show hostnames"*) printf "n0\\nn1\\n" ;;\n'
          '  "show node"*) echo "NodeName=n0 NodeAddr=10.0.0.10 State=ALLOCATED" ;;\n'
          '  "show config"*) [ -z "${CONFIG_FAILS:-}" ] || exit 1; echo "SlurmdTimeout           = 10 sec" ;;\n'
          '  "-o show job"*) echo "$JOB" ;;\n'
          'esac\n')
    p, spec = default_plan_spec(2)
    script = tmp_path / "srun.sh"
    script.write_text(render_srun_sh(p, spec, SlurmLayout(work_dir=str(tmp_path))))
    return tmp_path


RUNNING = "JobId=7 JobName=kimi-k3 JobState=RUNNING Reason=None Requeue=1 Restarts=0 BatchFlag=1"
#: srun's messages when a node's shutdown TERMed its task first (as seen on the local cluster)
SHUTDOWN = ("srun: error: n1: task 1: Exited with exit code 143\\n"
            "srun: launch/slurm: _step_signal: Terminating StepId=7.0\\n"
            "srun: error: n0: task 0: Exited with exit code 143\\n")
#: ... and when the engine on node 0 failed: the others are TERMed after it (srun says 143 too)
ENGINE = ("srun: error: n0: task 0: Exited with exit code 1\\n"
          "srun: launch/slurm: _step_signal: Terminating StepId=7.0\\n"
          "srun: error: n1: task 1: Terminated\\n")


def _batch(tmp: Path, main_rc: int, probes: str = "0 0", job: str = RUNNING, restarts: str = "",
           err: str = "", config_fails: bool = False):
    """Run srun.sh; (result, requeued by the script, the waits it asked for)."""
    for f in ("scontrol", "slept", "probes"):
        (tmp / f).unlink(missing_ok=True)
    if not err and main_rc == 143:
        err = SHUTDOWN
    env = {"PATH": f"{tmp / 'bin'}:/usr/bin:/bin", "SLURM_JOB_ID": "7",
           "SLURM_JOB_NODELIST": "n[0-1]", "MAIN_RC": str(main_rc), "PROBE_RCS": probes,
           "JOB": job, "MAIN_ERR": err}
    if restarts:
        env["SLURM_RESTART_COUNT"] = restarts
    if config_fails:
        env["CONFIG_FAILS"] = "1"
    r = subprocess.run(["bash", str(tmp / "srun.sh")], capture_output=True, text=True, env=env,
                       timeout=60)
    log = (tmp / "scontrol").read_text() if (tmp / "scontrol").exists() else ""
    slept = (tmp / "slept").read_text().split() if (tmp / "slept").exists() else []
    return r, "requeue 7" in log.splitlines(), slept


def test_a_task_terminated_by_a_shutdown_waits_for_slurm_then_requeues_with_the_same_id(batch):
    """The job waits SlurmdTimeout + 60 s for Slurm's own requeue (which ends the script on a
    real cluster); when every node answers again by then, it requeues itself."""
    import components.ctyun_hcc.scripts as scripts
    r, requeued, slept = _batch(batch, 143)
    assert slept[0] == "70" and requeued
    assert "srun ended with 143: task 1: Exited with exit code 143 first" in r.stderr
    assert f"restart 1 of {scripts.MAX_REQUEUES}" in r.stderr
    assert "task 1: Exited with exit code 143" in r.stderr  # srun's words still reach the log


def test_a_slurmctld_that_does_not_answer_the_config_question_still_gets_the_wait(batch):
    """`scontrol show config` failing (slurmctld busy or restarting) under `set -euo pipefail`
    must not end the script before the wait: it takes Slurm's default SlurmdTimeout (300 s)."""
    r, requeued, slept = _batch(batch, 143, config_fails=True)
    assert slept[0] == "360" and requeued, (r.stderr, slept)


def test_a_node_still_silent_after_the_wait_is_left_to_slurm_never_requeued_by_the_job(batch):
    """Requeueing while a node is silent left the restarted job unable to create a step on
    Slurm 22.05; the job ends instead (a plain `pulumi up` submits it again)."""
    r, requeued, slept = _batch(batch, 137, probes="1 1")   # killed; a node runs no step
    assert slept == ["70"] and not requeued and r.returncode == 137
    assert "does not run a step any more" in r.stderr
    r, requeued, slept = _batch(batch, 137, probes="1 0")   # ... and it answered again
    assert slept[0] == "70" and requeued


def test_an_engine_that_fails_first_ends_the_job_at_once_though_srun_says_143(batch):
    """--kill-on-bad-exit TERMs the other tasks after the failed one: srun's exit code is 143
    (the highest), but the first task to end says it was the engine (found on the local
    cluster: the job requeued itself five times over a model directory without config.json)."""
    r, requeued, slept = _batch(batch, 143, err=ENGINE)
    assert not requeued and not slept and r.returncode == 143
    r, requeued, slept = _batch(batch, 1)                    # every node answers the probe
    assert not requeued and not slept and r.returncode == 1
    r, requeued, slept = _batch(batch, 0)
    assert not requeued and not slept and r.returncode == 0


@pytest.mark.parametrize("why,kw", [
    ("cancelled by the stack or a user", {"job": RUNNING.replace("RUNNING", "CANCELLED")}),
    ("not requeueable", {"job": RUNNING.replace("Requeue=1", "Requeue=0")}),
    ("requeued too often already", {"restarts": "5"}),
])
def test_no_wait_and_no_self_requeue_when_the_job_must_stay_ended(batch, why, kw):
    r, requeued, slept = _batch(batch, 143, **kw)
    assert not requeued and not slept and r.returncode == 143, why


def test_no_self_requeue_of_a_job_the_stack_stopped(batch):
    (batch / "logs" / "service-stopped").write_text("1796200000.5 7 the service was replaced\n")
    r, requeued, slept = _batch(batch, 143)
    assert not requeued and not slept and r.returncode == 143
    # another job's mark does not hold this one back
    (batch / "logs" / "service-stopped").write_text("1796200000.5 70 resize\n")
    assert _batch(batch, 143)[1]


# --- stopping the service for a step: this stack's own job, and only it ---------------------------

def _service(*names, work_dir="/home/kimi-k3"):
    from components.ctyun_hcc.resize import ServiceJobs

    return ServiceJobs(tuple(names), "kimi-k3/prod", work_dir)


def _stubs(monkeypatch, listed, jobs):
    from components.ctyun_hcc import resize

    cancelled, marks = [], []
    monkeypatch.setattr(resize, "jobs_of", lambda runner, user=None: listed)
    monkeypatch.setattr(resize, "job", lambda runner, jid: jobs[jid])
    monkeypatch.setattr(resize, "cancel", lambda runner, jid, deadline, poll: cancelled.append(jid))
    monkeypatch.setattr(resize, "mark_stopped",
                        lambda runner, wd, jid, why: marks.append((jid, wd, why)))
    return cancelled, marks


def test_a_step_stops_only_this_stacks_service_and_only_when_it_holds_a_needed_node(monkeypatch):
    from components.ctyun_hcc import resize

    jobs = {"1": JobInfo("1", "RUNNING", ("kk3n0", "kk3n1")),
            "2": JobInfo("2", "RUNNING", ("kk3n2",)),
            "3": JobInfo("3", "RUNNING", ("kk3n3",)),
            "4": JobInfo("4", "RUNNING", ("kk3n1",)),
            "5": JobInfo("5", "RUNNING", ("kk3n1",))}
    listed = [("1", "RUNNING", "kimi-k3", "kk3:kimi-k3/prod:abc"),     # ours
              ("2", "RUNNING", "kimi-k3", "kk3:kimi-k3/other:abc"),    # another stack's
              ("3", "RUNNING", "kimi-k3", "kk3:kimi-k3/prodx:abc"),    # a tag only like ours
              ("4", "RUNNING", "train", "kk3:kimi-k3/prod:abc"),       # another job name
              ("5", "RUNNING", "kimi-k3-rx", "kk3:kimi-k3/prod:abc")]  # not a replica's name
    cancelled, marks = _stubs(monkeypatch, listed, jobs)
    p = _service("kimi-k3")
    assert resize.stop_service_for(None, p, ["kk3n2", "kk3n3"], "the broadcast", 0, 1) == []
    assert resize.stop_service_for(None, p, ["kk3n1", "kk3n2", "kk3n3"], "the broadcast",
                                   0, 1) == ["1"]
    assert cancelled == ["1"] and marks == [("1", "/home/kimi-k3", "stopped for the broadcast")]


def test_each_replicas_stop_is_marked_in_its_own_work_dir(monkeypatch):
    """With several replicas the step names every replica's job; the mark of replica i's job
    goes where replica i's service reads it (<workDir>/replica-<i>), so each reports its own
    downtime (not replica 0 alone)."""
    from components.ctyun_hcc import resize

    listed = [("1", "RUNNING", "kimi-k3", "kk3:kimi-k3/prod:a"),
              ("2", "RUNNING", "kimi-k3-r1", "kk3:kimi-k3/prod:b"),
              ("3", "RUNNING", "kimi-k3-r2", "kk3:kimi-k3/prod:c")]
    jobs = {"1": JobInfo("1", "RUNNING", ("n0", "n1")), "2": JobInfo("2", "RUNNING", ("n2", "n3")),
            "3": JobInfo("3", "RUNNING", ("n4", "n5"))}
    _, marks = _stubs(monkeypatch, listed, jobs)
    p = _service("kimi-k3", "kimi-k3-r1", "kimi-k3-r2", work_dir="/home/kimi-k3/")
    assert resize.stop_service_for(None, p, ["n1", "n4"], "the broadcast", 0, 1) == ["1", "3"]
    assert [(j, wd) for j, wd, _ in marks] == [("1", "/home/kimi-k3/"),
                                               ("3", "/home/kimi-k3/replica-2")]


def test_a_replica_the_program_no_longer_declares_is_stopped_wherever_it_runs(monkeypatch):
    """replicas 2 -> 1: the shrink removes replica 1's nodes, but its service is deleted only
    at the end of the update, after the shrink. Its job (this stack's: owner comment and the
    `<job>-r<i>` name) is stopped by the first step that stops the service, even on nodes the
    step does not need (it would hold the nodes replica 0's new job needs), without a stop
    mark (nothing reads it; a later replica 1 must not report a downtime that was not its
    own). Before, only the names still declared were looked for: the shrink waited for
    "someone else's" job until its deadline."""
    from components.ctyun_hcc import resize

    listed = [("1", "RUNNING", "kimi-k3", "kk3:kimi-k3/prod:a"),
              ("2", "RUNNING", "kimi-k3-r1", "kk3:kimi-k3/prod:b"),
              ("3", "RUNNING", "kimi-k3-r2", "kk3:kimi-k3/other:c")]  # another stack's
    jobs = {"1": JobInfo("1", "RUNNING", ("n0", "n1")), "2": JobInfo("2", "RUNNING", ("n2", "n3")),
            "3": JobInfo("3", "RUNNING", ("n4", "n5"))}
    cancelled, marks = _stubs(monkeypatch, listed, jobs)
    p = _service("kimi-k3")
    assert resize.stop_service_for(None, p, ["n3"], "the shrink", 0, 1) == ["2"]
    assert cancelled == ["2"] and marks == []
    cancelled.clear()
    assert resize.stop_service_for(None, p, ["n9"], "the NVMe mount step", 0, 1) == ["2"]
    assert cancelled == ["2"]


def test_service_job_names_are_a_list_and_an_old_comma_joined_state_shows_no_diff():
    """`serviceJobNames` is a list (no job name is split on a comma); a state written with the
    comma-joined `serviceJobName` reads as the same list: upgrading shows no diff and re-runs
    no step."""
    from components.ctyun_hcc.bootstrap import BroadcastProvider, NvmeMountProvider
    from components.ctyun_hcc.resize import ServiceJobs
    from components.ctyun_hcc.shrink_step import HccShrinkProvider

    with pytest.raises(ValueError, match="a list of job names"):
        ServiceJobs("kimi-k3,kimi-k3-r1", "t", "/w")
    for prov in (NvmeMountProvider(), BroadcastProvider(), HccShrinkProvider()):
        news = {"sshHost": "h", "serviceJobNames": ["kimi-k3", "kimi-k3-r1"], "ownerTag": "t"}
        olds = {"sshHost": "h", "serviceJobName": "kimi-k3,kimi-k3-r1", "ownerTag": "t"}
        assert prov.inputs(olds)["serviceJobNames"] == ["kimi-k3", "kimi-k3-r1"]
        assert not prov.diff("id", olds, news).changes, type(prov).__name__
        assert prov.diff("id", olds, {**news, "serviceJobNames": ["kimi-k3"]}).changes


def test_jobs_of_reads_name_and_comment_and_a_separator_in_a_field_matches_no_name():
    from components.ctyun_hcc.slurm_jobs import jobs_of

    class R:
        def run(self, cmd, **kw):
            self.cmd = cmd
            return type("Res", (), {"stdout": "7|RUNNING|kimi-k3|kk3:t:fp\n"
                                              "8|RUNNING|x|kimi-k3|kk3:t:fp\n"
                                              "9|PENDING|kimi-k3|a|kk3:t:fp\n"
                                              "garbage\n"})()
    r = R()
    assert jobs_of(r, "root") == [("7", "RUNNING", "kimi-k3", "kk3:t:fp"),
                                  ("8", "RUNNING", "", "kk3:t:fp"),
                                  ("9", "PENDING", "", "kk3:t:fp")]
    assert "-u root" in r.cmd


class _LocalRunner:
    """Runs each command with the local bash (what the master's shell would do with it)."""

    def run(self, cmd, check=True, timeout_s=None, stdin=None, label=None):
        import subprocess as sp

        r = sp.run(["bash", "-c", cmd], input=stdin, capture_output=True, text=True, timeout=30)
        assert not check or r.returncode == 0, (cmd, r.stderr)
        return type("Res", (), {"stdout": r.stdout, "stderr": r.stderr, "code": r.returncode})()


def test_the_endpoint_is_the_last_runs_line_and_only_once_that_run_printed_it(tmp_path):
    """A requeued job appends to its log (--open-mode=append): node 0 is read from the LAST
    endpoint line, and only when it carries the run Slurm reports (`Restarts`): until the new
    run prints its own, the last line is the old run's, whose node 0 may be another node."""
    from components.ctyun_hcc.service import endpoint_host

    (tmp_path / "logs").mkdir()
    log = tmp_path / "logs" / "job_42.out"
    read = lambda run: endpoint_host(_LocalRunner(), str(tmp_path), "42", run)  # noqa: E731
    assert read(0) is None  # no log yet
    log.write_text("endpoint: http://10.0.0.5:11025/v1 run: 0 served model: Kimi-K3\n"
                   "nodes: kk3n[1-4] (vLLM ranks in order: kk3n1 kk3n2 kk3n3 kk3n4 )\n")
    assert read(0) == "10.0.0.5"
    assert read(1) is None  # requeued: the new run has not printed yet
    with log.open("a") as f:
        f.write("endpoint: http://10.0.0.7:11025/v1 run: 1 served model: Kimi-K3\n")
    assert read(1) == "10.0.0.7" and read(0) is None
    # a job adopted after an upgrade: its srun.sh printed no run count, and truncated its log
    # at each start, so its one line is the current run's
    log.write_text("endpoint: http://10.0.0.9:11025/v1 served model: Kimi-K3\n")
    assert read(0) == read(2) == "10.0.0.9"
    log.write_text("endpoint: http://my-host:11025/v1 run: 0 served model: K3\n")
    assert read(0) is None  # srun.sh prints node 0's IPv4 address, nothing else


def test_the_shrink_records_the_removed_nodes_in_every_replicas_work_dir(tmp_path):
    from components.ctyun_hcc import resize

    for d in (tmp_path / "logs", tmp_path / "replica-1" / "logs"):
        d.mkdir(parents=True)
    (tmp_path / "replica-2").mkdir()  # no logs directory: no service ever wrote there
    resize.record_removed(_LocalRunner(), str(tmp_path) + "/", ["kk3n3", "kk3n2"])
    assert resize.removed_nodes(_LocalRunner(), str(tmp_path)) == {"kk3n2", "kk3n3"}
    assert resize.removed_nodes(_LocalRunner(), str(tmp_path / "replica-1")) == {"kk3n2", "kk3n3"}
    assert not (tmp_path / "replica-2" / "logs").exists()
    assert resize.removed_nodes(_LocalRunner(), str(tmp_path / "nowhere")) == set()


def test_stop_for_shrink_refuses_a_node_name_that_is_not_a_host_name():
    from components.ctyun_hcc import resize

    with pytest.raises(ValueError, match="is not a host name"):
        resize.stop_for_shrink(None, {"serviceJobNames": ["kimi-k3"], "workDir": "/w"},
                               ["kk3n3\nKK3_REMOVED_EOF\nrm -rf /"], 0, 1)


@pytest.mark.parametrize("removed, warned", [("kk3n3\n", False), ("", True), ("kk3n9\n", True)])
def test_the_service_delete_is_quiet_about_a_node_its_own_shrink_removed(
        monkeypatch, caplog, removed, warned):
    """After this stack's shrink removed kk3n3 (recorded on the master), deleting a service
    whose job ran there does not warn that kk3n3 could not be checked; a node that left the
    partition without this stack's shrink, and a node that is down, still are named."""
    import logging

    from components.ctyun_hcc import service

    monkeypatch.setattr(service, "job", lambda runner, jid: JobInfo(jid, "GONE", ()))
    monkeypatch.setattr(service, "cancel", lambda *a: None)
    monkeypatch.setattr(service, "stop_instances", lambda *a: "")
    monkeypatch.setattr(service, "node_states",
                        lambda runner, part: {"kk3n1": "idle", "kk3n2": "down*"})
    monkeypatch.setattr(service, "removed_nodes", lambda runner, wd: set(removed.split()))
    p = {"jobId": "71", "jobName": "kimi-k3", "nodes": ["kk3n1", "kk3n2", "kk3n3"],
         "partition": "batch", "workDir": "/w", "cancelTimeoutS": 1, "pollIntervalS": 1}
    with caplog.at_level(logging.INFO):
        undone = service.SlurmServiceProvider().remove(None, p)
    assert any("kk3n2 (down*)" in u for u in undone)  # genuinely unreachable: named
    assert any("kk3n3 (not in the partition)" in u for u in undone) is warned


def test_nodes_with_fewer_devices_than_the_plan_are_refused_before_submitting(monkeypatch):
    from components.ctyun_hcc import service
    from components.ctyun_hcc.slurm_jobs import JobFailed

    prov = service.SlurmServiceProvider()
    monkeypatch.setattr(service, "gres_counts", lambda runner, part: {"gpu": 8})
    with pytest.raises(JobFailed, match="declare GRES gpu:8, fewer than the 16 devices"):
        prov._gres(None, {"partition": "batch", "devicesPerNode": 16})
    monkeypatch.setattr(service, "gres_counts", lambda runner, part: {"gpu": 16, "npu": 16})
    assert prov._gres(None, {"partition": "batch", "devicesPerNode": 16}) == "npu"
    monkeypatch.setattr(service, "gres_counts", lambda runner, part: {})
    assert prov._gres(None, {"partition": "batch", "devicesPerNode": 16}) == ""  # none: no --gres


# --- password login: sshd's moment after the reload ------------------------------------------

def test_the_check_after_sshd_s_reload_waits_out_its_closed_port(fake_clock):
    """sshd(8) re-executes itself on SIGHUP; the first connects are refused for a moment."""
    from components.ctyun_hcc.bootstrap import HostKeyPinProvider

    calls = []

    def verify():
        calls.append(fake_clock())
        if len(calls) < 4:
            raise ConnectionRefusedError(111, "Connection refused")
        return "ok"

    prov = HostKeyPinProvider()
    assert prov._after_reload(verify, sleep=fake_clock.sleep, clock=fake_clock) == "ok"
    assert len(calls) == 4 and fake_clock() - fake_clock.start == pytest.approx(0.3)


def test_the_wait_after_the_reload_sees_through_the_one_line_of_an_unreachable_master(fake_clock):
    """Steps connect through ssh_resource._reach_master, which turns the refused connect into
    MasterUnreachable: the reload's closed moment is still waited out; a timeout is not."""
    from components.ctyun_hcc.bootstrap import HostKeyPinProvider
    from components.ctyun_hcc.reach import MasterUnreachable

    calls = []

    def verify():
        calls.append(1)
        if len(calls) < 3:
            raise MasterUnreachable("cannot reach", ConnectionRefusedError(111, "refused"))
        return "ok"
    assert HostKeyPinProvider()._after_reload(verify, sleep=fake_clock.sleep,
                                              clock=fake_clock) == "ok"

    def timed_out():
        raise MasterUnreachable("cannot reach", TimeoutError("timed out"))
    before = fake_clock()
    with pytest.raises(MasterUnreachable):
        HostKeyPinProvider()._after_reload(timed_out, sleep=fake_clock.sleep, clock=fake_clock)
    assert fake_clock() == before  # not waited on


def test_a_port_that_stays_closed_after_the_reload_is_an_error(fake_clock):
    from components.ctyun_hcc.bootstrap import HostKeyPinProvider

    def refused():
        raise ConnectionRefusedError(111, "Connection refused")

    with pytest.raises(ConnectionRefusedError):
        HostKeyPinProvider()._after_reload(refused, sleep=fake_clock.sleep, clock=fake_clock)
    assert fake_clock() - fake_clock.start > HostKeyPinProvider.RELOAD_WAIT_S


def test_a_refused_login_after_the_reload_is_not_waited_on(fake_clock):
    """Only the closed port is waited out: a refused key (say, sshd now refuses it) is raised."""
    from components.ctyun_hcc.bootstrap import HostKeyPinProvider
    from components.ctyun_hcc.ssh import SshError

    def denied():
        raise SshError("SSH login as root@h:22 (master) was refused")

    with pytest.raises(SshError, match="refused"):
        HostKeyPinProvider()._after_reload(denied, sleep=fake_clock.sleep, clock=fake_clock)
    assert fake_clock() == fake_clock.start


# --- a destroy with the master unreachable: the steps that hold something ---------------------

def _closed_port() -> int:
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def _unreachable(**extra):
    return {"sshHost": "127.0.0.1", "sshPort": _closed_port(), "sshUser": "root",
            "sshPrivateKey": "", "sshPassword": "x", "connectTimeoutS": 2, **extra}


def _ssh_steps():
    """Every SSH step provider of the target (a new one is covered without a change here)."""
    import importlib
    import pkgutil

    import components.ctyun_hcc as pkg
    from components.ctyun_hcc.ssh_resource import SshStepProvider

    for m in pkgutil.iter_modules(pkg.__path__):
        importlib.import_module(f"components.ctyun_hcc.{m.name}")

    def below(c):
        for s in c.__subclasses__():
            yield s
            yield from below(s)
    return sorted({c for c in below(SshStepProvider)}, key=lambda c: c.__name__)


@pytest.mark.parametrize("cls", _ssh_steps(), ids=lambda c: c.__name__)
def test_every_ssh_step_lets_a_destroy_go_on_with_the_master_unreachable(cls, caplog):
    """Issue 19 item 4: a step that holds nothing on the master deletes without connecting;
    one that holds processes (the TLS front, the router, the metrics services, the job) says
    it could not undo them (naming the step and the address) and the destroy goes on to the
    billed cluster, whose deletion ends them."""
    import logging

    from components.ctyun_hcc.ssh_resource import STATS

    prov = cls()
    props = _unreachable(jobId="12", nodes=["n1"], jobName="kimi-k3", partition="batch",
                         workDir="/home/kimi-k3")
    connects = STATS["connects"]
    with caplog.at_level(logging.WARNING):
        prov.delete("x", props)  # no exception
    if not prov.holds_something():
        assert STATS["connects"] == connects and not caplog.text
        return
    assert "ConnectionRefusedError" in caplog.text and "127.0.0.1" in caplog.text
    step = type(prov).__name__.removesuffix("Provider")
    assert (f"{step}: could not undo it on 127.0.0.1:{props['sshPort']}" in caplog.text
            or "Slurm job 12 not stopped" in caplog.text)


def test_a_remove_that_ran_and_failed_is_still_an_error():
    """The hostile side: the master answered and the command failed: raised, not warned."""
    from components.ctyun_hcc.ssh import CommandFailed
    from components.ctyun_hcc.ssh_resource import SshStepProvider

    class Failing(SshStepProvider):
        def _run(self, fn, p):
            raise CommandFailed("stop router services", 1, "", "permission denied")

        def remove(self, runner, p):  # holds something
            pass

    with pytest.raises(CommandFailed, match="permission denied"):
        Failing().delete("x", _unreachable())


# --- replicas 2 -> 1: the router's front gives the port back before the single replica starts ----

@pytest.mark.parametrize("port, stops", [(11025, True), (11026, False), (1102, False)])
def test_a_single_replica_stops_the_router_front_that_holds_its_port(tmp_path, port, stops):
    """With replicas 2 -> 1 replica 0 moves from 11026 back to 11025, where the router's front
    (deleted by Pulumi only at the end of the update) still listens on the master: the
    replica's create stops this stack's router (the rendered service.sh, loop supervisor)
    when, and only when, its front holds exactly that port."""
    from components.ctyun_hcc.router_service import stop_superseded_router
    from components.router import host

    d = tmp_path / "router"
    (d / "logs").mkdir(parents=True)
    for name, text in host.render(str(d), "kimi-k3", ["http://10.0.0.2:11026"], 11025).items():
        (d / name).write_text(text)
        (d / name).chmod(0o755 if name.endswith(".sh") else 0o644)
    assert stop_superseded_router(_LocalRunner(), str(tmp_path), port) is stops
    assert (d / "router.stop").exists() is stops and (d / "front.stop").exists() is stops
    # no router at all (one replica from the start): nothing to do
    assert stop_superseded_router(_LocalRunner(), str(tmp_path / "none"), 11025) is False


class _OkRunner:
    """A master where every command succeeds silently (the steps around it are monkeypatched)."""

    def run(self, cmd, **kw):
        return type("Res", (), {"stdout": "", "stderr": "", "code": 0})()

    def upload(self, *a, **kw):
        pass


def test_the_service_create_frees_the_port_before_its_preflight_and_submission(monkeypatch):
    from components.ctyun_hcc import service

    order = []
    prov = service.SlurmServiceProvider()
    monkeypatch.setattr(service, "gres_counts", lambda runner, part: {})
    monkeypatch.setattr(service, "jobs_named", lambda *a, **kw: [])
    monkeypatch.setattr(service, "stop_superseded_router",
                        lambda runner, wd, port: order.append(("router", wd, port)) or True)

    def submit(self, runner, p, tag, gres):
        order.append("submit")
        raise RuntimeError("stop here")

    monkeypatch.setattr(service.SlurmServiceProvider, "_submit", submit)
    p = prov.inputs({"sshHost": "h", "workDir": "/home/kimi-k3", "port": 11025,
                     "srunSh": "x", "nodeSh": "x", "checkSh": "x"})
    with pytest.raises(RuntimeError, match="stop here"):
        prov.apply(_OkRunner(), p)
    assert order == [("router", "/home/kimi-k3", 11025), "submit"]


def test_a_replica_stops_the_jobs_of_replicas_no_longer_declared_before_it_submits(monkeypatch):
    """2 x 4 nodes -> 1 x 8: the cluster keeps its size (no shrink step stops anything), and
    replica 1's service is deleted only at the end of the update; replica 0's new 8-node job
    would pend behind replica 1's job until its start-up deadline. Its create stops that job
    first (this stack's owner comment, the `-r1` name); jobs of replicas still declared and
    other stacks' are left. A change of the name list alone changes nothing (steering)."""
    from components.ctyun_hcc import resize, service

    order = []
    listed = [("5", "RUNNING", "kimi-k3-r1", "kk3:kimi-k3/prod:b"),
              ("6", "RUNNING", "kimi-k3-r2", "kk3:kimi-k3/other:c")]
    monkeypatch.setattr(resize, "jobs_of", lambda runner, user=None: listed)
    monkeypatch.setattr(resize, "job", lambda runner, jid: JobInfo(jid, "RUNNING", ("n4",)))
    monkeypatch.setattr(resize, "cancel", lambda runner, jid, d, i: order.append(("cancel", jid)))
    monkeypatch.setattr(service, "gres_counts", lambda runner, part: {})
    monkeypatch.setattr(service, "jobs_named", lambda *a, **kw: [])
    monkeypatch.setattr(service, "stop_superseded_router", lambda *a: False)

    def submit(self, runner, p, tag, gres):
        order.append("submit")
        raise RuntimeError("stop here")

    monkeypatch.setattr(service.SlurmServiceProvider, "_submit", submit)
    prov = service.SlurmServiceProvider()
    p = prov.inputs({"sshHost": "h", "workDir": "/home/kimi-k3", "ownerTag": "kimi-k3/prod",
                     "srunSh": "x", "nodeSh": "x", "checkSh": "x",
                     "serviceJobNames": ["kimi-k3"]})
    with pytest.raises(RuntimeError, match="stop here"):
        prov.apply(_OkRunner(), p)
    assert order == [("cancel", "5"), "submit"]
    order.clear()
    with pytest.raises(RuntimeError, match="stop here"):  # both still declared: nothing stopped
        prov.apply(_OkRunner(), {**p, "serviceJobNames": ["kimi-k3", "kimi-k3-r1"]})
    assert order == ["submit"]
    olds = {**p, "jobId": "9"}
    monkeypatch.setattr(service.SlurmServiceProvider, "live_state", lambda self, props: "RUNNING")
    assert not prov.diff("x", olds, {**p, "serviceJobNames": ["kimi-k3", "kimi-k3-r1"]}).changes


@pytest.mark.parametrize("used", ["copy", "cthpc_model_bcast", "none"])
def test_a_second_up_after_a_broadcast_is_no_change_whatever_method_it_used(used):
    """The broadcast's output `method` (what a run used: `none` when no node needed the files)
    overwrote the input `method` (default `auto`) in the state, so every later `pulumi up` saw a
    changed REDO key and broadcast to every node again, stopping the service. The output is
    `methodUsed` now; a state an earlier release wrote is read the same way."""
    from components.ctyun_hcc.bootstrap import BroadcastProvider

    prov = BroadcastProvider()
    news = {"sshHost": "203.0.113.9", "script": "#!/bin/bash\n", "sourceHost": "kk3n0",
            "nodes": ["kk3n0", "kk3n1"], "contentKey": "weights:1 sif:2", "method": "auto"}
    state = {**news, "holding": ["kk3n0", "kk3n1"], "jobId": "", "methodUsed": used,
             "copied": []}
    d = prov.diff("x", state, news)
    assert not d.changes and not d.replaces
    # a state from before the rename: `method` there is what the run used
    old_state = {k: v for k, v in state.items() if k != "methodUsed"}
    old_state["method"] = used
    assert not prov.diff("x", old_state, news).changes
    assert prov.inputs(old_state)["method"] == "auto"
    # the hostile side: a real change of the method is still one (every node again)
    assert prov.diff("x", state, {**news, "method": "copy"}).changes


def test_a_step_whose_output_is_named_like_a_diffed_input_is_refused():
    """The factory of the SSH steps blanks every output name in the resource's properties, so an
    output named like an input silently dropped that input (the Broadcast's `method`: the
    config's kimi-k3:bcastMethod never reached the step) and overwrote it in the state."""
    from components.ctyun_hcc.bootstrap import BroadcastProvider
    from components.ctyun_hcc.ssh_resource import step_resource

    with pytest.raises(ValueError, match="Broadcast: output\\(s\\) method are also input names"):
        step_resource(BroadcastProvider, "Broadcast", ["jobId", "holding", "method", "copied"])
    step_resource(BroadcastProvider, "Broadcast", ["jobId", "holding", "methodUsed", "copied"])
