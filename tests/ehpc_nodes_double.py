"""EhpcNodesDouble: a test double of the E-HPC client (`components.ctyun_hcc.api.ehpc.Ehpc`) for
the node calls a shrink makes, answering from memory instead of over HTTP.

Built from the outside contract the client implements (CTyun E-HPC OpenAPI documents, as cited
in components/ctyun_hcc/api/ehpc.py): `hpc/list-clusters` (doc 23928, via `get_cluster`),
`hpc/list-nodes` (23938: nodeRole 0 master / 1 compute, nodeStatus), `hpc/shrink-cluster`
(23932: 1-10 compute nodeUUIDs, answers a jobUUID) and `query-job-result` (23926: `success`
when done). A shrink's nodes go at once (the HTTP emulator in tests/emulators/ctyun models the
job's duration). `calls` records every call in order, so a test can prove what came before the
shrink; `on_shrink(names)` lets a test act as E-HPC does on the nodes (e.g. take them out of
the local Slurm's partition). bench/ctyun_day2.py uses it too, for the shrink figure, on the
same terms: a double of the one thing (E-HPC's API) the local services cannot provide.
"""

from __future__ import annotations

from typing import Callable, List, Optional, Sequence, Tuple

from components.ctyun_hcc.api.ehpc import ROLE_COMPUTE, ROLE_MASTER, Cluster, Node


def node(name: str, ip: str, role: int = ROLE_COMPUTE, status: str = "running") -> Node:
    return Node(f"nd-{name}", name, role, "BMS", status, ip, None, "batch", "subnet-x", "spec")


class EhpcNodesDouble:
    """See the module docstring. `nodes`: (name, inner IP) pairs, the first one the master."""

    region_id = "cn-test"

    def __init__(self, nodes: Sequence[Tuple[str, str]], name: str = "kk3-test",
                 on_shrink: Optional[Callable[[List[str]], None]] = None):
        self.cluster = Cluster("cl-double", name, "az1", "vpc-x", "sg-x", None, "available",
                               nodes[0][1], "198.51.100.10", len(nodes) - 1, 0, None)
        self.nodes = [node(n, ip, ROLE_MASTER if i == 0 else ROLE_COMPUTE)
                      for i, (n, ip) in enumerate(nodes)]
        self.on_shrink = on_shrink
        self.calls: List[str] = []

    def get_cluster(self, cluster_uuid: str, deadline=None) -> Optional[Cluster]:
        self.calls.append("get_cluster")
        return self.cluster if cluster_uuid == self.cluster.uuid else None

    def list_nodes(self, az_name: str, cluster_uuid: str, deadline=None,
                   node_uuids: Sequence[str] = ()) -> List[Node]:
        self.calls.append("list_nodes")
        return list(self.nodes)

    def shrink_cluster(self, az_name: str, cluster_uuid: str, node_uuids: Sequence[str],
                       deadline=None) -> str:
        if not 1 <= len(node_uuids) <= 10:  # the documented batch (rules.SHRINK_BATCH)
            raise ValueError(f"shrink-cluster takes 1-10 nodes, got {len(node_uuids)}")
        names = [n.name for n in self.nodes if n.uuid in node_uuids]
        self.calls.append("shrink_cluster " + ",".join(names))
        if self.on_shrink:
            self.on_shrink(names)
        self.nodes = [n for n in self.nodes if n.uuid not in node_uuids]
        return f"job-{len(self.calls)}"

    def job_status(self, job_uuid: str, deadline=None) -> str:
        return "success"
