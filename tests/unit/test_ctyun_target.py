"""The ctyun-hcc target: its config keys, pure rendering, and the serve() chain under mocks."""

from pathlib import Path

import pulumi
import pytest

from components.ctyun_hcc.serve_config import HccServeConfig, parse_serve_config
from components.ctyun_hcc.target import curl_line, slurm_layout
from components.inference.errors import ConfigError
from components.inference.launch import Runtime, launch
from components.inference.planner import PlanRequest, plan
from components.ctyun_hcc.scripts import render_all
from components.offline.runner import run_program

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "ctyun-hcc"
CLUSTER_KEYS = {"ctyun:regionId": "cn-jssz1", "ctyun:azName": "az1", "ctyun:vpcId": "vpc-1",
                "ctyun:subnetId": "subnet-1", "ctyun:rootPassword": "Kk3-Pass-w0rd9"}


def test_defaults_are_the_seed_paths(golden):
    cfg = parse_serve_config({})
    assert cfg == HccServeConfig()
    p = plan(PlanRequest("w4a8", "atlas-800-a3", 4, max_model_len=131072))
    lay = slurm_layout(p, cfg)
    assert lay.model_dir == "/mnt/nvme1n1/model/Kimi-K3-w4a8"
    assert lay.sif_dir == "/mnt/nvme0n1/apptainer" and lay.work_dir == "/home/kimi-k3"
    spec = launch(p, Runtime(image="quay.io/ascend/vllm-ascend:kimi-k3-a3", port=11025))
    for name, text in render_all(p, spec, lay).items():
        golden.check(GOLDEN / name, text)


@pytest.mark.parametrize("raw, key", [
    ({"sshPort": "99999"}, "kimi-k3:sshPort"),
    ({"modelSource": "huggingface"}, "kimi-k3:modelSource"),
    ({"sifUrl": "http://zos.example/k3.sif"}, "kimi-k3:sifUrl"),   # https only
    ({"sifSha256": "ABC"}, "kimi-k3:sifSha256"),
    ({"bcastMethod": "sbcast"}, "kimi-k3:bcastMethod"),
    ({"sshPasswordLogin": "no"}, "kimi-k3:sshPasswordLogin"),
    ({"sshBastion": "a b"}, "kimi-k3:sshBastion"),
    ({"mountDisks": "maybe"}, "kimi-k3:mountDisks"),
    ({"sshPasword": "x"}, "kimi-k3:sshPasword"),
])
def test_bad_target_keys_name_key_and_fix(raw, key):
    with pytest.raises(ConfigError) as err:
        parse_serve_config(raw)
    assert str(err.value).startswith((key + "=", key + " (not set) ")) and ";" in str(err.value)


def test_bad_work_dir_stops_rendering():
    p = plan(PlanRequest("w4a8", "atlas-800-a3", 4, max_model_len=131072))
    with pytest.raises(ConfigError, match="kimi-k3:workDir"):
        slurm_layout(p, parse_serve_config({"workDir": "relative/dir"}))


@pytest.mark.parametrize("value", ["python3", "/usr/bin/python3 -I", "/usr/bin/python3;id",
                                   "/opt/$(id)/python3", "/usr/../bin/python3", "/python3",
                                   "/usr/bin/py thon3", "/usr/bin/python3\nExecStartPre=/bin/sh"])
def test_a_router_python_that_is_not_an_absolute_plain_path_is_refused(value):
    # it reaches install.sh, the units' ExecStart and the cluster check's command
    with pytest.raises(ConfigError, match="kimi-k3:routerPython") as err:
        parse_serve_config({"routerPython": value})
    assert len(str(err.value).splitlines()) == 1


def test_router_python_default_and_another():
    assert parse_serve_config({}).router_python == "/usr/bin/python3"
    assert parse_serve_config({"routerPython": "/opt/python3.11/bin//python3"}).router_python \
        == "/opt/python3.11/bin/python3"


def test_curl_line_reads_key_from_shell():
    line = curl_line("http://1.2.3.4:11025/v1", "Kimi-K3", True)
    assert "$VLLM_API_KEY" in line and "/v1/chat/completions" in line and "extra" not in line


@pytest.fixture(scope="module")
def recorded():
    """The real program under mocks, recording each dynamic resource's depends_on."""
    deps = {}
    original = pulumi.dynamic.Resource.__init__

    def recording(self, provider, name, props, opts=None):
        deps[name] = [getattr(d, "_name", None) for d in (opts.depends_on or [])] \
            if opts is not None and isinstance(opts.depends_on, list) else []
        original(self, provider, name, props, opts)

    pulumi.dynamic.Resource.__init__ = recording
    try:
        run = run_program("ctyun-hcc", {**CLUSTER_KEYS, "kimi-k3:apiKey": "sk-never-shown"})
    finally:
        pulumi.dynamic.Resource.__init__ = original
    return run, deps


def test_serve_chain_order_and_dependencies(recorded):
    run, deps = recorded
    names = [r["name"] for r in run.resources]
    # weights and sif both wait on the NVMe step only: the engine may register them in either order
    chain = ["kimi-k3-hostkey", "kimi-k3-shrink", "kimi-k3-check", "kimi-k3-master-in-queue",
             "kimi-k3-nvme", {"kimi-k3-weights", "kimi-k3-sif"}, "kimi-k3-bcast",
             "kimi-k3-exporters", "kimi-k3-service"]
    flat = {n for step in chain for n in (step if isinstance(step, set) else {step})}
    seen = [n for n in names if n in flat]
    assert seen[:5] == chain[:5] and set(seen[5:7]) == chain[5] and seen[7:] == chain[6:]
    # after the whole cluster (its resources: the existing VPC and subnet need no network step)
    assert deps["kimi-k3-hostkey"] == ["kimi-k3-hcc-owner", "kimi-k3-hcc-sg", "kimi-k3-hcc-order",
                                       "kimi-k3-hcc-cluster"]
    # a shrink stops the service first: with the pinned key, after the pin (issue 19)
    assert deps["kimi-k3-shrink"] == ["kimi-k3-hostkey"]
    # what the master carries and the nodes' names, checked before anything uses them
    assert deps["kimi-k3-check"] == ["kimi-k3-shrink"]
    assert deps["kimi-k3-master-in-queue"] == ["kimi-k3-check"]
    assert deps["kimi-k3-nvme"] == ["kimi-k3-master-in-queue"]
    assert deps["kimi-k3-weights"] == ["kimi-k3-nvme"] == deps["kimi-k3-sif"]
    assert sorted(deps["kimi-k3-bcast"]) == ["kimi-k3-sif", "kimi-k3-weights"]
    # kimi-k3:monitoring (on by default): the node exporters after the broadcast, the service
    # after them (ctyun_hcc/metrics_services.py after_chain)
    assert deps["kimi-k3-exporters"] == ["kimi-k3-bcast"]
    assert deps["kimi-k3-service"] == ["kimi-k3-exporters"]


def test_serve_inputs_carry_rendered_scripts_and_no_plain_secrets(recorded, golden):
    run, _ = recorded
    svc = next(r for r in run.resources if r["name"] == "kimi-k3-service")["inputs"]
    golden.check(GOLDEN / "srun.sh", svc["srunSh"])
    assert svc["apiKey"] == "[secret]"
    # the root password goes to the first-contact step only; the rest use the stack's own key
    pin = next(r for r in run.resources if r["name"] == "kimi-k3-hostkey")["inputs"]
    assert pin["sshPassword"] == "[secret]" and pin["loginKeyComment"] == "kimi-k3:kimi-k3/ctyun-hcc"
    for r in run.resources:
        if r["type"].startswith("pulumi-python:dynamic/ctyun:") and "sshHost" in r["inputs"] \
                and r["name"] != "kimi-k3-hostkey":
            assert r["inputs"]["sshPassword"] == "", r["name"]
    assert svc["startupTimeoutS"] == 7200 and svc["partition"] == "batch"
    # day two: the preflight and the watchdog travel with the service; the steps that need
    # nodes know the service's job and owner, to stop it first (resize)
    assert svc["preflightSh"].startswith("#!/bin/bash") and svc["rpcPort"] == 13389
    assert "watchdog" in svc["watchdogSh"]
    for step in ("kimi-k3-nvme", "kimi-k3-bcast", "kimi-k3-shrink"):
        inputs = next(r for r in run.resources if r["name"] == step)["inputs"]
        assert (inputs["serviceJobNames"], inputs["ownerTag"]) == (["kimi-k3"], "kimi-k3/ctyun-hcc")
    assert pin["passwordLogin"] == "off"
    # issue 19: the cluster leaves nodes that may serve to the shrink step, which stops the
    # service on them first (shrink_step.py) and hands the node list on
    cluster = next(r for r in run.resources if r["name"] == "kimi-k3-hcc-cluster")["inputs"]
    shrink = next(r for r in run.resources if r["name"] == "kimi-k3-shrink")["inputs"]
    check = next(r for r in run.resources if r["name"] == "kimi-k3-check")["inputs"]
    assert cluster["deferShrink"] is True
    assert shrink["computeNodeCount"] == cluster["computeNodeCount"]
    assert shrink["workDir"] == svc["workDir"] and shrink["clusterUUID"] == "cl-mock"
    assert [n["name"] for n in shrink["clusterNodes"]] == [n["name"] for n in check["nodes"]]
    import json
    assert "sk-never-shown" not in json.dumps(run.resources)
    assert "Kk3-Pass-w0rd9" not in json.dumps(run.resources)


def test_bastion_key_is_the_bastion_key_else_the_users_key():
    from components.ctyun_hcc.serve_config import bastion_login_key
    via = parse_serve_config({"sshBastion": "jump@203.0.113.5", "sshPrivateKey": "K"})
    assert bastion_login_key(via, "USER-KEY", "BASTION-KEY") == "BASTION-KEY"
    assert bastion_login_key(via, "USER-KEY", None) == "USER-KEY"
    assert bastion_login_key(parse_serve_config({}), "USER-KEY", "BASTION-KEY") == ""
    with pytest.raises(ConfigError, match="kimi-k3:sshBastionPrivateKey"):
        bastion_login_key(via, None, None)


@pytest.mark.parametrize("keys", [{"kimi-k3:sshPrivateKey": "USER-KEY-TEXT"},
                                  {"kimi-k3:sshBastionPrivateKey": "BASTION-KEY-TEXT"}])
def test_every_ssh_step_gets_the_bastion_key_chosen_once(keys):
    """With a bastion, every SSH step (first contact, later steps, service, acceptance) is given
    the bastion's key as its own input: a later step's sshPrivateKey is the stack's login key,
    which must never be offered to the bastion (docs/ctyun-bootstrap.md)."""
    run = run_program("ctyun-hcc", {**CLUSTER_KEYS, "kimi-k3:sshBastion": "jump@203.0.113.5",
                                    **keys})
    steps = [r for r in run.resources
             if r["type"].startswith("pulumi-python:dynamic/ctyun:") and "sshHost" in r["inputs"]]
    assert len(steps) >= 8, [r["name"] for r in steps]
    for r in steps:
        assert r["inputs"]["sshBastion"] == "jump@203.0.113.5:22", r["name"]
        assert r["inputs"]["sshBastionPrivateKey"] == "[secret]", r["name"]


def test_ssh_port_equal_to_the_model_port_is_refused_naming_both_keys():
    from components.ctyun_hcc.target import TARGET
    from components.config.shared import parse_settings
    assert parse_serve_config({"sshPort": "2222"}, model_port=11025).ssh_port == 2222
    raw = {"target": "ctyun-hcc", "port": "2222", "sshPort": "2222"}
    with pytest.raises(ConfigError) as err:
        TARGET.parse_config(parse_settings(raw, stack="ctyun-hcc"))
    msg = str(err.value)
    assert msg.startswith("kimi-k3:sshPort=2222 ") and "kimi-k3:port=2222" in msg



@pytest.mark.parametrize("data_raid", ["RAID0", "raid1", "r-" + "a" * 28])
def test_a_data_disk_raid_with_the_mount_step_on_is_refused_before_anything(data_raid):
    """Issue 19 item 2: the RAID lookup and the mount step agree on devices. A data-disk RAID
    makes one volume of undocumented name; the mount step mounts /dev/nvme0n1 and /dev/nvme1n1:
    refused in one line naming the key, the value and the fix (mountDisks=false). The target's
    parse_config runs this check (the offline plan stops on it: test_plan_command)."""
    from components.config.shared import parse_settings
    from components.ctyun_hcc.config import parse_hcc_config
    from components.ctyun_hcc.target import check_disks_agree

    def cluster(**ctyun):
        return parse_hcc_config(ctyun, parse_settings({"target": "ctyun-hcc"}, "ctyun-hcc"))
    with pytest.raises(ConfigError) as err:
        check_disks_agree(parse_serve_config({}), cluster(localDataRaid=data_raid))
    msg = str(err.value)
    assert msg.startswith(f"ctyun:localDataRaid='{data_raid}' makes the data disks one RAID")
    assert "/dev/nvme0n1" in msg and "kimi-k3:mountDisks=false" in msg
    # the operator mounts the volume: accepted; so are the layouts the mount step expects
    check_disks_agree(parse_serve_config({"mountDisks": "false"}), cluster(localDataRaid=data_raid))
    for ok in ({"localDataRaid": "none"}, {"localDataRaid": "NONE"}, {}):
        check_disks_agree(parse_serve_config({}), cluster(**ok))
