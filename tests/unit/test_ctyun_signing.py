"""EOP signing against vectors computed independently with openssl (commands in comments).

For each vector: ktime=HMAC(SK,date); kak=HMAC(ktime,AK); kdate=HMAC(kak,date[:8]);
sig=base64(HMAC(kdate, string_to_sign)), computed with
`printf %s DATA | openssl dgst -sha256 -mac HMAC -macopt key:SK -binary | xxd -p` then
`-macopt hexkey:...` for the next links, and `base64` on the last one.
"""

from datetime import datetime, timezone

import pytest

from components.ctyun_hcc import signing as s

EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


def test_string_to_sign_layout():
    got = s.string_to_sign("rid-1", "20261130T120000Z", "a=1&b=x%20y", b'{"k": 1}')
    assert got == ("ctyun-eop-request-id:rid-1\neop-date:20261130T120000Z\n\na=1&b=x%20y\n"
                   "4514a0c66d60ecfeb7170caceddfb3d012a7ede1afea4863ba8bcc490ccf63b8")


def test_signing_key_vector():
    # openssl chain above with SK1 / AK1 / 20261130T120000Z
    assert s.signing_key("AK1", "SK1", "20261130T120000Z").hex() == (
        "a377869660aef86e6804f853bd5d1783646cd185e91732cc27b8406400d13d12")


def test_signature_vector_post_with_body_and_query():
    sig = s.signature("AK1", "SK1", "rid-1", "20261130T120000Z", "a=1&b=x%20y", b'{"k": 1}')
    assert sig == "XeUEKSDXgEpjTbL4Dht0f9t4IZmMr7CXwXVVaQkMJ84="


def test_signature_vector_get_empty_body():
    headers = s.sign_headers(
        "0123abcd", "s3cr3t/+=", "5b0c1f6e-0000-4000-8000-000000000001", "20260101T000501Z",
        {"regionID": "bb9fdb42056f11eda1610242ac110002", "clusterName": "k3-a"}, b"")
    assert headers["Eop-Authorization"] == (
        "0123abcd Headers=ctyun-eop-request-id;eop-date "
        "Signature=L9LjYUTDOyU4MsN7EHlemIZmt6jviIqiISDsq8Fm7Zg=")
    assert headers["Eop-date"] == "20260101T000501Z"
    assert headers["ctyun-eop-request-id"] == "5b0c1f6e-0000-4000-8000-000000000001"


def test_canonical_query_sorted_and_encoded():
    assert s.canonical_query({"b": "x y", "a": 1, "c": "中", "d": True}) == (
        "a=1&b=x%20y&c=%E4%B8%AD&d=true")
    assert s.canonical_query({}) == "" and s.canonical_query(None) == ""


def test_eop_date_is_china_time_with_literal_z():
    instant = datetime(2026, 11, 30, 18, 5, 9, tzinfo=timezone.utc)
    assert s.eop_date(instant) == "20261201T020509Z"
    assert s.parse_eop_date("20261201T020509Z") == instant
    with pytest.raises(ValueError):
        s.eop_date(datetime(2026, 1, 1))


def test_any_change_changes_the_signature():
    base = ("AK1", "SK1", "rid-1", "20261130T120000Z", "a=1", b"{}")
    ref = s.signature(*base)
    for i, alt in enumerate(["AK2", "SK2", "rid-2", "20261130T120001Z", "a=2", b"{ }"]):
        changed = list(base)
        changed[i] = alt
        assert s.signature(*changed) != ref
    assert EMPTY_SHA256 in s.string_to_sign("r", "d", "", b"")
