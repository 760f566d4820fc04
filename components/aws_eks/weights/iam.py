"""IAM and bucket policy documents of the weights path. Pure (dicts; the bucket name is a plain
string here, the resources module applies them to the bucket's Output).

Pods get credentials through EKS Pod Identity: a role per service account whose trust policy
admits the `pods.eks.amazonaws.com` service principal with sts:AssumeRole and sts:TagSession
(pulumi-aws's PodIdentityAssociation documentation, from the EKS user guide). Nothing is on the
node role: with IMDS hop limit 1 a container cannot reach the node's credentials at all.
- serving (the GPU pods): read the model prefix; read and write the compile-cache prefix (the
  sidecar saves the cache); no delete.
- mirror (the Job): read, write and delete under the model prefix (resume, marker, pruning).
"""

from __future__ import annotations

from typing import List, Optional

VERSION = "2012-10-17"


def pod_trust_policy() -> dict:
    return {"Version": VERSION, "Statement": [{
        "Effect": "Allow", "Principal": {"Service": "pods.eks.amazonaws.com"},
        "Action": ["sts:AssumeRole", "sts:TagSession"]}]}


def _list(bucket: str, prefixes: List[str]) -> dict:
    return {"Sid": "ListTheseKeysOnly", "Effect": "Allow", "Action": ["s3:ListBucket"],
            "Resource": [f"arn:aws:s3:::{bucket}"],
            "Condition": {"StringLike": {"s3:prefix": [p for x in prefixes for p in (f"{x}/*", x)]}}}


def serving_policy(bucket: str, model_prefix: str, cache_prefix: Optional[str]) -> dict:
    """Read-only on the weights; read-write on the compile caches when the bucket is ours."""
    prefixes = [model_prefix] + ([cache_prefix] if cache_prefix else [])
    statements = [_list(bucket, prefixes),
                  {"Sid": "ReadWeights", "Effect": "Allow", "Action": ["s3:GetObject"],
                   "Resource": [f"arn:aws:s3:::{bucket}/{p}/*" for p in prefixes]}]
    if cache_prefix:
        statements.append({"Sid": "SaveCompileCache", "Effect": "Allow",
                           "Action": ["s3:PutObject", "s3:AbortMultipartUpload"],
                           "Resource": [f"arn:aws:s3:::{bucket}/{cache_prefix}/*"]})
    return {"Version": VERSION, "Statement": statements}


def mirror_policy(bucket: str, model_prefix: str) -> dict:
    return {"Version": VERSION, "Statement": [
        _list(bucket, [model_prefix]),
        {"Sid": "ResumeUploads", "Effect": "Allow", "Action": ["s3:ListBucketMultipartUploads"],
         "Resource": [f"arn:aws:s3:::{bucket}"]},
        {"Sid": "MirrorObjects", "Effect": "Allow",
         "Action": ["s3:GetObject", "s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload",
                    "s3:ListMultipartUploadParts"],
         "Resource": [f"arn:aws:s3:::{bucket}/{model_prefix}/*"]},
    ]}


def tls_only_bucket_policy(bucket: str) -> dict:
    """Deny every request to the bucket that is not over TLS (S3 User Guide, aws:SecureTransport)."""
    return {"Version": VERSION, "Statement": [{
        "Sid": "DenyInsecureTransport", "Effect": "Deny", "Principal": "*", "Action": "s3:*",
        "Resource": [f"arn:aws:s3:::{bucket}", f"arn:aws:s3:::{bucket}/*"],
        "Condition": {"Bool": {"aws:SecureTransport": "false"}}}]}
