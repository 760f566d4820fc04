"""CtyunHccCluster wiring under Pulumi's own mock engine (pulumi.runtime.set_mocks).

The mock stands in for the engine only; the assertions are on what the component registers:
type tokens, child names and parents, the security group rules (only SSH and the model port,
only from the allowed CIDRs), the secret root password, and the target-facing methods.
"""

import pulumi
import pytest

from components.ctyun_hcc.config import parse_hcc_config
from components.settings import parse_settings

@pytest.fixture(autouse=True)
def _restore_config():
    """Config set by these tests must not leak into other tests of the same process."""
    saved = dict(pulumi.runtime.config.CONFIG.get())
    yield
    pulumi.runtime.config.CONFIG.set(saved)


BASE = {"regionId": "r1", "azName": "az1", "vpcId": "vpc-1", "subnetId": "subnet-1"}


class RecordingMocks(pulumi.runtime.Mocks):
    """Test double for the Pulumi engine: records registrations, echoes inputs as outputs."""

    def __init__(self):
        self.resources = []

    def new_resource(self, args: pulumi.runtime.MockResourceArgs):
        self.resources.append(args)
        outs = dict(args.inputs)
        if args.typ == "pulumi-python:dynamic/ctyun:HccCluster":
            outs.update(clusterUUID="hpc-1", masterPublicIP="203.0.113.9",
                        masterInnerIP="192.168.0.2", schedulerVersion="22.05",
                        nodes=[{"name": "a3master0001", "innerIP": "192.168.0.2",
                                "role": "master", "nodeUUID": "n0"}])
        if args.typ == "pulumi-python:dynamic/ctyun:HccNetwork":
            outs.update(vpcID="vpc-new", subnetID="subnet-new", createdVpc=True,
                        createdSubnet=True)
        if args.typ == "pulumi-python:dynamic/ctyun:HccSecurityGroup":
            outs.update(securityGroupID="sg-1", securityGroupName="k3-sg", ruleIDs=[],
                        created=True)
        return f"{args.name}-id", outs

    def call(self, args):
        return {}


def build(cidrs="203.0.113.0/24,198.51.100.7/32", password="K3-Passw0rd!", base=None):
    mocks = RecordingMocks()
    pulumi.runtime.set_mocks(mocks, project="kimi-k3", stack="ctyun-hcc", preview=False)
    if password is not None:
        pulumi.runtime.set_config("ctyun:rootPassword", password)
    from components.ctyun_hcc.cluster import CtyunHccCluster
    shared = parse_settings({"target": "ctyun-hcc", "allowedCidrs": cidrs}, "ctyun-hcc")
    comp = CtyunHccCluster("kimi-k3", parse_hcc_config(base or BASE, shared), shared, None)
    return mocks, comp


@pulumi.runtime.test
def test_registers_group_and_cluster_with_only_needed_rules():
    mocks, comp = build()
    assert comp.node_shape_key() == "atlas-800-a3" and comp.node_count() == 4

    def check(_):
        by_type = {r.typ: r for r in mocks.resources}
        assert set(by_type) == {"kimi-k3:ctyun:HccCluster",
                                "pulumi-python:dynamic/ctyun:HccSecurityGroup",
                                "pulumi-python:dynamic/ctyun:HccCluster"}
        sg = by_type["pulumi-python:dynamic/ctyun:HccSecurityGroup"]
        assert sg.name == "kimi-k3-sg"
        rules = sorted((r["port"], r["cidr"]) for r in sg.inputs["rules"])
        assert rules == [(22, "198.51.100.7/32"), (22, "203.0.113.0/24"),
                         (11025, "198.51.100.7/32"), (11025, "203.0.113.0/24")]
        cl = by_type["pulumi-python:dynamic/ctyun:HccCluster"]
        assert cl.name == "kimi-k3-cluster" and cl.inputs["computeNodeCount"] == 3
        # the name of a group we create is known up front (never unknown in a preview)
        assert cl.inputs["securityGroupName"] == "k3-ctyun-hcc-sg"
        assert cl.inputs["queueName"] == "batch"
        assert "__provider" in cl.inputs

    return pulumi.Output.all(comp.cluster_id, comp.nodes).apply(check)


@pulumi.runtime.test
def test_outputs_are_mapped_for_the_target():
    _, comp = build()

    def check(args):
        cid, ip, nodes = args
        assert (cid, ip) == ("hpc-1", "203.0.113.9")
        assert nodes == [{"name": "a3master0001", "inner_ip": "192.168.0.2", "role": "master"}]

    return pulumi.Output.all(comp.cluster_id, comp.master_public_ip, comp.nodes).apply(check)


def test_root_password_is_secret():
    import asyncio
    _, comp = build()
    assert asyncio.get_event_loop().run_until_complete(comp.root_password.is_secret())


@pulumi.runtime.test
def test_no_cidrs_means_no_ingress_at_all():
    mocks, comp = build(cidrs="")

    def check(_):
        sg = [r for r in mocks.resources if r.typ.endswith("HccSecurityGroup")][0]
        assert sg.inputs["rules"] == []
    return comp.cluster_id.apply(check)


@pulumi.runtime.test
def test_missing_account_settings_are_refused_by_the_providers_check_not_at_plan_time():
    from components.ctyun_hcc.cluster_provider import HccClusterProvider
    from components.ctyun_hcc.sg_provider import HccSecurityGroupProvider
    pulumi.runtime.config.CONFIG.set({})  # no ctyun:rootPassword in this test
    mocks, comp = build(password=None, base={"vpcId": "vpc-1", "subnetId": "subnet-1"})

    def check(_):
        by_type = {r.typ.split(":")[-1]: r for r in mocks.resources}
        cl = dict(by_type["HccCluster"].inputs)
        reasons = {f.property: f.reason for f in HccClusterProvider().check({}, cl).failures}
        assert "ctyun:rootPassword" in reasons["rootPassword"]
        assert "ctyun:regionId" in reasons["regionID"] and "ctyun:azName" in reasons["azName"]
        sg = dict(by_type["HccSecurityGroup"].inputs)
        assert [f.property for f in HccSecurityGroupProvider().check({}, sg).failures] == [
            "regionID"]
    return comp.cluster_id.apply(check)
