"""The ctyun-hcc target's own `kimi-k3:*` keys, typed (HccServeConfig) and checked.

The cluster's `ctyun:*` keys live in config.py (HccConfig). Target keys (namespace kimi-k3;
defaults are the seed's): `sshUser` (root), `sshPort` (22), `sshHost` (the master's public IP),
`sshHostKey` (pin; none = first contact), `sshBastion` (user@host:port, none),
`sshBastionHostKey`, `sshBastionPrivateKey` (secret), `sshPrivateKey` (secret; without it the
root password is used, once, by HostKeyPin), `workDir` (/home/kimi-k3), `modelRoot`
(/mnt/nvme1n1/model), `sifDir` (/mnt/nvme0n1/apptainer), `sifName` (vllm-ascend_kimi-k3-a3),
`modelSource` (cthpc | modelscope), `sifSource` (cthpc | url), `sifUrl` (https only; default the
seed's ZOS address), `sifSha256`, `mountDisks` (true), `bcastMethod` (auto | cthpc_model_bcast |
copy), `sshPasswordLogin` (off | keep), `tlsPort` (443), `tlsCertificate` (PEM) with the secret
`tlsPrivateKey`: TLS on the master (tls_step.py) whenever the endpoint is public (self-signed
without a certificate) unless `kimi-k3:allowPlaintext`; `monitoring` (true: Prometheus on the master, the node
and npu exporters on the serving nodes, as services outside the Slurm job: metrics_services.py).
Grammars: docs/security.md.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Mapping, Optional

from ..config.shared import reject_unknown
from ..config.values import RawConfig, bastion, data_path, file_name, host, host_key_pin, https_url, \
    sha256_hex, user_name
from ..inference.errors import NOT_SHOWN, ConfigError

TARGET_KEYS = ("sshUser", "sshPort", "sshHost", "sshHostKey", "sshBastion", "sshBastionHostKey",
               "sshBastionPrivateKey", "sshPrivateKey", "workDir", "modelRoot", "sifDir", "sifName",
               "modelSource", "sifSource", "sifUrl", "mountDisks", "sifSha256", "bcastMethod",
               "sshPasswordLogin", "tlsPort", "tlsCertificate", "tlsPrivateKey",
               "monitoring", "routerPython",
               # CIDRs that may reach SSH (parsed with the cluster's keys in config.py)
               "sshAllowedCidrs")
#: secret target keys: never parsed into HccServeConfig, never printed
SECRET_KEYS = ("sshPrivateKey", "sshBastionPrivateKey", "tlsPrivateKey")
#: one or more PEM certificates (the server's first, then its chain), as `openssl` writes them
PEM_CERTIFICATES = re.compile(r"(?:-----BEGIN CERTIFICATE-----\n(?:[A-Za-z0-9+/=]{1,76}\n)+"
                              r"-----END CERTIFICATE-----\n)+")
#: what the private key must look like (checked without ever quoting it)
PEM_PRIVATE_KEY = re.compile(r"-----BEGIN (?:EC |RSA )?PRIVATE KEY-----\n(?:[A-Za-z0-9+/=]{1,76}\n)+"
                             r"-----END (?:EC |RSA )?PRIVATE KEY-----\n")


@dataclass(frozen=True)
class HccServeConfig:
    """This target's own `kimi-k3:*` keys (the cluster's `ctyun:*` keys live in HccConfig)."""

    ssh_user: str = "root"
    ssh_port: int = 22
    ssh_host: str = ""
    #: pinned host key of the master (`TYPE BASE64` or `SHA256:...`); "" = pin on first contact
    ssh_host_key: str = ""
    ssh_bastion: str = ""
    ssh_bastion_host_key: str = ""
    work_dir: str = "/home/kimi-k3"
    model_root: str = "/mnt/nvme1n1/model"
    sif_dir: str = "/mnt/nvme0n1/apptainer"
    sif_name: str = "vllm-ascend_kimi-k3-a3"
    model_source: str = "cthpc"
    sif_source: str = "cthpc"
    #: "" = the seed's ZOS address (fetch_commands.SEED_SIF_URL), for sifSource=url and as the
    #: fallback when the master has no cthpc
    sif_url: str = ""
    #: the image's sha256, checked before first use whatever its source ("" = not checked)
    sif_sha256: str = ""
    mount_disks: bool = True
    #: auto: the seed's cthpc_model_bcast where the master has it, else copies from the master
    bcast_method: str = "auto"
    #: off: sshd refuses the SSH user's password once the stack's key works (HostKeyPin)
    ssh_password_login: str = "off"
    #: TLS on the master: "" (plain HTTP: a private endpoint, or allowPlaintext), "self-signed"
    #: (made on the master) or "given" (`tlsCertificate` + the secret `tlsPrivateKey`)
    tls: str = ""
    tls_port: int = 443
    tls_certificate: str = ""
    #: `kimi-k3:monitoring`: the metrics services (components/ctyun_hcc/metrics_services.py)
    monitoring: bool = True
    #: kimi-k3:modelRevision for `modelscope download --revision` ("" = the repository's
    #: default; always "" with modelSource=cthpc, which takes none): set by the target from
    #: the shared settings (SharedSettings.revision)
    model_revision: str = ""
    #: `kimi-k3:routerPython`: the interpreter on the master the router is installed with and
    #: runs under (replicas > 1): 3.8 or later (components/router/wheels.py closures)
    router_python: str = "/usr/bin/python3"


def _interpreter_path(key: str, value: str) -> str:
    """An absolute path of the project's path grammar, anywhere on the master (not only the
    data roots): the interpreter the router runs with, e.g. /usr/bin/python3.11."""
    return data_path(key, value, roots=None)


def parse_serve_config(raw: Mapping[str, object],
                       model_port: Optional[int] = None, public: bool = False,
                       allow_plaintext: bool = False) -> HccServeConfig:
    """Typed HccServeConfig from the target's `kimi-k3:*` keys; ConfigError on bad input.

    `model_port` (kimi-k3:port) is the vLLM endpoint's port, also on the master: SSH cannot
    listen on it too (one of the two would fail to bind, or the security group would open the
    model port to the SSH CIDRs and SSH to the endpoint's).

    Every value that reaches a script or a remote command is held to a grammar here (paths
    under the data roots, plain names, hosts, an http(s) URL: components/config/values.py), so
    the refusal names the key the user set. The secret keys are only checked for presence,
    never read into this.
    """
    reject_unknown(raw, TARGET_KEYS)
    src = RawConfig("kimi-k3", raw, secret=SECRET_KEYS)
    sources = "is not a supported source"
    cfg = HccServeConfig(
        ssh_user=src.checked("sshUser", user_name, "root"),
        ssh_port=src.port("sshPort", 22),
        ssh_host=src.checked("sshHost", host, ""),
        ssh_host_key=src.checked("sshHostKey", host_key_pin, ""),
        ssh_bastion=src.checked("sshBastion", bastion, ""),
        ssh_bastion_host_key=src.checked("sshBastionHostKey", host_key_pin, ""),
        work_dir=src.checked("workDir", data_path, "/home/kimi-k3"),
        model_root=src.checked("modelRoot", data_path, "/mnt/nvme1n1/model"),
        sif_dir=src.checked("sifDir", data_path, "/mnt/nvme0n1/apptainer"),
        sif_name=src.checked("sifName", file_name, "vllm-ascend_kimi-k3-a3"),
        model_source=src.choice("modelSource", ("cthpc", "modelscope"), "cthpc", sources),
        sif_source=src.choice("sifSource", ("cthpc", "url"), "cthpc", sources),
        sif_url=src.checked("sifUrl", https_url, ""),
        sif_sha256=src.checked("sifSha256", sha256_hex, ""),
        mount_disks=src.boolean("mountDisks", True),
        bcast_method=src.choice("bcastMethod", ("auto", "cthpc_model_bcast", "copy"), "auto",
                                sources),
        ssh_password_login=src.choice("sshPasswordLogin", ("off", "keep"), "off"),
        monitoring=src.boolean("monitoring", True),
        # any absolute path (the OS's python3 lives under /usr, a newer one under /opt, /usr/local)
        router_python=src.checked("routerPython", _interpreter_path, "/usr/bin/python3"))
    _check_together(src, cfg, model_port)
    return _tls(src, cfg, raw, model_port, public, allow_plaintext)


def _tls(src: RawConfig, cfg: HccServeConfig, raw: Mapping[str, object],
         model_port: Optional[int], public: bool, allow_plaintext: bool) -> HccServeConfig:
    """TLS on the master: on for a public endpoint (self-signed unless a certificate is
    given), off only with kimi-k3:allowPlaintext; a certificate given turns it on anyway."""
    from dataclasses import replace

    from ..config.shared import RESERVED_PORTS

    cert = src.text("tlsCertificate")
    if cert is not None:
        cert = cert.replace("\r\n", "\n").strip() + "\n"
        if not PEM_CERTIFICATES.fullmatch(cert):
            raise src.refuse("tlsCertificate", "give the server certificate (then its chain) in "
                             "PEM: pulumi config set kimi-k3:tlsCertificate < cert.pem",
                             "is not PEM certificates")
    key = raw.get("tlsPrivateKey")
    if bool(cert) != bool(key):
        missing, given = ("tlsPrivateKey", "tlsCertificate") if cert else \
            ("tlsCertificate", "tlsPrivateKey")
        raise ConfigError(f"kimi-k3:{missing}", None, "give both: kimi-k3:tlsCertificate (PEM) and "
                          "the secret kimi-k3:tlsPrivateKey (pulumi config set --secret "
                          "kimi-k3:tlsPrivateKey < key.pem)", f"is needed with kimi-k3:{given}")
    if key and key != "[secret]" and not PEM_PRIVATE_KEY.fullmatch(
            str(key).replace("\r\n", "\n").strip() + "\n"):
        raise ConfigError("kimi-k3:tlsPrivateKey", NOT_SHOWN, "give the key in PEM, unencrypted "
                          "(BEGIN PRIVATE KEY, BEGIN RSA PRIVATE KEY or BEGIN EC PRIVATE KEY)",
                          "is not a PEM private key")
    if cert and allow_plaintext:
        raise src.refuse("tlsCertificate", "unset kimi-k3:allowPlaintext or kimi-k3:tlsCertificate",
                         "conflicts with kimi-k3:allowPlaintext=true")
    taken = list(RESERVED_PORTS)
    taken += [(cfg.ssh_port, "kimi-k3:sshPort")] + \
        ([(model_port, "kimi-k3:port, vLLM's own")] if model_port else [])
    port = src.port("tlsPort", 443, taken)
    mode = "given" if cert else ("self-signed" if public and not allow_plaintext else "")
    if src.given("tlsPort") and not mode:
        raise src.refuse("tlsPort", "unset it, or make the endpoint public (TLS is on whenever "
                         "kimi-k3:allowedCidrs reaches a public address) or give "
                         "kimi-k3:tlsCertificate", "has no TLS to serve")
    return replace(cfg, tls=mode, tls_port=port, tls_certificate=cert or "")


def _check_together(src: RawConfig, cfg: HccServeConfig, model_port: Optional[int]) -> None:
    """The rules between keys: SSH off the model port, a bastion for its pin and a key for the
    bastion, a sha256 for a SIF URL of the user's."""
    if model_port is not None and cfg.ssh_port == model_port:
        raise src.refuse("sshPort", "give kimi-k3:sshPort or kimi-k3:port another value",
                         f"is also kimi-k3:port={model_port} (SSH and the model endpoint are "
                         "both on the master)", default=cfg.ssh_port)
    if cfg.ssh_bastion_host_key and not cfg.ssh_bastion:
        raise src.refuse("sshBastionHostKey", "set kimi-k3:sshBastion too, or remove it",
                         "pins a bastion that is not used")
    if cfg.ssh_bastion and not (src.given("sshBastionPrivateKey") or src.given("sshPrivateKey")):
        raise _no_bastion_key()
    if cfg.sif_url and not cfg.sif_sha256:
        # a URL of the user's: the image runs as root on every node, so it is checked against
        # the digest the user read from where they got it (the seed's ZOS default has none to
        # give: CTyun updates that image in place)
        raise ConfigError("kimi-k3:sifSha256", None, "give the image's sha256 (the 64 hex digits "
                          "`sha256sum FILE` prints) with kimi-k3:sifUrl", "is needed with "
                          "kimi-k3:sifUrl: the image runs as root on every node")


def _no_bastion_key() -> ConfigError:
    return ConfigError("kimi-k3:sshBastionPrivateKey", None,
                       "set it (pulumi config set --secret kimi-k3:sshBastionPrivateKey < key) "
                       "or kimi-k3:sshPrivateKey: the bastion is never sent the root password",
                       "is needed with kimi-k3:sshBastion")


def bastion_login_key(cfg: HccServeConfig, private_key, bastion_private_key):
    """The key the bastion logs in with: kimi-k3:sshBastionPrivateKey, else kimi-k3:sshPrivateKey
    (values or secret Outputs; None = unset); "" without a bastion.

    Chosen here once and passed to every SSH step as `sshBastionPrivateKey`, because after first
    contact the steps' `sshPrivateKey` is the stack's generated login key (installed on the
    master only) and the root password never goes to a bastion: no step may fall back to them.
    """
    if not cfg.ssh_bastion:
        return ""
    for key in (bastion_private_key, private_key):
        if key is not None and key != "":
            return key
    raise _no_bastion_key()
