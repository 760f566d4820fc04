"""HccCluster through Pulumi's real dynamic-provider host (`python -m pulumi.dynamic`) over gRPC.

Credentials and the endpoint reach the host only as stack config through Configure (the host's
environment has no CTYUN_* variables), the way `pulumi up` passes `ctyun:*` secret config.
"""

import os

import pytest
from pulumi.runtime.proto import provider_pb2

from components.ctyun_hcc.cluster_provider import HccClusterProvider
from components.ctyun_hcc.provider_runtime import is_unknown
from components.ctyun_hcc.sg_provider import HccSecurityGroupProvider
from tests.emulators.ctyun.harness import EmulatorProcess
from tests.emulators.ctyun.state import REGION, VPC
from tests.integration.ctyun_fixtures import PASSWORD, cluster_inputs
from tests.integration.dynamic_host import (PROVIDER_KEY, UNKNOWN, DynamicProviderHost,
                                            ProviderError, dynamic_urn, serialized)

URN = dynamic_urn("ctyun:HccCluster", "kimi-k3-cluster")
SG_URN = dynamic_urn("ctyun:HccSecurityGroup", "kimi-k3-sg")


@pytest.fixture(scope="module")
def stack():
    emu = EmulatorProcess(job_seconds=0.15).start()
    clean_env = {k: v for k, v in os.environ.items() if not k.startswith("CTYUN_")}
    host = DynamicProviderHost()
    host.env = {**clean_env, "PYTHONPATH": host.env["PYTHONPATH"]}
    try:
        host.start()
        host.configure({"ctyun:accessKey": emu.ak, "ctyun:secretKey": emu.sk,
                        "ctyun:endpoint": emu.url})
        yield emu, host
    finally:
        host.stop()
        emu.stop()


@pytest.fixture
def env(stack):
    emu, host = stack
    emu.reset()
    emu.settings(job_seconds=0.15)
    return emu, host


def news(**over):
    return {**cluster_inputs(**over), PROVIDER_KEY: serialized(HccClusterProvider())}


def test_preview_with_unknown_inputs_does_not_crash_check_or_diff(env):
    emu, host = env
    preview = news(securityGroupName=UNKNOWN, rootPassword=UNKNOWN, computeNodeCount=UNKNOWN)
    inputs, failures = host.check(URN, {}, preview)
    assert failures == [] and is_unknown(inputs["securityGroupName"])
    olds = {**news(), "clusterUUID": "hpc-x", "nodes": []}
    d = host.diff("hpc-x", URN, olds, preview)
    assert d.changes == provider_pb2.DiffResponse.DIFF_SOME
    assert list(d.replaces) == ["securityGroupName"] and d.deleteBeforeReplace
    assert emu.calls() == {}  # neither check nor diff called the API


def test_check_failures_come_back_as_engine_failures(env):
    _, host = env
    _, failures = host.check(URN, {}, news(clusterName="1x", rootPassword="short"))
    assert sorted(p for p, _ in failures) == ["clusterName", "rootPassword"]
    assert all("short" not in reason for _, reason in failures)


def test_full_lifecycle_over_grpc(env):
    emu, host = env
    inputs, failures = host.check(URN, {}, news())
    assert failures == []
    id_, outs = host.create(URN, inputs)
    assert outs["clusterUUID"] == id_ and outs["computeNodeCount"] == 3
    assert outs["rootPassword"] == PASSWORD and len(outs["nodes"]) == 4
    assert emu.sk not in outs[PROVIDER_KEY] and emu.ak not in outs[PROVIDER_KEY]

    rid, routs, rinputs = host.read(id_, URN, outs, inputs)
    assert rid == id_ and routs["computeNodeCount"] == 3 and routs["masterPublicIP"]
    assert "rootPassword" not in rinputs

    grown = news(computeNodeCount=4)
    d = host.diff(id_, URN, outs, grown)
    assert d.changes == provider_pb2.DiffResponse.DIFF_SOME and list(d.replaces) == []
    outs = host.update(id_, URN, outs, grown)
    assert outs["computeNodeCount"] == 4 and len(emu.inventory()["nodes"]) == 5

    d = host.diff(id_, URN, outs, news(computeNodeCount=4, storageSizeGB=1000))
    assert list(d.replaces) == ["storageSizeGB"] and d.deleteBeforeReplace
    assert host.diff(id_, URN, outs, news(computeNodeCount=4)).changes == \
        provider_pb2.DiffResponse.DIFF_NONE

    host.delete(id_, URN, outs)
    assert emu.inventory()["leaked"] == 0
    rid, _, _ = host.read(id_, URN, outs, inputs)
    assert rid == ""  # refresh drops a cluster that no longer exists
    host.delete(id_, URN, outs)  # deleting again is fine


def test_api_refusal_reaches_the_engine_as_an_error(env):
    emu, host = env
    emu.settings(quota_nodes=2)
    inputs, _ = host.check(URN, {}, news(computeNodeCount=5))
    with pytest.raises(ProviderError) as e:
        host.create(URN, inputs)
    assert "HPC.Quota.BareMetal" in e.value.details
    assert PASSWORD not in e.value.details and emu.sk not in e.value.details
    assert emu.inventory()["leaked"] == 0


def test_security_group_over_grpc(env):
    emu, host = env
    props = {"regionID": REGION, "vpcID": VPC, "securityGroup": "create", "groupName": "k3-sg",
             "rules": [{"protocol": "TCP", "port": 22, "cidr": "192.0.2.0/24"}],
             PROVIDER_KEY: serialized(HccSecurityGroupProvider())}
    inputs, failures = host.check(SG_URN, {}, props)
    assert failures == []
    id_, outs = host.create(SG_URN, inputs)
    assert outs["created"] is True and len(outs["ruleIDs"]) == 1
    host.delete(id_, SG_URN, outs)
    assert emu.inventory()["leaked"] == 0


def test_whole_component_resource_set_over_grpc(env):
    """Network, security group and cluster as `pulumi up` then `pulumi destroy` would."""
    from components.ctyun_hcc.network_provider import HccNetworkProvider
    emu, host = env
    net_urn = dynamic_urn("ctyun:HccNetwork", "kimi-k3-net")
    net_in, failures = host.check(net_urn, {}, {
        "regionID": REGION, "vpcName": "k3-vpc", "subnetName": "k3-subnet",
        PROVIDER_KEY: serialized(HccNetworkProvider())})
    assert failures == []
    net_id, net = host.create(net_urn, net_in)
    sg_in, _ = host.check(SG_URN, {}, {
        "regionID": REGION, "vpcID": net["vpcID"], "groupName": "k3-sg",
        "rules": [{"protocol": "TCP", "port": 22, "cidr": "192.0.2.0/24"},
                  {"protocol": "TCP", "port": 11025, "cidr": "192.0.2.0/24"}],
        PROVIDER_KEY: serialized(HccSecurityGroupProvider())})
    sg_id, sg = host.create(SG_URN, sg_in)
    cl_in, failures = host.check(URN, {}, news(vpcID=net["vpcID"], subnetID=net["subnetID"],
                                               securityGroupName=sg["securityGroupName"]))
    assert failures == []
    cl_id, cl = host.create(URN, cl_in)
    assert cl["clusterStatus"] == "available"
    inv = emu.inventory()
    assert (len(inv["clusters"]), len(inv["nodes"]), len(inv["vpcs"])) == (1, 4, 1)
    host.delete(cl_id, URN, cl)
    host.delete(sg_id, SG_URN, sg)
    host.delete(net_id, net_urn, net)
    assert emu.inventory()["leaked"] == 0
