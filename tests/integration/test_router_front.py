"""kimi-k3's front (components/router/kk3_front.py) keeps clients away from vllm-router's admin
routes: hostile requests, sent byte for byte, against the real router (pip-installed) behind it.

The same attack straight at the router succeeds (a worker of the attacker's joins and receives
clients' requests with their keys): that is what the front is for, and what these tests would
show if it were taken away.
"""

import socket

import pytest

from components.router import kk3_front
from tests.doubles.router_rig import RouterRig, get, post
from tests.doubles.vllm_openai import DoubleConfig, VllmOpenAIDouble

KEY = "kk3-router-front-key-0123456789abcdef"


@pytest.fixture(scope="module")
def bomb() -> bytes:
    """80 MiB of zeros gzip'ed (about 80 KB): inflated, past the front's 64 MiB body limit."""
    import gzip
    import io

    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb") as z:
        block = b"\0" * (1 << 20)
        for _ in range(80):
            z.write(block)
    return out.getvalue()
CHAT = {"model": "Kimi-K3", "messages": [{"role": "user", "content": "hello"}], "max_tokens": 4}


def raw(port: int, request: bytes, timeout: float = 10.0) -> bytes:
    """Send `request` exactly as written; the whole answer."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(request)
        out = b""
        while True:
            try:
                part = s.recv(65536)
            except socket.timeout:
                break
            if not part:
                break
            out += part
    return out


def status_of(answer: bytes) -> int:
    return int(answer.split(b" ", 2)[1]) if answer.startswith((b"HTTP/1.1 ", b"HTTP/1.0 ")) else 0


def reached(rig) -> list:
    """What the replicas received besides the router's own health checks."""
    return [s["method"] + " " + s["path"] for d in rig.doubles for s in d.seen
            if s["path"] != "/health"]


@pytest.fixture(scope="module")
def rig():
    with RouterRig(replicas=2, double=DoubleConfig(enable_scale_out=True, api_key=KEY)) as r:
        yield r


@pytest.fixture
def attacker():
    with VllmOpenAIDouble(DoubleConfig(enable_scale_out=True)) as d:
        yield d


def clients_traffic(url: str, n: int = 12) -> None:
    for _ in range(n):
        post(url + "/chat/completions", CHAT, headers={"Authorization": f"Bearer {KEY}"})


def attack(root: str, attacker_url: str) -> int:
    """The hostile client's whole attack: add a worker of its own. Returns the HTTP status."""
    status, _ = post(f"{root}/add_worker?url={attacker_url}", timeout=40)
    return status


def test_add_worker_through_the_front_is_refused_and_changes_nothing(rig, attacker):
    before = sorted(w["url"] for w in rig.workers()["workers"])
    assert attack(rig.front_root, attacker.url[:-3]) == 404
    assert sorted(w["url"] for w in rig.workers()["workers"]) == before
    clients_traffic(rig.front_url)
    assert attacker.chat_requests == 0 and not attacker.seen


def test_without_the_front_the_same_attack_takes_traffic_and_keys(attacker):
    """The control: the router reached directly (the guard removed) obeys the attacker."""
    with RouterRig(replicas=2, double=DoubleConfig(enable_scale_out=True, api_key=KEY),
                   front=False) as bare:
        assert attack(bare.router_root, attacker.url[:-3]) == 200
        assert len(bare.workers()["workers"]) == 3
        clients_traffic(bare.router_url)
    stolen = [s for s in attacker.seen if s["path"].startswith("/v1/chat/completions")]
    assert stolen and all(s["authorization"] for s in stolen)  # the clients' keys went there


ADMIN = ["/add_worker", "/remove_worker", "/flush_cache", "/list_workers", "/get_loads",
         "/workers", "/scheduling/diagnostics", "/finish_session"]
# each a request target as a hostile client might spell it; none may pass
HOSTILE_TARGETS = [
    "/add_worker?url=http://127.0.0.1:9", "//add_worker?url=http://127.0.0.1:9",
    "/v1/../add_worker?url=http://127.0.0.1:9", "/v1/chat/completions/../../add_worker",
    "/v1/models/..%2F..%2Fadd_worker", "/%61dd_worker?url=http://127.0.0.1:9",
    "/ADD_WORKER", "/add_worker/", "/add_worker%00", "/./add_worker", "/v1/./models/../../workers",
    "/workers/http%3A%2F%2F127.0.0.1%3A1", "/remove_worker?url=http://127.0.0.1:1",
    "/flush_cache", "/list_workers", "/get_loads", "/workers", "/metrics", "/tokenize",
    "/v1/chat/completions/render", "/inference/v1/generate", "/v1/responses",
    "/scheduling/diagnostics", "/finish_session", "/readiness", "/liveness",
    "/get_server_info", "/get_model_info", "*",
]


@pytest.mark.parametrize("target", HOSTILE_TARGETS)
@pytest.mark.parametrize("method", ["POST", "GET", "DELETE"])
def test_hostile_targets_never_reach_the_router(rig, method, target):
    before = reached(rig)
    body = b'{"url": "http://127.0.0.1:9"}'
    answer = raw(rig.front_port, f"{method} {target} HTTP/1.1\r\nHost: x\r\nContent-Type: "
                 f"application/json\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
                 .encode() + body)
    assert status_of(answer) in (400, 404, 405), answer[:200]
    assert reached(rig) == before
    assert len(rig.workers()["workers"]) == 2


def test_absolute_form_and_smuggling_attempts_are_refused(rig):
    r = rig.settings
    for req in (
            f"POST http://127.0.0.1:{r.port}/add_worker?url=http://127.0.0.1:9 HTTP/1.1\r\n"
            "Host: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            # a second request hidden in the body of an allowed one
            "GET /v1/models HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nTransfer-Encoding: "
            "chunked\r\nConnection: close\r\n\r\n0\r\n\r\nPOST /add_worker?url=http://127.0.0.1:9 "
            "HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"):
        answer = raw(rig.front_port, req.encode())
        assert b"Successfully" not in answer
    assert len(rig.workers()["workers"]) == 2


def test_allowed_routes_pass_with_the_key_checked_by_the_replicas(rig):
    hdr = {"Authorization": f"Bearer {KEY}"}
    assert post(rig.front_url + "/chat/completions", CHAT, headers=hdr)[0] == 200
    assert post(rig.front_url + "/chat/completions", CHAT)[0] == 401  # vLLM's own key check
    assert get(rig.front_root + "/health")[0] == 200
    # the query string is dropped; the path passes
    assert post(rig.front_url + "/chat/completions?url=/add_worker", CHAT, headers=hdr)[0] == 200
    status, _ = post(rig.front_url + "/models", CHAT, headers=hdr)
    assert status == 405


def test_steering_headers_are_not_passed_to_the_router(rig):
    marks = [len(d.seen) for d in rig.doubles]
    post(rig.front_url + "/chat/completions", CHAT,
         headers={"Authorization": f"Bearer {KEY}", "X-data-parallel-rank": "3",
                  "x-session-id": "s1", "x-worker-priority": "100", "X-Forwarded-For": "1.2.3.4"})
    chats = [s for d, m in zip(rig.doubles, marks) for s in d.seen[m:]
             if s["path"] == "/v1/chat/completions"]
    assert len(chats) == 1
    assert "authorization" in chats[0]["headers"]
    assert not {"x-data-parallel-rank", "x-session-id", "x-worker-priority",
                "x-forwarded-for"} & set(chats[0]["headers"])


def test_a_body_over_the_limit_is_refused_before_the_router(rig):
    marks = [d.chat_requests for d in rig.doubles]
    big = b'{"model":"Kimi-K3","messages":[{"role":"user","content":"' + b"a" * (65 << 20) + b'"}]}'
    answer = raw(rig.front_port, b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
                 b"Content-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n"
                 % len(big) + big, timeout=30)
    assert status_of(answer) == 413
    assert [d.chat_requests for d in rig.doubles] == marks


@pytest.mark.parametrize("encoding", ["gzip", "deflate", "GZIP ", "identity, gzip"])
def test_a_compressed_body_is_refused_unread(rig, bomb, encoding):
    """A gzip bomb never reaches the router and the front does not inflate it: 415 before the
    body is read (without the guard: inflated to the 64 MiB limit, then 413)."""
    marks = [d.chat_requests for d in rig.doubles]
    head = (b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Encoding: %s\r\nContent-Length: %d\r\n\r\n" % (encoding.encode(), len(bomb)))
    answer = raw(rig.front_port, head + bomb, timeout=30)
    assert status_of(answer) == 415, answer[:300]
    assert b"compressed request bodies are not accepted" in answer
    assert [d.chat_requests for d in rig.doubles] == marks
    # the same route uncompressed still passes: the refusal is the encoding's
    assert post(f"http://127.0.0.1:{rig.front_port}/v1/chat/completions", CHAT,
                headers={"Authorization": f"Bearer {KEY}"})[0] == 200


def test_the_router_down_is_a_502_not_a_hang():
    from aiohttp.test_utils import TestClient, TestServer
    import asyncio

    async def go():
        app = kk3_front.make_app("http://127.0.0.1:9")
        async with TestClient(TestServer(app)) as c:
            r = await c.get("/health")
            return r.status

    assert asyncio.run(go()) == 502


@pytest.mark.parametrize("method,target,want", [
    ("POST", "/v1/chat/completions", None), ("GET", "/v1/models", None),
    ("GET", "/health", None), ("POST", "/v1/completions", None),
    ("GET", "/v1/chat/completions", 405), ("POST", "/health", 405),
    ("POST", "/add_worker", 404), ("POST", "/v1/chat/completions/", 404),
    ("POST", "/v1//chat/completions", 404), ("POST", "/V1/chat/completions", 404),
    ("POST", "/v1/chat/completions%2F..%2F..%2Fadd_worker", 404),
])
def test_decide_is_exact(method, target, want):
    got = kk3_front.decide(method, target)
    assert (got[0] if got else None) == want
