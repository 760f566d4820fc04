"""CTyun's documented input rules (CTyun contract 4.2, 4.3)."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from components.ctyun_hcc.api import rules as r


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
