"""The emulator's gateway (tests/emulators/ctyun/gateway.py) against outside vectors.

Signature vectors: computed with CTyun's own Python SDK core, `ctyun-python-sdk-core==0.0.1`
(PyPI), `ctyun_python_sdk_core.sign_util.sign(credential, params, body, request_id, eop_date)`,
AK "emu-access-key-0001", SK "emu-secret-key-0001"; its `get_sorted_str` produced the query
strings shown (for these values identical to Go's url.Values.Encode; the SDK escapes a space as
%20 where Go writes '+', so no vector contains a space). Go escaping facts: Go's
url.QueryEscape keeps A-Z a-z 0-9 - _ . ~, writes space as '+', everything else %XX.
"""

from datetime import datetime, timedelta, timezone

import pytest

from tests.emulators.ctyun import gateway as g

AK, SK = "emu-access-key-0001", "emu-secret-key-0001"
REGION = "bb9fdb42056f11eda1610242ac110002"
SDK_VECTORS = [
    ("a1b2c3d4-0000-4000-8000-000000000001", "20260924T101500Z", "", b"",
     "7WU2f/FbeenfHog/pBeYzhjAYx2Qn2REIbfb4FJE/qk="),
    ("a1b2c3d4-0000-4000-8000-000000000002", "20260924T181500Z",
     f"azName=cn-huadong1-jsnj1A-public-ctcloud&pageNo=2&pageSize=50&regionID={REGION}", b"",
     "OEWMzejZBfmendtUJczYHCJeF5UISKicu326hsFfUXQ="),
    ("a1b2c3d4-0000-4000-8000-000000000003", "20260101T000000Z",
     f"clusterUUIDList=cl-aaa%2Ccl-bbb&regionID={REGION}", b"",
     "gUGo6kBEiRqyxBsYBcd4JzTcTUKO8+e9IP6aFrRzzrk="),
    ("a1b2c3d4-0000-4000-8000-000000000004", "20261231T235959Z", "",
     f'{{"regionID":"{REGION}","clusterUUID":"cl-qagaqq3x6bcrvmy5ohpx6gmbzls9"}}'.encode(),
     "RJT+Z1P+BZyI5u2XjSa8qiqWatPF8R60YGLzjw1sjoE="),
    ("a1b2c3d4-0000-4000-8000-000000000005", "20260924T101500Z",
     "vpcName=k3-vpc_%E6%B5%8B%E8%AF%95~x.y", b"",
     "0pB/kZFWq7WceA11DJg7+0J51B/u3HzHw6ZoUIUX0WA="),
]


@pytest.mark.parametrize("rid, date, query, body, signature", SDK_VECTORS)
def test_signature_matches_ctyuns_own_sdk(rid, date, query, body, signature):
    assert g.expected_signature(AK, SK, rid, date, query, body) == signature
    assert g.authorization(AK, SK, rid, date, query, body) == (
        f"{AK} Headers=ctyun-eop-request-id;eop-date Signature={signature}")


def test_canonical_query_is_gos_values_encode():
    pairs = [("regionID", REGION), ("pageSize", "50"), ("azName", "cn-huadong1-jsnj1A"),
             ("pageNo", "2")]
    assert g.canonical_query(pairs) == SDK_VECTORS[1][2].replace("-public-ctcloud", "")
    assert g.canonical_query([("vpcName", "k3-vpc_测试~x.y")]) == SDK_VECTORS[4][2]
    assert g.canonical_query([("q", "a b/c,d:e*'!é")]) == "q=a+b%2Fc%2Cd%3Ae%2A%27%21%C3%A9"
    assert g.canonical_query([]) == ""


def headers(date, query="", body=b"", ak=AK, rid="a1b2c3d4-0000-4000-8000-000000000009"):
    return {"ctyun-eop-request-id": rid, "Eop-date": date,
            "Eop-Authorization": g.authorization(ak, SK, rid, date, query, body)}


NOW = datetime(2026, 9, 24, 10, 15, 0, tzinfo=timezone.utc)
KW = dict(max_skew_s=300, eop_date_zone="either", require_canonical_query=True, now=NOW)


def check(hdrs, query="", body=b"", **over):
    return g.check_request({AK: SK}, hdrs, query, body, **{**KW, **over})


def test_a_well_signed_request_passes_in_utc_and_china_time():
    assert check(headers("20260924T101500Z")) is None            # UTC
    assert check(headers("20260924T181500Z")) is None            # UTC+8 under a literal Z
    q = SDK_VECTORS[1][2]
    assert check(headers("20260924T101700Z", q), q) is None


@pytest.mark.parametrize("date, zone, ok", [
    ("20260924T101500Z", "utc", True), ("20260924T181500Z", "utc", False),
    ("20260924T181500Z", "china", True), ("20260924T101500Z", "china", False),
    ("20260924T102100Z", "either", False), ("20260924T100900Z", "either", False),
    ("20260924T101900Z", "either", True)])
def test_date_skew_and_zone(date, zone, ok):
    refusal = check(headers(date), eop_date_zone=zone)
    assert (refusal is None) is ok
    assert ok or refusal.code == g.STALE_DATE


def test_refusals_name_what_is_wrong():
    date = "20260924T101500Z"
    assert check(headers(date, ak="nobody")).code == g.UNKNOWN_AK
    h = headers(date)
    h["Eop-Authorization"] = h["Eop-Authorization"][:-4] + "AAA="
    assert check(h).code == g.BAD_SIGNATURE
    assert check(headers(date, body=b"{}"), body=b'{ }').code == g.BAD_SIGNATURE
    assert check({k: v for k, v in headers(date).items() if k != "Eop-date"}).code == g.MISSING
    assert check(headers("2026-09-24T10:15:00Z")).code == g.BAD_DATE
    assert check(headers(date, rid="not-a-uuid")).code == g.MALFORMED
    h = headers(date)
    h["Eop-Authorization"] = h["Eop-Authorization"].replace("Headers=", "SignedHeaders=")
    assert check(h).code == g.MALFORMED


def test_query_must_be_sent_as_go_encodes_it_and_signed_as_sent():
    date = "20260924T101500Z"
    unsorted = f"regionID={REGION}&azName=az1"
    r = check(headers(date, unsorted), unsorted)
    assert r.code == g.NOT_CANONICAL and "azName=az1&regionID=" in r.message
    assert check(headers(date, unsorted), unsorted, require_canonical_query=False) is None
    pct = "q=a%20b"               # Python's quote(); Go sends a+b
    assert check(headers(date, pct), pct).code == g.NOT_CANONICAL
    assert check(headers(date, "q=a+b"), "q=a+b") is None
    signed_other = headers(date, "azName=az1")
    assert check(signed_other, "azName=az2").code == g.BAD_SIGNATURE


def test_query_dict_reports_repeated_keys():
    assert g.query_dict("a=1&b=2") == ({"a": "1", "b": "2"}, [])
    assert g.query_dict("a=1&a=2")[1] == ["a"]
    assert g.query_dict("")[0] == {}


def test_skew_boundaries_are_inclusive_of_the_window():
    edge = (NOW + timedelta(seconds=300)).strftime("%Y%m%dT%H%M%SZ")
    assert check(headers(edge), eop_date_zone="utc") is None
