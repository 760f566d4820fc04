"""dynamic/redact.py, the one scrubber (progress, the CTyun client, every provider): known
secrets in their usual spellings, private key blocks, any `secret-field=value` echo and
recognisable credentials out of text; exceptions redacted with everything chained to them."""

import pytest

from components.ctyun_hcc.api.errors import ApiError, ResponseError
from components.dynamic.redact import redact_error, redact_text, secret_fields

PW = "K3-Passw0rd!&x"


@pytest.mark.parametrize("text", [
    f"rootPassword {PW} is weak",                      # the value as is
    '{"masterNodeConfig": {"rootPassword": "K3-Passw0rd!\\u0026x"}}',  # JSON-escaped
    "rootPassword=K3-Passw0rd%21%26x",                 # URL-encoded
    "password: Unknown-Secret-9 refused",              # a value kimi-k3 did not know
    '\\"rootPassword\\":\\"Unknown-Secret-9\\"',        # JSON inside JSON
    "Eop-Authorization: AKID1 Headers=x;y Signature=c2lnbmF0dXJl",
    "rootPassword=Unknown-Secret-9&x=1",                # a URL query: the rest goes too
    "private_key: -----BEGIN RSA PRIVATE KEY-----\nAKID1\nc2lnbmF0dXJl\n-----END RSA PRIVATE KEY-----",
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
    "aws:accessKey='[set]' is not used by kimi-k3's own AWS calls",
    "vpc/create refused (clientToken=3f9a-77b2): Openapi.Parameter.Error",  # not a secret
    "max_tokens: 64, tokenizer: moonshotai/Kimi-K3, 12 tokens",
])
def test_ordinary_messages_are_left_alone(text):
    assert redact_text(text, [PW]) == text


@pytest.mark.parametrize("text", [
    "curl -H 'Authorization: Bearer abc.def-ghi'",
    "HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz0123",
    "api_key: sk-proj-ABCDEFGHIJKLMNOPQRST",
    "password=hunter2pass",
    "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----",
    "X-Auth-Token: abc.def-ghi",
    "{'token': 'hunter2pass', 'secretKey': 'sk-proj-ABCD'}",
])
def test_recognisable_credentials_are_redacted_without_being_named(text):
    out = redact_text(text)
    assert "[secret]" in out
    for token in ("abc.def-ghi", "hf_abcdefghij", "sk-proj-ABCD", "hunter2pass", "b3BlbnNzaC1r"):
        assert token not in out


def test_exact_texts():
    """The merged scrubber's exact output (what a person reads in an error or the progress
    file); the scheme goes with an Authorization header's value."""
    assert redact_text("Bearer abc.def") == "Bearer [secret]"
    assert redact_text("curl -H 'Authorization: Bearer abc.def-ghi'") == \
        "curl -H 'Authorization: [secret]'"
    assert redact_text("Eop-Authorization: AKID1 Headers=x;y Signature=c2lnbmF0dXJl") == \
        "Eop-Authorization: [secret] Headers=x;y Signature=[secret]"
    assert redact_text('{"rootPassword": "x-Unknown-1"}') == '{"rootPassword": "[secret]"}'
    assert redact_text("pw K3-Passw0rd!&x, again K3-Passw0rd%21%26x", [PW, "", None]) == \
        "pw [secret], again [secret]"
    assert redact_text("key abc in abcd", ["abc", "abcd"]) == "key abc in [secret]"  # MIN_LEN


def test_secret_fields_of_a_request_body():
    body = {"clusterName": "k3", "clientToken": "tok-1",
            "masterNodeConfig": {"rootPassword": PW}, "rules": [{"secretKey": "sk-1"}]}
    assert sorted(secret_fields(body)) == sorted([PW, "sk-1"])


def test_secret_fields_of_provider_inputs():
    """What the provider base redacts by name: passwords, keys, API keys, tokens (not CTyun's
    clientToken, an idempotency token)."""
    props = {"apiKey": "k-1", "hfToken": "hf-1", "sshPrivateKey": "pk-1", "sshPassword": "pw-1",
             "awsSecrets": {"accessKey": "ak-1", "secretKey": "sk-1", "token": "st-1"},
             "clientToken": "ct-1", "maxTokens": "64", "servedModelName": "Kimi-K3"}
    assert sorted(secret_fields(props)) == ["ak-1", "hf-1", "k-1", "pk-1", "pw-1", "sk-1", "st-1"]


def test_scrub_reaches_attributes_and_chained_errors():
    try:
        try:
            raise ApiError("hpc/create-cluster", "Hpc.X", f"bad {PW}")
        except ApiError as inner:
            raise ResponseError("hpc/create-cluster", "returnObj", "is odd",
                                {"echo": PW}) from inner
    except ResponseError as outer:
        redact_error(outer, [PW])
        assert PW not in str(outer) and PW not in repr(outer.got)
        assert PW not in str(outer.__cause__) and PW not in outer.__cause__.message
