"""`python -m components logs` on a ctyun-hcc stack: the Slurm job's logs on the master, over
SSH, with the stack's own login key and the pinned host key (never trust-on-first-use here: the
pin is in the stack's outputs). The command line and the outputs it reads: components/cli/logs.py.
"""

from __future__ import annotations

import sys
from typing import Mapping

from ..cli.logs import EXIT_NOTHING, UsageError, need


def show_logs(args, outputs) -> int:
    """`python -m components logs` on a ctyun-hcc stack (cli/logs.py calls it)."""
    from .logs import LogRequest, remote_command
    from .ssh import SshCredentials, SshError, SshRunner, SshTarget, split_bastion

    ssh = need(outputs, "ssh")
    key = need(outputs, "sshLoginKey")
    job = args.job or str(need(outputs, "slurmJobId"))
    if not isinstance(ssh, Mapping) or not ssh.get("hostKey"):
        raise UsageError("the stack's `ssh` output has no pinned hostKey: run `pulumi up`")
    try:
        req = LogRequest(str(ssh.get("logDir") or ""), job, args.node, args.lines, args.follow)
    except ValueError as e:
        raise UsageError(str(e)) from None
    bastion = ssh.get("bastion") or ""
    b_user, b_host, b_port = split_bastion(bastion) if bastion else ("root", None, 22)
    target = SshTarget(host=str(ssh["host"]), port=int(ssh.get("port") or 22),
                       user=str(ssh.get("user") or "root"), host_key=str(ssh["hostKey"]),
                       bastion_host=b_host, bastion_port=b_port, bastion_user=b_user,
                       bastion_host_key=ssh.get("bastionHostKey") or None, retries=1)
    creds = SshCredentials(private_key=str(key),
                           bastion_private_key=outputs.get("sshBastionKey") or None)
    out, err = sys.stdout.buffer, sys.stderr.buffer

    def write(stream):
        def w(data: bytes) -> None:
            stream.write(data)
            stream.flush()
        return w

    try:
        with SshRunner(target, creds) as runner:
            code = runner.stream(remote_command(req), write(out), write(err), pty=req.follow)
    except SshError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return EXIT_NOTHING if code == 3 else code
