"""The HyperPod inference operator as AWS ships it, an EKS add-on: its roles and settings. Pure.

Source: AWS's own install of the add-on, aws/sagemaker-hyperpod-cli at
a00b22d17ea928a6e39a43bd2efdafe01b1005ea, helm_chart/HyperPodHelmChart/charts/inference-operator/
migration/helm_to_addon.sh (catalog.py has the versions):
- the add-on's configuration values (L1003-1029): `executionRoleArn`, `tlsCertificateS3Bucket`,
  `hyperpodClusterArn`, `alb.enabled` with `alb.serviceAccount.{create, roleArn}`, `keda.enabled`
  with `keda.auth.aws.irsa.{enabled, roleArn}`; `jumpstartGatedModelDownloadRoleArn` is left out
  (kimi-k3 deploys no JumpStart model; the chart's default is "");
- the identity: IRSA. AWS's page for this install, "Installing the Inference Operator using the
  AWS CLI" (https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-model-deployment-setup.html,
  Method 2, read 2026-12-02), associates an IAM OIDC provider with the cluster and gives every
  role a web-identity trust on it (`aud` sts.amazonaws.com, `sub` one service account of
  `hyperpod-inference-system`), passed to the add-on as configuration values; it names no EKS
  Pod Identity association. addon_check.py verifies, before the training plan, that the add-on
  version installed still takes these values. Four roles there, three here:
  - execution role (script L428-498; the page's "Configure IAM roles for inference operator"):
    name prefixed `SageMakerHyperPodInference` (the add-on refuses
    others, templates/_validateRequiredValues.tpl L13-18); trusted by the operator's service
    account and by `sagemaker.amazonaws.com` (the page's trust policy, also the fix AWS's "IAM
    trust relationship issue" page gives for the operator's AssumeRoleWithWebIdentity failure:
    https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-model-deployment-ts-trust.html,
    read 2026-12-02); `AmazonSageMakerHyperPodInferenceAccess` and an inline policy on the TLS
    bucket only (the page's policy for a bucket not named `hyperpod-tls-*`, as this one):
    GetObject; PutObject/PutObjectTagging and
    DeleteObject conditioned on the bucket being in the caller's account; plus
    `acm:AddTagsToCertificate` on ACM certificates, which operator 3.0 (the add-on generation)
    needs to tag the certificates it imports: "Before upgrading ... add the following
    permissions to your inference operator execution role" (SageMaker HyperPod Inference release
    notes v3.0, 2026-02-23, https://docs.aws.amazon.com/sagemaker/latest/dg/
    sagemaker-hyperpod-inference-release-notes.html, read 2026-12-02; the statement as written
    there; the migration script above does not add it, so the managed policy may or may not
    carry it: kept explicit);
  - ALB controller role (L681-703): the script copies the policies of the Helm install's role;
    here the AWS Load Balancer Controller's own published policy at the version the operator's
    chart pins (chart aws-load-balancer-controller 1.13.2 = controller v2.13.2,
    helm_chart/.../inference-operator/Chart.yaml; kubernetes-sigs/aws-load-balancer-controller
    tag v2.13.2, commit ac0e1ffc76adfb6af8342534f13f178a24b65e92, docs/install/iam_policy.json,
    kept verbatim beside this file as alb_controller_iam_policy.json), as a managed policy (its
    size is made for one);
  - KEDA role (the page's "Create the KEDA operator role"): trusted by the keda-operator service
    account only (the page's trust; the migration script, L709-737, also trusts
    sagemaker.amazonaws.com, which nothing here needs); no permission here (the page grants
    CloudWatch and Amazon Managed Prometheus reads for the metrics KEDA scales on): kimi-k3 sets
    no `autoScalingSpec` (the replicas run on a training plan of fixed size, prepaid: scaling
    out needs capacity the plan does not have, and scaling in saves nothing), so KEDA has no
    metric to read;
  - the JumpStart gated-model role: not made (no JumpStart model).
- dependencies installed before it (L905-941, L1093-1097): the S3 Mountpoint and FSx CSI drivers,
  cert-manager and metrics-server, as EKS add-ons. The CSI drivers get no IAM role: kimi-k3
  mounts neither (the weights come from the hub), so they can do nothing (the script gives them
  broad S3 and FSx roles for model sources kimi-k3 does not use).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, Mapping, Optional

from . import catalog

ALB_POLICY_FILE = Path(__file__).with_name("alb_controller_iam_policy.json")
ALB_POLICY_SOURCE = ("kubernetes-sigs/aws-load-balancer-controller@ac0e1ffc76adfb6af8342534f13f178a24b65e92 "
                     "docs/install/iam_policy.json (v2.13.2)")


def issuer_host(issuer_url: str) -> str:
    """`oidc.eks.<region>.amazonaws.com/id/<id>` from the cluster's issuer URL."""
    return issuer_url.split("://", 1)[-1].rstrip("/")


def irsa_trust(oidc_provider_arn: str, issuer_url: str, namespace: str, service_account: str,
               also_service: Optional[str] = None) -> str:
    """Trust for one service account through the cluster's OIDC provider (and, for KEDA, a service)."""
    host = issuer_host(issuer_url)
    statements = []
    if also_service:
        statements.append({"Effect": "Allow", "Principal": {"Service": also_service}, "Action": "sts:AssumeRole"})
    statements.append({
        "Effect": "Allow", "Principal": {"Federated": oidc_provider_arn},
        "Action": "sts:AssumeRoleWithWebIdentity",
        "Condition": {"StringEquals": {f"{host}:aud": "sts.amazonaws.com",
                                       f"{host}:sub": f"system:serviceaccount:{namespace}:{service_account}"}}})
    return json.dumps({"Version": "2012-10-17", "Statement": statements})


#: the release notes' statement (module docstring): tagging of ACM certificates, nothing else
CERTIFICATE_TAGGING = {"Sid": "CertificateTaggingPermission", "Effect": "Allow", "Action": ["acm:AddTagsToCertificate"],
                       "Resource": "arn:aws:acm:*:*:certificate/*"}


def tls_bucket_policy(bucket: str) -> str:
    """The execution role's inline policy: the TLS bucket's objects (as helm_to_addon.sh
    L459-493) and the tagging of the certificates the operator imports (release notes v3.0)."""
    objects = [f"arn:aws:s3:::{bucket}/*"]
    same_account = {"StringEquals": {"aws:ResourceAccount": "${aws:PrincipalAccount}"}}
    return json.dumps({"Version": "2012-10-17", "Statement": [
        {"Sid": "TLSBucketDeleteObjectsPermission", "Effect": "Allow", "Action": ["s3:DeleteObject"],
         "Resource": objects, "Condition": same_account},
        {"Sid": "TLSBucketGetObjectAccess", "Effect": "Allow", "Action": ["s3:GetObject"], "Resource": objects},
        {"Sid": "TLSBucketPutObjectAccess", "Effect": "Allow", "Action": ["s3:PutObject", "s3:PutObjectTagging"],
         "Resource": objects, "Condition": same_account}, CERTIFICATE_TAGGING]})


def alb_policy() -> str:
    """The AWS Load Balancer Controller's published IAM policy (compact JSON)."""
    return json.dumps(json.loads(ALB_POLICY_FILE.read_text()), separators=(",", ":"))


def addon_configuration(execution_role_arn: str, tls_bucket: str, hyperpod_cluster_arn: str,
                        alb_role_arn: str, keda_role_arn: str) -> str:
    """The operator add-on's `configurationValues` (JSON text)."""
    return json.dumps({
        "executionRoleArn": execution_role_arn,
        "tlsCertificateS3Bucket": tls_bucket,
        "hyperpodClusterArn": hyperpod_cluster_arn,
        "alb": {"enabled": True, "serviceAccount": {"create": True, "roleArn": alb_role_arn}},
        "keda": {"enabled": True, "auth": {"aws": {"irsa": {"enabled": True, "roleArn": keda_role_arn}}}},
    }, sort_keys=True)


#: role key -> the AWS service its trust also names (module docstring); the ALB controller's: none
TRUSTED_SERVICES: Mapping[str, Optional[str]] = {"execution": "sagemaker.amazonaws.com",
                                                 "alb": None, "keda": None}


def role_subjects() -> Mapping[str, str]:
    """role key -> the operator's service account its trust names."""
    return {"execution": catalog.OPERATOR_SERVICE_ACCOUNT, "alb": catalog.ALB_SERVICE_ACCOUNT,
            "keda": catalog.KEDA_SERVICE_ACCOUNT}


def addon_args(name: str) -> Dict[str, Any]:
    """pulumi-aws `eks.Addon` settings of one add-on kimi-k3 installs (name, pinned version,
    conflicts resolved as the script does: OVERWRITE on create)."""
    return {"addon_name": name, "addon_version": catalog.ADDON_VERSIONS[name],
            "resolve_conflicts_on_create": "OVERWRITE"}
