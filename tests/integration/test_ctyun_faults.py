"""Fault matrix: each fault x create/expand/shrink/delete ends converged with zero leaks."""

import pytest

from components.ctyun_hcc.provider_runtime import make_api
from tests.integration.ctyun_fault_matrix import run_scenario, scenarios
from tests.integration.ctyun_fixtures import emu, emulator  # noqa: F401


@pytest.mark.parametrize("fault,op", scenarios())
def test_fault_then_retry_converges_without_leaks(emu, fault, op):  # noqa: F811
    result = run_scenario(emu, fault, op)
    assert result["duplicate_orders"] == 0, "a fault made the provider order twice"
    assert result["foreign_touched"] == 0, result["foreign_calls"]
    assert result["leaked"] == 0, result["leaked_items"]
    if fault == "same_names":
        # either its own cluster beside the other stack's, or a clear error before ordering
        assert result["converged"] or (result["errors"] and result["most_clusters"] == 0), \
            result["errors"]
        return
    assert result["converged"], result["errors"]
    assert result["most_clusters"] <= 1, "a fault made the provider order a second cluster"
    if fault in ("http500", "http502", "throttle", "drop", "lost_response"):
        # transient faults are absorbed by the client's retries: no error reaches the user
        assert result["errors"] == []
    if fault in ("fail_job", "slow_job"):
        assert len(result["errors"]) == 1  # the user sees one clear error, the re-run succeeds


NETWORK_PATHS = ("/v4/vpc/create", "/v4/vpc/create-subnet", "/v4/vpc/create-security-group",
                 "/v4/vpc/create-security-group-ingress", "/v4/vpc/delete-security-group",
                 "/v4/vpc/delete-subnet", "/v4/vpc/delete")


@pytest.mark.parametrize("fault", ["http502", "drop", "lost_response"])
@pytest.mark.parametrize("path", NETWORK_PATHS)
def test_network_and_group_survive_faults_without_duplicates_or_leaks(emu, path, fault):  # noqa: F811
    from components.ctyun_hcc.network_provider import HccNetworkProvider
    from components.ctyun_hcc.sg_provider import HccSecurityGroupProvider
    from tests.emulators.ctyun.state import REGION
    netp, sgp = HccNetworkProvider(), HccSecurityGroupProvider()
    emu.faults({"path": path, "kind": fault})
    net_in = {"regionID": REGION, "vpcName": "k3-vpc", "subnetName": "k3-subnet",
              "pollIntervalS": 0.05, "timeoutS": 30}
    sg_in = {"regionID": REGION, "groupName": "k3-sg", "pollIntervalS": 0.05, "timeoutS": 30,
             "rules": [{"port": 22, "cidr": "192.0.2.0/24"}]}

    def attempt(op, *args):
        for _ in range(2):  # the user re-runs once if a call could not be repeated safely
            try:
                return op(*args)
            except Exception:  # noqa: BLE001
                continue
        return op(*args)

    net = attempt(netp.create, net_in)
    sg = attempt(sgp.create, {**sg_in, "vpcID": net.outs["vpcID"]})
    inv = emu.inventory()
    assert (len(inv["vpcs"]), len(inv["subnets"]), len(inv["securityGroups"])) == (1, 1, 1)
    ingress = [r for r in make_api(sg_in).describe_security_group(sg.id)[
        "securityGroupRuleList"] if r["direction"] == "ingress"]
    assert len(ingress) == 1  # a repeated rule call did not add the rule twice
    attempt(sgp.delete, sg.id, sg.outs)
    attempt(netp.delete, net.id, net.outs)
    assert emu.inventory()["leaked"] == 0
