"""The GPU node group on a Capacity Block: own launch template + `aws.eks.NodeGroup` + scaling.

pulumi-eks cannot express a capacity-block launch template together with an EFA layout that fits
p6-b300 (card 0 ENA only, cards 1-16 EFA-only), so the launch template is built here. Its pieces
are pure functions (`network_interfaces`, `user_data`, `launch_template_args`) so tests read
exactly what AWS gets. Rules: market type `capacity-block` and a reservation target in the
template, node group `CAPACITY_BLOCK`, desired size 0 for upgrades (roll_guard.py; Amazon EKS User Guide,
"Create a managed node group with Capacity Blocks for ML",
https://docs.aws.amazon.com/eks/latest/userguide/capacity-blocks-mng.html); no subnet in the
template, no `instance_types`/`disk_size` beside it, the cluster security group on every
interface since EKS stops attaching it once interfaces are listed ("Customize managed nodes with
launch templates", https://docs.aws.amazon.com/eks/latest/userguide/launch-templates.html);
subnets only in the block's zone (a block is in one AZ: Amazon EC2 User Guide, "Capacity Blocks
for ML", https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/ec2-capacity-blocks.html).
Read for pulumi-aws 7.51.1 (requirements.txt).
"""

from __future__ import annotations

import base64
from datetime import datetime, timezone
from typing import Any, Dict, List, Optional

import pulumi
import pulumi_aws as aws

from ..inference.catalog import NodeShape
from . import capacity as cap
from .addons import GPU_NODE_LABELS

AMI_TYPE = "AL2023_x86_64_NVIDIA"
MIME_BOUNDARY = "KIMIK3BOUNDARY"
#: p6-b300-style shapes: card 0 is ENA only, the EFA cards are EFA-only
ENA_ONLY_PRIMARY = frozenset({"p6-b300.48xlarge"})


def network_interfaces(shape: NodeShape, security_group_id: Any) -> List[Dict[str, Any]]:
    """One interface per network card, the cluster security group on each.

    Card 0 carries the node's IP traffic (ENA; EFA too where the card supports it); cards
    1..N get one EFA-only interface each (device index 1), which serves RDMA without using an IP.
    """
    ena_primary = shape.key in ENA_ONLY_PRIMARY or not shape.efa_network_cards
    nics = [{"network_card_index": 0, "device_index": 0,
             "interface_type": "interface" if ena_primary else "efa",
             "security_groups": [security_group_id], "delete_on_termination": "true"}]
    # ENA-only card 0: all `efa_network_cards` come after it; otherwise card 0 is one of them
    efa_only_cards = range(1, shape.efa_network_cards + (1 if ena_primary else 0))
    for card in efa_only_cards:
        nics.append({"network_card_index": card, "device_index": 1, "interface_type": "efa-only",
                     "security_groups": [security_group_id], "delete_on_termination": "true"})
    return nics


def user_data() -> str:
    """MIME multi-part nodeadm config: RAID0 of the local NVMe disks (model cache).

    EKS merges its own NodeConfig (cluster endpoint, CA) into a managed node group's user data;
    ours only adds local storage. nodeadm mounts the array at /mnt/k8s-disks/0.
    """
    node_config = (
        "apiVersion: node.eks.aws/v1alpha1\n"
        "kind: NodeConfig\n"
        "spec:\n"
        "  instance:\n"
        "    localStorage:\n"
        "      strategy: RAID0\n"
    )
    return (
        "MIME-Version: 1.0\n"
        f'Content-Type: multipart/mixed; boundary="{MIME_BOUNDARY}"\n\n'
        f"--{MIME_BOUNDARY}\n"
        "Content-Type: application/node.eks.aws\n\n"
        f"{node_config}\n"
        f"--{MIME_BOUNDARY}--\n"
    )


def launch_template_args(shape: NodeShape, reservation_id: Any, security_group_id: Any,
                         root_volume_gib: int, name: str) -> Dict[str, Any]:
    """Inputs of the GPU launch template (no subnet, no AMI: EKS picks the NVIDIA AL2023 AMI)."""
    return {
        "instance_type": shape.key,
        "instance_market_options": {"market_type": "capacity-block"},
        "capacity_reservation_specification": {
            "capacity_reservation_target": {"capacity_reservation_id": reservation_id}},
        "metadata_options": {
            "http_endpoint": "enabled",
            "http_tokens": "required",  # IMDSv2 only
            # 1 hop: containers cannot reach the node role's credentials; pods that read S3 use
            # EKS Pod Identity (components/aws_eks/weights/)
            "http_put_response_hop_limit": 1,
        },
        "block_device_mappings": [{
            "device_name": "/dev/xvda",
            "ebs": {"volume_size": root_volume_gib, "volume_type": "gp3", "encrypted": "true",
                    "delete_on_termination": "true"},
        }],
        "network_interfaces": network_interfaces(shape, security_group_id),
        "user_data": base64.b64encode(user_data().encode()).decode(),
        "tag_specifications": [{"resource_type": "instance", "tags": {"Name": f"{name}-gpu"}}],
        "update_default_version": True,
    }


GPU_TAINT = {"key": "nvidia.com/gpu", "value": "true", "effect": "NO_SCHEDULE"}


def node_group_args(cluster_name: Any, role_arn: Any, subnet_ids: Any, launch_template: Any,
                    instance_count: int, desired: Any, shape: NodeShape,
                    nodes_per_replica: int = 1, kubernetes_version: Optional[str] = None) -> Dict[str, Any]:
    args = {
        "cluster_name": cluster_name,
        "node_role_arn": role_arn,
        "subnet_ids": subnet_ids,
        "capacity_type": "CAPACITY_BLOCK",
        "ami_type": AMI_TYPE,
        "launch_template": launch_template,
        "scaling_config": {"min_size": 0, "max_size": instance_count, "desired_size": desired},
        # a full Capacity Block has no spare instance: MINIMAL terminates a node before launching
        # its replacement (the EKS API's NodegroupUpdateConfig.updateStrategy, meant for GPUs);
        # while a block runs the group is at 0 anyway before it rolls (roll_guard.py: EKS's rule)
        "update_config": {"update_strategy": "MINIMAL", "max_unavailable": nodes_per_replica},
        # EKS node auto repair (off unless enabled: botocore 1.44.8 EKS model, NodeRepairConfig):
        # a GPU node whose kubelet stays NotReady for 30 min is replaced, inside the block (its slot
        # is free once the failed instance is terminated), instead of holding the block's only
        # slot while the LeaderWorkerSet group waits (Amazon EKS User Guide, "Automatically repair
        # nodes in EKS clusters", https://docs.aws.amazon.com/eks/latest/userguide/node-repair.html,
        # read 2026-12-02). GPU faults (AcceleratedHardwareReady) are reported only by the EKS
        # node monitoring agent, which kimi-k3 does not install (docs/aws-eks.md, "A node fails")
        "node_repair_config": {"enabled": True},
        "taints": [dict(GPU_TAINT)],
        # GPU_NODE_LABELS include nvidia.com/gpu.present=true, which the NVIDIA device plugin
        # chart's required node affinity looks for (addons.py, chart_facts.yaml)
        "labels": {**GPU_NODE_LABELS, "kimi-k3/instance-type": shape.key},
    }
    if kubernetes_version:
        # the GPU nodes follow the control plane (kimi-k3:clusterVersion); a change rolls them, so
        # roll_guard.py scales the group to 0 first while a block runs
        args["version"] = kubernetes_version
    return args


class GpuNodes:
    """Launch template, node group and the block's scheduled scaling (scaling.BlockScaling)."""

    def __init__(self, name: str, *, shape: NodeShape, block: cap.CapacityBlock, cluster_name: Any,
                 role_arn: Any, subnet_id: Any, security_group_id: Any, instance_count: int,
                 root_volume_gib: int, parent: pulumi.Resource, aws_inputs: Dict[str, Any],
                 nodes_per_replica: int = 1, depends_on=(), kubernetes_version: Optional[str] = None):
        from .roll_guard import GpuRollGuard
        from .scaling import BlockScaling

        opts = pulumi.ResourceOptions(parent=parent)
        self.launch_template = aws.ec2.LaunchTemplate(
            f"{name}-gpu-lt",
            **launch_template_args(shape, block.reservation_id, security_group_id, root_volume_gib, name),
            opts=opts)
        # a started block gets its nodes at creation; afterwards BlockScaling owns the desired
        # size (it follows whichever block the launch template targets), so later `up`s leave it
        desired = block.start_date.apply(
            lambda s: instance_count if s and cap.scaling_times(s, s, _now())["scale_up_at"] is None else 0)
        lt_version = self.launch_template.latest_version.apply(_version)
        # what makes EKS roll the group's nodes; the guard scales the group to 0 first while the
        # block runs (EKS's rule for Capacity Blocks), BlockScaling scales it back after
        roll_key = {"kubernetesVersion": kubernetes_version, "amiType": AMI_TYPE,
                    "launchTemplateVersion": lt_version}
        self.roll_guard = GpuRollGuard(f"{name}-gpu-roll-guard", {
            "clusterName": cluster_name, "rollKey": roll_key, "reservationId": block.reservation_id,
            "startDate": block.start_date, "endDate": block.end_date, **aws_inputs,
        }, opts=pulumi.ResourceOptions(parent=parent, depends_on=list(depends_on)))
        self.node_group = aws.eks.NodeGroup(
            f"{name}-gpu",
            **node_group_args(cluster_name, role_arn, [subnet_id],
                              {"id": self.launch_template.id, "version": lt_version},
                              instance_count, desired, shape, nodes_per_replica, kubernetes_version),
            opts=pulumi.ResourceOptions(parent=parent, depends_on=[*depends_on, self.roll_guard],
                                        ignore_changes=["scalingConfig.desiredSize"]))
        asg = self.node_group.resources.apply(_asg_name)
        self.scaling = BlockScaling(f"{name}-gpu-scaling", {
            "asgName": asg, "actionPrefix": name, "reservationId": block.reservation_id,
            "startDate": block.start_date, "endDate": block.end_date, "instanceCount": instance_count,
            # a roll re-applies the schedule: a running block's group is set back to its size
            "rollKey": roll_key,
            **aws_inputs,
        }, opts=pulumi.ResourceOptions(parent=parent, depends_on=[self.node_group]))


def _field(obj: Any, snake: str, camel: str) -> Any:
    """A field of a Pulumi output object (attribute) or of a plain dict (either spelling)."""
    value = getattr(obj, snake, None)
    if value is None and isinstance(obj, dict):
        value = obj.get(snake, obj.get(camel))
    return value


def _asg_name(resources: Optional[list]) -> Optional[str]:
    """The Auto Scaling group EKS made for the node group (scheduled actions attach to it)."""
    for r in resources or []:
        for g in _field(r, "autoscaling_groups", "autoscalingGroups") or []:
            name = _field(g, "name", "name")
            if name:
                return name
    return None


def _version(v) -> str:
    """The launch template version the node group pins (a change rolls the nodes)."""
    return "$Latest" if v is None else str(int(v))


def _now():
    return datetime.now(timezone.utc)
