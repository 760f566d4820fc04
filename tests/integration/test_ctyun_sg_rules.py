"""Security-group drift against the emulator: the stack revokes only the ingress rules it can
prove it added (id in state, or its owner marker in the rule's description) once they are no
longer wanted, adds back a wanted one that went missing, and never touches a rule someone else
added to its group, even one opening the same port."""

import pytest

from components.ctyun_hcc import provider_runtime as rt
from components.ctyun_hcc.api.errors import TransportError
from components.ctyun_hcc.api.transport import RetryPolicy
from components.ctyun_hcc.api.vpc import IngressRule
from components.ctyun_hcc.ownership import is_ours
from tests.emulators.ctyun.state import REGION
from tests.integration.ctyun_stack import Stack, clean

SSH_A, SSH_B = "198.51.100.7/32", "198.51.100.8/32"
ENDPOINT = "203.0.113.0/24"
INGRESS = "/v4/vpc/create-security-group-ingress"


def keys(gid):
    """(port, CIDR, rule id) of the group's CIDR ingress rules as CTyun lists them (the rules
    whose source is the group itself: test_the_nodes_rule_... below)."""
    group = rt.vpc({"regionID": REGION}).describe_security_group(gid)
    return sorted((r.port_range, r.cidr, r.rule_id) for r in group.rules
                  if r.direction == "ingress" and not r.remote_group_id)


def ingress(gid):
    group = rt.vpc({"regionID": REGION}).describe_security_group(gid)
    return sorted((r.port_range, r.cidr, r.description) for r in group.rules
                  if r.direction == "ingress" and not r.remote_group_id)


def from_group(gid):
    group = rt.vpc({"regionID": REGION}).describe_security_group(gid)
    return sorted(((r.rule_id, r.ethertype, r.protocol) for r in group.rules
                   if r.from_group(gid)), key=lambda x: (x[1], x[2], x[0]))


def test_shrunk_lists_and_missing_rules_touch_only_the_stacks_own_rules(emu):
    s = Stack(kimi={"sshAllowedCidrs": f"{SSH_A},{SSH_B}"})
    s.up()
    sg = s.outs("sg")
    gid, token = sg["securityGroupID"], s.outs("owner")["ownerToken"]
    assert len(sg["ruleIDs"]) == 4   # 2 SSH, the endpoint, the nodes' rule
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
        [("", ""), ("11025", ENDPOINT), ("22", SSH_A), ("22", SSH_B)]
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
    assert len(s.outs("sg")["ruleIDs"]) == 3

    s.up(kimi={"allowedCidrs": "", "allowInternet": "false"})  # no endpoint CIDRs at all
    assert ("11025", ENDPOINT, "ops monitoring") in ingress(gid)
    assert not [c for p, c, d in ingress(gid) if p == "11025" and is_ours(d, token)]
    s.destroy()
    assert clean(emu)["leakedTotal"] == 0


def test_a_rule_whose_add_answer_was_lost_is_known_by_its_marker(emu, monkeypatch):
    """The add ran but no answer came back (every retry lost too): the next `up` finds the
    rule by the stack's marker and neither adds a second one nor leaves one it cannot revoke."""
    # the retries' backoff (up to 15 s of real sleep over 6 attempts) is not what is tested here
    monkeypatch.setattr(RetryPolicy, "delay", lambda self, attempt, rng: 0.0)
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


@pytest.mark.parametrize("preset", [True, False])
def test_the_nodes_rule_is_added_or_adopted_kept_and_restored(emu, preset):
    """Issue 19 item 1: the group admits all traffic from its own members (remoteType 1). A new
    group that came with such a rule keeps it (adopted, never revoked); one that did not gets
    the stack's own; revoked by hand, the next up adds it again."""
    emu.settings(new_group_intra_rule=preset, group_rule_dest_cidr="any")
    s = Stack()
    s.up()
    gid = s.outs("sg")["securityGroupID"]
    rules = from_group(gid)
    assert [(e, p) for _, e, p in rules] == ([("IPv4", "ANY"), ("IPv6", "ANY")] if preset
                                             else [("IPv4", "ANY")])
    assert [c["membersCanTalk"] for c in emu.report()["held"]["clusters"]] == [True]
    nodes_rule = next(i for i, e, _ in rules if e == "IPv4")
    assert nodes_rule in s.outs("sg")["ruleIDs"]
    # listed with destCidrIp 0.0.0.0/0 (the undocumented reading): never taken for a CIDR rule
    assert ("", "0.0.0.0/0") not in [(p, c) for p, c, _ in keys(gid)]
    rt.vpc({"regionID": REGION}).revoke_ingress(gid, nodes_rule)      # by hand
    assert emu.report()["held"]["clusters"][0]["membersCanTalk"] is False
    s.refresh()
    s.up()
    assert emu.report()["held"]["clusters"][0]["membersCanTalk"] is True
    s.up(kimi={"sshAllowedCidrs": SSH_B})   # other rules change: the nodes' rule stays
    assert emu.report()["held"]["clusters"][0]["membersCanTalk"] is True
    s.destroy()
    assert clean(emu)["leakedTotal"] == 0


def test_an_existing_group_must_already_admit_its_members(emu):
    from components.ctyun_hcc.sg_provider import GroupProblem
    from tests.emulators.ctyun.state import DEFAULT_SG, SUBNET, VPC
    emu.settings(group_rule_dest_cidr="any")
    vpc = rt.vpc({"regionID": REGION})
    ours = vpc.add_ingress(DEFAULT_SG, [IngressRule(22, SSH_A), IngressRule(11025, ENDPOINT)])
    for r in vpc.describe_security_group(DEFAULT_SG).rules:   # the default group's own preset
        if r.from_group(DEFAULT_SG):
            vpc.revoke_ingress(DEFAULT_SG, r.rule_id)
    s = Stack(ctyun={"vpcId": VPC, "subnetId": SUBNET, "securityGroup": DEFAULT_SG})
    with pytest.raises(GroupProblem, match="ANY from this group itself .remoteType 1"):
        s.up()
    # a rule from another group, listed with destCidrIp 0.0.0.0/0, admits neither SSH nor it
    (other,) = vpc.add_ingress(DEFAULT_SG, [IngressRule.from_group(DEFAULT_SG)])
    assert s.up()["clusterStatus"] == "available"
    s.destroy()
    for rid in ours + [other]:
        vpc.revoke_ingress(DEFAULT_SG, rid)
    assert clean(emu)["leakedTotal"] == 0
