"""Running the health scripts (health_scripts.py) on the master over SSH: the network preflight
before a submission, and the resume watchdog's life (installed with the service, removed with it).

The watchdog runs as a systemd service where the master runs systemd (`/run/systemd/system`
exists: sd_booted(3)), else as one detached process (its own session: `setsid`) whose pid is
kept in the work dir; each `ensure` restarts it, so a changed script is picked up and a dead loop
comes back with the next `pulumi up`. Stopping it waits until it is gone (`systemctl stop` waits
for the unit's processes; the detached loop and its `sleep` are signalled as one process group
and waited for, then killed), so a delete that returns leaves no watchdog that could still
resume a node of a cluster being torn down, and a restart never runs two loops at once.
"""

from __future__ import annotations

import re
from typing import List

from ..dynamic.provider import redacted_logger
from ..inference.quoting import shell_word
from ..systemd import units
from .slurm_jobs import JobFailed
from .ssh import SshRunner

#: how long a stop waits for the detached watchdog to end after SIGTERM before SIGKILL
STOP_WAIT_S = 10

log = redacted_logger("kimi_k3.ctyun.health")

#: what to do when the preflight finds a blocked port
PREFLIGHT_FIX = ("allow all traffic between the cluster's own nodes (a security-group rule whose "
                 "source is the group itself), then run `pulumi up` again")


def unit_name(job_name: str) -> str:
    """The watchdog's systemd unit / process name for the service job `job_name`."""
    return re.sub(r"[^A-Za-z0-9._-]", "-", job_name) + "-watchdog"


def watchdog_unit(script: str) -> str:
    """The watchdog's systemd unit (components/systemd/units.py: `Restart=always`, never given
    up on, started at boot, so it comes back after the master reboots), for an unquoted
    heredoc: `$PATH` and `$SLURM_CONF` are the installing shell's. As root: `scontrol update
    ... State=RESUME` is for root or SlurmUser (scontrol(1), "update": node state changes need
    an operator; https://slurm.schedmd.com/scontrol.html, read 2026-12-02). What it resumes goes
    to the journal (`journalctl -u <unit>`); without systemd to `<workDir>/logs/<unit>.log`."""
    return units.unit(
        "kimi-k3: return Slurm nodes to service after they stop answering or reboot",
        ["/bin/bash", script], user=units.ROOT, restart_s=10,
        environment="PATH=$PATH${SLURM_CONF:+ SLURM_CONF=$SLURM_CONF}",
        rendered_by="components/ctyun_hcc/health.py")


def ensure_watchdog(runner: SshRunner, work_dir: str, job_name: str) -> str:
    """(Re)start the watchdog (`<work_dir>/watchdog.sh`, already uploaded); returns how it runs:
    `systemd <unit>` or `process <pid>`."""
    unit = unit_name(job_name)
    script = shell_word(f"{work_dir}/watchdog.sh")
    pidfile = shell_word(f"{work_dir}/logs/{unit}.pid")
    logfile = shell_word(f"{work_dir}/logs/{unit}.log")
    unit_file = shell_word(f"/etc/systemd/system/{unit}.service")
    res = runner.run(
        f"mkdir -p {shell_word(work_dir + '/logs')}\n"
        "if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then\n"
        # unquoted: the master's PATH and SLURM_CONF (where Slurm's tools are) go into the unit
        f"  cat > {unit_file}.kk3tmp <<UNIT\n{watchdog_unit(script)}UNIT\n"
        f"  mv -f {unit_file}.kk3tmp {unit_file}\n"
        f"  systemctl daemon-reload && systemctl enable {shell_word(unit)} >/dev/null 2>&1 "
        f"&& systemctl restart {shell_word(unit)}\n"
        f"  echo \"systemd {unit}\"\n"
        "else\n"
        f"  {_stop_own(script, pidfile)}\n"
        f"  setsid nohup bash {script} >> {logfile} 2>&1 < /dev/null &\n"
        f"  echo $! > {pidfile}\n"
        "  echo \"process $!\"\n"
        "fi", label="start the resume watchdog")
    how = res.stdout.strip().splitlines()[-1] if res.stdout.strip() else "unknown"
    log.info("resume watchdog on %s: %s", runner.target.host, how)
    return how


def stop_watchdog(runner: SshRunner, work_dir: str, job_name: str) -> None:
    """Stop and remove the watchdog ensure_watchdog started (nothing to do is success)."""
    unit = unit_name(job_name)
    script = shell_word(f"{work_dir}/watchdog.sh")
    pidfile = shell_word(f"{work_dir}/logs/{unit}.pid")
    unit_file = shell_word(f"/etc/systemd/system/{unit}.service")
    runner.run(
        f"if [ -f {unit_file} ] && command -v systemctl >/dev/null 2>&1; then\n"
        f"  systemctl disable --now {shell_word(unit)} >/dev/null 2>&1 || true\n"
        f"  rm -f {unit_file}; systemctl daemon-reload || true\n"
        "fi\n"
        f"{_stop_own(script, pidfile)}\n"
        f"rm -f {pidfile}", label="stop the resume watchdog")


def _stop_own(script: str, pidfile: str, wait_s: int = STOP_WAIT_S) -> str:
    """Shell: stop the process in `pidfile` only if it still runs `script` (a pid is reused):
    SIGTERM to its process group (the loop and the `sleep` it waits on), wait until it no longer
    runs the script (a zombie's cmdline is empty), SIGKILL after `wait_s`; fails if it survives."""
    runs = (f"tr '\\0' ' ' < \"/proc/$pid/cmdline\" 2>/dev/null | grep -qF -- {script}")
    ticks = int(wait_s) * 5
    return (f"pid=$(cat {pidfile} 2>/dev/null || true); "
            f"if [ -n \"$pid\" ] && {runs}; then "
            f"kill -TERM -- \"-$pid\" 2>/dev/null || kill -TERM \"$pid\" 2>/dev/null || true; "
            f"i=0; while {runs} && [ $i -lt {ticks} ]; do sleep 0.2; i=$((i+1)); done; "
            f"if {runs}; then kill -KILL -- \"-$pid\" 2>/dev/null || kill -KILL \"$pid\" "
            f"2>/dev/null || true; sleep 0.5; fi; "
            f"if {runs}; then echo \"watchdog $pid did not end\" >&2; exit 1; fi; fi")


def net_preflight(runner: SshRunner, work_dir: str, head: str, nodes: int, rpc_port: int,
                  model_port: int, wait_s: int = 30) -> List[str]:
    """Run `preflight.sh --run` (uploaded to `work_dir`) over `nodes` nodes; returns the SKIP
    lines (said as warnings), raises JobFailed naming every blocked node and port."""
    res = runner.run(
        f"KK3_PREFLIGHT_WAIT_S={int(wait_s)} bash {shell_word(work_dir + '/preflight.sh')} --run "
        f"{shell_word(head or '-')} {int(nodes)} {int(rpc_port)} {int(model_port)}",
        check=False, timeout_s=wait_s * 6 + 180, label="network preflight")
    lines = (res.stdout + "\n" + res.stderr).splitlines()
    skipped = [ln[len("SKIP "):] for ln in lines if ln.startswith("SKIP ")]
    for line in skipped:
        log.warning("network preflight: %s", line)
    if res.code != 0:
        failed = [ln[len("FAIL "):] for ln in lines if ln.startswith("FAIL ")]
        detail = "; ".join(failed) or "\n".join(lines[-15:]).strip()
        raise JobFailed(f"network preflight failed before submitting the service: {detail}. "
                        f"Fix: {PREFLIGHT_FIX}")
    return skipped
