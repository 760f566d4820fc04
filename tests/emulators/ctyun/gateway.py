"""The emulator's CTyun gateway: EOP signature, date and access-key checks.

Its own implementation of the algorithm of CTyun contract 1.2 (tests/contracts/ctyun/
convention.py SIGNATURE, from [tf] internal/core/core/request.go; never the client's, so a bug
in one shows against the other), checked in tests against vectors computed
with CTyun's own Python SDK core (ctyun-python-sdk-core 0.0.1 `sign_util.sign`).

What the gateway demands, where the contract leaves it open (CTyun contract 6.1-6.2), is the
hardest consistent choice, each switchable through `Settings`:
- the query string must be exactly what Go's `url.Values.Encode()` makes of its parameters
  (keys sorted, unreserved `A-Za-z0-9-_.~` kept, space as `+`, the rest `%XX` upper-case), and
  the signature must cover that same string: a client passing this gateway passes one that
  signs either its raw string or a re-encoding (`require_canonical_query`);
- `Eop-date` within `max_skew_s` of now, read as UTC, as China time (UTC+8, what the Go SDKs
  send under a literal `Z`) or either (`eop_date_zone`: "either" by default, since both forms
  are in use and the live rule is unknown);
- `ctyun-eop-request-id` a UUID (the clients send `uuid.NewString()`).
Refusal codes are not documented (CTyun contract 6.2): the ones here are this emulator's own.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Dict, List, Mapping, Optional, Tuple
from urllib.parse import parse_qsl

from tests.contracts.ctyun.convention import SIGNATURE

CHINA = timezone(timedelta(hours=8))
UNRESERVED = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.~")
UUID_RE = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-"
                     r"[0-9a-fA-F]{12}")
SIGNED_HEADERS = SIGNATURE["signed_headers"]

# this emulator's codes for gateway refusals (none is documented: CTyun contract 1.4 / section 6)
MISSING = "Openapi.Authorization.Missing"
MALFORMED = "Openapi.Authorization.Malformed"
UNKNOWN_AK = "Openapi.Authorization.AccessKeyNotFound"
BAD_DATE = "Openapi.Authorization.DateInvalid"
STALE_DATE = "Openapi.Authorization.DateExpired"
NOT_CANONICAL = "Openapi.Authorization.QueryNotCanonical"
BAD_SIGNATURE = "Openapi.Authorization.SignatureInvalid"


def go_query_escape(s: str) -> str:
    """Go's url.QueryEscape: unreserved bytes kept, space as '+', the rest %XX (upper hex)."""
    out = []
    for b in s.encode("utf-8"):
        c = chr(b)
        if c in UNRESERVED:
            out.append(c)
        elif c == " ":
            out.append("+")
        else:
            out.append(f"%{b:02X}")
    return "".join(out)


def canonical_query(pairs: List[Tuple[str, str]]) -> str:
    """Go's url.Values.Encode(): sorted by key (stable for repeated keys), escaped, '&'."""
    return "&".join(f"{go_query_escape(k)}={go_query_escape(v)}"
                    for k, v in sorted(pairs, key=lambda kv: kv[0]))


def _mac(key: bytes, msg: str) -> bytes:
    return hmac.new(key, msg.encode("utf-8"), hashlib.sha256).digest()


def string_to_sign(request_id: str, date: str, query: str, body: bytes) -> str:
    return SIGNATURE["string_to_sign"].format(id=request_id, date=date, query=query,
                                              body_hash=hashlib.sha256(body).hexdigest())


def expected_signature(ak: str, sk: str, request_id: str, date: str, query: str,
                       body: bytes) -> str:
    """base64(HMAC(kdate, stringToSign)); ktime=HMAC(SK, date), kak=HMAC(ktime, AK),
    kdate=HMAC(kak, date[0:8]) (CTyun contract 1.2 steps 3-5)."""
    kdate = _mac(_mac(_mac(sk.encode("utf-8"), date), ak), date[:8])
    mac = hmac.new(kdate, string_to_sign(request_id, date, query, body).encode("utf-8"),
                   hashlib.sha256)
    return base64.b64encode(mac.digest()).decode("ascii")


def authorization(ak: str, sk: str, request_id: str, date: str, query: str,
                  body: bytes) -> str:
    """The `Eop-Authorization` header value (for tests that play a client)."""
    sig = expected_signature(ak, sk, request_id, date, query, body)
    return f"{ak} {SIGNED_HEADERS} Signature={sig}"


@dataclass
class GatewayRefusal:
    code: str
    message: str


def parse_query(raw: str) -> Optional[List[Tuple[str, str]]]:
    """The pairs of a raw query string, or None when it cannot be decoded."""
    try:
        return parse_qsl(raw, keep_blank_values=True, strict_parsing=bool(raw),
                         errors="strict")
    except (ValueError, UnicodeDecodeError):
        return None


def check_request(credentials: Mapping[str, str], headers: Mapping[str, str], raw_query: str,
                  body: bytes, *, max_skew_s: float, eop_date_zone: str,
                  require_canonical_query: bool,
                  now: Optional[datetime] = None) -> Optional[GatewayRefusal]:
    """None when the request passes the gateway, else why it does not."""
    auth = headers.get("Eop-Authorization") or ""
    rid = headers.get("ctyun-eop-request-id") or ""
    date = headers.get("Eop-date") or ""
    if not auth or not rid or not date:
        missing = [h for h, v in (("Eop-Authorization", auth), ("ctyun-eop-request-id", rid),
                                  ("Eop-date", date)) if not v]
        return GatewayRefusal(MISSING, f"missing header(s): {', '.join(missing)}")
    parts = auth.split(" ")
    if len(parts) != 3 or parts[1] != SIGNED_HEADERS or not parts[2].startswith("Signature="):
        return GatewayRefusal(MALFORMED, "Eop-Authorization must be "
                                         f"'<AK> {SIGNED_HEADERS} Signature=<base64>'")
    if not UUID_RE.fullmatch(rid):
        return GatewayRefusal(MALFORMED, "ctyun-eop-request-id must be a UUID")
    ak, sig = parts[0], parts[2][len("Signature="):]
    sk = credentials.get(ak)
    if sk is None:
        return GatewayRefusal(UNKNOWN_AK, "the access key is not known")
    try:
        stamp = datetime.strptime(date, "%Y%m%dT%H%M%SZ")
    except ValueError:
        return GatewayRefusal(BAD_DATE, f"Eop-date {date!r} is not yyyyMMddTHHmmssZ")
    now = now or datetime.now(timezone.utc)
    zones = {"utc": [timezone.utc], "china": [CHINA], "either": [timezone.utc, CHINA]}
    skews = [abs((now - stamp.replace(tzinfo=z)).total_seconds())
             for z in zones[eop_date_zone]]
    if min(skews) > max_skew_s:
        return GatewayRefusal(STALE_DATE, f"Eop-date {date} is more than {max_skew_s:.0f} s "
                                          f"from now (read as {eop_date_zone})")
    pairs = parse_query(raw_query)
    if pairs is None:
        return GatewayRefusal(NOT_CANONICAL, "the query string cannot be decoded")
    canonical = canonical_query(pairs)
    if require_canonical_query and raw_query != canonical:
        return GatewayRefusal(NOT_CANONICAL, "the query string must be sorted and escaped like "
                                             f"Go's url.Values.Encode(): {canonical!r}")
    want = expected_signature(ak, sk, rid, date, raw_query, body)
    if not hmac.compare_digest(sig, want):
        return GatewayRefusal(BAD_SIGNATURE, "the signature does not match")
    return None


def query_dict(raw_query: str) -> Tuple[Dict[str, str], List[str]]:
    """The query as a dict, and the keys given more than once (refused by the caller)."""
    pairs = parse_query(raw_query) or []
    out: Dict[str, str] = {}
    repeated = []
    for k, v in pairs:
        if k in out:
            repeated.append(k)
        out[k] = v
    return out, repeated
