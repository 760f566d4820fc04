"""CTyun exposure through the real program under the mock engine: SSH and the endpoint have
separate CIDR lists; without SSH access a real preview stops before any resource, while the
offline plan warns and records the requirement."""

import pulumi
import pytest

from components.offline.runner import run_program

ACCOUNT = {"ctyun:regionId": "bb9fdb42056f11eda1610242ac110002",
           "ctyun:azName": "cn-huadong1-jsnj1A-public-ctcloud", "ctyun:rootPassword": "K3-Passw0rd!"}


def group(run):
    [sg] = run.of_type("pulumi-python:dynamic/ctyun:HccSecurityGroup")
    return sg["inputs"]


def test_a_real_preview_without_ssh_access_stops_before_anything_is_created():
    with pytest.raises(pulumi.RunError, match="kimi-k3:sshAllowedCidrs=\\[\\] is empty and there "
                                              "is no kimi-k3:sshBastion"):
        run_program("ctyun-hcc", ACCOUNT, as_deployed=True)


def test_the_offline_plan_warns_and_records_the_requirement():
    run = run_program("ctyun-hcc", ACCOUNT)
    reqs = run.deployment.requirements
    assert [r.to_dict()["key"] for r in reqs] == ["kimi-k3:sshAllowedCidrs"]
    assert group(run)["sshCidrs"] == [] and group(run)["endpointCidrs"] == []


def test_a_real_preview_without_the_account_settings_stops_in_one_line_naming_each():
    """No region, zone or root password: one line before any resource (the providers' check
    would refuse each once per CTyun resource carrying it); the offline plan warns and goes on."""
    ssh = {"kimi-k3:sshAllowedCidrs": "198.51.100.7/32"}
    with pytest.raises(pulumi.RunError) as e:
        run_program("ctyun-hcc", ssh, as_deployed=True)
    assert str(e.value).startswith("ctyun:regionId (not set) is needed to order the cluster (so are "
                                   "ctyun:azName, ctyun:rootPassword); pulumi config set ctyun:regionId")
    with pytest.raises(pulumi.RunError, match=r"^ctyun:rootPassword \(not set\) is needed to order the cluster; "
                                              r"pulumi config set --secret ctyun:rootPassword"):
        run_program("ctyun-hcc", {**ssh, **{k: v for k, v in ACCOUNT.items() if k != "ctyun:rootPassword"}},
                    as_deployed=True)
    run = run_program("ctyun-hcc", ssh)
    assert [r.to_dict()["key"] for r in run.deployment.requirements] == ["ctyun:regionId"]
    assert any(w.startswith("a real `pulumi up` would stop here: ctyun:regionId is needed") for w in run.warnings)


def test_ssh_and_endpoint_cidrs_open_only_their_own_port():
    run = run_program("ctyun-hcc", {**ACCOUNT, "kimi-k3:allowedCidrs": "203.0.113.0/24",
                                    "kimi-k3:sshAllowedCidrs": "198.51.100.7/32"},
                      as_deployed=True)
    g = group(run)
    assert (g["sshCidrs"], g["sshPort"]) == (["198.51.100.7/32"], 22)
    # a public endpoint is served over TLS on the master (issue 21): the group opens its port
    assert (g["endpointCidrs"], g["endpointPort"]) == (["203.0.113.0/24"], 443)
    assert run.deployment.requirements == ()


def test_internet_wide_ssh_cidrs_need_the_explicit_opt_in():
    with pytest.raises(pulumi.RunError, match="kimi-k3:sshAllowedCidrs=.*allowInternet"):
        run_program("ctyun-hcc", {**ACCOUNT, "kimi-k3:sshAllowedCidrs": "0.0.0.0/0"},
                    as_deployed=True)
