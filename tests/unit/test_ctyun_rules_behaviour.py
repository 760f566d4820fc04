"""CTyun request rules and signing at their edges (reference 4.3 for the password rules,
Go's url.Values.Encode for the query, reference 1.2).

- root password length: 7 refused, 8 accepted, 30 accepted, 31 refused; each rule alone;
- reserved characters in query values (`/`, `&`, `=`, `+`, `%`, `#`, `?`, space, non-ASCII)
  are escaped so that a server decoding the query the standard way (application/x-www-form-
  urlencoded, as Go's url.ParseQuery does) gets back exactly the values that were signed.
"""

from urllib.parse import parse_qsl

import pytest

from components.ctyun_hcc.api import rules as r
from components.ctyun_hcc.api import signing as s

GOOD = "Zq7#mX9!pW"  # 10 characters: upper, lower, digit, special, no run, no forbidden word


def _of_length(n: int) -> str:
    """A password that passes every rule but the length one (no 3-runs, no forbidden words)."""
    filler = "Zq7#mX9!pWk2@Ly5$Hn8%Tf4&Rv"  # no ascending/descending triples
    return (filler * 3)[:n]


@pytest.mark.parametrize("n,ok", [(7, False), (8, True), (9, True), (29, True), (30, True), (31, False)])
def test_root_password_length_edges(n, ok):
    pw = _of_length(n)
    assert len(pw) == n
    got = r.root_password_problem(pw)
    assert (got is None) == ok, got
    if not ok:
        assert got == "must be 8-30 characters long"


@pytest.mark.parametrize("pw,problem", [
    (None, "must be a string"),
    (12345678, "must be a string"),
    ("/" + GOOD, "must not start with '/'"),
    (GOOD.replace("Z", "z").replace("X", "x").replace("W", "w"), "needs an upper-case letter, a lower-case letter, a digit and a special character"),
    (GOOD.lower().upper(), "needs an upper-case letter, a lower-case letter, a digit and a special character"),
    (GOOD.replace("7", "q").replace("9", "w"), "needs an upper-case letter, a lower-case letter, a digit and a special character"),
    (GOOD.replace("#", "a").replace("!", "b"), "needs an upper-case letter, a lower-case letter, a digit and a special character"),
    ("Zq7#mX9!pW xy", "may use only letters, digits and the special characters "
                      "()`~!@#$%^&*_-+=|{}[]:;'<>,.?/ (1 other character(s) found)"),
    ("Zq7#mX9!pW\u00e9\u00e8", "may use only letters, digits and the special characters "
                               "()`~!@#$%^&*_-+=|{}[]:;'<>,.?/ (2 other character(s) found)"),
    ("Zq7#mX9!pWxyz", "must not contain 3 consecutive characters such as abc or 123"),
    ("Zq7#mX9!pWzyx", "must not contain 3 consecutive characters such as abc or 123"),
    ("Zq7#mX9!pW789", "must not contain 3 consecutive characters such as abc or 123"),
    ("Zq7#mX9!pWXYZ", "must not contain 3 consecutive characters such as abc or 123"),
    ("Zq7#mX9!pWrOOt", "must not contain root, toor, ecs-user or resu-sce in any case"),
    ("Zq7#mX9!ECS-User", "must not contain root, toor, ecs-user or resu-sce in any case"),
])
def test_each_password_rule_alone_gives_its_own_reason(pw, problem):
    assert r.root_password_problem(pw) == problem


@pytest.mark.parametrize("pw", [GOOD, "Zq7#mX9!pWxz", "Zq7#mX9!pW13", "Zq7#mX9!pWa1b", "Zq7#mX9!pWab", "Zq7#mX9!pW/",
                                "Zq7#mX9!pWro0t", "Zq7#mX9!pWyxQ"])
def test_near_misses_of_each_rule_are_accepted(pw):
    # two-character runs, a '/' that is not first, a 'root' look-alike are all fine
    assert r.root_password_problem(pw) is None, pw


def test_runs_are_exactly_three_steps_of_one():
    assert r._has_run("abc") and r._has_run("CBA") and r._has_run("x789y") and r._has_run("z321")
    assert not r._has_run("ab") and not r._has_run("ace") and not r._has_run("aab")
    assert not r._has_run("a1b") and not r._has_run("9:;")  # digits and letters are separate runs
    assert r._has_run("wxyz", 4) and not r._has_run("wxyq", 4)


# --- the query: what is signed is what the server reads back -------------------------------

RESERVED_VALUES = ["a/b", "a&b=c", "1+1", "100%", "x#y?z", "one two", "中文", "~-._", "/", "=", "&", ""]


@pytest.mark.parametrize("value", RESERVED_VALUES)
def test_reserved_characters_in_query_values_round_trip(value):
    query = s.canonical_query({"name": value, "regionID": "r-1"})
    # nothing reserved leaks into the query unescaped: one & between the two pairs, one = each
    assert query.count("&") == 1 and query.count("=") == 2 and "/" not in query and " " not in query
    assert dict(parse_qsl(query, keep_blank_values=True)) == {"name": value, "regionID": "r-1"}


def test_slash_is_escaped_and_changes_what_is_signed():
    assert s.canonical_query({"path": "a/b"}) == "path=a%2Fb"
    assert s.canonical_query({"k/x": "v"}) == "k%2Fx=v"
    date, rid = "20261201T093000Z", "rid-1"
    a = s.sign_headers("AK", "SK", rid, date, s.canonical_query({"name": "a/b"}), b"")
    b = s.sign_headers("AK", "SK", rid, date, "name=a/b", b"")
    assert a["Eop-Authorization"] != b["Eop-Authorization"]


def test_query_values_are_written_as_go_writes_them():
    assert s.query_value(True) == "true" and s.query_value(False) == "false"
    assert s.query_value(0) == "0" and s.query_value(50) == "50" and s.query_value("x") == "x"
    assert s.query_pairs({"b": [1, True], "a": None, "c": ()}) == [("b", "1"), ("b", "true")]
    assert s.query_pairs({"z": 1, "a": 2, "m": 3}) == [("a", "2"), ("m", "3"), ("z", "1")]
