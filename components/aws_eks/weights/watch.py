"""How far the S3 mirror is, read from the bucket itself.

The mirror Job (mirror.py) runs on the system node, unawaited; `pulumi up` waits for it only
through the readiness gate (the pods need it). What the bucket shows, with the S3 API only
(ListObjectsV2, ListMultipartUploads, ListParts; AWS S3 API reference), needs neither the
cluster nor the Job's logs:
- done: every object under the model prefix (the `.kimi-k3/` bookkeeping excluded), by size;
- in flight: the parts already uploaded of multipart uploads not yet completed (mirror.py
  streams each large file as a multipart upload), at most one upload per key counted, and none
  for a key that is already an object (an interrupted try's upload lingers until the bucket's
  lifecycle rule aborts it);
- complete: `.kimi-k3/complete` exists (mirror.py writes it last, after verifying).
The total is the plan's checkpoint size (the hub's own listing is only known to the Job).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict

BOOK = ".kimi-k3"  # mirror.py's bookkeeping folder under the prefix
COMPLETE = f"{BOOK}/complete"


@dataclass(frozen=True)
class MirrorState:
    complete: bool
    bytes_done: int  # whole objects + uploaded parts of uploads in flight
    files_done: int  # whole objects
    total_bytes: int  # the plan's checkpoint size

    @property
    def fraction(self) -> float:
        if self.complete or not self.total_bytes:
            return 1.0
        return min(1.0, self.bytes_done / self.total_bytes)

    def text(self, where: str) -> str:
        if self.complete:
            return f"complete: {self.files_done} files, {self.bytes_done / 1e9:,.1f} GB in {where}"
        return (f"{self.bytes_done / 1e9:,.1f} of {self.total_bytes / 1e9:,.0f} GB "
                f"({100 * self.fraction:.0f}%), {self.files_done} files whole, in {where}")


def _pages(s3, op: str, **kw):
    return s3.get_paginator(op).paginate(**kw)


def read_state(s3, bucket: str, prefix: str, total_bytes: int) -> MirrorState:
    """What `s3://bucket/prefix/` holds now (one pass of LIST requests)."""
    base = f"{prefix.strip('/')}/" if prefix.strip("/") else ""
    book = f"{base}{BOOK}/"
    objects: Dict[str, int] = {}
    complete = False
    for page in _pages(s3, "list_objects_v2", Bucket=bucket, Prefix=base):
        for o in page.get("Contents", []):
            if o["Key"] == f"{base}{COMPLETE}":
                complete = True
            elif not o["Key"].startswith(book):
                objects[o["Key"]] = int(o["Size"])
    in_flight: Dict[str, int] = {}
    if not complete:
        for page in _pages(s3, "list_multipart_uploads", Bucket=bucket, Prefix=base):
            for u in page.get("Uploads", []):
                key = u["Key"]
                if key in objects or key.startswith(book):
                    continue
                size = sum(int(p["Size"]) for pp in _pages(s3, "list_parts", Bucket=bucket, Key=key,
                                                          UploadId=u["UploadId"])
                           for p in pp.get("Parts", []))
                in_flight[key] = max(in_flight.get(key, 0), size)
    done = sum(objects.values()) + sum(in_flight.values())
    return MirrorState(complete, done, len(objects), int(total_bytes))
