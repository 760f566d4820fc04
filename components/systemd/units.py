"""One systemd unit renderer and one privilege drop for every service kimi-k3 keeps running on a
host (pure).

Why one: the router and its front (components/router/host.py) and the metrics services
(components/ctyun_hcc/monitoring.py) are all "a command restarted whenever it exits, started
at boot, not as root where it need not be". Two renderers had drifted (one ran everything as
root); this is the one both use.

A unit (`unit`): `Restart=always` ("regardless of whether it exited cleanly or not, got
terminated abnormally by a signal, or hit a timeout", systemd.service(5),
https://www.freedesktop.org/software/systemd/man/latest/systemd.service.html),
`StartLimitIntervalSec=0` (by default systemd stops restarting a unit that failed 5 times in
10 s: systemd.unit(5) StartLimitBurst=), `WantedBy=multi-user.target`, and who it runs as:
- `DYNAMIC`: `DynamicUser=yes` (systemd.exec(5),
  https://www.freedesktop.org/software/systemd/man/latest/systemd.exec.html#DynamicUser=: "a
  UNIX user and group pair is allocated dynamically when the unit is started"; it implies
  `ProtectSystem=strict`, `ProtectHome=read-only`, `NoNewPrivileges=yes`): for a service that
  only reads its directory and logs to the journal;
- a user name: `User=`/`Group=` that user, with `NoNewPrivileges=yes`, `ProtectSystem=full`
  and `PrivateTmp=yes`: for a service that owns files (a data directory, a key file readable
  by it alone), which a dynamic user's changing uid cannot;
- `ROOT`: root with the same three hardening settings, only where root is proven needed (the
  caller says why).
With `bind_low_port` the service may bind a port below 1024
(`AmbientCapabilities=CAP_NET_BIND_SERVICE`, capabilities(7)).

Where systemd is not the init (a container; the test nodes), `supervise_sh` is the one
restart loop: it runs the command as the user through util-linux setpriv(1)
(https://man7.org/linux/man-pages/man1/setpriv.1.html: `--reuid`/`--regid` take a uid or a
name, `--clear-groups` drops root's supplementary groups).

Every value here reaches a unit line: the callers hold them to their grammars first; `unit`
refuses a user name that is not one and a line break anywhere.
"""

from __future__ import annotations

import re
from typing import Sequence

#: run as a user systemd allocates when the unit starts (see the module docstring)
DYNAMIC = "dynamic"
ROOT = "root"
#: seconds between a service's exit and its restart (the default of every caller)
RESTART_S = 2
#: a user name (useradd(8)'s default: lowercase, digits, `_`, `-`, at most 32; upper case too,
#: as in the MindX DL guide's `hwMindX`) or a numeric uid
_USER = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,31}|[0-9]{1,10}")


def check_user(user: str) -> str:
    """`user` when it is a user name or uid a unit line and a shell word take literally."""
    if not isinstance(user, str) or not _USER.fullmatch(user):
        raise ValueError(f"user {user!r} is not a user name")
    return user


def unit(description: str, exec_start: Sequence[str], *, user: str = DYNAMIC,
         restart_s: int = RESTART_S, environment: str = "", working_directory: str = "",
         bind_low_port: bool = False, rendered_by: str = "", environment_file: str = "") -> str:
    """The unit text (see the module docstring). `exec_start`: the command, words already
    held to the caller's grammar; `environment`: one `Environment=` line's value;
    `environment_file`: a root-only file of secrets systemd itself reads before the service
    starts (`EnvironmentFile=`, systemd.exec(5); without the `-` prefix, so a missing file
    fails the start instead of running without them);
    `rendered_by`: the module named in a first comment line."""
    if isinstance(restart_s, bool) or not isinstance(restart_s, int) or not 0 <= restart_s <= 300:
        raise ValueError(f"restart delay {restart_s!r} is not 0..300 seconds")
    for what, text in (("description", description), ("environment", environment),
                       ("working directory", working_directory),
                       ("environment file", environment_file),
                       ("command", " ".join(exec_start))):
        if "\n" in text or "\r" in text:
            raise ValueError(f"a unit's {what} {text!r} holds a line break")
    if user == DYNAMIC:
        identity = "DynamicUser=yes\n"
    else:
        identity = ("" if user == ROOT else f"User={check_user(user)}\nGroup={user}\n") + \
            "NoNewPrivileges=yes\nProtectSystem=full\nPrivateTmp=yes\n"
    return (
        (f"# Rendered by kimi-k3 ({rendered_by}); do not edit by hand.\n" if rendered_by else "")
        + "[Unit]\n"
        f"Description={description}\n"
        "After=network-online.target\n"
        "Wants=network-online.target\n"
        "StartLimitIntervalSec=0\n\n"
        "[Service]\n"
        + (f"Environment={environment}\n" if environment else "")
        + (f"EnvironmentFile={environment_file}\n" if environment_file else "")
        + (f"WorkingDirectory={working_directory}\n" if working_directory else "")
        + f"ExecStart={' '.join(exec_start)}\n"
        "Restart=always\n"
        f"RestartSec={int(restart_s)}\n"
        + identity
        + ("AmbientCapabilities=CAP_NET_BIND_SERVICE\n" if bind_low_port else "")
        + "\n[Install]\n"
        "WantedBy=multi-user.target\n")


def supervise_sh() -> str:
    """`supervise.sh NAME DIR -- ARGV...`: the restart loop where the host has no systemd, for
    every caller. Runs ARGV again `$KK3_RESTART_S` (default RESTART_S) seconds after every
    exit, until DIR/NAME.stop exists, DIR is gone, or the loop gets TERM/INT (then the command gets TERM
    too); as the user in DIR/NAME.user when the loop runs as root (setpriv, see the module
    docstring; without setpriv it says so in the log and runs as root); the command's pid in
    DIR/NAME.child, its own in `$KK3_PID_FILE` (default DIR/NAME.loop), its output and every
    restart in `$KK3_LOG_FILE` (default DIR/logs/NAME.log). Started detached (`setsid`), so it outlives the SSH session or the
    Slurm step that started it; the environment it is started with is the command's. With
    `$KK3_ARGV_FILE` set, the command is that file's words, read again at every start (the
    router's replica set changes while it runs: components/router/host.py `refresh`), else
    ARGV."""
    return f"""#!/bin/bash
# Rendered by kimi-k3 (components/systemd/units.py); do not edit by hand.
# the restart loop where the host has no systemd: runs the command again after every exit
set -uo pipefail
name=$1 dir=$2
shift 3
restart_s=${{KK3_RESTART_S:-{RESTART_S}}}
log=${{KK3_LOG_FILE:-$dir/logs/$name.log}}
mkdir -p "$(dirname "$log")"
echo $$ >"${{KK3_PID_FILE:-$dir/$name.loop}}"
# not as root: setpriv to the user in $dir/$name.user
as=$(cat "$dir/$name.user" 2>/dev/null || echo root)
drop=()
if [ "$as" != root ] && [ "$(id -u)" = 0 ]; then
  if command -v setpriv >/dev/null 2>&1; then
    drop=(setpriv "--reuid=$as" "--regid=$as" --clear-groups --)
  else
    echo "$(date -u +%FT%TZ) setpriv not found: $name runs as root" >>"$log"
  fi
fi
child=""
trap '[ -n "$child" ] && kill "$child" 2>/dev/null; exit 0' TERM INT
# the loop ends when its directory is gone (removed without `stop`, e.g. by hand or by a run
# that was killed): nothing could stop it otherwise, and its command could never start again
while [ -d "$dir" ] && [ ! -e "$dir/$name.stop" ]; do
  cmd=("$@")
  if [ -n "${{KK3_ARGV_FILE:-}}" ]; then read -r -a cmd <"$KK3_ARGV_FILE"; fi
  ${{drop[@]+"${{drop[@]}}"}} "${{cmd[@]}}" >>"$log" 2>&1 &
  child=$!
  echo "$child" >"$dir/$name.child"
  wait "$child"
  code=$?
  child=""
  {{ [ -e "$dir/$name.stop" ] || [ ! -d "$dir" ]; }} && break
  echo "$(date -u +%FT%TZ) $name exited with $code; restarting in $restart_s s" >>"$log"
  sleep "$restart_s"
done
"""
