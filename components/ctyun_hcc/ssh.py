"""Run commands and upload files on the cluster's master node over SSH (paramiko).

Everything the bootstrap and the Slurm service do on the cluster goes through `SshRunner`:

- it connects to the master's public IP, or through a bastion (`direct-tcpip` channel);
- it authenticates with a private key or the root password (both secret; never logged);
- the host key is pinned: on first contact the key the server shows is accepted and reported
  (`runner.host_key`, stored by the caller as a resource output); afterwards a different key is
  `HostKeyChanged`, never a silent accept;
- every command runs as `bash -c 'set -euo pipefail; ...'` with a deadline; connection loss is
  retried with a fresh connection (callers only send idempotent commands);
- stdout/stderr are returned and put into errors with every secret value replaced by `[secret]`;
  secrets reach the remote side on stdin, never on a command line.

Pure of Pulumi. One runner is one connection; `round_trips` counts commands and uploads.
"""

from __future__ import annotations

import base64
import hashlib
import io
import logging
import posixpath
import shlex
import socket
import time
from dataclasses import dataclass, field
from typing import Callable, List, Mapping, Optional, Sequence, Tuple

import paramiko

log = logging.getLogger("kimi_k3.ctyun.ssh")

#: errors after which a fresh connection may succeed
_TRANSIENT = (paramiko.SSHException, EOFError, ConnectionError, socket.timeout, OSError)


class SshError(Exception):
    """A remote command failed, or the host could not be reached (message is redacted)."""


class HostKeyChanged(SshError):
    """The server's host key differs from the pinned one (possible man-in-the-middle)."""


class SshTimeout(SshError):
    """A command did not finish before its deadline."""


class CommandFailed(SshError):
    def __init__(self, cmd_label: str, code: int, stdout: str, stderr: str):
        self.code, self.stdout, self.stderr = code, stdout, stderr
        tail = "\n".join((stderr or stdout).strip().splitlines()[-15:])
        super().__init__(f"`{cmd_label}` exited {code}: {tail}")


@dataclass(frozen=True)
class Result:
    code: int
    stdout: str
    stderr: str


@dataclass(frozen=True)
class SshTarget:
    """Where to connect and what to trust. `host_key` is "TYPE BASE64" or None (pin on contact)."""

    host: str
    port: int = 22
    user: str = "root"
    host_key: Optional[str] = None
    bastion_host: Optional[str] = None
    bastion_port: int = 22
    bastion_user: str = "root"
    bastion_host_key: Optional[str] = None
    connect_timeout_s: float = 20.0
    command_timeout_s: float = 600.0
    retries: int = 3
    #: non-secret environment exported before every command
    env: Tuple[Tuple[str, str], ...] = ()


@dataclass(frozen=True)
class SshCredentials:
    """Secret login material. `repr` never shows it."""

    private_key: Optional[str] = field(default=None, repr=False)
    password: Optional[str] = field(default=None, repr=False)

    def secrets(self) -> List[str]:
        return [s for s in (self.private_key, self.password) if s]


def key_text(key: paramiko.PKey) -> str:
    """`TYPE BASE64` form of a host key (as in known_hosts)."""
    return f"{key.get_name()} {key.get_base64()}"


def fingerprint(key_line: str) -> str:
    """SHA256 fingerprint of a `TYPE BASE64` key, as `ssh-keygen -l` prints it."""
    blob = base64.b64decode(key_line.split()[1])
    return "SHA256:" + base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")


def _load_private_key(text: str) -> paramiko.PKey:
    for cls in (paramiko.Ed25519Key, paramiko.ECDSAKey, paramiko.RSAKey):
        try:
            return cls.from_private_key(io.StringIO(text))
        except (paramiko.SSHException, ValueError):
            continue
    raise SshError("the SSH private key is not a readable ed25519, ECDSA or RSA key "
                   "(kimi-k3:sshPrivateKey)")


class _PinPolicy(paramiko.MissingHostKeyPolicy):
    """Accept an unknown key only when nothing is pinned; remember what was seen."""

    def __init__(self, pinned: Optional[str]):
        self.pinned = pinned
        self.seen: Optional[str] = None

    def missing_host_key(self, client, hostname, key):
        self.seen = key_text(key)
        if self.pinned is not None and self.pinned != self.seen:
            raise HostKeyChanged(
                f"host key of {hostname} changed: pinned {fingerprint(self.pinned)}, server "
                f"shows {fingerprint(self.seen)}; if the node was rebuilt on purpose, clear the "
                "pin (pulumi state) and run again, otherwise do not connect")


class SshRunner:
    """One SSH connection to the master (optionally via a bastion), with pinning and retries."""

    def __init__(self, target: SshTarget, credentials: SshCredentials,
                 redact: Sequence[str] = (), sleep: Callable[[float], None] = time.sleep):
        self.target = target
        self._creds = credentials
        self._redact = [s for s in list(redact) + credentials.secrets() if s]
        self._sleep = sleep
        self._client: Optional[paramiko.SSHClient] = None
        self._bastion: Optional[paramiko.SSHClient] = None
        self.host_key: Optional[str] = target.host_key
        self.round_trips = 0
        self.connects = 0

    # ---- connection ----------------------------------------------------------------------------
    def _connect_one(self, host: str, port: int, user: str, pinned: Optional[str], sock=None):
        client = paramiko.SSHClient()
        policy = _PinPolicy(pinned)
        client.set_missing_host_key_policy(policy)
        pkey = _load_private_key(self._creds.private_key) if self._creds.private_key else None
        try:
            client.connect(host, port=port, username=user, pkey=pkey,
                           password=self._creds.password, sock=sock,
                           timeout=self.target.connect_timeout_s,
                           banner_timeout=self.target.connect_timeout_s,
                           auth_timeout=self.target.connect_timeout_s,
                           allow_agent=False, look_for_keys=False)
        except HostKeyChanged:
            client.close()
            raise
        except paramiko.AuthenticationException as e:
            client.close()
            raise SshError(f"SSH login as {user}@{host}:{port} was refused ({type(e).__name__}); "
                           "check kimi-k3:sshPrivateKey or the root password") from None
        seen = key_text(client.get_transport().get_remote_server_key())
        if pinned is not None and seen != pinned:  # belt and braces: policy runs only if unknown
            client.close()
            raise HostKeyChanged(f"host key of {host} changed: pinned {fingerprint(pinned)}, "
                                 f"server shows {fingerprint(seen)}")
        return client, seen

    def connect(self) -> "SshRunner":
        if self._client is not None and self._client.get_transport() is not None \
                and self._client.get_transport().is_active():
            return self
        self.close()
        t = self.target
        sock = None
        if t.bastion_host:
            self._bastion, _ = self._connect_one(t.bastion_host, t.bastion_port, t.bastion_user,
                                                 t.bastion_host_key)
            sock = self._bastion.get_transport().open_channel(
                "direct-tcpip", (t.host, t.port), ("127.0.0.1", 0),
                timeout=t.connect_timeout_s)
        self._client, seen = self._connect_one(t.host, t.port, t.user, self.host_key, sock)
        self.host_key = seen  # pinned from now on, for this runner and (via outputs) later runs
        self.connects += 1
        return self

    def close(self) -> None:
        for c in (self._client, self._bastion):
            if c is not None:
                c.close()
        self._client = self._bastion = None

    def __enter__(self) -> "SshRunner":
        return self.connect()

    def __exit__(self, *exc) -> None:
        self.close()

    # ---- commands ------------------------------------------------------------------------------
    def redact(self, text: str) -> str:
        for s in self._redact:
            text = text.replace(s, "[secret]")
        return text

    def wrap(self, cmd: str) -> str:
        """The exact remote command line: bash, strict mode, exported non-secret env."""
        exports = "".join(f"export {k}={shlex.quote(v)}; " for k, v in self.target.env)
        return "bash -c " + shlex.quote(f"set -euo pipefail; {exports}{cmd}")

    def _with_retries(self, what: str, fn):
        attempts = max(1, self.target.retries)
        for attempt in range(1, attempts + 1):
            try:
                self.connect()
                return fn()
            except (HostKeyChanged, CommandFailed, SshTimeout):
                raise
            except SshError:
                raise
            except _TRANSIENT as e:
                self.close()
                if attempt == attempts:
                    raise SshError(self.redact(
                        f"{what} on {self.target.host}:{self.target.port} failed after "
                        f"{attempts} attempts: {type(e).__name__}: {e}")) from None
                log.info("SSH connection lost during %s (%s); reconnecting (attempt %d/%d)",
                         what, type(e).__name__, attempt + 1, attempts)
                self._sleep(min(2.0 ** attempt, 10.0))

    def run(self, cmd: str, check: bool = True, timeout_s: Optional[float] = None,
            stdin=None, label: Optional[str] = None) -> Result:
        """Run `cmd` under bash strict mode; `stdin` (e.g. a secret) is written to its input."""
        deadline_s = timeout_s or self.target.command_timeout_s
        shown = label or cmd.split("\n", 1)[0][:120]

        def once() -> Result:
            self.round_trips += 1
            chan = self._client.get_transport().open_session(timeout=self.target.connect_timeout_s)
            chan.settimeout(1.0)
            chan.exec_command(self.wrap(cmd))
            if stdin is not None:
                chan.sendall(stdin.encode() if isinstance(stdin, str) else bytes(stdin))
            chan.shutdown_write()
            out, err = bytearray(), bytearray()
            end = time.monotonic() + deadline_s
            while True:
                while chan.recv_ready():
                    out += chan.recv(65536)
                while chan.recv_stderr_ready():
                    err += chan.recv_stderr(65536)
                if chan.exit_status_ready() and not chan.recv_ready() \
                        and not chan.recv_stderr_ready():
                    break
                if time.monotonic() > end:
                    chan.close()
                    raise SshTimeout(self.redact(f"`{shown}` did not finish within "
                                                 f"{deadline_s:.0f} s"))
                time.sleep(0.02)
            transport = self._client.get_transport()
            if chan.exit_status == -1 and (transport is None or not transport.is_active()):
                # the channel closed without an exit status: the connection was lost
                chan.close()
                raise EOFError("connection lost before the command reported its exit status")
            code = chan.recv_exit_status()
            chan.close()
            res = Result(code, self.redact(out.decode(errors="replace")),
                         self.redact(err.decode(errors="replace")))
            if check and code != 0:
                raise CommandFailed(self.redact(shown), code, res.stdout, res.stderr)
            return res

        return self._with_retries(f"`{self.redact(shown)}`", once)

    def upload(self, path: str, content, mode: int = 0o644) -> None:
        """Write `content` (str or bytes) to `path` atomically (temp file + rename), with `mode`.

        The bytes travel on the command's stdin, so no SFTP subsystem is needed on the node."""
        q = shlex.quote(path)
        self.run(f"mkdir -p {shlex.quote(posixpath.dirname(path))}; cat > {q}.kk3tmp; "
                 f"chmod {mode:o} {q}.kk3tmp; mv -f {q}.kk3tmp {q}",
                 stdin=content, label=f"upload {path}")

    def write_secret(self, path: str, value: str) -> None:
        """Write a secret to a root-only file (dir 0700, file 0600); the value travels on stdin."""
        d = posixpath.dirname(path)
        self.run(f"umask 077; mkdir -p {shlex.quote(d)}; chmod 700 {shlex.quote(d)}; "
                 f"cat > {shlex.quote(path)}.kk3tmp; chmod 600 {shlex.quote(path)}.kk3tmp; "
                 f"mv -f {shlex.quote(path)}.kk3tmp {shlex.quote(path)}",
                 stdin=value, label=f"write secret file {path}")


def target_from_props(props: Mapping) -> SshTarget:
    """SshTarget from a dynamic resource's property bag (keys as in bootstrap.SSH_INPUTS)."""
    bastion = props.get("sshBastion") or ""
    b_user, b_host, b_port = "root", None, 22
    if bastion:
        user_host, _, port = bastion.rpartition(":") if bastion.count(":") == 1 else (bastion, "", "")
        if "@" in user_host:
            b_user, b_host = user_host.split("@", 1)
        else:
            b_host = user_host
        b_port = int(port or 22)
    return SshTarget(
        host=str(props["sshHost"]), port=int(props.get("sshPort") or 22),
        user=str(props.get("sshUser") or "root"), host_key=props.get("hostKey") or None,
        bastion_host=b_host, bastion_port=b_port, bastion_user=b_user,
        bastion_host_key=props.get("bastionHostKey") or None,
        connect_timeout_s=float(props.get("connectTimeoutS") or 20),
        command_timeout_s=float(props.get("commandTimeoutS") or 600),
        env=tuple(sorted((props.get("remoteEnv") or {}).items())),
    )


def credentials_from_props(props: Mapping) -> SshCredentials:
    return SshCredentials(private_key=props.get("sshPrivateKey") or None,
                          password=props.get("sshPassword") or None)
