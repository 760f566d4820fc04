"""HTTP front of the CTyun emulator: gateway, strict validation, envelopes, faults, admin.

One request goes through, in order:
1. the API is looked up by path in the contract (tests/contracts/ctyun); unknown path: HTTP 404;
2. the gateway (gateway.py): headers, access key, Eop-date, canonical query, signature;
   refused with HTTP `gateway_http_status` (401) and the family's 900 envelope;
3. a queued fault for that path, if any (below);
4. the call itself: wrong method, a query on a POST, a body on a GET, a POST without
   `Content-Type: application/json` or with a body that is not a JSON object, a repeated query
   key, and every problem `validate_request` finds are refused as the service does: HTTP 200,
   statusCode 900, `Hpc.ParamCheck.NotBlank` when a required field is missing or blank
   (documented), `Hpc.ParamCheck.Invalid` for other E-HPC problems (this emulator's
   code: none is documented), `Openapi.Parameter.Error` for VPC (documented);
5. the operation (ehpc_ops.py / vpc_ops.py) on the state; its answer is checked against the
   contract (`validate_response`) before it leaves: an answer that does not conform is an
   emulator bug and comes back as HTTP 500 naming the problems, never as a quiet success.

Faults, queued per API path through `POST /_admin/faults` and consumed one per request:
`http500`, `http502` (that status, the call not run), `throttle` (HTTP 200, statusCode "900"
as text, `Openapi.Throttling`: throttling is not documented, CTyun contract 6.2), `drop` (the
connection closes, call not run), `lost_response` (the call runs, the connection closes),
`slow_job` (`seconds` more for the next job that path starts), `fail_job` (that job fails).

Admin endpoints (loopback, unauthenticated): GET /_admin/inventory, /_admin/report,
/_admin/calls, /_admin/settings; POST /_admin/settings, /_admin/faults, /_admin/rename,
/_admin/seed_foreign, /_admin/release (an EIP or file system, as an operator would in the
console), /_admin/reset.
"""

from __future__ import annotations

import json
import threading
from collections import Counter, defaultdict, deque
from dataclasses import asdict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Dict, Optional
from urllib.parse import urlsplit

from tests.contracts.ctyun import Api, validate_request, validate_response
from tests.contracts.ctyun.validator import BY_PATH

from . import envelope, gateway
from .ebm_ops import HANDLERS as EBM_HANDLERS
from .ehpc_ops import HANDLERS as EHPC_HANDLERS
from .seed import seed_foreign
from .state import Refusal, State
from .storage_ops import HANDLERS as STORAGE_HANDLERS
from .vpc_ops import HANDLERS as VPC_HANDLERS

HANDLERS = {**EHPC_HANDLERS, **VPC_HANDLERS, **EBM_HANDLERS, **STORAGE_HANDLERS}
ROUTES = {path: api for path, api in BY_PATH.items() if api.name in HANDLERS}
REQUEST_FAULTS = {"http500", "http502", "throttle", "drop", "lost_response"}
JOB_FAULTS = {"slow_job", "fail_job"}
THROTTLE = "Openapi.Throttling"   # this emulator's code: throttling is not documented


def refusal_code(api: Api, problems) -> str:
    if api.product != "ehpc":   # VPC (documented) and, by the same rule, EBM, SFS, OceanFS
        return "Openapi.Parameter.Error"
    blank = any(getattr(p, "kind", "") in ("missing", "blank") for p in problems)
    return "Hpc.ParamCheck.NotBlank" if blank else "Hpc.ParamCheck.Invalid"


def _missing_first(problems):
    return sorted(problems, key=lambda p: getattr(p, "kind", "") not in ("missing", "blank"))


class Emulator:
    """Shared by the handler threads: the state, credentials, fault queues, call counters."""

    def __init__(self, credentials: Dict[str, str], state: Optional[State] = None):
        self.credentials = credentials
        self.state = state or State()
        self.initial_settings = asdict(self.state.settings)
        self.faults: Dict[str, deque] = defaultdict(deque)
        self.calls: Counter = Counter()
        self.lock = threading.Lock()

    def take_fault(self, path: str) -> Optional[dict]:
        with self.lock:
            q = self.faults.get(path)
            return q.popleft() if q else None


class Handler(BaseHTTPRequestHandler):
    emulator: Emulator  # set on the subclass made by make_server
    protocol_version = "HTTP/1.1"
    #: headers and body go out in separate writes: without TCP_NODELAY each answer waits ~40 ms
    #: for the client's delayed ACK (Nagle), which the real gateway does not cost
    disable_nagle_algorithm = True

    def log_message(self, fmt, *args):  # quiet: tests read stdout for the port only
        pass

    def _send(self, status: int, doc) -> None:
        data = json.dumps(doc, ensure_ascii=False).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json;charset=UTF-8")
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

    def do_PUT(self):
        self._handle("PUT")

    def do_DELETE(self):
        self._handle("DELETE")

    # -- the API ------------------------------------------------------------------------
    def _handle(self, method: str) -> None:
        url = urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        if url.path.startswith("/_admin/"):
            return self._admin(method, url.path, body)
        emu, st = self.emulator, self.emulator.state
        api = ROUTES.get(url.path)
        if api is None:
            with st.lock:
                st.refused("", url.path, "Openapi.Api.NotFound", "no such API", 404)
            return self._send(404, {"statusCode": 900, "error": "Openapi.Api.NotFound",
                                    "message": f"no API {url.path}", "returnObj": None})
        with emu.lock:
            emu.calls[url.path] += 1
        s = st.settings
        refusal = gateway.check_request(
            emu.credentials, self.headers, url.query, body, max_skew_s=s.max_skew_s,
            eop_date_zone=s.eop_date_zone, require_canonical_query=s.require_canonical_query)
        if refusal is not None:
            return self._refuse(api, refusal.code, refusal.message, s.gateway_http_status)
        fault = emu.take_fault(url.path)
        kind = fault["kind"] if fault else None
        if kind in ("http500", "http502"):
            return self._send(int(kind[4:]), {"message": "Bad Gateway" if kind == "http502"
                                              else "Internal Server Error"})
        if kind == "throttle":
            doc = envelope.failure(api, THROTTLE, "request was denied due to flow control",
                                   as_text=True)
            with st.lock:
                st.refused(api.name, url.path, THROTTLE, "injected throttle fault")
            return self._send(200, doc)
        if kind == "drop":
            return self._drop()
        status, answer = self._call(api, method, url.query, body)
        if kind == "lost_response":
            return self._drop()
        self._send(status, answer)

    def _refuse(self, api: Api, code: str, message: str, http: int = 200):
        st = self.emulator.state
        with st.lock:
            st.refused(api.name, api.path, code, message, http)
        self._send(http, envelope.failure(api, code, message, st.settings.status_code_as_string))

    def _call(self, api: Api, method: str, raw_query: str, body: bytes):
        st = self.emulator.state
        as_text = st.settings.status_code_as_string

        def no(code: str, message: str):
            with st.lock:
                st.refused(api.name, api.path, code, message)
            return 200, envelope.failure(api, code, message, as_text)

        bad = "Openapi.Parameter.Error" if api.product != "ehpc" else "Hpc.ParamCheck.Invalid"
        if method != api.method:
            return no(bad, f"{api.path} takes {api.method}, not {method}")
        query, repeated = gateway.query_dict(raw_query)
        if repeated:
            return no(bad, f"query parameter(s) given more than once: {', '.join(repeated)}")
        doc = None
        if api.method == "POST":
            ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
            if ctype != "application/json":
                return no(bad, f"Content-Type must be application/json, got {ctype!r}")
            try:
                doc = json.loads(body.decode("utf-8")) if body else None
            except (ValueError, UnicodeDecodeError) as e:
                return no(bad, f"the body is not JSON: {e}")
        elif body:
            return no(bad, f"{api.path} is GET: it takes no body")
        problems = validate_request(api.name, query if api.method == "GET" else query or None,
                                    doc)
        if problems:
            return no(refusal_code(api, problems), "; ".join(_missing_first(problems)[:5]))
        with st.lock:
            st.tick()
            try:
                result = HANDLERS[api.name](st, query if api.method == "GET" else doc, api.name,
                                            api.path)
            except Refusal as r:
                st.refused(api.name, api.path, r.code, r.message)
                return 200, envelope.failure(api, r.code, r.message, as_text)
        wrong = validate_response(api.name, result)
        if wrong:
            return 500, {"emulatorBug": f"{api.name} answer breaks the contract",
                         "problems": list(wrong)}
        return 200, envelope.success(api, result, as_text)

    # -- admin --------------------------------------------------------------------------
    def _admin(self, method: str, path: str, body: bytes) -> None:
        emu, st = self.emulator, self.emulator.state
        try:
            doc = json.loads(body) if body else {}
        except ValueError:
            return self._send(400, {"error": "admin bodies are JSON"})
        name = path[len("/_admin/"):]
        if name == "inventory":
            with st.lock:
                st.tick()
                return self._send(200, st.inventory())
        if name == "report":
            with st.lock:
                st.tick()
                return self._send(200, st.report())
        if name == "calls":
            with emu.lock:
                return self._send(200, dict(emu.calls))
        if name == "settings":
            with st.lock:
                try:
                    return self._send(200, st.set_settings(doc if method == "POST" else {}))
                except (KeyError, ValueError) as e:
                    return self._send(400, {"error": str(e)})
        if name == "faults" and method == "POST":
            for f in doc.get("faults", []):
                kind, p = f.get("kind"), f.get("path")
                if p not in ROUTES or kind not in REQUEST_FAULTS | JOB_FAULTS:
                    return self._send(400, {"error": f"bad fault {f}"})
                for _ in range(int(f.get("times", 1))):
                    if kind in JOB_FAULTS:
                        with st.lock:
                            st.job_fault(p, kind, float(f.get("seconds", 0)))
                    else:
                        with emu.lock:
                            emu.faults[p].append({"kind": kind})
            return self._send(200, {"queued": sum(len(q) for q in emu.faults.values())})
        if name == "rename" and method == "POST":
            with st.lock:
                c = st.clusters.get(doc.get("clusterUUID", ""))
                if c is None:
                    return self._send(404, {"error": "no such cluster"})
                c.name = str(doc.get("clusterName"))
            return self._send(200, {})
        if name == "seed_foreign" and method == "POST":
            with st.lock:
                try:
                    return self._send(200, seed_foreign(st, **doc))
                except (TypeError, ValueError) as e:
                    return self._send(400, {"error": str(e)})
        if name == "release" and method == "POST":
            # what an operator does in CTyun's console: release an EIP or a file system left
            # behind by a deleted cluster (no API in the contract releases either)
            with st.lock:
                store = st.eips if doc.get("kind") == "eip" else st.filesystems
                if store.pop(str(doc.get("id")), None) is None:
                    return self._send(404, {"error": f"no {doc.get('kind')} {doc.get('id')}"})
            return self._send(200, {})
        if name == "reset" and method == "POST":
            with st.lock, emu.lock:
                st.reset()
                st.set_settings(emu.initial_settings)
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

