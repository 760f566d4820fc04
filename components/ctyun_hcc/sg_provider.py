"""`HccSecurityGroup`: the security group in front of the cluster, as a dynamic resource.

Type token `pulumi-python:dynamic/ctyun:HccSecurityGroup`. With `securityGroup: "create"` it
creates a group of its own in the VPC (found again by name if an earlier run was interrupted) and
deletes it on destroy; with an existing group id it only adds its rules to that group and on
destroy revokes exactly the rules it added, leaving the group and its other rules alone.
Rules are accept-ingress TCP rules from the given CIDRs only: nothing is opened to 0.0.0.0/0
unless that CIDR is passed explicitly.
"""

from __future__ import annotations

import ipaddress
import time
from typing import Any, Dict, List, Optional

import pulumi
from pulumi.dynamic import (CheckFailure, CheckResult, ConfigureRequest, CreateResult,
                            DiffResult, ReadResult, ResourceProvider, UpdateResult)

from .client import ApiError, TransportError
from .ehpc import DeadlineExceeded, Ehpc, new_client_token
from .provider_runtime import (changed_inputs, deadline_in, is_unknown, make_api, remember_config,
                               strip, with_defaults)

INPUT_DEFAULTS: Dict[str, Any] = {"regionID": None, "vpcID": None, "securityGroup": "create",
                                  "groupName": None, "rules": [], "endpoint": "",
                                  "timeoutS": 600, "pollIntervalS": 5}
REPLACE_KEYS = ("regionID", "vpcID", "securityGroup", "groupName")


def rule_key(rule: Dict[str, Any]) -> tuple:
    return (str(rule.get("protocol", "TCP")).upper(), str(rule.get("port") or rule.get("range")),
            str(rule.get("cidr") or rule.get("destCidrIp")))


def api_rule(rule: Dict[str, Any]) -> Dict[str, Any]:
    cidr = str(rule["cidr"])
    return {"direction": "ingress", "action": "accept", "priority": 1,
            "protocol": str(rule.get("protocol", "TCP")).upper(),
            "ethertype": "IPv6" if ":" in cidr else "IPv4", "destCidrIp": cidr,
            "range": str(rule["port"])}


def check_inputs(news: Dict[str, Any]) -> List[CheckFailure]:
    f: List[CheckFailure] = []
    for key in ("regionID", "vpcID", "groupName"):
        if not news.get(key):
            hint = ": pulumi config set ctyun:regionId <region id>" if key == "regionID" else ""
            f.append(CheckFailure(key, f"{key} is required{hint}"))
    rules = news.get("rules", [])
    if is_unknown(rules):
        return f
    if not isinstance(rules, list):
        return f + [CheckFailure("rules", "rules must be a list")]
    for i, r in enumerate(rules):
        if is_unknown(r) or not isinstance(r, dict):
            continue
        port, cidr = r.get("port"), r.get("cidr")
        if not is_unknown(port) and not (isinstance(port, (int, float)) and 1 <= port <= 65535):
            f.append(CheckFailure("rules", f"rules[{i}].port={port!r} must be 1-65535"))
        if not is_unknown(cidr):
            try:
                ipaddress.ip_network(str(cidr), strict=True)
            except ValueError:
                f.append(CheckFailure("rules", f"rules[{i}].cidr={cidr!r} is not a CIDR"))
    return f


def _inputs(props: Dict[str, Any]) -> Dict[str, Any]:
    return with_defaults(props, INPUT_DEFAULTS)


class HccSecurityGroupProvider(ResourceProvider):
    """CRUD of a security group (or of our rules in an existing one). Holds nothing."""

    serialize_as_secret_always = False

    def configure(self, req: ConfigureRequest) -> None:
        remember_config(req.config)

    def check(self, olds, news) -> CheckResult:
        return CheckResult(news, check_inputs(strip(news)))

    def diff(self, id_, olds, news) -> DiffResult:
        o, n = _inputs(strip(olds)), _inputs(strip(news))
        # endpoint/timeouts only steer the provider: no update step (it would make the outputs
        # unknown in preview); recorded with the next real change
        changed = changed_inputs(o, n, INPUT_DEFAULTS)
        return DiffResult(changes=bool(changed), replaces=[k for k in changed
                                                           if k in REPLACE_KEYS],
                          delete_before_replace=False)

    def create(self, props) -> CreateResult:
        p = _inputs(strip(props))
        api = make_api(p)
        deadline = deadline_in(p["timeoutS"])
        created = p["securityGroup"] == "create"
        if created:
            group = api.find_security_group(p["vpcID"], p["groupName"], deadline)
            if group is None:
                try:
                    gid = api.create_security_group(p["vpcID"], p["groupName"],
                                                    new_client_token(), deadline)
                except TransportError:
                    group = api.find_security_group(p["vpcID"], p["groupName"], deadline)
                    if group is None:
                        raise
                    gid = group["id"]
            else:
                gid = group["id"]
        else:
            gid = p["securityGroup"]
        desc = api.describe_security_group(gid, deadline)
        if desc is None:
            raise ApiError("describe-security-group-attribute", "VPC.SecurityGroup.NotFound",
                           f"security group {gid} does not exist (ctyun:securityGroup)")
        rule_ids = self._sync_rules(api, gid, desc, p["rules"], [], created, deadline)
        return CreateResult(gid, self._outs(p, gid, desc["name"], rule_ids, created))

    @staticmethod
    def _outs(p, gid, name, rule_ids, created) -> Dict[str, Any]:
        return {**p, "securityGroupID": gid, "securityGroupName": name, "ruleIDs": rule_ids,
                "created": created}

    @staticmethod
    def _sync_rules(api: Ehpc, gid: str, desc: Dict[str, Any], wanted: List[Dict[str, Any]],
                    ours: List[str], created: bool, deadline: float) -> List[str]:
        """Make our rules equal `wanted`; return the ids of the rules we own."""
        # egress rules (a new group comes with an allow-all one) are neither ours nor touched
        present = {r["id"]: r for r in desc.get("securityGroupRuleList") or []
                   if str(r.get("direction", "ingress")).lower() == "ingress"}
        # in a group we created every rule is ours (covers a create interrupted mid-way)
        owned = {rid: present[rid] for rid in present if created or rid in ours}
        want = {rule_key(r): r for r in wanted}
        keep = []
        for rid, r in owned.items():
            if rule_key(r) in want:
                keep.append(rid)
                want.pop(rule_key(r))
            else:
                api.revoke_ingress(gid, rid, deadline)
        for rid, r in present.items():  # a user's identical rule already allows it
            if rid not in owned:
                want.pop(rule_key(r), None)
        if want:
            keep += api.add_ingress(gid, [api_rule(r) for r in want.values()],
                                    new_client_token(), deadline)
        return sorted(keep)

    def read(self, id_, props) -> ReadResult:
        p, old = _inputs(strip(props)), strip(props)
        api = make_api(p)
        desc = api.describe_security_group(id_, deadline_in(p["timeoutS"]))
        if desc is None:
            return ReadResult(None, {})
        present = {r["id"] for r in desc.get("securityGroupRuleList") or []}
        ours = [r for r in old.get("ruleIDs") or [] if r in present]
        outs = self._outs(p, id_, desc["name"], ours, bool(old.get("created")))
        return ReadResult(id_, outs, {k: outs[k] for k in INPUT_DEFAULTS})

    def update(self, id_, olds, news) -> UpdateResult:
        p, old = _inputs(strip(news)), strip(olds)
        api = make_api(p)
        deadline = deadline_in(p["timeoutS"])
        desc = api.describe_security_group(id_, deadline)
        if desc is None:
            raise ApiError("describe-security-group-attribute", "VPC.SecurityGroup.NotFound",
                           f"security group {id_} no longer exists; run `pulumi refresh`")
        created = bool(old.get("created"))
        rule_ids = self._sync_rules(api, id_, desc, p["rules"], old.get("ruleIDs") or [],
                                    created, deadline)
        return UpdateResult(self._outs(p, id_, desc["name"], rule_ids, created))

    def delete(self, id_, props) -> None:
        p, old = _inputs(strip(props)), strip(props)
        api = make_api(p)
        deadline = deadline_in(p["timeoutS"])
        started = time.monotonic()
        if not old.get("created"):
            for rid in old.get("ruleIDs") or []:
                api.revoke_ingress(id_, rid, deadline)
            return
        while True:
            try:
                api.delete_security_group(id_, deadline)
            except ApiError as e:
                if "inuse" not in e.code.replace(".", "").lower():
                    raise
                if time.monotonic() >= deadline:
                    raise DeadlineExceeded(f"security group {id_} to be released by the "
                                           "cluster", time.monotonic() - started,
                                           "the timeoutS input") from None
                time.sleep(float(p["pollIntervalS"]))
                continue
            if api.describe_security_group(id_, deadline) is None:
                return


class HccSecurityGroup(pulumi.dynamic.Resource, module="ctyun", name="HccSecurityGroup"):
    """A security group (or our rules in an existing one) opening only the given ports."""

    securityGroupID: pulumi.Output[str]
    securityGroupName: pulumi.Output[str]
    ruleIDs: pulumi.Output[list]
    created: pulumi.Output[bool]

    def __init__(self, resource_name: str, inputs: Dict[str, Any],
                 opts: Optional[pulumi.ResourceOptions] = None):
        unknown = set(inputs) - set(INPUT_DEFAULTS)
        if unknown:
            raise TypeError(f"HccSecurityGroup: unknown inputs {sorted(unknown)}")
        props = {**inputs, "securityGroupID": None, "securityGroupName": None, "ruleIDs": None,
                 "created": None}
        super().__init__(HccSecurityGroupProvider(), resource_name, props, opts)
