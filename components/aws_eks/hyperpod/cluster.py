"""The HyperPod cluster on the stack's EKS cluster: its inputs (pure) and its resources.

The cluster is `aws-native:sagemaker:Cluster` (pulumi-aws-native, AWS Cloud Control's
`AWS::SageMaker::Cluster`): a maintained provider covers it, so no dynamic provider is written
for it (pulumi-aws 7.51.1 has no HyperPod resource). The aws-native provider reads its region
from its own config namespace, so the program gives it an explicit provider built from the
stack's `aws:region` and `aws:profile` (static keys are refused for aws-eks: aws_api.py).

What the cluster is, field by field (botocore 1.44.8 SageMaker model, CreateCluster; the
aws-native 1.84.0 docstrings where they say more):
- `orchestrator.eks.clusterArn`: the stack's EKS cluster (EKS-orchestrated HyperPod; the model's
  pattern for it is an EKS ARN);
- `vpcConfig`: the EKS cluster security group (the nodes must carry it to join, as the GPU node
  group's interfaces do) and the one private subnet in the training plan's zone;
- one instance group `serving` of `instanceCount` x the plan's instance type on
  `trainingPlanArn`, with the execution role below; `kubernetesConfig.labels` give the nodes
  the labels the NVIDIA device plugin release selects (addons.py: `kimi-k3/gpu-node` and
  `nvidia.com/gpu.present`, the chart's own required affinity); no `lifeCycleConfig`: "When
  omitted, the instance group uses Bootstrap mode" (aws-native ClusterLifeCycleConfigArgs),
  LifeCycleConfig is optional in the model, and kimi-k3 has nothing to run on the nodes;
- `nodeRecovery: Automatic` (a faulty node is replaced by HyperPod).

Replacement. AWS::SageMaker::Cluster's createOnlyProperties (AWS
CloudFormation User Guide, "AWS::SageMaker::Cluster", "Update requires: Replacement", and the
registry schema's createOnlyProperties, both read 2026-12-02) include the name, `VpcConfig`,
`Orchestrator` and the instance group's type and role; `TrainingPlanArn` and `InstanceCount`
are updated in place. A change of the subnet (the next training plan in another zone), the
EKS cluster or the accelerator therefore replaces the cluster, and Pulumi's default replacement
creates the new one first: with the same fixed name (CreateCluster: ResourceInUse) and on a
plan that holds one set of nodes, that cannot work, so the program asks for delete first
(resources.py).

The execution role (the nodes' identity): trusted by `sagemaker.amazonaws.com`, with
`AmazonSageMakerClusterInstanceRolePolicy` (named by the model's LifeCycleConfig.SourceS3Uri
doc as the HyperPod role's policy) and the managed policies every EKS node of this stack has
(components/aws_eks/cluster.py NODE_POLICIES: worker node, VPC CNI, ECR read), plus the few
VPC calls HyperPod makes for a cluster in your own VPC (network-interface permissions,
describing the VPC, subnets, security groups and DHCP options). Nothing else: no S3 (the
operator downloads the weights from the hub), no SageMaker API.
"""

from __future__ import annotations

import json
import re
from typing import Any, Dict, List, Mapping, Optional

from . import catalog

#: ClusterName: `[a-zA-Z0-9](-*[a-zA-Z0-9])*`, 1-63 (the pinned SageMaker model)
_NAME = re.compile(r"[a-zA-Z0-9](-*[a-zA-Z0-9])*")
NODE_POLICIES = ("AmazonEKSWorkerNodePolicy", "AmazonEKS_CNI_Policy", "AmazonEC2ContainerRegistryReadOnly")
#: HyperPod in a VPC of yours: the calls the execution role makes for the nodes' interfaces
VPC_ACTIONS = ("ec2:CreateNetworkInterfacePermission", "ec2:DeleteNetworkInterfacePermission",
               "ec2:DescribeDhcpOptions", "ec2:DescribeSecurityGroups", "ec2:DescribeSubnets", "ec2:DescribeVpcs")


def cluster_name(stack: str) -> str:
    """`kimi-k3-<stack>` within ClusterName's pattern and 63 characters (other characters dropped)."""
    clean = re.sub(r"-+", "-", re.sub(r"[^A-Za-z0-9-]", "-", stack)).strip("-")
    name = f"kimi-k3-{clean}"[:63].rstrip("-") if clean else "kimi-k3"
    assert _NAME.fullmatch(name), name
    return name


def trust_policy() -> str:
    return json.dumps({"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Principal": {"Service": "sagemaker.amazonaws.com"}, "Action": "sts:AssumeRole"}]})


def vpc_policy() -> str:
    return json.dumps({"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Action": list(VPC_ACTIONS), "Resource": "*"}]})


def managed_policies() -> List[str]:
    return [catalog.INSTANCE_ROLE_POLICY, *(f"arn:aws:iam::aws:policy/{p}" for p in NODE_POLICIES)]


def instance_group(instance_type: str, count: int, role_arn: Any, plan_arn: Any,
                   labels: Mapping[str, str]) -> Dict[str, Any]:
    """The serving instance group (aws-native ClusterInstanceGroupArgs, snake_case)."""
    return {"instance_group_name": catalog.INSTANCE_GROUP, "instance_type": instance_type,
            "instance_count": int(count), "execution_role": role_arn, "training_plan_arn": plan_arn,
            "kubernetes_config": {"labels": dict(labels)}}


def cluster_args(name: str, eks_arn: Any, subnet_id: Any, security_group_id: Any,
                 group: Mapping[str, Any], tags: Optional[Mapping[str, str]] = None) -> Dict[str, Any]:
    """aws-native `sagemaker.Cluster` arguments."""
    args: Dict[str, Any] = {
        "cluster_name": name,
        "orchestrator": {"eks": {"cluster_arn": eks_arn}},
        "vpc_config": {"security_group_ids": [security_group_id], "subnets": [subnet_id]},
        "instance_groups": [dict(group)],
        "node_recovery": "Automatic",
    }
    if tags:
        args["tags"] = [{"key": k, "value": v} for k, v in tags.items()]
    return args


def _pascal(key: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in key.split("_"))


def as_create_cluster(args: Mapping[str, Any]) -> Dict[str, Any]:
    """The same inputs as SageMaker's CreateCluster request (PascalCase; keys of labels kept), so
    the tests validate them against the pinned model's shapes."""
    def conv(value: Any, key: str = "") -> Any:
        if isinstance(value, Mapping):
            if key == "labels":
                return dict(value)
            return {_pascal(k): conv(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [conv(v, key) for v in value]
        return value
    out = conv(dict(args))
    out["Orchestrator"] = {"Eks": out["Orchestrator"].pop("Eks")}
    return out
