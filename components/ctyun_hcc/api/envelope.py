"""CTyun's response envelope, judged by one rule (pure).

Contract: CTyun contract 1.3. The gateway answers HTTP 200 even when the API refuses;
the verdict is `statusCode`: success iff `str(statusCode) == "800"` (it arrives as a number or a
string). Three envelope variants are in use: E-HPC puts its code in `error`, the older E-HPC
family and VPC in `errorCode` (VPC writes `SUCCESS` there on success), and the text is `message`
then `description`. Throttling has no documented code (CTyun contract 1.4): HTTP 429, or a refusal
whose code or message reads like throttling, is treated as "refused before it ran". Quota,
balance and "limit exceeded" refusals have no documented code either (CTyun contract 1.4, open
question 2) and are never throttling, even on HTTP 429: waiting does not raise a quota or pay a
bill, so they fail at once with CTyun's code and message.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Optional

from .errors import ApiError, ResponseError

#: spellings of "too many requests" (no code is documented; these cover the usual gateway words)
THROTTLE_RE = re.compile(r"throttl|flow.?control|rate.?limit|request.?limit|too.?many"
                         r"|qps|限流|请求过于频繁", re.I)
#: spellings of a quota, a limit or the account's money: never throttling, never retried
#: (a bare "limit exceeded" is a resource limit, "instance limit exceeded"; a request or rate
#: limit is throttling)
_NOT_A_RATE = r"(?<!request)(?<!request[ _.-])(?<!rate)(?<!rate[ _.-])(?<!qps)(?<!qps[ _.-])"
QUOTA_RE = re.compile(r"quota|" + _NOT_A_RATE + r"limit.?exceed|exceed.{0,20}(?<!request )"
                      r"(?<!qps )(?<!rate )limit|balance|insufficient|arrear|overdue|not.?enough"
                      r"|配额|余额|欠费|超出|超过.{0,10}限", re.I)
#: placeholders that mean "no error" inside a success or failure envelope
NO_ERROR = ("", "SUCCESS")


@dataclass(frozen=True)
class Verdict:
    """What one HTTP answer means. Exactly one of `value`, `error`, `fault` is meaningful."""

    ok: bool
    value: Any = None
    error: Optional[ApiError] = None
    #: a transport-level fault (no envelope): retryable; executed or not, unknown unless
    #: `not_run` (HTTP 429 too many requests, 503 unavailable: refused before running)
    fault: str = ""
    throttled: bool = False
    not_run: bool = False


def error_code(doc: dict) -> str:
    for key in ("error", "errorCode"):
        value = doc.get(key)
        if value is not None and str(value) not in NO_ERROR:
            return str(value)
    return ""


def error_text(doc: dict) -> str:
    for key in ("message", "description"):
        value = doc.get(key)
        if value not in (None, ""):
            return str(value)
    return ""


def judge(api: str, http_status: int, raw: bytes, request_id: str = "") -> Verdict:
    """The meaning of one answer to `api`: the `returnObj`, a refusal, or a transport fault."""
    try:
        doc = json.loads(raw.decode("utf-8")) if raw else None
    except (ValueError, UnicodeDecodeError):
        doc = None
    if not isinstance(doc, dict) or "statusCode" not in doc:
        if http_status >= 500 or http_status == 429:
            return Verdict(False, fault=f"HTTP {http_status} without a CTyun envelope",
                           throttled=http_status == 429, not_run=http_status in (429, 503))
        if http_status >= 400:
            return Verdict(False, error=ApiError(api, f"HTTP{http_status}",
                                                 "answer without a CTyun envelope", http_status,
                                                 request_id))
        if not isinstance(doc, dict):
            raise ResponseError(api, "the answer", "is not a JSON object",
                                raw[:120].decode("utf-8", "replace"))
        raise ResponseError(api, "statusCode", "is missing", sorted(doc)[:8])
    status = str(doc.get("statusCode")).strip()
    if status == "800" and http_status < 400:
        return Verdict(True, value=doc.get("returnObj"))
    code = error_code(doc) or f"statusCode {status}"
    text = error_text(doc) or "no message"
    err = ApiError(api, code, text, http_status, request_id)
    said = f"{code} {text}"
    throttled = (http_status == 429 or bool(THROTTLE_RE.search(said))) and \
        not QUOTA_RE.search(said)
    return Verdict(False, error=err, throttled=throttled)
