"""HTTP front of the emulator: CTyun's gateway checks, the envelope, faults and admin calls.

The gateway part verifies `Eop-Authorization` with its own implementation of the EOP signature
(not the library's, so a bug in one is caught by the other), rejects unknown access keys and
stale or future `Eop-date` values, and wraps results in CTyun's envelope (HTTP 200,
`statusCode` 800/900). Faults are queued per API path through `POST /_admin/faults` and consumed
one per matching request:

- `http500`, `http502`: answer with that status, without running the call;
- `throttle`: statusCode 900 with a throttling error code, without running the call;
- `drop`: close the connection without an answer, without running the call;
- `lost_response`: run the call, then close the connection without an answer;
- `slow_job` (`seconds`), `fail_job`: the next job that call starts is slower / fails.

Admin endpoints (unauthenticated, loopback only): `GET /_admin/inventory` (everything billable
still held: tests assert it is empty), `GET /_admin/calls`, `POST /_admin/settings`,
`POST /_admin/faults`, `POST /_admin/rename` (a console rename), `POST /_admin/reset`
(state, faults, counters and settings back to start-up).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import threading
from collections import Counter, defaultdict, deque
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Dict, Optional
from urllib.parse import parse_qsl, quote, urlsplit

from .state import ROUTES, Refusal, State, dispatch

CHINA = timezone(timedelta(hours=8))
REQUEST_FAULTS = {"http500", "http502", "throttle", "drop", "lost_response"}
JOB_FAULTS = {"slow_job", "fail_job"}


def _mac(key: bytes, msg: str) -> bytes:
    return hmac.new(key, msg.encode(), hashlib.sha256).digest()


def expected_signature(ak: str, sk: str, rid: str, date: str, query: Dict[str, str],
                       body: bytes) -> str:
    q = "&".join(f"{quote(k, safe='')}={quote(v, safe='')}" for k, v in sorted(query.items()))
    text = (f"ctyun-eop-request-id:{rid}\neop-date:{date}\n\n{q}\n"
            + hashlib.sha256(body).hexdigest())
    key = _mac(_mac(_mac(sk.encode(), date), ak), date[:8])
    return base64.b64encode(hmac.new(key, text.encode(), hashlib.sha256).digest()).decode()


class Emulator:
    """The emulator's shared state: model, credentials, fault queues, call counters."""

    def __init__(self, credentials: Dict[str, str], state: Optional[State] = None):
        self.credentials = credentials
        self.state = state or State()
        self.initial_settings = dict(vars(self.state.settings))
        self.faults: Dict[str, deque] = defaultdict(deque)
        self.calls: Counter = Counter()
        self.lock = threading.Lock()

    def take_fault(self, path: str) -> Optional[dict]:
        with self.lock:
            q = self.faults.get(path)
            return q.popleft() if q else None

    def authenticate(self, headers, query: Dict[str, str], body: bytes) -> Optional[Refusal]:
        auth = headers.get("Eop-Authorization") or ""
        rid = headers.get("ctyun-eop-request-id") or ""
        date = headers.get("Eop-date") or ""
        parts = auth.split(" ")
        if len(parts) != 3 or not parts[1].startswith("Headers=") or \
                not parts[2].startswith("Signature=") or not rid or not date:
            return Refusal("Openapi.Authorization.Missing", "missing or malformed EOP headers")
        ak, sig = parts[0], parts[2][len("Signature="):]
        if parts[1] != "Headers=ctyun-eop-request-id;eop-date":
            return Refusal("Openapi.Authorization.Headers", "unexpected signed headers")
        sk = self.credentials.get(ak)
        if sk is None:
            return Refusal("Openapi.Authorization.AccessKeyNotFound", "unknown access key")
        try:
            when = datetime.strptime(date, "%Y%m%dT%H%M%SZ").replace(tzinfo=CHINA)
        except ValueError:
            return Refusal("Openapi.Authorization.DateInvalid", "Eop-date is malformed")
        skew = abs((datetime.now(timezone.utc) - when).total_seconds())
        if skew > self.state.settings.max_skew_s:
            return Refusal("Openapi.Authorization.DateExpired", "Eop-date is too far from now")
        if not hmac.compare_digest(sig, expected_signature(ak, sk, rid, date, query, body)):
            return Refusal("Openapi.Authorization.SignatureMismatch", "signature does not match")
        return None


class Handler(BaseHTTPRequestHandler):
    emulator: Emulator  # set on the subclass made by make_server
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):  # quiet: tests read stdout for the port only
        pass

    def _send(self, status: int, doc) -> None:
        data = json.dumps(doc, ensure_ascii=False).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _drop(self) -> None:
        self.close_connection = True
        try:
            self.connection.shutdown(2)
        except OSError:
            pass

    def do_GET(self):
        self._handle("GET")

    def do_POST(self):
        self._handle("POST")

    def _handle(self, method: str) -> None:
        url = urlsplit(self.path)
        query = dict(parse_qsl(url.query, keep_blank_values=True))
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        emu = self.emulator
        if url.path.startswith("/_admin/"):
            return self._admin(method, url.path, body)
        if url.path not in ROUTES:
            return self._send(404, {"statusCode": 900, "errorCode": "Openapi.NotFound",
                                    "message": f"no API {url.path}"})
        with emu.lock:
            emu.calls[url.path] += 1
        refusal = emu.authenticate(self.headers, query, body)
        if refusal is not None:
            return self._send(401, {"statusCode": 900, "errorCode": refusal.code,
                                    "message": refusal.message})
        fault = emu.take_fault(url.path)
        kind = fault["kind"] if fault else None
        if kind in ("http500", "http502"):
            return self._send(int(kind[4:]), {"message": "Bad Gateway" if kind == "http502"
                                              else "Internal Server Error"})
        if kind == "throttle":
            return self._send(200, {"statusCode": "900", "errorCode": "Openapi.Throttling",
                                    "message": "request was denied due to flow control"})
        if kind == "drop":
            return self._drop()
        try:
            doc = json.loads(body) if body else None
            result = dispatch(emu.state, method, url.path, query, doc)
            answer = {"statusCode": 800, "message": "SUCCESS", "returnObj": result}
        except Refusal as r:
            answer = {"statusCode": 900, "errorCode": r.code, "message": r.message}
        except ValueError as e:
            answer = {"statusCode": 900, "errorCode": "Openapi.Parameter.Error",
                      "message": f"bad JSON: {e}"}
        if kind == "lost_response":
            return self._drop()
        self._send(200, answer)

    def _admin(self, method: str, path: str, body: bytes) -> None:
        emu = self.emulator
        st = emu.state
        doc = json.loads(body) if body else {}
        if path == "/_admin/inventory":
            with st.lock:
                st.tick()
                return self._send(200, st.inventory())
        if path == "/_admin/calls":
            with emu.lock:
                return self._send(200, dict(emu.calls))
        if path == "/_admin/settings" and method == "POST":
            with st.lock:
                for k, v in doc.items():
                    if not hasattr(st.settings, k):
                        return self._send(400, {"error": f"unknown setting {k}"})
                    setattr(st.settings, k, type(getattr(st.settings, k))(v))
                return self._send(200, vars(st.settings))
        if path == "/_admin/faults" and method == "POST":
            for f in doc.get("faults", []):
                kind, p = f.get("kind"), f.get("path")
                if p not in ROUTES or kind not in REQUEST_FAULTS | JOB_FAULTS:
                    return self._send(400, {"error": f"bad fault {f}"})
                for _ in range(int(f.get("times", 1))):
                    if kind in JOB_FAULTS:
                        with st.lock:
                            st.faults_for_jobs(p, kind, float(f.get("seconds", 0)))
                    else:
                        with emu.lock:
                            emu.faults[p].append({"kind": kind})
            return self._send(200, {"queued": sum(len(q) for q in emu.faults.values())})
        if path == "/_admin/rename" and method == "POST":
            with st.lock:
                if doc.get("clusterUUID") not in st.clusters:
                    return self._send(404, {"error": "no such cluster"})
                st.rename_cluster(doc["clusterUUID"], str(doc.get("clusterName")))
            return self._send(200, {})
        if path == "/_admin/reset" and method == "POST":
            with st.lock, emu.lock:
                st.reset()
                for k, v in emu.initial_settings.items():  # settings back to start-up values
                    setattr(st.settings, k, v)
                emu.faults.clear()
                emu.calls.clear()
            return self._send(200, {})
        self._send(404, {"error": f"no admin call {method} {path}"})


def make_server(port: int, credentials: Dict[str, str], host: str = "127.0.0.1",
                state: Optional[State] = None) -> ThreadingHTTPServer:
    emulator = Emulator(credentials, state)
    handler = type("BoundHandler", (Handler,), {"emulator": emulator})
    server = ThreadingHTTPServer((host, port), handler)
    server.daemon_threads = True
    server.emulator = emulator  # type: ignore[attr-defined]
    return server
