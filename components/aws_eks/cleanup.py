"""Destroy leaves nothing behind: the Service's load balancer is gone before the network is, and
whatever is still tagged for the cluster afterwards is listed, loudly.

Two dynamic resources whose work happens on `delete`:
- `LoadBalancerGone`: created before the `LoadBalancer` Service (which depends on it), after the
  cluster. On destroy the Service is deleted first (Kubernetes' service controller then deletes
  its NLB), then this waits, bounded, until no load balancer tagged for that Service remains,
  and only then lets the cluster and the network go. A load balancer still there at the
  deadline fails the destroy naming it (a VPC cannot be deleted under it anyway).
- `LeftoverCheck`: depends on the VPC's resources (subnets, NAT gateway, route tables) and the
  cluster depends on it (target.py), so destroy runs it after the cluster is gone and before any
  subnet is deleted: a leftover is named here, not met as a subnet's DependencyViolation.
  It lists load balancers (ELBv2 and classic), network interfaces, EBS volumes and security
  groups still tagged for this cluster; it retries a few minutes (EKS and the VPC CNI clean up
  asynchronously), then fails the destroy with every id, the way to remove them and how to
  accept them. Nothing is deleted by kimi-k3 here: these are not resources this stack created.

Tags (what Kubernetes' AWS cloud provider and the EKS add-ons put on what they create, as
documented for them: kubernetes/cloud-provider-aws `kubernetes.io/cluster/<cluster>=owned` and
`kubernetes.io/service-name=<namespace>/<name>` on service load balancers and their security
groups; the AWS Load Balancer Controller `elbv2.k8s.aws/cluster` and `service.k8s.aws/stack`;
the VPC CNI `cluster.k8s.amazonaws.com/name` on the ENIs it creates; the EBS CSI driver
`kubernetes.io/cluster/<cluster>` and `KubernetesCluster` on volumes). Only documented filters
are used: `tag-key` / `tag:<key>` on DescribeNetworkInterfaces, DescribeVolumes and
DescribeSecurityGroups; load balancers are listed and their tags read with DescribeTags (at most
20 per call, as documented).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterable, List, Mapping

from pulumi.dynamic import CreateResult

from ..dynamic.provider import DynamicResource
from . import aws_api

CLUSTER_TAG_PREFIX = "kubernetes.io/cluster/"
SERVICE_TAG = "kubernetes.io/service-name"
LBC_CLUSTER_TAG = "elbv2.k8s.aws/cluster"
LBC_SERVICE_TAG = "service.k8s.aws/stack"
CNI_CLUSTER_TAG = "cluster.k8s.amazonaws.com/name"
EBS_CLUSTER_TAG = "KubernetesCluster"
TAG_BATCH = 20
LB_WAIT_S = 900.0
LEFTOVER_WAIT_S = 600.0
POLL_S = 15.0


@dataclass(frozen=True)
class Leftover:
    kind: str  # "load balancer", "classic load balancer", "network interface", "EBS volume", "security group"
    id: str
    detail: str = ""

    def text(self) -> str:
        return f"{self.kind} {self.id}" + (f" ({self.detail})" if self.detail else "")


def _tags(pairs: Iterable[Mapping[str, str]]) -> Dict[str, str]:
    return {t.get("Key", ""): t.get("Value", "") for t in pairs or []}


def for_cluster(tags: Mapping[str, str], cluster: str) -> bool:
    return (CLUSTER_TAG_PREFIX + cluster) in tags or tags.get(LBC_CLUSTER_TAG) == cluster \
        or tags.get(CNI_CLUSTER_TAG) == cluster or tags.get(EBS_CLUSTER_TAG) == cluster


def for_service(tags: Mapping[str, str], cluster: str, namespace: str, service: str) -> bool:
    ref = f"{namespace}/{service}"
    return for_cluster(tags, cluster) and (tags.get(SERVICE_TAG) == ref or tags.get(LBC_SERVICE_TAG) == ref)


# ---------------------------------------------------------------- listings (clients passed in)

def _batches(items: List[str], n: int = TAG_BATCH):
    for i in range(0, len(items), n):
        yield items[i:i + n]


def load_balancers(elbv2, elb) -> List[Dict[str, Any]]:
    """Every ELBv2 and classic load balancer of the region with its tags: [{kind, id, name, tags}]."""
    out: List[Dict[str, Any]] = []
    lbs, marker = [], None
    while True:
        page = elbv2.describe_load_balancers(**({"Marker": marker} if marker else {}))
        lbs += page.get("LoadBalancers", [])
        marker = page.get("NextMarker")
        if not marker:
            break
    arns = [lb["LoadBalancerArn"] for lb in lbs]
    names = {lb["LoadBalancerArn"]: lb.get("LoadBalancerName", "") for lb in lbs}
    for batch in _batches(arns):
        for d in elbv2.describe_tags(ResourceArns=batch).get("TagDescriptions", []):
            out.append({"kind": "load balancer", "id": d["ResourceArn"], "name": names.get(d["ResourceArn"], ""),
                        "tags": _tags(d.get("Tags"))})
    classic, marker = [], None
    while True:
        page = elb.describe_load_balancers(**({"Marker": marker} if marker else {}))
        classic += [lb["LoadBalancerName"] for lb in page.get("LoadBalancerDescriptions", [])]
        marker = page.get("NextMarker")
        if not marker:
            break
    for batch in _batches(classic):
        for d in elb.describe_tags(LoadBalancerNames=batch).get("TagDescriptions", []):
            out.append({"kind": "classic load balancer", "id": d["LoadBalancerName"], "name": d["LoadBalancerName"],
                        "tags": _tags(d.get("Tags"))})
    return out


def service_load_balancers(elbv2, elb, cluster: str, namespace: str, service: str) -> List[Leftover]:
    return [Leftover(lb["kind"], lb["id"], f"Service {namespace}/{service}")
            for lb in load_balancers(elbv2, elb) if for_service(lb["tags"], cluster, namespace, service)]


def _paged(call, key: str, **args) -> List[Dict[str, Any]]:
    out: List[Dict[str, Any]] = []
    while True:
        page = call(**args)
        out += page.get(key, [])
        token = page.get("NextToken")
        if not token:
            return out
        args["NextToken"] = token


def _ec2_tag_filters(cluster: str) -> List[List[Dict[str, Any]]]:
    """One filter list per tag convention (EC2 ANDs filters, so each is its own query)."""
    return [[{"Name": "tag-key", "Values": [CLUSTER_TAG_PREFIX + cluster]}],
            [{"Name": f"tag:{CNI_CLUSTER_TAG}", "Values": [cluster]}],
            [{"Name": f"tag:{EBS_CLUSTER_TAG}", "Values": [cluster]}]]


def leftovers(ec2, elbv2, elb, cluster: str) -> List[Leftover]:
    """Everything still tagged for `cluster` in the region."""
    found: Dict[str, Leftover] = {}
    for lb in load_balancers(elbv2, elb):
        if for_cluster(lb["tags"], cluster):
            found[lb["id"]] = Leftover(lb["kind"], lb["id"], lb["tags"].get(SERVICE_TAG, ""))
    for filters in _ec2_tag_filters(cluster):
        for eni in _paged(ec2.describe_network_interfaces, "NetworkInterfaces", Filters=filters):
            found[eni["NetworkInterfaceId"]] = Leftover("network interface", eni["NetworkInterfaceId"],
                                                        eni.get("Status", ""))
        for vol in _paged(ec2.describe_volumes, "Volumes", Filters=filters):
            found[vol["VolumeId"]] = Leftover("EBS volume", vol["VolumeId"],
                                              f"{vol.get('State', '')}, {vol.get('Size', '?')} GiB")
        for sg in _paged(ec2.describe_security_groups, "SecurityGroups", Filters=filters):
            found[sg["GroupId"]] = Leftover("security group", sg["GroupId"], sg.get("GroupName", ""))
    return sorted(found.values(), key=lambda x: (x.kind, x.id))


def wait_until_empty(listing: Callable[[], List[Leftover]], deadline_s: float, phase,
                     clock: Callable[[], float] = time.monotonic,
                     sleep: Callable[[float], None] = time.sleep, poll_s: float = POLL_S) -> List[Leftover]:
    """Poll `listing` until it is empty or `deadline_s` passes; what is left (empty = clean)."""
    end = clock() + deadline_s
    while True:
        left = listing()
        if not left:
            return []
        phase.update(f"{len(left)} left: " + "; ".join(x.text() for x in left[:5]))
        if clock() + poll_s > end:
            return left
        sleep(poll_s)


# ---------------------------------------------------------------- the dynamic providers

def _clients(p: Mapping[str, Any]):
    sess = aws_api.session(p)
    return {s: aws_api.client(s, p, sess=sess) for s in ("ec2", "elbv2", "elb")}


class _OnDelete(aws_api.AwsProvider):
    """A resource whose work is its delete: create and read only record the inputs; a change
    of `DIFF_KEYS` replaces it (create before delete); `waitS` bounds the delete."""

    REPLACE_ALL = True
    DELETE_BEFORE_REPLACE = False
    TIMEOUT_INPUTS = {"delete": "waitS"}
    clients = staticmethod(_clients)

    def create(self, props):
        return CreateResult(self.resource_id(props), props)

    def poll_s(self, p: Mapping[str, Any]) -> float:
        return float(p.get("pollS") or POLL_S)


class LoadBalancerGoneProvider(_OnDelete):
    DIFF_KEYS = ("clusterName", "namespace", "serviceName")
    DEFAULT_TIMEOUT_S = LB_WAIT_S

    def resource_id(self, p):
        return f"{p['clusterName']}/{p['namespace']}/{p['serviceName']}"

    def delete(self, id_, p):
        c = self.clients(p)
        deadline = self.deadline(p, "delete").seconds
        with self.progress(p).phase("lb-teardown", f"the load balancer of Service {p['namespace']}/"
                                    f"{p['serviceName']} to be deleted by Kubernetes",
                                    deadline_s=deadline) as ph:
            left = wait_until_empty(lambda: service_load_balancers(c["elbv2"], c["elb"], p["clusterName"],
                                                                   p["namespace"], p["serviceName"]),
                                    deadline, ph, poll_s=self.poll_s(p))
            if left:
                raise RuntimeError(
                    f"kimi-k3: the load balancer of Service {p['namespace']}/{p['serviceName']} is still there "
                    f"after {deadline:g} s ({'; '.join(x.text() for x in left)}): delete it (EC2 console, Load "
                    "Balancers) and run `pulumi destroy` again; the network cannot be deleted under it")


class LeftoverCheckProvider(_OnDelete):
    DIFF_KEYS = ("clusterName",)
    DEFAULT_TIMEOUT_S = LEFTOVER_WAIT_S

    def resource_id(self, p):
        return f"leftovers/{p['clusterName']}"

    def delete(self, id_, p):
        c = self.clients(p)
        deadline = self.deadline(p, "delete").seconds
        with self.progress(p).phase("leftover-check", f"nothing tagged for cluster {p['clusterName']} "
                                    "to remain", deadline_s=deadline) as ph:
            left = wait_until_empty(lambda: leftovers(c["ec2"], c["elbv2"], c["elb"], p["clusterName"]),
                                    deadline, ph, poll_s=self.poll_s(p))
        if left:
            raise RuntimeError(
                f"kimi-k3: {len(left)} AWS resource(s) tagged for cluster {p['clusterName']} remain after destroy "
                f"and are billed: {'; '.join(x.text() for x in left)}. They were made by Kubernetes or its add-ons, "
                "not by this stack, so kimi-k3 does not delete them: delete them in the EC2 console and run "
                "`pulumi destroy` again (or accept them: pulumi state delete the LeftoverCheck resource)")


class LoadBalancerGone(DynamicResource, module="aws", name="LoadBalancerGone"):
    """Destroy waits here until the Service's load balancer is gone (see the module docstring)."""

    def __init__(self, name: str, props: Dict[str, Any], opts=None):
        super().__init__(LoadBalancerGoneProvider(), name, props, opts)


class LeftoverCheck(DynamicResource, module="aws", name="LeftoverCheck"):
    """Deleted last: lists what is still tagged for the cluster (see the module docstring)."""

    def __init__(self, name: str, props: Dict[str, Any], opts=None):
        super().__init__(LeftoverCheckProvider(), name, props, opts)
