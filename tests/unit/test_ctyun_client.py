"""The CTyun client's envelope, retry and safety rules, over a scripted transport double.

`ScriptedTransport` stands in for the network (a requests adapter answering from a script), so
these tests are pure; the same client runs over real HTTP against the emulator in
tests/integration/test_ctyun_provider.py.
"""

import json
import logging
import random
from urllib.parse import parse_qsl, urlsplit

import pytest
import requests
from requests.adapters import BaseAdapter

from components.ctyun_hcc import client as c
from components.inference.errors import ConfigError
from tests.emulators.ctyun.server import expected_signature

AK, SK = "AKtest", "SKsecret-value-xyz"


class ScriptedTransport(BaseAdapter):
    """Test double for the network: each request pops the next scripted answer."""

    def __init__(self, script):
        super().__init__()
        self.script = list(script)
        self.requests = []

    def send(self, request, **kwargs):
        self.requests.append(request)
        step = self.script.pop(0)
        if isinstance(step, Exception):
            raise step
        status, doc = step
        resp = requests.Response()
        resp.status_code = status
        resp._content = json.dumps(doc).encode() if not isinstance(doc, bytes) else doc
        resp.request = request
        resp.url = request.url
        return resp

    def close(self):
        pass


def make(script, **kw):
    transport = ScriptedTransport(script)
    session = requests.Session()
    session.mount("http://", transport)
    sleeps = []
    client = c.CtyunClient(credentials=c.Credentials(AK, SK), endpoint="http://api.test",
                           session=session, sleep=sleeps.append, rng=random.Random(7), **kw)
    return client, transport, sleeps


OK = (200, {"statusCode": 800, "message": "SUCCESS", "returnObj": {"x": 1}})
THROTTLED = (200, {"statusCode": "900", "errorCode": "Openapi.Throttling",
                   "message": "flow control"})


@pytest.mark.parametrize("status", [800, "800"])
def test_success_envelope_int_or_string(status):
    client, t, _ = make([(200, {"statusCode": status, "returnObj": {"jobUUID": "j1"}})])
    assert client.get("hpc", "/v4/cthpc/query-job-result", {"jobUUID": "j1"}) == {"jobUUID": "j1"}
    assert len(t.requests) == 1


@pytest.mark.parametrize("status", [900, "900"])
def test_failure_raises_with_ctyun_code_and_message_without_retry(status):
    client, t, sleeps = make([(200, {"statusCode": status, "errorCode": "HPC.ClusterName.Exists",
                                     "message": "cluster name exists"})])
    with pytest.raises(c.ApiError) as e:
        client.post("hpc", "/v4/cthpc/hpc/create-cluster", {"clientToken": "t"}, ordering=True)
    assert e.value.code == "HPC.ClusterName.Exists" and "cluster name exists" in str(e.value)
    assert len(t.requests) == 1 and sleeps == []


def test_error_field_spelled_error_is_read():
    client, _, _ = make([(200, {"statusCode": 900, "error": "E1", "description": "d"})])
    with pytest.raises(c.ApiError) as e:
        client.get("hpc", "/p")
    assert (e.value.code, e.value.message) == ("E1", "d")


def test_throttling_is_retried_even_for_ordering_calls_without_token():
    client, t, sleeps = make([THROTTLED, THROTTLED, OK])
    assert client.post("hpc", "/v4/cthpc/hpc/create-cluster", {"a": 1}, ordering=True) == {"x": 1}
    assert len(t.requests) == 3 and len(sleeps) == 2


def test_http_429_is_throttling():
    client, t, _ = make([(429, {"message": "slow down"}), OK])
    assert client.get("hpc", "/p") == {"x": 1} and len(t.requests) == 2


def test_throttled_until_attempts_run_out_raises_throttled_error():
    client, t, _ = make([THROTTLED] * 3, retry=c.RetryPolicy(max_attempts=3))
    with pytest.raises(c.ThrottledError) as e:
        client.get("hpc", "/p")
    assert e.value.code == "Openapi.Throttling" and len(t.requests) == 3


@pytest.mark.parametrize("status", [500, 502, 503])
def test_5xx_retried_for_reads(status):
    client, t, _ = make([(status, b"<html>bad gateway</html>"), OK])
    assert client.get("hpc", "/p") == {"x": 1} and len(t.requests) == 2


def test_5xx_not_retried_for_ordering_call_without_client_token():
    client, t, _ = make([(502, {}), OK])
    with pytest.raises(c.TransportError) as e:
        client.post("hpc", "/v4/cthpc/hpc/expand-cluster", {"clusterUUID": "u"}, ordering=True)
    assert not e.value.retried and "clientToken" in str(e.value)
    assert len(t.requests) == 1


def test_5xx_and_lost_connection_retried_for_ordering_call_with_client_token():
    client, t, _ = make([(500, {}), requests.exceptions.ConnectionError("Connection aborted"),
                         OK])
    body = {"clientToken": "tok-1"}
    assert client.post("hpc", "/v4/cthpc/hpc/create-cluster", body, ordering=True) == {"x": 1}
    sent = [json.loads(r.body) for r in t.requests]
    assert sent == [body] * 3  # same token every time: the API deduplicates


def test_connection_errors_exhausted_raise_transport_error_without_secrets(caplog):
    caplog.set_level(logging.DEBUG)
    client, t, _ = make([requests.exceptions.ConnectionError("reset")] * 4,
                        retry=c.RetryPolicy(max_attempts=4))
    with pytest.raises(c.TransportError) as e:
        client.get("hpc", "/p")
    assert e.value.retried and len(t.requests) == 4
    assert SK not in str(e.value) and SK not in caplog.text


def test_deadline_stops_retrying_early():
    import time
    client, t, _ = make([THROTTLED] * 10, retry=c.RetryPolicy(max_attempts=10, base_delay_s=60))
    with pytest.raises(c.ThrottledError):
        client.get("hpc", "/p", deadline=time.monotonic() + 0.001)
    assert len(t.requests) < 10


def test_backoff_is_bounded_full_jitter():
    policy = c.RetryPolicy(base_delay_s=0.5, max_delay_s=4)
    rng = random.Random(1)
    for attempt in range(1, 12):
        cap = min(4, 0.5 * 2 ** attempt)
        waits = [policy.delay(attempt, rng) for _ in range(200)]
        assert all(0 <= w <= cap for w in waits) and max(waits) > cap / 2


def test_requests_are_signed_and_verifiable():
    client, t, _ = make([OK, OK])
    client.get("hpc", "/v4/cthpc/hpc/list-clusters", {"regionID": "r 1", "clusterName": "k3",
                                                      "onDemand": True, "pageNo": 2})
    client.post("hpc", "/v4/cthpc/hpc/create-cluster", {"clientToken": "t", "n": "中"})
    for req in t.requests:
        query = dict(parse_qsl(urlsplit(req.url).query))
        body = req.body or b""
        if isinstance(body, str):
            body = body.encode()
        h = req.headers
        sig = h["Eop-Authorization"].split("Signature=")[1]
        assert h["Eop-Authorization"].startswith(f"{AK} Headers=ctyun-eop-request-id;eop-date ")
        assert sig == expected_signature(AK, SK, h["ctyun-eop-request-id"], h["Eop-date"], query,
                                         body)
        assert SK not in str(dict(h))
    ids = {r.headers["ctyun-eop-request-id"] for r in t.requests}
    assert len(ids) == 2


def test_non_json_answer_is_an_api_error():
    client, _, _ = make([(200, b"not json")])
    with pytest.raises(c.ApiError):
        client.get("hpc", "/p")


def test_credentials_from_env_then_config_and_hidden_repr():
    assert c.credentials_from({"CTYUN_AK": "a", "CTYUN_SK": "s"}) == c.Credentials("a", "s")
    cfg = {"ctyun:accessKey": "ak2", "ctyun:secretKey": "sk2"}
    assert c.credentials_from({}, cfg) == c.Credentials("ak2", "sk2")
    assert "sk2" not in repr(c.Credentials("ak2", "sk2"))
    with pytest.raises(ConfigError) as e:
        c.credentials_from({}, {})
    assert "CTYUN_AK" in str(e.value)


def test_credentials_are_read_at_each_call():
    pairs = iter([c.Credentials("A1", "S1"), c.Credentials("A2", "S2")])
    transport = ScriptedTransport([OK, OK])
    session = requests.Session()
    session.mount("http://", transport)
    client = c.CtyunClient(credentials=lambda: next(pairs), endpoint="http://x", session=session)
    client.get("hpc", "/p")
    client.get("hpc", "/p")
    assert [r.headers["Eop-Authorization"].split()[0] for r in transport.requests] == ["A1", "A2"]


def test_endpoint_resolution():
    assert c.resolve_endpoint("hpc", None, {}) == "https://cthpc-global.ctapi.ctyun.cn"
    assert c.resolve_endpoint("vpc", None, {}) == "https://ctvpc-global.ctapi.ctyun.cn"
    assert c.resolve_endpoint("hpc", None, {"CTYUN_ENDPOINT": "http://127.0.0.1:9/"}) == \
        "http://127.0.0.1:9"
    assert c.resolve_endpoint("hpc", "http://a:1", {"CTYUN_ENDPOINT": "http://b:2"}) == "http://a:1"
    with pytest.raises(ConfigError):
        c.resolve_endpoint("hpc", "ftp://x", {})
