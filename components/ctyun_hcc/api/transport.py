"""Signed HTTP calls to CTyun's OpenAPI, the envelope verdict, deadlines and safe retries.

Why our own transport: CTyun publishes no Python SDK for E-HPC; its gateway answers HTTP 200 on
failure; and an order repeated blindly after a lost answer can buy a second cluster. The rules,
in one place:

- credentials are looked up at each request (a callable), never stored in anything pickled,
  never logged or put in an exception;
- the query string is built once (signing.canonical_query) and sent byte for byte as signed; a
  POST body is serialised once and those bytes are sent and hashed;
- each `Operation` says whether it may be repeated after it may have run (`repeatable`): reads,
  and VPC calls that carry a `clientToken` (CTyun contract 1.6). E-HPC orders (create, expand,
  shrink, delete, create-delegate) have no documented idempotency token and are never repeated
  after a timeout, a reset or an HTTP 5xx: the caller gets `TransportError(may_have_run=True)`
  and decides by listing what exists;
- no error or log line carries a secret: every CtyunError leaving `call` is redacted
  (components/dynamic/redact.py) of the request's secret fields (`rootPassword`), the
  credentials and the signed header values, and of any `secret-field=value` echo in CTyun's
  text;
- a redirect is never followed: the signature header would go to whatever host the `Location`
  names (requests drops only `Authorization` across hosts); a 3xx is an ApiError naming it;
- a request that provably did not run (connection refused, connect timeout, HTTP 429 or 503)
  and a throttled one (refused, so not executed) are retried with exponential backoff and full jitter, within the
  caller's deadline.
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
from typing import TYPE_CHECKING, Any, Callable, Mapping, Optional, Union
from urllib.parse import urlsplit

from ...inference.errors import ConfigError
from . import envelope, signing
from .errors import ApiError, CtyunError, ThrottledError, TransportError
from ...dynamic.redact import redact_error, redact_text, secret_fields

if TYPE_CHECKING:  # imported where a call is sent: an offline plan sends none (requests ~0.1 s CPU)
    import requests

log = logging.getLogger("kimi_k3.ctyun")

#: one API host per product (CTyun contract 1.1; the EIP APIs are on the VPC host, the bare-metal,
#: SFS Turbo and OceanFS hosts from CTyun contract 7 and 8); `ctyun:endpoint` / CTYUN_ENDPOINT
#: replaces them all
PRODUCT_HOSTS = {
    "hpc": "https://cthpc-global.ctapi.ctyun.cn",
    "vpc": "https://ctvpc-global.ctapi.ctyun.cn",
    "ebm": "https://ebm-global.ctapi.ctyun.cn",
    "sfs": "https://sfs-global.ctapi.ctyun.cn",
    "oceanfs": "https://oceanfs-global.ctapi.ctyun.cn",
}


@dataclass(frozen=True)
class Operation:
    """One documented API: where it lives and whether it may be sent twice."""

    product: str
    method: str
    path: str
    #: CTyun's document id (CTyun contract 2/3), for messages and the contract tests
    doc: str
    #: may be repeated after it may have run (reads; VPC calls carrying a clientToken)
    repeatable: bool

    @property
    def name(self) -> str:
        """Short name used in messages: the path below the product prefix."""
        return self.path.split("/v4/cthpc/", 1)[-1].split("/v4/", 1)[-1]


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
    """CTYUN_AK/CTYUN_SK, else the `ctyun:accessKey`/`ctyun:secretKey` stack config."""
    ak, sk = env.get("CTYUN_AK"), env.get("CTYUN_SK")
    if not (ak and sk) and config:
        ak, sk = config.get("ctyun:accessKey"), config.get("ctyun:secretKey")
    if not (ak and sk):
        raise ConfigError("CTYUN_AK/CTYUN_SK", None,
                          "export CTYUN_AK and CTYUN_SK, or `pulumi config set --secret "
                          "ctyun:accessKey ...` and `ctyun:secretKey`",
                          "are needed (every request is signed with them)")
    return Credentials(str(ak), str(sk))


ENDPOINT_RE = re.compile(r"^https?://[^\s/?#]+(/[^\s?#]*)?$")
#: hosts plain http may be used with: this machine only (the emulator, a local test gateway)
LOOPBACK_HOSTS = ("localhost",)


def _is_loopback(host: str) -> bool:
    import ipaddress
    if host.lower() in LOOPBACK_HOSTS:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def shown_endpoint(url: str) -> str:
    """`url` as an error may print it: scheme, host, port and path; never a user or password
    part, a query or a fragment (any of which may carry a credential)."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return "<not shown: not a URL>"
    cred = ""
    if "@" in url:
        if parts.scheme not in ("http", "https") or "@" not in parts.netloc or \
                "@" in parts.path + parts.query + parts.fragment:
            return "<not shown: it holds an '@'>"
        cred = "<credentials hidden>@"
    rest = "?<hidden>" if parts.query or "?" in url else ""
    rest += "#<hidden>" if parts.fragment or "#" in url else ""
    host = f"[{host}]" if ":" in host else host
    return f"{parts.scheme}://{cred}{host}{port}{parts.path}{rest}"


def check_endpoint(key: str, url: str) -> str:
    """The API base URL `url` (config key `key`), checked: https (plain http only to this
    machine, for the emulator), a host, no user or password in it, no query, no fragment.
    ConfigError otherwise, printing the URL without the parts that may hold a credential."""
    url = url or ""
    try:
        parts = urlsplit(url)
        port_ok = parts.port is None or 0 < parts.port
    except ValueError:
        parts, port_ok = None, False
    if "@" in url:  # a user[:password]@ part (anywhere: a password may hold '/' or '?')
        raise ConfigError(key, shown_endpoint(url), "remove the user and password from the URL:"
                          " the access keys go in CTYUN_AK/CTYUN_SK or ctyun:accessKey/secretKey "
                          "(secret)", "carries credentials")
    if "?" in url or "#" in url:
        raise ConfigError(key, shown_endpoint(url), "give only scheme, host, port and path (the "
                          "API paths and signed query strings are added per call)",
                          "has a query or a fragment")
    if parts is None or not port_ok or not ENDPOINT_RE.match(url) or not parts.hostname:
        raise ConfigError(key, url, "give a URL such as https://host:port",
                          "is not an http(s) URL")
    if parts.scheme == "http" and not _is_loopback(parts.hostname):
        raise ConfigError(key, url, "use https:// (plain http is accepted only for a loopback "
                          "address, e.g. the local emulator)", "is not https: the signed "
                          "requests and the root password would travel unencrypted")
    return url


def resolve_endpoint(product: str, override: Optional[str] = None,
                     env: Mapping[str, str] = os.environ) -> str:
    """Base URL for a product: explicit override, then CTYUN_ENDPOINT, then CTyun's host."""
    base = override or env.get("CTYUN_ENDPOINT")
    if base:
        check_endpoint("ctyun:endpoint" if override else "CTYUN_ENDPOINT", base)
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


class _Fault(Exception):
    """One attempt failed without a usable answer."""

    def __init__(self, detail: str, may_have_run: bool, throttle: Optional[ApiError] = None):
        super().__init__(detail)
        self.detail, self.may_have_run, self.throttle = detail, may_have_run, throttle


class Transport:
    """Signed calls to CTyun. Holds no secret: `credentials` is resolved at each request."""

    def __init__(self, credentials: Union[Callable[[], Credentials], Credentials, None] = None,
                 endpoint: Optional[str] = None, timeout_s: float = 30.0,
                 connect_timeout_s: float = 5.0, retry: RetryPolicy = RetryPolicy(),
                 session: Optional[requests.Session] = None,
                 sleep: Callable[[float], None] = time.sleep,
                 rng: Optional[random.Random] = None,
                 now: Callable[[], datetime] = lambda: datetime.now(timezone.utc),
                 new_request_id: Callable[[], str] = lambda: str(uuid.uuid4())):
        if credentials is None:
            credentials = credentials_from
        elif isinstance(credentials, Credentials):
            pair = credentials
            credentials = lambda: pair  # noqa: E731
        self._credentials = credentials
        self._endpoint = endpoint
        self._timeout = (connect_timeout_s, timeout_s)
        self._retry = retry
        if not session:
            import requests

            session = requests.Session()
        self._session = session
        self._sleep = sleep
        self._rng = rng or random.Random()
        self._now = now
        self._new_request_id = new_request_id
        #: HTTP requests sent, per path (benchmarks and tests count API calls with it)
        self.calls: Counter = Counter()

    def call(self, op: Operation, params: Optional[Mapping[str, Any]] = None,
             body: Optional[Mapping[str, Any]] = None,
             deadline: Optional[float] = None) -> Any:
        """Send `op` once (or again, when that is safe); its `returnObj`, or raise
        ApiError / ThrottledError / TransportError / ResponseError.

        `deadline` is a `time.monotonic()` value: no backoff sleep goes past it.
        """
        if op.method == "GET" and body is not None:
            raise ValueError(f"{op.name}: a GET API takes no body")
        if op.method == "POST" and params:
            raise ValueError(f"{op.name}: a POST API takes no query string")
        query = signing.canonical_query(params)
        payload = b"" if body is None else json.dumps(
            body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        # what no error text may carry: secret fields of the request, and (added by _once) the
        # credentials and signed header values of each attempt (dynamic/redact.py)
        secrets = secret_fields(body) + secret_fields(dict(params or {}))
        try:
            return self._attempts(op, query, payload, deadline, secrets)
        except CtyunError as e:
            redact_error(e, secrets)
            raise

    def _attempts(self, op: Operation, query: str, payload: bytes, deadline, secrets) -> Any:
        attempt = 0
        while True:
            try:
                return self._once(op, query, payload, secrets)
            except _Fault as f:
                if f.may_have_run and not op.repeatable:
                    raise TransportError(op.name, f.detail, may_have_run=True,
                                         retried=attempt > 0) from None
                attempt += 1
                wait = self._retry.delay(attempt, self._rng)
                out_of_time = deadline is not None and time.monotonic() + wait > deadline
                if attempt >= self._retry.max_attempts or out_of_time:
                    if f.throttle is not None:
                        t = f.throttle
                        raise ThrottledError(t.api, t.code, t.message, t.http_status,
                                             t.request_id) from None
                    raise TransportError(op.name, f.detail, may_have_run=f.may_have_run,
                                         retried=True) from None
                log.info("CTyun %s: %s; retry %d/%d in %.1f s", op.name,
                         redact_text(f.detail, secrets), attempt, self._retry.max_attempts - 1,
                         wait)
                self._sleep(wait)

    def _once(self, op: Operation, query: str, payload: bytes, secrets: list) -> Any:
        import requests

        creds = self._credentials()
        request_id = self._new_request_id()
        headers = signing.sign_headers(creds.ak, creds.sk, request_id,
                                       signing.eop_date(self._now()), query, payload)
        auth = headers.get("Eop-Authorization", "")
        secrets += [creds.ak, creds.sk, auth, auth.rpartition("Signature=")[2]]
        if op.method == "POST":
            headers["Content-Type"] = "application/json"
        url = resolve_endpoint(op.product, self._endpoint) + op.path
        prepared = self._session.prepare_request(requests.Request(
            op.method, url, headers=headers, data=payload if op.method == "POST" else None))
        # the exact query string that was signed (requests would re-encode a params dict)
        prepared.url = url + (f"?{query}" if query else "")
        self.calls[op.path] += 1
        try:
            # never follow a redirect: requests drops only `Authorization` on a cross-host
            # redirect and would hand `Eop-Authorization` (and a 307's body) to the new host
            resp = self._session.send(prepared, timeout=self._timeout, allow_redirects=False)
        except requests.exceptions.ConnectTimeout:
            raise _Fault("connect timed out", may_have_run=False) from None
        except requests.exceptions.ConnectionError as e:
            text = str(e).lower()
            never_sent = "refused" in text and "reset" not in text
            raise _Fault(f"connection error ({type(e).__name__})",
                         may_have_run=not never_sent) from None
        except requests.exceptions.Timeout:
            raise _Fault("timed out waiting for the answer", may_have_run=True) from None
        if 300 <= resp.status_code < 400:
            to = urlsplit(resp.headers.get("Location", "")).hostname or "an unnamed place"
            raise ApiError(op.name, f"HTTP{resp.status_code}",
                           f"redirected to {to}; not followed (the request is signed for "
                           f"{urlsplit(url).hostname}: check ctyun:endpoint / CTYUN_ENDPOINT)",
                           resp.status_code, request_id)
        verdict = envelope.judge(op.name, resp.status_code, resp.content, request_id)
        if verdict.ok:
            return verdict.value
        if verdict.fault:
            raise _Fault(verdict.fault, may_have_run=not verdict.not_run)
        if verdict.throttled:
            raise _Fault(f"throttled ({verdict.error.code})", may_have_run=False,
                         throttle=verdict.error)
        raise verdict.error
