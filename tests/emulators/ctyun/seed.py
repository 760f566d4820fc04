"""Plant another stack's (or person's) resources in the same account, for ownership tests.

`seed_foreign` makes, owned by "foreign:<owner>", what a second `pulumi up` of the same program
by someone else would hold: a VPC (names are unique per account, so the stack under test can
no longer take that name), a subnet, a security group and a running cluster with its master,
compute nodes and default queue. Nothing here goes through the API: the stack under test must
find these only by listing, and `report()["foreignTouched"]` shows any call that used or
changed one of them.
"""

from __future__ import annotations

from typing import Any, Dict, Optional

from . import catalog
from .ehpc_ops import _new_node
from .state import Cluster, Queue, State, Subnet, Vpc, new_id


def seed_foreign(st: State, owner: str = "other-stack", vpc_name: Optional[str] = None,
                 subnet_name: Optional[str] = None, sg_name: Optional[str] = None,
                 cluster_name: Optional[str] = None, compute_nodes: int = 1,
                 vpc_id: Optional[str] = None, cidr: str = "10.8.0.0/16") -> Dict[str, Any]:
    """Returns the ids it made. `vpc_id` puts the group/cluster in an existing VPC instead."""
    tag = f"foreign:{owner}"
    out: Dict[str, Any] = {"owner": tag}
    if vpc_name:
        if any(v.name == vpc_name for v in st.vpcs.values()):
            raise ValueError(f"a VPC named {vpc_name} exists already")
        vpc_id = new_id("vpc-", 10)
        st.vpcs[vpc_id] = Vpc(vpc_id, vpc_name, cidr, "", tag)
        out["vpcID"] = vpc_id
    vpc = st.vpcs.get(vpc_id or "")
    if vpc is None and (subnet_name or sg_name or cluster_name):
        raise ValueError("give vpc_name (a new VPC) or vpc_id (an existing one)")
    subnet = None
    if subnet_name or cluster_name:
        sid = new_id("subnet-", 10)
        net = vpc.cidr.split("/")[0].rsplit(".", 2)[0]
        used = sum(1 for s in st.subnets.values() if s.vpc == vpc.id)
        subnet = Subnet(sid, subnet_name or f"{owner}-subnet", vpc.id,
                        f"{net}.{100 + used}.0/24", 0, "", tag)
        st.subnets[sid] = subnet
        out["subnetID"] = sid
    group = None
    if sg_name or cluster_name:
        gid = new_id("sg-", 10)
        group = st.new_group(gid, sg_name or f"{owner}-sg", vpc.id, "", tag)
        st.groups[gid] = group
        out["securityGroupID"] = gid
    if cluster_name:
        c = Cluster(new_id("cl-", 28), cluster_name, catalog.AZ, vpc.id, group.id, tag,
                    status="available")
        st.clusters[c.uuid] = c
        q = Queue(new_id("pt-", 28), c.uuid, "batch", True, status="enabled")
        st.queues[q.uuid] = q
        nodes = [_new_node(st, c, 0, "VM", catalog.SPEC_MASTER_VM, subnet, None, True)]
        nodes += [_new_node(st, c, 1, "BMS", catalog.SPEC_910C, subnet, q.name, True)
                  for _ in range(compute_nodes)]
        for n in nodes:
            n.status, n.scheduler = "running", "idle"
        out.update(clusterUUID=c.uuid, queueUUID=q.uuid, nodeUUIDs=[n.uuid for n in nodes])
    return out
