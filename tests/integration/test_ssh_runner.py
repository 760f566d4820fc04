"""The SSH runner against the real local sshd: login by key and by password, pinning, strict
bash, deadlines, redaction, uploads, a bastion hop, and reconnection after a dropped link (a
local TCP forwarder that cuts connections)."""

import socket
import threading
import time
from pathlib import Path

import pytest

from components.ctyun_hcc.ssh import (
    CommandFailed,
    HostKeyChanged,
    SshCredentials,
    SshError,
    SshRunner,
    SshTarget,
    SshTimeout,
)
from tests.integration.slurm_env import host_key


def key_runner(services, **kw):
    target = SshTarget(services["KK3_SSH_HOST"], int(services["KK3_SSH_PORT"]), **kw)
    return SshRunner(target, SshCredentials(private_key=Path(services["KK3_SSH_KEY"]).read_text()),
                     sleep=lambda s: None)


class Forwarder:
    """TCP forwarder to sshd that drops the first `drop_first` connections at once and cuts
    every later connection after `cut_after_s` seconds (None = never)."""

    def __init__(self, port, drop_first=0, cut_after_s=None, cut_count=1):
        self.port, self.drop_first, self.cut_after_s, self.cut_count = port, drop_first, \
            cut_after_s, cut_count
        self.srv = socket.socket()
        self.srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.srv.bind(("127.0.0.1", 0))
        self.srv.listen(8)
        self.listen_port = self.srv.getsockname()[1]
        self.accepted = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _pipe(self, a, b):
        try:
            while True:
                data = a.recv(65536)
                if not data:
                    break
                b.sendall(data)
        except OSError:
            pass
        finally:
            for s in (a, b):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def _serve(self):
        while True:
            try:
                client, _ = self.srv.accept()
            except OSError:
                return
            self.accepted += 1
            if self.accepted <= self.drop_first:
                client.close()
                continue
            upstream = socket.create_connection(("127.0.0.1", self.port))
            threading.Thread(target=self._pipe, args=(client, upstream), daemon=True).start()
            threading.Thread(target=self._pipe, args=(upstream, client), daemon=True).start()
            if self.cut_after_s is not None and self.cut_count > 0:
                self.cut_count -= 1
                threading.Timer(self.cut_after_s, lambda c=client: c.shutdown(socket.SHUT_RDWR)
                                ).start()

    def close(self):
        self.srv.close()


def test_key_login_strict_bash_env_and_pin(services):
    r = key_runner(services, env=(("GREETING", "a b'c"),))
    with r:
        assert r.run("echo \"$GREETING\"").stdout == "a b'c\n"
        with pytest.raises(CommandFailed) as err:  # pipefail + -u are on
            r.run("false | true; echo unreachable")
        assert err.value.code == 1
        with pytest.raises(CommandFailed):
            r.run("echo $UNSET_VARIABLE_KK3")
    assert r.host_key == host_key(services)


def test_password_login(services):
    user = services["KK3_SSH_PASSWORD_USER"]
    password = Path(services["KK3_SSH_PASSWORD_FILE"]).read_text().strip()
    r = SshRunner(SshTarget(services["KK3_SSH_HOST"], int(services["KK3_SSH_PORT"]), user=user,
                            host_key=host_key(services)), SshCredentials(password=password))
    with r:
        assert r.run("id -un").stdout.strip() == user
        res = r.run(f"echo {password}", check=False)
        assert password not in res.stdout and "[secret]" in res.stdout
    bad = SshRunner(SshTarget(services["KK3_SSH_HOST"], int(services["KK3_SSH_PORT"]), user=user),
                    SshCredentials(password="wrong-Password-1"))
    with pytest.raises(SshError, match="refused") as err:
        bad.connect()
    assert "wrong-Password-1" not in str(err.value)


def test_secrets_go_on_stdin_and_are_redacted(services, workspace):
    r = key_runner(services)
    r._redact.append("sk-redact-me-42")
    with r:
        r.write_secret(str(workspace / "s" / "KEY"), "sk-redact-me-42")
        assert (workspace / "s" / "KEY").read_text() == "sk-redact-me-42"
        assert oct((workspace / "s").stat().st_mode & 0o777) == "0o700"
        with pytest.raises(CommandFailed) as err:
            r.run(f"cat {workspace}/s/KEY >&2; exit 3")
        assert "sk-redact-me-42" not in str(err.value) and "[secret]" in str(err.value)
        r.upload(str(workspace / "up" / "x.sh"), "#!/bin/bash\necho up\n", 0o750)
        assert r.run(str(workspace / "up" / "x.sh")).stdout == "up\n"
        assert oct((workspace / "up" / "x.sh").stat().st_mode & 0o777) == "0o750"


def test_deadline(services):
    with key_runner(services) as r:
        t = time.monotonic()
        with pytest.raises(SshTimeout):
            r.run("sleep 20", timeout_s=1)
        assert time.monotonic() - t < 5


def test_changed_host_key_is_an_error(services):
    other = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl"
    with pytest.raises(HostKeyChanged, match="SHA256:"):
        key_runner(services, host_key=other).connect()


def test_bastion_hop(services):
    port = int(services["KK3_SSH_PORT"])
    key = Path(services["KK3_SSH_KEY"]).read_text()
    # the bastion gets its own key input (no fallback to the master's key: test_ctyun_bastion)
    r = SshRunner(SshTarget(services["KK3_SSH_HOST"], port, bastion_host="127.0.0.1",
                            bastion_port=port, bastion_host_key=host_key(services),
                            host_key=host_key(services)),
                  SshCredentials(private_key=key, bastion_private_key=key), sleep=lambda s: None)
    with r:
        assert r.run("echo via-bastion").stdout == "via-bastion\n"


def test_reconnects_after_dropped_connections(services):
    port = int(services["KK3_SSH_PORT"])
    fwd = Forwarder(port, drop_first=1)  # the first connection attempt is cut at once
    try:
        r = SshRunner(SshTarget("127.0.0.1", fwd.listen_port, host_key=host_key(services),
                                retries=3),
                      SshCredentials(private_key=Path(services["KK3_SSH_KEY"]).read_text()),
                      sleep=lambda s: None)
        assert r.run("echo ok").stdout == "ok\n"
        assert fwd.accepted == 2
    finally:
        fwd.close()
    fwd = Forwarder(port, cut_after_s=0.8)  # the link dies while a command runs
    try:
        r = SshRunner(SshTarget("127.0.0.1", fwd.listen_port, host_key=host_key(services),
                                retries=3),
                      SshCredentials(private_key=Path(services["KK3_SSH_KEY"]).read_text()),
                      sleep=lambda s: None)
        assert r.run("sleep 2; echo finished").stdout == "finished\n"
        assert r.connects == 2  # reconnected and ran the (idempotent) command again
    finally:
        fwd.close()


def test_gives_up_after_retries(services):
    fwd = Forwarder(int(services["KK3_SSH_PORT"]), drop_first=99)
    try:
        r = SshRunner(SshTarget("127.0.0.1", fwd.listen_port, retries=2, connect_timeout_s=3),
                      SshCredentials(private_key=Path(services["KK3_SSH_KEY"]).read_text()),
                      sleep=lambda s: None)
        with pytest.raises(SshError, match="after 2 attempts"):
            r.run("true")
    finally:
        fwd.close()
