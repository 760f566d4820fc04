"""The price catalog: what each billed item costs per hour, where that figure was read, and when.

Rule: a price is a figure read at a named source on a named date, or it is unknown (None, with
what was searched). Nothing here is estimated from a neighbour or remembered. Prices change and
differ per region: these are list prices for the regions the stacks default to (aws-eks:
us-east-2, Ohio). A contracted price (`kimi-k3:usdPerHour`) replaces all of them.

Not read and therefore unknown (searched 2026-12-01 in AWS's pages and third-party copies):
the on-demand price of p6-b300.48xlarge (AWS prices Capacity Blocks per purchase: the block's
upfront fee is read from AWS when it is bought or adopted), of the m7i.xlarge system nodes in
us-east-2, S3 storage, EBS, KMS; and every CTyun price (the Atlas 800 A3 bare-metal node, the
E-HPC master, SFS, EIP bandwidth), which CTyun does not publish.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Optional


@dataclass(frozen=True)
class Price:
    key: str
    what: str  # what is billed, as a person reads it
    unit: str  # per what the figure is
    usd_per_hour: Optional[float]  # None: unknown
    source: str  # URL, or why there is none
    read: str  # the date the figure was read (YYYY-MM-DD), or "" when unknown
    note: str = ""


_EKS_BLOG = ("https://aws.amazon.com/blogs/containers/"
             "amazon-eks-extended-support-for-kubernetes-versions-pricing/")
_NAT_PAGE = "https://cloudburn.io/blog/aws-nat-gateway-pricing"
_NOT_READ = "no public price read (searched AWS's pages and third-party copies)"
_CTYUN = "CTyun publishes no price for it (searched in Chinese and English)"

PRICES: Mapping[str, Price] = {p.key: p for p in (
    Price("aws:eks-control-plane", "EKS control plane (standard support)", "cluster-hour", 0.10,
          _EKS_BLOG, "2026-12-01",
          "\"Pricing for clusters running Kubernetes versions in standard support is unchanged - "
          "you will continue to pay $0.10 per cluster per hour\"; $0.60 in extended support"),
    Price("aws:nat-gateway", "NAT gateway (hourly charge)", "gateway-hour", 0.045, _NAT_PAGE,
          "2026-12-01", "secondary source (2026-02-24): \"$0.045/hour in US East\"; plus "
          "$0.045 per GB processed, not counted here"),
    Price("aws:public-ipv4", "public IPv4 address", "address-hour", 0.005, _NAT_PAGE,
          "2026-12-01", "secondary source (2026-02-24): \"$0.005/hour per IP\""),
    Price("aws:ec2:m7i.xlarge", "EC2 m7i.xlarge on demand (system nodes)", "instance-hour", None,
          _NOT_READ, ""),
    Price("aws:ec2:p6-b300.48xlarge", "EC2 p6-b300.48xlarge (GPU node)", "instance-hour", None,
          _NOT_READ, "", "on a Capacity Block: the block's upfront fee / its hours, read from "
          "AWS (DescribeCapacityBlockOfferings UpfrontFee) when the block is bought or adopted"),
    Price("aws:ec2:p6-b200.48xlarge", "EC2 p6-b200.48xlarge (GPU node)", "instance-hour", None,
          _NOT_READ, ""),
    Price("aws:ec2:p5en.48xlarge", "EC2 p5en.48xlarge (GPU node)", "instance-hour", None,
          _NOT_READ, ""),
    Price("aws:ec2:p5.48xlarge", "EC2 p5.48xlarge (GPU node)", "instance-hour", None,
          _NOT_READ, ""),
    Price("aws:s3-storage", "S3 storage of the weights mirror", "mirror-hour", None, _NOT_READ, ""),
    # the HyperPod path's capacity (components/aws_eks/hyperpod/training_plan.py)
    Price("aws:sagemaker-training-plan", "SageMaker training plan (HyperPod node)", "instance-hour", None,
          "priced per purchase: SearchTrainingPlanOfferings UpfrontFee (botocore 1.44.8 SageMaker model)", "",
          "the plan's upfront fee / its hours / its instances, read from SageMaker when it is bought or "
          "adopted (the stack output capacityCost)"),
    Price("ctyun:atlas-800-a3", "CTyun Atlas 800 A3 bare-metal node (16 x Ascend 910C)",
          "node-hour", None, _CTYUN, ""),
    Price("ctyun:ehpc-master", "CTyun E-HPC master node (not serving)", "node-hour", None,
          _CTYUN, ""),
    Price("ctyun:sfs", "CTyun SFS file system of the cluster", "file-system-hour", None, _CTYUN, ""),
    Price("ctyun:eip", "CTyun EIP (public address and its bandwidth)", "address-hour", None,
          _CTYUN, ""),
)}


def price(key: str) -> Price:
    """The catalog entry, or an unknown price naming the key (never a guess)."""
    return PRICES.get(key) or Price(key, key, "hour", None, "not in the price catalog", "")
