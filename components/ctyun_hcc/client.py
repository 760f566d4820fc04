"""HTTP client for CTyun's OpenAPI: signing, the response envelope, timeouts and safe retries.

Why a client of our own: CTyun publishes no Python SDK for E-HPC, its gateway answers HTTP 200
even on failure (the verdict is `statusCode` 800/900, as an int or a string), and a cluster order
retried blindly after a lost response can buy a second cluster. This module centralises those
rules so every operation in `ehpc.py` gets them:

- credentials are read when a call is made (from `CTYUN_AK`/`CTYUN_SK`, or from the provider's
  runtime config), never stored in anything that is pickled, never logged or put in exceptions;
- throttling (`statusCode` 900 with a throttling code, or HTTP 429), HTTP 5xx and connection
  errors are retried with exponential backoff and full jitter, within the caller's deadline;
- a call that orders resources (`ordering=True`) is retried after a 5xx or a lost connection only
  when its body carries a `clientToken` (the API deduplicates those for 24 h); a throttled call
  was rejected before it ran, so it is always safe to repeat.
"""

from __future__ import annotations

import json
import logging
import os
import random
import re
import time
import uuid
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Callable, Mapping, Optional, Union

import requests

from ..inference.errors import ConfigError
from . import signing

log = logging.getLogger("kimi_k3.ctyun")

#: one API host per product; `ctyun:endpoint` / CTYUN_ENDPOINT replaces all of them (emulator,
#: private gateway)
PRODUCT_HOSTS = {
    "hpc": "https://cthpc-global.ctapi.ctyun.cn",
    "vpc": "https://ctvpc-global.ctapi.ctyun.cn",
    "ecs": "https://ctecs-global.ctapi.ctyun.cn",
    "ebm": "https://ebm-global.ctapi.ctyun.cn",
    "sfs": "https://sfs-global.ctapi.ctyun.cn",
    "oceanfs": "https://oceanfs-global.ctapi.ctyun.cn",
}

#: error codes/messages that mean "too many requests, nothing was done" (the exact codes of the
#: real gateway are not public; these patterns cover the spellings seen in CTyun SDKs)
_THROTTLE = re.compile(r"throttl|flow.?control|rate.?limit|limit.?exceed|too.?many|qps", re.I)


class CtyunError(Exception):
    """Base of everything this client raises."""


class ApiError(CtyunError):
    """The API answered and refused: carries CTyun's error code and message."""

    def __init__(self, path: str, code: str, message: str, http_status: int = 200,
                 request_id: str = ""):
        self.path, self.code, self.message = path, code, message
        self.http_status, self.request_id = http_status, request_id
        super().__init__(f"CTyun {path} failed: {code}: {message}"
                         + (f" (request {request_id})" if request_id else ""))


class ThrottledError(ApiError):
    """Throttled on every attempt until the retries or the deadline ran out."""


class TransportError(CtyunError):
    """No usable answer (connection error, timeout, HTTP 5xx) after the allowed retries."""

    def __init__(self, path: str, detail: str, retried: bool):
        self.path, self.detail, self.retried = path, detail, retried
        note = "" if retried else " (not retried: it orders resources and has no clientToken)"
        super().__init__(f"CTyun {path}: {detail}{note}")


@dataclass(frozen=True)
class Credentials:
    """An access key pair. `repr` never shows the secret key."""

    ak: str
    sk: str

    def __repr__(self) -> str:
        return f"Credentials(ak={self.ak[:4]}..., sk=<hidden>)"

    __str__ = __repr__


def credentials_from(env: Mapping[str, str] = os.environ,
                     config: Optional[Mapping[str, Any]] = None) -> Credentials:
    """Credentials from CTYUN_AK/CTYUN_SK, else from `ctyun:accessKey`/`ctyun:secretKey` config."""
    ak, sk = env.get("CTYUN_AK"), env.get("CTYUN_SK")
    if not (ak and sk) and config:
        ak, sk = config.get("ctyun:accessKey"), config.get("ctyun:secretKey")
    if not (ak and sk):
        raise ConfigError("CTYUN_AK/CTYUN_SK", None,
                          "export CTYUN_AK and CTYUN_SK, or `pulumi config set --secret "
                          "ctyun:accessKey ...` and `ctyun:secretKey`", "are not set")
    return Credentials(str(ak), str(sk))


def resolve_endpoint(product: str, override: Optional[str] = None,
                     env: Mapping[str, str] = os.environ) -> str:
    """Base URL for a product: explicit override, then CTYUN_ENDPOINT, then CTyun's host."""
    base = override or env.get("CTYUN_ENDPOINT")
    if base:
        if not re.match(r"^https?://[^\s/]+", base):
            raise ConfigError("ctyun:endpoint", base, "give a URL such as https://host:port",
                              "is not an http(s) URL")
        return base.rstrip("/")
    if product not in PRODUCT_HOSTS:
        raise ValueError(f"unknown CTyun product {product!r}")
    return PRODUCT_HOSTS[product]


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with full jitter: attempt n waits U(0, min(max, base * 2**n))."""

    max_attempts: int = 6
    base_delay_s: float = 0.5
    max_delay_s: float = 20.0

    def delay(self, attempt: int, rng: random.Random) -> float:
        return rng.uniform(0, min(self.max_delay_s, self.base_delay_s * (2 ** attempt)))


class _Retryable(Exception):
    def __init__(self, detail: str, executed_maybe: bool, throttle: Optional[ApiError] = None):
        super().__init__(detail)
        self.detail, self.executed_maybe, self.throttle = detail, executed_maybe, throttle


class CtyunClient:
    """Signed calls to CTyun's OpenAPI. Holds no secret: `credentials` is a callable."""

    def __init__(self, credentials: Union[Callable[[], Credentials], Credentials, None] = None,
                 endpoint: Optional[str] = None, timeout_s: float = 30.0,
                 connect_timeout_s: float = 5.0, retry: RetryPolicy = RetryPolicy(),
                 session: Optional[requests.Session] = None,
                 sleep: Callable[[float], None] = time.sleep,
                 rng: Optional[random.Random] = None,
                 now: Callable[[], datetime] = lambda: datetime.now(timezone.utc)):
        if credentials is None:
            credentials = credentials_from
        elif isinstance(credentials, Credentials):
            pair = credentials
            credentials = lambda: pair  # noqa: E731
        self._credentials = credentials
        self._endpoint = endpoint
        self._timeout = (connect_timeout_s, timeout_s)
        self._retry = retry
        self._session = session or requests.Session()
        self._sleep = sleep
        self._rng = rng or random.Random()
        self._now = now
        #: HTTP requests sent, per path (benchmarks and tests count API calls with it)
        self.calls: Counter = Counter()

    def get(self, product: str, path: str, params: Optional[Mapping[str, Any]] = None,
            deadline: Optional[float] = None) -> Any:
        return self.call("GET", product, path, params=params, deadline=deadline)

    def post(self, product: str, path: str, body: Mapping[str, Any], ordering: bool = False,
             deadline: Optional[float] = None) -> Any:
        return self.call("POST", product, path, body=body, ordering=ordering, deadline=deadline)

    def call(self, method: str, product: str, path: str,
             params: Optional[Mapping[str, Any]] = None,
             body: Optional[Mapping[str, Any]] = None, ordering: bool = False,
             deadline: Optional[float] = None) -> Any:
        """Send one API call; return its `returnObj` or raise ApiError / TransportError.

        `deadline` is a `time.monotonic()` value: no backoff sleeps past it.
        """
        # sent exactly as signed (requests would spell True as "True", the signature "true")
        params = {k: signing.query_value(v) for k, v in (params or {}).items() if v is not None}
        payload = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8") \
            if body is not None else b""
        safe_to_repeat = not ordering or bool(body and body.get("clientToken"))
        attempt = 0
        while True:
            try:
                return self._once(method, product, path, params, payload)
            except _Retryable as r:
                if r.executed_maybe and not safe_to_repeat:
                    raise TransportError(path, r.detail, retried=False) from None
                attempt += 1
                wait = self._retry.delay(attempt, self._rng)
                out_of_time = deadline is not None and time.monotonic() + wait > deadline
                if attempt >= self._retry.max_attempts or out_of_time:
                    if r.throttle is not None:
                        t = r.throttle
                        raise ThrottledError(t.path, t.code, t.message, t.http_status,
                                             t.request_id) from None
                    raise TransportError(path, r.detail, retried=True) from None
                log.info("CTyun %s: %s; retry %d/%d in %.1f s", path, r.detail, attempt,
                         self._retry.max_attempts - 1, wait)
                self._sleep(wait)

    def _once(self, method, product, path, params, payload) -> Any:
        creds = self._credentials()
        url = resolve_endpoint(product, self._endpoint) + path
        request_id = str(uuid.uuid4())
        headers = signing.sign_headers(creds.ak, creds.sk, request_id,
                                       signing.eop_date(self._now()), params, payload)
        headers["Content-Type"] = "application/json"
        self.calls[path] += 1
        try:
            resp = self._session.request(method, url, params=params or None,
                                         data=payload if method != "GET" else None,
                                         headers=headers, timeout=self._timeout)
        except requests.exceptions.ConnectionError as e:
            # a refused connection never reached the server; anything else may have
            refused = "refused" in str(e).lower() and "reset" not in str(e).lower()
            raise _Retryable(f"connection error ({type(e).__name__})", not refused) from None
        except requests.exceptions.Timeout:
            raise _Retryable("timed out waiting for the answer", True) from None
        return self._envelope(path, request_id, resp)

    @staticmethod
    def _envelope(path: str, request_id: str, resp: requests.Response) -> Any:
        try:
            doc = resp.json()
        except ValueError:
            doc = None
        if resp.status_code >= 500:
            raise _Retryable(f"HTTP {resp.status_code}", True)
        code = str((doc or {}).get("errorCode") or (doc or {}).get("error") or "")
        message = str((doc or {}).get("message") or (doc or {}).get("description") or "")
        if resp.status_code == 429 or (isinstance(doc, dict) and str(doc.get("statusCode")) != "800"
                                       and _THROTTLE.search(code + " " + message)):
            err = ApiError(path, code or "Throttled", message or "throttled", resp.status_code,
                           request_id)
            raise _Retryable(f"throttled ({err.code})", False, throttle=err)
        if not isinstance(doc, dict):
            raise ApiError(path, f"HTTP{resp.status_code}", "answer is not a JSON object",
                           resp.status_code, request_id)
        if resp.status_code >= 400 or str(doc.get("statusCode")) != "800":
            raise ApiError(path, code or f"statusCode {doc.get('statusCode')}",
                           message or "no message", resp.status_code, request_id)
        return doc.get("returnObj")
