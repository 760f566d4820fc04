"""Issue 21 item 1 on ctyun-hcc: a public endpoint gets TLS on the master (tls_step.TlsProxy),
self-signed unless a certificate is given; the security group opens the TLS port, not vLLM's;
plain HTTP only with kimi-k3:allowPlaintext (warned). The program runs under the mock engine;
the proxy itself is tested over the real sshd (tests/integration/test_ctyun_tls_proxy.py)."""

import json
import subprocess

import pytest
from pulumi import RunError

from components.offline.runner import run_program

PUBLIC = {"kimi-k3:allowedCidrs": "203.0.113.0/24"}


def _one(run, suffix):
    return next(r for r in run.resources if r["type"].endswith(suffix))


def _pem(tmp_path):
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                    "-nodes", "-days", "2", "-subj", "/CN=k3.example.com", "-keyout",
                    str(tmp_path / "k.pem"), "-out", str(tmp_path / "c.pem")],
                   check=True, capture_output=True)
    return (tmp_path / "c.pem").read_text(), (tmp_path / "k.pem").read_text()


def test_a_public_endpoint_gets_self_signed_tls_on_the_master():
    run = run_program("ctyun-hcc", PUBLIC)
    proxy = _one(run, ":TlsProxy")
    assert proxy["inputs"]["listenPort"] == 443 and proxy["inputs"]["upstreamPort"] == 11025
    assert proxy["inputs"]["certificatePem"] == "" and proxy["parent"] == "kimi-k3-inference"
    # the group opens the TLS port to allowedCidrs; vLLM's own port stays inside
    assert _one(run, ":HccSecurityGroup")["inputs"]["endpointPort"] == 443
    assert run.outputs["endpoint"] == "https://198.51.100.10:443/v1"
    assert "-k --pinnedpubkey 'sha256//" in run.outputs["curl"]
    assert "https://198.51.100.10:443/v1/chat/completions" in run.outputs["curl"]
    assert run.outputs["tls"]["selfSigned"] and run.outputs["tls"]["port"] == 443
    assert any("opens the model endpoint over TLS (TCP 443)" in w for w in run.warnings)


def test_plain_http_only_when_chosen_and_warned():
    run = run_program("ctyun-hcc", {**PUBLIC, "kimi-k3:allowPlaintext": "true"})
    assert not [r for r in run.resources if r["type"].endswith(":TlsProxy")]
    assert _one(run, ":HccSecurityGroup")["inputs"]["endpointPort"] == 11025
    assert run.outputs["endpoint"].startswith("http://") and "tls" not in run.outputs
    assert any("public and plain HTTP" in w for w in run.warnings)


def test_a_private_endpoint_stays_plain_without_a_word():
    run = run_program("ctyun-hcc", {"kimi-k3:allowedCidrs": "10.0.0.0/8"})
    assert not [r for r in run.resources if r["type"].endswith(":TlsProxy")]
    assert not any("plain HTTP" in w for w in run.warnings)


def test_a_given_certificate_is_used_and_its_key_stays_secret(tmp_path):
    cert, key = _pem(tmp_path)
    run = run_program("ctyun-hcc", {**PUBLIC, "kimi-k3:tlsCertificate": cert,
                                    "kimi-k3:tlsPrivateKey": key, "kimi-k3:tlsPort": "8443"})
    proxy = _one(run, ":TlsProxy")
    assert proxy["inputs"]["certificatePem"] == cert and proxy["inputs"]["listenPort"] == 8443
    text = json.dumps({"r": run.resources, "o": run.outputs, "w": run.warnings})
    assert "PRIVATE KEY" not in text and key.splitlines()[1] not in text
    assert "--pinnedpubkey" not in run.outputs["curl"]  # a CA-issued one verifies as usual


@pytest.mark.parametrize("extra,words", [
    ({"kimi-k3:tlsCertificate": "not a pem"}, "kimi-k3:tlsCertificate='not a pem' is not PEM"),
    ({"kimi-k3:tlsPrivateKey": "x"}, "kimi-k3:tlsCertificate (not set) is needed with kimi-k3:tlsPrivateKey"),
    ({"kimi-k3:tlsPort": "22"}, "kimi-k3:tlsPort=22 collides"),
    ({"kimi-k3:tlsPort": "11025"}, "kimi-k3:tlsPort=11025 collides"),
    ({"kimi-k3:tlsPort": "13389"}, "kimi-k3:tlsPort=13389 collides"),
    ({"kimi-k3:tlsPort": "0"}, "kimi-k3:tlsPort=0"),
])
def test_tls_refusals_name_the_key(extra, words):
    with pytest.raises(RunError) as e:
        run_program("ctyun-hcc", {**PUBLIC, **extra})
    assert str(e.value).startswith(words), str(e.value)


def test_a_certificate_without_its_key_and_a_bad_key_are_refused_without_showing_it(tmp_path):
    cert, key = _pem(tmp_path)
    with pytest.raises(RunError, match="kimi-k3:tlsPrivateKey \\(not set\\) is needed with kimi-k3:tlsCertificate"):
        run_program("ctyun-hcc", {**PUBLIC, "kimi-k3:tlsCertificate": cert})
    with pytest.raises(RunError) as e:
        run_program("ctyun-hcc", {**PUBLIC, "kimi-k3:tlsCertificate": cert,
                                  "kimi-k3:tlsPrivateKey": "secret-but-not-pem\n"})
    assert str(e.value).startswith("kimi-k3:tlsPrivateKey=<not shown> is not a PEM private key")
    assert "secret-but-not-pem" not in str(e.value)


def test_tls_port_without_tls_and_certificate_with_plaintext_are_refused(tmp_path):
    with pytest.raises(RunError, match="kimi-k3:tlsPort=8443 has no TLS to serve"):
        run_program("ctyun-hcc", {"kimi-k3:tlsPort": "8443"})
    cert, key = _pem(tmp_path)
    with pytest.raises(RunError, match="conflicts with kimi-k3:allowPlaintext"):
        run_program("ctyun-hcc", {**PUBLIC, "kimi-k3:allowPlaintext": "true",
                                  "kimi-k3:tlsCertificate": cert, "kimi-k3:tlsPrivateKey": key})


def _relay_case(max_connections, client):
    """Run tls_proxy.Relay (plain TCP: TLS is asyncio's, the bounds are the relay's) in front
    of an upstream that reads and never answers; `client(port)` is the hostile peer."""
    import asyncio

    from components.ctyun_hcc.tls_proxy import Relay

    async def main():
        async def silent(reader, writer):
            await reader.read()      # takes what comes, answers nothing, never closes
            await asyncio.sleep(30)

        up = await asyncio.start_server(silent, "127.0.0.1", 0)
        relay = Relay(up.sockets[0].getsockname()[:2], max_connections, 0.2, log=lambda m: None)
        front = await asyncio.start_server(relay.handle, "127.0.0.1", 0)
        try:
            return await asyncio.wait_for(client(front.sockets[0].getsockname()[1]), 5)
        finally:
            front.close()
            up.close()

    return asyncio.run(main())


def test_a_half_closed_peer_is_dropped_after_the_idle_limit():
    import asyncio

    async def client(port):
        r, w = await asyncio.open_connection("127.0.0.1", port)
        w.write(b"GET /health HTTP/1.1\r\n\r\n")
        w.write_eof()                # its side ends; vLLM's side stays open and silent
        return await r.read()        # returns b"" only when the relay closes the connection

    assert _relay_case(8, client) == b""


def test_connections_over_the_limit_are_closed_at_once():
    import asyncio

    async def client(port):
        first = await asyncio.open_connection("127.0.0.1", port)
        await asyncio.sleep(0.05)
        r, _ = await asyncio.open_connection("127.0.0.1", port)
        data = await asyncio.wait_for(r.read(), 1)   # closed before the idle limit
        first[1].close()
        return data

    assert _relay_case(1, client) == b""


def test_one_address_cannot_hold_every_connection():
    """A peer that opens connections and sends nothing (slowloris) gets its share of the slots,
    not all of them: past --max-per-peer its next one is closed at once, while another address
    is still served. The upstream greets every connection the relay makes, so "served" and
    "closed" are told apart by what is read, not by time."""
    import asyncio

    from components.ctyun_hcc.tls_proxy import Relay

    async def main():
        async def greets(reader, writer):  # until the client's side ends
            writer.write(b"up\n")
            await writer.drain()
            await reader.read()
            writer.close()

        up = await asyncio.start_server(greets, "127.0.0.1", 0)
        relay = Relay(up.sockets[0].getsockname()[:2], 8, 30, log=lambda m: None, max_per_peer=2)
        front = await asyncio.start_server(relay.handle, "0.0.0.0", 0)
        port = front.sockets[0].getsockname()[1]

        async def first_line(source):
            r, w = await asyncio.open_connection("127.0.0.1", port, local_addr=(source, 0))
            return await asyncio.wait_for(r.readline(), 3), w

        try:
            held = [await first_line("127.0.0.1") for _ in range(2)]
            over, _ = await first_line("127.0.0.1")
            other, _ = await first_line("127.0.0.2")
            held[0][1].close()
            await asyncio.sleep(0.2)  # the relay sees the close and frees the slot
            again, _ = await first_line("127.0.0.1")
            return [h for h, _ in held], over, other, again, dict(relay.by_peer)
        finally:
            front.close()
            up.close()

    held, over, other, again, by_peer = asyncio.run(main())
    assert held == [b"up\n", b"up\n"] and over == b"" and other == b"up\n" and again == b"up\n"
    assert by_peer == {"127.0.0.1": 2, "127.0.0.2": 1}


def test_the_open_files_limit_is_raised_to_the_hard_limit():
    """With the common soft limit (here 256, hard 4096) a thousand unfinished handshakes would
    exhaust the proxy's descriptors; it raises the soft limit to the hard one (at most 65536),
    in a child so this process keeps its own."""
    import subprocess
    import sys

    code = ("import resource; from components.ctyun_hcc.tls_proxy import raise_open_files_limit as r; "
            "resource.setrlimit(resource.RLIMIT_NOFILE, (256, 4096)); print(r(), "
            "resource.getrlimit(resource.RLIMIT_NOFILE)[0])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["4096", "4096"]
    code = code.replace("(256, 4096)", "(8192, 8192)")  # never lowered
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["8192", "8192"]


def test_the_per_peer_default_is_a_quarter():
    from components.ctyun_hcc.tls_proxy import Relay

    assert Relay(("127.0.0.1", 1), 1024, 900).max_per_peer == 256
    assert Relay(("127.0.0.1", 1), 2, 900).max_per_peer == 1


def test_accept_refuses_a_ca_file_without_a_certificate(tmp_path, capsys):
    from components.cli import main as cli
    from components.accept.client import use_ca_file

    bad = tmp_path / "k3.pem"
    bad.write_text("-----BEGIN CERTIFICATE-----\nnot base64 at all\n-----END CERTIFICATE-----\n")
    try:
        code = cli.main(["accept", "--endpoint", "https://203.0.113.5/v1", "--model", "K",
                         "--ca-cert", str(bad)])
    finally:
        use_ca_file(None)
    assert code == 2 and "--ca-cert" in capsys.readouterr().err
