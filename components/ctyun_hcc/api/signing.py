"""CTyun "EOP" request signing (pure: no clock, no network, no randomness).

Contract: CTyun contract 1.2 (tests/contracts/ctyun/convention.py SIGNATURE), from CTyun's own
Go client (github.com/ctyun-it/terraform-provider-ctyun @80651fddcdcb
`internal/core/core/request.go`, `GetSign`/`buildRequest`).
Every call carries `ctyun-eop-request-id`, `Eop-date` and `Eop-Authorization`; the signature is
an HMAC-SHA256 chain (SK -> date -> AK -> yyyyMMdd) applied to a canonical string made of the two
signed headers, the query string exactly as sent, and the hex SHA-256 of the exact body bytes.

The query string is built the way those Go clients build it, with `url.Values.Encode()`: pairs
sorted by key (several values of one key keep their order), key and value escaped with Go's
query escaping (unreserved `A-Z a-z 0-9 - _ . ~` kept, space as `+`, every other byte of the
UTF-8 encoding as `%XX`, upper-case hex), joined by `&`. Python's `quote_plus(s, safe="")`
applies exactly that rule. The transport sends the string this module returns, byte for byte,
so what is signed is what the gateway receives.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from datetime import datetime, timedelta, timezone
from typing import Iterable, List, Mapping, Optional, Tuple, Union
from urllib.parse import quote_plus

#: CTyun's Go clients format the machine's local time and append a literal "Z"; run in China,
#: that is UTC+8 labelled Z. Which zone the gateway expects is not documented (CTyun contract 6.1):
#: we send what CTyun's own clients send from China.
CHINA_TZ = timezone(timedelta(hours=8))
DATE_FORMAT = "%Y%m%dT%H%M%SZ"
SIGNED_HEADERS = "ctyun-eop-request-id;eop-date"

QueryValue = Union[str, int, float, bool, None, Iterable]


def eop_date(instant: datetime) -> str:
    """The `Eop-date` header value for an aware datetime (written in China time, literal Z)."""
    if instant.tzinfo is None:
        raise ValueError("eop_date needs an aware datetime (pass datetime.now(timezone.utc))")
    return instant.astimezone(CHINA_TZ).strftime(DATE_FORMAT)


def parse_eop_date(value: str) -> datetime:
    """Inverse of `eop_date`: the aware instant an `Eop-date` header denotes."""
    return datetime.strptime(value, DATE_FORMAT).replace(tzinfo=CHINA_TZ)


def query_value(value: object) -> str:
    """How one scalar query value is written (booleans as Go writes them: true/false)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def query_pairs(params: Optional[Mapping[str, QueryValue]]) -> List[Tuple[str, str]]:
    """(key, value) pairs in url.Values.Encode order; None values are left out, a list value
    gives one pair per element (url.Values semantics)."""
    pairs: List[Tuple[str, str]] = []
    for key in sorted(str(k) for k in (params or {})):
        value = (params or {})[key]
        if value is None:
            continue
        if isinstance(value, (list, tuple)):
            pairs.extend((key, query_value(v)) for v in value)
        else:
            pairs.append((key, query_value(value)))
    return pairs


def escape(text: str) -> str:
    """Go's url.QueryEscape."""
    return quote_plus(text, safe="")


def canonical_query(params: Optional[Mapping[str, QueryValue]]) -> str:
    """The query string to send and to sign (url.Values.Encode); "" without parameters."""
    return "&".join(f"{escape(k)}={escape(v)}" for k, v in query_pairs(params))


def body_hash(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()


def string_to_sign(request_id: str, date: str, query: str, body: bytes) -> str:
    """Signed headers, a blank line, the query, the hex SHA-256 of the body."""
    return f"ctyun-eop-request-id:{request_id}\neop-date:{date}\n\n{query}\n{body_hash(body)}"


def _hmac(key: bytes, msg: str) -> bytes:
    return hmac.new(key, msg.encode("utf-8"), hashlib.sha256).digest()


def signing_key(ak: str, sk: str, date: str) -> bytes:
    """kdate = HMAC(HMAC(HMAC(SK, date), AK), date[0:8])."""
    return _hmac(_hmac(_hmac(sk.encode("utf-8"), date), ak), date[:8])


def signature(ak: str, sk: str, request_id: str, date: str, query: str, body: bytes) -> str:
    """Base64 HMAC-SHA256 of the canonical string under the derived key."""
    mac = _hmac(signing_key(ak, sk, date), string_to_sign(request_id, date, query, body))
    return base64.b64encode(mac).decode("ascii")


def authorization(ak: str, sig: str) -> str:
    return f"{ak} Headers={SIGNED_HEADERS} Signature={sig}"


def sign_headers(ak: str, sk: str, request_id: str, date: str, query: str,
                 body: bytes) -> dict:
    """The three headers that authenticate one request whose query string is `query`
    (from `canonical_query`) and whose body bytes are `body`."""
    return {
        "ctyun-eop-request-id": request_id,
        "Eop-date": date,
        "Eop-Authorization": authorization(ak, signature(ak, sk, request_id, date, query, body)),
    }
