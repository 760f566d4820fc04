"""Can the master be reached over SSH? One line when it cannot, said before anything changes.

Why: on `pulumi up` the first step that needs the master used to fail with a bare
`ConnectionRefusedError` traceback (or `timed out`), and a resize had already ordered or
removed nodes by then (HccCluster runs before any SSH step). An operator whose address changed,
whose master is down or whose cluster was released needs the host, the port, the way in (a
bastion) and what to check, in one line (issue 19, day two). So:
- `unreachable_message` is that line, for every SSH step's connection (ssh_resource.py) and for
  the cluster's resize;
- `probe` is a plain TCP connection to the SSH port (no login, nothing sent), which HccCluster
  makes before it changes the node count (input `masterProbe`, set by the program when a
  bootstrap follows): a master that does not answer stops the resize before any expand or
  shrink call. Through a bastion only the bastion's port can be probed without credentials.
"""

from __future__ import annotations

import socket
from typing import Any, Mapping, Optional

from .ssh import SshError, split_bastion

#: seconds the resize's probe waits for the SSH port (a black-holed address times out)
PROBE_TIMEOUT_S = 15.0


class MasterUnreachable(SshError):
    """The master (or the bastion in front of it) did not answer on its SSH port; `cause` is
    the socket's own error (a caller may wait out a port closed for a moment: sshd's reload)."""

    def __init__(self, message: str, cause: Optional[BaseException] = None):
        super().__init__(message)
        self.cause = cause


def _where(host: str, port: int, user: str = "", bastion: str = "") -> str:
    via = f" through the bastion {bastion}" if bastion else ""
    return f"{user + '@' if user else ''}{host}:{port}{via}"


def unreachable_message(host: str, port: int, e: BaseException, *, user: str = "",
                        bastion: str = "", doing: str = "") -> str:
    """One line: what could not be reached, the error, that nothing changed, what to check."""
    what = f" for {doing}" if doing else ""
    return (f"cannot reach the master {_where(host, port, user, bastion)}{what} "
            f"({type(e).__name__}: {e}); nothing was changed. Check that the cluster and its "
            "master run (CTyun console), that this machine's public address is in "
            "kimi-k3:sshAllowedCidrs (or set kimi-k3:sshBastion), and kimi-k3:sshHost / "
            "kimi-k3:sshPort; then run `pulumi up` again")


def probe(host: str, port: int, timeout_s: float = PROBE_TIMEOUT_S) -> Optional[OSError]:
    """None when `host:port` accepts a TCP connection, else the error (refused, timed out,
    no route). Nothing is sent on the connection."""
    try:
        with socket.create_connection((host, int(port)), timeout=timeout_s):
            return None
    except OSError as e:
        return e


def check_master(spec: Mapping[str, Any], master_public_ip: str, doing: str,
                 timeout_s: float = PROBE_TIMEOUT_S) -> None:
    """Raise MasterUnreachable when the SSH way to the master in `spec` (HccCluster's
    `masterProbe`: `host` ("" = `master_public_ip`), `port`, `bastion`) does not answer; an
    empty spec (no bootstrap) or no address to try checks nothing."""
    if not spec:
        return
    bastion = str(spec.get("bastion") or "")
    if bastion:
        _, host, port = split_bastion(bastion)
    else:
        host, port = str(spec.get("host") or master_public_ip or ""), int(spec.get("port") or 22)
    if not host:
        return
    error = probe(host, port, timeout_s)
    if error is not None:
        raise MasterUnreachable(unreachable_message(
            str(spec.get("host") or master_public_ip), int(spec.get("port") or 22), error,
            bastion=bastion, doing=doing), error)
