"""A local port forward over the master's SSH connection (like `ssh -L`), for the accept gate.

The serving head often has only a cluster address (node 0 is not the master, or the endpoint is
not open to the deployer). `LocalForward(runner, host, port)` listens on 127.0.0.1 (an
ephemeral port) and carries each accepted connection over its own `direct-tcpip` channel of the
runner's SSH transport to `host:port` as the master sees it. Pure of Pulumi; threads end when
the forward is closed.
"""

from __future__ import annotations

import logging
import socket
import threading
from typing import List

log = logging.getLogger("kimi_k3.ctyun.forward")


class LocalForward:
    def __init__(self, runner, host: str, port: int):
        self.runner, self.host, self.port = runner, host, int(port)
        self._sock = None
        self._closed = threading.Event()
        self._threads: List[threading.Thread] = []
        self._open: List = []
        self._lock = threading.Lock()
        self.local_port = 0
        self.connections = 0

    def __enter__(self) -> "LocalForward":
        self.runner.connect()
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(128)
        self._sock.settimeout(0.2)
        self.local_port = self._sock.getsockname()[1]
        self._spawn(self._accept_loop)
        return self

    def __exit__(self, *exc) -> None:
        self._closed.set()
        with self._lock:
            for thing in self._open:
                if isinstance(thing, socket.socket):
                    try:
                        thing.shutdown(socket.SHUT_RDWR)  # wakes a thread blocked in recv
                    except OSError:
                        pass
                try:
                    thing.close()
                except Exception:  # noqa: BLE001 - closing is best effort
                    pass
        if self._sock is not None:
            self._sock.close()
        for t in self._threads:
            t.join(timeout=5)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.local_port}"

    def _spawn(self, fn, *args) -> None:
        t = threading.Thread(target=fn, args=args, daemon=True)
        self._threads.append(t)
        t.start()

    def _accept_loop(self) -> None:
        while not self._closed.is_set():
            try:
                conn, _ = self._sock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            try:
                chan = self.runner.open_tunnel(self.host, self.port)
            except Exception as e:  # noqa: BLE001 - the client sees a closed connection
                log.warning("port forward to %s:%s refused: %s", self.host, self.port, e)
                conn.close()
                continue
            self.connections += 1
            with self._lock:
                self._open += [conn, chan]
            self._spawn(self._pump, conn, chan)
            self._spawn(self._pump, chan, conn)

    def _pump(self, src, dst) -> None:
        try:
            while not self._closed.is_set():
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except Exception:  # noqa: BLE001 - either side went away
            pass
        finally:  # pass the end on: the other direction may still be carrying an answer
            try:
                if isinstance(dst, socket.socket):
                    dst.shutdown(socket.SHUT_WR)
                else:
                    dst.shutdown_write()
            except Exception:  # noqa: BLE001
                pass
