"""Stacks deployed before issue 18's component tree keep every resource.

The tree changed (the target's component at the top, K3Inference attached to it, the serving
resources under K3Inference); resources that moved carry aliases to their old URNs
(components/program/tree.py). For each plan variant, the URNs recorded from the tree before
(tests/golden/urns/, tests/record_urns.py) are matched against today's registrations the way the
engine does it (tests/doubles/engine_alias_double.py): every old URN is taken over by exactly one
resource, nothing is created and nothing deleted, so `pulumi up` after the change updates in
place and replaces nothing.
"""

from __future__ import annotations

import copy

import pytest

from components.offline.runner import PROJECT, run_program
from tests.doubles.engine_alias_double import match
from tests.record_urns import VARIANTS, recorded



@pytest.fixture(scope="module")
def runs():
    return {v: run_program(stack, overrides) for v, (stack, overrides) in VARIANTS.items()}


#: resources that features added after the URNs were recorded: created by the first `up` after
#: them, never instead of an old one (name -> why)
ADDED_SINCE_RECORD = {
    "kimi-k3-efa-scripts": "issue 20: the EFA scripts ConfigMap of a multi-node replica",
    "kimi-k3-s3": "issue 20/22: the VPC's S3 gateway endpoint (S3 traffic off the NAT gateway)",
    **{n: "issue 22: monitoring (components/aws_eks/monitoring_resources.py)" for n in (
        "kimi-k3-kube-prometheus-stack", "kimi-k3-dcgm-exporter", "kimi-k3-alert-rules",
        "kimi-k3-serving-dashboard", "kimi-k3-accelerators-dashboard", "kimi-k3-pod-monitor")},
    "kimi-k3-owner": "issue 20: the stack's ownership token (state only) that purchases are tagged with",
    "kimi-k3-gpu-roll-guard": "issue 20: scales the GPU node group to 0 before it rolls while a block runs",
    **{f"kimi-k3-router-{kind}": "issue 23: vllm-router in front of several replicas"
       for kind in ("serviceaccount", "role", "rolebinding", "configmap", "deployment")},
    "kimi-k3-check": "issue 19: ClusterCheck, what the master carries and the nodes' names",
    "kimi-k3-shrink": "issue 19: HccShrink, a shrink that stops the service first",
    **{n: "issue 22: ctyun-hcc metrics services (components/ctyun_hcc/metrics_services.py)"
       for n in ("kimi-k3-prometheus", "kimi-k3-exporters")},
}


#: resources renamed after the record, deployed under the old name by main before the rename:
#: old Pulumi name -> (new name, the main commit that still registered the old one, why)
RENAMED_SINCE_RECORD = {
    f"kimi-k3-kimi-k3-{d}-dashboard": (f"kimi-k3-{d}-dashboard", "787b698",
                                       "issue 22: the dashboard ConfigMaps' doubled prefix")
    for d in ("serving", "accelerators")}
#: the weights objects and the serving ConfigMaps lost the same doubled prefix (program/tree.py
#: `undoubled`); the weights objects also moved under K3Inference since the record (aliased both ways)
RENAMED_SINCE_RECORD.update({
    f"kimi-k3-kimi-k3-{n}": (f"kimi-k3-{n}", "e4b29d7", "issue 20: the doubled prefix of the cluster objects' names")
    for n in ("weights-scripts", "weights-source", "serving", "mirror", "efa-scripts", "api-guard")})


def state_before_renames(variant: str, run) -> set:
    """The URNs a stack deployed just before the renames holds: the record (the tree before,
    moves aliased) with each renamed resource at today's place under its old name (a state
    holds one or the other, never both)."""
    return {u for u in recorded(variant) if u.rsplit("::", 1)[-1] not in RENAMED_SINCE_RECORD} | \
        deployed_before_renames(run)


def deployed_before_renames(run) -> set:
    """The URNs a stack deployed from the commit before each rename holds for the renamed
    resources: today's URN with the old name (same type and parent)."""
    new_to_old = {new: old for old, (new, _, _) in RENAMED_SINCE_RECORD.items()}
    return {r["urn"].rsplit("::", 1)[0] + "::" + new_to_old[r["name"]]
            for r in run.resources if r["name"] in new_to_old}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_every_old_urn_is_kept_or_aliased(runs, variant):
    run, old = runs[variant], set(recorded(variant))
    m = match(run.resources, old, VARIANTS[variant][0], PROJECT)
    assert m.errors == []
    assert m.deleted == [], "an update would delete (and the new tree create) these"
    assert [u for u in m.created if u.rsplit("::", 1)[-1] not in ADDED_SINCE_RECORD] == []
    assert sorted(m.matched.values()) == sorted(old)


def test_the_trees_are_the_design_cards():
    """Per stack the target's component at the top, K3Inference its child, serving under it."""
    ctyun = run_program("ctyun-hcc")
    parents = {r["name"]: r["parent"] for r in ctyun.resources}
    assert parents["kimi-k3-hcc"] == "kimi-k3-ctyun-hcc"  # the stack
    assert parents["kimi-k3-inference"] == "kimi-k3-hcc"
    assert parents["kimi-k3-hostkey"] == parents["kimi-k3-bcast"] == "kimi-k3-hcc"
    assert parents["kimi-k3-service"] == parents["kimi-k3-accept"] == "kimi-k3-inference"
    aws = run_program("aws-eks")
    tops = [r for r in aws.resources if r["parent"] == "kimi-k3-aws-eks"]
    assert [(r["type"], r["name"]) for r in tops] == [("kimi-k3:aws:EksCluster", "kimi-k3")]
    by_name = {(r["type"], r["name"]): r["parent"] for r in aws.resources}
    assert by_name[("kimi-k3:inference:K3Inference", "kimi-k3-inference")] == "kimi-k3"
    assert by_name[("kubernetes:apps/v1:Deployment", "kimi-k3-vllm")] == "kimi-k3-inference"
    assert by_name[("pulumi-python:dynamic/aws:EndpointReadiness", "kimi-k3-readiness")] == "kimi-k3-inference"
    assert by_name[("eks:index:Cluster", "kimi-k3-eks")] == "kimi-k3"
    names = [r["name"] for r in aws.resources if not r["custom"]]
    assert len(names) == len(set(names)), "component names are unique"


def test_a_moved_resource_without_its_alias_would_be_replaced(runs):
    """The check itself: drop one alias and the old resource is deleted, a new one created."""
    run = runs["aws-default"]
    regs = copy.deepcopy(run.resources)
    svc = next(r for r in regs if r["name"] == "kimi-k3-svc")
    assert svc["aliases"], "the Service moved under K3Inference with an alias"
    svc["aliases"] = []
    m = match(regs, set(recorded("aws-default")), "aws-eks", PROJECT)
    assert [u for u in m.created if u.rsplit("::", 1)[-1] not in ADDED_SINCE_RECORD] == [svc["urn"]]
    assert m.deleted == ["urn:pulumi:aws-eks::kimi-k3::kimi-k3:aws:EksCluster$kubernetes:core/v1:Service::kimi-k3-svc"]


def test_a_moved_component_without_its_alias_loses_its_children_too(runs):
    """Children inherit only an alias that matched: the cluster component of ctyun-hcc moved to
    the top, and without its alias its five resources would be replaced with it."""
    regs = copy.deepcopy(runs["ctyun-default"].resources)
    next(r for r in regs if r["name"] == "kimi-k3-hcc")["aliases"] = []
    m = match(regs, set(recorded("ctyun-default")), "ctyun-hcc", PROJECT)
    created = [u for u in m.created if u.rsplit("::", 1)[-1] not in ADDED_SINCE_RECORD]
    assert len(created) == 5 + 1 and len(m.deleted) == 5 + 1


@pytest.mark.parametrize("variant", sorted(v for v, (stack, _) in VARIANTS.items() if stack == "aws-eks"))
def test_renamed_resources_take_over_their_old_urns(runs, variant):
    """A stack deployed before a rename (its state: the record and the old names) updates in
    place: each old URN is taken over by the renamed resource, nothing is deleted."""
    run = runs[variant]
    renamed = deployed_before_renames(run)
    if variant != "aws-hyperpod":  # (an existing HyperPod cluster: the stack adds no monitoring or weights)
        names = {u.rsplit("::", 1)[-1] for u in renamed}
        assert {f"kimi-k3-kimi-k3-{n}" for n in ("serving-dashboard", "accelerators-dashboard", "weights-scripts",
                                                 "serving", "mirror")} <= names
    m = match(run.resources, state_before_renames(variant, run), "aws-eks", PROJECT)
    assert m.errors == [] and m.deleted == []
    assert renamed <= set(m.matched.values())
    assert not [u for u in m.created if u.rsplit("::", 1)[-1] in
                {new for new, _, _ in RENAMED_SINCE_RECORD.values()}]


def test_a_moved_and_renamed_resource_without_its_combined_alias_would_be_replaced(runs):
    """The check itself for a rename after a move: the mirror Job of a stack deployed before the
    component tree (old parent, old name) is kept only by the alias naming both."""
    regs = copy.deepcopy(runs["aws-default"].resources)
    job = next(r for r in regs if r["name"] == "kimi-k3-mirror" and r["type"] == "kubernetes:batch/v1:Job")
    both = [a for a in job["aliases"] if a.get("name") == "kimi-k3-kimi-k3-mirror" and a.get("parentUrn")]
    assert both
    job["aliases"] = [a for a in job["aliases"] if a not in both]
    m = match(regs, set(recorded("aws-default")), "aws-eks", PROJECT)
    assert [u.rsplit("::", 1)[-1] for u in m.deleted] == ["kimi-k3-kimi-k3-mirror"] and job["urn"] in m.created


def test_a_renamed_resource_without_its_alias_would_be_replaced(runs):
    """The check itself: without the alias the serving dashboard's ConfigMap of a deployed
    stack would be deleted and a new one created."""
    regs = copy.deepcopy(runs["aws-default"].resources)
    cm = next(r for r in regs if r["name"] == "kimi-k3-serving-dashboard")
    assert cm["aliases"]
    cm["aliases"] = []
    old = deployed_before_renames(runs["aws-default"])
    m = match(regs, state_before_renames("aws-default", runs["aws-default"]), "aws-eks", PROJECT)
    assert m.deleted == [u for u in sorted(old) if u.endswith("::kimi-k3-kimi-k3-serving-dashboard")]
    assert cm["urn"] in m.created
