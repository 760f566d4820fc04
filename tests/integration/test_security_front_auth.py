"""The router front (components/router/kk3_front.py) checks the API key before it reads a body:
hostile clients on loopback against the real vllm-router behind the front (tests/doubles/
router_rig.py), the front started as the targets start it (`--api-key-env VLLM_API_KEY`).

The hostile input: a request announcing a 60 MiB body and sending none of it. With the check,
the 401 comes from the headers alone; without it (the front reads the body first), nothing
comes back until the body does, and `raw` below returns no answer. Memory and time against
many such clients: bench/hostile_front.py.
"""

import socket
import subprocess
import sys

import pytest

from components.router import kk3_front
from components.router.settings import FRONT_KEY_ENV
from tests.doubles.router_rig import FRONT, RouterRig, get, post
from tests.doubles.vllm_openai import DoubleConfig

KEY = "kk3-front-auth-key-0123456789abcdefXYZ"
CHAT = {"model": "Kimi-K3", "messages": [{"role": "user", "content": "hello"}], "max_tokens": 4}
BIG = 60 << 20


def raw(port: int, head: bytes, body: bytes = b"", timeout: float = 5.0) -> bytes:
    """Send `head` (and `body`) as written; what came back, up to the end of the last answer
    (its Content-Length), the front's close, or `timeout` without a byte."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(head + body)
        out = b""
        while not complete(out):
            try:
                part = s.recv(65536)
            except (socket.timeout, ConnectionResetError):
                break
            if not part:
                break
            out += part
    return out


def complete(answer: bytes) -> bool:
    """Whether `answer` ends with a whole final (non-1xx) response with a Content-Length."""
    while answer.startswith(b"HTTP/1.1 100 "):
        answer = answer.partition(b"\r\n\r\n")[2]
    head, sep, body = answer.partition(b"\r\n\r\n")
    if not sep:
        return False
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return len(body) >= int(value)
    return False


def head(auth: str = "", extra: str = "", length: int = BIG) -> bytes:
    return (f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            f"{auth}{extra}Content-Length: {length}\r\n\r\n").encode()


def chats(rig) -> list:
    return [d.chat_requests for d in rig.doubles]


@pytest.fixture(scope="module")
def rig():
    with RouterRig(replicas=1, double=DoubleConfig(enable_scale_out=True, api_key=KEY),
                   front_key=KEY) as r:
        yield r


@pytest.mark.parametrize("auth", [
    "", "Authorization: Bearer wrong-key-0123456789abcdefghijkl\r\n",
    f"Authorization: Basic {KEY}\r\n",
    f"Authorization: Bearer  {KEY}\r\n", f"Authorization: Bearer {KEY[:-1]}\r\n",
    f"Authorization: Bearer {KEY}x\r\n", "Authorization: Bearer\r\n",
], ids=["none", "wrong", "basic", "two-spaces", "short", "long", "empty"])
def test_no_key_is_refused_from_the_headers_alone(rig, auth):
    before = chats(rig)
    answer = raw(rig.front_port, head(auth))  # announces 60 MiB, sends none of it
    assert answer.startswith(b"HTTP/1.1 401 "), answer[:200]
    assert answer.endswith(kk3_front.UNAUTHORIZED_BODY)
    assert b"Connection: close" in answer or b"connection: close" in answer.lower()
    assert chats(rig) == before


def test_expect_100_continue_gets_no_continue_without_the_key(rig):
    answer = raw(rig.front_port, head(extra="Expect: 100-continue\r\n"))
    assert answer.startswith(b"HTTP/1.1 401 "), answer[:200]
    assert b"100 Continue" not in answer


def test_the_key_passes_and_its_body_is_read(rig):
    hdr = {"Authorization": f"Bearer {KEY}"}
    before = chats(rig)
    assert post(rig.front_url + "/chat/completions", CHAT, headers=hdr)[0] == 200
    assert post(rig.front_url + "/chat/completions", CHAT,
                headers={"Authorization": f"bearer {KEY}"})[0] == 200  # scheme in any case
    assert sum(chats(rig)) == sum(before) + 2
    assert get(rig.front_root + "/health")[0] == 200  # open: probes send no key
    assert get(rig.front_url + "/models")[0] == 401
    # Expect with the key: 100 Continue, then the answer
    body = b'{"model":"Kimi-K3","messages":[{"role":"user","content":"hi"}],"max_tokens":2}'
    answer = raw(rig.front_port, head(f"Authorization: Bearer {KEY}\r\n",
                                      "Expect: 100-continue\r\nConnection: close\r\n",
                                      len(body)), body)
    assert answer.startswith(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 "), answer[:200]


def test_a_refused_route_is_answered_without_reading_its_body(rig):
    answer = raw(rig.front_port, b"POST /add_worker HTTP/1.1\r\nHost: x\r\n"
                 b"Content-Length: %d\r\n\r\n" % BIG)
    assert answer.startswith(b"HTTP/1.1 404 "), answer[:200]


def test_a_front_told_to_check_a_key_it_does_not_have_does_not_start():
    env = {"PATH": "/usr/bin:/bin", FRONT_KEY_ENV: ""}
    done = subprocess.run([sys.executable, str(FRONT), "--listen", "127.0.0.1:9",
                           "--upstream", "http://127.0.0.1:9", "--api-key-env", FRONT_KEY_ENV],
                          env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and f"{FRONT_KEY_ENV} is empty or unset" in done.stderr


@pytest.mark.parametrize("header,ok", [
    (f"Bearer {KEY}", True), (f"BEARER {KEY}", True), (f"Bearer {KEY} ", False),
    (f"Token {KEY}", False), (KEY, False), ("", False), (None, False),
    (f"Bearer {KEY}\udcff", False),
])
def test_authorized_follows_vllms_rule(header, ok):
    assert kk3_front.authorized(header, kk3_front.key_digest(KEY)) is ok
