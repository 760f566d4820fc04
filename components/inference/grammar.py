"""Strict grammars for the config values that reach scripts and manifests (pure).

Every such value either matches one of these grammars (documented in docs/security.md and
docs/configuration.md) or is refused with one line naming the key the user set; values that
are free-form by nature (URLs, secrets) are quoted by `quoting.py` wherever they are used. Even
a value that matches a grammar is still quoted: the grammar keeps scripts readable and errors
early, the quoting keeps them safe.

Each checker takes the config key (`kimi-k3:servedModelName`) so the refusal names it, and
returns the value (normalised where the docs say so).
"""

from __future__ import annotations

import ipaddress
import posixpath
import re
from typing import Iterable, Optional, Tuple

from .errors import ConfigError

#: what `servedModelName` may be: a model id as OpenAI clients send it (`Kimi-K3`,
#: `moonshotai/Kimi-K3`, `kimi-k3:w4a8`), nothing a shell, a URL or Kubernetes would interpret
SERVED_MODEL_NAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._:-]|/(?!/)){0,127}$")
#: Slurm partition / job names, Apptainer instance prefixes, SIF base names
SLURM_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
FILE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,127}$")
#: POSIX portable user names (useradd's default rule)
USER_NAME = re.compile(r"^[a-z_][a-z0-9_-]{0,31}$")
HOST_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
HOST_NAME = re.compile(rf"^{HOST_LABEL}(?:\.{HOST_LABEL})*$")
#: path segments: letters, digits and . _ + - (no spaces, no quotes, no `$`, no glob characters)
PATH_SEGMENT = re.compile(r"^[A-Za-z0-9._+-]+$")
#: an http(s) URL of RFC 3986 characters only (no spaces, quotes or control characters)
HTTP_URL = re.compile(r"^https?://[A-Za-z0-9.-]+(?::[0-9]{1,5})?(?:/[A-Za-z0-9._~%!$&'()*+,;=:@/-]*)?"
                      r"(?:\?[A-Za-z0-9._~%!$&'()*+,;=:@/?-]*)?$")
#: an SSH host key as in known_hosts (`TYPE BASE64`), or its SHA256 fingerprint (`ssh-keygen -l`)
HOST_KEY = re.compile(r"^(?:ssh-ed25519|ecdsa-sha2-nistp(?:256|384|521)|ssh-rsa) [A-Za-z0-9+/]+={0,3}$")
HOST_KEY_FINGERPRINT = re.compile(r"^SHA256:[A-Za-z0-9+/]{43}$")
#: where data and scripts may live on a node: shared storage and data disks, never system dirs
DATA_ROOTS = ("/home", "/mnt", "/data", "/scratch", "/share", "/srv", "/opt")


def served_model_name(key: str, value: str) -> str:
    if not SERVED_MODEL_NAME.match(value) or value.endswith("/"):
        raise ConfigError(key, value, "use up to 128 letters, digits and . _ : - / (one '/' at a "
                          "time), starting with a letter or digit, e.g. Kimi-K3",
                          "is not a usable model name")
    return value


def slurm_name(key: str, value: str) -> str:
    if not SLURM_NAME.match(value):
        raise ConfigError(key, value, "use up to 64 letters, digits and . _ -, starting with a "
                          "letter or digit", "is not a usable Slurm name")
    return value


def file_name(key: str, value: str) -> str:
    if not FILE_NAME.match(value) or value in (".", ".."):
        raise ConfigError(key, value, "use letters, digits and . _ + - (no '/')",
                          "is not a usable file name")
    return value


def user_name(key: str, value: str) -> str:
    if not USER_NAME.match(value):
        raise ConfigError(key, value, "use a login name such as root", "is not a user name")
    return value


def host(key: str, value: str) -> str:
    """A DNS name or an IP address (IPv6 without brackets)."""
    try:
        return str(ipaddress.ip_address(value))
    except ValueError:
        pass
    if not HOST_NAME.match(value) or len(value) > 253:
        raise ConfigError(key, value, "give a host name or an IP address", "is not a host")
    return value


def port(key: str, value: object, reserved: Iterable[Tuple[int, str]] = ()) -> int:
    s = str(value).strip()
    if not re.match(r"^[0-9]{1,5}$", s) or not 1 <= int(s) <= 65535:
        raise ConfigError(key, value, "use a TCP port from 1 to 65535, e.g. 22", "is not a port")
    n = int(s)
    for taken, what in reserved:
        if n == taken:
            raise ConfigError(key, n, f"pick another port ({taken} is {what})", "collides")
    return n


def http_url(key: str, value: str) -> str:
    if not HTTP_URL.match(value):
        raise ConfigError(key, value, "give an http(s) URL of plain characters (percent-encode "
                          "spaces and quotes)", "is not a usable URL")
    return value


def data_path(key: str, value: str, roots: Optional[Tuple[str, ...]] = DATA_ROOTS,
              min_depth: int = 2) -> str:
    """An absolute path under one of `roots` (None: any), at least `min_depth` segments deep;
    normalised (repeated and trailing '/' removed). `.` and `..` segments are refused, not
    resolved: a path that needs them is not the path the user meant to give."""
    where = f"under {', '.join(roots)} " if roots else ""
    fix = (f"give an absolute path {where}of letters, digits and . _ + -, "
           f"e.g. {(roots or DATA_ROOTS)[0]}/kimi-k3")
    if not isinstance(value, str) or not value.startswith("/"):
        raise ConfigError(key, value, fix, "is not an absolute path")
    segments = [s for s in value.split("/") if s]
    if any(s in (".", "..") for s in segments):
        raise ConfigError(key, value, fix, "contains '.' or '..'")
    if not all(PATH_SEGMENT.match(s) for s in segments):
        raise ConfigError(key, value, fix, "contains characters a path here may not have")
    norm = "/" + "/".join(segments)
    if len(segments) < min_depth or (
            roots and not any(norm == r or norm.startswith(r + "/") for r in roots)):
        raise ConfigError(key, value, fix, "is not under a data directory" if roots else
                          "is too close to /")
    assert posixpath.normpath(norm) == norm
    return norm


def host_key_pin(key: str, value: str) -> str:
    """A pinned host key: `ssh-ed25519 AAAA...` (a trailing comment is dropped) or
    `SHA256:...` (the fingerprint `ssh-keygen -lf` prints, without padding)."""
    text = " ".join(value.split()[:2]) if not value.startswith("SHA256:") else value.strip().rstrip("=")
    if any(not c.isprintable() for c in value) or not (
            HOST_KEY.match(text) or HOST_KEY_FINGERPRINT.match(text)):
        raise ConfigError(key, value, "give the key as in known_hosts (ssh-ed25519 AAAA...) or its "
                          "fingerprint (SHA256:..., from ssh-keygen -lf on the host)",
                          "is not an SSH host key")
    return text


def optional(check, key: str, value: Optional[str], *args) -> Optional[str]:
    return None if value in (None, "") else check(key, value, *args)
