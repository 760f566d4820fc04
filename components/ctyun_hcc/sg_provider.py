"""`HccSecurityGroup`: the security group in front of the cluster, as a dynamic resource.

Type token `pulumi-python:dynamic/ctyun:HccSecurityGroup`. Two separate CIDR lists:
`sshCidrs` may reach TCP `sshPort` (the SSH bootstrap), `endpointCidrs` may reach the model
port; and the group's own members (the cluster's nodes) reach each other on everything, through
one rule whose source is the group itself (sg_rules.py). Nothing else is opened.

- `securityGroup: "create"`: a group of this stack, named `groupName` and marked with the
  stack's owner token in its description. An interrupted run finds it again by exact name and
  marker; a same-named group without the marker is never adopted (the create stops and says
  how to choose). Egress rules are left as CTyun creates them. Destroy deletes the group.
- its ingress rules: each rule the stack adds carries the marker plus `ssh`/`endpoint` in its
  description, and its id is kept in state (`ruleIDs`, `ownRules`). A rule is the stack's when
  its id is in state or its description carries this stack's marker (an add whose answer was
  lost); only such rules are revoked when no longer wanted (a CIDR list shrank) and a wanted one
  that is missing is added again (refresh, then up). Rules someone else added to the group are
  never revoked, whatever they open (a warning names them). The one exception is a group this
  very call created: its ingress rules are what CTyun put in a new group (undocumented), not
  anyone's addition, and are revoked unless wanted. A rule whose source is the group itself is
  never revoked (listings know it only by remoteSecurityGroupID), in any group; one admitting
  all IPv4 traffic serves as the stack's own.
- an existing group id: never changed. The provider checks that its rules already admit what
  kimi-k3 needs, the members' traffic included, and otherwise stops, listing the rules to add
  (kimi-k3 does not rewrite the rules of a group it did not create). Destroy leaves it alone.
"""

from __future__ import annotations

import ipaddress
from typing import Any, Dict, List

import pulumi
from pulumi.dynamic import CheckFailure, CreateResult, ReadResult, UpdateResult

from ..dynamic.provider import DynamicResource
from . import provider_runtime as rt
from .api import rules
from .api.errors import ApiError, CtyunError
from .api.vpc import Rule, SecurityGroup, VpcApi
from .network_provider import DELETE_SETTING
from .ownership import is_ours, owner_marker
from .sg_rules import (covers, describe_rule, describe_want, is_own_rule, own_rules, plan_sync,
                       recorded_keys, rule_of, wanted_keys, wanted_rules)

log = rt.LOG

INPUT_DEFAULTS: Dict[str, Any] = {
    "regionID": None, "vpcID": None, "securityGroup": "create", "groupName": None,
    "ownerToken": None, "sshCidrs": [], "endpointCidrs": [], "sshPort": 22,
    "endpointPort": None, "sshRequired": True, "endpoint": "", "timeoutS": 600,
    "pollIntervalS": 5, "progressFile": None,
}
REPLACE_KEYS = ("regionID", "vpcID", "securityGroup", "groupName")
OUTPUT_KEYS = ("securityGroupID", "securityGroupName", "ruleIDs", "ownRules", "created")


class GroupProblem(CtyunError):
    """The group cannot be used as asked (named in the message)."""


def check_inputs(n: Dict[str, Any]) -> List[CheckFailure]:
    """Every failure of the group's inputs, in the order a reader fixes them: where the group
    lives, its name and marker, each CIDR list with its port, then SSH reachability."""
    return [*_place_failures(n), *_group_failures(n),
            *_rule_failures(n, "sshCidrs", "sshPort"),
            *_rule_failures(n, "endpointCidrs", "endpointPort"), *_ssh_failures(n)]


def _place_failures(n: Dict[str, Any]) -> List[CheckFailure]:
    f = []
    if not n.get("regionID"):
        f.append(CheckFailure("regionID", "regionID is required: pulumi config set "
                              "ctyun:regionId <region id>"))
    if not n.get("vpcID"):
        f.append(CheckFailure("vpcID", "vpcID is required"))
    return f


def _group_failures(n: Dict[str, Any]) -> List[CheckFailure]:
    """A group this stack creates needs a valid name and the owner token to mark it."""
    if n.get("securityGroup", "create") != "create":
        return []
    f = []
    name = n.get("groupName")
    if rt.known(name) and (not name or rules.vpc_name_problem(name)):
        f.append(CheckFailure("groupName", f"groupName={name!r} "
                              f"{rules.vpc_name_problem(name or '')} (it derives from "
                              "ctyun:clusterName)"))
    if n.get("ownerToken") in (None, ""):
        f.append(CheckFailure("ownerToken", "ownerToken is required to mark the group"))
    return f


def _is_cidr(value: Any) -> bool:
    try:
        ipaddress.ip_network(str(value), strict=True)
    except ValueError:
        return False
    return True


def _is_port(value: Any) -> bool:
    return isinstance(value, (int, float)) and int(value) == value and 1 <= value <= 65535


def _rule_failures(n: Dict[str, Any], key: str, port_key: str) -> List[CheckFailure]:
    """A CIDR list (each entry a network address) and, when it opens anything, its port."""
    cidrs = n.get(key, [])
    if not rt.known(cidrs):
        return []
    if not isinstance(cidrs, list):
        return [CheckFailure(key, f"{key} must be a list of CIDRs")]
    f = [CheckFailure(key, f"{key} entry {c!r} is not a CIDR")
         for c in cidrs if rt.known(c) and not _is_cidr(c)]
    port = n.get(port_key, INPUT_DEFAULTS[port_key])
    if cidrs and rt.known(port) and not _is_port(port):
        f.append(CheckFailure(port_key, f"{port_key}={port!r} must be a port 1-65535"))
    return f


def _ssh_failures(n: Dict[str, Any]) -> List[CheckFailure]:
    ssh = n.get("sshCidrs", [])
    if n.get("sshRequired", True) is True and rt.known(ssh) and not ssh:
        return [CheckFailure("sshCidrs", "kimi-k3:sshAllowedCidrs is empty and there is no "
                             "kimi-k3:sshBastion: the bootstrap needs SSH to the master; set "
                             "kimi-k3:sshAllowedCidrs to the address of the machine running "
                             "`pulumi up` (e.g. [\"203.0.113.10/32\"])")]
    return []


class HccSecurityGroupProvider(rt.CtyunProvider):
    """CRUD of this stack's security group (or a check of an existing one). Holds nothing."""

    INPUTS = INPUT_DEFAULTS
    OUTPUTS = OUTPUT_KEYS
    REPLACE_KEYS = REPLACE_KEYS
    DELETE_BEFORE_REPLACE = False

    def check_inputs(self, news):
        return check_inputs(news)

    def drifted(self, olds: Dict[str, Any], news: Dict[str, Any]) -> bool:
        return self._drifted(olds, news)

    @staticmethod
    def _drifted(old: Dict[str, Any], n: Dict[str, Any]) -> bool:
        """A group of ours whose rules (as the last refresh saw them) are not the wanted ones:
        a rule of ours was revoked by hand, so `up` must add it again."""
        recorded = old.get("ownRules")
        if not old.get("created") or not isinstance(recorded, list) or not all(
                rt.known(n.get(k)) for k in ("sshCidrs", "endpointCidrs", "sshPort",
                                              "endpointPort")):
            return False
        try:
            want = wanted_keys(n)
        except (TypeError, ValueError):
            return False
        return recorded_keys(recorded) != want

    def create(self, props) -> CreateResult:
        p = self.inputs(props)
        api = rt.vpc(p)
        deadline = self.deadline(p, "create").at
        if p["securityGroup"] != "create":
            group = self._existing(api, p, deadline)
            return CreateResult(group.group_id, self._outs(p, group, [], False))
        found = api.find_security_groups(p["vpcID"], p["groupName"], deadline)
        ours = [g for g in found if is_ours(g.description, p["ownerToken"])]
        if found and not (len(found) == 1 and ours):
            raise GroupProblem(
                f"security group {p['groupName']} exists in VPC {p['vpcID']} "
                f"({', '.join(g.group_id for g in found)}) and is not this stack's (no kimi-k3 "
                "marker of this stack in its description): choose another ctyun:clusterName "
                "(the group is named after it) or use a group explicitly with "
                "ctyun:securityGroup=<id> (kimi-k3 then only checks its rules)")
        gid = ours[0].group_id if ours else api.create_security_group(
            p["vpcID"], p["groupName"], owner_marker(p["ownerToken"]), deadline)
        # described even when just created: what rules CTyun puts in a new group is not
        # documented, and an ingress rule it added must not stay open
        group = self._describe(api, gid, deadline)
        mine = self._sync(api, group, p, [], deadline, fresh=not ours)
        return CreateResult(gid, self._outs(p, group, mine, True))

    @staticmethod
    def _outs(p, group: SecurityGroup, mine: List[Rule], created) -> Dict[str, Any]:
        return {**p, "securityGroupID": group.group_id, "securityGroupName": group.name,
                "ruleIDs": sorted(r.rule_id for r in mine),
                "ownRules": own_rules(mine, group.group_id), "created": created}

    @staticmethod
    def _describe(api: VpcApi, gid: str, deadline) -> SecurityGroup:
        group = api.describe_security_group(gid, deadline)
        if group is None:
            raise GroupProblem(f"security group {gid} does not exist "
                               "(describe-security-group-attribute: Openapi.SecurityGroup."
                               "NotFound)")
        return group

    def _existing(self, api: VpcApi, p, deadline) -> SecurityGroup:
        """An existing group, checked, never changed."""
        group = self._describe(api, p["securityGroup"], deadline)
        if group.vpc_id and group.vpc_id != p["vpcID"]:
            raise GroupProblem(f"ctyun:securityGroup={group.group_id} belongs to VPC "
                               f"{group.vpc_id}, not to the cluster's VPC {p['vpcID']}")
        missing = [w for w in wanted_rules(p, group.group_id)
                   if not any(covers(r, w) for r in group.rules)]
        if missing:
            need = "; ".join(describe_want(w) for w in missing)
            raise GroupProblem(f"ctyun:securityGroup={group.group_id} ({group.name}) does not "
                               f"admit what kimi-k3 needs: {need}. Add the rule(s) yourself "
                               "(kimi-k3 does not change a group it did not create) or leave "
                               "ctyun:securityGroup unset to let the stack create its own")
        return group

    @staticmethod
    def _sync(api: VpcApi, group: SecurityGroup, p: Dict[str, Any], recorded_ids,
              deadline, fresh: bool = False) -> List[Rule]:
        """Make this stack's ingress rules in a group it created equal the wanted ones
        (sg_rules.plan_sync): revoke ours that are no longer wanted (or repeat a kept one), add
        the missing ones; never touch a rule that is not provably ours, except in a group
        created by this very call (`fresh`), and never one whose source is the group itself.
        Our rules after it."""
        plan = plan_sync(group.group_id, group.rules, wanted_rules(p, group.group_id),
                         recorded_ids, p.get("ownerToken"), fresh)
        for r in plan.revoke:
            api.revoke_ingress(group.group_id, r.rule_id, deadline)
        if plan.foreign:
            log.warning("security group %s: left alone %d ingress rule(s) kimi-k3 did not add: "
                        "%s", group.group_id, len(plan.foreign),
                        "; ".join(describe_rule(r) for r in plan.foreign))
        if plan.from_group:
            log.info("security group %s: kept %d rule(s) whose source is the group itself "
                     "(never revoked): %s", group.group_id, len(plan.from_group),
                     "; ".join(describe_rule(r) for r in plan.from_group))
        kept = list(plan.keep)
        if plan.add:
            ids = api.add_ingress(group.group_id, plan.add, deadline)
            kept += [rule_of(i, w) for i, w in zip(ids, plan.add)]
        return kept

    def read(self, id_, props) -> ReadResult:
        p, old = self.inputs(props), props
        group = rt.vpc(p).describe_security_group(id_, self.deadline(p, "read").at)
        if group is None:
            return ReadResult(None, {})
        if not old.get("created"):
            return ReadResult(id_, {**old, "securityGroupName": group.name})
        mine = [r for r in group.rules if r.direction == "ingress" and
                is_own_rule(r, old.get("ruleIDs"), p.get("ownerToken"))]
        return ReadResult(id_, {**old, "securityGroupName": group.name,
                                "ruleIDs": sorted(r.rule_id for r in mine),
                                "ownRules": own_rules(mine, group.group_id)})

    def update(self, id_, olds, news) -> UpdateResult:
        p, old = self.inputs(news), olds
        api = rt.vpc(p)
        deadline = self.deadline(p, "update").at
        if not old.get("created"):
            group = self._existing(api, {**p, "securityGroup": id_}, deadline)
            return UpdateResult(self._outs(p, group, [], False))
        group = self._describe(api, id_, deadline)
        mine = self._sync(api, group, p, old.get("ruleIDs"), deadline)
        return UpdateResult(self._outs(p, group, mine, True))

    def delete(self, id_, props) -> None:
        p, old = self.inputs(props), props
        if not old.get("created"):
            return  # not ours: left exactly as it was
        api = rt.vpc(p)
        deadline = self.deadline(p, "delete", DELETE_SETTING)

        def probe():
            try:
                api.delete_security_group(id_, deadline.at)
                if api.describe_security_group(id_, deadline.at) is None:
                    return True, None, ""
                return False, None, "still listed after delete"
            except ApiError as e:
                # still used by the cluster's servers while E-HPC releases them (the code for
                # "in use" is undocumented, CTyun contract 6.11): wait and repeat
                return False, None, f"{e.code}: {e.message}"

        deadline.until(f"security group {id_} to be deleted", probe, float(p["pollIntervalS"]))


class HccSecurityGroup(DynamicResource, module="ctyun", name="HccSecurityGroup"):
    """This stack's security group (or a checked existing one) opening only what is needed."""

    securityGroupID: pulumi.Output[str]
    securityGroupName: pulumi.Output[str]
    ruleIDs: pulumi.Output[list]
    created: pulumi.Output[bool]

    def __init__(self, resource_name: str, inputs: Dict[str, Any], opts=None):
        super().__init__(HccSecurityGroupProvider(), resource_name, inputs, opts)
