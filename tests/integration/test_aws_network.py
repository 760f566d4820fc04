"""The network survives the next block in another zone, and the public endpoint reaches the
block's zone (issue 9 items 2 and 5; components/aws_eks/network.py says why).

The real program under the mock engine, twice: once with a block in us-east-2b, once with the
next block in us-east-2c (components/aws_eks/mock_outputs.py MOCK_BLOCK_ZONES). Equal inputs
mean Pulumi has nothing to change: the cluster, the system nodes and every subnet keep theirs;
only the GPU node group and its launch template move.
"""

import ipaddress

import pytest

from components.aws_eks import mock_outputs as mo
from components.offline.runner import run_program

FIRST, NEXT = "cr-0123456789abcdef0", "cr-0c0c0c0c0c0c0c0c0"
BASE = {"kimi-k3:apiAccessCidrs": "198.51.100.7/32", "kimi-k3:allowedCidrs": "203.0.113.0/24",
        "kimi-k3:allowPlaintext": "true"}


@pytest.fixture(scope="module")
def runs():
    return (run_program("aws-eks", {**BASE, "kimi-k3:capacityReservationId": FIRST}),
            run_program("aws-eks", {**BASE, "kimi-k3:capacityReservationId": NEXT}))


def by_name(run, type_token):
    return {r["name"]: r["inputs"] for r in run.of_type(type_token)}


def test_the_mocked_blocks_are_in_two_zones(runs):
    zones = [next(r["inputs"] for r in run.of_type("aws:ec2/subnet:Subnet")
                  if r["name"] == f"kimi-k3-gpu-{z}")["availabilityZone"] for run, z in
             zip(runs, ("us-east-2b", "us-east-2c"))]
    assert zones == ["us-east-2b", "us-east-2c"]
    assert mo.MOCK_BLOCK_ZONES[NEXT] == "us-east-2c" != mo.MOCK_BLOCK_ZONE


def test_the_next_block_elsewhere_changes_neither_subnets_nor_cluster_nor_system_nodes(runs):
    first, nxt = runs
    assert by_name(first, "aws:ec2/subnet:Subnet") == by_name(nxt, "aws:ec2/subnet:Subnet")
    assert by_name(first, "aws:ec2/vpc:Vpc") == by_name(nxt, "aws:ec2/vpc:Vpc")
    assert by_name(first, "eks:index:Cluster") == by_name(nxt, "eks:index:Cluster")
    ng1, ng2 = by_name(first, "aws:eks/nodeGroup:NodeGroup"), by_name(nxt, "aws:eks/nodeGroup:NodeGroup")
    assert ng1["kimi-k3-system"] == ng2["kimi-k3-system"]
    # only the GPU node group and its launch template move
    assert ng1["kimi-k3-gpu"]["subnetIds"] == ["kimi-k3-gpu-us-east-2b-id"]
    assert ng2["kimi-k3-gpu"]["subnetIds"] == ["kimi-k3-gpu-us-east-2c-id"]
    assert {k: v for k, v in ng1["kimi-k3-gpu"].items() if k != "subnetIds"} == \
        {k: v for k, v in ng2["kimi-k3-gpu"].items() if k != "subnetIds"}
    lt1, lt2 = by_name(first, "aws:ec2/launchTemplate:LaunchTemplate"), by_name(nxt, "aws:ec2/launchTemplate:LaunchTemplate")
    target = lambda lt: lt["kimi-k3-gpu-lt"]["capacityReservationSpecification"]["capacityReservationTarget"]
    assert target(lt1) == {"capacityReservationId": FIRST} and target(lt2) == {"capacityReservationId": NEXT}


def test_gpu_subnets_are_neither_cluster_nor_system_subnets(runs):
    first = runs[0]
    subnets = by_name(first, "aws:ec2/subnet:Subnet")
    gpu_ids = {f"{n}-id" for n in subnets if n.startswith("kimi-k3-gpu-")}
    assert len(gpu_ids) == len(mo.MOCK_ZONES)  # one per zone, up front
    c = next(iter(by_name(first, "eks:index:Cluster").values()))
    system = by_name(first, "aws:eks/nodeGroup:NodeGroup")["kimi-k3-system"]
    assert not gpu_ids & set(c["privateSubnetIds"] + c["publicSubnetIds"] + system["subnetIds"])
    zones = {subnets[i[:-3]]["availabilityZone"] for i in c["privateSubnetIds"]}
    assert len(zones) == 2  # EKS: cluster subnets in at least two zones


def test_a_public_subnet_in_the_blocks_zone_even_outside_the_system_zones(runs):
    nxt = runs[1]
    subnets = by_name(nxt, "aws:ec2/subnet:Subnet")
    system_zones = {subnets[i[:-3]]["availabilityZone"]
                    for i in by_name(nxt, "aws:eks/nodeGroup:NodeGroup")["kimi-k3-system"]["subnetIds"]}
    assert "us-east-2c" not in system_zones  # the block is where no system node is
    public = [s for s in subnets.values() if s["tags"].get("kubernetes.io/role/elb") == "1"]
    assert sorted(s["availabilityZone"] for s in public) == mo.MOCK_ZONES
    assert all(s["mapPublicIpOnLaunch"] is False for s in public)


def test_cidrs_are_disjoint_inside_the_vpc_and_fixed_by_zone_letter(runs):
    subnets = by_name(runs[0], "aws:ec2/subnet:Subnet")
    nets = [ipaddress.ip_network(s["cidrBlock"]) for s in subnets.values()]
    vpc = ipaddress.ip_network("10.0.0.0/16")
    assert all(n.subnet_of(vpc) for n in nets)
    assert not any(a.overlaps(b) for i, a in enumerate(nets) for b in nets[i + 1:])
    assert subnets["kimi-k3-gpu-us-east-2c"]["cidrBlock"] == "10.0.128.0/19"


def test_an_existing_vpc_without_a_public_subnet_in_the_blocks_zone_is_warned_about():
    run = run_program("aws-eks", {
        **BASE, "kimi-k3:capacityReservationId": FIRST, "kimi-k3:vpcId": "vpc-0123456789abcdef0",
        "kimi-k3:privateSubnetIds": "subnet-0123456789abcdef0,subnet-0123456789abcdef1",
        "kimi-k3:publicSubnetIds": "subnet-0123456789abcdef0,subnet-0123456789abcdef2"})  # zones a, c
    assert any("kimi-k3:publicSubnetIds has no subnet in us-east-2b" in w for w in run.warnings)


@pytest.mark.parametrize("config", [{}, {"kimi-k3:serving": "hyperpod",
                                         "kimi-k3:apiKey": "kk3-hyperpod-key-0123456789abcdefghij"}],
                         ids=["eks", "hyperpod end to end"])
def test_s3_goes_through_a_gateway_endpoint_on_the_nodes_route_table_not_the_nat(config):
    """The weights (1.56 TB written once, read back by every GPU node on each cold start) and
    the operator's certificates bypass the NAT gateway's per-GB charge (network.py docstring)."""
    run = run_program("aws-eks", {"kimi-k3:apiAccessCidrs": "198.51.100.7/32", **config})
    endpoints = list(run.of_type("aws:ec2/vpcEndpoint:VpcEndpoint"))
    assert len(endpoints) == 1
    ep = endpoints[0]["inputs"]
    assert (ep["serviceName"], ep["vpcEndpointType"]) == ("com.amazonaws.us-east-2.s3", "Gateway")
    tables = {r["name"]: r for r in run.of_type("aws:ec2/routeTable:RouteTable")}
    nat_routed = [r for r in tables.values() if any(x.get("natGatewayId") for x in r["inputs"]["routes"])]
    assert len(nat_routed) == 1 and nat_routed[0]["name"] == "kimi-k3-private-rt"
    # the private route table (system, GPU and HyperPod nodes) and only it (mock ids: `<name>-id`)
    assert ep["routeTableIds"] == ["kimi-k3-private-rt-id"] and ep["vpcId"] == "kimi-k3-vpc-id"


def test_an_existing_vpc_gets_no_endpoint_its_routes_are_yours():
    run = run_program("aws-eks", {**BASE, "kimi-k3:capacityReservationId": FIRST, "kimi-k3:vpcId": "vpc-0123456789abcdef0",
                                  "kimi-k3:privateSubnetIds": "subnet-0123456789abcdef0,subnet-0123456789abcdef1",
                                  "kimi-k3:publicSubnetIds": "subnet-0123456789abcdef2"})
    assert not list(run.of_type("aws:ec2/vpcEndpoint:VpcEndpoint"))
