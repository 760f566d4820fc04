"""Which ingress rules the stack's security group holds, and which it may touch (pure).

The group admits three things and nothing else (CTyun contract 3.11):
- TCP `sshPort` from each `kimi-k3:sshAllowedCidrs` entry (the SSH bootstrap);
- the model port from each `kimi-k3:allowedCidrs` entry;
- all traffic from the group's own members: one rule whose source is the group itself
  (`remoteType` 1, `remoteSecurityGroupID` = the group, protocol ANY, IPv4). Slurm (6817/6818 and
  srun's I/O ports), MPICH for the weights broadcast, vLLM's data-parallel RPC and the HCCL/gloo
  host sockets all run between the nodes. CTyun documents traffic between members of one group
  as a default implemented by exactly such a rule ("入方向 | 全部 | 当前安全组 | 针对全部协议，
  允许安全组内实例通过内网网络相互通信", https://www.ctyun.cn/document/10000023/10105035;
  "本安全组内的实例网络互通", .../10002094; read 2026-12-01); what a group made by the API holds is
  not documented (CTyun contract 6.14), so the stack adds its own.

A rule whose source is the group itself is never revoked: listings carry no `remoteType` and
know such a rule only by `remoteSecurityGroupID`; its `destCidrIp` is undocumented and never read
as a CIDR. One that admits all traffic over IPv4 serves as the stack's (adopted, recorded), so
none is added twice. Every other rule is the stack's only when its id is in state or its
description carries the stack's marker; only those are revoked when no longer wanted, except in
a group this very call created (whatever it holds came from CTyun).
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Optional, Set, Tuple

from .api.vpc import IngressRule, Rule
from .ownership import is_ours, owner_marker

#: the record of the rule from the group itself in `ownRules` (its source, group id left out)
SELF = "group:self"


def rule_description(token: Optional[str], what: str) -> str:
    """`kimi-k3 owner <token> ssh`: the stack's marker on every rule it adds (proof it is ours
    even when the add's answer was lost); without a token (a group not ours) no marker."""
    return f"{owner_marker(token)} {what}" if token else f"kimi-k3 {what}"


def intra_rule(group_id: str, token: Optional[str]) -> IngressRule:
    """All traffic from the members of `group_id` (the cluster's nodes)."""
    return IngressRule.from_group(group_id, rule_description(token, "cluster"))


def wanted_rules(p: Dict[str, Any], group_id: str = "") -> List[IngressRule]:
    """SSH from each SSH CIDR, the model port from each endpoint CIDR and, given the group's id,
    everything from its own members; nothing else."""
    token = p.get("ownerToken") or None
    out = [IngressRule(int(p["sshPort"]), str(c), rule_description(token, "ssh"))
           for c in p["sshCidrs"] or []]
    out += [IngressRule(int(p["endpointPort"]), str(c), rule_description(token, "endpoint"))
            for c in p["endpointCidrs"] or []]
    if group_id:
        out.append(intra_rule(group_id, token))
    seen, unique = set(), []
    for r in out:
        if r.key() not in seen:
            seen.add(r.key())
            unique.append(r)
    return unique


def serves_as_intra(rule: Rule, group_id: str) -> bool:
    """Does `rule` admit all IPv4 traffic from the members of `group_id`?"""
    return (rule.from_group(group_id) and rule.action == "accept" and rule.protocol == "ANY"
            and rule.ethertype in ("IPv4", ""))


def is_own_rule(rule: Rule, recorded_ids: Iterable[str], token: Optional[str]) -> bool:
    """Provably this stack's: its id is in state, or its description carries our marker."""
    return rule.rule_id in set(recorded_ids or ()) or is_ours(rule.description, token or "")


def record(rule: Rule, group_id: str) -> Dict[str, str]:
    """One entry of the state's `ownRules`: id, port (range), CIDR, and for a rule whose source
    is the group itself `source: group:self`."""
    out = {"id": rule.rule_id, "port": rule.port_range, "cidr": rule.cidr}
    if rule.from_group(group_id):
        out.update(port="", cidr="", source=SELF)
    return out


def own_rules(rules: List[Rule], group_id: str) -> List[Dict[str, str]]:
    """The state's record of our ingress rules, sorted by id."""
    return sorted((record(r, group_id) for r in rules), key=lambda r: r["id"])


def _record_key(entry: Dict[str, Any]) -> Tuple[str, str]:
    return (str(entry.get("port") or ""), str(entry.get("source") or entry.get("cidr") or ""))


def wanted_keys(p: Dict[str, Any]) -> Set[Tuple[str, str]]:
    """What `ownRules` must hold for the inputs `p` (a group of the stack)."""
    keys = {(str(w.port), w.cidr) for w in wanted_rules(p)}
    return keys | {("", SELF)}


def recorded_keys(records: List[Dict[str, Any]]) -> Set[Tuple[str, str]]:
    return {_record_key(r) for r in records}


def covers(rule: Rule, want: IngressRule) -> bool:
    """Does an existing accept-ingress rule already admit `want`? A rule whose source is a
    group admits only that group's members: never a CIDR, whatever its destCidrIp reads."""
    if rule.direction != "ingress" or rule.action != "accept":
        return False
    if want.remote_group_id:
        return serves_as_intra(rule, want.remote_group_id)
    if rule.remote_group_id or rule.prefix_list_id:
        return False
    if rule.protocol not in ("ANY", want.protocol):
        return False
    if rule.protocol != "ANY" and rule.port_range:
        lo, _, hi = rule.port_range.partition("-")
        try:
            if not int(lo) <= want.port <= int(hi or lo):
                return False
        except ValueError:
            return False
    try:
        theirs = ipaddress.ip_network(rule.cidr or ("0.0.0.0/0" if ":" not in want.cidr
                                                    else "::/0"), strict=False)
        mine = ipaddress.ip_network(want.cidr, strict=False)
        return mine.version == theirs.version and mine.subnet_of(theirs)
    except ValueError:
        return False


def describe_want(w: IngressRule) -> str:
    if w.remote_group_id:
        return (f"ingress accept ANY from this group itself (remoteType 1, "
                f"remoteSecurityGroupID {w.remote_group_id}: the nodes talk to each other)")
    return f"ingress accept {w.protocol} {w.port} from {w.cidr}"


def describe_rule(r: Rule) -> str:
    return (f"{r.action} {r.protocol} {r.port_range or 'any'} from "
            f"{r.source or 'any'} ({r.rule_id})")


@dataclass
class SyncPlan:
    """What to do with a group of the stack: keep, revoke, add; and the rules left alone."""

    keep: List[Rule] = field(default_factory=list)
    revoke: List[Rule] = field(default_factory=list)
    add: List[IngressRule] = field(default_factory=list)
    foreign: List[Rule] = field(default_factory=list)
    from_group: List[Rule] = field(default_factory=list)


def plan_sync(group_id: str, rules: List[Rule], wanted: List[IngressRule],
              recorded_ids: Iterable[str], token: Optional[str], fresh: bool) -> SyncPlan:
    """The stack's ingress rules made equal to `wanted`: ours no longer wanted (or repeats of a
    kept one) revoked, missing ones added; a rule not provably ours never touched unless the
    group was created by this very call (`fresh`); a rule whose source is the group itself
    never revoked, and one admitting all IPv4 traffic serves as the stack's own."""
    want = {w.key(): w for w in wanted}
    intra_key = intra_rule(group_id, token).key()
    plan = SyncPlan()
    for r in rules:
        if r.direction != "ingress":
            continue  # egress as CTyun made it
        if r.from_group(group_id):
            if intra_key in want and serves_as_intra(r, group_id):
                plan.keep.append(r)
                want.pop(intra_key)
            else:
                plan.from_group.append(r)
            continue
        if not (fresh or is_own_rule(r, recorded_ids, token)):
            plan.foreign.append(r)
            continue
        if r.key() in want:  # the first of identical rules is kept, repeats revoked
            plan.keep.append(r)
            want.pop(r.key())
        else:
            plan.revoke.append(r)
    plan.add = list(want.values())
    return plan


def rule_of(rule_id: str, w: IngressRule) -> Rule:
    """The rule `w` as a listing would show it once added with id `rule_id`."""
    if w.remote_group_id:
        return Rule(rule_id, "ingress", "accept", "ANY", "IPv4", "", "", w.priority,
                    w.description, w.remote_group_id)
    return Rule(rule_id, "ingress", "accept", w.protocol, "", str(w.port), w.cidr, w.priority,
                w.description)
