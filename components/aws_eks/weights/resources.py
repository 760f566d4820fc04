"""The weights path's cloud and cluster resources on aws-eks (Pulumi).

- the mirror bucket (weightsSource mirror): private (all public access blocked, owner-enforced
  object ownership), encrypted at rest (SSE-S3), TLS-only bucket policy, incomplete multipart
  uploads aborted after a day, in the stack's region; removed by `pulumi destroy` with its
  objects unless `kimi-k3:keepWeightsMirror: true` (then retained, and destroy says so and what it
  costs: notice.py);
- EKS Pod Identity: the agent add-on (tolerating every taint, so it runs on the GPU nodes too), a
  serving role for the GPU pods and a mirror role for the Job, each bound to its service account
  (iam.py has the scoped policies); nothing on the node role;
- in the cluster: the scripts ConfigMap, the service accounts, the source ConfigMap (the bucket's
  URI, known once AWS named it) and the mirror Job on the system node group. The Job is not
  awaited: it may run for hours, and it runs now, before a block that starts later; the GPU node
  group still scales up at the block's start (nodegroup.py).
"""

from __future__ import annotations

import json
from typing import Any, List, Optional, Sequence

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from ...program.tree import undoubled
from . import iam
from . import render as wr
from .notice import MirrorNotice
from .settings import CACHE_PREFIX, WeightsConfig


def _json(doc_of_bucket, bucket: Any) -> pulumi.Output:
    return pulumi.Output.from_input(bucket).apply(lambda b: json.dumps(doc_of_bucket(b)))


def _warn(message: Optional[str], resource) -> None:
    if message:
        pulumi.log.warn(message, resource=resource)


def _skip_await(obj: dict) -> dict:
    meta = dict(obj["metadata"])
    meta["annotations"] = {**meta.get("annotations", {}), "pulumi.com/skipAwait": "true"}
    return {**obj, "metadata": meta}


class WeightsMirrorBucket:
    """The stack's private, encrypted, TLS-only bucket for the mirror and the compile caches."""

    def __init__(self, name: str, keep: bool, stack_identity: str, gb: float, parent: pulumi.Resource,
                 after: Sequence[pulumi.Resource] = ()):
        # `after`: the Capacity Block; its settings, policy and notice wait for the bucket
        opts = pulumi.ResourceOptions(parent=parent, retain_on_delete=keep, depends_on=list(after))
        self.bucket = aws.s3.Bucket(
            f"{name}-weights", bucket_prefix="kimi-k3-weights-", force_destroy=not keep,
            tags={"kimi-k3:stack": stack_identity, "kimi-k3:purpose": "weights-mirror"}, opts=opts)
        child = pulumi.ResourceOptions(parent=self.bucket, retain_on_delete=keep)
        self.name = self.bucket.bucket
        self.public_access_block = aws.s3.BucketPublicAccessBlock(
            f"{name}-weights-private", bucket=self.bucket.id, block_public_acls=True,
            block_public_policy=True, ignore_public_acls=True, restrict_public_buckets=True, opts=child)
        self.ownership = aws.s3.BucketOwnershipControls(
            f"{name}-weights-ownership", bucket=self.bucket.id,
            rule={"object_ownership": "BucketOwnerEnforced"}, opts=child)
        self.encryption = aws.s3.BucketServerSideEncryptionConfiguration(
            f"{name}-weights-encryption", bucket=self.bucket.id,
            rules=[{"apply_server_side_encryption_by_default": {"sse_algorithm": "AES256"}}], opts=child)
        self.policy = aws.s3.BucketPolicy(
            f"{name}-weights-tls-only", bucket=self.bucket.id,
            policy=_json(iam.tls_only_bucket_policy, self.bucket.bucket),
            opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(
                depends_on=[self.public_access_block])))
        self.lifecycle = aws.s3.BucketLifecycleConfiguration(
            f"{name}-weights-lifecycle", bucket=self.bucket.id,
            rules=[{"id": "abort-incomplete-multipart-uploads", "status": "Enabled", "filter": {},
                    "abort_incomplete_multipart_upload": {"days_after_initiation": 1}}], opts=child)
        self.notice = MirrorNotice(f"{name}-weights-notice", self.bucket.bucket, keep, gb,
                                   opts=pulumi.ResourceOptions(parent=parent))
        self.resources = [self.bucket, self.public_access_block, self.ownership, self.encryption,
                          self.policy, self.lifecycle]


class PodRole:
    """An IAM role for one service account through EKS Pod Identity, with one inline policy."""

    def __init__(self, name: str, cluster_name: Any, namespace: str, service_account: str,
                 policy: pulumi.Input[str], parent: pulumi.Resource, depends_on: List[pulumi.Resource],
                 after: Sequence[pulumi.Resource] = ()):
        # `after`: the Capacity Block (nothing is created before it decides); the policy waits
        # for the role, the association for the cluster
        opts = pulumi.ResourceOptions(parent=parent, depends_on=list(after))
        self.role = aws.iam.Role(f"{name}-role", assume_role_policy=json.dumps(iam.pod_trust_policy()),
                                 opts=opts)
        self.policy = aws.iam.RolePolicy(f"{name}-s3", role=self.role.name, policy=policy,
                                         opts=pulumi.ResourceOptions(parent=self.role))
        self.association = aws.eks.PodIdentityAssociation(
            f"{name}-identity", cluster_name=cluster_name, namespace=namespace,
            service_account=service_account, role_arn=self.role.arn,
            opts=pulumi.ResourceOptions(parent=parent, depends_on=depends_on))


def late_mirror_warning(block_start: Optional[str], mirror_fill_s: Optional[int], now=None,
                        stream: bool = False) -> Optional[str]:
    """The warning for a block that starts before the mirror can be full (None: it can)."""
    from datetime import datetime, timezone

    if not block_start or mirror_fill_s is None:
        return None
    start = datetime.fromisoformat(str(block_start).replace("Z", "+00:00"))
    lead = (start - (now or datetime.now(timezone.utc))).total_seconds()
    if lead >= mirror_fill_s:
        return None
    head = (f"the Capacity Block starts in {max(lead, 0) / 60:.0f} min but the S3 mirror needs about "
            f"{mirror_fill_s / 60:.0f} min to fill: ")
    if stream:
        return (head + "with streamWeights its pods wait for it (streaming cannot fall back to the "
                f"hub), on the GPU clock until about {max(0.0, mirror_fill_s - max(lead, 0)) / 60:.0f} min "
                "after the block starts; unset kimi-k3:streamWeights to stage from the hub meanwhile")
    return head + ("its first start stages each node from the hub "
                   "(about as slow as weightsSource=hub), later starts from the mirror")


class Weights:
    """Bucket and identities of the weights path (children of `parent`, the stack's cluster
    component); `before_workload` declares the cluster objects (`objects`, rendered once:
    render_k8s.render_weights) once the namespace exists (serving.py calls it)."""

    def __init__(self, name: str, w: WeightsConfig, layout, objects: List[dict], *, cluster,
                 region: str, stack_identity: str, checkpoint_gb: float, parent: pulumi.Resource,
                 block_start: Any = None, mirror_fill_s: Optional[int] = None,
                 after: Sequence[pulumi.Resource] = ()):
        """`after`: what every resource here waits for (the Capacity Block: a refused purchase
        must leave nothing behind; the mirror still fills long before a later block starts)."""
        self.name, self.w, self.layout, self.objects = name, w, layout, list(objects)
        self.region, self.parent = region, parent
        self.cluster = cluster
        self.bucket: Optional[WeightsMirrorBucket] = None
        self.roles: List[PodRole] = []
        self.aws_resources: List[pulumi.Resource] = []
        if not w.uses_bucket:
            return
        if w.source == "mirror":
            self.bucket = WeightsMirrorBucket(name, w.keep_mirror, stack_identity, checkpoint_gb, parent,
                                              after=after)
            bucket_name: Any = self.bucket.name
            model_prefix: str = w.mirror_prefix
            self.s3_uri = bucket_name.apply(lambda b: f"s3://{b}/{model_prefix}")
            self.cache_uri = bucket_name.apply(lambda b: f"s3://{b}/{CACHE_PREFIX}")
            self.aws_resources += self.bucket.resources
            if block_start is not None:
                pulumi.Output.from_input(block_start).apply(
                    lambda st: _warn(late_mirror_warning(st, mirror_fill_s, stream=w.stream), parent))
        else:
            bucket_name, model_prefix = w.s3_uri.bucket, w.s3_uri.prefix
            self.s3_uri, self.cache_uri = str(w.s3_uri), ""
        self.agent = cluster.pod_identity_agent(name, parent)  # once per cluster (cluster.py)
        n = wr.names(layout.name)
        cache_prefix = CACHE_PREFIX if w.compile_cache else None
        self.roles.append(PodRole(
            f"{name}-serving", cluster.name, layout.namespace, n["serving_sa"],
            _json(lambda b: iam.serving_policy(b, model_prefix, cache_prefix), bucket_name),
            parent, [cluster.eks], after=after))
        if w.source == "mirror":
            self.roles.append(PodRole(
                f"{name}-mirror", cluster.name, layout.namespace, n["mirror_sa"],
                _json(lambda b: iam.mirror_policy(b, model_prefix), bucket_name), parent, [cluster.eks],
                after=after))
        self.aws_resources += [self.agent] + [r.association for r in self.roles]

    def before_workload(self, provider: k8s.Provider, namespace: pulumi.Resource, parent: pulumi.Resource,
                        aliases: List[pulumi.Alias]) -> List[pulumi.Resource]:
        """The scripts ConfigMap, service accounts, source ConfigMap and mirror Job, children of
        `parent` (with `aliases`: their place before, components/program/tree.py)."""
        made: List[pulumi.Resource] = []

        def named(obj: dict, depends_on: List[pulumi.Resource]):
            rname, als = undoubled(self.name, self.layout.name, obj["metadata"]["name"], aliases)
            return rname, pulumi.ResourceOptions(parent=parent, provider=provider, depends_on=depends_on,
                                                 aliases=als)

        objs = self.objects
        for obj in objs:
            if obj["kind"] == "ConfigMap":
                rname, opts = named(obj, [namespace])
                made.append(k8s.core.v1.ConfigMap(rname, metadata=obj["metadata"], data=obj["data"], opts=opts))
            elif obj["kind"] == "ServiceAccount":
                rname, opts = named(obj, [namespace])
                made.append(k8s.core.v1.ServiceAccount(
                    rname, metadata=obj["metadata"],
                    automount_service_account_token=obj["automountServiceAccountToken"], opts=opts))
        if self.w.uses_bucket:
            src = wr.source_configmap(self.layout, self.s3_uri, self.cache_uri, self.region)
            rname, opts = named(src, [namespace])
            made.append(k8s.core.v1.ConfigMap(rname, metadata=src["metadata"], data=src["data"], opts=opts))
        for obj in objs:
            if obj["kind"] == "Job":
                job = _skip_await(obj)
                # credentials must exist before the Job's first try (Pod Identity agent + role)
                rname, opts = named(job, [namespace, *made, *self.aws_resources])
                made.append(k8s.batch.v1.Job(rname, metadata=job["metadata"], spec=job["spec"], opts=opts))
        return made + self.aws_resources
