"""`RouterService`: vllm-router and kimi-k3's front on the master, outside the Slurm jobs.

Type `pulumi-python:dynamic/ctyun:RouterService`. With `kimi-k3:replicas` > 1 each replica is
its own Slurm job (service.py) serving on the replica port; this step, after all of them passed
their gates, makes the master serve the user's port (components/router/host.py):

- create/update: writes `<workDir>/router/` (the pinned requirements, kk3_front.py, the two
  units and the loop supervisor), installs vllm-router with the master's python3 unless the
  pinned release is there (`install.sh`), (re)starts both services (`service.sh start`: systemd
  units with `Restart=always`, or the restart loop where there is no systemd), then waits until
  the front answers `GET /health` with 200 on the master, i.e. the router saw a healthy replica;
- the replicas' URLs (`workerUrls`: each job's node-0 address and the replica port) are inputs,
  so a replica resubmitted on other nodes rewrites the units and restarts the router;
- delete: `service.sh stop` (units disabled and removed, or the loops stopped); the directory
  stays (it holds the logs).

Outputs: `supervisor` (`systemd` or `loop`), `readySeconds`.
"""

from __future__ import annotations

import time
from typing import Any, Dict, Optional

import pulumi
import pulumi.dynamic
from pulumi.dynamic import CheckFailure

from ..inference.quoting import shell_word
from ..router import host
from ..router.settings import ROUTER_METRICS_PORT, ROUTER_PORT, RouterSettings
from .ssh import SshRunner
from .ssh_resource import SECRET_OUTPUTS, SSH_INPUTS, STATS, SshStepProvider, poll

STEP_INPUTS: Dict[str, Any] = {
    "routerDir": "/home/kimi-k3/router", "jobName": "kimi-k3", "workerUrls": [], "port": 11025,
    "python": "/usr/bin/python3", "startupTimeoutS": 7200, "installTimeoutS": 900,
    "readyTimeoutS": 300, "pollIntervalS": 5, "restartS": host.RESTART_S,
    "routerPort": ROUTER_PORT, "metricsPort": ROUTER_METRICS_PORT,
}
REPLACE_KEYS = ("routerDir", "jobName")


def files_of(p: Dict[str, Any]) -> Dict[str, str]:
    """What the master's router directory holds for these inputs (pure; ValueError on a word
    that is not plain)."""
    settings = RouterSettings(startup_timeout_s=int(p["startupTimeoutS"]),
                              port=int(p["routerPort"]), prometheus_port=int(p["metricsPort"]))
    return dict(host.render(str(p["routerDir"]), str(p["jobName"]), list(p["workerUrls"] or []),
                            int(p["port"]), str(p["python"]), settings, int(p["restartS"])))


class RouterServiceProvider(SshStepProvider):
    PROGRESS_PHASE = "router-start"
    PROGRESS_WAITING = "vllm-router and the front on {sshHost} port {port}"
    STEP_INPUTS = STEP_INPUTS
    REPLACE_KEYS = REPLACE_KEYS

    def resource_id(self, p, outs):
        return f"{p['sshHost']}:{p['routerDir']}:router"

    def check_inputs(self, news):
        """A replica URL or path that is not a plain word is refused before any call."""
        p = self.inputs(news)
        urls = p.get("workerUrls") or []
        # unknown during preview: the whole list (the jobs are not submitted yet) or a URL
        if not isinstance(urls, list) or not urls or not all(isinstance(u, str) for u in urls):
            return []
        try:
            files_of(p)
        except ValueError as e:
            return [CheckFailure("workerUrls", str(e))]
        return []

    def apply(self, runner: SshRunner, p: Dict[str, Any]) -> Dict[str, Any]:
        started = time.monotonic()
        files = files_of(p)
        d = str(p["routerDir"])
        runner.run(f"mkdir -p {shell_word(d + '/logs')}", label="mkdir router dir")
        for name, text in files.items():
            runner.upload(f"{d}/{name}", text, 0o755 if name.endswith(".sh") else 0o644)
        runner.run(shell_word(f"{d}/install.sh"), timeout_s=float(p["installTimeoutS"]),
                   label="install vllm-router")
        out = runner.run(f"{shell_word(d + '/service.sh')} start", label="start router services")
        supervisor = out.stdout.strip().rsplit(" ", 1)[-1] or "unknown"
        self._wait_front(runner, p)
        return {"supervisor": supervisor, "readySeconds": round(time.monotonic() - started, 1)}

    def _wait_front(self, runner: SshRunner, p: Dict[str, Any]) -> None:
        """Until the front answers /health with 200 (the router has a healthy replica)."""
        url = f"http://127.0.0.1:{int(p['port'])}/health"
        probe = (f"{shell_word(str(p['python']))} -c "
                 + shell_word("import sys, urllib.request as u\n"
                              "try:\n"
                              f"    sys.exit(0 if u.urlopen({url!r}, timeout=5).status == 200 else 1)\n"
                              "except Exception:\n"
                              "    sys.exit(1)\n"))

        def healthy():
            return runner.run(probe, check=False, label="front /health").code == 0

        try:
            poll(f"the router's front on port {p['port']}", healthy,
                 time.monotonic() + float(p["readyTimeoutS"]), float(p["pollIntervalS"]))
        except TimeoutError:
            tail = runner.run(f"tail -n 20 {shell_word(str(p['routerDir']) + '/logs/router.log')} "
                              f"{shell_word(str(p['routerDir']) + '/logs/front.log')} 2>/dev/null",
                              check=False, label="router log tail").stdout
            raise TimeoutError(f"the router's front on port {p['port']} did not answer /health "
                               f"within {p['readyTimeoutS']} s; log tail:\n{tail}") from None

    def observe(self, runner: SshRunner, p: Dict[str, Any]) -> Dict[str, Any]:
        d = str(p["routerDir"])
        out = runner.run(f"[ -x {shell_word(d + '/service.sh')} ] && "
                         f"{shell_word(d + '/service.sh')} status || true",
                         check=False, label="router status").stdout
        return {"status": out.strip()}

    def remove(self, runner: SshRunner, p: Dict[str, Any]) -> None:
        d = str(p["routerDir"])
        runner.run(f"if [ -x {shell_word(d + '/service.sh')} ]; then "
                   f"{shell_word(d + '/service.sh')} stop; fi", label="stop router services")


def stop_superseded_router(runner: SshRunner, work_dir: str, port: int) -> bool:
    """Stop this stack's router services on the master when their front listens on `port`,
    the port a single replica's vLLM is about to take (True when it did).

    Why: `kimi-k3:replicas` lowered to 1 moves replica 0 from the replica port back to
    `kimi-k3:port`, where the front still listens: Pulumi deletes the RouterService only at the
    end of the update, after the replica's new job, whose head is the master by default
    (`masterInCompute`), so the job's preflight finds the port taken and every `pulumi up`
    fails the same way. The router is the one in `<work_dir>/router` (replicas.router_dir:
    replica 0's work dir, this stack's), and only a front on exactly this port is stopped;
    its own delete at the end then finds nothing to stop (`service.sh stop` is idempotent)."""
    d = f"{work_dir.rstrip('/')}/router"
    listen = f"--listen 0.0.0.0:{int(port)}"
    res = runner.run(f"if [ -x {shell_word(d + '/service.sh')} ] && "
                     f"grep -qw -- {shell_word(listen)} {shell_word(d + '/front.argv')} "
                     f"2>/dev/null; then {shell_word(d + '/service.sh')} stop >/dev/null && "
                     "echo stopped; fi", label="stop a router the replicas no longer need")
    return res.stdout.strip() == "stopped"


class RouterService(pulumi.dynamic.Resource, module="ctyun", name="RouterService"):
    """The router on the master; see the module docstring. Inputs: SSH_INPUTS + STEP_INPUTS."""

    supervisor: pulumi.Output[str]
    workerUrls: pulumi.Output[list]

    def __init__(self, resource_name: str, inputs: Dict[str, Any],
                 opts: Optional[pulumi.ResourceOptions] = None):
        props = {**{k: None for k in {**SSH_INPUTS, **STEP_INPUTS}}, **inputs,
                 "supervisor": None, "readySeconds": None, "status": None}
        opts = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(
            additional_secret_outputs=SECRET_OUTPUTS))
        super().__init__(RouterServiceProvider(), resource_name, props, opts)


__all__ = ["RouterService", "RouterServiceProvider", "files_of", "STATS"]
