"""CTyun "EOP" request signing (pure: no clock, no network, no randomness).

Every CTyun OpenAPI call carries three headers: a request id, a timestamp and an
`Eop-Authorization` header whose signature is an HMAC-SHA256 chain over the secret key, the
timestamp, the access key and the date, applied to a canonical string made of the two signed
headers, the sorted query and the SHA-256 of the body (REFERENCE.md section 4). Keeping this
pure lets the unit tests check it against vectors computed independently (with openssl), and
lets the emulator verify signatures the same way the real gateway does.

The caller supplies the request id and the timestamp; `eop_date` formats a UTC instant the way
CTyun's SDKs do: China local time (UTC+8) with a literal `Z`.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from datetime import datetime, timedelta, timezone
from typing import Mapping, Optional
from urllib.parse import quote

#: CTyun's SDKs write the local time of China (UTC+8) and append a literal "Z".
CHINA_TZ = timezone(timedelta(hours=8))
DATE_FORMAT = "%Y%m%dT%H%M%SZ"
SIGNED_HEADERS = "ctyun-eop-request-id;eop-date"


def eop_date(instant: datetime) -> str:
    """The `Eop-date` header value for an aware datetime (formatted in China time)."""
    if instant.tzinfo is None:
        raise ValueError("eop_date needs an aware datetime (pass datetime.now(timezone.utc))")
    return instant.astimezone(CHINA_TZ).strftime(DATE_FORMAT)


def parse_eop_date(value: str) -> datetime:
    """Inverse of `eop_date`: the aware instant an `Eop-date` header denotes."""
    return datetime.strptime(value, DATE_FORMAT).replace(tzinfo=CHINA_TZ)


def canonical_query(params: Optional[Mapping[str, object]]) -> str:
    """Query parameters sorted by key, each `key=value` URL-encoded, joined by `&`."""
    if not params:
        return ""
    items = sorted((str(k), "" if v is None else query_value(v)) for k, v in params.items())
    return "&".join(f"{quote(k, safe='')}={quote(v, safe='')}" for k, v in items)


def query_value(value: object) -> str:
    """How a query parameter value is written, both on the wire and in the signed string."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def string_to_sign(request_id: str, date: str, query: str, body: bytes) -> str:
    """The canonical string: signed headers, blank line, query, hex SHA-256 of the body."""
    digest = hashlib.sha256(body).hexdigest()
    return f"ctyun-eop-request-id:{request_id}\neop-date:{date}\n\n{query}\n{digest}"


def _hmac(key: bytes, msg: str) -> bytes:
    return hmac.new(key, msg.encode("utf-8"), hashlib.sha256).digest()


def signing_key(ak: str, sk: str, date: str) -> bytes:
    """kdate = HMAC(HMAC(HMAC(SK, date), AK), date[0:8])."""
    ktime = _hmac(sk.encode("utf-8"), date)
    kak = _hmac(ktime, ak)
    return _hmac(kak, date[:8])


def signature(ak: str, sk: str, request_id: str, date: str, query: str, body: bytes) -> str:
    """Base64 HMAC-SHA256 of the canonical string under the derived key."""
    key = signing_key(ak, sk, date)
    mac = hmac.new(key, string_to_sign(request_id, date, query, body).encode("utf-8"),
                   hashlib.sha256).digest()
    return base64.b64encode(mac).decode("ascii")


def authorization(ak: str, sig: str) -> str:
    return f"{ak} Headers={SIGNED_HEADERS} Signature={sig}"


def sign_headers(ak: str, sk: str, request_id: str, date: str,
                 params: Optional[Mapping[str, object]], body: bytes) -> dict:
    """The three headers that authenticate one request."""
    sig = signature(ak, sk, request_id, date, canonical_query(params), body)
    return {
        "ctyun-eop-request-id": request_id,
        "Eop-date": date,
        "Eop-Authorization": authorization(ak, sig),
    }
