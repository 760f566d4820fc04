"""`accept --pin` (components/accept/pin.py): an https endpoint trusted by its public key, the
value a ctyun-hcc stack prints for its self-signed certificate. Against kimi-k3's own TLS front
(components/ctyun_hcc/tls_proxy.py, run here as a plain process) in front of the vLLM double:
the right pin runs the checks over TLS; a wrong one sends nothing (no request, no key); a
certificate swapped after the pin was checked fails the handshake; a bad pin is refused in one
line before anything is sent."""

import asyncio
import os
import socket
import ssl
import subprocess
import sys
import time
from pathlib import Path

import pytest

from components.accept import client as accept_client
from components.accept.pin import PIN, pinned_certificate, spki_pin
from tests.doubles.vllm_openai import DoubleConfig, VllmOpenAIDouble

ROOT = Path(__file__).resolve().parents[2]
KEY = "kk3-pin-test-key-0123456789abcdefghij"
GUARD = ("components.inference.kk3_api_guard.ApiKeyGuard",)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _self_signed(d: Path, name: str):
    """What tls_step.py makes on the master: ECDSA P-256, SAN the public address."""
    cert, key = d / f"{name}.pem", d / f"{name}.key"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                    "-nodes", "-days", "2", "-subj", "/CN=kimi-k3", "-addext",
                    "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True)
    return cert, key


def _openssl_pin(cert: Path) -> str:
    """The pin as tls_step.py's DESCRIBE computes it on the master (openssl, not our code)."""
    pub = subprocess.run(["openssl", "x509", "-in", str(cert), "-pubkey", "-noout"],
                         capture_output=True, check=True).stdout
    der = subprocess.run(["openssl", "pkey", "-pubin", "-outform", "der"], input=pub,
                         capture_output=True, check=True).stdout
    dgst = subprocess.run(["openssl", "dgst", "-sha256", "-binary"], input=der,
                          capture_output=True, check=True).stdout
    import base64
    return "sha256//" + base64.b64encode(dgst).decode()


class Front:
    """tls_proxy.py on a loopback port (no privilege drop: `--user ''`)."""

    def __init__(self, port, upstream_port, cert, key):
        self.port = port
        self.p = subprocess.Popen(
            [sys.executable, str(ROOT / "components/ctyun_hcc/tls_proxy.py"), "--listen",
             f"127.0.0.1:{port}", "--upstream", f"127.0.0.1:{upstream_port}", "--cert", str(cert),
             "--key", str(key), "--user", ""], stderr=subprocess.PIPE, text=True)
        assert "kk3-tls-proxy:" in self.p.stderr.readline()

    def stop(self):
        self.p.terminate()
        self.p.wait(10)
        self.p.stderr.close()


@pytest.fixture
def rig(tmp_path):
    seen = []
    with VllmOpenAIDouble(DoubleConfig(api_key=KEY, middleware=GUARD, ttft_s=0.005, tpot_s=0.001,
                                       log=seen.append)) as d:
        cert, key = _self_signed(tmp_path, "a")
        port = _free_port()
        front = Front(port, d.port, cert, key)
        try:
            yield d, front, cert, seen, tmp_path
        finally:
            front.stop()
            accept_client.use_pinned_certificate(None)


def _accept(port, pin, *extra, host="127.0.0.1"):
    return subprocess.run(
        [sys.executable, "-m", "components", "accept", "--endpoint", f"https://{host}:{port}/v1",
         "--model", "Kimi-K3", "--api-key-env", "K", "--pin", pin, "--requests", "2",
         "--concurrency", "1", "--max-tokens", "16", "--timeout", "30", *extra],
        capture_output=True, text=True, cwd=ROOT, env={**os.environ, "K": KEY}, timeout=300)


def test_the_right_pin_runs_every_check_over_tls(rig):
    """By a name the certificate does not carry (its SAN is IP:127.0.0.1): the key is the
    identity, as with the printed `curl -k --pinnedpubkey`."""
    d, front, cert, seen, _ = rig
    pin = _openssl_pin(cert)
    assert PIN.fullmatch(pin) and spki_pin(ssl.PEM_cert_to_DER_cert(cert.read_text())) == pin
    r = _accept(front.port, pin, host="localhost")
    assert r.returncode == 0 and r.stdout.splitlines()[-1] == "PASS", r.stdout + r.stderr
    assert d.chat_requests > 0


def test_a_wrong_pin_sends_nothing(rig, tmp_path):
    d, front, cert, seen, _ = rig
    other, _ = _self_signed(tmp_path, "other")
    r = _accept(front.port, _openssl_pin(other))
    assert r.returncode == 1 and r.stdout == ""
    assert f"the endpoint's public key is {_openssl_pin(cert)}, not the pinned" in r.stderr
    assert "nothing was sent" in r.stderr and KEY not in r.stderr
    assert seen == [] and d.chat_requests == 0  # not one HTTP request reached vLLM


@pytest.mark.parametrize("pin,why", [
    ("sha256//short=", "is not a public-key pin"),
    ("SHA256:" + "A" * 43, "is not a public-key pin"),
    ("sha256//" + "A" * 43 + "=\nurl = x", "is not a public-key pin"),
])
def test_a_bad_pin_is_refused_in_one_line_before_anything(rig, pin, why):
    d, front, _, seen, _ = rig
    r = _accept(front.port, pin)
    assert r.returncode == 2 and why in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert seen == []


def test_pin_and_ca_cert_together_or_on_plain_http_are_refused(rig):
    d, front, cert, seen, _ = rig
    both = _accept(front.port, _openssl_pin(cert), "--ca-cert", str(cert))
    assert both.returncode == 2 and "give one" in both.stderr
    with pytest.raises(ValueError, match="https endpoint only"):
        pinned_certificate(d.url, _openssl_pin(cert))
    assert seen == []


def test_a_certificate_swapped_after_the_pin_was_checked_fails_the_handshake(rig):
    """The pinned certificate is the only trust anchor of every later connection: a server
    that presents another one (without the pinned key) is refused, with no request sent."""
    d, front, cert, seen, tmp = rig
    pem = pinned_certificate(f"https://127.0.0.1:{front.port}/v1", _openssl_pin(cert))
    accept_client.use_pinned_certificate(pem)
    front.stop()
    other_cert, other_key = _self_signed(tmp, "swapped")
    deadline = time.monotonic() + 10
    while True:  # the port is free again once the old front's socket closed
        try:
            swapped = Front(front.port, d.port, other_cert, other_key)
            break
        except AssertionError:
            assert time.monotonic() < deadline
    try:
        async def probe():
            async with accept_client.Client(f"https://127.0.0.1:{front.port}/v1", KEY, 10) as c:
                return await c.request("GET", "/models")
        a = asyncio.run(probe())
        assert a.status is None and "CERTIFICATE_VERIFY_FAILED" in (a.error or ""), a.describe()
        assert seen == []
    finally:
        swapped.stop()
