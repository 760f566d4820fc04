"""Helpers of the day-two tests (resize, recovery, teardown, fallbacks) on the real local Slurm.

- `stop_slurmd` / `start_slurmd`: one node's slurmd killed and started again the way
  `.ci/services/start.sh` starts it (its network namespace, its host name, the doubles on PATH);
  the job steps it launched (slurmstepd) live on, as when only the daemon dies;
- `node_state`, `wait_until`: polling the cluster's view;
- `https_server`: a local HTTPS server with a self-signed certificate and a `.wgetrc` that
  trusts it (wget reads the file named by WGETRC), for the https-only SIF download;
- `no_doubles_path`: a PATH without tests/doubles/bin, i.e. a master without CTyun's tools.
"""

from __future__ import annotations

import contextlib
import datetime
import functools
import http.server
import ipaddress
import os
import signal
import ssl
import subprocess
import threading
import time
from pathlib import Path
from typing import Callable, Dict, Iterator, Tuple

from tests.integration.slurm_env import ROOT

DOUBLES_BIN = ROOT / "tests" / "doubles" / "bin"


def _pidfile(env: Dict[str, str], node: str) -> Path:
    return Path(env["KK3_CI_DIR"]) / "run" / f"slurmd.{node}.pid"


def stop_slurmd(env: Dict[str, str], node: str) -> None:
    """SIGKILL the node's slurmd (its job steps keep running, as after a daemon crash)."""
    pid = int(_pidfile(env, node).read_text().strip())
    os.kill(pid, signal.SIGKILL)
    wait_until(lambda: not Path(f"/proc/{pid}").exists(), 10, f"slurmd of {node} to exit")


def start_slurmd(env: Dict[str, str], node: str) -> None:
    """Start the node's slurmd as start.sh does."""
    conf = env["SLURM_CONF"]
    run_env = {**os.environ, "PATH": f"{DOUBLES_BIN}:{os.environ['PATH']}",
               "KK3_DOUBLES_LOG": env["KK3_DOUBLES_LOG"],
               "KK3_DOUBLES_STATE": env["KK3_DOUBLES_STATE"]}
    subprocess.run(["nsenter", f"--net=/run/netns/{node}", "unshare", "--uts", "sh", "-c",
                    f"hostname {node}; exec slurmd -f '{conf}' -N {node}"],
                   env=run_env, check=True, close_fds=True)


def node_state(node: str) -> Tuple[str, str]:
    """(state as sinfo %T prints it, reason) of `node`."""
    out = subprocess.run(["sinfo", "-h", "-N", "-n", node, "-o", "%T|%E"], capture_output=True,
                         text=True, check=True).stdout.splitlines()
    state, _, reason = (out[0] if out else "|").partition("|")
    return state, reason


def wait_until(fn: Callable[[], object], timeout_s: float, what: str, interval_s: float = 0.5):
    end = time.monotonic() + timeout_s
    while True:
        value = fn()
        if value:
            return value
        if time.monotonic() > end:
            raise TimeoutError(f"waited {timeout_s} s for {what}")
        time.sleep(interval_s)


def no_doubles_path() -> str:
    """The sshd session's PATH (start.sh's SetEnv) without the site doubles."""
    return "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def _self_signed(directory: Path) -> Tuple[Path, Path]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(hours=2))
            .add_extension(x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


@contextlib.contextmanager
def https_server(served: Path, tls_dir: Path) -> Iterator[Tuple[str, Path]]:
    """Serve `served` over HTTPS on 127.0.0.1; yields (base URL, a wgetrc trusting it)."""
    tls_dir.mkdir(parents=True, exist_ok=True)
    cert, key = _self_signed(tls_dir)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(served))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.socket = ctx.wrap_socket(httpd.socket, server_side=True)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    wgetrc = tls_dir / "wgetrc"
    wgetrc.write_text(f"ca_certificate = {cert}\n")
    try:
        yield f"https://127.0.0.1:{httpd.server_address[1]}", wgetrc
    finally:
        httpd.shutdown()
