"""Canary: known secrets (the root password, the access key pair, the signed header) never reach
a raised error (chained ones included, as Pulumi's provider host prints the whole traceback),
a log record or the progress file, when CTyun's answers echo what they were sent.

The emulator never echoes a secret (its validator hides `rootPassword`), and its contract is
not ours to change; so `EchoingGateway` sits in front of it and, for the API paths a test
names, answers instead in CTyun's documented failure envelope (CTyun contract 1.3: HTTP 200,
`statusCode` 900, `error`, `message`) a text that repeats the request's body and headers, as
a careless gateway could. Every other call goes through to the emulator unchanged.
"""

from __future__ import annotations

import http.client
import json
import logging
import threading
import traceback
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

import pytest

from components.ctyun_hcc.api.errors import CtyunError
from tests.emulators.ctyun.harness import AK, SK
from tests.integration.ctyun_stack import PASSWORD, Stack, clean

CREATE = "/v4/cthpc/hpc/create-cluster"
LIST_VPCS = "/v4/vpc/new-list"


class EchoingGateway:
    """A loopback HTTP front for the emulator: `echo[path] = mode` makes the answers to `path`
    repeat the request. Modes: "refuse" (statusCode 900 with the echo in `message`),
    "throttle-then-refuse" (the first two answers a flow-control refusal with the echo, then
    "refuse"), "shape" (statusCode 800 whose `returnObj` is the echo: an undocumented shape)."""

    def __init__(self, upstream: str):
        self.upstream = urlsplit(upstream)
        self.echo = {}
        self.seen = {}
        gw = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _handle(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                path = self.path.split("?", 1)[0]
                mode = gw.echo.get(path)
                if mode is None:
                    return self._forward(body)
                n = gw.seen[path] = gw.seen.get(path, 0) + 1
                echo = (f"request {self.command} {self.path} headers "
                        f"{json.dumps(dict(self.headers.items()))} body {body.decode()}")
                if mode == "shape":
                    doc = {"statusCode": 800, "error": "", "message": "success",
                           "returnObj": echo}
                elif mode == "throttle-then-refuse" and n <= 2:
                    doc = {"statusCode": 900, "error": "Openapi.Request.Throttled",
                           "message": f"request was denied due to flow control: {echo}",
                           "returnObj": None}
                else:
                    doc = {"statusCode": 900, "error": "Hpc.ParamCheck.Invalid",
                           "message": f"invalid parameter in {echo}", "returnObj": None}
                self._send(200, json.dumps(doc).encode())

            def _forward(self, body):
                conn = http.client.HTTPConnection(gw.upstream.hostname, gw.upstream.port,
                                                  timeout=30)
                headers = {k: v for k, v in self.headers.items() if k.lower() != "host"}
                conn.request(self.command, self.path, body=body or None, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
                conn.close()
                self._send(resp.status, data)

            def _send(self, status, data):
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = _handle

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def gateway(emu, monkeypatch):
    gw = EchoingGateway(emu.env()["CTYUN_ENDPOINT"])
    monkeypatch.setenv("CTYUN_ENDPOINT", gw.url)
    try:
        yield gw
    finally:
        gw.close()


def _everything(err: BaseException, caplog, progress_file) -> str:
    """All text a user could see: the traceback (chain included), every log record, the file."""
    text = "".join(traceback.format_exception(type(err), err, err.__traceback__))
    text += "\n".join(f"{r.name} {r.getMessage()}" for r in caplog.records)
    if progress_file.exists():
        text += progress_file.read_text()
    return text


def _secrets_in(text: str):
    signed = [part for part in text.split() if part.startswith("Signature=") and
              not part.startswith("Signature=[secret]")]
    return [s for s in (PASSWORD, AK, SK) if s in text] + signed


@pytest.mark.parametrize("path, mode, stage", [
    (CREATE, "refuse", "order"),
    (CREATE, "throttle-then-refuse", "order"),
    (CREATE, "shape", "order"),
    (LIST_VPCS, "refuse", "net"),
])
def test_no_secret_in_errors_logs_or_progress_when_ctyun_echoes_the_request(
        emu, gateway, caplog, tmp_path, path, mode, stage):
    progress = tmp_path / "progress.jsonl"
    gateway.echo[path] = mode
    s = Stack(fast={"progressFile": str(progress)})
    with caplog.at_level(logging.DEBUG), pytest.raises(CtyunError) as err:
        s.up()
    assert gateway.seen.get(path), "the echoing answer was never asked for"
    assert stage not in s.state  # failed where the echo was, nothing recorded past it
    # with what the error keeps for callers (ResponseError.got holds the whole answer)
    seen = _everything(err.value, caplog, progress) + repr(vars(err.value))
    assert "[secret]" in seen, str(err.value)  # the echo came back, redacted
    assert _secrets_in(seen) == [], seen
    gateway.echo.clear()
    s.up()
    s.destroy()
    assert clean(emu)["leakedTotal"] == 0
