"""Fault matrix: each fault x create/expand/shrink/delete ends converged, with no duplicate
order, nothing leaked and nothing of another stack touched; plus the network-side faults."""

import pytest

from components.ctyun_hcc import provider_runtime as rt
from tests.emulators.ctyun.state import REGION
from tests.integration.ctyun_fault_matrix import run_scenario, scenarios
from tests.integration.ctyun_stack import Stack, clean


@pytest.mark.parametrize("fault,op", scenarios())
def test_fault_then_retry_converges_without_duplicates_leaks_or_foreign_calls(emu, fault, op):
    r = run_scenario(emu, fault, op)
    assert r["duplicate_orders"] == 0, r
    assert r["leaked"] == 0, r["leaked_items"]
    assert r["foreign_touched"] == 0, r["foreign_calls"]
    if fault == "same_names":
        # converged (delete), or one clear error with nothing ordered (create)
        assert r["converged"] or (r["nothing_ordered"] and "not this stack's" in r["errors"][0])
        return
    assert r["converged"], r["errors"]
    if fault == "throttle":
        assert r["errors"] == []   # refused, so not run: repeated inside the run
    if fault == "lost_response":
        assert r["errors"] == []   # the order ran: proven by listing, never re-sent
    if fault in ("http500", "http502", "drop"):
        # no answer and nothing listed changed: not re-sent; one clear error at most, then
        # the re-run (which re-lists first) converges
        assert len(r["errors"]) <= 1 and all("not sent again" in e for e in r["errors"])
    if fault in ("fail_job", "slow_job") and op != "delete":
        assert len(r["errors"]) == 1  # one clear error, then the re-run converges
    if op == "delete":
        assert len(r["errors"]) <= 1  # delete-cluster has no job (CTyun contract 2.13)


NETWORK_PATHS = ("/v4/vpc/create", "/v4/vpc/create-subnet", "/v4/vpc/create-security-group",
                 "/v4/vpc/create-security-group-ingress", "/v4/vpc/delete-security-group",
                 "/v4/vpc/delete-subnet", "/v4/vpc/delete")


@pytest.mark.parametrize("fault", ["http502", "drop", "lost_response"])
@pytest.mark.parametrize("path", NETWORK_PATHS)
def test_network_and_group_survive_faults_without_duplicates_or_leaks(emu, path, fault):
    """VPC calls carry a clientToken: a lost answer is re-sent with the same body."""
    emu.faults({"path": path, "kind": fault})
    s = Stack()
    for name in ("owner", "net", "sg"):  # only the network side of the stack
        news = s._fast(s._inputs(name, *s.config()))
        r = s.providers[name].create(news)
        s.state[name] = (r.id, r.outs)
    inv = emu.inventory()
    assert (len(inv["vpcs"]), len(inv["subnets"]), len(inv["securityGroups"])) == (1, 1, 1)
    gid = s.outs("sg")["securityGroupID"]
    group = rt.vpc({"regionID": REGION}).describe_security_group(gid)
    # no rule twice: SSH, the endpoint, and the group's own-member rules it came with (IPv4,
    # adopted as the nodes' rule, and IPv6)
    assert len([r for r in group.rules if r.direction == "ingress"]) == 4
    assert len([r for r in group.rules if r.from_group(gid)]) == 2
    s.destroy()
    assert clean(emu)["leakedTotal"] == 0
