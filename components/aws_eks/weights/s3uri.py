"""The one grammar for S3 URIs that reach a script or manifest (`kimi-k3:weightsS3Uri`, mirror).

Strict on purpose: the value ends up in the environment of containers that hold S3 credentials,
so nothing outside this grammar is accepted, whatever quoting a renderer does. Stdlib only: the
mirror Job imports this file next to mirror.py.

Bucket names follow Amazon S3's general purpose bucket naming rules (S3 User Guide, "Bucket
naming rules"): 3-63 characters of lower-case letters, digits, dots and hyphens, starting and
ending with a letter or digit, no two adjacent dots, not an IPv4 address, not starting with
`xn--`, `sthree-` or `amzn-s3-demo-`, not ending with `-s3alias`, `--ol-s3`, `.mrap` or
`--x-s3`. Key prefixes are narrower than S3 allows (S3's "safe characters" for object keys minus
`!*'()` and spaces): segments of letters, digits and `._=+-`, separated by single `/`, no `.` or
`..` segment, at most 512 characters; a trailing `/` is dropped.
"""

from __future__ import annotations

import re
from typing import NamedTuple

_BUCKET = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
_IPV4 = re.compile(r"^\d{1,3}(\.\d{1,3}){3}$")
_BAD_BUCKET_PREFIXES = ("xn--", "sthree-", "amzn-s3-demo-")
_BAD_BUCKET_SUFFIXES = ("-s3alias", "--ol-s3", ".mrap", "--x-s3")
_SEGMENT = re.compile(r"^[A-Za-z0-9._=+-]+$")
MAX_PREFIX = 512
#: the same grammar as one POSIX ERE, for the scripts that re-check it (stage.sh)
SHELL_ERE = r"^s3://([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])(/[A-Za-z0-9._=+-]+)*/?$"


class S3Uri(NamedTuple):
    bucket: str
    prefix: str  # no leading or trailing "/"; "" = the whole bucket

    def __str__(self) -> str:
        return f"s3://{self.bucket}/{self.prefix}" if self.prefix else f"s3://{self.bucket}"

    def key(self, path: str) -> str:
        """The object key of `path` (relative) under this prefix."""
        return f"{self.prefix}/{path}" if self.prefix else path

    def child(self, path: str) -> "S3Uri":
        return S3Uri(self.bucket, self.key(path))


def bucket_problem(bucket: str) -> str:
    """Why `bucket` is not a valid S3 bucket name, or "" if it is."""
    if not _BUCKET.fullmatch(bucket):
        return "bucket names are 3-63 lower-case letters, digits, '.' and '-'"
    if ".." in bucket:
        return "bucket names have no two adjacent dots"
    if _IPV4.fullmatch(bucket):
        return "bucket names are not IP addresses"
    if bucket.startswith(_BAD_BUCKET_PREFIXES) or bucket.endswith(_BAD_BUCKET_SUFFIXES):
        return "the bucket name uses a prefix or suffix S3 reserves"
    return ""


def parse(value: str) -> S3Uri:
    """`s3://bucket[/prefix]` -> S3Uri, or ValueError saying what is wrong (never echoing it)."""
    if not isinstance(value, str) or not value.startswith("s3://"):
        raise ValueError("does not start with s3://")
    rest = value[len("s3://"):]
    bucket, _, prefix = rest.partition("/")
    problem = bucket_problem(bucket)
    if problem:
        raise ValueError(problem)
    if "//" in rest:  # `s3://bucket//`, `s3://bucket/a//b`: an empty segment, never a root
        raise ValueError("prefix segments are separated by single '/'")
    prefix = prefix[:-1] if prefix.endswith("/") else prefix
    if len(prefix) > MAX_PREFIX:
        raise ValueError(f"the prefix is longer than {MAX_PREFIX} characters")
    if prefix:
        for segment in prefix.split("/"):
            if not segment or not _SEGMENT.fullmatch(segment) or segment in (".", ".."):
                raise ValueError("prefix segments are letters, digits and ._=+- separated by "
                                 "single '/', without '.' or '..' segments")
    return S3Uri(bucket, prefix)
