"""A quota, limit or balance refusal is not throttling: it fails on the first answer, with the
code and message CTyun returned; throttling is still retried (CTyun contract 1.4 lists no code for
either, so both are told apart by their words; docs/ctyun-hcc.md)."""

import pytest

from components.ctyun_hcc.api.errors import ApiError, ThrottledError
from components.ctyun_hcc.api.transport import Operation
from tests.unit.ctyun_api_double import ok, refused, transport

ORDER = Operation("hpc", "POST", "/v4/cthpc/hpc/create-cluster", "23930", repeatable=False)


@pytest.mark.parametrize("code, message", [
    ("Hpc.Quota.Exceeded", "bare-metal quota exceeded"),
    ("Ecs.Instance.LimitExceeded", "instance limit exceeded"),
    ("Openapi.Quota.LimitExceeded", "the request exceeds the resource limit"),
    ("Order.InsufficientBalance", "账户余额不足"),
    ("Openapi.Account.Arrears", "account in arrears: limit exceeded"),
    ("Hpc.Order.Failed", "too many servers requested: quota exceeded"),
])
def test_quota_and_balance_fail_at_once_with_ctyuns_code_and_message(code, message):
    t, net, sleeps = transport([refused(code, message), ok({"jobUUID": "j"})])
    with pytest.raises(ApiError) as err:
        t.call(ORDER, body={"clusterName": "k3"})
    assert not isinstance(err.value, ThrottledError)
    assert (err.value.code, err.value.message) == (code, message)
    assert code in str(err.value) and message in str(err.value)
    assert len(net.requests) == 1 and sleeps == []


@pytest.mark.parametrize("code, message", [
    ("Openapi.Throttling", "request was denied due to flow control"),
    ("Openapi.RequestLimitExceeded", "too many requests"),
    ("Openapi.Qps.LimitExceeded", "QPS limit exceeded"),
])
def test_throttling_is_still_retried(code, message):
    t, net, sleeps = transport([refused(code, message), ok({"jobUUID": "j"})])
    assert t.call(ORDER, body={"clusterName": "k3"}) == {"jobUUID": "j"}
    assert len(net.requests) == 2 and len(sleeps) == 1
