"""Named value rules of the contract that a length/pattern pair cannot say on its own.

Each check takes the value (already known to be of the field's type) and returns None when it
is accepted, else a short reason. Every rule cites the contract section it comes from
(sections.py) and its upstream source (doc 23930: CTyun's create-cluster table; [tf]: CTyun's
Terraform provider resource schemas; sources.py gives URLs and commits).
"""

from __future__ import annotations

import ipaddress
import re
from typing import Callable, Dict, Optional

HAN = "\u4e00-\u9fff"

# 4.2: cluster name 2-20; letters, digits, '-'; no leading digit or '-', no trailing '-', no '--'
CLUSTER_NAME = re.compile(r"[A-Za-z][A-Za-z0-9-]*[A-Za-z0-9]")
# 4.2: security group name in create-cluster: 2-32; digits, letters, Chinese, '-', '_';
# must not start with a digit, '_' or '-'
HPC_SG_NAME = re.compile(rf"[A-Za-z{HAN}][A-Za-z0-9{HAN}_-]*")
# 4.2 / section 3: VPC, subnet and security group names in the VPC API: 2-32; letters, Chinese,
# digits, '_', '-'; starts with a letter or Chinese; not http:/https: (':' is outside the set)
VPC_NAME = re.compile(rf"[A-Za-z{HAN}][A-Za-z0-9{HAN}_-]*")
# 4.2: queue 1-15; letters, digits, '_'; starts with a letter; not "default" in any case
QUEUE_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
# 4.2: SFS / OceanFS 2-255; digits, letters, '-'; no leading digit or '-', no trailing '-'
FS_NAME = re.compile(r"[A-Za-z][A-Za-z0-9-]*[A-Za-z0-9]")
# 3.11: a port or a port range, no spaces, 1-65535
PORT_RANGE = re.compile(r"([0-9]{1,5})(?:-([0-9]{1,5}))?")
# 4.3: the special characters of the root password, as doc 23930 lists them: the list has the
# full-width '｜' (U+FF5C) and no ASCII '|' (contradiction 5.password-bar)
PASSWORD_SPECIALS = set("()`~!@#$%^&*_-+=｜{}[]:;'<>,.?/")


def cluster_name(v: str) -> Optional[str]:
    if not CLUSTER_NAME.fullmatch(v):
        return ("must be letters, digits and '-', start with a letter, not end with '-' "
                "(CTyun contract 4.2)")
    if "--" in v:
        return "must not contain '--' (CTyun contract 4.2)"
    return None


def hpc_security_group_name(v: str) -> Optional[str]:
    if not HPC_SG_NAME.fullmatch(v):
        return ("must be digits, letters, Chinese, '-', '_' and not start with a digit, '_' "
                "or '-' (CTyun contract 2.6)")
    return None


def vpc_name(v: str) -> Optional[str]:
    if v.lower().startswith(("http:", "https:")):
        return "must not start with http: or https: (CTyun contract 3)"
    if not VPC_NAME.fullmatch(v):
        return ("must be letters, Chinese, digits, '_', '-' and start with a letter or Chinese "
                "(CTyun contract 3)")
    return None


def description(v: str) -> Optional[str]:
    if v.lower().startswith(("http:", "https:")):
        return "must not start with http: or https: (CTyun contract 3)"
    return None


def queue_name(v: str) -> Optional[str]:
    if not QUEUE_NAME.fullmatch(v):
        return "must be letters, digits and '_' and start with a letter (CTyun contract 4.2)"
    if v.lower() == "default":
        return "must not be 'default' in any case (CTyun contract 4.2)"
    return None


def fs_name(v: str) -> Optional[str]:
    if not FS_NAME.fullmatch(v):
        return ("must be digits, letters and '-', not start with a digit or '-', not end with "
                "'-' (CTyun contract 2.6)")
    return None


def _has_run(v: str, n: int = 3) -> Optional[str]:
    """A run of n letters or digits rising by one, like doc 23930's examples abc and 123
    (falling runs and repeats: the text does not say, open question 6.17)."""
    for i in range(len(v) - n + 1):
        chunk = v[i:i + n].lower()
        if not (chunk.isascii() and (chunk.isalpha() or chunk.isdigit())):
            continue
        if all(ord(b) - ord(a) == 1 for a, b in zip(chunk, chunk[1:])):
            return chunk
    return None


def root_password(v: str) -> Optional[str]:
    """CTyun contract 4.3 (doc 23930). Reasons never repeat the value: it is a secret."""
    if not 8 <= len(v) <= 30:
        return "must be 8-30 characters (CTyun contract 4.3)"
    if not (any(c.isupper() for c in v) and any(c.islower() for c in v)
            and any(c.isdigit() for c in v) and any(c in PASSWORD_SPECIALS for c in v)):
        return ("needs an upper-case letter, a lower-case letter, a digit and a special "
                "character from ()`~!@#$%^&*_-+=｜{}[]:;'<>,.?/ (CTyun contract 4.3)")
    if any(not (c.isascii() and c.isalnum()) and c not in PASSWORD_SPECIALS for c in v):
        return "contains a character outside letters, digits and the listed specials (4.3)"
    if v.startswith("/"):
        return "must not start with '/' (CTyun contract 4.3)"
    if _has_run(v):
        return "must not contain 3 or more consecutive characters such as abc or 123 (4.3)"
    low = v.lower()
    for word in ("root", "toor", "ecs-user", "resu-sce"):
        if word in low:
            return "must not contain root, ecs-user or variants of them (CTyun contract 4.3)"
    return None


def _cidr(v: str, lo: int, hi: int, version: Optional[int] = 4) -> Optional[str]:
    try:
        net = ipaddress.ip_network(v, strict=True)
    except ValueError:
        return "must be a network in CIDR form such as 192.168.0.0/16"
    if version and net.version != version:
        return f"must be an IPv{version} network"
    if not lo <= net.prefixlen <= hi:
        return f"prefix length must be {lo}-{hi}"
    return None


def vpc_cidr(v: str) -> Optional[str]:
    """3.1: IPv4 block, prefix 8-28."""
    return _cidr(v, 8, 28)


def subnet_cidr(v: str) -> Optional[str]:
    """3.4: inside the VPC's block (checked by the service); listed subnets have prefix 16-28."""
    return _cidr(v, 16, 28)


def remote_cidr(v: str) -> Optional[str]:
    """3.11: remote CIDR of a rule, e.g. 0.0.0.0/0 (IPv4 or IPv6)."""
    return _cidr(v, 0, 128, version=None)


def port_range(v: str) -> Optional[str]:
    """3.11; the empty string is the documented value for protocol ANY."""
    if v == "":
        return None
    m = PORT_RANGE.fullmatch(v)
    if not m:
        return "must be a port like 22 or a range like 8000-9000, no spaces (CTyun contract 3.11)"
    lo = int(m.group(1))
    hi = int(m.group(2) or lo)
    if not (1 <= lo <= 65535 and 1 <= hi <= 65535 and lo <= hi):
        return "ports must be 1-65535, low before high (CTyun contract 3.11)"
    return None


def csv_ids(v: str) -> Optional[str]:
    """A comma-separated id list: no empty entries, no spaces."""
    parts = v.split(",")
    if any(not p or p != p.strip() for p in parts):
        return "must be ids separated by ',' without spaces or empty entries"
    return None


CHECKS: Dict[str, Callable[[str], Optional[str]]] = {
    "cluster_name": cluster_name,
    "hpc_security_group_name": hpc_security_group_name,
    "vpc_name": vpc_name,
    "description": description,
    "queue_name": queue_name,
    "fs_name": fs_name,
    "root_password": root_password,
    "vpc_cidr": vpc_cidr,
    "subnet_cidr": subnet_cidr,
    "remote_cidr": remote_cidr,
    "port_range": port_range,
    "csv_ids": csv_ids,
}
