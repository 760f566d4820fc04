"""The grammar and the strength floor of `kimi-k3:apiKey` (pure; refusals never show the key).

Grammar: the key is what a client sends after `Authorization: Bearer `, so it has the form
RFC 6750 gives that token (section 2.1: `b64token = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~"
/ "+" / "/" ) *"="`; https://www.rfc-editor.org/rfc/rfc6750#section-2.1), with at most two
trailing `=` (base64 padding) and at most MAX_LEN characters. Every real generator's output
fits: Python's `secrets.token_urlsafe` (`[A-Za-z0-9_-]`, CPython Lib/secrets.py),
`secrets.token_hex` and `uuid4` (hex and `-`), `openssl rand -base64 N` on one line
(`[A-Za-z0-9+/=]`), OpenAI-style `sk-...` keys. Nothing else does: no quote, backslash,
whitespace, control character, `$` or `%`, so the key is inert in a shell word, a curl
header line, a curl config file, YAML and JSON. A key with `"` or `\\` is refused rather than
sent: RFC 6750 clients cannot send it as a bearer token, and `openssl rand -base64` output that
wrapped onto a second line is refused, not silently joined.

Strength: a key guarding an endpoint reachable from public addresses must have at least
MIN_PUBLIC_LEN characters (32 base64url characters are 192 bits from `token_urlsafe`, 32 hex
characters 128 bits from `token_hex(16)`) and MIN_DISTINCT different characters (so `aaaa...`
or `1212...` padding to the length does not pass). This is a floor that every generator above
meets, not an entropy estimate.
"""

from __future__ import annotations

import re
from typing import Optional

from ..inference.errors import NOT_SHOWN, ConfigError

KEY = "kimi-k3:apiKey"
MAX_LEN = 1024
MIN_PUBLIC_LEN = 32
MIN_DISTINCT = 8
#: RFC 6750 b64token of at most MAX_LEN characters and at most two `=`; also a POSIX ERE
#: (check.sh tests the key file with it: bash `[[ =~ ]]` in the C locale)
BEARER_TOKEN_ERE = rf"^[A-Za-z0-9._~+/-]{{1,{MAX_LEN}}}={{0,2}}$"
_BEARER_TOKEN = re.compile(BEARER_TOKEN_ERE[1:-1])
#: what the offline plan reads for an encrypted value (components/offline/runner.py)
OFFLINE_PLACEHOLDER = "[secret]"
GENERATE = "generate one with: python3 -c 'import secrets; print(secrets.token_urlsafe(32))'"


def problem(value: str, public: bool) -> Optional[str]:
    """Why `value` cannot be the API key (of an endpoint public or not), or None. Never quotes
    the value."""
    if not isinstance(value, str) or not value:
        return "is empty"
    if not _BEARER_TOKEN.fullmatch(value):
        if len(value) > MAX_LEN and _BEARER_TOKEN.fullmatch(value[:MAX_LEN]):
            return f"is longer than {MAX_LEN} characters"
        return ("holds a character a bearer token cannot carry (RFC 6750: letters, digits, "
                "- . _ ~ + / and up to two trailing =; no quotes, backslashes, spaces or line "
                "breaks)")
    if public and (len(value) < MIN_PUBLIC_LEN or len(set(value)) < MIN_DISTINCT):
        return (f"is too weak for an endpoint open to public addresses ({len(value)} characters, "
                f"{len(set(value))} different; at least {MIN_PUBLIC_LEN} characters and "
                f"{MIN_DISTINCT} different ones)")
    return None


def check(value: Optional[str], public: bool, key: str = KEY) -> Optional[str]:
    """`value` when it is usable (None stays None: no key); ConfigError naming `key` (the value
    shown as `<not shown>`) with the fix otherwise."""
    if value is None:
        return None
    why = problem(value, public)
    if why:
        raise ConfigError(key, NOT_SHOWN, GENERATE + " and `pulumi config set --secret "
                          f"{key} <it>`", why)
    return value
