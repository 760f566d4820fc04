"""`RouterService`: vllm-router and kimi-k3's front on the master, outside the Slurm jobs.

Type `pulumi-python:dynamic/ctyun:RouterService`. With `kimi-k3:replicas` > 1 each replica is
its own Slurm job (service.py) serving on the replica port; this step, after all of them passed
their gates, makes the master serve the user's port (components/router/host.py):

- create/update: writes `<workDir>/router/` (the pinned requirements, kk3_front.py, the two
  units and the loop supervisor), installs vllm-router with the master's python3 unless the
  pinned release is there (`install.sh`), (re)starts both services (`service.sh start`: systemd
  units with `Restart=always`, or the restart loop where there is no systemd), then waits until
  the front answers `GET /health` with 200 on the master, i.e. the router saw a healthy replica;
- the replicas' URLs (`workerUrls`: each job's node-0 address and the replica port) are inputs.
  An update that changes them and nothing else (a replica added or removed by a second
  `pulumi up`, a replica resubmitted on other nodes) does not restart anything while both
  services run: the new files are written (`service.sh refresh`: the units reloaded, and the
  loop reads `router.argv` at every restart), the running router is told through its admin API
  on the master's loopback (`POST /add_worker?url=`, `POST /remove_worker?url=`, vllm-router
  0.1.17, the routes test_router_front.py shows open on the bare router), and its worker list
  (`GET /list_workers`) is checked against the new set: clients keep being served by the
  replicas that stay. When a service is down, or the list does not match, the update restarts
  both as create does;
- delete: `service.sh stop` (units disabled and removed, or the loops stopped); the directory
  stays (it holds the logs).

Outputs: `supervisor` (`systemd` or `loop`), `readySeconds`, `workersUpdate` (`live` when the
last update told the running router, `restart` when it restarted the services).
"""

from __future__ import annotations

import json
import time
from typing import Any, Dict, List, Optional, Sequence

import pulumi
import pulumi.dynamic
from pulumi.dynamic import CheckFailure, UpdateResult

from ..dynamic.provider import redacted_logger
from ..config import api_key
from ..inference.quoting import shell_word
from ..router import host
from ..router.settings import FRONT_KEY_ENV, ROUTER_METRICS_PORT, ROUTER_PORT, RouterSettings
from ..progress.record import current_phase
from .ssh import SshRunner
from .ssh_resource import SECRET_OUTPUTS, SSH_INPUTS, STATS, SshStepProvider, poll

log = redacted_logger("kimi_k3.ctyun.router")

STEP_INPUTS: Dict[str, Any] = {
    "routerDir": "/home/kimi-k3/router", "jobName": "kimi-k3", "workerUrls": [], "port": 11025,
    "python": "/usr/bin/python3", "startupTimeoutS": 7200, "installTimeoutS": 900,
    "readyTimeoutS": 300, "pollIntervalS": 5, "restartS": host.RESTART_S,
    "routerPort": ROUTER_PORT, "metricsPort": ROUTER_METRICS_PORT,
    # the front checks it before reading a body (kk3_front.py); a new key restarts the front
    "apiKey": None,
}
REPLACE_KEYS = ("routerDir", "jobName")
#: the input an update may change without restarting the services (told to the running router)
LIVE_KEYS = ("workerUrls",)
#: the apply input carrying the replica set the running router was started or last told
LIVE_FROM = "liveFromWorkerUrls"


def admin_script(router_port: int, add: Sequence[str], remove: Sequence[str]) -> str:
    """Python for the master's python3: tell the router on loopback to add and remove workers,
    then print its worker list as JSON (`{"urls": [...]}`). The URLs are host.worker_url's
    plain `http://HOST:PORT` words (files_of checked them); each is passed as a literal."""
    base = f"http://127.0.0.1:{int(router_port)}"
    return ("import json, sys, urllib.parse as p, urllib.request as u\n"
            f"base = {base!r}\n"
            f"for op, url in {[('add_worker', a) for a in add] + [('remove_worker', r) for r in remove]!r}:\n"
            "    u.urlopen(u.Request(base + '/' + op + '?url=' + p.quote(url, safe=':/'), data=b'',"
            " method='POST'), timeout=60).read()\n"
            "sys.stdout.write(u.urlopen(base + '/list_workers', timeout=10).read().decode())\n")


def files_of(p: Dict[str, Any]) -> Dict[str, str]:
    """What the master's router directory holds for these inputs (pure; ValueError on a word
    that is not plain)."""
    settings = RouterSettings(startup_timeout_s=int(p["startupTimeoutS"]),
                              port=int(p["routerPort"]), prometheus_port=int(p["metricsPort"]))
    return dict(host.render(str(p["routerDir"]), str(p["jobName"]), list(p["workerUrls"] or []),
                            int(p["port"]), str(p["python"]), settings, int(p["restartS"]),
                            api_key=bool(p.get("apiKey"))))


class RouterServiceProvider(SshStepProvider):
    PROGRESS_PHASE = "router-start"
    PROGRESS_WAITING = "vllm-router and the front on {sshHost} port {port}"
    SECRET_INPUTS = ("apiKey",)
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

    def update(self, id_, olds, news):
        """A new replica set alone is told to the running router (`apply` with LIVE_FROM);
        anything else as every step (the base's)."""
        o, n = self.inputs(olds), self.inputs(news)
        changed = {k for k in self.STEP_INPUTS if o.get(k) != n.get(k)}
        if changed and changed <= set(LIVE_KEYS) and o.get("workerUrls"):
            outs = self._apply({**n, LIVE_FROM: list(o["workerUrls"])})
            return UpdateResult({**n, **outs})
        return super().update(id_, olds, news)

    def apply(self, runner: SshRunner, p: Dict[str, Any]) -> Dict[str, Any]:
        started = time.monotonic()
        files = files_of(p)
        d = str(p["routerDir"])
        runner.run(f"mkdir -p {shell_word(d + '/logs')}", label="mkdir router dir")
        for name, text in files.items():
            runner.upload(f"{d}/{name}", text, 0o755 if name.endswith(".sh") else 0o644)
        runner.run(shell_word(f"{d}/install.sh"), timeout_s=float(p["installTimeoutS"]),
                   label="install vllm-router")
        key_file = host.key_file(str(p["jobName"]))
        if p.get("apiKey"):  # root-only, off the shared work dir; the key travels on stdin
            # the service script sources this file as root: only a key of the bearer grammar
            # (no quote, space, `$`, backquote or line break) is written, whatever called us
            why = api_key.problem(str(p["apiKey"]), public=False)
            if why:
                raise ValueError(f"{api_key.KEY}={api_key.NOT_SHOWN} {why}; the front's key file "
                                 "is not written")
            runner.run(f"mkdir -p -m 0755 {shell_word(host.KEY_PARENT)}", label="/etc/kimi-k3")
            runner.write_secret(key_file, f"{FRONT_KEY_ENV}={p['apiKey']}\n")
        else:
            runner.run(f"rm -f {shell_word(key_file)}", label="remove the front's key file")
        how, supervisor = "restart", None
        if p.get(LIVE_FROM):
            supervisor = self._tell_router(runner, p, list(p[LIVE_FROM]))
            how = "live" if supervisor else how
        if not supervisor:
            out = runner.run(f"{shell_word(d + '/service.sh')} start", label="start router services")
            supervisor = out.stdout.strip().rsplit(" ", 1)[-1] or "unknown"
        self._wait_front(runner, p)
        return {"supervisor": supervisor, "readySeconds": round(time.monotonic() - started, 1),
                "workersUpdate": how}

    def _tell_router(self, runner: SshRunner, p: Dict[str, Any], old: List[str]) -> Optional[str]:
        """Give the running router the new replica set without restarting it or the front: the
        supervisor's name, or None when that cannot be done (a service is not running, the
        router refused, its list does not match) and the caller restarts both."""
        d, new = str(p["routerDir"]), [str(u) for u in p["workerUrls"]]
        status = runner.run(f"{shell_word(d + '/service.sh')} status", check=False,
                            label="router status").stdout
        if not all(f"{s} active" in status for s in host.SERVICES):
            log.warning("the router's services are not both running (%s): restarting them with "
                        "the new replica set", " / ".join(status.strip().splitlines()) or "no status")
            return None
        out = runner.run(f"{shell_word(d + '/service.sh')} refresh", label="refresh router units")
        supervisor = out.stdout.strip().rsplit(" ", 1)[-1] or "unknown"
        script = admin_script(int(p["routerPort"]), [u for u in new if u not in old],
                              [u for u in old if u not in new])
        res = runner.run(f"{shell_word(str(p['python']))} -c {shell_word(script)}", check=False,
                         timeout_s=180, label="tell the router the replica set")
        try:
            listed = json.loads(res.stdout).get("urls") if res.code == 0 else None
        except (ValueError, AttributeError):
            listed = None
        if not isinstance(listed, list) or sorted(listed) != sorted(new):
            log.warning("the running router did not take the new replica set (exit %s, its list "
                        "%s): restarting it and the front", res.code, listed)
            return None
        current_phase().update(f"router told: {len(new)} replica(s), nothing restarted")
        return supervisor

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
                   f"{shell_word(d + '/service.sh')} stop; fi; "
                   f"rm -f {shell_word(host.key_file(str(p['jobName'])))}",
                   label="stop router services")


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
                 "supervisor": None, "readySeconds": None, "status": None, "workersUpdate": None}
        opts = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(
            additional_secret_outputs=SECRET_OUTPUTS + ["apiKey"]))
        super().__init__(RouterServiceProvider(), resource_name, props, opts)


__all__ = ["RouterService", "RouterServiceProvider", "files_of", "STATS"]
