"""The VPC: new (public subnets for load balancers, private ones for nodes, the GPU subnet pinned
to the Capacity Block's zone) or existing ids from config.

`subnet_plan` is the pure CIDR arithmetic; `Network` declares the resources. Nothing is exposed
to the internet except through a load balancer in a public subnet (nodes have no public IPs).
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Dict, List, Sequence

import pulumi
import pulumi_aws as aws

from ..inference.errors import ConfigError
from .config import AwsEksConfig


@dataclass(frozen=True)
class SubnetPlan:
    public: tuple  # two /20s (load balancers, NAT)
    private: tuple  # two /19s (system nodes, control plane ENIs)
    gpu: str  # one /18 in the block's zone (pods of GPU nodes take VPC IPs)


def subnet_plan(vpc_cidr: str) -> SubnetPlan:
    """Carve a /16 into non-overlapping public, private and GPU subnets."""
    net = ipaddress.ip_network(vpc_cidr)
    if net.prefixlen != 16:
        raise ValueError("expected a /16")
    quarters = list(net.subnets(new_prefix=18))  # 4 x /18
    publics = list(quarters[0].subnets(new_prefix=20))[:2]
    privates = list(quarters[1].subnets(new_prefix=19))
    return SubnetPlan(tuple(map(str, publics)), tuple(map(str, privates)), str(quarters[2]))


def pick_zone_subnet(block_zone: str, subnets: Sequence[Dict[str, str]]) -> str:
    """The id of a subnet in `block_zone`, or ConfigError (existing VPCs)."""
    for s in subnets:
        if s["availability_zone"] == block_zone:
            return s["id"]
    raise ConfigError("kimi-k3:privateSubnetIds", [s["id"] for s in subnets],
                      f"add a private subnet in {block_zone}, the Capacity Block's zone",
                      f"has no subnet in {block_zone}")


class Network:
    """`vpc_id`, `public_subnet_ids`, `private_subnet_ids`, `gpu_subnet_id` as Outputs."""

    def __init__(self, name: str, cfg: AwsEksConfig, block_zone: pulumi.Output, parent: pulumi.Resource,
                 depends_on: List[pulumi.Resource]):
        opts = pulumi.ResourceOptions(parent=parent, depends_on=depends_on)
        if cfg.vpc_id:
            self._existing(cfg, block_zone)
        else:
            self._create(name, cfg, block_zone, opts)

    def _existing(self, cfg: AwsEksConfig, block_zone):
        self.vpc_id = pulumi.Output.from_input(cfg.vpc_id)
        self.private_subnet_ids = pulumi.Output.from_input(list(cfg.private_subnet_ids))
        self.public_subnet_ids = pulumi.Output.from_input(list(cfg.public_subnet_ids))
        zones = [aws.ec2.get_subnet_output(id=i).availability_zone for i in cfg.private_subnet_ids]
        self.gpu_subnet_id = pulumi.Output.all(block_zone, *zones).apply(
            lambda z: pick_zone_subnet(z[0], [{"id": i, "availability_zone": a}
                                              for i, a in zip(cfg.private_subnet_ids, z[1:])]))

    def _create(self, name: str, cfg: AwsEksConfig, block_zone, opts):
        plan = subnet_plan(cfg.vpc_cidr)
        zones = aws.get_availability_zones_output(state="available").names
        vpc = aws.ec2.Vpc(f"{name}-vpc", cidr_block=cfg.vpc_cidr, enable_dns_hostnames=True,
                          enable_dns_support=True, tags={"Name": f"{name}-vpc"}, opts=opts)
        child = pulumi.ResourceOptions(parent=vpc)
        igw = aws.ec2.InternetGateway(f"{name}-igw", vpc_id=vpc.id, opts=child)
        public_rt = aws.ec2.RouteTable(f"{name}-public-rt", vpc_id=vpc.id,
                                       routes=[{"cidr_block": "0.0.0.0/0", "gateway_id": igw.id}], opts=child)
        publics = []
        for i, cidr in enumerate(plan.public):
            s = aws.ec2.Subnet(f"{name}-public-{i}", vpc_id=vpc.id, cidr_block=cidr,
                               availability_zone=zones[i], map_public_ip_on_launch=False,
                               tags={"Name": f"{name}-public-{i}", "kubernetes.io/role/elb": "1"}, opts=child)
            aws.ec2.RouteTableAssociation(f"{name}-public-{i}", subnet_id=s.id, route_table_id=public_rt.id,
                                          opts=child)
            publics.append(s)
        eip = aws.ec2.Eip(f"{name}-nat-ip", domain="vpc", opts=child)
        nat = aws.ec2.NatGateway(f"{name}-nat", subnet_id=publics[0].id, allocation_id=eip.id,
                                 opts=pulumi.ResourceOptions(parent=vpc, depends_on=[igw]))
        private_rt = aws.ec2.RouteTable(f"{name}-private-rt", vpc_id=vpc.id,
                                        routes=[{"cidr_block": "0.0.0.0/0", "nat_gateway_id": nat.id}],
                                        opts=child)
        privates = []
        specs = [(f"{name}-private-{i}", cidr, zones[i]) for i, cidr in enumerate(plan.private)]
        specs.append((f"{name}-gpu", plan.gpu, block_zone))  # pinned to the Capacity Block's zone
        for sname, cidr, zone in specs:
            s = aws.ec2.Subnet(sname, vpc_id=vpc.id, cidr_block=cidr, availability_zone=zone,
                               tags={"Name": sname, "kubernetes.io/role/internal-elb": "1"}, opts=child)
            aws.ec2.RouteTableAssociation(sname, subnet_id=s.id, route_table_id=private_rt.id, opts=child)
            privates.append(s)
        self.vpc_id = vpc.id
        self.public_subnet_ids = pulumi.Output.all(*[s.id for s in publics])
        self.private_subnet_ids = pulumi.Output.all(*[s.id for s in privates])
        self.gpu_subnet_id = privates[-1].id
