"""CTyun's documented input rules (CTyun contract 4.2, 4.3)."""

import pytest
from hypothesis import given, strategies as st
from urllib.parse import parse_qsl

from components.ctyun_hcc.api import rules as r, signing as s, vpc
from components.ctyun_hcc.api.errors import RequestError


@pytest.mark.parametrize("name,ok", [
    ("k3", True), ("k3-ctyun-hcc-1a2b", True), ("a" * 20, True), ("a" * 21, False),
    ("k", False), ("9k3", False), ("-k3", False), ("k3-", False), ("k3--a", False),
    ("k3_a", False), ("k3.a", False),
])
def test_cluster_names(name, ok):
    assert (r.cluster_name_problem(name) is None) == ok


@pytest.mark.parametrize("name,ok", [
    ("batch", True), ("a2", True), ("q_1", True), ("a" * 15, True), ("a" * 16, False),
    ("default", False), ("Default", False), ("DEFAULT", False), ("1q", False), ("q-1", False),
    ("", False),
])
def test_queue_names(name, ok):
    assert (r.queue_name_problem(name) is None) == ok


@pytest.mark.parametrize("name,ok", [
    ("k3-sg", True), ("安全组-1", True), ("sg_1", True), ("9sg", False), ("_sg", False),
    ("s", False), ("a" * 33, False), ("http:x", False),
])
def test_vpc_api_names(name, ok):
    assert (r.vpc_name_problem(name) is None) == ok


def test_ehpc_security_group_name_rule():
    assert r.ehpc_security_group_name_problem("k3-sg") is None
    assert r.ehpc_security_group_name_problem("-sg") and r.ehpc_security_group_name_problem("1")


@pytest.mark.parametrize("pw,problem", [
    ("K3-Passw0rd!", None),
    ("Zxcvbnm.147", None),  # doc 23930's own example value
    ("Zq7#mX9!pW", None),
    ("short1A!", None),
    ("K3-Pass", "8-30"),
    ("K3-Passw0rd!" * 3, "8-30"),
    ("/K3-Passw0rd", "start with '/'"),
    ("k3-passw0rd!", "upper-case"),
    ("K3PASSW0RD!", "upper-case"),
    ("Kx-Password!", "upper-case"),
    ("K3Passw0rdX", "upper-case"),
    ("K3-Pxabc9!q", "consecutive"),
    ("K3-Px123!qW", "consecutive"),
    ("K3-Pxcba!qW", None),  # falling: rule 4's examples rise (abc, 123): open question 17
    ("Aa1!aaaa", None),     # a repeat: rule 4 does not name repeats (open question 17)
    ("K3-Px#Root9", "root"),
    ("K3-tOOr#x9q", "root"),
    ("K3-ECS-USERx9", "root"),
    ("K3-resu-sce9", "root"),
    ("K3 Passw0rd!", "special characters"),
    ("K3｜Passw0rd", None),  # the full-width '｜' is in doc 23930's list
    ("K3|Passw0rd", "ASCII '|'"),  # the ASCII one is not
])
def test_root_passwords(pw, problem):
    got = r.root_password_problem(pw)
    assert (got is None) if problem is None else (problem in got)
    assert got is None or pw not in got


@given(st.text(min_size=0, max_size=40))
def test_password_problem_never_echoes_the_password(pw):
    got = r.root_password_problem(pw)
    assert got is None or len(pw) < 4 or pw not in got


# ---- merged from test_ctyun_rules_behaviour.py:
# CTyun request rules and signing at their edges (CTyun contract 4.3 for the password rules,
# Go's url.Values.Encode for the query, CTyun contract 1.2).
#
# - root password length: 7 refused, 8 accepted, 30 accepted, 31 refused; each rule alone;
# - reserved characters in query values (`/`, `&`, `=`, `+`, `%`, `#`, `?`, space, non-ASCII)
#   are escaped so that a server decoding the query the standard way (application/x-www-form-
#   urlencoded, as Go's url.ParseQuery does) gets back exactly the values that were signed.

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
                      "()`~!@#$%^&*_-+=\uff5c{}[]:;'<>,.?/ (1 other character(s) found; kimi-k3's "
                      "own rule: CTyun lists no other character)"),
    ("Zq7#mX9!pW\u00e9\u00e8", "may use only letters, digits and the special characters "
                               "()`~!@#$%^&*_-+=\uff5c{}[]:;'<>,.?/ (2 other character(s) found; "
                               "kimi-k3's own rule: CTyun lists no other character)"),
    ("Zq7#mX9!pW|", "uses the ASCII '|', which is not in CTyun's documented special characters "
                    "(the list has the full-width '\uff5c', U+FF5C); use another special character"),
    ("Zq7|mX9qpW", "uses the ASCII '|', which is not in CTyun's documented special characters "
                   "(the list has the full-width '\uff5c', U+FF5C); use another special character"),
    ("Zq7#mX9!pWxyz", "must not contain 3 consecutive characters such as abc or 123"),
    ("Zq7#mX9!pW789", "must not contain 3 consecutive characters such as abc or 123"),
    ("Zq7#mX9!pWXYZ", "must not contain 3 consecutive characters such as abc or 123"),
    ("Zq7#mX9!pWrOOt", "must not contain root, toor, ecs-user or resu-sce in any case"),
    ("Zq7#mX9!ECS-User", "must not contain root, toor, ecs-user or resu-sce in any case"),
])
def test_each_password_rule_alone_gives_its_own_reason(pw, problem):
    assert r.root_password_problem(pw) == problem


@pytest.mark.parametrize("pw", [GOOD, "Zq7#mX9!pWxz", "Zq7#mX9!pW13", "Zq7#mX9!pWa1b", "Zq7#mX9!pWab", "Zq7#mX9!pW/",
                                "Zq7#mX9!pWro0t", "Zq7#mX9!pWyxQ",
                                "Zq7\uff5cmX9qpW",  # the full-width '｜' is doc 23930's special
                                "Zq7#mX9!pWzyx", "Zq7#mX9!pW321",  # falling runs: not in rule 4
                                "Aa1!aaaa"])  # a repeat: rule 4 does not name it (question 17)
def test_near_misses_of_each_rule_are_accepted(pw):
    # two-character runs, a '/' that is not first, a 'root' look-alike are all fine; what doc
    # 23930's text does not refuse is not refused (docs/ctyun-hcc.md, open question 17)
    assert r.root_password_problem(pw) is None, pw


def test_runs_are_exactly_three_rising_steps_of_one():
    assert r._has_run("abc") and r._has_run("ABC") and r._has_run("x789y") and r._has_run("aBc")
    assert not r._has_run("CBA") and not r._has_run("z321") and not r._has_run("aaa")
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


# --- names (docs 23930/23943, the VPC API's schemas): every rule alone, each length edge -----

@pytest.mark.parametrize("fn,value,problem", [
    ("cluster_name_problem", "ab", None), ("cluster_name_problem", "a" * 20, None), ("cluster_name_problem", "k3-a1", None),
    ("cluster_name_problem", "a", "must be 2-20 characters long (is 1)"),
    ("cluster_name_problem", "a" * 21, "must be 2-20 characters long (is 21)"),
    ("cluster_name_problem", "1a", "may hold only letters, digits and '-' and must start with a letter"),
    ("cluster_name_problem", "a_b", "may hold only letters, digits and '-' and must start with a letter"),
    ("cluster_name_problem", "ab-", "must not end with '-'"),
    ("cluster_name_problem", "a--b", "must not contain '--'"),
    ("cluster_name_problem", 7, "must be a string"),
    ("queue_name_problem", "q", None), ("queue_name_problem", "q" * 15, None), ("queue_name_problem", "a_1", None),
    ("queue_name_problem", "", "must be 1-15 characters long (is 0)"),
    ("queue_name_problem", "q" * 16, "must be 1-15 characters long (is 16)"),
    ("queue_name_problem", "_a", "may hold only letters, digits and '_' and must start with a letter"),
    ("queue_name_problem", "a-b", "may hold only letters, digits and '_' and must start with a letter"),
    ("queue_name_problem", "DeFault", "must not be 'default' (reserved)"),
    ("queue_name_problem", None, "must be a string"),
    ("fs_name_problem", "ab", None), ("fs_name_problem", "a" * 255, None), ("fs_name_problem", "a-1", None),
    ("fs_name_problem", "a", "must be 2-255 characters long (is 1)"),
    ("fs_name_problem", "a" * 256, "must be 2-255 characters long (is 256)"),
    ("fs_name_problem", "-a", "may hold only letters, digits and '-' and must start with a letter"),
    ("fs_name_problem", "ab-", "must not end with '-'"),
    ("fs_name_problem", b"ab", "must be a string"),
    ("ehpc_security_group_name_problem", "ab", None), ("ehpc_security_group_name_problem", "a" * 32, None),
    ("ehpc_security_group_name_problem", "安全组_1-a", None),
    ("ehpc_security_group_name_problem", "a", "must be 2-32 characters long (is 1)"),
    ("ehpc_security_group_name_problem", "a" * 33, "must be 2-32 characters long (is 33)"),
    ("ehpc_security_group_name_problem", "_sg", "may hold only letters, Chinese, digits, '-' and '_' and must "
                                                "start with a letter or Chinese character"),
    ("ehpc_security_group_name_problem", 1, "must be a string"),
    ("vpc_name_problem", "ab", None), ("vpc_name_problem", "a" * 32, None), ("vpc_name_problem", "网络_a-1", None),
    ("vpc_name_problem", "a", "must be 2-32 characters long (is 1)"),
    ("vpc_name_problem", "a" * 33, "must be 2-32 characters long (is 33)"),
    ("vpc_name_problem", "HTTP:x", "must not start with http: or https:"),
    ("vpc_name_problem", "https:x", "must not start with http: or https:"),
    ("vpc_name_problem", "9net", "may hold only letters, Chinese, digits, '_' and '-' and must start with a "
                                 "letter or Chinese character"),
    ("vpc_name_problem", None, "must be a string"),
    ("description_problem", "", None), ("description_problem", "d" * 128, None),
    ("description_problem", "d" * 129, "must be 0-128 characters long (is 129)"),
    ("description_problem", "Https://x", "must not start with http: or https:"),
    ("description_problem", 5, "must be a string"),
])
def test_each_name_rule_alone(fn, value, problem):
    assert getattr(r, fn)(value) == problem


def test_int_in_takes_integers_only_within_bounds():
    assert r.int_in(1, 1, 3) and r.int_in(3, 1, 3)
    assert not r.int_in(0, 1, 3) and not r.int_in(4, 1, 3)
    assert not r.int_in(True, 0, 3) and not r.int_in(2.0, 1, 3) and not r.int_in("2", 1, 3)


# --- security group rule bodies (vpc/create-security-group-ingress) --------------------------


API = "vpc/create-security-group-ingress"


def test_ingress_rule_bodies_are_the_documented_ones():
    assert vpc.IngressRule(22, "203.0.113.0/24").body(API, 0) == {
        "direction": "ingress", "remoteType": 0, "action": "accept", "priority": 1, "protocol": "TCP",
        "ethertype": "IPv4", "destCidrIp": "203.0.113.0/24", "range": "22"}
    assert vpc.IngressRule(65535, "2001:db8::/32", "k3 api", 100, "UDP").body(API, 3) == {
        "direction": "ingress", "remoteType": 0, "action": "accept", "priority": 100, "protocol": "UDP",
        "ethertype": "IPv6", "destCidrIp": "2001:db8::/32", "range": "65535", "description": "k3 api"}
    # all traffic from the group's own members: remoteType 1, ANY, no range, no destCidrIp
    assert vpc.IngressRule.from_group("sg-1", "k3 nodes").body(API, 0) == {
        "direction": "ingress", "remoteType": 1, "remoteSecurityGroupID": "sg-1", "action": "accept",
        "priority": 1, "protocol": "ANY", "ethertype": "IPv4", "description": "k3 nodes"}
    assert vpc.IngressRule.from_group("sg-1").key() == ("ingress", "accept", "ANY", "", "group:sg-1")
    assert vpc.IngressRule(1, "10.0.0.0/8").key() == ("ingress", "accept", "TCP", "1", "10.0.0.0/8")


@pytest.mark.parametrize("rule,message", [
    (vpc.IngressRule(0, "10.0.0.0/8"), f"CTyun {API}: securityGroupRules[2].range=0 must be a port 1-65535"),
    (vpc.IngressRule(65536, "10.0.0.0/8"), f"CTyun {API}: securityGroupRules[2].range=65536 must be a port 1-65535"),
    (vpc.IngressRule("22", "10.0.0.0/8"), f"CTyun {API}: securityGroupRules[2].range='22' must be a port 1-65535"),
    (vpc.IngressRule(22, "10.0.0.0/8", priority=0), f"CTyun {API}: securityGroupRules[2].priority=0 must be 1-100"),
    (vpc.IngressRule(22, "10.0.0.0/8", priority=101), f"CTyun {API}: securityGroupRules[2].priority=101 must be 1-100"),
    (vpc.IngressRule(22, "10.0.0.0/8", protocol="ICMP"),
     f"CTyun {API}: securityGroupRules[2].protocol='ICMP' must be TCP or UDP"),
    (vpc.IngressRule(22, "10.0.0.0/8", "http://x"),
     f"CTyun {API}: securityGroupRules[2].description='http://x' must not start with http: or https:"),
    (vpc.IngressRule(22, "", remote_group_id="sg-1", protocol="ANY"),
     f"CTyun {API}: securityGroupRules[2].remoteSecurityGroupID='sg-1' is for an ANY rule without port or "
     "CIDR (all traffic from the group's members)"),
    (vpc.IngressRule(0, "", remote_group_id="sg-1", protocol="TCP"),
     f"CTyun {API}: securityGroupRules[2].remoteSecurityGroupID='sg-1' is for an ANY rule without port or "
     "CIDR (all traffic from the group's members)"),
])
def test_ingress_rule_refusals(rule, message):
    with pytest.raises(RequestError) as e:
        rule.body(API, 2)
    assert str(e.value) == message


def test_vpc_names_and_descriptions_are_checked_before_sending():
    with pytest.raises(RequestError) as e:
        vpc._name("vpc/create", "name", "9net")
    assert str(e.value) == ("CTyun vpc/create: name='9net' may hold only letters, Chinese, digits, '_' and '-' "
                            "and must start with a letter or Chinese character")
    with pytest.raises(RequestError) as e:
        vpc._description("vpc/create", "d" * 129)
    assert str(e.value).endswith(" must be 0-128 characters long (is 129)")
    assert str(e.value).startswith("CTyun vpc/create: description='ddd")
    vpc._name("vpc/create", "name", "k3-net")
    vpc._description("vpc/create", "kimi-k3 owner t")
