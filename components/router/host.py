"""The router as a service on a plain host (the CTyun master), outside any Slurm job (pure).

What the master runs when `kimi-k3:replicas` > 1 (docs/router.md, "On ctyun-hcc"):

    client --> front :PORT (0.0.0.0) --> vllm-router 127.0.0.1:30000 --> replica heads :REPLICA_PORT

(the router's port and its metrics port, 29000, are settings.py's, on loopback)

Two services, each restarted whenever it exits:
- with systemd (`/run/systemd/system` exists: systemd's own test, sd_booted(3)): one unit each,
  `Restart=always` (systemd.service(5): restarted "regardless of whether it exited cleanly or
  not, got terminated abnormally by a signal, or hit a timeout"), `RestartSec`;
- without systemd: `supervise.sh`, a loop started detached (`setsid nohup`) that runs the
  command again `RESTART_S` after it exits, until `service.sh stop` leaves its stop file.

Neither service runs as root (the front is what the internet reaches; the router has no
authentication of its own): under systemd each unit (components/systemd/units.py, the one
renderer, shared with the metrics services) gets `DynamicUser=yes` (systemd.exec(5),
https://www.freedesktop.org/software/systemd/man/latest/systemd.exec.html#DynamicUser=: "a
UNIX user and group pair is allocated dynamically when the unit is started", and it implies
`ProtectSystem=strict`, `ProtectHome=read-only`, `NoNewPrivileges=yes`; both only read their
directory and log to the journal), the front `AmbientCapabilities=CAP_NET_BIND_SERVICE` when its
port is below 1024; under the loop the command runs through `setpriv --reuid=65534
--regid=65534 --clear-groups` (util-linux setpriv(1),
https://man7.org/linux/man-pages/man1/setpriv.1.html; 65534 is `nobody`/`nogroup` on Debian,
Ubuntu, openEuler and RHEL 8+, and the kernel's default overflow uid), except the front on a
port below 1024 (a non-root process cannot bind it) and where setpriv is missing (said in the
service's log). `<service>.user` holds the uid the loop uses.

vllm-router and what it pulls in are installed by `install.sh` with the master's python3 into
`<dir>/site` (`pip install --no-deps --target --require-hashes --only-binary :all:`, as the
aws-eks init container does: every wheel checked against its sha256 from wheels.json, nothing
built from source). Which pinned closure depends on that python3's version, asked of it first:
3.11 or later installs settings.ROUTER_REQUIREMENTS (the versions the tests ran, as the aws-eks
pod does), 3.8-3.10 settings.ROUTER_REQUIREMENTS_LEGACY (the CTyun master's OS python3 is often
older: openEuler 22.03 ships 3.9; the newest fastapi/starlette/multidict need 3.11, vllm-router
itself 3.8); below 3.8 it stops with one line naming the version found and the fix. A python3
that already imports the pinned release and its compiled core (pydantic_core, orjson: a `site`
built for another Python does not import) there is left alone. The router exits when no replica answers /health within
its start-up timeout (settings.py): the supervisor starts it again.

Everything here is rendered from plain words (paths under the data roots, http URLs of cluster
addresses, names): `plain()` refuses anything else, so no unit line or shell word can carry
a quote, a newline or a `$`.
"""

from __future__ import annotations

import re
from typing import Dict, List, Mapping, Sequence

from ..inference.quoting import shell_word
from ..systemd import units
from .k8s import FRONT_FILE, front_source
from .settings import ROUTER_CLOSURES, ROUTER_VERSION, RouterSettings, front_argv
from .wheels import CLOSURES, PIP_HASH_OPTIONS, hashes, requirements_txt, requires_python

REQUIREMENTS_FILE = "requirements.txt"
#: {closure: the requirements file install.sh hands pip for it} (wheels.CLOSURES)
REQUIREMENTS_FILES = {"current": REQUIREMENTS_FILE, "legacy": "requirements-py38-py310.txt"}
#: the uid and gid the loop runs the services as (see the module docstring)
UNPRIVILEGED_UID = 65534
#: ports below this need root or CAP_NET_BIND_SERVICE (ip(7): "privileged ports")
PRIVILEGED_PORTS_BELOW = 1024
#: seconds between a service's exit and its restart (both supervisors)
RESTART_S = units.RESTART_S
#: one word a unit line and a shell word may carry: letters, digits and `._:/=,+@-`
_PLAIN = re.compile(r"^[A-Za-z0-9._:/=,+@-]+$")
_URL = re.compile(r"^http://[A-Za-z0-9.-]+:[0-9]{1,5}$")
SERVICES = ("router", "front")
#: where the front's API key lives on the master: a root-only directory (0700) off the work
#: directory (on the cluster's shared file system, where root on any node could read it; like
#: the TLS key), beside the other kimi-k3 services' /etc/kimi-k3/<name> (that parent stays 0755)
KEY_PARENT = "/etc/kimi-k3"
KEY_DIR = f"{KEY_PARENT}/router"


def key_file(job_name: str) -> str:
    """The front's key file (`VLLM_API_KEY=<key>`, one line; the key's grammar, RFC 6750's
    b64token, has no quote, space or `$`, so systemd and `.` read it as written)."""
    return f"{KEY_DIR}/{unit_name(job_name, 'front')}.env"


def plain(word: str, what: str) -> str:
    """`word` when it is one plain word (what a unit's ExecStart and a shell take literally)."""
    if not isinstance(word, str) or not _PLAIN.match(word) or ".." in word.split("/"):
        raise ValueError(f"{what} {word!r} is not a plain word")
    return word


def worker_url(addr: str, port: int) -> str:
    """A replica head's base URL from its cluster address (what the Slurm job reports)."""
    url = f"http://{addr}:{int(port)}"
    if not _URL.match(url) or not 1 <= int(port) <= 65535:
        raise ValueError(f"replica address {addr!r} is not a host name or IPv4 address")
    return url


def unit_name(job_name: str, service: str) -> str:
    """`<job name>-router` / `<job name>-front`: one pair per stack on a master."""
    return plain(f"{job_name}-{service}", "unit name")


def commands(directory: str, worker_urls: Sequence[str], port: int, python: str = "/usr/bin/python3",
             settings: RouterSettings = RouterSettings(),
             api_key: bool = False) -> Dict[str, List[str]]:
    """{service: argv}: the router (static worker URLs, loopback) and the front on `port`
    (checking the API key itself with `api_key`: kk3_front.py `--api-key-env`)."""
    if not worker_urls:
        raise ValueError("the router needs at least one replica URL")
    for url in worker_urls:
        if not _URL.match(url):
            raise ValueError(f"replica URL {url!r} is not http://HOST:PORT")
    # loopback only: the router's admin routes have no authentication (docs/router.md)
    s = RouterSettings(**{**settings.__dict__, "host": "127.0.0.1",
                          "prometheus_host": "127.0.0.1"})
    if int(port) in (s.port, s.prometheus_port):
        raise ValueError(f"the front's port {port} is also the router's ({s.port}, metrics "
                         f"{s.prometheus_port})")
    router = [python, "-m", "vllm_router.launch_router", *s.argv(list(worker_urls))[1:]]
    front = front_argv(f"0.0.0.0:{int(port)}", f"http://127.0.0.1:{s.port}", python,
                       f"{directory}/{FRONT_FILE}", api_key)
    out = {"router": router, "front": front}
    for name, argv in out.items():
        for word in argv:
            plain(word, f"{name} argument")
    return out


def unit(description: str, directory: str, argv: Sequence[str], restart_s: int = RESTART_S,
         bind_low_port: bool = False, environment_file: str = "") -> str:
    """A systemd unit that runs `argv` for ever as a dynamic unprivileged user, allowed to bind
    a port below 1024 with `bind_low_port` (the one renderer: components/systemd/units.py)."""
    return units.unit(description, argv, user=units.DYNAMIC, restart_s=restart_s,
                      environment=f"PYTHONPATH={directory}/site PYTHONUNBUFFERED=1",
                      working_directory=directory, bind_low_port=bind_low_port,
                      rendered_by="components/router/host.py",
                      environment_file=environment_file)


def install_sh(directory: str, python: str = "/usr/bin/python3") -> str:
    """Install the pinned router packages into `<dir>/site` unless they are there already: the
    closure for the version `python` reports (wheels.closure_for's choice, in shell)."""
    d, py = shell_word(directory), shell_word(python)
    hashed = " ".join(PIP_HASH_OPTIONS)
    ordered = sorted(CLOSURES, key=requires_python, reverse=True)
    pick = []
    for i, closure in enumerate(ordered):
        major, minor = requires_python(closure)
        pick.append(f"{'if' if i == 0 else 'elif'} [ \"$major\" -gt {major} ] || "
                    f"{{ [ \"$major\" -eq {major} ] && [ \"$minor\" -ge {minor} ]; }}; then\n"
                    f"  req={shell_word(REQUIREMENTS_FILES[closure])}")
    floor = "%d.%d" % requires_python(ordered[-1])
    # one line, in double quotes: only $py, $found and $(hostname -s) expand (no other `$`,
    # backquote, quote or backslash in the fixed words)
    fix = (f"install Python {floor} or later on the master as $py or elsewhere and name it "
           f"with kimi-k3:routerPython (openEuler 22.03 LTS's python3 is 3.9)")
    return f"""#!/bin/bash
# Rendered by kimi-k3 (components/router/host.py); do not edit by hand.
# vllm-router {ROUTER_VERSION} and its pinned dependencies, into {directory}/site
set -euo pipefail
cd {d}
py={py}
have=$(PYTHONPATH={d}/site {py} -c 'import importlib.metadata as m, pydantic_core, orjson; print(m.version("vllm-router"))' 2>/dev/null || true)
if [ "$have" = {shell_word(ROUTER_VERSION)} ]; then
  echo "vllm-router $have already installed"
  exit 0
fi
found=$({py} -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null || true)
if ! [[ "$found" =~ ^[0-9]+\.[0-9]+$ ]]; then
  echo "the router needs Python {floor} or later on $(hostname -s): $py does not run ($($py --version 2>&1 | head -n 1 || true)); {fix}" >&2
  exit 1
fi
major=${{found%%.*}}
minor=${{found#*.}}
{chr(10).join(pick)}
else
  echo "the router needs Python {floor} or later on $(hostname -s): $py is Python $found; {fix}" >&2
  exit 1
fi
echo "python3 $found: installing $req"
rm -rf site.new
{py} -m pip install --no-cache-dir --no-deps --disable-pip-version-check {hashed} --target site.new -r "$req"
rm -rf site
mv site.new site
echo "installed vllm-router {ROUTER_VERSION}"
"""


def supervise_sh() -> str:
    """`supervise.sh NAME DIR -- ARGV...`: the one restart loop (components/systemd/units.py),
    its output in DIR/logs/NAME.log."""
    return units.supervise_sh()


def service_sh(directory: str, job_name: str, restart_s: int = RESTART_S,
               front_env: str = "") -> str:
    """`service.sh start|refresh|stop|status`: the two services under systemd, or under supervise.sh.

    start replaces whatever ran before (a new port, new settings), so it is safe to repeat;
    refresh brings the units up to date without restarting anything (a new replica set, told
    to the running router through its admin API: router_service.py)."""
    d = shell_word(directory)
    names = " ".join(shell_word(unit_name(job_name, s)) for s in SERVICES)
    return f"""#!/bin/bash
# Rendered by kimi-k3 (components/router/host.py); do not edit by hand.
set -euo pipefail
dir={d}
front_env={shell_word(front_env) if front_env else "''"}
units=({names})
services=(router front)
mkdir -p "$dir/logs"
with_systemd() {{ [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; }}

# the router's and the front's unit files into systemd (start, and refresh after a new replica set)
install_units() {{
  for i in 0 1; do
    install -m 0644 "$dir/${{units[$i]}}.service" "/etc/systemd/system/${{units[$i]}}.service"
  done
  systemctl daemon-reload
}}

loop_stop() {{
  local s=$1 pid
  : >"$dir/$s.stop"
  for f in "$dir/$s.loop" "$dir/$s.child"; do
    pid=$(cat "$f" 2>/dev/null || true)
    [ -n "$pid" ] && kill "$pid" 2>/dev/null || true
  done
  for _ in $(seq 1 50); do
    pid=$(cat "$dir/$s.child" 2>/dev/null || true)
    {{ [ -z "$pid" ] || ! kill -0 "$pid" 2>/dev/null; }} && break
    sleep 0.1
  done
  rm -f "$dir/$s.loop" "$dir/$s.child"
}}

case "${{1:-}}" in
  start)
    if with_systemd; then
      install_units
      for u in "${{units[@]}}"; do systemctl enable "$u" >/dev/null 2>&1; systemctl restart "$u"; done
      echo "supervisor systemd"
    else
      for i in 0 1; do
        s=${{services[$i]}}
        loop_stop "$s"
        rm -f "$dir/$s.stop"
        # the loop reads $s.argv at every (re)start: a restart after `refresh` runs the
        # replica set the update wrote
        (
          # the front's key from its root-only file into the loop's environment, never argv
          if [ "$s" = front ] && [ -n "$front_env" ]; then set -a; . "$front_env"; set +a; fi
          PYTHONPATH="$dir/site" PYTHONUNBUFFERED=1 KK3_RESTART_S={int(restart_s)} \\
            KK3_ARGV_FILE="$dir/$s.argv" exec setsid nohup "$dir/supervise.sh" "$s" "$dir" -- \\
            $(cat "$dir/$s.argv") </dev/null >/dev/null 2>&1
        ) &
        echo $! >"$dir/$s.loop"
      done
      echo "supervisor loop"
    fi ;;
  refresh)
    # the replica set changed and nothing else (router_service.py): the running services keep
    # running; what a restart runs is brought up to date (the units; the loop reads $s.argv)
    if with_systemd; then
      install_units
      echo "supervisor systemd"
    else
      echo "supervisor loop"
    fi ;;
  stop)
    if with_systemd; then
      for u in "${{units[@]}}"; do
        systemctl disable --now "$u" >/dev/null 2>&1 || true
        rm -f "/etc/systemd/system/$u.service"
      done
      systemctl daemon-reload
    fi
    for s in "${{services[@]}}"; do loop_stop "$s"; done
    echo "stopped" ;;
  status)
    for i in 0 1; do
      s=${{services[$i]}}
      if with_systemd; then
        echo "$s $(systemctl is-active "${{units[$i]}}" 2>/dev/null || true)"
      else
        pid=$(cat "$dir/$s.child" 2>/dev/null || true)
        if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then echo "$s active $pid"; else echo "$s inactive"; fi
      fi
    done ;;
  *)
    echo "usage: service.sh start|refresh|stop|status" >&2
    exit 2 ;;
esac
"""


def render(directory: str, job_name: str, worker_urls: Sequence[str], port: int,
           python: str = "/usr/bin/python3", settings: RouterSettings = RouterSettings(),
           restart_s: int = RESTART_S, api_key: bool = False) -> Mapping[str, str]:
    """{file name: text} of everything the master's `directory` holds for the router. With
    `api_key` the front checks the key, read from `key_file(job_name)` (written apart,
    root-only, by the RouterService step: never in these files)."""
    plain(directory, "router directory")
    if not directory.startswith("/"):
        raise ValueError(f"router directory {directory!r} is not absolute")
    plain(python, "python")
    argv = commands(directory, worker_urls, port, python, settings, api_key)
    env_file = {"router": "", "front": key_file(job_name) if api_key else ""}
    files = {**{REQUIREMENTS_FILES[c]: requirements_txt(ROUTER_CLOSURES[c], hashes(c))
                for c in CLOSURES},
             FRONT_FILE: front_source(), "install.sh": install_sh(directory, python),
             "supervise.sh": supervise_sh(),
             "service.sh": service_sh(directory, job_name, restart_s, env_file["front"])}
    what = {"router": f"vllm-router {ROUTER_VERSION} in front of the Kimi K3 replicas (kimi-k3)",
            "front": "kimi-k3's allowlisting front of vllm-router"}
    low = {"router": False, "front": int(port) < PRIVILEGED_PORTS_BELOW}
    for s in SERVICES:
        files[f"{unit_name(job_name, s)}.service"] = unit(what[s], directory, argv[s], restart_s,
                                                          bind_low_port=low[s],
                                                          environment_file=env_file[s])
        files[f"{s}.argv"] = " ".join(argv[s]) + "\n"
        files[f"{s}.user"] = ("root" if low[s] else str(UNPRIVILEGED_UID)) + "\n"
    return files
