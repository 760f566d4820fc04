"""EOP signing: vectors computed independently, and Go's own query-escaping vectors.

Signature vectors: the HMAC chain was computed with openssl (not Python):
  K1 = printf %s DATE | openssl dgst -sha256 -mac HMAC -macopt key:SK -binary
  K2 = printf %s AK   | ... -macopt hexkey:K1;  K3 = printf %s DATE[0:8] | ... hexkey:K2
  sig = printf '%s' STRING_TO_SIGN | ... hexkey:K3 | base64
Query escaping: Go's net/url `queryEscapeTests` (golang/go src/net/url/url_test.go), the rule
CTyun's Go clients apply through url.Values.Encode (CTyun contract 1.2).
"""

import pytest
from datetime import datetime, timedelta, timezone

from components.ctyun_hcc.api import signing as s
from components.ctyun_hcc.api.signing import eop_date, parse_eop_date


EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
AK, SK, DATE = "AKvec01", "SKvec/01+=", "20261201T093000Z"
RID = "0b6f5b2e-1d7a-4c58-9d0e-6a3c2f1e4d5b"


@pytest.mark.parametrize("raw,escaped", [
    ("", ""), ("abc", "abc"), ("one two", "one+two"), ("10%", "10%25"),
    (" ?&=#+%!<>#\"{}|\\^[]`☺\t:/@$'()*,;",
     "+%3F%26%3D%23%2B%25%21%3C%3E%23%22%7B%7D%7C%5C%5E%5B%5D%60%E2%98%BA%09%3A%2F%40%24%27%28"
     "%29%2A%2C%3B"),
])
def test_query_escape_matches_go(raw, escaped):
    assert s.escape(raw) == escaped


def test_unreserved_characters_are_kept():
    assert s.escape("AZaz09-_.~") == "AZaz09-_.~"
    assert s.escape("中") == "%E4%B8%AD"


def test_canonical_query_is_url_values_encode():
    assert s.canonical_query({"b": "x y", "a": 1, "c": "a/b", "d": True, "e": None}) == (
        "a=1&b=x+y&c=a%2Fb&d=true")
    # several values of one key keep their order; keys are escaped too
    assert s.canonical_query({"k y": ["2", "1"], "a": False}) == "a=false&k+y=2&k+y=1"
    assert s.canonical_query({}) == "" and s.canonical_query(None) == ""


def test_signing_key_vector():
    assert s.signing_key(AK, SK, DATE).hex() == (
        "c448cf2d472b5eb5726ffc082a5b2a96d67cbc65940a03ff29b33f654ec2c589")


def test_get_signature_vector_with_reserved_characters():
    query = s.canonical_query({"regionID": "bb9fdb42056f11eda1610242ac110002",
                               "clusterUUIDList": "cl-a,cl-b", "name": "k3 /x~y"})
    assert query == ("clusterUUIDList=cl-a%2Ccl-b&name=k3+%2Fx~y&"
                     "regionID=bb9fdb42056f11eda1610242ac110002")
    headers = s.sign_headers(AK, SK, RID, DATE, query, b"")
    assert headers == {
        "ctyun-eop-request-id": RID, "Eop-date": DATE,
        "Eop-Authorization": "AKvec01 Headers=ctyun-eop-request-id;eop-date "
                             "Signature=zizIARh3OBtpDZysjhqb3Vj+GKthVQjoCoefe+1Eexw="}


def test_post_signature_vector_hashes_the_exact_body_bytes():
    body = b'{"regionID":"bb9fdb42056f11eda1610242ac110002","clusterUUID":"cl-x"}'
    assert s.body_hash(body) == ("48fe8e1bca3d6cfc7bd51eec547eb27fede89296f3af624bad792a83474d"
                                 "3cbb")
    assert s.signature(AK, SK, RID, DATE, "", body) == (
        "Cgilyf8RhI7WPEExNlEJMCvoca6mQ7SdpCiIA2SiVqo=")


def test_string_to_sign_layout():
    assert s.string_to_sign("r", "d", "", b"") == (
        f"ctyun-eop-request-id:r\neop-date:d\n\n\n{EMPTY_SHA256}")


def test_eop_date_is_china_time_with_literal_z():
    instant = datetime(2026, 11, 30, 18, 5, 9, tzinfo=timezone.utc)
    assert s.eop_date(instant) == "20261201T020509Z"
    assert s.parse_eop_date("20261201T020509Z") == instant
    with pytest.raises(ValueError):
        s.eop_date(datetime(2026, 1, 1))


def test_any_change_changes_the_signature():
    base = (AK, SK, RID, DATE, "a=1", b"{}")
    ref = s.signature(*base)
    for i, alt in enumerate(["AK2", "SK2", "rid-2", "20261201T093001Z", "a=2", b"{ }"]):
        changed = list(base)
        changed[i] = alt
        assert s.signature(*changed) != ref


# ---- merged from test_ctyun_signing_behaviour.py:
# The `Eop-date` header (`yyyyMMddTHHmmssZ`, CTyun contract 1.2) is written in China time with a literal
# Z, as CTyun's Go clients send it from a machine in China (they format the local time and append
# `Z`; the zone the gateway expects is not documented), whatever zone the deployer's clock is in;
# a naive time cannot be placed and is refused before anything is signed.

@pytest.mark.parametrize("instant", [datetime(2026, 12, 1, 11, 30, 5, tzinfo=timezone.utc),
                                     datetime(2026, 12, 1, 6, 30, 5, tzinfo=timezone(timedelta(hours=-5)))])
def test_the_same_instant_gives_the_same_header_from_any_zone(instant):
    assert eop_date(instant) == "20261201T193005Z"
    assert parse_eop_date(eop_date(instant)) == instant


def test_a_naive_time_is_refused():
    with pytest.raises(ValueError) as e:
        eop_date(datetime(2026, 12, 1, 11, 30))
    assert str(e.value) == "eop_date needs an aware datetime (pass datetime.now(timezone.utc))"
