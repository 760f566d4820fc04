"""The ctyun-hcc target's own `kimi-k3:*` keys, typed (HccServeConfig) and checked.

The cluster's `ctyun:*` keys live in config.py (HccConfig). Target keys (namespace kimi-k3;
defaults are the seed's): `sshUser` (root), `sshPort` (22), `sshHost` (the master's public IP),
`sshHostKey` (pin; none = first contact), `sshBastion` (user@host:port, none),
`sshBastionHostKey`, `sshBastionPrivateKey` (secret), `sshPrivateKey` (secret; without it the
root password is used, once, by HostKeyPin), `workDir` (/home/kimi-k3), `modelRoot`
(/mnt/nvme1n1/model), `sifDir` (/mnt/nvme0n1/apptainer), `sifName` (vllm-ascend_kimi-k3-a3),
`modelSource` (cthpc | modelscope), `sifSource` (cthpc | url), `sifUrl`, `mountDisks` (true).
Grammars: docs/security.md.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Mapping, Optional

from ..config.shared import reject_unknown
from ..inference import grammar
from ..inference.errors import NOT_SHOWN, ConfigError

TARGET_KEYS = ("sshUser", "sshPort", "sshHost", "sshHostKey", "sshBastion", "sshBastionHostKey",
               "sshBastionPrivateKey", "sshPrivateKey", "workDir", "modelRoot", "sifDir", "sifName",
               "modelSource", "sifSource", "sifUrl", "mountDisks",
               # CIDRs that may reach SSH (parsed with the cluster's keys in config.py)
               "sshAllowedCidrs")
#: secret target keys: never parsed into HccServeConfig, never printed
SECRET_KEYS = ("sshPrivateKey", "sshBastionPrivateKey")


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
    sif_url: str = ""
    mount_disks: bool = True


def parse_bastion(key: str, value: str) -> str:
    """`[user@]host[:port]`, each part by its grammar; returned normalised."""
    m = re.match(r"^(?:([^@]*)@)?(\[[0-9A-Fa-f:.]+\]|[^:\[\]]+)(?::([^:]*))?$", value)
    if not m:
        raise ConfigError(key, value, "write user@host:port, e.g. jump@203.0.113.5:22", "is not a host")
    user, host, port = m.group(1), m.group(2).strip("[]"), m.group(3)
    user = grammar.user_name(key, user) if user is not None else "root"
    host = grammar.host(key, host)
    port_n = grammar.port(key, port) if port is not None else 22
    return f"{user}@{'[' + host + ']' if ':' in host else host}:{port_n}"


def parse_serve_config(raw: Mapping[str, object],
                       model_port: Optional[int] = None) -> HccServeConfig:
    """Typed HccServeConfig from the target's `kimi-k3:*` keys; ConfigError on bad input.

    `model_port` (kimi-k3:port) is the vLLM endpoint's port, also on the master: SSH cannot
    listen on it too (one of the two would fail to bind, or the security group would open the
    model port to the SSH CIDRs and SSH to the endpoint's).

    Every value that reaches a script or a remote command is held to a grammar here (paths
    under the data roots, plain names, hosts, an http(s) URL), so the refusal names the key the
    user set. The secret keys are only checked for presence elsewhere, never read into this.
    """
    reject_unknown(raw, TARGET_KEYS)
    s = {k: str(v).strip() for k, v in raw.items()
         if v not in (None, "") and k not in SECRET_KEYS + ("sshAllowedCidrs",)}

    def choice(key, options, default):
        v = s.get(key, default)
        if v not in options:
            raise ConfigError(f"kimi-k3:{key}", v, f"use one of {', '.join(options)}",
                              "is not a supported source")
        return v

    def k(name):
        return f"kimi-k3:{name}"

    mount = s.get("mountDisks", "true").lower()
    if mount not in ("true", "false"):
        raise ConfigError("kimi-k3:mountDisks", mount, "use true or false", "is not a boolean")
    cfg = HccServeConfig(
        ssh_user=grammar.user_name(k("sshUser"), s.get("sshUser", "root")),
        ssh_port=grammar.port(k("sshPort"), s.get("sshPort", "22")),
        ssh_host=grammar.optional(grammar.host, k("sshHost"), s.get("sshHost")) or "",
        ssh_host_key=grammar.optional(grammar.host_key_pin, k("sshHostKey"), s.get("sshHostKey")) or "",
        ssh_bastion=(parse_bastion(k("sshBastion"), s["sshBastion"]) if s.get("sshBastion") else ""),
        ssh_bastion_host_key=grammar.optional(grammar.host_key_pin, k("sshBastionHostKey"),
                                              s.get("sshBastionHostKey")) or "",
        work_dir=grammar.data_path(k("workDir"), s.get("workDir", "/home/kimi-k3")),
        model_root=grammar.data_path(k("modelRoot"), s.get("modelRoot", "/mnt/nvme1n1/model")),
        sif_dir=grammar.data_path(k("sifDir"), s.get("sifDir", "/mnt/nvme0n1/apptainer")),
        sif_name=grammar.file_name(k("sifName"), s.get("sifName", "vllm-ascend_kimi-k3-a3")),
        model_source=choice("modelSource", ("cthpc", "modelscope"), "cthpc"),
        sif_source=choice("sifSource", ("cthpc", "url"), "cthpc"),
        sif_url=grammar.optional(grammar.http_url, k("sifUrl"), s.get("sifUrl")) or "",
        mount_disks=mount == "true")
    if model_port is not None and cfg.ssh_port == model_port:
        raise ConfigError("kimi-k3:sshPort", cfg.ssh_port,
                          "give kimi-k3:sshPort or kimi-k3:port another value",
                          f"is also kimi-k3:port={model_port} (SSH and the model endpoint are "
                          "both on the master)")
    if cfg.sif_source == "url" and not cfg.sif_url:
        raise ConfigError("kimi-k3:sifUrl", None, "give the SIF download URL (https://...)",
                          "is required for sifSource=url")
    if cfg.ssh_bastion_host_key and not cfg.ssh_bastion:
        raise ConfigError("kimi-k3:sshBastionHostKey", cfg.ssh_bastion_host_key,
                          "set kimi-k3:sshBastion too, or remove it", "pins a bastion that is not used")
    if cfg.ssh_bastion and not (raw.get("sshBastionPrivateKey") or raw.get("sshPrivateKey")):
        raise ConfigError("kimi-k3:sshBastionPrivateKey", NOT_SHOWN,
                          "set it (pulumi config set --secret kimi-k3:sshBastionPrivateKey < key) "
                          "or kimi-k3:sshPrivateKey: the bastion is never sent the root password",
                          "is needed with kimi-k3:sshBastion")
    return cfg


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
    raise ConfigError("kimi-k3:sshBastionPrivateKey", NOT_SHOWN,
                      "set it (pulumi config set --secret kimi-k3:sshBastionPrivateKey < key) "
                      "or kimi-k3:sshPrivateKey: the bastion is never sent the root password",
                      "is needed with kimi-k3:sshBastion")
