"""SSH trust against the real local sshd (issue 10): no credential before a verified host key,
no password to a bastion, and the root password used once, at first contact, after which the
stack logs in with its own generated key.

The sshd log is the witness: sshd writes `Accepted password for USER` / `Failed password for
USER` for every password it receives, so "the password was never sent" is a count that did not
move. Run under `flock /tmp/kk3-services.lock` (shared services).
"""

from pathlib import Path

import pytest

from components.ctyun_hcc.bootstrap import HostKeyPinProvider
from components.ctyun_hcc.ssh import (
    HostKeyChanged,
    SshCredentials,
    SshError,
    SshRunner,
    SshTarget,
    fingerprint,
)
from tests.integration.slurm_env import host_key, password_props, sshd_log_lines

OTHER_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl"


def _password(env):
    return Path(env["KK3_SSH_PASSWORD_FILE"]).read_text().strip()


def _sent(env):
    """Passwords sshd has received for the password user so far (accepted or not)."""
    return sshd_log_lines(env, f"password for {env['KK3_SSH_PASSWORD_USER']}")


def _authorized_keys(env) -> str:
    path = Path("~" + env["KK3_SSH_PASSWORD_USER"]).expanduser() / ".ssh" / "authorized_keys"
    return path.read_text() if path.exists() else ""


def _password_runner(env, **target):
    t = SshTarget(env["KK3_SSH_HOST"], int(env["KK3_SSH_PORT"]), user=env["KK3_SSH_PASSWORD_USER"],
                  connect_timeout_s=10, retries=1, **target)
    return SshRunner(t, SshCredentials(password=_password(env)), sleep=lambda s: None)


@pytest.mark.parametrize("pin", [OTHER_KEY, fingerprint(OTHER_KEY)])
def test_password_is_never_sent_to_a_host_whose_key_differs(services, pin):
    before = _sent(services)
    with pytest.raises(HostKeyChanged, match="nothing was sent"):
        _password_runner(services, host_key=pin).connect()
    assert _sent(services) == before


@pytest.mark.parametrize("pin", ["key", "fingerprint"])
def test_password_goes_to_the_pinned_host(services, pin):
    right = host_key(services) if pin == "key" else fingerprint(host_key(services))
    before = _sent(services)
    with _password_runner(services, host_key=right) as r:
        assert r.run("id -un").stdout.strip() == services["KK3_SSH_PASSWORD_USER"]
    assert _sent(services) == before + 1


def test_bastion_gets_a_key_never_the_password(services):
    port = int(services["KK3_SSH_PORT"])
    before = _sent(services)
    # password-only credentials: the bastion hop has nothing to log in with, and gets nothing
    no_key = _password_runner(services, bastion_host="127.0.0.1", bastion_port=port,
                              bastion_user=services["KK3_SSH_PASSWORD_USER"])
    with pytest.raises(SshError, match="no credentials for bastion"):
        no_key.connect()
    assert _sent(services) == before
    # a bastion key: the hop logs in by key, the master (behind it) by password, both pinned
    creds = SshCredentials(password=_password(services),
                           bastion_private_key=Path(services["KK3_SSH_KEY"]).read_text())
    t = SshTarget("127.0.0.1", port, user=services["KK3_SSH_PASSWORD_USER"],
                  host_key=host_key(services), bastion_host="127.0.0.1", bastion_port=port,
                  bastion_user=services["KK3_SSH_USER"], retries=1)
    with SshRunner(t, creds, sleep=lambda s: None) as r:
        assert r.run("echo via-bastion").stdout == "via-bastion\n"
        assert r.bastion_host_key == host_key(services)  # pinned on first contact, reported
    assert _sent(services) == before + 1
    # a bastion showing another key than its pin: stopped before the master is even reached
    bad = SshRunner(SshTarget("127.0.0.1", port, user=services["KK3_SSH_PASSWORD_USER"],
                              host_key=host_key(services), bastion_host="127.0.0.1",
                              bastion_port=port, bastion_user=services["KK3_SSH_USER"],
                              bastion_host_key=OTHER_KEY, retries=1), creds, sleep=lambda s: None)
    with pytest.raises(HostKeyChanged, match="bastion"):
        bad.connect()
    assert _sent(services) == before + 1


def test_first_contact_installs_the_stack_key_and_the_password_is_used_once(services):
    prov = HostKeyPinProvider()
    before = _sent(services)
    created = prov.create(password_props(services, loginKeyComment="kimi-k3:test/trust"))
    outs = created.outs
    try:
        assert outs["hostKey"] == host_key(services)
        assert outs["hostKeyFingerprint"] == fingerprint(host_key(services))
        assert outs["loginKey"].startswith("-----BEGIN OPENSSH PRIVATE KEY-----")
        assert outs["loginPublicKey"].startswith("ssh-ed25519 ")
        assert outs["loginPublicKey"].endswith(" kimi-k3:test/trust")
        assert _authorized_keys(services).splitlines().count(outs["loginPublicKey"]) == 1
        assert _sent(services) == before + 1
        # from now on: the stack's key, no password at all (refresh, update, later steps)
        no_password = {**outs, "sshPassword": ""}
        read = prov.read(created.id, no_password)
        assert read.outs["loginKey"] == outs["loginKey"] and read.outs["hostKey"] == outs["hostKey"]
        updated = prov.update(created.id, outs, {**password_props(services), "connectTimeoutS": 9})
        assert updated.outs["loginKey"] == outs["loginKey"]
        step = SshRunner(SshTarget(services["KK3_SSH_HOST"], int(services["KK3_SSH_PORT"]),
                                   user=services["KK3_SSH_PASSWORD_USER"], host_key=outs["hostKey"]),
                         SshCredentials(private_key=outs["loginKey"]))
        with step:
            assert step.run("id -un").stdout.strip() == services["KK3_SSH_PASSWORD_USER"]
        assert _sent(services) == before + 1
        # a second stack on the same master gets its own line; neither touches the other's
        other = prov.create(password_props(services, loginKeyComment="kimi-k3:test/other"))
        prov.delete(other.id, other.outs)
        assert outs["loginPublicKey"] in _authorized_keys(services)
        assert other.outs["loginPublicKey"] not in _authorized_keys(services)
    finally:
        prov.delete(created.id, outs)
    assert outs["loginPublicKey"] not in _authorized_keys(services)


def test_configured_pin_is_checked_before_the_password(services):
    prov = HostKeyPinProvider()
    before = _sent(services)
    with pytest.raises(HostKeyChanged):
        prov.create(password_props(services, pinnedHostKey=fingerprint(OTHER_KEY)))
    assert _sent(services) == before
    created = prov.create(password_props(services, pinnedHostKey=fingerprint(host_key(services))))
    try:
        assert created.outs["hostKey"] == host_key(services)
        # a later config pin that disagrees with the state's pin is refused, not re-pinned
        with pytest.raises(HostKeyChanged, match="not the key pinned"):
            prov.update(created.id, created.outs,
                        password_props(services, pinnedHostKey=OTHER_KEY))
    finally:
        prov.delete(created.id, created.outs)
