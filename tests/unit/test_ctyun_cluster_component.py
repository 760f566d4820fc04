"""CtyunHccCluster wiring under Pulumi's own mock engine (pulumi.runtime.set_mocks).

The mock stands in for the engine only; the assertions are on what the component registers:
type tokens, child names, order of dependencies, the security group rules (SSH only from the
SSH CIDRs, the model port only from the endpoint CIDRs), stack-unique names, the order/cluster
split, the secret root password, and the target-facing methods.
"""

import pulumi
import pytest

from components.ctyun_hcc.config import parse_hcc_config
from components.ctyun_hcc.mock_outputs import MOCK_OUTPUTS
from components.config.shared import parse_settings


@pytest.fixture(autouse=True)
def _restore_config():
    """Config set by these tests must not leak into other tests of the same process."""
    saved = dict(pulumi.runtime.config.CONFIG.get())
    yield
    pulumi.runtime.config.CONFIG.set(saved)


BASE = {"regionId": "r1", "azName": "az1", "vpcId": "vpc-1", "subnetId": "subnet-1"}
T = "pulumi-python:dynamic/ctyun:"


class RecordingMocks(pulumi.runtime.Mocks):
    """Test double for the Pulumi engine: records registrations, answers the providers'
    documented output shapes (mock_outputs)."""

    def __init__(self):
        self.resources = []

    def new_resource(self, args: pulumi.runtime.MockResourceArgs):
        self.resources.append(args)
        outs = dict(args.inputs)
        if args.typ in MOCK_OUTPUTS:
            outs.update(MOCK_OUTPUTS[args.typ](args.inputs))
        return f"{args.name}-id", outs

    def call(self, args):
        return {}


def build(endpoint="203.0.113.0/24,198.51.100.7/32", ssh="198.51.100.7/32",
          password="K3-Passw0rd!", base=None):
    mocks = RecordingMocks()
    pulumi.runtime.set_mocks(mocks, project="kimi-k3", stack="ctyun-hcc", preview=False)
    if password is not None:
        pulumi.runtime.set_config("ctyun:rootPassword", password)
    from components.ctyun_hcc.cluster import CtyunHccCluster
    shared = parse_settings({"target": "ctyun-hcc", "allowedCidrs": endpoint,
                             "sshAllowedCidrs": ssh}, "ctyun-hcc")
    comp = CtyunHccCluster("kimi-k3", parse_hcc_config(base or BASE, shared), shared, None)
    return mocks, comp


def by_type(mocks):
    return {r.typ.replace(T, ""): r for r in mocks.resources}


@pulumi.runtime.test
def test_registers_owner_group_order_and_cluster_with_separate_exposure():
    mocks, comp = build()
    # alone (no bootstrap chain), as the integration tests' stack driver builds it
    assert comp.bootstrapped is None
    assert [r._name for r in comp.resources] == ["kimi-k3-owner", "kimi-k3-sg", "kimi-k3-order",
                                                 "kimi-k3-cluster"]

    def check(_):
        r = by_type(mocks)
        assert set(r) == {"kimi-k3:ctyun:HccCluster", "HccStackOwner", "HccSecurityGroup",
                          "HccClusterOrder", "HccCluster"}
        sg = r["HccSecurityGroup"]
        assert sg.name == "kimi-k3-sg"
        assert sg.inputs["sshCidrs"] == ["198.51.100.7/32"] and sg.inputs["sshPort"] == 22
        assert sorted(sg.inputs["endpointCidrs"]) == ["198.51.100.7/32", "203.0.113.0/24"]
        assert sg.inputs["endpointPort"] == 11025 and sg.inputs["ownerToken"] == "0" * 32
        order, cl = r["HccClusterOrder"], r["HccCluster"]
        name = order.inputs["clusterName"]
        assert name.startswith("k3-ctyun-hcc-") and len(name) <= 20
        assert order.inputs["securityGroupName"] == f"{name}-sg"  # known up front
        assert order.inputs["computeNodeCount"] == 3 and order.inputs["ownedVpc"] is False
        assert order.inputs["progressFile"].endswith(".kimi-k3/progress/ctyun-hcc.jsonl")
        assert cl.inputs["computeNodeCount"] == 3 and cl.inputs["orderJobUUID"] == "job-mock"
        assert cl.inputs["securityGroupID"] == "sg-mock" and "__provider" in cl.inputs
        assert "rootPassword" in order.inputs and "rootPassword" in cl.inputs

    return pulumi.Output.all(comp.cluster_id, comp.nodes).apply(check)


@pulumi.runtime.test
def test_created_network_is_marked_and_the_order_knows_the_vpc_is_its_own():
    mocks, comp = build(base={"regionId": "r1", "azName": "az1"})

    def check(_):
        r = by_type(mocks)
        net, order = r["HccNetwork"], r["HccClusterOrder"]
        name = order.inputs["clusterName"]
        assert (net.inputs["vpcName"], net.inputs["subnetName"]) == (f"{name}-vpc",
                                                                     f"{name}-subnet")
        assert net.inputs["ownerToken"] == "0" * 32
        assert order.inputs["ownedVpc"] is True and order.inputs["vpcID"] == "vpc-mock"
    return comp.cluster_id.apply(check)


@pulumi.runtime.test
def test_outputs_are_mapped_for_the_target():
    _, comp = build()

    def check(args):
        cid, ip, nodes = args
        assert (cid, ip) == ("cl-mock", "198.51.100.10")
        assert nodes[0] == {"name": "a3master0001", "inner_ip": "192.0.2.10", "role": "master"}
        assert [n["role"] for n in nodes] == ["master", "compute", "compute", "compute"]

    return pulumi.Output.all(comp.cluster_id, comp.master_public_ip, comp.nodes).apply(check)


def test_root_password_is_secret():
    import asyncio
    _, comp = build()
    assert asyncio.get_event_loop().run_until_complete(comp.root_password.is_secret())


@pulumi.runtime.test
def test_no_cidrs_means_no_ingress_at_all():
    mocks, comp = build(endpoint="", ssh="")

    def check(_):
        sg = by_type(mocks)["HccSecurityGroup"]
        assert sg.inputs["sshCidrs"] == [] and sg.inputs["endpointCidrs"] == []
    return comp.cluster_id.apply(check)


@pulumi.runtime.test
def test_missing_account_settings_are_refused_by_the_providers_check_not_at_plan_time():
    from components.ctyun_hcc.cluster_order import HccClusterOrderProvider
    from components.ctyun_hcc.sg_provider import HccSecurityGroupProvider
    pulumi.runtime.config.CONFIG.set({})  # no ctyun:rootPassword in this test
    mocks, comp = build(password=None, ssh="", base={"vpcId": "vpc-1", "subnetId": "subnet-1"})

    def check(_):
        r = by_type(mocks)
        order = dict(r["HccClusterOrder"].inputs)
        reasons = {f.property: f.reason for f in HccClusterOrderProvider().check({}, order)
                   .failures}
        assert "ctyun:rootPassword" in reasons["rootPassword"]
        assert "ctyun:regionId" in reasons["regionID"] and "ctyun:azName" in reasons["azName"]
        sg = dict(r["HccSecurityGroup"].inputs)
        failures = {f.property: f.reason for f in HccSecurityGroupProvider().check({}, sg)
                    .failures}
        assert set(failures) == {"regionID", "sshCidrs"}
        assert "kimi-k3:sshAllowedCidrs" in failures["sshCidrs"]
    return comp.cluster_id.apply(check)
