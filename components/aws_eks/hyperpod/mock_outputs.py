"""What the end-to-end HyperPod path's resources answer under the mock engine (the plan command,
tests). Obviously fake (`mock` in the values); the plan starts tomorrow at 11:30 UTC, so the
readiness gate defers as it would on a real `pulumi up` before the plan starts."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any, Callable, Dict, Mapping

MOCK_ZONE = "us-east-2b"
MOCK_ACCOUNT = "000000000000"


def _start(now: datetime) -> datetime:
    return (now + timedelta(days=1)).replace(hour=11, minute=30, second=0, microsecond=0)


def training_plan(inputs: Mapping[str, Any]) -> Dict[str, Any]:
    start = _start(datetime.now(timezone.utc))
    end = start + timedelta(hours=int(inputs.get("durationHours") or 24))
    arn = inputs.get("trainingPlanArn")
    name = arn.rsplit("/", 1)[-1] if arn else "kimi-k3-mock-1"
    fmt = "%Y-%m-%dT%H:%M:%SZ"
    return {"trainingPlanArn": arn or f"arn:aws:sagemaker:us-east-2:{MOCK_ACCOUNT}:training-plan/{name}",
            "trainingPlanName": name, "status": "Scheduled", "availabilityZone": MOCK_ZONE,
            "startTime": start.strftime(fmt), "endTime": end.strftime(fmt),
            "instanceCount": inputs.get("instanceCount"), "instanceType": inputs.get("instanceType"),
            "purchased": not arn, "upfrontFeeUsd": None, "generation": None if arn else 1}


def readiness(inputs: Mapping[str, Any]) -> Dict[str, Any]:
    from ..readiness import block_timing
    from .readiness import deferred_outputs

    now = datetime.now(timezone.utc)
    if block_timing(inputs.get("blockStart"), now, float(inputs.get("blockWaitMaxS") or 0)) == "defer":
        return deferred_outputs(inputs, now)
    return {"ready": False, "state": "not-checked-offline", "lastSeen": "offline plan: nothing was checked"}


MOCK_OUTPUTS: Dict[str, Callable[[Mapping[str, Any]], Dict[str, Any]]] = {
    "pulumi-python:dynamic/aws:TrainingPlan": training_plan,
    "pulumi-python:dynamic/aws:HyperPodReadiness": readiness,
    "aws-native:sagemaker:Cluster": lambda a: {
        "clusterArn": f"arn:aws:sagemaker:us-east-2:{MOCK_ACCOUNT}:cluster/mock0hyperpod", "clusterStatus": "InService"},
    "aws:iam/openIdConnectProvider:OpenIdConnectProvider": lambda a: {
        "arn": f"arn:aws:iam::{MOCK_ACCOUNT}:oidc-provider/oidc.eks.us-east-2.amazonaws.com/id/MOCK"},
    "aws:iam/policy:Policy": lambda a: {"arn": f"arn:aws:iam::{MOCK_ACCOUNT}:policy/mock-policy"},
}
