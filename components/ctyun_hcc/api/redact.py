"""Secrets out of every text built from a CTyun answer or request (pure).

CTyun's error messages are free text from its side: a gateway or API may echo what it was sent
(a `rootPassword` that breaks a rule, the `Eop-Authorization` header, the access key). Such
text reaches exceptions (and, through Pulumi's provider host, the whole chained traceback),
log records and the progress file. So, one rule applied at each of those exits:

- every known secret value is replaced by `[secret]`: the call's credentials (AK, SK), its
  signed header values, the values of secret-named fields of its body or query
  (`SECRET_FIELD_RE`), and what the provider knows (the root password);
- in addition, anything written as `<secret-named field> = value` or `"field": "value"` is
  redacted whatever the value, so an echo of a secret kimi-k3 did not know is caught too.
"""

from __future__ import annotations

import json
import re
from typing import Any, Iterable, List, Optional
from urllib.parse import quote, quote_plus

SHOWN = "[secret]"
#: field names whose values are secrets (the create-cluster body's `rootPassword`, any
#: `password`, `secretKey`/`accessKey`, a private key); `clientToken` is not one
SECRET_FIELD_RE = re.compile(r"(?i)(pass(?:word|wd)|secret|private_?key|access_?key)")
#: `name=value`, `name: value`, `"name": "value"`, `'name': 'value'` for a secret-named field
#: (or a signature / authorization header), also as JSON inside JSON (`\"rootPassword\":...`)
#: The name is a whole run of name characters (it starts where the run starts, it is taken
#: whole, possessively) that contains a secret word somewhere (the lookahead): the same names
#: as `[\w.]*(?:word)[\w.]*`, but linear in the text. That older form retried every start
#: inside a long run and backtracked over it each time: 16,000 letters took 34 s.
_ECHO_RE = re.compile(
    r"""(?ix)
    (?P<name>(?<![\w.\[\]-])
             (?=[\w.\[\]-]*?(?:pass(?:word|wd)|secret|private_?key|access_?key|signature
                               |authorization))
             [\w.\[\]-]++)
    (?P<sep>\\?["']?\s*[:=]\s*\\?["']?)
    (?P<value>(?!\[secret\])(?![<(])[^\s"'\\,;&}\])]+)""")
#: shorter values are not redacted by value (they would blank ordinary words)
MIN_LEN = 4


def secret_fields(obj: Any) -> List[str]:
    """The string values of secret-named fields anywhere in a request body or query."""
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
    """`text` with each secret value (in its usual spellings) and each `secret-field=value`
    replaced by `[secret]`."""
    if not isinstance(text, str) or not text:
        return text
    for secret in sorted({s for s in secrets if isinstance(s, str) and len(s) >= MIN_LEN},
                         key=len, reverse=True):
        for form in _forms(secret):
            text = text.replace(form, SHOWN)
    return _ECHO_RE.sub(lambda m: f"{m['name']}{m['sep']}{SHOWN}", text)


def _redact_value(value: Any, secrets) -> Any:
    if isinstance(value, str):
        return redact_text(value, secrets)
    if value is None or isinstance(value, (bool, int, float)):
        return value
    shown = repr(value)
    red = redact_text(shown, secrets)
    return value if red == shown else red


def scrub(exc: BaseException, secrets: Iterable[Optional[str]] = ()) -> BaseException:
    """Redact `exc` in place (its args, its text attributes) and every exception chained to
    it (`__cause__`, `__context__`), which a traceback prints too; returns `exc`."""
    secrets = [s for s in secrets if isinstance(s, str)]
    seen = set()
    e: Optional[BaseException] = exc
    todo = [exc]
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
