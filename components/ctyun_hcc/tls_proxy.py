"""kimi-k3's TLS front for the CTyun endpoint: terminates TLS on the master, relays bytes to vLLM.

Shipped to the master as one file and run there as a service (ctyun_hcc/tls_step.py), by the
system's python3 (3.7 or later: the server's `ssl_handshake_timeout` is a 3.7 addition,
python/cpython Doc/library/asyncio-eventloop.rst, e.g. at commit 9602643120a5 of 2018-06-04
which set its default to 60 s; `main` refuses older ones), with nothing but the standard
library: no package has to be installed on a node kimi-k3 does not otherwise control.

What it does, and why it is enough:
- TLS 1.2 or 1.3 only (`ssl.TLSVersion.TLSv1_2` minimum), Python's default cipher suites (no
  RC4/3DES/NULL/export), no TLS compression, ALPN `http/1.1`;
- a byte relay, not an HTTP proxy: every request, streamed answer (SSE) and keep-alive passes
  unchanged to vLLM, whose API-key guard (inference/kk3_api_guard.py) checks every route
  but `GET /health`;
- bounded: at most `--max-connections` at once (more are closed at accept), at most
  `--max-per-peer` of them from one address (a quarter by default: one host that opens
  connections and sends nothing cannot hold every slot for the idle limit and shut everyone
  else out; it takes four), a TLS handshake must finish within `--handshake-timeout` s, a
  connection with no byte either way for `--idle-timeout` s is closed (a long prefill sends
  nothing for minutes: 900 s by default);
- its open-files limit raised to the hard limit (at most 65536) before it listens: each
  connection, and each TLS handshake still under way (those are not counted against the bounds
  above until they finish), costs a descriptor, and the usual soft limit of 1024 would let
  about a thousand unfinished handshakes make `accept` fail for every client for up to the
  handshake timeout;
- once listening (port 443 needs root) it drops to `--user` (nobody) when started as root;
- logs one line per connection (peer, bytes each way, seconds), never content.

    python3 kk3_tls_proxy.py --listen 0.0.0.0:443 --upstream 10.0.0.5:11025 \\
        --cert cert.pem --key key.pem [--user nobody]
"""

import argparse
import asyncio
import os
import signal
import socket
import ssl
import sys
import time

CHUNK = 64 * 1024


def tls_context(cert: str, key: str) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.options |= ssl.OP_NO_COMPRESSION
    ctx.load_cert_chain(cert, key)
    ctx.set_alpn_protocols(["http/1.1"])
    return ctx


def host_port(text: str):
    host, _, port = text.rpartition(":")
    return host.strip("[]") or "0.0.0.0", int(port)


class Relay:
    def __init__(self, upstream, max_connections: int, idle_s: float, log=print,
                 max_per_peer: int = 0):
        self.upstream, self.max, self.idle_s, self.log = upstream, max_connections, idle_s, log
        #: connections one address may hold (0: a quarter of max_connections, at least 1)
        self.max_per_peer = max_per_peer or max(1, max_connections // 4)
        self.active = 0
        self.by_peer = {}

    async def handle(self, reader, writer) -> None:
        peer = writer.get_extra_info("peername")
        addr = peer[0] if isinstance(peer, tuple) and peer else str(peer)
        if self.active >= self.max:
            writer.close()
            self.log(f"{peer}: refused, {self.active} connections open")
            return
        if self.by_peer.get(addr, 0) >= self.max_per_peer:
            writer.close()
            self.log(f"{peer}: refused, {self.by_peer[addr]} connections open from {addr}")
            return
        self.active += 1
        self.by_peer[addr] = self.by_peer.get(addr, 0) + 1
        start, sent = time.monotonic(), [0, 0]
        try:
            try:
                up_r, up_w = await asyncio.wait_for(asyncio.open_connection(*self.upstream), 10)
            except (OSError, asyncio.TimeoutError) as e:
                self.log(f"{peer}: upstream {self.upstream[0]}:{self.upstream[1]} unreachable "
                         f"({type(e).__name__})")
                return
            last = [time.monotonic()]
            tasks = [asyncio.ensure_future(self._pipe(reader, up_w, sent, 0, last)),
                     asyncio.ensure_future(self._pipe(up_r, writer, sent, 1, last))]
            watchdog = asyncio.ensure_future(self._idle(last))
            # one direction may end (a half-close) while the other goes on: the idle limit
            # holds until both are over, so a half-open peer cannot keep a slot forever
            open_ = set(tasks)
            while open_:
                done, _ = await asyncio.wait(open_ | {watchdog},
                                             return_when=asyncio.FIRST_COMPLETED)
                if watchdog in done:
                    for t in open_:
                        t.cancel()
                    break
                open_ -= done
            watchdog.cancel()
            up_w.close()
        finally:
            self.active -= 1
            self.by_peer[addr] -= 1
            if not self.by_peer[addr]:
                del self.by_peer[addr]
            writer.close()
            self.log(f"{peer}: {sent[0]} bytes in, {sent[1]} out, "
                     f"{time.monotonic() - start:.1f} s")

    async def _pipe(self, src, dst, sent, i, last) -> None:
        try:
            while True:
                data = await src.read(CHUNK)
                if not data:
                    break
                last[0] = time.monotonic()
                sent[i] += len(data)
                dst.write(data)
                await dst.drain()
        except (ConnectionError, OSError, ssl.SSLError, asyncio.IncompleteReadError):
            pass
        finally:
            try:
                if dst.can_write_eof():
                    dst.write_eof()
                else:
                    dst.close()
            except (OSError, RuntimeError, ssl.SSLError):
                dst.close()

    async def _idle(self, last) -> None:
        while True:
            await asyncio.sleep(min(self.idle_s, 5.0))
            if time.monotonic() - last[0] > self.idle_s:
                return


#: the open-files limit the proxy asks for (soft), within the hard limit
NOFILE_WANTED = 65536


def raise_open_files_limit() -> int:
    """Raise the soft RLIMIT_NOFILE to min(hard, NOFILE_WANTED) (never lower it); the new soft
    limit. Done as root before the drop, so a hard limit above the soft one is all it needs."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = NOFILE_WANTED if hard == resource.RLIM_INFINITY else min(hard, NOFILE_WANTED)
    if soft != resource.RLIM_INFINITY and soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
        soft = want
    return soft


def drop_privileges(user: str) -> None:
    if os.getuid() != 0 or not user:
        return
    import pwd

    pw = pwd.getpwnam(user)
    os.setgroups([])
    os.setgid(pw.pw_gid)
    os.setuid(pw.pw_uid)


async def main_async(a) -> None:
    raise_open_files_limit()
    ctx = tls_context(a.cert, a.key)
    relay = Relay(host_port(a.upstream), a.max_connections, a.idle_timeout,
                  log=lambda m: print(m, file=sys.stderr, flush=True),
                  max_per_peer=a.max_per_peer)
    host, port = host_port(a.listen)
    server = await asyncio.start_server(relay.handle, host, port, ssl=ctx, backlog=512,
                                        ssl_handshake_timeout=a.handshake_timeout,
                                        family=socket.AF_INET6 if ":" in host else socket.AF_INET)
    drop_privileges(a.user)
    print(f"kk3-tls-proxy: {a.listen} -> {a.upstream} (pid {os.getpid()})", file=sys.stderr,
          flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    server.close()
    await server.wait_closed()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="TLS front for vLLM (kimi-k3)")
    p.add_argument("--listen", required=True, help="address:port to serve TLS on")
    p.add_argument("--upstream", required=True, help="vLLM's address:port (plain HTTP)")
    p.add_argument("--cert", required=True)
    p.add_argument("--key", required=True)
    p.add_argument("--user", default="nobody", help="run as this user once listening")
    p.add_argument("--max-connections", type=int, default=1024)
    p.add_argument("--max-per-peer", type=int, default=0,
                   help="connections one address may hold (0: a quarter of --max-connections)")
    p.add_argument("--handshake-timeout", type=float, default=30.0)
    p.add_argument("--idle-timeout", type=float, default=900.0)
    a = p.parse_args(argv)
    if sys.version_info < (3, 7):
        print("kk3-tls-proxy needs python3 >= 3.7", file=sys.stderr)
        return 2
    asyncio.run(main_async(a))
    return 0


if __name__ == "__main__":
    sys.exit(main())
