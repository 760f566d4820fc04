"""HccCluster and HccSecurityGroup providers called directly against the E-HPC emulator."""

import base64
import os
from datetime import datetime, timedelta, timezone

import pytest
from pulumi.dynamic.dynamic import serialize_provider

from components.ctyun_hcc import client as cl
from components.ctyun_hcc.cluster_provider import HccClusterProvider, create_body, inputs_of
from components.ctyun_hcc.ehpc import DeadlineExceeded, Ehpc, JobFailed
from components.ctyun_hcc.provider_runtime import RUNTIME_CONFIG, UNKNOWN, make_api
from components.ctyun_hcc.sg_provider import HccSecurityGroupProvider
from tests.emulators.ctyun.state import REGION, VPC
from tests.integration.ctyun_fixtures import PASSWORD, cluster_inputs, emu, emulator  # noqa

P = HccClusterProvider()


def test_create_read_update_delete_leaves_nothing(emu):
    props = cluster_inputs()
    assert P.check({}, props).failures == []
    r = P.create(props)
    out = r.outs
    assert r.id.startswith("hpc-") and out["clusterUUID"] == r.id
    assert out["computeNodeCount"] == 3 and out["clusterStatus"] == "available"
    assert [n["role"] for n in out["nodes"]] == ["master", "compute", "compute", "compute"]
    assert out["masterPublicIP"] and out["masterInnerIP"] == out["nodes"][0]["innerIP"]
    assert out["schedulerVersion"] and out["resolved"]["specificationName"].find("910c") > 0
    assert out["rootPassword"] == PASSWORD
    inv = emu.inventory()
    assert len(inv["clusters"]) == 1 and len(inv["nodes"]) == 4 and len(inv["storage"]) == 1

    grown = P.update(r.id, out, cluster_inputs(computeNodeCount=5)).outs
    assert grown["computeNodeCount"] == 5 and len(emu.inventory()["nodes"]) == 6
    shrunk = P.update(r.id, grown, cluster_inputs(computeNodeCount=2)).outs
    assert shrunk["computeNodeCount"] == 2
    names = [n["name"] for n in shrunk["nodes"]]
    assert names == ["a3master0001", "a3compute0001", "a3compute0002"]

    read = P.read(r.id, shrunk)
    assert read.id == r.id and read.outs["computeNodeCount"] == 2 and read.inputs is None
    assert read.outs["rootPassword"] == PASSWORD

    P.delete(r.id, shrunk)
    assert emu.inventory()["leaked"] == 0


def test_shrink_of_more_than_ten_nodes_is_batched(emu):
    r = P.create(cluster_inputs(computeNodeCount=12))
    P.update(r.id, r.outs, cluster_inputs(computeNodeCount=1))
    assert emu.calls()["/v4/cthpc/hpc/shrink-cluster"] == 2
    P.delete(r.id, r.outs)
    assert emu.inventory()["leaked"] == 0


def test_interrupted_create_is_found_by_name_and_awaited(emu):
    props = cluster_inputs()
    api = make_api(props)
    resolved = api.resolve("大模型精简版", props["azName"])
    api.create_cluster(create_body(inputs_of(props), resolved, "earlier-run"), deadline=1e12)
    # the earlier `pulumi up` died here; the next one must not order a second cluster
    r = P.create(props)
    assert emu.calls()["/v4/cthpc/hpc/create-cluster"] == 1
    assert len(emu.inventory()["clusters"]) == 1 and r.outs["clusterStatus"] == "available"
    P.delete(r.id, r.outs)
    assert emu.inventory()["leaked"] == 0


def test_same_name_with_other_settings_is_not_adopted(emu):
    r = P.create(cluster_inputs())
    with pytest.raises(JobFailed, match="already exists with another clusterTypeUUID"):
        P.create(cluster_inputs(clusterType="基础版"))
    P.delete(r.id, r.outs)
    assert emu.inventory()["leaked"] == 0


def test_read_reports_drift_and_disappearance(emu):
    r = P.create(cluster_inputs(computeNodeCount=3))
    api = make_api(r.outs)
    victim = [n for n in r.outs["nodes"] if n["role"] == "compute"][0]["nodeUUID"]
    api.shrink(r.id, [victim], deadline=1e12, setting="-")  # someone removed a node by hand
    read = P.read(r.id, r.outs)
    assert read.outs["computeNodeCount"] == 2 and len(read.outs["nodes"]) == 3
    diff = P.diff(r.id, read.outs, cluster_inputs(computeNodeCount=3))
    assert diff.changes and diff.replaces == []
    P.delete(r.id, r.outs)
    assert P.read(r.id, r.outs).id is None
    P.delete(r.id, r.outs)  # already gone: still success
    assert emu.inventory()["leaked"] == 0


def test_create_deadline_then_resume(emu):
    emu.faults({"path": "/v4/cthpc/hpc/create-cluster", "kind": "slow_job", "seconds": 1.5})
    with pytest.raises(DeadlineExceeded, match="run `pulumi up` again to resume"):
        P.create(cluster_inputs(createTimeoutS=0.5))
    r = P.create(cluster_inputs())
    assert emu.calls()["/v4/cthpc/hpc/create-cluster"] == 1
    P.delete(r.id, r.outs)
    assert emu.inventory()["leaked"] == 0


def test_failed_order_is_cleaned_up(emu):
    emu.faults({"path": "/v4/cthpc/hpc/create-cluster", "kind": "fail_job"})
    with pytest.raises(JobFailed, match="what it had ordered was deleted"):
        P.create(cluster_inputs())
    assert emu.inventory()["leaked"] == 0


def test_quota_refusal_is_clear_and_leaves_nothing(emu):
    emu.settings(quota_nodes=4)
    with pytest.raises(cl.ApiError, match="HPC.Quota.BareMetal"):
        P.create(cluster_inputs(computeNodeCount=5))
    assert emu.inventory()["leaked"] == 0


def test_delete_without_shrinking_would_orphan_nodes(emu):
    """Shows why teardown shrinks first: the emulator keeps compute nodes billing otherwise."""
    r = P.create(cluster_inputs(computeNodeCount=2))
    api = make_api(r.outs)
    job = api.delete_cluster(r.id, deadline=1e12)
    api.wait_job(job["jobUUID"], "delete", 1e12, "-")
    inv = emu.inventory()
    assert inv["clusters"] == [] and [n["status"] for n in inv["nodes"]] == ["orphan"] * 2
    emu.reset()


def test_gateway_rejects_bad_credentials_and_stale_dates(emu):
    good = cl.Credentials(emu.ak, emu.sk)
    for creds, code in ((cl.Credentials("nobody", "x"), "AccessKeyNotFound"),
                        (cl.Credentials(emu.ak, "wrong"), "SignatureMismatch")):
        api = Ehpc(cl.CtyunClient(creds, endpoint=emu.url), REGION)
        with pytest.raises(cl.ApiError, match=code) as e:
            api.list_clusters()
        assert "wrong" not in str(e.value)
    stale = cl.CtyunClient(good, endpoint=emu.url,
                           now=lambda: datetime.now(timezone.utc) - timedelta(hours=1))
    with pytest.raises(cl.ApiError, match="DateExpired"):
        Ehpc(stale, REGION).list_clusters()
    assert Ehpc(cl.CtyunClient(good, endpoint=emu.url), REGION).list_clusters() == []


def test_listing_follows_pages(emu):
    emu.settings(quota_clusters=20, quota_nodes=200)
    api = make_api(cluster_inputs())
    resolved = api.resolve("大模型精简版", cluster_inputs()["azName"])
    for i in range(12):
        body = create_body(inputs_of(cluster_inputs(clusterName=f"k3-p{i:02d}")), resolved,
                           f"tok-{i}")
        api.create_cluster(body, deadline=1e12)
    api.client.get = _small_pages(api.client.get)
    names = [c["clusterName"] for c in api.list_clusters()]
    assert sorted(names) == [f"k3-p{i:02d}" for i in range(12)]
    assert emu.calls()["/v4/cthpc/hpc/list-clusters"] == 3
    emu.reset()


def _small_pages(get):
    def wrapped(product, path, params=None, deadline=None):
        return get(product, path, {**(params or {}), "pageSize": 5}, deadline)
    return wrapped


def test_check_reports_every_bad_field_and_lets_unknowns_through():
    bad = cluster_inputs(clusterName="9bad", rootPassword="weak", computeNodeCount=0,
                         storageSizeGB=10, storageType="nas", createTimeoutS=-1, regionID="")
    fields = sorted(f.property for f in P.check({}, bad).failures)
    assert fields == ["clusterName", "computeNodeCount", "createTimeoutS", "regionID",
                      "rootPassword", "storageSizeGB", "storageType"]
    assert all("weak" not in f.reason for f in P.check({}, bad).failures)
    preview = cluster_inputs(securityGroupName=UNKNOWN, rootPassword=UNKNOWN,
                             computeNodeCount=UNKNOWN)
    assert P.check({}, preview).failures == []


def test_diff_rules():
    old = {**cluster_inputs(), "clusterUUID": "hpc-1", "nodes": []}
    assert not P.diff("hpc-1", old, cluster_inputs()).changes
    d = P.diff("hpc-1", old, cluster_inputs(computeNodeCount=7))
    assert d.changes and d.replaces == []
    d = P.diff("hpc-1", old, cluster_inputs(storageSizeGB=1000, subnetID="subnet-2"))
    assert sorted(d.replaces) == ["storageSizeGB", "subnetID"] and d.delete_before_replace
    assert not P.diff("hpc-1", old, cluster_inputs(rootPassword="Other-Passw0rd!")).changes
    assert not P.diff("hpc-1", old, cluster_inputs(deleteTimeoutS=9000, pollIntervalS=5,
                                                   endpoint="http://x:1")).changes
    d = P.diff("hpc-1", old, cluster_inputs(securityGroupName=UNKNOWN))
    assert d.replaces == ["securityGroupName"]


def test_security_group_created_with_only_given_rules_and_deleted(emu):
    sgp = HccSecurityGroupProvider()
    props = {"regionID": REGION, "vpcID": VPC, "securityGroup": "create", "groupName": "k3-sg",
             "rules": [{"protocol": "TCP", "port": 22, "cidr": "203.0.113.0/24"},
                       {"protocol": "TCP", "port": 11025, "cidr": "203.0.113.0/24"}],
             "pollIntervalS": 0.05}
    assert sgp.check({}, props).failures == []
    r = sgp.create(props)
    desc = make_api(props).describe_security_group(r.id)
    ingress = [x for x in desc["securityGroupRuleList"] if x["direction"] == "ingress"]
    assert sorted((x["range"], x["destCidrIp"]) for x in ingress) == [
        ("11025", "203.0.113.0/24"), ("22", "203.0.113.0/24")]
    # the default egress rule of a new group is left alone, also by a re-run (resume)
    again = sgp.create(props)
    assert again.id == r.id and sorted(again.outs["ruleIDs"]) == sorted(r.outs["ruleIDs"])
    egress = [x for x in make_api(props).describe_security_group(r.id)["securityGroupRuleList"]
              if x["direction"] == "egress"]
    assert len(egress) == 1
    # the cluster uses it; destroy order is cluster first, then the group
    c = P.create(cluster_inputs(securityGroupName=r.outs["securityGroupName"]))
    updated = sgp.update(r.id, r.outs, {**props, "rules": props["rules"][:1]}).outs
    assert len(updated["ruleIDs"]) == 1
    P.delete(c.id, c.outs)
    sgp.delete(r.id, updated)
    assert emu.inventory()["leaked"] == 0


def test_existing_group_keeps_its_own_rules(emu):
    sgp = HccSecurityGroupProvider()
    api = make_api({"regionID": REGION})
    theirs = api.add_ingress("sg-default0001", [{"direction": "ingress", "action": "accept",
                                                 "protocol": "TCP", "range": "443",
                                                 "destCidrIp": "10.0.0.0/8"}], "t0")
    props = {"regionID": REGION, "vpcID": VPC, "securityGroup": "sg-default0001",
             "groupName": "k3-sg", "rules": [{"protocol": "TCP", "port": 22,
                                              "cidr": "198.51.100.7/32"}]}
    r = sgp.create(props)
    assert r.outs["created"] is False and len(r.outs["ruleIDs"]) == 1
    sgp.delete(r.id, r.outs)
    left = api.describe_security_group("sg-default0001")["securityGroupRuleList"]
    assert [x["id"] for x in left] == theirs
    assert sgp.check({}, {**props, "rules": [{"port": 70000, "cidr": "nope"}]}).failures


def test_pickled_providers_hold_no_credentials(emu):
    RUNTIME_CONFIG.update({"ctyun:accessKey": "AK-IN-CONFIG", "ctyun:secretKey": "SK-IN-CONFIG"})
    try:
        for provider in (HccClusterProvider(), HccSecurityGroupProvider()):
            blob = base64.b64decode(serialize_provider(provider))
            for secret in (os.environ["CTYUN_SK"], "SK-IN-CONFIG", "AK-IN-CONFIG"):
                assert secret.encode() not in blob
    finally:
        RUNTIME_CONFIG.clear()


def test_network_created_used_and_deleted_in_destroy_order(emu):
    from components.ctyun_hcc.network_provider import HccNetworkProvider
    netp, sgp = HccNetworkProvider(), HccSecurityGroupProvider()
    net_in = {"regionID": REGION, "vpcName": "k3-vpc", "subnetName": "k3-subnet",
              "pollIntervalS": 0.05, "timeoutS": 30}
    assert netp.check({}, net_in).failures == []
    net = netp.create(net_in)
    # an interrupted earlier run is found by name, not created twice
    assert netp.create(net_in).outs["vpcID"] == net.outs["vpcID"]
    assert len(emu.inventory()["vpcs"]) == 1
    sg = sgp.create({"regionID": REGION, "vpcID": net.outs["vpcID"], "groupName": "k3-sg",
                     "rules": [{"port": 22, "cidr": "192.0.2.1/32"}]})
    c = P.create(cluster_inputs(vpcID=net.outs["vpcID"], subnetID=net.outs["subnetID"],
                                securityGroupName="k3-sg"))
    assert c.outs["clusterStatus"] == "available"
    P.delete(c.id, c.outs)
    sgp.delete(sg.id, sg.outs)
    netp.delete(net.id, net.outs)
    assert emu.inventory()["leaked"] == 0
    assert netp.read(net.id, net.outs).id is None


def test_network_with_existing_vpc_only_creates_and_removes_the_subnet(emu):
    from components.ctyun_hcc.network_provider import HccNetworkProvider
    netp = HccNetworkProvider()
    props = {"regionID": REGION, "vpc": VPC, "vpcName": "unused", "subnetName": "k3-sub",
             "subnetCidr": "192.168.7.0/24"}
    net = netp.create(props)
    assert net.outs["vpcID"] == VPC and net.outs["createdVpc"] is False
    assert len(emu.inventory()["subnets"]) == 1
    netp.delete(net.id, net.outs)
    assert emu.inventory()["leaked"] == 0
    bad = netp.check({}, {"regionID": REGION, "vpcName": "v", "subnetName": "s",
                          "subnetCidr": "10.0.0.0/24", "subnet": "subnet-x"})
    assert sorted(f.property for f in bad.failures) == ["subnet", "subnetCidr"]


def test_cluster_renamed_in_console_is_still_refreshed_and_destroyed(emu):
    r = P.create(cluster_inputs())
    emu.rename(r.id, "renamed-by-hand")
    assert P.read(r.id, r.outs).id == r.id
    P.delete(r.id, r.outs)
    assert emu.inventory()["leaked"] == 0
