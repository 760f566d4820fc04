"""`python -m components logs` on a ctyun-hcc stack: the Slurm job's logs on the master, over
SSH, with the stack's own login key and the pinned host key (never trust-on-first-use here: the
pin is in the stack's outputs). The command line and the outputs it reads: components/cli/logs.py.
"""

from __future__ import annotations

import sys
from typing import Mapping, Optional

from ..cli.logs import EXIT_NOTHING, TerminalSafe, UsageError, need


def log_dir_of(log_dir: str, replicas, job: str) -> str:
    """Where `job`'s logs are: replica i > 0 runs in its own work directory
    (replicas.py `replica_work_dir`: `<workDir>/replica-<i>`), so its job's logs are under
    `<workDir>/replica-<i>/logs`; replica 0's job and any other are under `logDir`. `replicas` is
    the stack output of that name (each replica's `jobId`), absent with one replica."""
    from .replicas import replica_work_dir

    if not log_dir.endswith("/logs") or not isinstance(replicas, list):
        return log_dir
    for i, r in enumerate(replicas):
        if i and isinstance(r, Mapping) and str(r.get("jobId")) == job:
            return f"{replica_work_dir(log_dir[:-len('/logs')], i)}/logs"
    return log_dir


#: a private key file is a few kB (OpenSSH ed25519 ~400 B, RSA 4096 ~3.4 kB); more is not one
MAX_KEY_FILE_BYTES = 64 * 1024


def bastion_key(bastion: str, path) -> Optional[str]:
    """The bastion's login key from `--bastion-key FILE`: the user's own key (kimi-k3:
    sshBastionPrivateKey, else kimi-k3:sshPrivateKey), stack config the program never copies into
    an output, so `logs` must be given it. None without a bastion; without the file, one line
    saying how to give it (checked before connecting: nothing is offered to the bastion)."""
    if not bastion:
        return None
    if path is None:
        raise UsageError(f"the stack reaches its master through the bastion {bastion!r}: give the "
                         "private key the bastion takes with --bastion-key FILE (the key "
                         "kimi-k3:sshBastionPrivateKey, else kimi-k3:sshPrivateKey, holds)")
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_KEY_FILE_BYTES + 1)
    except OSError as e:
        raise UsageError(f"--bastion-key {str(path)!r} is not readable ({e.__class__.__name__})") from None
    if len(data) > MAX_KEY_FILE_BYTES or b"PRIVATE KEY-----" not in data:
        raise UsageError(f"--bastion-key {str(path)!r} does not hold a PEM/OpenSSH private key")
    return data.decode("utf-8", "replace")


def show_logs(args, outputs) -> int:
    """`python -m components logs` on a ctyun-hcc stack (cli/logs.py calls it)."""
    from .logs import LogRequest, remote_command
    from .ssh import SshCredentials, SshRunner, SshTarget, remote_errors, split_bastion

    ssh = need(outputs, "ssh")
    key = need(outputs, "sshLoginKey")
    job = args.job or str(need(outputs, "slurmJobId"))
    if not isinstance(ssh, Mapping) or not ssh.get("hostKey"):
        raise UsageError("the stack's `ssh` output has no pinned hostKey: run `pulumi up`")
    try:
        req = LogRequest(log_dir_of(str(ssh.get("logDir") or ""), outputs.get("replicas"), job),
                         job, args.node, args.lines, args.follow)
    except ValueError as e:
        raise UsageError(str(e)) from None
    bastion = ssh.get("bastion") or ""
    try:
        b_user, b_host, b_port = split_bastion(bastion) if bastion else ("root", None, 22)
        port = int(str(ssh.get("port") or 22))
        if not str(ssh.get("host") or "").strip() or not 0 < port < 65536:
            raise ValueError
    except ValueError:
        raise UsageError(f"the stack's `ssh` output is damaged (host {str(ssh.get('host'))!r}, port "
                         f"{str(ssh.get('port'))!r}, bastion {str(bastion)!r}): run `pulumi up` "
                         "(or `pulumi refresh`) to write it again") from None
    target = SshTarget(host=str(ssh["host"]), port=port,
                       user=str(ssh.get("user") or "root"), host_key=str(ssh["hostKey"]),
                       bastion_host=b_host, bastion_port=b_port, bastion_user=b_user,
                       bastion_host_key=ssh.get("bastionHostKey") or None, retries=1)
    creds = SshCredentials(private_key=str(key),
                           bastion_private_key=bastion_key(bastion, args.bastion_key))
    out, err = sys.stdout.buffer, sys.stderr.buffer

    def write(stream):  # what the log holds is shown, never acted on (cli/logs.py)
        def w(data: bytes) -> None:
            stream.write(data)
            stream.flush()
        return TerminalSafe(w)

    shown_out, shown_err = write(out), write(err)
    try:
        with SshRunner(target, creds) as runner:
            try:
                code = runner.stream(remote_command(req), shown_out, shown_err, pty=req.follow)
            finally:
                shown_out.flush()
                shown_err.flush()
    except remote_errors() as e:  # a master gone (a stack mid-destroy), a refused login...
        print(f"error: cannot read the logs on {target.host}:{target.port} over SSH "
              f"({type(e).__name__}: {e}); is the cluster still there? "
              "`pulumi stack` lists its resources", file=sys.stderr)
        return 1
    return EXIT_NOTHING if code == 3 else code
