"""A secret in streamed SSH output (`logs` on ctyun-hcc) is replaced whatever the reads' cuts.

`SshRunner.stream` hands output over read by read; each read redacted on its own let a secret
that straddled two reads through (components/ctyun_hcc/ssh_redact.py). The hostile input: the
secret split at every offset, in two reads and in one-byte reads, multi-byte characters cut,
the pty's `\\r\\n` form of a PEM key, a stream that ends inside a secret.
"""

import pytest

from components.ctyun_hcc import ssh_redact
from components.ctyun_hcc.ssh import SshCredentials, SshRunner, SshTarget
from components.ctyun_hcc.ssh_redact import SHOWN, StreamRedactor

KEY = ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAAB\n"
       "AAAAMwAAAAtzc2gtZWQyNTUxOQAAACBu3WbGj5H9u1lVqkZ5vW2s\n-----END OPENSSH PRIVATE KEY-----\n")
PASSWORD = "Root-pässword-9"  # non-ASCII: a character cut between reads too


def run_through(redactor, reads):
    return "".join(redactor.feed(r) for r in reads) + redactor.end()


def cuts(data: bytes, at: int):
    return [data[:at], data[at:]]


@pytest.mark.parametrize("secret", [PASSWORD, KEY, KEY.replace("\n", "\r\n")],
                         ids=["password", "pem", "pem-under-pty"])
def test_a_secret_split_at_every_offset_is_replaced(secret):
    data = f"log line\nbefore {secret} after\n".encode()
    start = data.index(secret.encode())
    for at in range(start, start + len(secret.encode()) + 1):
        shown = run_through(StreamRedactor([PASSWORD, KEY]), cuts(data, at))
        assert shown == f"log line\nbefore {SHOWN} after\n", at
    one_byte = run_through(StreamRedactor([PASSWORD, KEY]), [bytes([b]) for b in data])
    assert one_byte == f"log line\nbefore {SHOWN} after\n"


def test_reads_redacted_one_by_one_leak_the_split_secret():
    """What the guard is for: per-read redaction shows both halves, which join on the screen."""
    data = f"x {PASSWORD} y".encode()
    at = data.index(PASSWORD.encode()) + 4
    old = "".join(ssh_redact.redact(r.decode(errors="replace"), [PASSWORD])
                  for r in cuts(data, at))
    assert PASSWORD in old
    assert PASSWORD[:4] not in run_through(StreamRedactor([PASSWORD]), cuts(data, at))


def test_output_that_cannot_start_a_secret_is_not_held_back():
    r = StreamRedactor([KEY, PASSWORD])
    assert r.feed(b"INFO serving on :8000\n") == "INFO serving on :8000\n"
    assert r.feed(b"tail ends with Root-p") == "tail ends with "  # could be the password
    assert r.feed("ässwordless\n".encode()) == "Root-pässwordless\n"
    assert r.end() == ""


def test_a_stream_ending_inside_a_secret_does_not_show_its_start():
    r = StreamRedactor([KEY])
    assert r.feed(KEY[:40].encode()) == ""
    assert r.end() == SHOWN
    short = StreamRedactor([KEY])
    assert short.feed(b"--") == "" and short.end() == "--"  # too short to be anything's start


def test_a_character_cut_between_reads_is_not_mangled():
    data = "naïve — 東京\n".encode()
    for at in range(len(data) + 1):
        assert run_through(StreamRedactor([PASSWORD]), cuts(data, at)) == data.decode()


def test_the_longer_of_two_overlapping_secrets_is_replaced_whole():
    assert ssh_redact.redact("a sk-abc-longer b", ssh_redact.variants(["sk-abc", "sk-abc-longer"])) \
        == f"a {SHOWN} b"


class ChannelDouble:
    """paramiko Channel's receiving side (recv_ready/recv/recv_stderr_ready/recv_stderr/
    exit_status_ready/recv_exit_status, paramiko/channel.py), handing over the given reads."""

    def __init__(self, out_reads, err_reads):
        self.out, self.err = list(out_reads), list(err_reads)

    def settimeout(self, t):
        pass

    def exec_command(self, cmd):
        pass

    def shutdown_write(self):
        pass

    def close(self):
        pass

    def recv_ready(self):
        return bool(self.out)

    def recv(self, n):
        return self.out.pop(0)

    def recv_stderr_ready(self):
        return bool(self.err)

    def recv_stderr(self, n):
        return self.err.pop(0)

    def exit_status_ready(self):
        return True

    def recv_exit_status(self):
        return 0


class TransportDouble:
    def __init__(self, channel):
        self.channel = channel

    def open_session(self, timeout=None):
        return self.channel


def test_the_runner_stream_redacts_across_reads_on_both_streams():
    data = f"a {PASSWORD} b\n".encode()
    start = data.index(PASSWORD.encode())
    for at in range(start, start + len(PASSWORD.encode()) + 1):
        runner = SshRunner(SshTarget("192.0.2.1"), SshCredentials(password=PASSWORD))
        runner._transport = TransportDouble(ChannelDouble(cuts(data, at), cuts(data, at)))
        runner.connect = lambda: runner
        got_out, got_err = bytearray(), bytearray()
        assert runner.stream("tail -F log", got_out.extend, got_err.extend) == 0
        assert got_out.decode() == got_err.decode() == f"a {SHOWN} b\n", at
