"""A hostile OpenAI-style server (a test double): what a malicious or broken endpoint may send.

`accept` and the readiness gate talk to endpoints the user names, and the same code runs inside
`pulumi up`; this double is how their bounds are shown to hold. Each MODE answers
`/health` with 200 (so every check runs) and then misbehaves in one way. The well-formed parts
of its answers take vLLM 0.33.0's shapes, as the vLLM double documents them
(tests/doubles/vllm_openai.py: chat.completion / chat.completion.chunk objects, `data: ...`
events ending in `data: [DONE]`, `{"object": "list", "data": [...]}` for /v1/models, 401
`{"error": "Unauthorized"}`), and HTTP/1.1 framing per RFC 9112 (Content-Length or chunked).
Nothing here is built from kimi-k3's client.

`python -m tests.doubles.hostile_openai --mode endless --port 18200` runs one in the foreground.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import threading
import time
import uuid
from typing import Dict, Optional

MODES = {
    "endless": "every answer is endless: bodies and streams (4 KiB content deltas) never end, "
               "sent as fast as they are read",
    "endless_line": "the stream is one SSE line that never ends (no line break, ever)",
    "slow": "answers trickle one byte every `slow_s` and never finish in time",
    "huge": "JSON bodies of `huge_bytes` (16 MiB; Content-Length given), a stream event as big",
    "nested": "every JSON answer and stream event nests 100000 levels deep",
    "echo": "the Authorization header it received (so the key) is put in every field it can "
            "reach: model ids, content split across deltas, reasoning, tool arguments, "
            "finish_reason, error bodies, header-like text; with terminal escapes",
    "echo_error": "every /v1 answer is HTTP 500 whose error message echoes the key, as is, "
                  "URL-encoded and with JSON \\u escapes",
    "lying_usage": "usage.completion_tokens of 10**4000, then -1, then 2**40; huge prompt_tokens",
    "null_data": '{"data": null} for models, {"choices": null} for chat, null events',
    "not_json": "every answer is HTML with status 200",
    "wrong_types": "every field the wrong JSON type (choices a number, delta a list, index 'x')",
    "gzip_bomb": "answers gzip-encoded (1 GiB of zeros in 1 MiB) whatever Accept-Encoding says",
    "escapes": "terminal escape sequences (clear screen, retitle, OSC 8 links) in every text",
    "v1_only": "a well-behaved proxy that forwards only /v1 (auth enforced): /invocations 404",
    "redirect": "every answer but /health is a 307 to the same path on another listener (the "
                "sink), which records whatever reaches it (a key, a prompt) and answers like a "
                "good server would",
}
ESC = "\x1b[2J\x1b[H\x1b]0;owned\x07\x1b]8;;http://evil.example/\x07click\x1b]8;;\x07\x9b31m"
MODEL = "Kimi-K3"
_GZIP_BOMB: Optional[bytes] = None


def gzip_bomb() -> bytes:
    """1 GiB of zeros, gzip-compressed (about 1 MiB); built once."""
    global _GZIP_BOMB
    if _GZIP_BOMB is None:
        import zlib

        z = zlib.compressobj(9, zlib.DEFLATED, 31)
        block = bytes(1 << 20)
        out = [z.compress(block) for _ in range(1024)]
        out.append(z.flush())
        _GZIP_BOMB = b"".join(out)
    return _GZIP_BOMB


def nested(depth: int = 100_000) -> str:
    return "[" * depth + "]" * depth


class HostileServer:
    """`with HostileServer("endless") as s: s.url` (a background thread, 127.0.0.1)."""

    def __init__(self, mode: str, api_key: Optional[str] = None, port: int = 0,
                 slow_s: float = 0.5, huge_bytes: int = 16 << 20):
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; known: {sorted(MODES)}")
        self.mode, self.api_key, self.slow_s = mode, api_key, slow_s
        self.huge_bytes = huge_bytes
        if mode == "gzip_bomb":
            gzip_bomb()  # seconds of compression: before serving, not inside a request
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", port))
        self._sock.listen(64)
        self.port = self._sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.requests: list = []
        self._loop = None
        self._stopped = None
        self._up = threading.Event()
        self._thread = None
        self._writers: set = set()
        #: mode redirect: the other listener the answers point to, and what reached it
        self.sink_requests: list = []
        self._sink = None
        if mode == "redirect":
            self._sink = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            self._sink.bind(("127.0.0.1", 0))
            self._sink.listen(64)
            self.sink_url = f"http://127.0.0.1:{self._sink.getsockname()[1]}"

    # ---- lifecycle -------------------------------------------------------------------------
    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stopped = asyncio.Event()
        server = await asyncio.start_server(self._connection, sock=self._sock)
        sink = None
        if self._sink is not None:
            sink = await asyncio.start_server(self._sink_connection, sock=self._sink)
        self._up.set()
        await self._stopped.wait()
        server.close()
        if sink is not None:
            sink.close()
        for w in list(self._writers):
            w.close()
        for task in [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]:
            task.cancel()

    def serve_forever(self) -> None:
        asyncio.run(self._main())

    def __enter__(self) -> "HostileServer":
        self._thread = threading.Thread(target=self.serve_forever, daemon=True)
        self._thread.start()
        self._up.wait(10)
        return self

    def __exit__(self, *exc) -> None:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._stopped.set)
        if self._thread is not None:
            self._thread.join(10)

    async def _sink_connection(self, reader, writer) -> None:
        """The redirect's target: records each request (method, path, Authorization, body
        size) and answers 200 with a model list, so a client that followed would see success."""
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            headers = {k.strip().lower(): v.strip() for k, sep, v in
                       (line.partition(":") for line in lines[1:]) if sep}
            body = await reader.readexactly(int(headers.get("content-length") or 0))
            self.sink_requests.append((lines[0], headers.get("authorization"), len(body)))
            print(f"(hostile double) sink got: {lines[0]}", flush=True)
            data = json.dumps({"object": "list", "data": [{"id": MODEL, "object": "model"}]}).encode()
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                         b"content-length: %d\r\nconnection: close\r\n\r\n%s" % (len(data), data))
            await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass
        finally:
            writer.close()

    # ---- HTTP/1.1 --------------------------------------------------------------------------
    async def _connection(self, reader, writer) -> None:
        self._writers.add(writer)
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
                    return
                lines = head.decode("latin-1").split("\r\n")
                method, target, _ = (lines[0].split(" ", 2) + ["", ""])[:3]
                headers: Dict[str, str] = {}
                for line in lines[1:]:
                    k, sep, v = line.partition(":")
                    if sep:
                        headers[k.strip().lower()] = v.strip()
                body = await reader.readexactly(int(headers.get("content-length") or 0))
                self.requests.append((method, target, headers.get("authorization")))
                keep = await _Answer(self, writer, method, target.split("?")[0], headers,
                                     body).run()
                if not keep:
                    return
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            return
        finally:
            self._writers.discard(writer)
            writer.close()


class _Answer:
    def __init__(self, server: HostileServer, w, method, path, headers, body):
        self.s, self.w, self.method, self.path = server, w, method, path
        self.headers, self.body = headers, body
        self.mode = server.mode
        self.auth = headers.get("authorization", "")
        try:
            self.req = json.loads(body or b"{}")
        except ValueError:
            self.req = {}

    # ---- writing -----------------------------------------------------------------------
    async def head(self, code: int, headers) -> None:
        lines = [f"HTTP/1.1 {code} X", "server: hostile-double"] + [f"{k}: {v}" for k, v in headers]
        self.w.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
        await self.w.drain()

    async def whole(self, code: int, body, ctype="application/json") -> bool:
        data = body if isinstance(body, bytes) else (
            body if isinstance(body, str) else json.dumps(body)).encode()
        extra = []
        if self.mode == "gzip_bomb":
            data, extra = gzip_bomb(), [("content-encoding", "gzip")]
        await self.head(code, [("content-type", ctype), ("content-length", str(len(data)))] + extra)
        if self.mode == "slow":
            for i in range(len(data)):
                self.w.write(data[i:i + 1])
                await self.w.drain()
                await asyncio.sleep(self.s.slow_s)
            return True
        self.w.write(data)
        await self.w.drain()
        return True

    async def chunk(self, data: bytes) -> None:
        self.w.write(b"%x\r\n%s\r\n" % (len(data), data))
        await self.w.drain()

    async def endless(self, first: bytes, unit: bytes, ctype: str) -> bool:
        await self.head(200, [("content-type", ctype), ("transfer-encoding", "chunked")])
        await self.chunk(first)
        block = unit * max(1, (64 * 1024) // len(unit))
        while True:  # until the client goes away
            await self.chunk(block)

    # ---- routes ------------------------------------------------------------------------
    def authorized(self) -> bool:
        return not self.s.api_key or self.auth == f"Bearer {self.s.api_key}"

    async def run(self) -> bool:
        if self.method == "GET" and self.path == "/health":
            self.w.write(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n")
            await self.w.drain()
            return True
        mode = self.mode
        if mode == "redirect":  # before any auth: where the key and the prompt would go next
            await self.head(307, [("location", self.s.sink_url + self.path),
                                  ("content-length", "0")])
            return True
        if mode == "v1_only" and not self.path.startswith("/v1/"):
            return await self.whole(404, {"detail": "Not Found"})
        if self.path.startswith("/v1/") and not self.authorized():
            if mode == "echo":
                return await self.whole(401, {"error": f"Unauthorized: you sent {self.auth}"})
            return await self.whole(401, {"error": "Unauthorized"})
        if self.path == "/invocations":
            return await self.whole(401, {"error": "Unauthorized"})
        if mode == "echo_error":
            from urllib.parse import quote

            key = self.auth[7:]
            escaped = "".join(f"\\u{ord(c):04x}" for c in key)
            return await self.whole(500, '{"error": {"message": "bad key ' + key + " (" + quote(key)
                                    + ') ' + escaped + '", "code": 500}}')
        if self.path == "/v1/models":
            return await self.models()
        if self.path == "/v1/chat/completions":
            if self.req.get("stream") if isinstance(self.req, dict) else False:
                return await self.stream()
            return await self.chat()
        return await self.whole(404, {"detail": "Not Found"})

    def model_list(self, ids) -> dict:
        return {"object": "list", "data": [{"id": i, "object": "model", "owned_by": "vllm"}
                                           for i in ids]}

    def message(self, content, **extra) -> dict:
        msg = {"role": "assistant", "content": content, "reasoning": "thinking"}
        if isinstance(self.req, dict) and self.req.get("tools"):
            msg = {"role": "assistant", "content": None, "reasoning": "thinking", "tool_calls": [
                {"id": "call-1", "type": "function",
                 "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]}
        msg.update(extra)
        return {"id": f"chatcmpl-{uuid.uuid4().hex}", "object": "chat.completion",
                "created": int(time.time()), "model": MODEL,
                "choices": [{"index": 0, "message": msg,
                             "finish_reason": "tool_calls" if msg.get("tool_calls") else "stop"}],
                "usage": {"prompt_tokens": 9, "completion_tokens": 3, "total_tokens": 12}}

    async def models(self) -> bool:
        m = self.mode
        if m == "endless":
            return await self.endless(b'{"object": "list", "data": [',
                                      b'{"id": "x", "object": "model"}, ', "application/json")
        if m == "huge":
            return await self.whole(200, self.model_list([MODEL] + ["m" * 1000] * (self.s.huge_bytes // 1000)))
        if m == "nested":
            return await self.whole(200, '{"data": ' + nested() + "}")
        if m == "echo":
            return await self.whole(200, self.model_list([MODEL, self.auth, ESC + self.auth]))
        if m == "null_data":
            return await self.whole(200, {"object": "list", "data": None})
        if m == "not_json":
            return await self.whole(200, "<html><body>It works!</body></html>", "text/html")
        if m == "wrong_types":
            return await self.whole(200, {"object": "list", "data": [1, "x", None, [MODEL]]})
        if m == "escapes":
            return await self.whole(200, self.model_list([ESC]))
        return await self.whole(200, self.model_list([MODEL]))

    async def chat(self) -> bool:
        m = self.mode
        if m == "endless":
            return await self.endless(b'{"object": "chat.completion", "choices": [{"message": '
                                      b'{"role": "assistant", "content": "', b"a", "application/json")
        if m == "huge":
            return await self.whole(200, self.message("a" * self.s.huge_bytes))
        if m == "nested":
            return await self.whole(200, '{"choices": ' + nested() + "}")
        if m == "echo":
            body = self.message(f"{ESC}Authorization: {self.auth} key={self.auth[7:]}",
                                reasoning=self.auth)
            body["choices"][0]["finish_reason"] = self.auth
            if body["choices"][0]["message"].get("tool_calls"):
                body["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] = \
                    json.dumps({"city": self.auth})
            # the key again, spelled with JSON \\u escapes: only a decoded scrub catches it
            text = json.dumps(body).replace(self.auth[7:],
                                            "".join(f"\\u{ord(c):04x}" for c in self.auth[7:]), 1)
            return await self.whole(200, text)
        if m == "lying_usage":
            body = self.message("42")
            body["usage"]["completion_tokens"] = 10 ** 4000
            return await self.whole(200, json.dumps(body))
        if m == "null_data":
            return await self.whole(200, {"object": "chat.completion", "choices": None})
        if m == "not_json":
            return await self.whole(200, "<html>Service Unavailable</html>", "text/html")
        if m == "wrong_types":
            return await self.whole(200, {"object": "chat.completion",
                                          "choices": [{"message": ["a"], "finish_reason": {}}]})
        if m == "escapes":
            return await self.whole(200, self.message(ESC, reasoning=ESC))
        return await self.whole(200, self.message("42"))

    # ---- streams -------------------------------------------------------------------------
    def chunk_obj(self, delta, finish=None, **extra) -> dict:
        return {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 0,
                "model": MODEL, "choices": [{"index": 0, "delta": delta,
                                             "finish_reason": finish}], **extra}

    async def events(self, objs, ctype="text/event-stream") -> bool:
        await self.head(200, [("content-type", ctype), ("transfer-encoding", "chunked")]
                        + ([("content-encoding", "gzip")] if self.mode == "gzip_bomb" else []))
        if self.mode == "gzip_bomb":
            await self.chunk(gzip_bomb())
        else:
            for o in objs:
                data = o if isinstance(o, str) else json.dumps(o)
                raw = f"data: {data}\n\n".encode()
                if self.mode == "slow":
                    for i in range(len(raw)):
                        await self.chunk(raw[i:i + 1])
                        await asyncio.sleep(self.s.slow_s)
                else:
                    await self.chunk(raw)
        self.w.write(b"0\r\n\r\n")
        await self.w.drain()
        return True

    async def stream(self) -> bool:
        m = self.mode
        is_tool = isinstance(self.req, dict) and bool(self.req.get("tools"))
        if m == "endless":
            # well-formed chunks of 4 KiB of content each, for ever
            one = ("data: " + json.dumps(self.chunk_obj({"content": "a" * 4096})) + "\n\n").encode()
            return await self.endless(one, one, "text/event-stream")
        if m == "endless_line":
            return await self.endless(b'data: {"choices": [{"delta": {"content": "', b"a",
                                      "text/event-stream")
        if m == "huge":
            big = self.chunk_obj({"content": "a" * self.s.huge_bytes})
            return await self.events([big, "[DONE]"])
        if m == "nested":
            return await self.events([nested(), "[DONE]"])
        if m == "echo":
            key = self.auth
            half = len(key) // 2
            objs = [self.chunk_obj({"role": "assistant", "content": ""}),
                    self.chunk_obj({"reasoning": key}),
                    self.chunk_obj({"content": ESC + key[:half]}),  # split across deltas
                    self.chunk_obj({"content": key[half:]})]
            if is_tool:
                objs.append(self.chunk_obj({"tool_calls": [{"index": 0, "id": key, "function": {
                    "name": "get_weather", "arguments": json.dumps({"city": key})[:10]}}]}))
                objs.append(self.chunk_obj({"tool_calls": [{"index": 0, "function": {
                    "arguments": json.dumps({"city": key})[10:]}}]}, finish=key))
            objs += [self.chunk_obj({}, finish=key, usage={"completion_tokens": 3}), "[DONE]"]
            return await self.events(objs)
        if m == "lying_usage":
            return await self.events([self.chunk_obj({"content": "a"}),
                                      self.chunk_obj({}, "stop"),
                                      {"choices": [], "usage": {"prompt_tokens": 10 ** 4000,
                                                                "completion_tokens": 2 ** 40}},
                                      "[DONE]"])
        if m == "null_data":
            return await self.events(["null", {"choices": None}, self.chunk_obj(None), "[DONE]"])
        if m == "not_json":
            return await self.events(["<html>", "[DONE]"])
        if m == "wrong_types":
            return await self.events([{"choices": 5}, self.chunk_obj(["a"]),
                                      self.chunk_obj({"tool_calls": [{"index": "x"}]}),
                                      self.chunk_obj({"tool_calls": {"index": 0}}),
                                      self.chunk_obj({"tool_calls": [{"index": 10 ** 9}]}),
                                      {"choices": [], "usage": "lots"}, "[DONE]"])
        if m == "escapes":
            return await self.events([self.chunk_obj({"content": ESC}),
                                      self.chunk_obj({}, ESC), "[DONE]"])
        tool = [self.chunk_obj({"tool_calls": [{"index": 0, "id": "c1", "function": {
            "name": "get_weather", "arguments": '{"city": "Paris"}'}}]})] if is_tool else []
        return await self.events([self.chunk_obj({"role": "assistant", "content": ""}),
                                  self.chunk_obj({"reasoning": "hm"}),
                                  self.chunk_obj({"content": "1 2 3"})] + tool
                                 + [self.chunk_obj({}, "tool_calls" if is_tool else "stop"),
                                    {"choices": [], "usage": {"prompt_tokens": 9,
                                                              "completion_tokens": 3}},
                                    "[DONE]"])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="hostile OpenAI-style server double (tests only)")
    p.add_argument("--mode", required=True, choices=sorted(MODES))
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--api-key-env", help="environment variable holding the key it enforces")
    a = p.parse_args(argv)
    import os

    s = HostileServer(a.mode, os.environ.get(a.api_key_env) if a.api_key_env else None, a.port)
    print(f"(hostile double) {a.mode} on {s.url}", flush=True)
    try:
        s.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
