"""Streamed output over the real sshd (`logs -f` on ctyun-hcc): a secret the remote side writes
in two pieces, which arrive as two reads, is still replaced, with and without a pty (the pty
turns the PEM key's line ends into `\\r\\n`). The pure cases, every offset, are in
tests/unit/test_security_ssh_stream.py."""

from pathlib import Path

import pytest

from components.ctyun_hcc.ssh import SshCredentials, SshRunner, SshTarget
from components.ctyun_hcc.ssh_redact import SHOWN


@pytest.mark.parametrize("pty", [False, True], ids=["pipe", "pty"])
def test_a_secret_written_in_two_pieces_is_replaced(services, pty):
    key = Path(services["KK3_SSH_KEY"]).read_text()
    runner = SshRunner(SshTarget(services["KK3_SSH_HOST"], int(services["KK3_SSH_PORT"])),
                       SshCredentials(private_key=key), sleep=lambda s: None)
    cut = len(key) // 2
    # the key read back from its file in two pieces, 0.3 s apart: two reads on this side
    cmd = (f"head -c {cut} {services['KK3_SSH_KEY']}; sleep 0.3; "
           f"tail -c +{cut + 1} {services['KK3_SSH_KEY']}; echo done")
    got = bytearray()
    with runner:
        assert runner.stream(cmd, got.extend, got.extend, pty=pty) == 0
    shown = got.decode()
    assert shown.replace("\r\n", "\n") == f"{SHOWN}done\n"
    assert key.splitlines()[1][:16] not in shown
