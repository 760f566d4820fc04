"""The AWS glue's security- and scheduling-relevant fields, checked for what they do.

- pods land on the GPU nodes: every rendered pod tolerates the node group's taint (Kubernetes'
  toleration rule: same key and effect, operator Exists matches any value; the EKS API spells
  the effect NO_SCHEDULE for the Kubernetes NoSchedule) and selects labels the node group sets;
- no pod lands there by accident: the node group is tainted;
- the instance metadata service is IMDSv2-only and reachable at most one hop past the node (a
  container) while the pods read S3 with the node role; once the pods carry a service account
  (EKS Pod Identity / IRSA), at most the node itself (hop limit 1);
- what the launch template and node group ask AWS for (capacity block, no subnet, encrypted
  root volume, the update strategy a full block allows).
"""

from __future__ import annotations

import base64
import json

import pytest

from components.aws_eks import config as c, layout as lay, nodegroup
from components.inference.catalog import MODELS, NODE_SHAPES
from components.inference.launch import launch
from components.inference.planner import PlanRequest, plan
from components.inference import render_k8s as rk
from components.config.shared import parse_settings

#: the EKS API's taint effects and their Kubernetes names (EKS Taint.effect, API reference)
EKS_EFFECT = {"NO_SCHEDULE": "NoSchedule", "NO_EXECUTE": "NoExecute", "PREFER_NO_SCHEDULE": "PreferNoSchedule"}


def _settings(**kw):
    shared = parse_settings({"target": "aws-eks", **kw}, "aws-eks")
    return shared, c.parse(shared)


def _tolerates(tolerations, taint) -> bool:
    """Kubernetes' rule (k8s.io/api core/v1 Toleration.ToleratesTaint)."""
    for t in tolerations:
        if t.get("effect") and t["effect"] != taint["effect"]:
            continue
        if t.get("key") and t["key"] != taint["key"]:
            continue
        if not t.get("key") and t.get("operator") != "Exists":
            continue
        op = t.get("operator", "Equal")
        if op == "Exists" or (op == "Equal" and t.get("value", "") == taint.get("value", "")):
            return True
    return False


def _pod_specs(objs):
    for o in objs:
        if o["kind"] == "Deployment":
            yield o["spec"]["template"]["spec"]
        elif o["kind"] == "LeaderWorkerSet":
            t = o["spec"]["leaderWorkerTemplate"]
            for part in ("leaderTemplate", "workerTemplate"):
                if part in t:
                    yield t[part]["spec"]


def _rendered(nodes, **kw):
    shared, cfg = _settings(nodes=str(nodes), **kw)
    p = plan(PlanRequest(shared.model, shared.node_shape, nodes))
    spec = launch(p, lay.runtime(shared, cfg))
    layout = lay.k8s_layout(shared, cfg)
    return shared, cfg, layout, rk.render(p, spec, layout)


@pytest.mark.parametrize("nodes", [1, 2])
def test_every_pod_tolerates_the_node_groups_taint_and_selects_its_labels(nodes):
    shared, cfg, layout, objs = _rendered(nodes)
    shape = NODE_SHAPES[shared.node_shape]
    ng = nodegroup.node_group_args("c", "arn", ["subnet-1"], {"id": "lt"}, nodes, 0, shape)
    (taint,) = ng["taints"]
    k8s_taint = {"key": taint["key"], "value": taint["value"], "effect": EKS_EFFECT[taint["effect"]]}
    assert k8s_taint["effect"] == "NoSchedule"  # nothing else is scheduled on the GPU nodes
    node_labels = {**ng["labels"], "node.kubernetes.io/instance-type": shape.key}  # kubelet's own label
    pods = list(_pod_specs(objs))
    assert len(pods) == (1 if nodes == 1 else 2)
    for pod in pods:
        assert _tolerates(pod.get("tolerations", []), k8s_taint), pod.get("tolerations")
        selector = pod["nodeSelector"]
        assert selector and all(node_labels.get(k) == v for k, v in selector.items()), selector
        assert selector[lay.GPU_NODE_LABEL] == "true"
    # and a pod without the toleration would not land there (the rule above is not vacuous)
    assert not _tolerates([], k8s_taint)
    assert not _tolerates([{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoExecute"}], k8s_taint)
    assert not _tolerates([{"key": "other", "operator": "Exists"}], k8s_taint)


def test_layout_fields_follow_the_settings():
    shared, cfg = _settings(nodes="2", namespace="k3-prod", replicas="2")
    layout = lay.k8s_layout(shared, cfg)
    shape = NODE_SHAPES[shared.node_shape]
    assert layout.namespace == "k3-prod" and layout.replicas == 2 and layout.name == "kimi-k3"
    assert layout.gpus_per_node == shape.devices == 8
    assert layout.efa_per_node == shape.efa_network_cards > 0  # the replica crosses nodes
    assert layout.node_selector == {lay.GPU_NODE_LABEL: "true", "node.kubernetes.io/instance-type": shape.key}
    assert layout.tolerations == (lay.GPU_TAINT,)
    assert layout.models_mount == "/models" and layout.instance_type == shape.key
    assert layout.allowed_cidrs == shared.allowed_cidrs
    one = lay.k8s_layout(*_settings(nodes="1"))
    assert one.efa_per_node == 0  # TP8 inside one node: no EFA request (the plugin may not run)


def test_weights_staging_and_model_path_per_source():
    # the staging itself is the weights programs' (components/aws_eks/weights/, tested there);
    # the layout hands on exactly what they decide, and vLLM looks where they put the weights
    from components.aws_eks.weights.layout import STREAM_MODEL_REF, weights_staging
    local = f"/models/{MODELS['mxfp4'].local_dir_name}"
    for kw, path in (({}, local), ({"weightsSource": "hub"}, local),
                     ({"weightsSource": "s3", "weightsS3Uri": "s3://bucket-1/models/k3/"}, local),
                     ({"weightsSource": "s3", "weightsS3Uri": "s3://bucket-1/models/k3/", "streamWeights": "true"},
                      STREAM_MODEL_REF)):
        shared, cfg = _settings(**kw)
        assert lay.weights_staging(shared, cfg) == weights_staging(cfg.weights)
        assert lay.k8s_layout(shared, cfg).weights == lay.weights_staging(shared, cfg)
        assert lay.model_path(shared, cfg) == path
    assert lay.model_path(*_settings(serving="hyperpod", hyperpodClusterName="hp")) == "/opt/ml/model"


def test_runtime_carries_the_serving_settings():
    shared, cfg = _settings(port="9000", servedModelName="k3-prod", apiKey="sk-x")
    rt = lay.runtime(shared, cfg)
    assert (rt.port, rt.served_model_name, rt.image) == (9000, "k3-prod", shared.image)
    assert rt.api_key is True and rt.hf_token is shared.has_hf_token
    assert rt.model_path == lay.model_path(shared, cfg)
    assert rt.vision_chunks_per_prompt == shared.vision_chunks_per_prompt


def _pods_use_a_service_account(objs) -> bool:
    return any(pod.get("serviceAccountName") for pod in _pod_specs(objs))


@pytest.mark.parametrize("shape", sorted(k for k, s in NODE_SHAPES.items() if s.accelerator.platform == "cuda"))
def test_imds_is_v2_only_and_no_further_than_the_pods_need(shape):
    lt = nodegroup.launch_template_args(NODE_SHAPES[shape], "cr-1", "sg-1", 300, "k3")
    md = lt["metadata_options"]
    assert md["http_tokens"] == "required" and md["http_endpoint"] == "enabled"
    _, _, _, objs = _rendered(1, weightsSource="s3", weightsS3Uri="s3://bucket-1/models/k3/")
    if _pods_use_a_service_account(objs):
        # pods have their own credentials: nothing past the node needs the node role
        assert md["http_put_response_hop_limit"] == 1
    else:
        # the staging container reads S3 with the node role: one hop (the container), no more
        assert md["http_put_response_hop_limit"] == 2


def test_launch_template_asks_for_the_block_and_nothing_that_breaks_it():
    shape = NODE_SHAPES["p6-b300.48xlarge"]
    lt = nodegroup.launch_template_args(shape, "cr-0abc", "sg-9", 512, "kk3")
    assert lt["instance_type"] == "p6-b300.48xlarge"
    assert lt["instance_market_options"] == {"market_type": "capacity-block"}
    assert lt["capacity_reservation_specification"] == {
        "capacity_reservation_target": {"capacity_reservation_id": "cr-0abc"}}
    assert lt["block_device_mappings"] == [{"device_name": "/dev/xvda", "ebs": {
        "volume_size": 512, "volume_type": "gp3", "encrypted": "true", "delete_on_termination": "true"}}]
    assert lt["network_interfaces"] == nodegroup.network_interfaces(shape, "sg-9")
    assert base64.b64decode(lt["user_data"]).decode() == nodegroup.user_data()
    assert lt["tag_specifications"] == [{"resource_type": "instance", "tags": {"Name": "kk3-gpu"}}]
    assert lt["update_default_version"] is True
    assert not {"subnet_id", "image_id", "key_name", "iam_instance_profile"} & set(lt)
    assert "subnet" not in json.dumps(lt["network_interfaces"])


def test_user_data_is_one_nodeadm_part_asking_for_raid0():
    import email
    msg = email.message_from_string(nodegroup.user_data())
    assert msg.is_multipart() and msg.get_boundary() == nodegroup.MIME_BOUNDARY
    (part,) = msg.get_payload()
    assert part.get_content_type() == "application/node.eks.aws"
    import yaml
    doc = yaml.safe_load(part.get_payload())
    assert doc == {"apiVersion": "node.eks.aws/v1alpha1", "kind": "NodeConfig",
                   "spec": {"instance": {"localStorage": {"strategy": "RAID0"}}}}


@pytest.mark.parametrize("shape,card0,count", [
    ("p6-b300.48xlarge", "interface", 17), ("p6-b200.48xlarge", "efa", None), ("p5.48xlarge", "efa", None)])
def test_every_network_card_gets_one_interface_with_the_cluster_group(shape, card0, count):
    s = NODE_SHAPES[shape]
    nics = nodegroup.network_interfaces(s, "sg-1")
    assert nics[0]["interface_type"] == card0 and nics[0]["device_index"] == 0
    assert [n["network_card_index"] for n in nics] == list(range(len(nics)))
    assert len(nics) == (count or s.efa_network_cards)
    assert all(n["device_index"] == 1 and n["interface_type"] == "efa-only" for n in nics[1:])
    assert all(n["security_groups"] == ["sg-1"] and n["delete_on_termination"] == "true" for n in nics)


def test_node_group_args_in_full():
    shape = NODE_SHAPES["p6-b300.48xlarge"]
    ng = nodegroup.node_group_args("cl", "arn:role", ["subnet-1"], {"id": "lt-1", "version": "3"}, 4, 2,
                                   shape, nodes_per_replica=2)
    assert ng == {
        "cluster_name": "cl", "node_role_arn": "arn:role", "subnet_ids": ["subnet-1"],
        "capacity_type": "CAPACITY_BLOCK", "ami_type": "AL2023_x86_64_NVIDIA",
        "launch_template": {"id": "lt-1", "version": "3"},
        "scaling_config": {"min_size": 0, "max_size": 4, "desired_size": 2},
        "node_repair_config": {"enabled": True},
        "update_config": {"update_strategy": "MINIMAL", "max_unavailable": 2},
        "taints": [{"key": "nvidia.com/gpu", "value": "true", "effect": "NO_SCHEDULE"}],
        "labels": {lay.GPU_NODE_LABEL: "true", "nvidia.com/gpu.present": "true",
                   "kimi-k3/instance-type": "p6-b300.48xlarge"},
    }
    # the taint handed to AWS is a copy: changing one node group's cannot change another's
    ng["taints"][0]["value"] = "x"
    assert nodegroup.GPU_TAINT["value"] == "true"
    assert nodegroup.node_group_args("c", "a", [], {}, 1, 0, shape)["update_config"]["max_unavailable"] == 1


def test_launch_template_version_and_asg_name_from_outputs():
    assert nodegroup._version(None) == "$Latest"
    assert nodegroup._version(3) == "3" and nodegroup._version("7") == "7"
    assert nodegroup._asg_name(None) is None and nodegroup._asg_name([]) is None
    assert nodegroup._asg_name([{"autoscalingGroups": [{"name": ""}, {"name": "eks-a"}]}]) == "eks-a"
    assert nodegroup._asg_name([{"autoscaling_groups": []}, {"autoscaling_groups": [{"name": "eks-b"}]}]) == "eks-b"

    class Out:
        autoscaling_groups = [type("G", (), {"name": "eks-c"})()]
    assert nodegroup._asg_name([Out()]) == "eks-c"
    assert nodegroup._field({"snake_x": 1, "camelX": 2}, "snake_x", "camelX") == 1
    assert nodegroup._field({"camelX": 2}, "snake_x", "camelX") == 2
    assert nodegroup._field(object(), "snake_x", "camelX") is None
