"""`accept --pin sha256//<base64>`: trust an https endpoint by its public key, the value a
ctyun-hcc stack prints for its self-signed certificate (output `tls.pinSha256`) and that its
printed `curl` line passes to `--pinnedpubkey`.

Why a pin and not only `--ca-cert`: the pin is one short value the user can compare by eye and
paste; the certificate is a PEM file to save first. Both end the same way: the run trusts that
one certificate and nothing else.

How (Python's ssl has no public-key callback): before any request, one TLS connection reads
the server's certificate without verifying it; the SHA-256 of its SubjectPublicKeyInfo (DER),
base64, is compared with the pin, the way curl computes `sha256//` pins (curl/curl
docs/cmdline-opts/pinnedpubkey.md, commit 0060f16a924d: "the public key ... sha256 hashed and
base64 encoded"). On a match that certificate becomes the only trust anchor of every later
connection (client.use_pinned_certificate): a server without its private key cannot present a
chain to it, so a certificate swapped after this first look fails the handshake. The host name
is not checked (as curl's `-k --pinnedpubkey`: the key is the identity). On a mismatch nothing
is sent: no request, no key.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import socket
import ssl
from urllib.parse import urlsplit

#: `sha256//` and the base64 of 32 bytes (curl takes several `;`-separated; one here)
PIN = re.compile(r"sha256//[A-Za-z0-9+/]{43}=")


def check_pin(text: str) -> str:
    """The pin, or ValueError with the fix (the value shown: a pin is public)."""
    if not PIN.fullmatch(text or ""):
        raise ValueError(f"--pin {text!r} is not a public-key pin; give it as the stack prints "
                         "it, sha256// and 44 base64 characters (pulumi stack output tls --json "
                         "| jq -r .pinSha256)")
    return text


def spki_pin(der_certificate: bytes) -> str:
    """`sha256//<base64>` of a certificate's SubjectPublicKeyInfo."""
    from cryptography import x509
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    key = x509.load_der_x509_certificate(der_certificate).public_key()
    spki = key.public_bytes(Encoding.DER, PublicFormat.SubjectPublicKeyInfo)
    return "sha256//" + base64.b64encode(hashlib.sha256(spki).digest()).decode()


def pinned_certificate(endpoint: str, pin: str, timeout_s: float = 10.0) -> str:
    """The PEM certificate the https `endpoint` presents, if its public key is `pin`; else
    ValueError saying what was found (nothing but the handshake was sent)."""
    parts = urlsplit(endpoint)
    if parts.scheme != "https" or not parts.hostname:
        raise ValueError("--pin applies to an https endpoint only; this one is "
                         f"{parts.scheme or 'not a URL'}")
    look = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    look.check_hostname, look.verify_mode = False, ssl.CERT_NONE  # read, then compare below
    look.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        with socket.create_connection((parts.hostname, parts.port or 443), timeout=timeout_s) as raw, \
                look.wrap_socket(raw, server_hostname=parts.hostname) as tls:
            der = tls.getpeercert(binary_form=True)
    except (OSError, ssl.SSLError) as e:
        raise ValueError(f"--pin: no TLS handshake with {parts.hostname}:{parts.port or 443} "
                         f"({type(e).__name__}: {e})") from None
    if not der:
        raise ValueError(f"--pin: {parts.hostname} presented no certificate")
    got = spki_pin(der)
    if not hmac.compare_digest(got, pin):
        raise ValueError(f"--pin: the endpoint's public key is {got}, not the pinned {pin}: "
                         "nothing was sent (another server, or the stack made a new certificate: "
                         "read tls.pinSha256 again)")
    return ssl.DER_cert_to_PEM_cert(der)
