"""A minimal signed HTTP caller for testing the emulator itself (a test double of a client).

It signs with gateway.py's functions, whose correctness the unit tests pin against vectors
made with CTyun's own Python SDK core; every header and byte can be overridden so tests can
send what a broken client would.
"""

from __future__ import annotations

import json
import uuid
from datetime import datetime, timedelta, timezone
from typing import Any, Dict, Optional, Tuple

import requests

from .gateway import authorization, canonical_query

CHINA = timezone(timedelta(hours=8))


def eop_date(now: Optional[datetime] = None, zone=CHINA) -> str:
    return (now or datetime.now(timezone.utc)).astimezone(zone).strftime("%Y%m%dT%H%M%SZ")


class RawClient:
    def __init__(self, url: str, ak: str, sk: str):
        self.url, self.ak, self.sk = url, ak, sk

    def call(self, method: str, path: str, query: Optional[Dict[str, Any]] = None,
             body: Any = None, *, raw_query: Optional[str] = None,
             body_bytes: Optional[bytes] = None, date: Optional[str] = None,
             sign_query: Optional[str] = None, ak: Optional[str] = None,
             headers: Optional[Dict[str, str]] = None,
             timeout: float = 10) -> Tuple[int, Any]:
        """(HTTP status, parsed JSON answer or None)."""
        q = raw_query if raw_query is not None else canonical_query(
            [(k, str(v)) for k, v in (query or {}).items()])
        data = body_bytes if body_bytes is not None else (
            json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
            if body is not None else b"")
        rid = str(uuid.uuid4())
        date = date or eop_date()
        hdrs = {"ctyun-eop-request-id": rid, "Eop-date": date,
                "Eop-Authorization": authorization(ak or self.ak, self.sk, rid, date,
                                                   q if sign_query is None else sign_query,
                                                   data)}
        if method == "POST":
            hdrs["Content-Type"] = "application/json"
        hdrs.update(headers or {})
        r = requests.request(method, f"{self.url}{path}" + (f"?{q}" if q else ""),
                             data=data or None, headers=hdrs, timeout=timeout)
        try:
            return r.status_code, r.json()
        except ValueError:
            return r.status_code, None
