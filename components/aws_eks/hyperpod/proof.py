"""Destroy proves nothing billable of the HyperPod path is left: the cluster's nodes and the
operator's load balancers. Two dynamic resources whose work is their delete (like cleanup.py's):

- `HyperPodGone`: created before the HyperPod cluster, which depends on it, so destroy deletes
  the cluster first (aws-native waits for Cloud Control's delete) and then runs this: SageMaker
  must no longer know the cluster (DescribeCluster: ResourceNotFound). While it still does, the
  nodes it lists (ListClusterNodes, paginated) are what is still billed; at the deadline the
  destroy fails naming each instance. A cluster SageMaker lists as `Failed` is one nothing is
  deleting: a `pulumi up` whose create failed leaves it outside the stack's state (Pulumi keeps
  no record of a failed create), so the destroy that follows would wait an hour for nothing;
  it fails at once instead, naming it and the command that deletes it (kimi-k3 does not delete
  it itself: it cannot prove the cluster is its own, the name alone being no proof).
- `OperatorLoadBalancersGone`: created after the operator add-on and before the
  `InferenceEndpointConfig` (which depends on it), so destroy deletes the endpoint config first
  (the operator, still running, removes its Ingress and so its ALB) and then waits here, before
  the add-on goes, until no load balancer tagged for the cluster by the AWS Load Balancer
  Controller remains (`elbv2.k8s.aws/cluster: <cluster>`, which the controller puts on every
  load balancer it creates: kubernetes-sigs/aws-load-balancer-controller v2.13.2,
  docs/guide/ingress/annotations.md "Resource Tags"; listed with cleanup.load_balancers). On this
  path the operator's controller is the only one in the cluster, so every such load balancer is
  the operator's.

The training plan is not in the proof: it cannot be cancelled (training_plan.py), and destroy
says so when it forgets it.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional

from ...dynamic.provider import DynamicResource
from .. import aws_api
from ..cleanup import LBC_CLUSTER_TAG, Leftover, _OnDelete, load_balancers, wait_until_empty

NODES_WAIT_S = 3600.0
LB_WAIT_S = 900.0


def _code(err: Exception) -> str:
    from botocore.exceptions import ClientError

    return str(err.response.get("Error", {}).get("Code", "")) if isinstance(err, ClientError) else ""


def cluster_nodes(sm, cluster: str) -> Optional[List[Dict[str, Any]]]:
    """The cluster's nodes (ListClusterNodes, every page), or None when SageMaker does not know
    the cluster (ResourceNotFound)."""
    out: List[Dict[str, Any]] = []
    args: Dict[str, Any] = {"ClusterName": cluster}
    while True:
        try:
            page = sm.list_cluster_nodes(**args)
        except Exception as err:  # noqa: BLE001 only ResourceNotFound means "no such cluster"
            if _code(err) == "ResourceNotFound":
                return None
            raise
        out += page.get("ClusterNodeSummaries", [])
        if not page.get("NextToken"):
            return out
        args["NextToken"] = page["NextToken"]


def cluster_left(sm, cluster: str) -> List[Leftover]:
    """What is left of the HyperPod cluster: nothing once SageMaker does not know it; else the
    cluster (its status) and each node still listed (instance id, type, status)."""
    try:
        d = sm.describe_cluster(ClusterName=cluster)
    except Exception as err:  # noqa: BLE001
        if _code(err) == "ResourceNotFound":
            return []
        raise
    left = [Leftover("HyperPod cluster", cluster, d.get("ClusterStatus", ""))]
    for n in cluster_nodes(sm, cluster) or []:
        left.append(Leftover("HyperPod node", n.get("InstanceId", "?"),
                             f"{n.get('InstanceType', '')}, {(n.get('InstanceStatus') or {}).get('Status', '')}"))
    return left


def operator_load_balancers(elbv2, elb, eks_cluster: str) -> List[Leftover]:
    """Load balancers the AWS Load Balancer Controller made for `eks_cluster`."""
    return [Leftover(lb["kind"], lb["id"], lb["tags"].get("ingress.k8s.aws/stack", ""))
            for lb in load_balancers(elbv2, elb) if lb["tags"].get(LBC_CLUSTER_TAG) == eks_cluster]


#: SageMaker's ClusterStatus of a cluster whose create or update failed (botocore 1.44.8 enum:
#: Creating, Deleting, Failed, InService, RollingBack, SystemUpdating, Updating)
FAILED = "Failed"


def _delete_hint(cluster: str) -> str:
    return f"Delete it (aws sagemaker delete-cluster --cluster-name {cluster}) and run `pulumi destroy` again"


class HyperPodGoneProvider(_OnDelete):
    DIFF_KEYS = ("clusterName",)
    DEFAULT_TIMEOUT_S = NODES_WAIT_S

    def resource_id(self, p):
        return f"hyperpod-gone/{p['clusterName']}"

    def delete(self, id_, p):
        name = p["clusterName"]
        sm = aws_api.client("sagemaker", p)
        deadline = self.deadline(p, "delete").seconds

        def listing():
            left = cluster_left(sm, name)
            if left and left[0].detail == FAILED:  # nothing deletes it: no wait (module docstring)
                raise RuntimeError(
                    f"kimi-k3: HyperPod cluster {name} is in SageMaker with status Failed (left by a create or "
                    f"update that failed; not in the stack's state, so the destroy did not delete it): "
                    f"{'; '.join(x.text() for x in left)}. {_delete_hint(name)}")
            return left

        with self.progress(p).phase("hyperpod-teardown", f"HyperPod cluster {name} and its nodes "
                                    "to be gone", deadline_s=deadline) as ph:
            left = wait_until_empty(listing, deadline, ph, poll_s=self.poll_s(p))
        if left:
            raise RuntimeError(
                f"kimi-k3: HyperPod cluster {name} is still there after {deadline:g} s and billed: "
                f"{'; '.join(x.text() for x in left)}. {_delete_hint(name)}")


class OperatorLoadBalancersGoneProvider(_OnDelete):
    DIFF_KEYS = ("clusterName",)
    DEFAULT_TIMEOUT_S = LB_WAIT_S

    def resource_id(self, p):
        return f"operator-lbs-gone/{p['clusterName']}"

    def delete(self, id_, p):
        c = self.clients(p)
        deadline = self.deadline(p, "delete").seconds
        with self.progress(p).phase("lb-teardown", f"the inference operator's load balancers of cluster "
                                    f"{p['clusterName']} to be deleted", deadline_s=deadline) as ph:
            left = wait_until_empty(lambda: operator_load_balancers(c["elbv2"], c["elb"], p["clusterName"]),
                                    deadline, ph, poll_s=self.poll_s(p))
        if left:
            raise RuntimeError(
                f"kimi-k3: the inference operator's load balancer is still there after {deadline:g} s "
                f"({'; '.join(x.text() for x in left)}): delete it (EC2 console, Load Balancers) and run "
                "`pulumi destroy` again; the operator and the network cannot go before it")


class HyperPodGone(DynamicResource, module="aws", name="HyperPodGone"):
    """Destroy checks here that the HyperPod cluster and its nodes are gone (module docstring)."""

    def __init__(self, name: str, props: Mapping[str, Any], opts=None):
        super().__init__(HyperPodGoneProvider(), name, props, opts)


class OperatorLoadBalancersGone(DynamicResource, module="aws", name="OperatorLoadBalancersGone"):
    """Destroy waits here for the operator's load balancers to go (module docstring)."""

    def __init__(self, name: str, props: Mapping[str, Any], opts=None):
        super().__init__(OperatorLoadBalancersGoneProvider(), name, props, opts)
