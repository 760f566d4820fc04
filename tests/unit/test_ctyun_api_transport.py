"""Transport and envelope rules of the CTyun API layer, over a scripted network double."""

import time

import pytest
import requests

from components.ctyun_hcc.api import envelope, signing
from components.ctyun_hcc.api.ehpc import CREATE_CLUSTER, LIST_CLUSTERS
from components.ctyun_hcc.api.errors import (ApiError, ResponseError, ThrottledError,
                                             TransportError)
from components.ctyun_hcc.api.transport import (Operation, credentials_from,
                                                resolve_endpoint)
from components.ctyun_hcc.api.vpc import CREATE_VPC
from components.inference.errors import ConfigError
from tests.unit.ctyun_api_double import AK, SK, ok, refused, transport

READ = LIST_CLUSTERS
ORDER = CREATE_CLUSTER


def test_envelope_variants():
    j = lambda doc: __import__("json").dumps(doc).encode()  # noqa: E731
    assert envelope.judge("x", 200, j({"statusCode": 800, "error": "", "returnObj": {"a": 1}})
                          ).value == {"a": 1}
    assert envelope.judge("x", 200, j({"statusCode": "800", "errorCode": "SUCCESS",
                                       "message": "success", "returnObj": []})).ok
    v = envelope.judge("x", 200, j({"statusCode": 900, "errorCode": "Openapi.Vpc.NotFound",
                                    "message": "", "description": "不存在"}))
    assert not v.ok and v.error.code == "Openapi.Vpc.NotFound" and v.error.message == "不存在"
    v = envelope.judge("x", 200, j({"statusCode": "900", "errorCode": "SUCCESS",
                                    "error": "Hpc.ParamCheck.NotBlank", "message": "m"}))
    assert v.error.code == "Hpc.ParamCheck.NotBlank"
    assert envelope.judge("x", 502, b"<html>bad gateway</html>").fault
    assert envelope.judge("x", 200, j({"statusCode": 900, "errorCode": "Openapi.Throttling",
                                       "message": "too many requests"})).throttled
    with pytest.raises(ResponseError, match="statusCode is missing"):
        envelope.judge("x", 200, j({"returnObj": {}}))
    with pytest.raises(ResponseError, match="not a JSON object"):
        envelope.judge("x", 200, b"[1]")


def test_get_sends_exactly_the_signed_query():
    t, net, _ = transport([ok({"x": 1})])
    params = {"regionID": "r 1/x", "pageNo": 1, "azName": None}
    assert t.call(READ, params=params) == {"x": 1}
    req = net.requests[0]
    query = signing.canonical_query(params)
    assert req.url == f"https://api.test{READ.path}?{query}"
    assert query == "pageNo=1&regionID=r+1%2Fx"
    auth = req.headers["Eop-Authorization"]
    sig = signing.signature(AK, SK, req.headers["ctyun-eop-request-id"],
                            req.headers["Eop-date"], query, b"")
    assert auth == f"{AK} Headers=ctyun-eop-request-id;eop-date Signature={sig}"
    assert "Content-Type" not in req.headers and SK not in str(req.headers)


def test_post_sends_the_hashed_body_bytes_and_no_query():
    t, net, _ = transport([ok({"jobUUID": "job-1"})])
    t.call(ORDER, body={"clusterName": "k3-a", "n": 1})
    req = net.requests[0]
    assert req.body == b'{"clusterName":"k3-a","n":1}' and "?" not in req.url
    assert req.headers["Content-Type"] == "application/json"
    sig = signing.signature(AK, SK, req.headers["ctyun-eop-request-id"],
                            req.headers["Eop-date"], "", req.body)
    assert req.headers["Eop-Authorization"].endswith(sig)
    with pytest.raises(ValueError):
        t.call(ORDER, params={"a": 1}, body={})


def test_refusal_is_an_api_error_without_retry():
    t, net, sleeps = transport([refused()])
    with pytest.raises(ApiError, match="Hpc.ParamCheck.NotBlank: regionID is blank"):
        t.call(READ, params={})
    assert len(net.requests) == 1 and sleeps == []


def test_reads_are_retried_after_5xx_and_resets():
    t, net, sleeps = transport([(502, b"gateway"), requests.exceptions.ConnectionError(
        "Connection reset by peer"), requests.exceptions.ReadTimeout("slow"), ok([])])
    assert t.call(READ, params={}) == []
    assert len(net.requests) == 4 and len(sleeps) == 3


@pytest.mark.parametrize("fault", [(500, b"oops"), requests.exceptions.ReadTimeout("slow"),
                                   requests.exceptions.ConnectionError("Connection reset")])
def test_an_order_without_token_is_never_repeated_after_it_may_have_run(fault):
    t, net, sleeps = transport([fault, ok({"jobUUID": "job-2"})])
    with pytest.raises(TransportError) as e:
        t.call(ORDER, body={"clusterName": "k3-a"})
    assert e.value.may_have_run and not e.value.retried and len(net.requests) == 1
    assert "not repeated" in str(e.value)


def test_an_order_is_repeated_when_it_provably_did_not_run_or_was_throttled():
    t, net, _ = transport([
        requests.exceptions.ConnectionError("[Errno 111] Connection refused"),
        refused("Openapi.Throttling", "request too frequent, flow control", key="errorCode"),
        (429, b""), ok({"jobUUID": "job-3"})])
    assert t.call(ORDER, body={"a": 1}) == {"jobUUID": "job-3"}
    assert len(net.requests) == 4


def test_vpc_orders_with_client_token_are_repeated_with_the_same_body():
    t, net, _ = transport([(500, b""), ok({"vpcID": "vpc-1"})])
    t.call(CREATE_VPC, body={"clientToken": "tok-1", "name": "n"})
    assert net.requests[0].body == net.requests[1].body


def test_throttling_until_the_end_is_a_throttled_error():
    t, net, _ = transport([refused("Openapi.Throttling", "throttled")] * 6)
    with pytest.raises(ThrottledError):
        t.call(READ, params={})
    assert len(net.requests) == 6


def test_no_backoff_sleep_goes_past_the_deadline():
    t, net, sleeps = transport([(503, b"")] * 6)
    with pytest.raises(TransportError) as e:
        t.call(READ, params={}, deadline=time.monotonic() + 0.01)
    assert e.value.retried and len(net.requests) <= 2


def test_credentials_and_endpoint():
    assert credentials_from({"CTYUN_AK": "a", "CTYUN_SK": "b"}).sk == "b"
    assert credentials_from({}, {"ctyun:accessKey": "a", "ctyun:secretKey": "s"}).ak == "a"
    assert "s3cret" not in repr(credentials_from({"CTYUN_AK": "a", "CTYUN_SK": "s3cret"}))
    with pytest.raises(ConfigError, match="CTYUN_AK"):
        credentials_from({})
    assert resolve_endpoint("hpc", env={}) == "https://cthpc-global.ctapi.ctyun.cn"
    assert resolve_endpoint("vpc", env={}) == "https://ctvpc-global.ctapi.ctyun.cn"
    assert resolve_endpoint("vpc", env={"CTYUN_ENDPOINT": "http://127.0.0.1:9/"}) == \
        "http://127.0.0.1:9"
    with pytest.raises(ConfigError):
        resolve_endpoint("hpc", "ftp://x", env={})


def test_operation_names_are_short_paths():
    assert ORDER.name == "hpc/create-cluster" and CREATE_VPC.name == "vpc/create"
    assert Operation("hpc", "GET", "/v4/cthpc/list-regions", "13086", True).name == \
        "list-regions"
