"""Through a bastion against the real local sshd: the bastion logs in with the key the program
chose once (kimi-k3:sshBastionPrivateKey, else kimi-k3:sshPrivateKey) on every path: first
contact (HostKeyPin), its refresh, the service's create and delete, and destroy; it is never
sent the root password and never offered the stack's generated login key.

Same sshd for both hops, told apart by user: the bastion is `kk3pw`, the master `root` (the CI
user key is root's; the first test lets it log in as kk3pw too, in kk3pw's own authorized_keys,
for the test's length, as a user whose one key opens both hops). sshd's log is
the witness: `Accepted publickey for USER ... SHA256:<fingerprint>` per login, `password for
USER` per password received. Run under `flock /tmp/kk3-services.lock` (shared services).
"""

import io
import os
import pwd
from pathlib import Path

import paramiko
import pytest

from components.ctyun_hcc.bootstrap import HostKeyPinProvider
from components.ctyun_hcc.service import SlurmServiceProvider
from components.ctyun_hcc.ssh import SshError, fingerprint
from components.ctyun_hcc.serve_config import bastion_login_key, parse_serve_config
from components.inference.errors import ConfigError
from tests.integration.slurm_env import (
    host_key,
    no_leftovers,
    prepare,
    sshd_log_lines,
    squeue_names,
)


def _fp_of_private(text: str) -> str:
    key = paramiko.Ed25519Key.from_private_key(io.StringIO(text))
    return fingerprint(f"{key.get_name()} {key.get_base64()}")


def _count(env, prefix: str, fp: str) -> int:
    """sshd log lines starting a login with `prefix` (e.g. `Accepted publickey for root `) by
    the key of fingerprint `fp`."""
    path = Path(env.get("KK3_SSHD_LOG") or Path(env["KK3_CI_DIR"]) / "log" / "sshd.log")
    return sum(prefix in line and line.rstrip().endswith(fp)
               for line in path.read_text(errors="replace").splitlines())


@pytest.fixture
def user_key_for_kk3pw(services):
    """The CI user key also logs in as kk3pw while the test runs (then the line is removed)."""
    line = Path(services["KK3_SSH_KEY"] + ".pub").read_text().strip()
    keys = Path("~kk3pw").expanduser() / ".ssh" / "authorized_keys"
    before = keys.read_text() if keys.exists() else ""
    keys.parent.mkdir(mode=0o700, exist_ok=True)
    keys.write_text(before + line + "\n")
    # this runs as root: the directory and file stay kk3pw's, or kk3pw's own key install (the
    # HostKeyPin step, logged in as kk3pw) is refused in later tests
    owner = pwd.getpwnam("kk3pw")
    for p in (keys.parent, keys):
        os.chown(p, owner.pw_uid, owner.pw_gid)
    try:
        yield
    finally:
        keys.write_text("".join(f"{x}\n" for x in keys.read_text().splitlines() if x != line))


def test_bastion_gets_the_users_key_on_every_path_never_the_login_key(services, workspace,
                                                                      user_key_for_kk3pw,
                                                                      caplog):
    user_key = Path(services["KK3_SSH_KEY"]).read_text()
    user_fp = _fp_of_private(user_key)
    port = services["KK3_SSH_PORT"]
    cfg = parse_serve_config({"sshBastion": f"kk3pw@127.0.0.1:{port}", "sshPrivateKey": user_key})
    # the program's choice: no kimi-k3:sshBastionPrivateKey, so the user's own key
    bastion = {"sshBastion": cfg.ssh_bastion,
               "sshBastionPrivateKey": bastion_login_key(cfg, user_key, None)}
    password_before = sshd_log_lines(services, "password for kk3pw")
    bastion_before = _count(services, "Accepted publickey for kk3pw ", user_fp)

    pins = HostKeyPinProvider()
    service = SlurmServiceProvider()
    props = prepare(services, workspace)  # master: root with the user's key
    pin = pins.create({**{k: props[k] for k in ("sshHost", "sshPort", "sshUser", "sshPrivateKey",
                                               "connectTimeoutS", "commandTimeoutS")},
                       **bastion, "loginKeyComment": "kimi-k3:test/bastion"}).outs
    login_fp = _fp_of_private(pin["loginKey"])
    try:
        assert pin["bastionHostKey"] == host_key(services)
        # every later step: the stack's login key for the master, the user's key for the bastion
        steps = {**props, **bastion, "hostKey": pin["hostKey"],
                 "bastionHostKey": pin["bastionHostKey"], "sshPrivateKey": pin["loginKey"],
                 "sshPassword": ""}
        refreshed = pins.read("pin", pin).outs
        assert refreshed["loginKey"] == pin["loginKey"]
        created = service.create(steps)
        assert created.outs["jobId"] in squeue_names()
        service.delete(created.id, created.outs)
        no_leftovers(services)
        # state without a bastion key (as written before this rule): stops before connecting;
        # a delete says so and lets the teardown go on (the cluster's deletion ends the job)
        sessions = sshd_log_lines(services, "Accepted publickey for kk3pw")
        service.delete(created.id, {**created.outs, "sshBastionPrivateKey": ""})
        assert "no credentials for bastion" in caplog.text and "sshBastionPrivateKey" in \
            caplog.text and f"Slurm job {created.outs['jobId']} not stopped" in caplog.text
        assert sshd_log_lines(services, "Accepted publickey for kk3pw") == sessions
        with pytest.raises(SshError, match="no credentials for bastion.*sshBastionPrivateKey"):
            service.read(created.id, {**created.outs, "sshBastionPrivateKey": ""})
    finally:
        pins.delete("pin", pin)  # destroy: removes the login key line, through the bastion
    assert pin["loginPublicKey"] not in (Path("/root/.ssh/authorized_keys").read_text()
                                         if Path("/root/.ssh/authorized_keys").exists() else "")
    # the master logged in with the login key; the bastion never saw it, only the user's key
    assert _count(services, "Accepted publickey for root ", login_fp) >= 3
    assert _count(services, "Accepted publickey for kk3pw ", login_fp) == 0
    assert _count(services, "Accepted publickey for kk3pw ", user_fp) - bastion_before >= 5
    assert sshd_log_lines(services, "password for kk3pw") == password_before


def test_root_password_first_contact_through_a_bastion_needs_a_key(services):
    """Only the root password (no key): refused at config time; with a bastion key, the
    password goes to the master alone (the bastion is root here, the master kk3pw)."""
    port = services["KK3_SSH_PORT"]
    cfg = parse_serve_config({"sshBastion": f"root@127.0.0.1:{port}",
                              "sshBastionPrivateKey": "K"})
    with pytest.raises(ConfigError, match="kimi-k3:sshBastionPrivateKey"):
        parse_serve_config({"sshBastion": f"root@127.0.0.1:{port}"})
    with pytest.raises(ConfigError, match="kimi-k3:sshBastionPrivateKey"):
        bastion_login_key(cfg, None, None)
    bastion_key = Path(services["KK3_SSH_KEY"]).read_text()
    password = Path(services["KK3_SSH_PASSWORD_FILE"]).read_text().strip()
    root_password_before = sshd_log_lines(services, "password for root")
    bastion_fp = _fp_of_private(bastion_key)
    bastion_before = _count(services, "Accepted publickey for root ", bastion_fp)
    master_password_before = sshd_log_lines(services, "password for kk3pw")
    pins = HostKeyPinProvider()
    pin = pins.create({"sshHost": "127.0.0.1", "sshPort": int(port), "sshUser": "kk3pw",
                       "sshPassword": password, "sshBastion": cfg.ssh_bastion,
                       "sshBastionPrivateKey": bastion_login_key(cfg, None, bastion_key),
                       "connectTimeoutS": 10, "commandTimeoutS": 60,
                       "loginKeyComment": "kimi-k3:test/bastion-pw"}).outs
    try:
        assert pin["bastionHostKey"] == host_key(services)
        assert _count(services, "Accepted publickey for root ", bastion_fp) > bastion_before
    finally:
        pins.delete("pin", {**pin, "sshPassword": ""})
    assert sshd_log_lines(services, "password for kk3pw") == master_password_before + 1
    assert sshd_log_lines(services, "password for root") == root_password_before
