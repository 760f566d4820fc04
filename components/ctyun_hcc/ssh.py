"""Run commands and upload files on the cluster's master node over SSH (paramiko).

Everything the bootstrap and the Slurm service do on the cluster goes through `SshRunner`:

- it connects to the master's public IP, or through a bastion (`direct-tcpip` channel);
- every hop's host key is checked *before* any credential is sent (the key exchange comes
  first, then the check, then authentication, in that order in `_open`): a pinned key (config
  or state, `TYPE BASE64` or a `SHA256:` fingerprint) must match, else `HostKeyChanged`; with no
  pin the key is accepted once (first contact) and reported (`runner.host_key`,
  `runner.bastion_host_key`) for the caller to store and verify from then on;
- it authenticates the master with a private key or the root password, the bastion only with
  `bastion_private_key`: never the root password, never the master's key (after first contact
  that is the stack's generated login key, installed on the master only). Which key the
  bastion gets (kimi-k3:sshBastionPrivateKey, else kimi-k3:sshPrivateKey) is the program's
  choice (serve_config.bastion_login_key), made once, so no step falls back to another key;
- every command runs as `bash -c 'set -euo pipefail; ...'` with a deadline; connection loss is
  retried with a fresh connection (callers only send idempotent commands);
- stdout/stderr are returned and put into errors with every secret value replaced by `[secret]`
  (streamed output too, also a secret cut between two reads: ssh_redact.py);
  secrets reach the remote side on stdin, never on a command line.

Pure of Pulumi. One runner is one connection; `round_trips` counts commands and uploads.
"""

from __future__ import annotations

import base64
import hashlib
import io
import logging
import posixpath
import socket
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, List, Mapping, Optional, Sequence, Tuple

from ..inference.quoting import shell_word
from . import ssh_redact

if TYPE_CHECKING:
    import paramiko

log = logging.getLogger("kimi_k3.ctyun.ssh")


def _paramiko():
    """paramiko, imported where a connection is opened or its errors are caught: the program's
    modules import this one, and an offline plan (or a `pulumi up` with nothing to run on the
    master) never connects (paramiko with cryptography and invoke costs ~0.16 s CPU to import)."""
    import paramiko

    return paramiko


def _transient() -> tuple:
    """Errors after which a fresh connection may succeed."""
    return (_paramiko().SSHException, EOFError, ConnectionError, socket.timeout, OSError)


class SshError(Exception):
    """A remote command failed, or the host could not be reached (message is redacted)."""


class HostKeyChanged(SshError):
    """The server's host key differs from the pinned one (possible man-in-the-middle)."""


class SshTimeout(SshError):
    """A command did not finish before its deadline."""


def remote_errors() -> tuple:
    """Everything that can go wrong on the far side of a connection: a refused or timed-out
    connection, a lost session, a refused login, a changed host key (nothing is sent then), a
    command that failed or ran past its deadline (TimeoutError is an OSError). A function, so
    `except remote_errors()` imports paramiko only when an error is being matched."""
    return (SshError, _paramiko().SSHException, EOFError, OSError)


def __getattr__(name: str):
    """`REMOTE_ERRORS` and `_TRANSIENT` as module attributes, built on first use (PEP 562)."""
    if name == "REMOTE_ERRORS":
        return remote_errors()
    if name == "_TRANSIENT":
        return _transient()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
    """Secret login material. `repr` never shows it.

    `private_key`/`password` log in to the master; the bastion gets `bastion_private_key` and
    nothing else (no fallback: the master's key may be the stack's login key)."""

    private_key: Optional[str] = field(default=None, repr=False)
    password: Optional[str] = field(default=None, repr=False)
    bastion_private_key: Optional[str] = field(default=None, repr=False)

    def secrets(self) -> List[str]:
        return [s for s in (self.private_key, self.password, self.bastion_private_key) if s]


def key_text(key: paramiko.PKey) -> str:
    """`TYPE BASE64` form of a host key (as in known_hosts)."""
    return f"{key.get_name()} {key.get_base64()}"


def fingerprint(key_line: str) -> str:
    """SHA256 fingerprint of a `TYPE BASE64` key, as `ssh-keygen -l` prints it."""
    if key_line.startswith("SHA256:"):
        return key_line
    blob = base64.b64decode(key_line.split()[1])
    return "SHA256:" + base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")


def key_matches(pin: str, seen: str) -> bool:
    """Does the key the server shows (`TYPE BASE64`) match `pin` (a key or a fingerprint)?"""
    if pin.startswith("SHA256:"):
        return fingerprint(seen) == pin.rstrip("=")
    return pin.split()[:2] == seen.split()[:2]


def _load_private_key(text: str) -> paramiko.PKey:
    paramiko = _paramiko()
    for cls in (paramiko.Ed25519Key, paramiko.ECDSAKey, paramiko.RSAKey):
        try:
            return cls.from_private_key(io.StringIO(text))
        except (paramiko.SSHException, ValueError):
            continue
    raise SshError("the SSH private key is not a readable ed25519, ECDSA or RSA key "
                   "(kimi-k3:sshPrivateKey or kimi-k3:sshBastionPrivateKey)")


def generate_login_key(comment: str) -> Tuple[str, str]:
    """A new ed25519 key pair: (OpenSSH private key text, `ssh-ed25519 BASE64 comment` line)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    key = Ed25519PrivateKey.generate()
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH,
                                serialization.NoEncryption()).decode()
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH,
                                           serialization.PublicFormat.OpenSSH).decode()
    clean = "".join(c for c in comment if c.isalnum() or c in "._-/:@") or "kimi-k3"
    return private, f"{public} {clean}"


def _changed(what: str, host: str, pinned: str, seen: str) -> HostKeyChanged:
    return HostKeyChanged(
        f"host key of {what} {host} changed: pinned {fingerprint(pinned)}, server shows "
        f"{fingerprint(seen)}; nothing was sent to it. If the host was rebuilt on purpose, clear "
        "the pin (kimi-k3:sshHostKey / sshBastionHostKey, or the HostKeyPin resource in the "
        "state) and run again; otherwise do not connect")


class SshRunner:
    """One SSH connection to the master (optionally via a bastion), with pinning and retries."""

    def __init__(self, target: SshTarget, credentials: SshCredentials,
                 redact: Sequence[str] = (), sleep: Callable[[float], None] = time.sleep):
        self.target = target
        self._creds = credentials
        self._redact = ssh_redact.variants(list(redact) + credentials.secrets())
        self._sleep = sleep
        self._transport: Optional[paramiko.Transport] = None
        self._bastion: Optional[paramiko.Transport] = None
        self.host_key: Optional[str] = target.host_key
        self.bastion_host_key: Optional[str] = target.bastion_host_key
        self.round_trips = 0
        self.connects = 0

    # ---- connection ----------------------------------------------------------------------------
    def _open(self, what: str, host: str, port: int, user: str, pinned: Optional[str],
              pkey_text: Optional[str], password: Optional[str], sock=None):
        """One authenticated transport: key exchange, host key check, then (only then) login."""
        t = self.target
        if sock is None:
            sock = socket.create_connection((host, port), timeout=t.connect_timeout_s)
        paramiko = _paramiko()
        transport = paramiko.Transport(sock)
        try:
            transport.banner_timeout = t.connect_timeout_s
            transport.auth_timeout = t.connect_timeout_s
            transport.start_client(timeout=t.connect_timeout_s)
            seen = key_text(transport.get_remote_server_key())
            if pinned and not key_matches(pinned, seen):
                raise _changed(what, host, pinned, seen)
            if pkey_text:
                transport.auth_publickey(user, _load_private_key(pkey_text))
            elif password:
                transport.auth_password(user, password)
            else:
                raise SshError(f"no credentials for {what} {user}@{host}:{port}")
            if not transport.is_authenticated():
                raise paramiko.AuthenticationException("not authenticated")
        except paramiko.AuthenticationException as e:
            transport.close()
            hint = "kimi-k3:sshBastionPrivateKey" if what == "bastion" else \
                "kimi-k3:sshPrivateKey or the root password"
            raise SshError(f"SSH login as {user}@{host}:{port} ({what}) was refused "
                           f"({type(e).__name__}); check {hint}") from None
        except BaseException:
            transport.close()
            raise
        return transport, seen

    def connect(self) -> "SshRunner":
        if self._transport is not None and self._transport.is_active():
            return self
        self.close()
        t, c = self.target, self._creds
        sock = None
        if t.bastion_host:
            if not c.bastion_private_key:  # checked before connecting: nothing is offered
                raise SshError(
                    f"no credentials for bastion {t.bastion_user}@{t.bastion_host}:"
                    f"{t.bastion_port}: set kimi-k3:sshBastionPrivateKey (or kimi-k3:sshPrivateKey)"
                    " and run `pulumi up`; the bastion is never sent the root password or the "
                    "stack's login key")
            self._bastion, seen_b = self._open(
                "bastion", t.bastion_host, t.bastion_port, t.bastion_user, self.bastion_host_key,
                c.bastion_private_key, None)
            self.bastion_host_key = seen_b
            sock = self._bastion.open_channel("direct-tcpip", (t.host, t.port), ("127.0.0.1", 0),
                                              timeout=t.connect_timeout_s)
        self._transport, seen = self._open("master", t.host, t.port, t.user, self.host_key,
                                           c.private_key, c.password, sock)
        self.host_key = seen  # pinned from now on, for this runner and (via outputs) later runs
        self.connects += 1
        return self

    def close(self) -> None:
        for c in (self._transport, self._bastion):
            if c is not None:
                c.close()
        self._transport = self._bastion = None

    def __enter__(self) -> "SshRunner":
        return self.connect()

    def __exit__(self, *exc) -> None:
        self.close()

    # ---- commands ------------------------------------------------------------------------------
    def redact(self, text: str) -> str:
        return ssh_redact.redact(text, self._redact)

    def wrap(self, cmd: str) -> str:
        """The exact remote command line: bash, strict mode, exported non-secret env."""
        exports = "".join(f"export {k}={shell_word(v)}; " for k, v in self.target.env)
        return "bash -c " + shell_word(f"set -euo pipefail; {exports}{cmd}")

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
            except _transient() as e:
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
            chan = self._transport.open_session(timeout=self.target.connect_timeout_s)
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
            transport = self._transport
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

    def stream(self, cmd: str, out: Callable[[bytes], None], err: Callable[[bytes], None],
               pty: bool = False) -> int:
        """Run `cmd`, handing its output over as it comes (e.g. `tail -F`), until it ends or the
        caller interrupts (KeyboardInterrupt closes the channel); returns the exit status. No
        retry: a stream is not idempotent. Output is redacted before it is handed over.
        `pty`: on a terminal, so closing the channel hangs the remote command up (a `tail -F`
        would otherwise outlive the session until its next write); stderr then comes with stdout."""
        self.connect()
        self.round_trips += 1
        chan = self._transport.open_session(timeout=self.target.connect_timeout_s)
        # one redactor per stream: a secret cut between two reads is still replaced (ssh_redact)
        shown = ((ssh_redact.StreamRedactor(self._redact), out, chan.recv_ready, chan.recv),
                 (ssh_redact.StreamRedactor(self._redact), err, chan.recv_stderr_ready,
                  chan.recv_stderr))
        try:
            chan.settimeout(1.0)
            if pty:
                chan.get_pty(term="dumb", width=200)
            chan.exec_command(self.wrap(cmd))
            chan.shutdown_write()
            while True:
                busy = False
                for redactor, hand, ready, recv in shown:
                    while ready():
                        text = redactor.feed(recv(65536))
                        if text:
                            hand(text.encode())
                        busy = True
                if chan.exit_status_ready() and not chan.recv_ready() and not chan.recv_stderr_ready():
                    return chan.recv_exit_status()
                if not busy:
                    time.sleep(0.05)
        finally:
            chan.close()
            for redactor, hand, _, _ in shown:
                rest = redactor.end()
                if rest:
                    hand(rest.encode())

    def upload(self, path: str, content, mode: int = 0o644) -> None:
        """Write `content` (str or bytes) to `path` atomically (temp file + rename), with `mode`.

        The bytes travel on the command's stdin, so no SFTP subsystem is needed on the node."""
        q = shell_word(path)
        self.run(f"mkdir -p {shell_word(posixpath.dirname(path))}; cat > {q}.kk3tmp; "
                 f"chmod {mode:o} {q}.kk3tmp; mv -f {q}.kk3tmp {q}",
                 stdin=content, label=f"upload {path}")

    def open_tunnel(self, host: str, port: int):
        """A `direct-tcpip` channel to `host:port` as the master sees it (for a port forward)."""
        def once():
            return self._transport.open_channel(
                "direct-tcpip", (host, int(port)), ("127.0.0.1", 0),
                timeout=self.target.connect_timeout_s)

        return self._with_retries(f"tunnel to {host}:{port}", once)

    def write_secret(self, path: str, value: str) -> None:
        """Write a secret to a root-only file (dir 0700, file 0600); the value travels on stdin."""
        self.write_private(path, value, label=f"write secret file {path}")

    def write_private(self, path: str, content, label: str = "") -> None:
        """Write `content` to a root-only file (dir 0700, file 0600) atomically, on stdin: no
        other user can read it or swap it (the API-key guard vLLM imports, the secrets)."""
        d = posixpath.dirname(path)
        self.run(f"umask 077; mkdir -p {shell_word(d)}; chmod 700 {shell_word(d)}; "
                 f"cat > {shell_word(path)}.kk3tmp; chmod 600 {shell_word(path)}.kk3tmp; "
                 f"mv -f {shell_word(path)}.kk3tmp {shell_word(path)}",
                 stdin=content, label=label or f"write root-only file {path}")


def split_bastion(text: str) -> Tuple[str, str, int]:
    """(user, host, port) of `[user@]host[:port]` (IPv6 hosts in brackets); user root, port 22."""
    user, _, rest = text.rpartition("@")
    if rest.startswith("["):
        host, _, port = rest[1:].partition("]")
        port = port.lstrip(":")
    elif rest.count(":") == 1:
        host, _, port = rest.partition(":")
    else:
        host, port = rest, ""
    return user or "root", host, int(port or 22)


def target_from_props(props: Mapping) -> SshTarget:
    """SshTarget from a dynamic resource's property bag (keys as in ssh_resource.SSH_INPUTS)."""
    bastion = props.get("sshBastion") or ""
    b_user, b_host, b_port = split_bastion(bastion) if bastion else ("root", None, 22)
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
                          password=props.get("sshPassword") or None,
                          bastion_private_key=props.get("sshBastionPrivateKey") or None)
