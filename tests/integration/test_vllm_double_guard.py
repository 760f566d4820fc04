"""The vLLM server double with `--middleware`: kimi-k3's API-key guard really applied to every
request (the ASGI middleware, not a copy of its rule), and the acceptance `auth` check that tells
a guarded endpoint from one with vLLM's own key check only (vllm-project/vllm#58144)."""

from __future__ import annotations

import httpx

from components.accept import AcceptConfig, accept
from tests.doubles.vllm_openai import DoubleConfig, VllmOpenAIDouble

KEY = "kk3-double-key-5b1e"
GUARD = ("components.inference.kk3_api_guard.ApiKeyGuard",)
CHAT = {"model": "Kimi-K3", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4}


def _auth(d):
    r = accept(AcceptConfig(d.url, "Kimi-K3", api_key=KEY, requests=0, max_tokens=8, timeout_s=5))
    return next(c for c in r["checks"] if c["name"] == "auth")


def test_vllms_own_check_leaves_invocations_open_and_auth_says_so():
    with VllmOpenAIDouble(DoubleConfig(api_key=KEY)) as d:
        root = d.url[:-len("/v1")]
        assert httpx.post(f"{root}/invocations", json={}).status_code == 400
        assert httpx.post(f"{root}/invocations", json=CHAT).json()["object"] == "chat.completion"
        assert httpx.get(f"{d.url}/models").status_code == 401
        check = _auth(d)
    assert not check["ok"] and "POST /invocations with no key was not refused" in check["detail"]


def test_the_guard_answers_401_everywhere_but_health():
    with VllmOpenAIDouble(DoubleConfig(api_key=KEY, middleware=GUARD)) as d:
        root = d.url[:-len("/v1")]
        for method, path in (("POST", "/invocations"), ("GET", "/v1/models"), ("GET", "/nope")):
            r = httpx.request(method, root + path, json={} if method == "POST" else None)
            assert (r.status_code, r.content) == (401, b'{"error":"Unauthorized"}'), path
            assert r.headers["content-type"] == "application/json"
        assert httpx.get(f"{root}/health").status_code == 200
        ok = httpx.post(f"{root}/invocations", json=CHAT, headers={"Authorization": f"Bearer {KEY}"})
        assert ok.status_code == 200 and ok.json()["object"] == "chat.completion"
        check = _auth(d)
    assert check["ok"] and "also on /invocations" in check["detail"]
