"""`pulumi destroy` order on aws-eks, from the dependency graph the real program registers under
the mock engine (components/offline/runner.py records each resource's dependencies and parent).

Pulumi deletes a resource before everything it depends on, and a child before its parent. So the
leftover check (LeftoverCheck: load balancers, ENIs, volumes, security groups still tagged for the
cluster) runs after the cluster is gone and before the VPC, its subnets and its NAT gateway are
deleted: a leftover is reported by name, never first seen as a DependencyViolation on a subnet.
"""

from typing import Dict, Set

import pytest

from components.offline.runner import run_program

CR = "cr-0123456789abcdef0"
CHECK = "kimi-k3-leftovers"
NETWORK_TYPES = ("aws:ec2/vpc:Vpc", "aws:ec2/subnet:Subnet", "aws:ec2/natGateway:NatGateway",
                 "aws:ec2/internetGateway:InternetGateway", "aws:ec2/routeTable:RouteTable",
                 "aws:ec2/routeTableAssociation:RouteTableAssociation", "aws:ec2/eip:Eip",
                 "aws:ec2/vpcEndpoint:VpcEndpoint")


@pytest.fixture(scope="module", params=["clusterip", "loadbalancer"])
def run(request):
    extra = {"kimi-k3:allowedCidrs": "203.0.113.0/24", "kimi-k3:tlsDomain": "k3.example.com"} \
        if request.param == "loadbalancer" else {}
    return run_program("aws-eks", {"kimi-k3:capacityReservationId": CR,
                                   "kimi-k3:apiAccessCidrs": "198.51.100.7/32", **extra})


def before(run) -> Dict[str, Set[str]]:
    """name -> every resource destroy deletes after it (its dependencies and ancestors, transitively)."""
    direct = {r["name"]: set(r["dependencies"]) | ({r["parent"]} if r["parent"] else set())
              for r in run.resources}
    out: Dict[str, Set[str]] = {}

    def walk(n: str) -> Set[str]:
        if n not in out:
            out[n] = set()
            for d in direct.get(n, ()):
                out[n] |= {d} | walk(d)
        return out[n]

    for n in direct:
        walk(n)
    return out


def names(run, *types):
    return {r["name"] for r in run.resources if r["type"] in types}


def test_the_leftover_check_runs_before_any_subnet_or_the_vpc_is_deleted(run):
    after_check = before(run)[CHECK]
    network = names(run, *NETWORK_TYPES)
    assert names(run, "aws:ec2/subnet:Subnet") and names(run, "aws:ec2/vpc:Vpc")
    assert network <= after_check, sorted(network - after_check)


def test_the_cluster_and_everything_on_it_go_before_the_check(run):
    order = before(run)
    on_cluster = {n for n, deps in order.items() if "kimi-k3-eks" in deps} | {"kimi-k3-eks"}
    assert "kimi-k3-gpu-nodes" in on_cluster or any("gpu" in n for n in on_cluster)
    assert all(CHECK in order[n] for n in on_cluster), sorted(n for n in on_cluster if CHECK not in order[n])
    lb = names(run, "pulumi-python:dynamic/aws:LoadBalancerGone")
    assert all(CHECK in order[n] for n in lb)


def test_nothing_else_in_the_vpc_outlives_the_check(run):
    """Every resource that uses the network (transitively) is deleted before the check runs,
    except the network itself and the check: so when the check runs only the VPC's own
    resources are left."""
    order = before(run)
    network = names(run, *NETWORK_TYPES)
    users = {n for n, deps in order.items() if deps & network} - network - {CHECK}
    late = sorted(n for n in users if CHECK not in order[n])
    assert users and not late, late


def test_an_existing_vpc_has_nothing_of_ours_to_order():
    run = run_program("aws-eks", {"kimi-k3:capacityReservationId": CR, "kimi-k3:privateApi": "true",
                                  "kimi-k3:vpcId": "vpc-0123456789abcdef0",
                                  "kimi-k3:privateSubnetIds": '["subnet-0123456789abcdef0", "subnet-0123456789abcdef1"]'})
    assert not names(run, *NETWORK_TYPES)
    assert CHECK in before(run)["kimi-k3-eks"]
