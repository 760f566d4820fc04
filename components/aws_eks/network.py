"""The VPC: new (a public and a GPU subnet in every zone of the region, two private subnets for
the system nodes and the control plane) or existing ids from config.

Why every zone, created up front: a Capacity Block lives in one zone, and the next block (bought
or adopted) may be in another. A GPU subnet pinned to "the block's zone" would then have to be
replaced with its own CIDR, which AWS refuses while the old one exists (InvalidSubnet.Conflict),
and, being one of the cluster's subnets, would churn the EKS cluster. So:
- one GPU subnet per zone, its CIDR fixed by the zone's letter (a stable index: a zone that
  appears later gets its own slot, nothing shifts); the GPU node group uses the one in the
  block's zone, so a block elsewhere moves only the node group (and its launch template);
- the GPU subnets are not cluster subnets and not system node subnets: EKS needs the cluster's
  subnets in at least two zones (the two private ones) and lets nodes run in other subnets of
  the VPC (EKS User Guide, "View Amazon EKS networking requirements for VPC and subnets",
  subnet requirements for nodes: "you can also deploy nodes ... to subnets that you didn't
  specify when you created the cluster");
- one public subnet per zone (tagged for internet-facing load balancers): an NLB only sends
  traffic to targets in zones it has a subnet in (ELB User Guide, "How Elastic Load Balancing
  works", Availability Zones and load balancer nodes: "If you register targets in an
  Availability Zone but do not enable the Availability Zone, these registered targets do not
  receive traffic"), so the block's zone always has one.

A gateway endpoint for S3 on the private route table (the system, GPU and HyperPod nodes'):
without it every byte the nodes move to or from S3 in the region crosses the NAT gateway, which
bills each GB it processes ($0.045 in us-east regions: components/cost/prices.py's NAT source);
the weights mirror writes 1.56 TB to S3 once and every GPU node reads it back on each cold start,
and the HyperPod operator stores its certificates there (AWS's operator setup creates "an Amazon
S3 VPC endpoint" for the cluster's VPC: https://docs.aws.amazon.com/sagemaker/latest/dg/
sagemaker-hyperpod-model-deployment-setup.html, read 2026-12-02). "Gateway endpoints are
recommended for workloads contained within a single AWS account and Region, and come at no
additional charge" (AWS Prescriptive Guidance, startup security baseline WKLD.12,
https://docs.aws.amazon.com/prescriptive-guidance/latest/aws-startup-security-baseline/wkld-12.html,
read 2026-12-02). S3 in other regions keeps going through the NAT (the endpoint's route holds
only its region's prefix list). An existing VPC is left as it is (its routes are yours).

`subnet_plan` is the pure CIDR arithmetic; `Network` declares the resources. Nothing is exposed
to the internet except through a load balancer in a public subnet (nodes have no public IPs).
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence

import pulumi
import pulumi_aws as aws

from ..inference.errors import ConfigError
from .config import AwsEksConfig

#: zone letters a.. that the layout has slots for (us-east-1, the widest region, has a-f)
ZONE_SLOTS = 6
_ZONE_LETTER = re.compile(r"^[a-z]{2}(-[a-z]+)+-\d+([a-z])$")


@dataclass(frozen=True)
class SubnetPlan:
    private: tuple  # two /20s in the first two zones (system nodes, control plane ENIs)
    public: Mapping[str, str]  # zone -> /22 (load balancers, NAT), every zone
    gpu: Mapping[str, str]  # zone -> /19 (GPU nodes; their pods take VPC IPs), every zone


def zone_slot(zone: str) -> Optional[int]:
    """The zone's index in the layout, from its letter (us-east-2c -> 2); None: no slot for it
    (a block there fails naming the zone: `pick_gpu_subnet`)."""
    m = _ZONE_LETTER.match(zone)
    if not m or ord(m.group(2)) - ord("a") >= ZONE_SLOTS:
        return None
    return ord(m.group(2)) - ord("a")


def subnet_plan(vpc_cidr: str, zones: Sequence[str]) -> SubnetPlan:
    """Carve a /16 into non-overlapping subnets for `zones` (the region's availability zones).

    Layout of the /16: 10.x.0.0/19 public /22s by zone letter; 10.x.32.0/19 the two private
    /20s; 10.x.64.0/18 and 10.x.128.0/17 the GPU /19s by zone letter (six slots).
    """
    net = ipaddress.ip_network(vpc_cidr)
    if net.prefixlen != 16:
        raise ValueError("expected a /16")
    slots = {z: i for z, i in ((z, zone_slot(z)) for z in sorted(zones)) if i is not None}
    if len(slots) < 2:
        raise ConfigError("aws:region", sorted(zones), "use a region with at least two availability zones, "
                          "or kimi-k3:vpcId with your own subnets", "has fewer than two availability zones "
                          "kimi-k3's VPC layout can use (EKS needs two)")
    eighths = list(net.subnets(new_prefix=19))  # 8 x /19
    publics = list(eighths[0].subnets(new_prefix=22))
    privates = list(eighths[1].subnets(new_prefix=20))
    gpus = eighths[2:]
    return SubnetPlan(private=tuple(map(str, privates)),
                      public={z: str(publics[i]) for z, i in slots.items()},
                      gpu={z: str(gpus[i]) for z, i in slots.items()})


def pick_zone_subnet(block_zone: str, subnets: Sequence[Dict[str, str]]) -> str:
    """The id of a subnet in `block_zone`, or ConfigError (existing VPCs)."""
    for s in subnets:
        if s["availability_zone"] == block_zone:
            return s["id"]
    raise ConfigError("kimi-k3:privateSubnetIds", [s["id"] for s in subnets],
                      f"add a private subnet in {block_zone}, the Capacity Block's zone",
                      f"has no subnet in {block_zone}")


def pick_gpu_subnet(block_zone: str, by_zone: Mapping[str, Any]) -> Any:
    """The GPU subnet of `block_zone` (new VPCs); ConfigError naming the zone if there is none."""
    if block_zone in by_zone:
        return by_zone[block_zone]
    raise ConfigError("kimi-k3:capacityReservationId", block_zone, "use a block in one of "
                      f"{', '.join(sorted(by_zone))}, or kimi-k3:vpcId with a private subnet in "
                      f"{block_zone}", "is in a zone kimi-k3's VPC has no GPU subnet in")


def public_zone_warning(block_zone: str, public_zones: Sequence[str]) -> str:
    """Existing VPCs: the NLB cannot reach nodes in a zone without a public subnet ('' = fine)."""
    if block_zone in public_zones:
        return ""
    return (f"kimi-k3:publicSubnetIds has no subnet in {block_zone}, the Capacity Block's zone: the "
            "load balancer of kimi-k3:allowedCidrs gets no node there and may not route to the GPU "
            "pods; add a public subnet in that zone")


def s3_gateway_service(region: str) -> str:
    """The S3 gateway endpoint's service name in `region` (`com.amazonaws.<region>.s3`, the form
    AWS's operator setup page passes to `aws ec2 create-vpc-endpoint --vpc-endpoint-type Gateway`);
    `aws:region` is held to the aws partition's region names before anything (config.py)."""
    return f"com.amazonaws.{region}.s3"


def region_zones() -> List[str]:
    """The region's availability zones (no Local or Wavelength Zones), known at preview.

    A plain invoke, not an Output: the program must know how many subnets to declare. No state
    filter: a zone reported impaired for a while must not make its subnets disappear.
    """
    got = aws.get_availability_zones(filters=[{"name": "zone-type", "values": ["availability-zone"]}])
    return sorted(got.names)


class Network:
    """`vpc_id`, `public_subnet_ids`, `private_subnet_ids` (the cluster's and the system nodes'),
    `gpu_subnet_id` (the block's zone) as Outputs."""

    def __init__(self, name: str, cfg: AwsEksConfig, block_zone: pulumi.Output, parent: pulumi.Resource,
                 depends_on: List[pulumi.Resource], region: str, public_endpoint: bool = False):
        opts = pulumi.ResourceOptions(parent=parent, depends_on=depends_on)
        self.parent = parent
        #: every resource of a VPC this stack creates (none for an existing VPC): what the
        #: destroy-time leftover check must run before (cleanup.py, target.py)
        self.resources: List[pulumi.Resource] = []
        if cfg.vpc_id:
            self._existing(cfg, block_zone, public_endpoint)
        else:
            self._create(name, cfg, block_zone, opts, region)

    def _existing(self, cfg: AwsEksConfig, block_zone, public_endpoint: bool):
        self.vpc_id = pulumi.Output.from_input(cfg.vpc_id)
        self.private_subnet_ids = pulumi.Output.from_input(list(cfg.private_subnet_ids))
        self.public_subnet_ids = pulumi.Output.from_input(list(cfg.public_subnet_ids))
        zones = [aws.ec2.get_subnet_output(id=i).availability_zone for i in cfg.private_subnet_ids]
        self.gpu_subnet_id = pulumi.Output.all(block_zone, *zones).apply(
            lambda z: pick_zone_subnet(z[0], [{"id": i, "availability_zone": a}
                                              for i, a in zip(cfg.private_subnet_ids, z[1:])]))
        if public_endpoint and cfg.public_subnet_ids:
            pub = [aws.ec2.get_subnet_output(id=i).availability_zone for i in cfg.public_subnet_ids]
            pulumi.Output.all(block_zone, *pub).apply(lambda z: _warn(public_zone_warning(z[0], z[1:]),
                                                                      self.parent))

    def _create(self, name: str, cfg: AwsEksConfig, block_zone, opts, region: str):
        plan = subnet_plan(cfg.vpc_cidr, region_zones())
        zones = sorted(plan.gpu)
        vpc = aws.ec2.Vpc(f"{name}-vpc", cidr_block=cfg.vpc_cidr, enable_dns_hostnames=True,
                          enable_dns_support=True, tags={"Name": f"{name}-vpc"}, opts=opts)
        child = pulumi.ResourceOptions(parent=vpc)
        igw = aws.ec2.InternetGateway(f"{name}-igw", vpc_id=vpc.id, opts=child)
        public_rt = aws.ec2.RouteTable(f"{name}-public-rt", vpc_id=vpc.id,
                                       routes=[{"cidr_block": "0.0.0.0/0", "gateway_id": igw.id}], opts=child)
        publics = []
        for zone, cidr in plan.public.items():
            sname = f"{name}-public-{zone}"
            s = aws.ec2.Subnet(sname, vpc_id=vpc.id, cidr_block=cidr, availability_zone=zone,
                               map_public_ip_on_launch=False,
                               tags={"Name": sname, "kubernetes.io/role/elb": "1"}, opts=child)
            self.resources.append(aws.ec2.RouteTableAssociation(sname, subnet_id=s.id, route_table_id=public_rt.id,
                                                                opts=child))
            publics.append(s)
        # not a child that uses the VPC: it would not wait for the Capacity Block on its own
        eip = aws.ec2.Eip(f"{name}-nat-ip", domain="vpc",
                          opts=pulumi.ResourceOptions(parent=vpc, depends_on=[vpc]))
        nat = aws.ec2.NatGateway(f"{name}-nat", subnet_id=publics[0].id, allocation_id=eip.id,
                                 opts=pulumi.ResourceOptions(parent=vpc, depends_on=[igw]))
        private_rt = aws.ec2.RouteTable(f"{name}-private-rt", vpc_id=vpc.id,
                                        routes=[{"cidr_block": "0.0.0.0/0", "nat_gateway_id": nat.id}],
                                        opts=child)

        def private_subnet(sname: str, cidr: str, zone: str, tags: Dict[str, str]):
            s = aws.ec2.Subnet(sname, vpc_id=vpc.id, cidr_block=cidr, availability_zone=zone,
                               tags={"Name": sname, **tags}, opts=child)
            self.resources.append(aws.ec2.RouteTableAssociation(sname, subnet_id=s.id, route_table_id=private_rt.id,
                                                                opts=child))
            return s

        # the cluster's (control plane ENIs, internal load balancers) and the system nodes'
        privates = [private_subnet(f"{name}-private-{zones[i]}", cidr, zones[i],
                                   {"kubernetes.io/role/internal-elb": "1"})
                    for i, cidr in enumerate(plan.private)]
        # one per zone, fixed CIDRs: a block in another zone moves only the GPU node group
        gpus = {zone: private_subnet(f"{name}-gpu-{zone}", cidr, zone, {"kimi-k3/purpose": "gpu-nodes"})
                for zone, cidr in plan.gpu.items()}
        # S3 without the NAT's per-GB charge (module docstring); free, deleted with the VPC
        s3 = aws.ec2.VpcEndpoint(f"{name}-s3", vpc_id=vpc.id, service_name=s3_gateway_service(region),
                                 vpc_endpoint_type="Gateway", route_table_ids=[private_rt.id],
                                 tags={"Name": f"{name}-s3"}, opts=child)
        self.resources += [vpc, igw, public_rt, eip, nat, private_rt, s3, *publics, *privates, *gpus.values()]
        self.vpc_id = vpc.id
        self.zones = zones
        self.public_subnets, self.private_subnets, self.gpu_subnets = publics, privates, gpus
        self.public_subnet_ids = pulumi.Output.all(*[s.id for s in publics])
        self.private_subnet_ids = pulumi.Output.all(*[s.id for s in privates])
        ids = {zone: s.id for zone, s in gpus.items()}
        self.gpu_subnet_id = pulumi.Output.all(block_zone, pulumi.Output.all(**ids)).apply(
            lambda a: pick_gpu_subnet(a[0], a[1]))


def _warn(message: str, resource) -> None:
    if message:
        pulumi.log.warn(message, resource=resource)
