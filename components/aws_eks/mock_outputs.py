"""Outputs AWS would compute, for the offline plan command and tests under Pulumi's mock engine.

Only what the aws-eks program reads back: the Capacity Block (dynamic resource), the zones, the
EKS-managed cluster security group, pulumi-eks's kubeconfig (a remote component), the node
group's Auto Scaling group and the load balancer's host name. Values are obviously fake
(`mock` in them) so nobody mistakes a plan for a deployment.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from typing import Any, Callable, Dict, Mapping

from .hyperpod import mock_outputs as _hyperpod

MOCK_ZONES = ["us-east-2a", "us-east-2b", "us-east-2c"]
MOCK_BLOCK_ZONE = "us-east-2b"
#: adopted reservation ids whose mocked block is elsewhere (tests of the next block in another
#: zone, and of a block outside the zones of the system subnets)
MOCK_BLOCK_ZONES = {"cr-0c0c0c0c0c0c0c0c0": "us-east-2c"}


def _next_block_start(now: datetime) -> datetime:
    """Blocks start at 11:30 UTC: the next one after a day from now (a block in the future)."""
    start = (now + timedelta(days=1)).replace(hour=11, minute=30, second=0, microsecond=0)
    return start


def capacity_block(inputs: Mapping[str, Any]) -> Dict[str, Any]:
    start = _next_block_start(datetime.now(timezone.utc))
    hours = int(inputs.get("durationHours") or 24)
    end = start + timedelta(hours=hours)
    purchased = not inputs.get("reservationId")
    return {
        "reservation_id": inputs.get("reservationId") or "cr-0mock0000000000000",
        "availability_zone": MOCK_BLOCK_ZONES.get(inputs.get("reservationId") or "", MOCK_BLOCK_ZONE),
        "instance_type": inputs.get("instanceType"),
        "instance_count": inputs.get("instanceCount"),
        "start_date": start.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "end_date": end.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "instances_stop_at": (end - timedelta(minutes=30)).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "state": "scheduled",
        "purchased": purchased,
        "upfront_fee_usd": None,
    }


def block_scaling(inputs: Mapping[str, Any]) -> Dict[str, Any]:
    """What BlockScaling computes (the real pure plan) for the mocked block, seen now."""
    from .scaling import scaling_plan

    if not (inputs.get("startDate") and inputs.get("endDate")):
        return {}
    plan = scaling_plan(inputs["startDate"], inputs["endDate"], datetime.now(timezone.utc),
                        int(inputs.get("instanceCount") or 0))
    return {"scaleUpAt": plan.scale_up_at, "scaleDownAt": plan.scale_down_at, "desiredNow": plan.desired_now}


def endpoint_readiness(inputs: Mapping[str, Any]) -> Dict[str, Any]:
    """The gate as the offline plan sees it: the mocked block starts tomorrow, so it defers."""
    from .readiness import block_timing, deferred_outputs

    now = datetime.now(timezone.utc)
    if block_timing(inputs.get("blockStart"), now, float(inputs.get("blockWaitMaxS") or 0)) == "defer":
        return deferred_outputs(inputs, now)
    return {"ready": False, "state": "not-checked-offline", "lastSeen": "offline plan: nothing was checked"}


def eks_cluster(inputs: Mapping[str, Any]) -> Dict[str, Any]:
    name = inputs.get("name") or "mock"
    kubeconfig = {"apiVersion": "v1", "kind": "Config", "clusters": [{"name": name, "cluster": {
        "server": "https://mock.eks.invalid", "certificate-authority-data": "bW9jaw=="}}],
        "contexts": [], "users": []}
    return {"kubeconfig": kubeconfig, "kubeconfigJson": json.dumps(kubeconfig)}


def get_cluster(args: Mapping[str, Any]) -> Dict[str, Any]:
    return {"name": args.get("name"), "endpoint": "https://mock.eks.invalid",
            "arn": f"arn:aws:eks:us-east-2:000000000000:cluster/{args.get('name')}",
            "identities": [{"oidcs": [{"issuer": "https://oidc.eks.us-east-2.amazonaws.com/id/MOCK"}]}],
            "certificateAuthorities": [{"data": "bW9jaw=="}],
            "vpcConfig": {"clusterSecurityGroupId": "sg-0mock00000000000", "subnetIds": [],
                           "securityGroupIds": [], "endpointPrivateAccess": True,
                           "endpointPublicAccess": False, "publicAccessCidrs": [], "vpcId": "vpc-0mock"},
            "id": args.get("name")}


def subnet(args: Mapping[str, Any]) -> Dict[str, Any]:
    """An existing subnet's zone, from the last hex digit of its id (…0 -> a, …1 -> b, …2 -> c)."""
    sid = str(args.get("id") or "subnet-0")
    return {"id": sid, "availabilityZone": MOCK_ZONES[int(sid[-1], 16) % len(MOCK_ZONES)]}


def node_group(inputs: Mapping[str, Any]) -> Dict[str, Any]:
    return {"resources": [{"autoscalingGroups": [{"name": "eks-mock-gpu-asg"}], "remoteAccessSecurityGroupId": ""}],
            "nodeGroupName": "mock-node-group"}


def service(inputs: Mapping[str, Any]) -> Dict[str, Any]:
    spec = inputs.get("spec") or {}
    if spec.get("type") != "LoadBalancer":
        return {}
    return {"status": {"loadBalancer": {"ingress": [{"hostname": "mock-nlb.elb.us-east-2.amazonaws.com"}]}}}


def k8s_secret(inputs: Mapping[str, Any]) -> Dict[str, Any]:
    """The uid the Kubernetes API gives a new object (the pods that read the Secret carry it:
    components/inference/secret_roll.py); fake and fixed, never derived from the values."""
    meta = dict(inputs.get("metadata") or {})
    return {"metadata": {**meta, "uid": f"mock-uid-{meta.get('name') or 'secret'}"}}


def stack_owner(inputs: Mapping[str, Any]) -> Dict[str, Any]:
    return {"ownerToken": "0" * 32}


MOCK_OUTPUTS: Dict[str, Callable[[Mapping[str, Any]], Dict[str, Any]]] = {
    "pulumi-python:dynamic/aws:StackOwner": stack_owner,
    "pulumi-python:dynamic/aws:CapacityBlock": capacity_block,
    "pulumi-python:dynamic/aws:BlockScaling": block_scaling,
    "pulumi-python:dynamic/aws:EndpointReadiness": endpoint_readiness,
    "eks:index:Cluster": eks_cluster,
    "aws:eks/getCluster:getCluster": get_cluster,
    "aws:index/getAvailabilityZones:getAvailabilityZones": lambda a: {
        "names": MOCK_ZONES, "zoneIds": ["use2-az1", "use2-az2", "use2-az3"], "id": "mock"},
    "aws:ec2/getSubnet:getSubnet": subnet,
    "aws:eks/nodeGroup:NodeGroup": node_group,
    "kubernetes:core/v1:Service": service,
    "kubernetes:core/v1:Secret": k8s_secret,
    "aws:kms/key:Key": lambda a: {"arn": "arn:aws:kms:us-east-2:000000000000:key/mock"},
    "aws:iam/role:Role": lambda a: {"arn": "arn:aws:iam::000000000000:role/mock-node-role",
                                    "name": "mock-node-role"},
    "aws:ec2/launchTemplate:LaunchTemplate": lambda a: {"latestVersion": 1, "arn": "arn:aws:ec2:mock"},
    # the weights mirror bucket (components/aws_eks/weights/): AWS appends a suffix to the prefix
    "aws:s3/bucket:Bucket": lambda a: {"bucket": f"{a.get('bucketPrefix') or 'kimi-k3-weights-'}mock0001",
                                       "arn": "arn:aws:s3:::kimi-k3-weights-mock0001"},
}


def acm_certificate(inputs: Mapping[str, Any]) -> Dict[str, Any]:
    """A requested certificate: its ARN and the one CNAME ACM asks for (shape of pulumi-aws
    7.51.1 `CertificateDomainValidationOption`)."""
    domain = inputs.get("domainName") or "mock.example.com"
    return {"arn": "arn:aws:acm:us-east-2:000000000000:certificate/00000000-0000-0000-0000-000000000000",
            "domainValidationOptions": [{
                "domainName": domain, "resourceRecordName": f"_mock0validation.{domain}.",
                "resourceRecordType": "CNAME", "resourceRecordValue": "_mock0.acm-validations.aws."}]}


MOCK_OUTPUTS.update({
    "aws:acm/certificate:Certificate": acm_certificate,
    "aws:acm/certificateValidation:CertificateValidation": lambda a: {
        "certificateArn": a.get("certificateArn")},
    "aws:route53/record:Record": lambda a: {"fqdn": str(a.get("name") or "").rstrip(".")},
})
MOCK_OUTPUTS.update(_hyperpod.MOCK_OUTPUTS)  # the end-to-end HyperPod path (hyperpod/)
