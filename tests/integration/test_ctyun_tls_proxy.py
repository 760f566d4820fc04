"""TLS in front of vLLM on the CTyun master (issue 21 item 1): the `TlsProxy` step over the real
local sshd (this machine plays the master), in front of the vLLM server double.

Shown: a self-signed certificate made on the master (key 0600, never sent back), the service
running as `nobody`, /health and the whole `accept` run over TLS with the printed pin or the
certificate as CA, a wrong pin refused, plain HTTP and TLS 1.1 refused on the TLS port, the
certificate kept on a re-run and remade for a new address, a user's own certificate served as
given, and nothing left after delete. The systemd path is the same commands under
`systemctl` (the unit is checked with systemd-analyze); this master has no systemd as PID 1.
"""

import os
import socket
import ssl
import subprocess
import sys
from pathlib import Path

import pytest

from components.ctyun_hcc.tls_step import TlsProxyProvider
from tests.doubles.vllm_openai import DoubleConfig, VllmOpenAIDouble
from tests.integration.slurm_env import host_key, ssh_props

ROOT = Path(__file__).resolve().parents[2]
KEY = "kk3-tls-test-key-0123456789abcdefghij"
GUARD = ("components.inference.kk3_api_guard.ApiKeyGuard",)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def upstream():
    with VllmOpenAIDouble(DoubleConfig(api_key=KEY, middleware=GUARD, ttft_s=0.01,
                                       tpot_s=0.001)) as d:
        yield d


def props(services, ws, upstream, port, **kw):
    kw.setdefault("tlsDir", str(ws / "etc" / "kimi-k3" / "tls"))  # the master's /etc/kimi-k3/tls
    return ssh_props(services, hostKey=host_key(services), workDir=str(ws / "home" / "kimi-k3"),
                     listenPort=port, upstreamHost="127.0.0.1", upstreamPort=upstream.port,
                     publicHost="127.0.0.1",
                     proxyPy=(ROOT / "components/ctyun_hcc/tls_proxy.py").read_text(),
                     timeoutS=60, pollIntervalS=0.5, **kw)


def curl(*args):
    return subprocess.run(["curl", "-sS", "--max-time", "10", "-o", "/dev/null",
                           "-w", "%{http_code}", *args], capture_output=True, text=True)


def test_self_signed_tls_in_front_of_vllm(services, workspace, upstream, tmp_path):
    ws, port = workspace, free_port()
    prov = TlsProxyProvider()
    p = props(services, ws, upstream, port)
    created = prov.create(p)
    outs = created.outs
    try:
        assert outs["selfSigned"] and outs["how"] == "process" and outs["running"]
        pin = outs["pinSha256"]
        assert pin.startswith("sha256//") and len(outs["fingerprintSha256"].split(":")) == 32
        tls_dir = ws / "etc" / "kimi-k3" / "tls"
        # on the master's own disk: nothing of it in the work directory every node shares
        assert not (ws / "home" / "kimi-k3" / "tls").exists()
        assert oct((tls_dir / "key.pem").stat().st_mode & 0o777) == "0o600"
        assert oct(tls_dir.parent.stat().st_mode & 0o777) == "0o755"
        assert oct(tls_dir.stat().st_mode & 0o777) == "0o700"
        # the TLS key never comes back (outs also carry the SSH inputs, the login key a secret)
        tls_key = (tls_dir / "key.pem").read_text()
        assert tls_key.splitlines()[1] not in str(outs) and not outs.get("privateKeyPem")
        # the service runs unprivileged once listening
        pid = (tls_dir / "proxy.pid").read_text().strip()
        uid = next(ln.split()[1] for ln in Path(f"/proc/{pid}/status").read_text().splitlines()
                   if ln.startswith("Uid:"))
        assert uid == "65534"
        url = f"https://127.0.0.1:{port}"
        # the printed snippet's way: pin the public key
        assert curl("-k", "--pinnedpubkey", pin, url + "/health").stdout == "200"
        bad = curl("-k", "--pinnedpubkey", "sha256//" + "A" * 43 + "=", url + "/health")
        assert bad.returncode == 90 and bad.stdout == "000"
        ca = tmp_path / "k3.pem"
        ca.write_text(outs["certificate"])
        assert curl("--cacert", str(ca), url + "/health").stdout == "200"
        assert curl(url + "/health").returncode != 0          # not a public CA: refused
        assert curl(f"http://127.0.0.1:{port}/health").stdout != "200"  # no plain HTTP
        old = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        old.check_hostname, old.verify_mode = False, ssl.CERT_NONE
        old.minimum_version = old.maximum_version = ssl.TLSVersion.TLSv1_1
        with pytest.raises((ssl.SSLError, OSError)):
            with socket.create_connection(("127.0.0.1", port), timeout=5) as raw:
                old.wrap_socket(raw).close()
        # the whole acceptance run through it (the key guarded end to end)
        r = subprocess.run([sys.executable, "-m", "components", "accept", "--endpoint", url + "/v1",
                            "--model", "Kimi-K3", "--api-key-env", "K", "--ca-cert", str(ca),
                            "--requests", "4", "--concurrency", "2", "--max-tokens", "32",
                            "--timeout", "30"], capture_output=True, text=True, cwd=ROOT,
                           env={**os.environ, "K": KEY}, timeout=300)
        assert r.returncode == 0 and r.stdout.splitlines()[-1] == "PASS", r.stdout + r.stderr
        # a re-run keeps the certificate; a new address gets a new one
        again = prov.update(created.id, outs, p).outs
        assert again["pinSha256"] == pin
        moved = prov.update(created.id, outs, {**p, "publicHost": "127.0.0.2"}).outs
        assert moved["pinSha256"] != pin
        assert prov.read(created.id, moved).outs["running"]
    finally:
        prov.delete(created.id, outs)
    assert not (ws / "etc" / "kimi-k3" / "tls").exists()
    assert curl("-k", f"https://127.0.0.1:{port}/health").returncode != 0


def test_a_proxy_an_earlier_stack_ran_from_the_work_dir_is_moved_off_it(services, workspace,
                                                                          upstream):
    """Stacks before tlsDir kept the proxy and its key in `<workDir>/tls` (the shared file
    system): the next apply stops that proxy (else the port stays taken), removes the directory
    and serves from tlsDir on the same port."""
    ws, port = workspace, free_port()
    legacy = ws / "home" / "kimi-k3" / "tls"
    prov = TlsProxyProvider()
    before = prov.create(props(services, ws, upstream, port, tlsDir=str(legacy)))
    old_pid = (legacy / "proxy.pid").read_text().strip()
    assert (legacy / "key.pem").exists() and Path(f"/proc/{old_pid}").exists()
    p = props(services, ws, upstream, port)
    try:
        after = prov.update(before.id, before.outs, p).outs
        assert not legacy.exists() and not Path(f"/proc/{old_pid}").exists()
        assert after["running"] and after["pinSha256"] != before.outs["pinSha256"]
        assert curl("-k", "--pinnedpubkey", after["pinSha256"],
                    f"https://127.0.0.1:{port}/health").stdout == "200"
    finally:
        prov.delete(before.id, {**before.outs, **p})
    assert not (ws / "etc" / "kimi-k3" / "tls").exists()


def test_a_given_certificate_is_served_as_given(services, workspace, upstream, tmp_path):
    ws, port = workspace, free_port()
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:P-256", "-nodes", "-days", "2", "-subj", "/CN=k3.example.com",
                    "-addext", "subjectAltName=DNS:k3.example.com", "-keyout", str(tmp_path / "k.pem"),
                    "-out", str(tmp_path / "c.pem")], check=True, capture_output=True)
    given = (tmp_path / "c.pem").read_text()
    prov = TlsProxyProvider()
    created = prov.create(props(services, ws, upstream, port, certificatePem=given,
                                privateKeyPem=(tmp_path / "k.pem").read_text()))
    try:
        assert not created.outs["selfSigned"] and created.outs["certificate"].strip() == given.strip()
        r = curl("--cacert", str(tmp_path / "c.pem"), "--resolve", f"k3.example.com:{port}:127.0.0.1",
                 f"https://k3.example.com:{port}/health")
        assert r.stdout == "200", r.stderr
    finally:
        prov.delete(created.id, created.outs)


def test_the_systemd_unit_is_valid(tmp_path):
    p = {"workDir": "/home/kimi-k3", "listenPort": 443, "upstreamHost": "10.0.0.5",
         "upstreamPort": 11025, "runAs": "nobody"}
    unit = tmp_path / "kimi-k3-tls.service"
    unit.write_text(TlsProxyProvider().unit_text(p) + "\n")
    r = subprocess.run(["systemd-analyze", "verify", "--man=no", str(unit)],
                       capture_output=True, text=True)
    # on a machine without systemd as PID 1 verify still parses the unit; only lines about
    # the unit's own syntax count
    assert "kimi-k3-tls.service:" not in r.stderr, \
        r.stderr
    assert "ExecStart=/usr/bin/env python3 /etc/kimi-k3/tls/kk3_tls_proxy.py --listen 0.0.0.0:443 --upstream " \
           "10.0.0.5:11025" in unit.read_text()
