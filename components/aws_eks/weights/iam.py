"""IAM and bucket policy documents of the weights path. Pure (dicts; the bucket name is a plain
string here, the resources module applies them to the bucket's Output).

Pods get credentials through EKS Pod Identity: a role per service account whose trust policy
admits the `pods.eks.amazonaws.com` service principal with sts:AssumeRole and sts:TagSession
(pulumi-aws's PodIdentityAssociation documentation, from the EKS user guide). Nothing is on the
node role: with IMDS hop limit 1 a container cannot reach the node's credentials at all.
- serving (the GPU pods): read the model prefix; read the compile-cache prefix and create new
  objects there, never replace or delete one (`create_only`): a compile cache holds Python that
  vLLM runs, so a pod must not be able to rewrite what another pod saved (issue 21).
- mirror (the Job): read, write and delete under the model prefix (resume, marker, pruning).
"""

from __future__ import annotations

from typing import List, Optional

VERSION = "2012-10-17"


def pod_trust_policy() -> dict:
    return {"Version": VERSION, "Statement": [{
        "Effect": "Allow", "Principal": {"Service": "pods.eks.amazonaws.com"},
        "Action": ["sts:AssumeRole", "sts:TagSession"]}]}


def objects_arn(bucket: str, prefix: str) -> str:
    """The ARN of every object under `prefix` ("" = the whole bucket): `arn:aws:s3:::bucket/*`
    or `arn:aws:s3:::bucket/prefix/*`, never `bucket//*` (S3 ARNs "reduce to
    arn:aws:s3:::bucket_name/key_name": awsdocs/amazon-s3-developer-guide,
    doc_source/s3-arn-format.md, https://github.com/awsdocs/amazon-s3-developer-guide/blob/master/doc_source/s3-arn-format.md)."""
    return f"arn:aws:s3:::{bucket}/{prefix}/*" if prefix else f"arn:aws:s3:::{bucket}/*"


def _list(bucket: str, prefixes: List[str]) -> dict:
    """s3:ListBucket on the bucket, limited by `s3:prefix` to `prefixes` and the keys under them.

    A root prefix ("", the whole bucket) gets no condition: ListObjectsV2 without a Prefix sends
    no `s3:prefix` key, and a condition on a key absent from the request context does not match
    (IAM User Guide, "IAM JSON policy elements: Condition",
    https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_elements_condition.html),
    so a conditioned grant would refuse the very listing the root needs.

    Listing is also how kimi-k3 checks a marker object (mirror.py, stage.sh): without
    s3:ListBucket in the GetObject/HeadObject request's own context, S3 answers a missing key with
    403, not 404 (S3 API Reference, GetObject and HeadObject, "Permissions"), so a marker is
    looked up with ListObjectsV2(Prefix=<its key>), which this grant allows.
    """
    statement = {"Sid": "ListTheseKeysOnly", "Effect": "Allow", "Action": ["s3:ListBucket"],
                 "Resource": [f"arn:aws:s3:::{bucket}"]}
    if all(prefixes):
        statement["Condition"] = {"StringLike": {"s3:prefix": [p for x in prefixes for p in (f"{x}/*", x)]}}
    return statement


def create_only(bucket: str, prefix: str) -> dict:
    """s3:PutObject under `prefix` only when the request carries `If-None-Match` (S3 then writes
    the object only if its key does not exist, else answers 412 Precondition Failed): new objects,
    never a replacement. The condition is AWS's own example ("Null": {"s3:if-none-match": "false"},
    S3 User Guide, "Enforce conditional writes on Amazon S3 buckets", example 1,
    https://docs.aws.amazon.com/AmazonS3/latest/userguide/conditional-writes-enforce.html, read
    2026-12-02). Its multipart exemption (`s3:ObjectCreationOperation`) is left out on purpose:
    CreateMultipartUpload and UploadPart carry no conditional header, so multipart uploads are
    refused and compile_cache.sh uploads every file with one PutObject (up to 5 GB each). No
    s3:DeleteObject, no s3:AbortMultipartUpload."""
    return {"Sid": "CreateCompileCacheObjectsOnly", "Effect": "Allow", "Action": ["s3:PutObject"],
            "Resource": [objects_arn(bucket, prefix)],
            "Condition": {"Null": {"s3:if-none-match": "false"}}}


def serving_policy(bucket: str, model_prefix: str, cache_prefix: Optional[str]) -> dict:
    """Read-only on the weights; read and create-only on the compile caches when the bucket is ours."""
    prefixes = [model_prefix] + ([cache_prefix] if cache_prefix else [])
    statements = [_list(bucket, prefixes),
                  {"Sid": "ReadWeights", "Effect": "Allow", "Action": ["s3:GetObject"],
                   "Resource": [objects_arn(bucket, p) for p in prefixes]}]
    if cache_prefix:
        statements.append(create_only(bucket, cache_prefix))
    return {"Version": VERSION, "Statement": statements}


def mirror_policy(bucket: str, model_prefix: str) -> dict:
    return {"Version": VERSION, "Statement": [
        _list(bucket, [model_prefix]),
        {"Sid": "ResumeUploads", "Effect": "Allow", "Action": ["s3:ListBucketMultipartUploads"],
         "Resource": [f"arn:aws:s3:::{bucket}"]},
        {"Sid": "MirrorObjects", "Effect": "Allow",
         "Action": ["s3:GetObject", "s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload",
                    "s3:ListMultipartUploadParts"],
         "Resource": [objects_arn(bucket, model_prefix)]},
    ]}


def tls_only_bucket_policy(bucket: str) -> dict:
    """Deny every request to the bucket that is not over TLS (S3 User Guide, aws:SecureTransport)."""
    return {"Version": VERSION, "Statement": [{
        "Sid": "DenyInsecureTransport", "Effect": "Deny", "Principal": "*", "Action": "s3:*",
        "Resource": [f"arn:aws:s3:::{bucket}", f"arn:aws:s3:::{bucket}/*"],
        "Condition": {"Bool": {"aws:SecureTransport": "false"}}}]}
