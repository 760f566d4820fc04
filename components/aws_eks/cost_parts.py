"""What an aws-eks stack bills per hour, counted from what its program registers (pure).

One EKS control plane per `eks:index:Cluster`, a NAT gateway per `aws:ec2/natGateway`, a public
IPv4 address per `aws:ec2/eip`, a system node per desired node of an ON_DEMAND node group; the
GPU nodes of a Capacity Block node group (its maxSize: every replica's nodes while the block
runs; priced as a block, not on demand), the training plan's nodes on the HyperPod path, or the
plan's nodes on a HyperPod cluster of the user's (not created here); the weights mirror bucket
(priced per GB stored: components/cost/estimate.py `for_stack`). Priced by components/cost (the catalog, its sources and dates): `AwsEks.cost_parts`.
"""

from __future__ import annotations

from typing import Any, List, Mapping, Sequence

from ..cost.estimate import Part, count, inputs_of, part, positive_int


def aws_parts(resources: Sequence[Mapping[str, Any]], node_shape: str, nodes: int) -> List[Part]:
    parts: List[Part] = []
    for rtype, key in (("eks:index:Cluster", "aws:eks-control-plane"),
                       ("aws:ec2/natGateway:NatGateway", "aws:nat-gateway"),
                       ("aws:ec2/eip:Eip", "aws:public-ipv4")):
        n = count(resources, rtype)
        if n:
            parts.append(part(key, n))
    gpu_nodes = 0
    for r in resources:
        if r.get("type") != "aws:eks/nodeGroup:NodeGroup":
            continue
        i = inputs_of(r)
        scaling = i.get("scalingConfig") if isinstance(i.get("scalingConfig"), Mapping) else {}
        if i.get("capacityType") == "CAPACITY_BLOCK":
            gpu_nodes += positive_int(scaling.get("maxSize"))
            continue
        types = i.get("instanceTypes") if isinstance(i.get("instanceTypes"), list) else []
        desired = positive_int(scaling.get("desiredSize"))
        if types and desired:
            parts.append(part(f"aws:ec2:{types[0]}", desired,
                               f"node group {r.get('name')}: {desired} desired"))
    plan = next((inputs_of(r) for r in resources if r.get("type") == "pulumi-python:dynamic/aws:TrainingPlan"), None)
    if plan is not None:  # HyperPod end to end: the nodes are the training plan's
        parts.append(part("aws:sagemaker-training-plan", positive_int(plan.get("instanceCount")) or nodes,
                           f"{plan.get('instanceType')} on the training plan"))
    elif not gpu_nodes:
        parts.append(part(f"aws:your-capacity:{node_shape}", nodes, "the plan's nodes"))
    else:
        parts.append(part(f"aws:capacity-block:{node_shape}", gpu_nodes,
                           "the Capacity Block node group's nodes while the block runs"))
    # the weights mirror (not the HyperPod operator's certificate bucket, kimi-k3-tls-*: a few kB)
    if any(not str(inputs_of(r).get("bucketPrefix") or "").startswith("kimi-k3-tls-")
           for r in resources if r.get("type") == "aws:s3/bucket:Bucket"):
        parts.append(part("aws:s3-storage", 1, "the weights mirror (about the checkpoint's size)"))
    return parts
