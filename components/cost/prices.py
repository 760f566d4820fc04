"""The price catalog: what each billed item costs per hour, where that figure was read, when, and
for which region.

Rule: a price is a figure read at a named source on a named date for named regions, or it is
unknown (None, with what was searched). Nothing here is estimated from a neighbour or remembered.
A figure read for one region is never applied to another: `price(key, region)` of a region the
figure was not read for is unknown and names the figure it did not apply (AWS prices differ per
region; us-east-2, the aws-eks default, has no figure of its own here for EC2 or S3). A
contracted price (`kimi-k3:usdPerHour`) replaces all of them.

Currency: every figure is US dollars. CTyun bills in CNY; a CNY figure would be converted only
with an exchange rate cited with its date, and none was found to convert.

Searched and not found (2026-12-01 and 2026-12-02, in stored copies of public pages, docs and code):
- a Capacity Block rate for p6-b300.48xlarge: the copies of AWS's "Amazon EC2 Capacity Blocks for
  ML Pricing" page read list p5/p5e/p4d/trn1 only ("The current prices are scheduled to be updated
  on January 1, 2025"); a block is priced per offering anyway, so the block's upfront fee, read
  from AWS when it is bought (DescribeCapacityBlockOfferings UpfrontFee; the stack output
  capacityCost), is its price;
- any us-east-2 (Ohio) figure for EC2 instances or S3 storage;
- every CTyun price, in Chinese and English ("天翼云 物理机 昇腾 910C Atlas 800 A3 价格 计费",
  "天翼云 弹性IP 带宽 按需计费 价格", "天翼云 弹性文件服务 SFS Turbo 海量文件 OceanFS 价格",
  "天翼云 息壤 智算 昇腾 卡时 价格", "ctyun.cn 弹性IP 计费说明"): CTyun's price pages were not
  among them; the Atlas 800 A3 bare-metal node, the E-HPC master, SFS and EIP bandwidth stay
  unknown.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Mapping, Optional, Tuple


@dataclass(frozen=True)
class Price:
    key: str
    what: str  # what is billed, as a person reads it
    unit: str  # per what the figure is
    usd_per_hour: Optional[float]  # None: unknown
    source: str  # URL, or why there is none
    read: str  # the date the figure was read (YYYY-MM-DD), or "" when unknown
    note: str = ""
    #: the regions the figure was read for; () = the source states one price for every region
    regions: Tuple[str, ...] = ()


#: hours in an average month (365 x 24 / 12): a per-GB-month storage price as a per-hour figure
HOURS_PER_MONTH = 730.0

_EKS_BLOG = ("https://aws.amazon.com/blogs/containers/"
             "amazon-eks-extended-support-for-kubernetes-versions-pricing/")
_NAT_PAGE = "https://cloudburn.io/blog/aws-nat-gateway-pricing"
_S3_PAGE = "https://cloudburn.io/blog/amazon-s3-pricing"
# Karpenter's on-demand price table, generated from the AWS Price List API ("generated at
# 2026-07-20T13:44:30Z for us-east-1"), at the commit that last regenerated it
_KARPENTER = ("https://github.com/aws/karpenter-provider-aws/blob/6fc13b5236fd04fd16ff3f9dc7490d0813994099/"
              "pkg/providers/pricing/zz_generated.pricing_aws.go")
_KARPENTER_NOTE = ("Linux on demand, from the AWS Price List API as copied by Karpenter "
                   "(\"generated at 2026-07-20T13:44:30Z for us-east-1\"): ")
_CB_UNKNOWN = ("no Capacity Block rate read for it (the copies of AWS's Capacity Blocks pricing page "
               "list p5/p5e/p4d/trn1 only)")
_CTYUN = "no public CTyun price found (searched in Chinese and English, 2026-12-02)"
_US_EAST_1 = ("us-east-1",)


def _on_demand(shape: str, role: str, usd: float) -> Price:
    return Price(f"aws:ec2:{shape}", f"EC2 {shape} on demand ({role})", "instance-hour", usd,
                 _KARPENTER, "2026-12-02", _KARPENTER_NOTE + f"\"{shape}\": {usd:f}", _US_EAST_1)


def _capacity_block(shape: str) -> Price:
    return Price(f"aws:capacity-block:{shape}", f"EC2 {shape} on a Capacity Block (GPU node)",
                 "instance-hour", None, _CB_UNKNOWN, "",
                 "a block is priced per offering: its upfront fee / its hours, read from AWS "
                 "(DescribeCapacityBlockOfferings UpfrontFee) when it is bought (the stack output "
                 "capacityCost); an adopted block was paid when it was bought")


def _your_capacity(shape: str) -> Price:
    return Price(f"aws:your-capacity:{shape}", f"{shape} nodes of a cluster of yours (GPU nodes)",
                 "instance-hour", None, "not created by this stack: billed as your cluster bills", "")


PRICES: Mapping[str, Price] = {p.key: p for p in (
    Price("aws:eks-control-plane", "EKS control plane (standard support)", "cluster-hour", 0.10,
          _EKS_BLOG, "2026-12-01",
          "\"Pricing for clusters running Kubernetes versions in standard support is unchanged - "
          "you will continue to pay $0.10 per cluster per hour\"; $0.60 in extended support"),
    Price("aws:nat-gateway", "NAT gateway (hourly charge)", "gateway-hour", 0.045, _NAT_PAGE,
          "2026-12-01", "secondary source (2026-02-24): \"$0.045/hour in US East\" (both US East "
          "regions); plus $0.045 per GB processed, not counted here", ("us-east-1", "us-east-2")),
    Price("aws:public-ipv4", "public IPv4 address", "address-hour", 0.005, _NAT_PAGE,
          "2026-12-01", "secondary source (2026-02-24): \"$0.005/hour per IP\""),
    _on_demand("m7i.xlarge", "system nodes", 0.2016),
    _on_demand("p6-b300.48xlarge", "GPU node", 142.416),
    _on_demand("p6-b200.48xlarge", "GPU node", 113.9328),
    _on_demand("p5en.48xlarge", "GPU node", 63.296),
    _on_demand("p5.48xlarge", "GPU node", 55.04),
    _capacity_block("p6-b300.48xlarge"),
    _capacity_block("p6-b200.48xlarge"),
    _capacity_block("p5en.48xlarge"),
    _capacity_block("p5.48xlarge"),
    *(_your_capacity(s) for s in ("p6-b300.48xlarge", "p6-b200.48xlarge", "p5en.48xlarge", "p5.48xlarge")),
    Price("aws:s3-storage", "S3 Standard storage of the weights mirror", "GB-hour",
          round(0.023 / HOURS_PER_MONTH, 9), _S3_PAGE, "2026-12-02",
          "secondary source: \"S3 Standard costs $0.023/GB/month\", \"All prices are for US East "
          "(N. Virginia) as of March 2026\"; per hour over a 730 h month; requests and transfer "
          "not counted", _US_EAST_1),
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


def price(key: str, region: Optional[str] = None) -> Price:
    """The catalog entry for `region`, or an unknown price naming the key (never a guess).

    A figure read for other regions than `region` (or with the region not known) is unknown
    here, and its note says which figure was not applied and why."""
    p = PRICES.get(key) or Price(key, key, "hour", None, "not in the price catalog", "")
    if p.usd_per_hour is None or not p.regions or region in p.regions:
        return p
    where = f"for {region}" if region else "for a stack whose region is not known"
    return dataclasses.replace(
        p, usd_per_hour=None, read="",
        source=f"no figure read {where}",
        note=f"{', '.join(p.regions)} only: ${p.usd_per_hour:g}/{p.unit} ({p.source}, read {p.read}), "
             f"not applied to another region")
