"""Security-group drift against the emulator: the stack revokes only the ingress rules it can
prove it added (id in state, or its owner marker in the rule's description) once they are no
longer wanted, adds back a wanted one that went missing, and never touches a rule someone else
added to its group, even one opening the same port."""

import pytest

from components.ctyun_hcc import provider_runtime as rt
from components.ctyun_hcc.api.errors import TransportError
from components.ctyun_hcc.api.vpc import IngressRule
from components.ctyun_hcc.ownership import is_ours
from tests.emulators.ctyun.state import REGION
from tests.integration.ctyun_fixtures import Stack, clean, emu, emulator  # noqa: F401

SSH_A, SSH_B = "198.51.100.7/32", "198.51.100.8/32"
ENDPOINT = "203.0.113.0/24"
INGRESS = "/v4/vpc/create-security-group-ingress"


def keys(gid):
    """(port, CIDR, rule id) of the group's ingress rules as CTyun lists them."""
    group = rt.vpc({"regionID": REGION}).describe_security_group(gid)
    return sorted((r.port_range, r.cidr, r.rule_id) for r in group.rules
                  if r.direction == "ingress")


def ingress(gid):
    group = rt.vpc({"regionID": REGION}).describe_security_group(gid)
    return sorted((r.port_range, r.cidr, r.description) for r in group.rules
                  if r.direction == "ingress")


def test_shrunk_lists_and_missing_rules_touch_only_the_stacks_own_rules(emu):
    s = Stack(kimi={"sshAllowedCidrs": f"{SSH_A},{SSH_B}"})
    s.up()
    sg = s.outs("sg")
    gid, token = sg["securityGroupID"], s.outs("owner")["ownerToken"]
    assert len(sg["ruleIDs"]) == 3
    # someone else adds two rules in the console: another SSH source, and the same
    # endpoint rule as ours (a duplicate the stack did not make)
    vpc = rt.vpc({"regionID": REGION})
    foreign = vpc.add_ingress(gid, [IngressRule(22, "192.0.2.0/24", "ops jump host"),
                                    IngressRule(11025, ENDPOINT, "ops monitoring")])
    # ... and revokes one of the stack's rules by hand
    endpoint_rule = next(i for p, _, i in keys(gid) if p == "11025" and i in sg["ruleIDs"])
    vpc.revoke_ingress(gid, endpoint_rule)

    s.refresh()  # sees the stack's endpoint rule gone; the foreign ones are not the stack's
    s.up()       # same config: the missing rule is added again, nothing else is touched
    assert [(p, c) for p, c, _ in keys(gid)] == [
        ("11025", ENDPOINT), ("11025", ENDPOINT), ("22", "192.0.2.0/24"), ("22", SSH_A),
        ("22", SSH_B)]
    assert set(foreign) <= {i for _, _, i in keys(gid)}
    s.up(kimi={"sshAllowedCidrs": SSH_A})  # the SSH list shrinks: only our SSH_B rule goes
    assert [(p, c) for p, c, _ in keys(gid)] == [
        ("11025", ENDPOINT), ("11025", ENDPOINT), ("22", "192.0.2.0/24"), ("22", SSH_A)]
    assert set(foreign) <= {i for _, _, i in keys(gid)}
    s.up(kimi={"sshAllowedCidrs": f"{SSH_A},{SSH_B}"})  # back as before

    s.refresh()
    assert sorted((r["port"], r["cidr"]) for r in s.outs("sg")["ownRules"]) == \
        [("11025", ENDPOINT), ("22", SSH_A), ("22", SSH_B)]
    assert len([d for _, _, d in ingress(gid) if is_ours(d, token)]) == 3  # each one marked
    rules = ingress(gid)
    assert ("22", "192.0.2.0/24", "ops jump host") in rules
    assert ("11025", ENDPOINT, "ops monitoring") in rules
    mine = [(p, c) for p, c, d in rules if is_ours(d, token)]
    assert sorted(mine) == [("11025", ENDPOINT), ("22", SSH_A), ("22", SSH_B)]

    s.up(kimi={"sshAllowedCidrs": SSH_A})  # the SSH list shrinks: only our SSH_B rule goes
    rules = ingress(gid)
    assert sorted((p, c) for p, c, d in rules if is_ours(d, token)) == \
        [("11025", ENDPOINT), ("22", SSH_A)]
    assert ("22", "192.0.2.0/24", "ops jump host") in rules
    assert ("11025", ENDPOINT, "ops monitoring") in rules
    assert set(foreign) <= {r.rule_id for r in vpc.describe_security_group(gid).rules}
    assert len(s.outs("sg")["ruleIDs"]) == 2

    s.up(kimi={"allowedCidrs": "", "allowInternet": "false"})  # no endpoint CIDRs at all
    assert ("11025", ENDPOINT, "ops monitoring") in ingress(gid)
    assert not [c for p, c, d in ingress(gid) if p == "11025" and is_ours(d, token)]
    s.destroy()
    assert clean(emu)["leakedTotal"] == 0


def test_a_rule_whose_add_answer_was_lost_is_known_by_its_marker(emu):
    """The add ran but no answer came back (every retry lost too): the next `up` finds the
    rule by the stack's marker and neither adds a second one nor leaves one it cannot revoke."""
    s = Stack()
    s.up()
    gid, token = s.outs("sg")["securityGroupID"], s.outs("owner")["ownerToken"]
    # every attempt the transport makes (RetryPolicy.max_attempts) runs, and its answer is lost
    emu.faults({"path": INGRESS, "kind": "lost_response", "times": 6})
    with pytest.raises(TransportError):
        s.up(kimi={"sshAllowedCidrs": f"{SSH_A},{SSH_B}"})
    assert ("22", SSH_B) in [(p, c) for p, c, d in ingress(gid) if is_ours(d, token)]
    s.up(kimi={"sshAllowedCidrs": f"{SSH_A},{SSH_B}"})
    assert [(p, c) for p, c, d in ingress(gid)].count(("22", SSH_B)) == 1
    assert ("22", SSH_B) in [(r["port"], r["cidr"]) for r in s.outs("sg")["ownRules"]]
    s.up(kimi={"sshAllowedCidrs": SSH_A})  # and it is revoked when no longer wanted
    assert ("22", SSH_B) not in [(p, c) for p, c, d in ingress(gid)]
    s.destroy()
    assert clean(emu)["leakedTotal"] == 0
