"""Before a training plan is bought or adopted: EKS offers the pinned add-on versions for the
cluster's Kubernetes version, and the inference operator add-on's configuration schema takes the
values kimi-k3 gives it.

Why: the add-ons are created after the training plan (which cannot be cancelled), the VPC and
EKS. Were a pinned version withdrawn, or the operator add-on to stop taking its roles the way
kimi-k3 gives them (IRSA role ARNs in its configuration values), CreateAddon would fail only then,
with the plan paid. EKS answers both questions up front: DescribeAddonVersions (per add-on and
Kubernetes version) and DescribeAddonConfiguration (the JSON schema EKS validates
`configurationValues` against, and `podIdentityConfiguration`, the service accounts an add-on
takes EKS Pod Identity for; botocore 1.44.8 EKS model 2017-11-01, CreateAddon's
`configurationValues`: "validated against the schema returned by DescribeAddonConfiguration").

The identity the operator add-on takes, as AWS documents it: IAM roles for service accounts
(IRSA). "Installing the Inference Operator using the AWS CLI" (Amazon SageMaker AI Developer
Guide, https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-model-deployment-setup.html,
Method 2, read 2026-12-02) associates an IAM OIDC provider with the cluster, makes each role
trust `sts:AssumeRoleWithWebIdentity` from it for one service account of
`hyperpod-inference-system`, and passes the roles as configuration values (`executionRoleArn`,
`alb.serviceAccount.roleArn`, `keda.auth.aws.irsa.roleArn`); the page names no Pod Identity
association, and CreateAddon's `podIdentityAssociations` is not used there. So kimi-k3 uses IRSA
(operator.py) and checks here, on the add-on version it installs, that the schema still lists
every value it sets; were AWS to move the add-on to Pod Identity, the schema would say so and
`up` stops in one line before the purchase. A `podIdentityConfiguration` answer alone (Pod
Identity offered besides IRSA) is reported, not refused: IRSA is what AWS's page documents.
"""

from __future__ import annotations

import json
from typing import Any, Dict, Iterator, List, Mapping, Sequence, Tuple

from ...inference.errors import ConfigError
from . import catalog
from . import operator as op

SETUP_PAGE = "https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-model-deployment-setup.html"


class AddonCheckError(ConfigError):
    """An add-on kimi-k3 would install after the purchase cannot be installed as pinned."""


def value_paths(values: Mapping[str, Any], prefix: Tuple[str, ...] = ()) -> Iterator[Tuple[str, ...]]:
    """Every leaf of the configuration values, as a key path."""
    for key, value in values.items():
        if isinstance(value, Mapping) and value:
            yield from value_paths(value, prefix + (key,))
        else:
            yield prefix + (key,)


def operator_paths() -> List[Tuple[str, ...]]:
    """The key paths kimi-k3 sets on the operator add-on (operator.addon_configuration's shape)."""
    return sorted(value_paths(json.loads(op.addon_configuration("role", "bucket", "cluster", "alb", "keda"))))


def schema_gaps(schema: Mapping[str, Any], paths: Sequence[Tuple[str, ...]]) -> List[str]:
    """Dotted paths the schema does not list: at each level that lists `properties`, the key
    must be one of them (a key a schema lists no properties for is free-form: accepted). And
    the schema's `required` keys at any level kimi-k3 descends that it does not set."""
    gaps: List[str] = []
    for path in paths:
        node: Any = schema
        for depth, key in enumerate(path):
            props = node.get("properties") if isinstance(node, Mapping) else None
            if not isinstance(props, Mapping):
                break
            if key not in props:
                gaps.append(".".join(path[:depth + 1]))
                break
            node = props[key]
    set_prefixes = {path[:i] for path in paths for i in range(len(path) + 1)}

    def required(node: Any, prefix: Tuple[str, ...]) -> None:
        if not isinstance(node, Mapping):
            return
        for key in node.get("required") or []:
            if prefix + (key,) not in set_prefixes:
                gaps.append("required " + ".".join(prefix + (key,)))
        for key, sub in (node.get("properties") or {}).items():
            if prefix + (key,) in set_prefixes:
                required(sub, prefix + (key,))

    required(schema, ())
    return sorted(set(gaps))


def offered_versions(eks, addon: str, k8s_version: str) -> List[str]:
    """The versions EKS offers of `addon` for clusters of `k8s_version` (all pages)."""
    versions: List[str] = []
    kw: Dict[str, Any] = {"addonName": addon, "kubernetesVersion": k8s_version}
    while True:
        page = eks.describe_addon_versions(**kw)
        for entry in page.get("addons") or []:
            if entry.get("addonName") == addon:
                versions.extend(v["addonVersion"] for v in entry.get("addonVersions") or [] if v.get("addonVersion"))
        if not page.get("nextToken"):
            return versions
        kw["nextToken"] = page["nextToken"]


def _call_failed(call: str, err: Exception) -> AddonCheckError:
    return AddonCheckError(
        "kimi-k3:serving", "hyperpod", f"allow eks:{call} to the identity running `pulumi up` and run it again",
        f"eks:{call} failed ({type(err).__name__}: {err}); kimi-k3 checks the add-ons before buying or adopting "
        "a training plan, because a purchase cannot be cancelled")


def verify(eks, k8s_version: str, versions: Mapping[str, str]) -> List[str]:
    """Check every pinned add-on version against EKS, then the operator's schema; raise
    AddonCheckError naming what differs (the values as EKS has them), or return notes to warn."""
    for addon, version in versions.items():
        try:
            offered = offered_versions(eks, addon, k8s_version)
        except Exception as err:  # noqa: BLE001 any failure here stops the purchase, named
            raise _call_failed("DescribeAddonVersions", err) from err
        if version not in offered:
            raise AddonCheckError(
                "kimi-k3:clusterVersion", k8s_version,
                f"use a Kubernetes version EKS offers {addon} {version} for, or update its pin in "
                "components/aws_eks/hyperpod/catalog.py to one of these",
                f"EKS offers {addon} for Kubernetes {k8s_version} in versions {offered or 'none'}, not {version} "
                "(kimi-k3's pin); checked before the training plan, which cannot be cancelled")
    name = catalog.OPERATOR_ADDON
    try:
        answer = eks.describe_addon_configuration(addonName=name, addonVersion=versions[name])
    except Exception as err:  # noqa: BLE001
        raise _call_failed("DescribeAddonConfiguration", err) from err
    try:
        schema = json.loads(answer.get("configurationSchema") or "{}")
    except ValueError:
        schema = None
    if not isinstance(schema, Mapping):
        raise AddonCheckError(
            "kimi-k3:serving", "hyperpod", "report it; kimi-k3 cannot tell whether the add-on takes its roles",
            f"{name} {versions[name]}: DescribeAddonConfiguration returned no readable configuration schema")
    gaps = schema_gaps(schema, operator_paths())
    if gaps:
        raise AddonCheckError(
            "kimi-k3:serving", "hyperpod",
            f"use the existing-cluster mode (kimi-k3:hyperpodClusterName) with the operator installed as AWS now "
            f"documents ({SETUP_PAGE}), or update components/aws_eks/hyperpod/operator.py to the add-on's schema",
            f"the {name} {versions[name]} add-on's configuration schema (DescribeAddonConfiguration) does not take "
            f"{', '.join(gaps)}, which kimi-k3 sets to give the operator its IAM roles through IRSA as AWS's setup "
            "page does; checked before the training plan, which cannot be cancelled")
    pod_identity = [p.get("serviceAccount") for p in answer.get("podIdentityConfiguration") or []]
    if pod_identity:
        return [f"{name} {versions[name]} also offers EKS Pod Identity for {', '.join(map(str, pod_identity))}; "
                f"kimi-k3 gives its roles through IRSA, as AWS's setup page does ({SETUP_PAGE})"]
    return []
