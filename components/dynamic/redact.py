"""The one secret scrubber: secrets out of every text that leaves kimi-k3 (pure).

Texts that may carry a secret reach people by three exits: exceptions (Pulumi's provider host
prints the whole chained traceback), log lines, and the progress file with its stderr echo.
Their sources are free text we do not control: a CTyun gateway may echo the request it was sent
(a `rootPassword` that breaks a rule, the `Eop-Authorization` header, the access key), a remote
command's stderr may repeat an API key, a Kubernetes or boto3 error may quote a header. So one
rule, applied at each exit (progress, the CTyun client, every dynamic provider's errors and
logs through `provider.py`):

1. every known secret value (the caller says which: credentials, secret inputs, signed header
   values) is replaced by `[secret]`, as is and in the spellings an answer may give it
   (JSON-escaped, URL-encoded); values shorter than `MIN_LEN` are not replaced (they would blank
   ordinary words);
2. a private key block (`-----BEGIN ... PRIVATE KEY-----` to its end) is replaced whole;
3. anything written as `<secret-named field> = value`, `name: value`, `"name": "value"` (also
   JSON inside JSON) is replaced whatever the value, so an echo of a secret kimi-k3 did not know
   is caught too; an authorization scheme (`Bearer`, `Basic`) goes with its value. The fixed
   placeholders kimi-k3 itself prints for a hidden value (`PLACEHOLDERS`) are left as they are;
4. recognisable credentials without a name: `Bearer <token>`, Hugging Face tokens (`hf_...`),
   OpenAI-style keys (`sk-...`).

Secret-named fields are `SECRET_FIELD_RE` (passwords, secrets, private/access/API keys, and
names ending in an auth, session, access, refresh, Hugging Face token or just `token`); CTyun's
`clientToken` (an idempotency token) and `max_tokens` are not secrets.
"""

from __future__ import annotations

import json
import re
from typing import Any, Iterable, List, Optional
from urllib.parse import quote, quote_plus

SHOWN = "[secret]"
#: shorter values are not redacted by value (they would blank ordinary words)
MIN_LEN = 4
#: field names whose values are secrets (in request bodies, provider inputs, echoed text)
_SECRET_NAME = (r"pass(?:word|wd)|secret|private_?key|access_?key|api[_-]?key"
                r"|(?:^|auth|hf|session|access|refresh|bearer)[_-]?token$")
SECRET_FIELD_RE = re.compile(rf"(?i)({_SECRET_NAME})")
#: what kimi-k3 prints in place of a hidden value: not a secret, left readable
PLACEHOLDERS = (SHOWN, "[set]", "<not shown>", "(hidden)", "(value not shown)")
_PLACEHOLDER = "|".join(re.escape(p) for p in PLACEHOLDERS)
#: `name=value`, `name: value`, `"name": "value"`, `\"name\":\"value\"` for a secret-named
#: field, a signature or an authorization header. The name is a whole run of name characters
#: (it starts where the run starts and is taken whole, possessively) that contains a secret
#: word somewhere or ends in `token` (the lookahead): linear in the text, where the form
#: `[\w.]*(?:word)[\w.]*` retried every start inside a long run (16,000 letters took 34 s).
_ECHO_RE = re.compile(
    r"""(?ix)
    (?P<name>(?<![\w.\[\]-])
             (?=[\w.\[\]-]*?(?:pass(?:word|wd)|secret|private_?key|access_?key|api[_-]?key
                               |signature|authorization)
              | [\w.\[\]-]*?(?<!client)token(?![\w.\[\]-]))
             [\w.\[\]-]++)
    (?P<sep>\\?["']?\s*[:=]\s*\\?["']?)
    (?!(?:""" + _PLACEHOLDER + r""")(?:$|[\s"'\\,;)\]}]))
    (?P<value>(?:(?:bearer|basic)\s+)?(?:[^\s"',;\\]|\\(?!["']))+)""")
_PRIVATE_KEY_RE = re.compile(
    r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)", re.S)
_UNNAMED = (
    re.compile(r"(?i)(\bbearer\s+)(?!" + re.escape(SHOWN) + r")[A-Za-z0-9._~+/=-]+"),
    re.compile(r"()\bhf_[A-Za-z0-9]{20,}"),
    re.compile(r"()\bsk-[A-Za-z0-9_-]{16,}"),
)


def secret_fields(obj: Any) -> List[str]:
    """The string values of secret-named fields anywhere in a request body, a query or a
    provider's inputs (nested dicts and lists included)."""
    out: List[str] = []
    if isinstance(obj, dict):
        for key, value in obj.items():
            if isinstance(value, str) and SECRET_FIELD_RE.search(str(key)):
                out.append(value)
            else:
                out.extend(secret_fields(value))
    elif isinstance(obj, (list, tuple)):
        for item in obj:
            out.extend(secret_fields(item))
    return out


def _forms(secret: str) -> List[str]:
    """The spellings a secret can take in an answer: as is, JSON-escaped, URL-encoded."""
    forms = {secret, json.dumps(secret)[1:-1], quote(secret, safe=""), quote_plus(secret, safe="")}
    return sorted((f for f in forms if len(f) >= MIN_LEN), key=len, reverse=True)


def redact_text(text: str, secrets: Iterable[Optional[str]] = ()) -> str:
    """`text` with each secret value (in its usual spellings), each private key block, each
    `secret-field=value` and each recognisable credential replaced by `[secret]`."""
    if not isinstance(text, str) or not text:
        return text
    known = {str(s) for s in secrets if s is not None and not isinstance(s, bool)}
    for secret in sorted((s for s in known if len(s) >= MIN_LEN), key=len, reverse=True):
        for form in _forms(secret):
            text = text.replace(form, SHOWN)
    text = _PRIVATE_KEY_RE.sub(SHOWN, text)
    text = _ECHO_RE.sub(lambda m: f"{m['name']}{m['sep']}{SHOWN}", text)
    for pattern in _UNNAMED:
        text = pattern.sub(r"\1" + SHOWN, text)
    return text


def _redact_value(value: Any, secrets) -> Any:
    if isinstance(value, str):
        return redact_text(value, secrets)
    if value is None or isinstance(value, (bool, int, float)):
        return value
    shown = repr(value)
    red = redact_text(shown, secrets)
    return value if red == shown else red


def redact_error(exc: BaseException, secrets: Iterable[Optional[str]] = ()) -> BaseException:
    """Redact `exc` in place (its args, its text attributes) and every exception chained to
    it (`__cause__`, `__context__`), which a traceback prints too; returns `exc`."""
    secrets = [s for s in secrets if isinstance(s, str)]
    seen = set()
    todo: List[Optional[BaseException]] = [exc]
    while todo:
        e = todo.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        try:
            e.args = tuple(_redact_value(a, secrets) for a in e.args)
        except (TypeError, AttributeError):
            pass
        for name, value in list(vars(e).items()) if hasattr(e, "__dict__") else ():
            if name.startswith("__"):
                continue
            red = _redact_value(value, secrets)
            if red is not value:
                try:
                    setattr(e, name, red)
                except (AttributeError, TypeError):
                    pass
        todo += [e.__cause__, e.__context__]
    return exc
