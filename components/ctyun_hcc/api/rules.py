"""CTyun's documented input rules: names, passwords, sizes and counts (pure).

Each `*_problem(value)` returns why `value` breaks the rule, or None. The providers' `check` and
the program's config parser call the same functions, so a value is refused once, early, with one
line, before anything is ordered. Sources: CTyun contract 2.6, 3 and 4 (doc 23930, 23931,
23932, 23943; the VPC rules from ctyun-it/terraform-provider-ctyun resource schemas).
"""

from __future__ import annotations

import re
from typing import Optional

# -- limits (CTyun contract 4.4) ----------------------------------------------------------------
SFS_GB = (500, 1048576)
OCEANFS_GB = (100, 1048576)
SYSTEM_DISK_GB = (100, 2048)
EIP_MBPS = (1, 300)
CREATE_ORDER_COUNT = (1, 49)
EXPAND_ORDER_COUNT = (1, 50)
SHRINK_BATCH = (1, 10)
PAGE_SIZE = (1, 50)
CYCLE_COUNT = {"MONTH": (1, 11), "YEAR": (1, 3)}
SYSTEM_DISK_TYPES = ("SATA", "SAS", "SSD", "SSD-genric")  # documented spelling
SFS_TYPES = ("capacity", "performance")
OCEANFS_TYPES = ("capacity",)

_CLUSTER = re.compile(r"^[A-Za-z][A-Za-z0-9-]*$")
_QUEUE = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
_FS = re.compile(r"^[A-Za-z][A-Za-z0-9-]*$")
#: letters, Chinese (CJK unified ideographs), digits, '_' and '-'
_CJK = "\u4e00-\u9fff"
_SG_EHPC = re.compile(rf"^[A-Za-z{_CJK}][A-Za-z0-9{_CJK}_-]*$")
_VPC_NAME = re.compile(rf"^[A-Za-z{_CJK}][A-Za-z0-9{_CJK}_-]*$")


def _length(value: str, lo: int, hi: int) -> Optional[str]:
    if not lo <= len(value) <= hi:
        return f"must be {lo}-{hi} characters long (is {len(value)})"
    return None


def cluster_name_problem(name: object) -> Optional[str]:
    """doc 23930: 2-20 chars; letters, digits, '-'; starts with a letter; no trailing '-';
    no '--'."""
    if not isinstance(name, str):
        return "must be a string"
    return (_length(name, 2, 20)
            or (None if _CLUSTER.match(name) else
                "may hold only letters, digits and '-' and must start with a letter")
            or ("must not end with '-'" if name.endswith("-") else None)
            or ("must not contain '--'" if "--" in name else None))


def queue_name_problem(name: object) -> Optional[str]:
    """doc 23930/23943: 1-15 chars; letters, digits, '_'; starts with a letter; not
    'default' in any case."""
    if not isinstance(name, str):
        return "must be a string"
    return (_length(name, 1, 15)
            or (None if _QUEUE.match(name) else
                "may hold only letters, digits and '_' and must start with a letter")
            or ("must not be 'default' (reserved)" if name.lower() == "default" else None))


def fs_name_problem(name: object) -> Optional[str]:
    """SFS / OceanFS names (doc 23930): 2-255; letters, digits, '-'; no leading digit or '-',
    no trailing '-'."""
    if not isinstance(name, str):
        return "must be a string"
    return (_length(name, 2, 255)
            or (None if _FS.match(name) else
                "may hold only letters, digits and '-' and must start with a letter")
            or ("must not end with '-'" if name.endswith("-") else None))


def ehpc_security_group_name_problem(name: object) -> Optional[str]:
    """`securityGroupName` of create-cluster (doc 23930): 2-32; letters, Chinese, digits, '-',
    '_'; must not start with a digit, '_' or '-'."""
    if not isinstance(name, str):
        return "must be a string"
    return _length(name, 2, 32) or (None if _SG_EHPC.match(name) else
                                    "may hold only letters, Chinese, digits, '-' and '_' and "
                                    "must start with a letter or Chinese character")


def vpc_name_problem(name: object) -> Optional[str]:
    """VPC, subnet and security-group names in the VPC API: 2-32; letters, Chinese, digits,
    '_', '-'; starts with a letter or Chinese character; not 'http:'/'https:'."""
    if not isinstance(name, str):
        return "must be a string"
    if name.lower().startswith(("http:", "https:")):
        return "must not start with http: or https:"
    return _length(name, 2, 32) or (None if _VPC_NAME.match(name) else
                                    "may hold only letters, Chinese, digits, '_' and '-' and "
                                    "must start with a letter or Chinese character")


def description_problem(text: object) -> Optional[str]:
    if not isinstance(text, str):
        return "must be a string"
    if text.lower().startswith(("http:", "https:")):
        return "must not start with http: or https:"
    return _length(text, 0, 128)


# -- root password (CTyun contract 4.3) -----------------------------------------------------------
# doc 23930, masterNodeConfig.rootPassword, verbatim (https://eop.ctyun.cn/ebp/ctapiDocument/
# search?sid=8&api=23930&data=106, as captured 2026-09-24 in github.com/ArvinZJC/ctyun-cli
# @6dcc2310b657 openapi-catalogs/ehpc/public-doc-evidence.json):
#   1、8～30个字符  2、必须包含大小写字母，同时必须包含数字和特殊字符
#   （()`~!@#$%^&*_-+=｜{}[]:;'<>,.?/中的特殊符号）  3、不能以斜线号（/）开头
#   4、不能包含3个及以上连续字符，如abc、123
#   5、不能包含以下用户名或其变体: root(如: Root、toor)、ecs-user (如: ECS-USER、resu-sce)
# The special set holds the full-width '｜' (U+FF5C), not the ASCII '|': taken as written.
PASSWORD_SPECIALS = "()`~!@#$%^&*_-+=\uff5c{}[]:;'<>,.?/"
#: names the password may not contain, in any case: root, ecs-user and the variants rule 5 names
PASSWORD_FORBIDDEN = ("root", "toor", "ecs-user", "resu-sce")


def _has_run(text: str, length: int = 3) -> bool:
    """Rule 4: `length` characters rising by one, as its examples 'abc' and '123' do (letters in
    any case). Falling runs ('cba') and repeats ('aaa') are not what the examples show: CTyun's
    text does not say (docs/ctyun-hcc.md, open questions), so they are not refused here."""
    low = text.lower()
    for i in range(len(low) - length + 1):
        chunk = low[i:i + length]
        if not (chunk.isascii() and (chunk.isdigit() or chunk.isalpha())):
            continue
        if all(ord(b) - ord(a) == 1 for a, b in zip(chunk, chunk[1:])):
            return True
    return False


def _character_problem(pw: str) -> Optional[str]:
    """Rule 2's character set: the documented specials only (kimi-k3's own rule: CTyun lists no
    other character; one it refuses would fail the order after the network is made)."""
    if "|" in pw:
        return ("uses the ASCII '|', which is not in CTyun's documented special characters "
                "(the list has the full-width '\uff5c', U+FF5C); use another special character")
    odd = {c for c in pw if not (c.isascii() and c.isalnum()) and c not in PASSWORD_SPECIALS}
    if odd:
        return (f"may use only letters, digits and the special characters {PASSWORD_SPECIALS} "
                f"({len(odd)} other character(s) found; kimi-k3's own rule: CTyun lists no "
                "other character)")
    return None


def _classes_present(pw: str) -> bool:
    """Rule 2: upper- and lower-case letters, a digit and a listed special character."""
    return (any(c.islower() for c in pw) and any(c.isupper() for c in pw)
            and any(c.isdigit() for c in pw) and any(c in PASSWORD_SPECIALS for c in pw))


def root_password_problem(pw: object) -> Optional[str]:
    """Why `pw` breaks doc 23930's root password rules (above), or None. Never echoes it."""
    if not isinstance(pw, str):
        return "must be a string"
    if not 8 <= len(pw) <= 30:
        return "must be 8-30 characters long"
    if pw.startswith("/"):
        return "must not start with '/'"
    odd = _character_problem(pw)
    if odd:
        return odd
    if not _classes_present(pw):
        return "needs an upper-case letter, a lower-case letter, a digit and a special character"
    if _has_run(pw):
        return "must not contain 3 consecutive characters such as abc or 123"
    if any(word in pw.lower() for word in PASSWORD_FORBIDDEN):
        return "must not contain root, toor, ecs-user or resu-sce in any case"
    return None


def int_in(value: object, lo: int, hi: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and lo <= value <= hi
