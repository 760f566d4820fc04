"""How far the S3 mirror is, read from the bucket itself, and a watcher that records it.

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

import threading
from dataclasses import dataclass
from typing import Callable, Dict, Optional

BOOK = ".kimi-k3"  # mirror.py's bookkeeping folder under the prefix
COMPLETE = f"{BOOK}/complete"
#: how often the watcher lists the bucket (a handful of LIST requests each time)
POLL_S = 30.0


@dataclass(frozen=True)
class MirrorState:
    complete: bool
    bytes_done: int  # whole objects + uploaded parts of uploads in flight
    files_done: int  # whole objects
    total_bytes: int  # the plan's checkpoint size
    #: why uploads in flight were not counted ('' = they were): whole objects only then
    partial: str = ""

    @property
    def fraction(self) -> float:
        if self.complete or not self.total_bytes:
            return 1.0
        return min(1.0, self.bytes_done / self.total_bytes)

    def text(self, where: str) -> str:
        if self.complete:
            return f"complete: {self.files_done} files, {self.bytes_done / 1e9:,.1f} GB in {where}"
        text = (f"{self.bytes_done / 1e9:,.1f} of {self.total_bytes / 1e9:,.0f} GB "
                f"({100 * self.fraction:.0f}%), {self.files_done} files whole, in {where}")
        return f"{text} (whole files only: {self.partial})" if self.partial else text


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
    partial = ""
    if not complete:
        try:
            in_flight = _in_flight(s3, bucket, base, book, objects)
        except Exception as e:  # noqa: BLE001 e.g. no s3:ListBucketMultipartUploads: whole files only
            partial = f"uploads in flight not readable: {type(e).__name__}"
    done = sum(objects.values()) + sum(in_flight.values())
    return MirrorState(complete, done, len(objects), int(total_bytes), partial)


def _in_flight(s3, bucket: str, base: str, book: str, objects: Dict[str, int]) -> Dict[str, int]:
    """key -> bytes of the parts uploaded so far, for model files not yet whole objects."""
    out: Dict[str, int] = {}
    for page in _pages(s3, "list_multipart_uploads", Bucket=bucket, Prefix=base):
        for u in page.get("Uploads", []):
            key = u["Key"]
            if key in objects or key.startswith(book):
                continue
            size = sum(int(p["Size"]) for pp in _pages(s3, "list_parts", Bucket=bucket, Key=key,
                                                      UploadId=u["UploadId"])
                       for p in pp.get("Parts", []))
            out[key] = max(out.get(key, 0), size)
    return out


class MirrorWatch:
    """While `pulumi up` waits (the gate), records the mirror's progress as phase `weights-mirror`.

    `with MirrorWatch(log, read, where, rate_gb_per_s):` reads the bucket every `poll_s` in a
    thread and updates the phase with the bytes copied (the status bar's fraction) and what is
    left at the plan's fill rate; the phase's expectation is the plan's fill figure
    (`progressExpect`, components/progress/plan.py). It is done when the mirror is complete; if
    the wait ends first (a node staged from the hub and served, or the gate gave up), it is
    closed saying that `pulumi up` stopped watching, and how far the mirror was. `wait` is how the
    thread waits between looks (`wait(stop_event, seconds)` -> stopped?; `threading.Event.wait`
    unless a test hands in a simulated one).
    """

    def __init__(self, log, read: Callable[[], MirrorState], where: str,
                 rate_gb_per_s: Optional[float] = None, poll_s: float = POLL_S,
                 wait: Callable[[threading.Event, float], bool] = threading.Event.wait):
        self.log, self.read, self.where, self.poll_s = log, read, where, poll_s
        self.wait = wait
        self.rate = rate_gb_per_s
        self.last: Optional[MirrorState] = None
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._phase = None

    def _text(self, st: MirrorState) -> str:
        text = st.text(self.where)
        if not st.complete and self.rate:
            left = max(0, st.total_bytes - st.bytes_done) / (self.rate * 1e9)
            text += f"; ~{left / 60:.0f} min left at the plan's {self.rate:g} GB/s"
        return text

    def _look(self) -> bool:
        """One look; True once the mirror is complete."""
        try:
            st = self.read()
        except Exception as e:  # noqa: BLE001 the bucket may be briefly unreadable; say so, go on
            self._phase.update(f"could not read {self.where}: {type(e).__name__}: {e}")
            return False
        self.last = st
        if st.complete:
            self._phase.update(self._text(st), fraction=1.0)
            self._phase.done(self._text(st))
            return True
        self._phase.update(self._text(st), fraction=st.fraction)
        return False

    def _run(self) -> None:
        while not self.wait(self._stop, self.poll_s):
            if self._look():
                return

    def __enter__(self) -> "MirrorWatch":
        self._phase = self.log.phase("weights-mirror", f"the mirror Job to fill {self.where}").start()
        if not self._look():
            self._thread = threading.Thread(target=self._run, name="weights-mirror-watch", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc) -> bool:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if not self._phase.closed and not self._look():
            seen = self._text(self.last) if self.last else "nothing read"
            self._phase.done(f"pulumi up stopped watching (its wait is over); the mirror Job goes on: {seen}")
        return False
