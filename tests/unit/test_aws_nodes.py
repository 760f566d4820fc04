"""Pure pieces of the aws-eks resources: NIC layout, nodeadm user data, launch template inputs,
subnet arithmetic, the weights policy, kubeconfig and the curl line."""

import ipaddress
import json

import pytest

from components.aws_eks import cluster, network, nodegroup, target
from components.inference.catalog import NODE_SHAPES
from components.inference.errors import ConfigError

B300 = NODE_SHAPES["p6-b300.48xlarge"]


def test_p6_b300_nics_card0_ena_then_16_efa_only_with_the_cluster_sg():
    nics = nodegroup.network_interfaces(B300, "sg-1")
    assert len(nics) == 17
    assert nics[0] == {"network_card_index": 0, "device_index": 0, "interface_type": "interface",
                       "security_groups": ["sg-1"], "delete_on_termination": "true"}
    assert [n["network_card_index"] for n in nics[1:]] == list(range(1, 17))
    assert all(n["interface_type"] == "efa-only" and n["device_index"] == 1 for n in nics[1:])
    assert all(n["security_groups"] == ["sg-1"] for n in nics)


@pytest.mark.parametrize("shape", ["p5.48xlarge", "p5en.48xlarge", "p6-b200.48xlarge"])
def test_other_shapes_use_card0_as_efa(shape):
    s = NODE_SHAPES[shape]
    nics = nodegroup.network_interfaces(s, "sg-1")
    assert len(nics) == s.efa_network_cards and nics[0]["interface_type"] == "efa"
    assert len({n["network_card_index"] for n in nics}) == len(nics)


def test_user_data_is_mime_nodeadm_raid0():
    ud = nodegroup.user_data()
    assert ud.startswith("MIME-Version: 1.0\n")
    assert f'boundary="{nodegroup.MIME_BOUNDARY}"' in ud and ud.rstrip().endswith(f"--{nodegroup.MIME_BOUNDARY}--")
    assert "kind: NodeConfig" in ud and "strategy: RAID0" in ud


def test_launch_template_args():
    lt = nodegroup.launch_template_args(B300, "cr-1", "sg-1", 300, "k3")
    assert lt["instance_market_options"] == {"market_type": "capacity-block"}
    assert lt["capacity_reservation_specification"]["capacity_reservation_target"] == {"capacity_reservation_id": "cr-1"}
    assert lt["metadata_options"]["http_tokens"] == "required"
    assert lt["block_device_mappings"][0]["ebs"]["encrypted"] == "true"
    assert lt["block_device_mappings"][0]["ebs"]["volume_size"] == 300
    assert "subnet_id" not in json.dumps(lt) and "image_id" not in lt


def test_node_group_args():
    ng = nodegroup.node_group_args("c", "arn", ["subnet-1"], {"id": "lt"}, 2, 0, B300)
    assert ng["capacity_type"] == "CAPACITY_BLOCK" and ng["ami_type"] == "AL2023_x86_64_NVIDIA"
    assert "instance_types" not in ng and "disk_size" not in ng
    assert ng["scaling_config"] == {"min_size": 0, "max_size": 2, "desired_size": 0}
    # node auto repair is off unless asked for (EKS model: "disabled by default")
    assert ng["node_repair_config"] == {"enabled": True}


def test_node_group_args_are_a_valid_create_nodegroup_request():
    """The GPU node group's fields, as EKS's CreateNodegroup takes them, pass the pinned model's
    validation (a misspelt or mistyped repair config fails here, not at `pulumi up`)."""
    import botocore.session
    from botocore.validate import ParamValidator

    ng = nodegroup.node_group_args("c", "arn:aws:iam::111122223333:role/n", ["subnet-1"],
                                   {"id": "lt-1", "version": "1"}, 2, 0, B300, 2, "1.35")
    camel = {"node_role_arn": "nodeRole", "subnet_ids": "subnets", "cluster_name": "clusterName"}

    def conv(v):
        if isinstance(v, dict):
            return {camel.get(k) or "".join(p[:1].upper() + p[1:] if i else p
                                            for i, p in enumerate(k.split("_"))): conv(x) for k, x in v.items()}
        return [conv(x) for x in v] if isinstance(v, list) else v

    req = {**conv(ng), "nodegroupName": "kimi-k3-gpu"}
    req["taints"] = [{**t, "effect": "NO_SCHEDULE"} for t in req["taints"]]
    model = botocore.session.get_session().get_service_model("eks")
    report = ParamValidator().validate(req, model.operation_model("CreateNodegroup").input_shape)
    assert not report.has_errors(), report.generate_report()
    assert req["nodeRepairConfig"] == {"enabled": True}


def test_subnet_plan_is_disjoint_and_inside_the_vpc():
    zones = [f"us-east-1{c}" for c in "abcdef"]  # the widest region
    plan = network.subnet_plan("10.20.0.0/16", zones)
    nets = [ipaddress.ip_network(n) for n in (*plan.public.values(), *plan.private, *plan.gpu.values())]
    vpc = ipaddress.ip_network("10.20.0.0/16")
    assert all(n.subnet_of(vpc) for n in nets)
    assert not any(a.overlaps(b) for i, a in enumerate(nets) for b in nets[i + 1:])
    assert sorted(plan.gpu) == sorted(plan.public) == zones
    assert {ipaddress.ip_network(n).prefixlen for n in plan.gpu.values()} == {19}  # 8190 pod IPs


def test_subnet_cidrs_follow_the_zone_letter_not_the_zone_list():
    """A zone that appears (or is missing) never shifts another zone's CIDRs."""
    two = network.subnet_plan("10.0.0.0/16", ["us-west-1b", "us-west-1c"])
    three = network.subnet_plan("10.0.0.0/16", ["us-west-1a", "us-west-1b", "us-west-1c"])
    assert two.gpu["us-west-1c"] == three.gpu["us-west-1c"] and two.public["us-west-1b"] == three.public["us-west-1b"]
    # zones without a slot (a letter past f, a Local Zone name) get none; two usable are needed
    odd = network.subnet_plan("10.0.0.0/16", ["us-east-1a", "us-east-1b", "us-east-1g"])
    assert sorted(odd.gpu) == ["us-east-1a", "us-east-1b"]
    with pytest.raises(ConfigError, match="EKS needs two"):
        network.subnet_plan("10.0.0.0/16", ["us-east-1a", "us-east-1-bos-1a"])


def test_pick_gpu_subnet_names_a_zone_without_one():
    assert network.pick_gpu_subnet("us-east-2c", {"us-east-2b": "s-b", "us-east-2c": "s-c"}) == "s-c"
    with pytest.raises(ConfigError, match="us-east-1g.*is in a zone kimi-k3's VPC has no GPU subnet in"):
        network.pick_gpu_subnet("us-east-1g", {"us-east-1a": "s-a"})


def test_pick_zone_subnet():
    subnets = [{"id": "subnet-a", "availability_zone": "us-east-2a"},
               {"id": "subnet-b", "availability_zone": "us-east-2b"}]
    assert network.pick_zone_subnet("us-east-2b", subnets) == "subnet-b"
    with pytest.raises(ConfigError, match="add a private subnet in us-east-2c"):
        network.pick_zone_subnet("us-east-2c", subnets)


def test_exec_kubeconfig_holds_no_credentials():
    kc = json.loads(cluster.exec_kubeconfig("hp", "https://x", "Q0E=", "us-west-2"))
    user = kc["users"][0]["user"]
    assert set(user) == {"exec"} and "--profile" not in user["exec"]["args"]
    assert user["exec"]["args"][:4] == ["eks", "get-token", "--cluster-name", "hp"]
    assert user["exec"]["args"][user["exec"]["args"].index("--region") + 1] == "us-west-2"


def test_curl_line():
    line = target.curl_line("http://h:8000/v1", "Kimi-K3", True, None)
    assert line.startswith("printf 'Authorization: Bearer %s\\n' \"$VLLM_API_KEY\" | curl -H @- "
                           "-sS http://h:8000/v1/chat/completions")
    assert '"model":"Kimi-K3"' in line
    pf = target.curl_line("http://127.0.0.1:8000/v1", "Kimi-K3", False, "kubectl port-forward svc/x 8000:8000")
    assert pf.startswith("kubectl port-forward") and "Authorization" not in pf


def test_asg_name_from_typed_outputs_and_dicts():
    from pulumi_aws.eks import outputs as eks_out

    typed = [eks_out.NodeGroupResource(autoscaling_groups=[eks_out.NodeGroupResourceAutoscalingGroup(name="asg-1")])]
    assert nodegroup._asg_name(typed) == "asg-1"
    assert nodegroup._asg_name([{"autoscalingGroups": [{"name": "asg-2"}]}]) == "asg-2"
    assert nodegroup._asg_name(None) is None
