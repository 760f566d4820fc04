"""The stack's security-group rules (components/ctyun_hcc/sg_rules.py): the nodes talk to each
other through a rule whose source is the group itself, which is added, adopted, recorded and
never revoked; a rule from a group is never taken for a CIDR rule (CTyun contract 3.11, 6.14)."""

from components.ctyun_hcc import sg_rules as s
from components.ctyun_hcc.api.vpc import IngressRule, Rule

GID = "sg-own0000001"
TOKEN = "0123456789abcdef0123456789abcdef"
P = {"ownerToken": TOKEN, "sshCidrs": ["198.51.100.7/32"], "endpointCidrs": ["203.0.113.0/24"],
     "sshPort": 22, "endpointPort": 11025}


def rule(rid, protocol="TCP", port="", cidr="", group="", ether="IPv4", desc="", action="accept",
         direction="ingress"):
    return Rule(rid, direction, action, protocol, ether, port, cidr, 1, desc, group)


def test_the_wanted_rules_include_everything_from_the_groups_members():
    wanted = s.wanted_rules(P, GID)
    assert [s.describe_want(w) for w in wanted] == [
        "ingress accept TCP 22 from 198.51.100.7/32",
        "ingress accept TCP 11025 from 203.0.113.0/24",
        f"ingress accept ANY from this group itself (remoteType 1, remoteSecurityGroupID {GID}: "
        "the nodes talk to each other)"]
    assert wanted[-1].description == f"kimi-k3 owner {TOKEN} cluster"
    assert wanted[-1].body("x", 0)["remoteSecurityGroupID"] == GID
    assert s.wanted_rules(P) == wanted[:2]   # no group id yet: no rule from it


def test_a_fresh_group_keeps_what_admits_its_members_and_revokes_the_rest():
    # what CTyun's console presets put in a group ([ctdoc 10105035]), plus an open SSH rule
    preset = [rule("r-v4", "ANY", group=GID), rule("r-v6", "ANY", group=GID, ether="IPv6"),
              rule("r-ssh-any", "TCP", "22", "0.0.0.0/0"),
              rule("r-egress", "ANY", cidr="0.0.0.0/0", direction="egress")]
    plan = s.plan_sync(GID, preset, s.wanted_rules(P, GID), [], TOKEN, fresh=True)
    assert [r.rule_id for r in plan.keep] == ["r-v4"]          # adopted: none added twice
    assert [r.rule_id for r in plan.from_group] == ["r-v6"]    # never revoked
    assert [r.rule_id for r in plan.revoke] == ["r-ssh-any"]
    assert [w.key()[3:] for w in plan.add] == [("22", "198.51.100.7/32"),
                                               ("11025", "203.0.113.0/24")]


def test_a_rule_from_the_group_itself_is_never_revoked_even_when_it_is_ours():
    # ours by id, but no longer the wanted shape (TCP only): left alone, the ANY rule added
    ours = rule("r-tcp", "TCP", "6817", group=GID, desc=f"kimi-k3 owner {TOKEN} cluster")
    plan = s.plan_sync(GID, [ours], s.wanted_rules(P, GID), ["r-tcp"], TOKEN, fresh=False)
    assert plan.revoke == [] and [r.rule_id for r in plan.from_group] == ["r-tcp"]
    assert plan.add[-1].remote_group_id == GID
    # fresh too: a group-sourced rule is never revoked, whatever else is
    plan = s.plan_sync(GID, [ours], s.wanted_rules(P, GID), [], TOKEN, fresh=True)
    assert plan.revoke == []


def test_someone_elses_rule_from_our_group_is_adopted_not_duplicated():
    theirs = rule("r-theirs", "ANY", group=GID, desc="added by hand")
    plan = s.plan_sync(GID, [theirs], s.wanted_rules(P, GID), [], TOKEN, fresh=False)
    assert [r.rule_id for r in plan.keep] == ["r-theirs"] and len(plan.add) == 2
    assert s.own_rules(plan.keep, GID) == [{"id": "r-theirs", "port": "", "cidr": "",
                                            "source": "group:self"}]


def test_a_rule_from_another_group_is_not_ours_nor_a_member_rule():
    other = rule("r-other", "ANY", group="sg-other00001", desc=f"kimi-k3 owner {TOKEN} cluster")
    plan = s.plan_sync(GID, [other], s.wanted_rules(P, GID), [], TOKEN, fresh=False)
    assert [r.rule_id for r in plan.revoke] == ["r-other"]   # ours by marker, not wanted
    assert plan.add[-1].remote_group_id == GID


def test_a_group_source_never_covers_a_cidr_whatever_its_dest_cidr_reads():
    # the hostile reading of CTyun contract 6.14: a group rule listing destCidrIp 0.0.0.0/0
    hostile = rule("r", "ANY", cidr="0.0.0.0/0", group="sg-other00001")
    assert not s.covers(hostile, IngressRule(22, "198.51.100.7/32"))
    assert not s.covers(rule("r", "ANY", group=GID), IngressRule(22, "198.51.100.7/32"))
    assert s.covers(rule("r", "ANY", cidr=""), IngressRule(22, "198.51.100.7/32"))
    want = s.intra_rule(GID, TOKEN)
    assert s.covers(rule("r", "ANY", group=GID), want)
    assert not s.covers(rule("r", "TCP", "1-65535", group=GID), want)
    assert not s.covers(rule("r", "ANY", group=GID, ether="IPv6"), want)
    assert not s.covers(rule("r", "ANY", group="sg-other00001"), want)
    assert not s.covers(rule("r", "ANY", cidr="0.0.0.0/0"), want)   # a CIDR is not the group
    assert not s.covers(rule("r", "ANY", group=GID, action="drop"), want)


def test_state_without_the_member_rule_reads_as_drift():
    before = [{"id": "a", "port": "22", "cidr": "198.51.100.7/32"},
              {"id": "b", "port": "11025", "cidr": "203.0.113.0/24"}]
    assert s.recorded_keys(before) != s.wanted_keys(P)
    after = before + [{"id": "c", "port": "", "cidr": "", "source": "group:self"}]
    assert s.recorded_keys(after) == s.wanted_keys(P)


def test_an_added_member_rule_is_recorded_as_listings_show_it():
    added = s.rule_of("r-new", s.intra_rule(GID, TOKEN))
    assert added.from_group(GID) and added.port_range == "" and added.protocol == "ANY"
    assert s.record(added, GID)["source"] == "group:self"
    assert s.rule_of("r-ssh", IngressRule(22, "10.0.0.0/8")).port_range == "22"
