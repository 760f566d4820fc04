"""api/redact.py: known secrets in their usual spellings, and any `secret-field=value` echo,
out of error text; exceptions scrubbed with everything chained to them."""

import pytest

from components.ctyun_hcc.api.errors import ApiError, ResponseError
from components.ctyun_hcc.api.redact import redact_text, scrub, secret_fields

PW = "K3-Passw0rd!&x"


@pytest.mark.parametrize("text", [
    f"rootPassword {PW} is weak",                      # the value as is
    '{"masterNodeConfig": {"rootPassword": "K3-Passw0rd!\\u0026x"}}',  # JSON-escaped
    "rootPassword=K3-Passw0rd%21%26x",                 # URL-encoded
    "password: Unknown-Secret-9 refused",              # a value kimi-k3 did not know
    '\\"rootPassword\\":\\"Unknown-Secret-9\\"',        # JSON inside JSON
    "Eop-Authorization: AKID1 Headers=x;y Signature=c2lnbmF0dXJl",
])
def test_echoes_are_redacted(text):
    red = redact_text(text, [PW])
    for secret in (PW, "Unknown-Secret-9", "K3-Passw0rd%21", "c2lnbmF0dXJl", "AKID1"):
        assert secret not in red, red
    assert "[secret]" in red


@pytest.mark.parametrize("text", [
    "ctyun:rootPassword='(hidden)' must be 8-30 characters",
    "kimi-k3:sshBastionPrivateKey=<not shown> is needed with kimi-k3:sshBastion",
    "masterNodeConfig.rootPassword must be 8-30 characters",
    "CTyun hpc/list-clusters refused: Hpc.Cluster.NotFound: no cluster cl-1",
])
def test_ordinary_messages_are_left_alone(text):
    assert redact_text(text, [PW]) == text


def test_secret_fields_of_a_request_body():
    body = {"clusterName": "k3", "clientToken": "tok-1",
            "masterNodeConfig": {"rootPassword": PW}, "rules": [{"secretKey": "sk-1"}]}
    assert sorted(secret_fields(body)) == sorted([PW, "sk-1"])


def test_scrub_reaches_attributes_and_chained_errors():
    try:
        try:
            raise ApiError("hpc/create-cluster", "Hpc.X", f"bad {PW}")
        except ApiError as inner:
            raise ResponseError("hpc/create-cluster", "returnObj", "is odd",
                                {"echo": PW}) from inner
    except ResponseError as outer:
        scrub(outer, [PW])
        assert PW not in str(outer) and PW not in repr(outer.got)
        assert PW not in str(outer.__cause__) and PW not in outer.__cause__.message
