"""An offline plan imports only what it uses: the CTyun program's modules leave paramiko (SSH)
and requests (the CTyun API client) to the code that opens a connection or sends a call, which a
plan never does (components/ctyun_hcc/ssh.py, api/transport.py; bench/plan_speed.py times it).
A fresh interpreter, since other tests import both."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import sys
from components.offline.runner import run_program
run = run_program("ctyun-hcc")
assert run.resources, "the program registered nothing"
print(" ".join(sorted(m for m in ("paramiko", "requests", "invoke") if m in sys.modules)))
"""


def test_the_ctyun_plan_imports_neither_paramiko_nor_requests():
    out = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "", f"the offline ctyun-hcc plan imported {out}"


def test_remote_errors_still_name_paramiko_errors_when_matched():
    import paramiko

    from components.ctyun_hcc import ssh

    assert paramiko.SSHException in ssh.remote_errors()
    assert ssh.REMOTE_ERRORS == ssh.remote_errors()  # the module attribute, built on use
    try:
        raise paramiko.SSHException("lost")
    except ssh.remote_errors() as e:
        assert str(e) == "lost"
