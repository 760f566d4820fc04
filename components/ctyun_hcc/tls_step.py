"""`TlsProxy`: TLS in front of vLLM on the CTyun master, run as a service (SSH step).

Type `pulumi-python:dynamic/ctyun:TlsProxy`. Over SSH to the master, after the Slurm service:

- writes kimi-k3's TLS front (tls_proxy.py, standard library only) to `tlsDir`
  (`/etc/kimi-k3/tls`: dir 0700, root, on the master's own disk), with the certificate the user gave (`kimi-k3:tlsCertificate` and the secret
  `kimi-k3:tlsPrivateKey`; the key written root-only, its value on stdin) or a self-signed one
  made there by `openssl req -x509` (an ECDSA P-256 key that never leaves the master; subject
  alternative name the master's public address; 825 days; remade when the address changes or
  fewer than 30 days are left);
- runs it as a service: a systemd unit `kimi-k3-tls.service` (Restart=always) where systemd is
  PID 1, else a detached process with a pid file (what this repository's test master has);
  `--listen 0.0.0.0:<tlsPort>`, `--upstream <node 0>:<kimi-k3:port>`; after it binds the port
  it drops to `nobody`;
- waits until `GET /health` answers 200 through it over TLS (curl on the master);
- reports the certificate (PEM), its SHA-256 fingerprint and the SHA-256 pin of its public key
  (`sha256//<base64>`, what `curl --pinnedpubkey` takes), read with openssl on the master.

Why not under `workDir`: the work directory is on the cluster's shared file system (every
node reads the job's scripts there, docs/ctyun-bootstrap.md), so a key there is readable by
root on every node (and, were the export to map root through, by whatever runs as root there:
the model repository's own code under `--trust-remote-code`), and a script there that root runs
on the master can be replaced from any node. The key (possibly the user's own, for a name of
theirs) and the proxy root starts belong to the master alone. Stacks deployed before kept them
in `<workDir>/tls`: the next apply stops what ran from there and removes it, as delete does; a
self-signed certificate is made anew in `tlsDir` (a new pin), deliberately: its key was on
the shared file system.

Delete stops the service and removes `tlsDir` (and `<workDir>/tls` of earlier stacks). Read
reports whether it still runs.
"""

from __future__ import annotations

import posixpath
from typing import Any, Dict, Optional

import pulumi
import pulumi.dynamic

from ..inference.quoting import shell_word as q
from ..systemd import units
from .monitoring import check_path
from .ssh_resource import SECRET_OUTPUTS, SSH_INPUTS, SshStepProvider

UNIT = "kimi-k3-tls.service"
UNIT_PATH = f"/etc/systemd/system/{UNIT}"
#: how long a self-signed certificate is valid, and how close to its end it is remade
CERT_DAYS, RENEW_DAYS = 825, 30
#: where the proxy, its certificate and key live on the master: its own disk, not the shared
#: work directory (see the module docstring)
TLS_DIR = "/etc/kimi-k3/tls"
STEP_INPUTS: Dict[str, Any] = {
    "workDir": "/home/kimi-k3", "tlsDir": TLS_DIR, "listenPort": 443, "upstreamHost": "", "upstreamPort": 11025,
    "publicHost": "", "certificatePem": "", "privateKeyPem": "", "proxyPy": "",
    "runAs": "nobody", "timeoutS": 180, "pollIntervalS": 2,
}
OUTPUTS = ["certificate", "fingerprintSha256", "pinSha256", "selfSigned", "running", "how"]

#: one self-signed certificate for `publicHost` (IP or DNS SAN), made on the master
MAKE_SELF_SIGNED = """\
set -e
umask 077
cd {dir}
san={san}
if [ -s cert.pem ] && [ "$(cat source 2>/dev/null)" = "self-signed $san" ] \\
   && openssl x509 -in cert.pem -noout -checkend {renew_s} >/dev/null; then
  echo kept
  exit 0
fi
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days {days} \\
  -subj "/CN=kimi-k3" -addext "subjectAltName=$san" -keyout key.pem.new -out cert.pem.new \\
  2>openssl.err || {{ echo "openssl could not make a certificate (OpenSSL 1.1.1 or later is \
needed for -addext); give kimi-k3:tlsCertificate and kimi-k3:tlsPrivateKey" >&2; \
cat openssl.err >&2; exit 1; }}
chmod 600 key.pem.new
chmod 644 cert.pem.new
mv -f key.pem.new key.pem
mv -f cert.pem.new cert.pem
printf '%s\\n' "self-signed $san" > source
echo made
"""
#: the user's certificate, from stdin (the key was written root-only before)
GIVEN = """\
set -e
umask 077
cd {dir}
cat > cert.pem.new
chmod 644 cert.pem.new
mv -f cert.pem.new cert.pem
printf '%s\\n' given > source
"""
#: on the master: GET /health through the proxy until 200, or the log tail and exit 1
WAIT = """\
end=$(( $(date +%s) + {timeout} ))
code=-
while :; do
  code=$(curl -sk --max-time 5 -o /dev/null -w '%{{http_code}}' {url} || true)
  [ "$code" = 200 ] && break
  if [ "$(date +%s)" -ge "$end" ]; then
    echo "GET /health over TLS on "{where}" did not answer 200 within {timeout} s (last: HTTP $code); proxy log:" >&2
    tail -n 20 {dir}/proxy.log >&2 2>/dev/null || true
    journalctl -u {unit} -n 20 --no-pager >&2 2>/dev/null || true
    exit 1
  fi
  sleep {interval}
done
"""
#: the certificate, its fingerprint and the pin of its public key
DESCRIBE = """\
cd {dir}
printf '%s\\n' '-----FINGERPRINT-----'
openssl x509 -in cert.pem -noout -fingerprint -sha256 | sed 's/^.*=//'
printf '%s\\n' '-----PIN-----'
openssl x509 -in cert.pem -pubkey -noout | openssl pkey -pubin -outform der \\
  | openssl dgst -sha256 -binary | base64
printf '%s\\n' '-----PEM-----'
cat cert.pem
"""
STOP = """\
if [ -d /run/systemd/system ] && command -v systemctl >/dev/null; then
  systemctl disable --now {unit} 2>/dev/null || true
fi
pid=$(cat {dir}/proxy.pid 2>/dev/null || true)
if [ -n "$pid" ] && grep -q kk3_tls_proxy "/proc/$pid/cmdline" 2>/dev/null; then
  kill "$pid" 2>/dev/null || true
  for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
fi
rm -f {dir}/proxy.pid
"""
START = """\
set -e
if [ -d /run/systemd/system ] && command -v systemctl >/dev/null; then
  cat > {unit_path}.kk3tmp <<'UNIT'
{unit_text}
UNIT
  mv -f {unit_path}.kk3tmp {unit_path}
  systemctl daemon-reload
  systemctl enable {unit} >/dev/null 2>&1
  systemctl restart {unit}
  echo systemd
else
  cd {dir}
  setsid nohup {command} >>{dir}/proxy.log 2>&1 </dev/null &
  echo $! > {dir}/proxy.pid
  echo process
fi
"""
RUNNING = """\
if [ -d /run/systemd/system ] && command -v systemctl >/dev/null \\
   && systemctl is-active --quiet {unit}; then echo yes; exit 0; fi
pid=$(cat {dir}/proxy.pid 2>/dev/null || true)
if [ -n "$pid" ] && grep -q kk3_tls_proxy "/proc/$pid/cmdline" 2>/dev/null; then echo yes;
else echo no; fi
"""


def _san(host: str) -> str:
    import ipaddress

    try:
        ipaddress.ip_address(host)
        return f"IP:{host}"
    except ValueError:
        return f"DNS:{host}"


class TlsProxyProvider(SshStepProvider):
    PROGRESS_PHASE = "tls-proxy"
    PROGRESS_WAITING = "TLS on {publicHost}:{listenPort} in front of {upstreamHost}:{upstreamPort}"
    STEP_INPUTS = STEP_INPUTS
    SECRET_INPUTS = ("privateKeyPem",)
    REPLACE_KEYS = ()

    @staticmethod
    def _dir(p) -> str:
        return check_path(str(p.get("tlsDir") or TLS_DIR).rstrip("/"), "the TLS directory")

    @classmethod
    def _legacy_dir(cls, p) -> Optional[str]:
        """`<workDir>/tls`, where stacks before tlsDir kept the proxy and key (None when it is
        tlsDir itself)."""
        old = f"{str(p['workDir']).rstrip('/')}/tls"
        return None if old == cls._dir(p) else old

    @classmethod
    def _forget_legacy(cls, p) -> str:
        """Shell: stop a proxy run from `<workDir>/tls` and remove that directory, when it holds
        kimi-k3's proxy (nothing else there is touched)."""
        old = cls._legacy_dir(p)
        if old is None:
            return ""
        return (f"if [ -f {q(old + '/kk3_tls_proxy.py')} ]; then\n"
                + STOP.format(unit=UNIT, dir=q(old)) + f"rm -rf {q(old)}\nfi\n")

    def command(self, p) -> str:
        d = self._dir(p)
        return " ".join(q(x) for x in (
            "/usr/bin/env", "python3", f"{d}/kk3_tls_proxy.py", "--listen", f"0.0.0.0:{int(p['listenPort'])}",
            "--upstream", f"{p['upstreamHost']}:{int(p['upstreamPort'])}",
            "--cert", f"{d}/cert.pem", "--key", f"{d}/key.pem", "--user", p["runAs"] or ""))

    def unit_text(self, p) -> str:
        """The shared unit (components/systemd/units.py): `Restart=always` and
        `StartLimitIntervalSec=0`, so a proxy that exits fast after the master reboots (its
        directory on a file system not mounted yet) is retried until it runs instead of being
        given up on after systemd's default 5 starts in 10 s. As root: it binds the port (443)
        and reads the root-only key, then drops to `runAs` itself (tls_proxy.py)."""
        return units.unit("kimi-k3 TLS front for vLLM (components/ctyun_hcc/tls_proxy.py)",
                          [self.command(p)], user=units.ROOT,
                          rendered_by="components/ctyun_hcc/tls_step.py").rstrip("\n")

    def apply(self, runner, p):
        """Few round trips (each costs a channel and a bash): the directory, the proxy and the
        key (root-only files), then certificate + restart (after stopping and removing a proxy
        an earlier stack ran from `<workDir>/tls`), then health + description."""
        d = self._dir(p)
        # the parent readable (other kimi-k3 services keep their config beside: /etc/kimi-k3),
        # the directory itself root-only (write_private)
        runner.run(f"mkdir -p -m 0755 {q(posixpath.dirname(d))}", label="TLS directory")
        runner.write_private(f"{d}/kk3_tls_proxy.py", p["proxyPy"], label="write TLS proxy")
        given = bool(p.get("certificatePem"))
        if given:
            runner.write_private(f"{d}/key.pem", p["privateKeyPem"], label="write TLS key")
            cert = GIVEN.format(dir=q(d))  # the certificate on stdin
        else:
            cert = MAKE_SELF_SIGNED.format(dir=q(d), san=q(_san(p["publicHost"])),
                                           days=CERT_DAYS, renew_s=RENEW_DAYS * 86400)
        how = runner.run(
            f"( {cert} ) >&2\n" + self._forget_legacy(p) + STOP.format(unit=UNIT, dir=q(d)) +
            START.format(unit=UNIT, unit_path=UNIT_PATH, dir=q(d), unit_text=self.unit_text(p),
                         command=self.command(p)),
            stdin=p["certificatePem"] if given else None,
            label="TLS certificate and (re)start").stdout.strip().splitlines()[-1]
        timeout_s = float(p["timeoutS"])
        out = runner.run(WAIT.format(dir=q(d), unit=UNIT, timeout=int(timeout_s),
                                     interval=float(p["pollIntervalS"]),
                                     url=q(f"https://127.0.0.1:{int(p['listenPort'])}/health"),
                                     where=q(f"{p['publicHost']}:{int(p['listenPort'])}"))
                         + DESCRIBE.format(dir=q(d)),
                         timeout_s=timeout_s + 60, label="TLS health and certificate").stdout
        return {**self._describe(out), "selfSigned": not given, "running": True, "how": how}

    @staticmethod
    def _describe(out: str) -> Dict[str, Any]:
        _, rest = out.split("-----FINGERPRINT-----\n", 1)
        fingerprint, rest = rest.split("-----PIN-----\n", 1)
        pin, pem = rest.split("-----PEM-----\n", 1)
        return {"fingerprintSha256": fingerprint.strip(), "pinSha256": f"sha256//{pin.strip()}",
                "certificate": pem.strip() + "\n"}

    def observe(self, runner, p):
        running = runner.run(RUNNING.format(unit=UNIT, dir=q(self._dir(p))), check=False,
                             label="TLS proxy running").stdout.strip() == "yes"
        return {"running": running}

    def remove(self, runner, p):
        d = self._dir(p)
        runner.run(self._forget_legacy(p) + STOP.format(unit=UNIT, dir=q(d))
                   + f"rm -f {UNIT_PATH}; rm -rf {q(d)}", check=False, label="remove TLS proxy")

    def resource_id(self, p, outs) -> str:
        return f"{p['sshHost']}:tls:{int(p['listenPort'])}"


class TlsProxy(pulumi.dynamic.Resource, module="ctyun", name="TlsProxy"):
    """TLS on the master in front of vLLM (see the module docstring)."""

    def __init__(self, resource_name: str, inputs: Dict[str, Any],
                 opts: Optional[pulumi.ResourceOptions] = None):
        props = {**{k: None for k in {**SSH_INPUTS, **STEP_INPUTS}}, **inputs,
                 **{k: None for k in OUTPUTS}}
        opts = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(
            additional_secret_outputs=SECRET_OUTPUTS + ["privateKeyPem"]))
        super().__init__(TlsProxyProvider(), resource_name, props, opts)
