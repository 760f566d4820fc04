"""NCCL between the nodes of a replica on aws-eks (components/aws_eks/efa/): EFA by default, with
AWS's pod resources and environment, the userspace init step and the check before vLLM; TCP only
when asked for, and said out loud."""

import json

import pytest

from components.aws_eks import config as c
from components.aws_eks import layout as lay
from components.aws_eks.efa import render as efa
from components.aws_eks.efa import transport as t
from components.config.shared import parse_settings
from components.inference import render_k8s as rk
from components.inference.catalog import NODE_SHAPES
from components.inference.errors import ConfigError
from components.inference.launch import launch
from components.inference.planner import PlanRequest, plan

B300 = NODE_SHAPES["p6-b300.48xlarge"]


def settings(**kw):
    return parse_settings({"target": "aws-eks", **kw}, "aws-eks")


def layout_for(**kw):
    shared = settings(**kw)
    return lay.k8s_layout(shared, c.parse(shared))


def lws_for(**kw):
    shared = settings(**kw)
    cfg = c.parse(shared)
    p = plan(PlanRequest("mxfp4", "p6-b300.48xlarge", 2))
    s = launch(p, lay.runtime(shared, cfg))
    return rk.render_leader_worker_set(s, lay.k8s_layout(shared, cfg)), s


def pods(lws):
    tpl = lws["spec"]["leaderWorkerTemplate"]
    return [tpl["leaderTemplate"]["spec"], tpl["workerTemplate"]["spec"]]


def env_of(container):
    return {e["name"]: e.get("value") for e in container["env"]}


# ---------------------------------------------------------------- what the plan states

def test_the_plan_states_efa_its_devices_and_the_bandwidth_with_its_source():
    stated = t.inter_node(B300, "efa")
    assert (stated.transport, stated.links_per_node, stated.assumed_gbps_per_node) == ("efa", 16, 6400)
    assert "not confirmed from an AWS page" in stated.bandwidth_source
    assert "describe-instance-types" in stated.bandwidth_source
    assert "NCCL INFO Using network Libfabric" in stated.confirm_in_log and not stated.warning
    assert stated.summary().startswith("EFA: NCCL over aws-ofi-nccl")


def test_tcp_is_stated_with_its_warning():
    stated = t.inter_node(B300, "tcp")
    assert stated.assumed_gbps_per_node is None and stated.confirm_in_log[0] == "NCCL INFO Using network Socket"
    assert stated.warning.startswith("kimi-k3:interNodeTransport=tcp: the nodes of a replica talk over TCP")


# ---------------------------------------------------------------- config

def test_efa_is_the_default_for_several_nodes():
    assert c.parse(settings(nodes="2")).inter_node_transport == "efa"
    two = layout_for(nodes="2")
    assert (two.inter_node_transport, two.efa_per_node, two.efa_install) == ("efa", 16, True)
    one = layout_for()
    assert (one.inter_node_transport, one.efa_per_node, one.efa_install) == ("", 0, False)


def test_tcp_requests_no_efa_device():
    tcp = layout_for(nodes="2", interNodeTransport="tcp")
    assert (tcp.inter_node_transport, tcp.efa_per_node, tcp.efa_install) == ("tcp", 0, False)


@pytest.mark.parametrize("kw,fragment", [
    ({"nodes": "2", "interNodeTransport": "rdma"}, "kimi-k3:interNodeTransport='rdma' is not an inter-node transport"),
    ({"interNodeTransport": "tcp"}, "only applies to a replica over several nodes"),
    ({"interNodeTransport": "efa"}, "only applies to a replica over several nodes"),
    ({"serving": "hyperpod", "hyperpodClusterName": "hp", "interNodeTransport": "tcp"}, "does not apply to kimi-k3:serving=hyperpod"),
])
def test_transport_refusals_are_one_line(kw, fragment):
    with pytest.raises(ConfigError) as e:
        c.parse(settings(**kw))
    assert fragment in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("kw", [dict(inter_node_transport="udp", efa_per_node=0),
                                dict(inter_node_transport="tcp", efa_per_node=16),
                                dict(inter_node_transport="efa", efa_per_node=0),
                                dict(inter_node_transport="tcp", efa_install=True)])
def test_a_layout_that_mixes_transports_is_refused(kw):
    with pytest.raises(ValueError):
        rk.K8sLayout(**kw)


# ---------------------------------------------------------------- the pods

def test_every_efa_pod_has_the_resources_env_and_check_aws_documents():
    lws, spec = lws_for(nodes="2")
    for pod in pods(lws):
        vllm = pod["containers"][0]
        res = vllm["resources"]
        assert res["limits"]["vpc.amazonaws.com/efa"] == res["requests"]["vpc.amazonaws.com/efa"] == 16
        assert res["limits"]["hugepages-2Mi"] == res["requests"]["hugepages-2Mi"] == "5120Mi"
        assert res["requests"]["memory"] == "32000Mi" and "memory" not in res["limits"]
        assert vllm["securityContext"] == {"capabilities": {"add": ["IPC_LOCK"]}}
        # the check runs first and execs the very argv of the launch spec
        assert vllm["command"][:2] == ["bash", "/kk3-efa/efa_check.sh"]
        assert vllm["command"][2:4] == ["vllm", "serve"]
        env = env_of(vllm)
        assert {k: env[k] for k in ("FI_PROVIDER", "FI_EFA_USE_DEVICE_RDMA", "FI_EFA_FORK_SAFE",
                                    "NCCL_NET_PLUGIN", "NCCL_DEBUG", "KK3_EFA_DEVICES")} == {
            "FI_PROVIDER": "efa", "FI_EFA_USE_DEVICE_RDMA": "1", "FI_EFA_FORK_SAFE": "1",
            "NCCL_NET_PLUGIN": "ofi", "NCCL_DEBUG": "INFO", "KK3_EFA_DEVICES": "16"}
        assert "LD_LIBRARY_PATH" not in env  # prepended by the check, the image's own is kept
        # NCCL may use aws-ofi-nccl only: a plugin or EFA failure fails NCCL's init, never a quiet TCP
        assert env["NCCL_NET"] == "Libfabric"
        mounts = {m["name"]: m for m in vllm["volumeMounts"]}
        assert mounts["efa-userspace"] == {"name": "efa-userspace", "mountPath": "/opt/amazon", "readOnly": True}
        init = pod["initContainers"][0]
        assert init["name"] == "efa-userspace" and init["image"] == spec.image
        assert init["command"] == ["bash", "/kk3-efa/efa_userspace.sh"]
        assert env_of(init)["KK3_EFA_INSTALLER_URL"] == (
            f"https://efa-installer.amazonaws.com/aws-efa-installer-{t.EFA_INSTALLER_VERSION}.tar.gz")
        vols = {v["name"]: v for v in pod["volumes"]}
        assert vols["efa-scripts"]["configMap"]["name"] == "kimi-k3-efa-scripts"
        assert vols["efa-userspace"] == {"name": "efa-userspace", "emptyDir": {"sizeLimit": "2Gi"}}


def test_no_container_requests_efa_without_the_check_in_front():
    """The guard itself: a pod that gets EFA devices always starts behind efa_check.sh."""
    lws, _ = lws_for(nodes="2")
    for pod in pods(lws):
        for ctr in pod["containers"]:
            if ctr.get("resources", {}).get("limits", {}).get("vpc.amazonaws.com/efa"):
                assert ctr["command"][:2] == ["bash", "/kk3-efa/efa_check.sh"]


def test_tcp_pods_name_the_socket_network_and_request_no_efa():
    lws, _ = lws_for(nodes="2", interNodeTransport="tcp")
    for pod in pods(lws):
        vllm = pod["containers"][0]
        assert "vpc.amazonaws.com/efa" not in json.dumps(vllm["resources"])
        assert "hugepages-2Mi" not in json.dumps(vllm["resources"])
        assert vllm["command"][:2] == ["vllm", "serve"]
        assert env_of(vllm)["NCCL_NET"] == "Socket" and "FI_PROVIDER" not in env_of(vllm)
        assert not [c for c in pod.get("initContainers", []) if c["name"] == "efa-userspace"]


def test_an_image_with_the_userspace_gets_no_install_step(monkeypatch):
    monkeypatch.setattr(t, "IMAGES_WITH_EFA", frozenset({"vllm/vllm-openai:kimi-k3"}))
    lws, _ = lws_for(nodes="2")
    for pod in pods(lws):
        assert not [c for c in pod.get("initContainers", []) if c["name"] == "efa-userspace"]
        assert pod["containers"][0]["command"][:2] == ["bash", "/kk3-efa/efa_check.sh"]  # still checked
        assert "efa-userspace" not in {v["name"] for v in pod["volumes"]}


def test_the_scripts_configmap_ships_the_files_verbatim():
    (cm,) = rk.render_efa(layout_for(nodes="2"))
    assert cm["metadata"]["name"] == "kimi-k3-efa-scripts"
    assert cm["data"] == efa.script_texts() and set(cm["data"]) == {"efa_check.sh", "efa_userspace.sh"}
    assert rk.render_efa(layout_for()) == [] and rk.render_efa(layout_for(nodes="2", interNodeTransport="tcp")) == []


# ---- the pinned EFA device plugin chart must serve the instance type -------------------------

def test_a_multi_node_layout_on_an_instance_type_the_efa_chart_does_not_list_is_refused():
    from components.aws_eks.addons import check_efa_supported

    check_efa_supported("b300", "p6-b300.48xlarge")  # listed by the pinned chart
    with pytest.raises(ConfigError) as e:
        check_efa_supported("dx1", "p9-dx1.48xlarge")
    assert str(e.value).startswith(
        "kimi-k3:accelerator='dx1' (instance type p9-dx1.48xlarge) is not in the pinned EFA device "
        "plugin's supported instances; use an accelerator whose instance type")


@pytest.mark.parametrize("raw,quoted", [
    ({"accelerator": " b300"}, "kimi-k3:accelerator=' b300' "),  # as typed, not the instance type
    ({}, "kimi-k3:accelerator (not set, default 'b300') "),
])
def test_the_efa_refusal_quotes_the_accelerator_as_the_user_wrote_it(monkeypatch, raw, quoted):
    from components.aws_eks import addons
    from components.aws_eks.target import TARGET

    shared = settings(nodes="2", **raw)
    monkeypatch.setattr(addons, "efa_supports", lambda instance_type: False)
    with pytest.raises(ConfigError) as e:
        TARGET.parse_config(shared)
    assert str(e.value).startswith(quoted + "(instance type p6-b300.48xlarge)"), str(e.value)
