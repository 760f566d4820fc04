"""`kubectl port-forward` in-process: a local TCP port tunnelled to a pod through the Kubernetes API.

Why not the API server's service proxy (`/api/v1/namespaces/NS/services/NAME:PORT/proxy/`): the
API server authenticates the request from its `Authorization` header and deletes that header
before proxying (k8s.io/apiserver, endpoints/filters/authentication.go), and vLLM accepts its
API key only as `Authorization: Bearer` - a stack with `kimi-k3:apiKey` could not be checked
that way. A port-forward carries raw TCP, so the gate's HTTP (and the key) reach vLLM unchanged.

The protocol (kubelet `pkg/kubelet/cri/streaming/portforward/websocket.go`, reached through the
API server's `pods/NAME/portforward?ports=PORT` subresource): a WebSocket with subprotocol
`v4.channel.k8s.io`; every binary frame starts with one channel byte; for the first (only) port,
channel 0 carries data both ways and channel 1 carries error text from the server; the first
frame the server sends on each channel is the port number (2 bytes, little endian), not data.
One WebSocket carries one TCP connection, so each accepted local connection opens its own (and
gets a fresh token). `open_ws` is injectable: tests pass a double of that protocol.
"""

from __future__ import annotations

import socket
import threading
from typing import Callable, Optional

SUBPROTOCOL = "v4.channel.k8s.io"
DATA, ERROR = 0, 1


def ws_url(api_endpoint: str, namespace: str, pod: str, port: int) -> str:
    base = api_endpoint.rstrip("/").replace("https://", "wss://", 1).replace("http://", "ws://", 1)
    return f"{base}/api/v1/namespaces/{namespace}/pods/{pod}/portforward?ports={int(port)}"


def websocket_opener(url: str, token: Callable[[], str], ssl_context, timeout_s: float = 30.0):
    """`open_ws()` for the real API: websocket-client with the cluster CA and a fresh token."""
    def open_ws():
        import websocket

        return websocket.create_connection(
            url, header=[f"Authorization: Bearer {token()}"], subprotocols=[SUBPROTOCOL],
            sslopt={"context": ssl_context} if ssl_context is not None else None, timeout=timeout_s)
    return open_ws


class PortForward:
    """Listens on 127.0.0.1:<port>; each connection is piped to the pod over its own WebSocket.

    Use as a context manager; `url` is the local OpenAI base URL. `last_error` keeps the last
    thing the tunnel itself saw (a refused upgrade, an error frame), for the gate's report.
    """

    def __init__(self, open_ws: Callable[[], object], api_path: str = "/v1"):
        self.open_ws = open_ws
        self.api_path = api_path
        self.last_error: Optional[str] = None
        self._sock: Optional[socket.socket] = None
        self._stop = threading.Event()
        self._threads = []
        self._open = []  # (local connection, websocket) pairs still piping

    @property
    def url(self) -> str:
        host, port = self._sock.getsockname()[:2]
        return f"http://{host}:{port}{self.api_path}"

    def __enter__(self) -> "PortForward":
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(8)
        self._sock.settimeout(0.2)
        t = threading.Thread(target=self._accept_loop, name="kk3-port-forward", daemon=True)
        t.start()
        self._threads.append(t)
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._sock is not None:
            self._sock.close()
        for conn, ws in list(self._open):  # end the pipes now rather than wait for their peers
            for closer in (lambda: conn.shutdown(socket.SHUT_RDWR), conn.close, getattr(ws, "close", lambda: None)):
                try:
                    closer()
                except Exception:  # noqa: BLE001
                    pass
        for t in self._threads:
            t.join(timeout=2)

    def _accept_loop(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except (socket.timeout, OSError):
                continue
            t = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            t.start()
            self._threads.append(t)

    def _serve(self, conn: socket.socket) -> None:
        try:
            ws = self.open_ws()
        except Exception as e:  # noqa: BLE001 reported as the last thing seen
            self.last_error = f"port-forward refused: {type(e).__name__}: {e}"
            conn.close()
            return
        done = threading.Event()
        pair = (conn, ws)
        self._open.append(pair)

        def to_pod():
            try:
                while not done.is_set():
                    data = conn.recv(65536)
                    if not data:
                        break
                    ws.send_binary(bytes([DATA]) + data)
            except OSError:
                pass
            finally:
                done.set()
                try:
                    ws.close()  # unblocks recv_data below
                except Exception:  # noqa: BLE001
                    pass

        up = threading.Thread(target=to_pod, daemon=True)
        up.start()
        seen_port = set()
        try:
            while not done.is_set():
                frame = ws.recv_data()
                opcode, data = frame[0], frame[1]
                if opcode == 8 or not data:  # close
                    break
                channel, payload = data[0], data[1:]
                if channel not in seen_port:  # the first frame of a channel is its port number
                    seen_port.add(channel)
                    payload = payload[2:]
                if not payload:
                    continue
                if channel == DATA:
                    conn.sendall(payload)
                elif channel == ERROR:
                    self.last_error = f"port-forward error: {payload.decode(errors='replace')[:300]}"
                    break
        except Exception:  # noqa: BLE001 the tunnel ends with the connection
            pass
        finally:
            done.set()
            if pair in self._open:
                self._open.remove(pair)
            for closer in (conn.close, getattr(ws, "close", lambda: None)):
                try:
                    closer()
                except Exception:  # noqa: BLE001
                    pass
