"""kimi-k3 weights mirror: copy one Hugging Face model repository into S3, verified and resumable.

Runs in the mirror Job on the system node group (a Python image, boto3 installed by pinned hash
from mirror-requirements.txt), so it is self-contained: stdlib + boto3, and `s3uri.py` next to
it. Settings come from the environment only (see `Settings.from_env`); nothing is ever pasted
into shell text.

What it does, in order:
1. resolve the revision to a commit and list the repository's files at that commit (path, size,
   checksum) from the hub;
2. for every file not yet in S3 with that size and checksum: stream it from the hub into S3
   (multipart, in parallel across files), hashing on the way; a file whose bytes do not match the
   hub's size or checksum makes the upload fail, so no object is ever left with wrong content;
3. list the prefix and check every file is there with the hub's size and checksum metadata;
4. write `.kimi-k3/manifest.tsv`, then, last, `.kimi-k3/complete`.
A rerun skips what is already there (resume); an interrupted multipart upload is not an object
(the bucket's lifecycle rule aborts it). stage.sh refuses a prefix without `complete`.

Hub contract (huggingface_hub 2.4.0: hf_api.py `model_info`, `_iter_repo_tree_pages`, `RepoFile`;
utils/_pagination.py; constants.py `HUGGINGFACE_CO_URL_TEMPLATE`, `HF_ENDPOINT`):
- GET {endpoint}/api/models/{repo_id}/revision/{revision} -> JSON object with "sha" (the commit)
- GET {endpoint}/api/models/{repo_id}/tree/{commit}?recursive=true&expand=false -> JSON list of
  {"type": "file"|"directory", "path", "size", "oid", "lfs": {"oid", "size", "pointerSize"}};
  more pages through a `Link: <url>; rel="next"` header. `oid` is the git blob id (sha1 of
  "blob <size>\\0" + content); `lfs.oid` is the sha256 of the content.
- GET {endpoint}/{repo_id}/resolve/{commit}/{path} -> the file, possibly via a redirect to a CDN;
  the token goes to the hub only (`Authorization: Bearer`), never to a redirect target.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Dict, List, Optional

try:  # part of the kimi-k3 package (tests, plan)
    from . import s3uri
except ImportError:  # in the mirror Job: s3uri.py sits next to this file
    import s3uri  # type: ignore[no-redef]

BOOK = ".kimi-k3"  # bookkeeping under the prefix: manifest.tsv, complete
MANIFEST = f"{BOOK}/manifest.tsv"
COMPLETE = f"{BOOK}/complete"
DIGEST_META = "kk3-digest"  # user metadata on every object: "sha256:<hex>" or "git-sha1:<hex>"
MANIFEST_HEADER = "# kimi-k3 weights manifest v1"
_REPO_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}$")
_REVISION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/-]{0,127}$")
_COMMIT = re.compile(r"^[0-9a-f]{40}$")
_HEX = {"sha256": re.compile(r"^[0-9a-f]{64}$"), "git-sha1": re.compile(r"^[0-9a-f]{40}$")}
MIB = 1024 * 1024


class MirrorError(Exception):
    """Something the operator must look at; the message says what and where (never a token)."""


@dataclass(frozen=True)
class Settings:
    repo_id: str
    revision: str
    dest: s3uri.S3Uri
    endpoint: str = "https://huggingface.co"
    token: Optional[str] = None
    workers: int = 8
    part_mib: int = 64
    part_concurrency: int = 4
    retries: int = 3
    progress_s: float = 30.0
    prune: bool = False
    timeout_s: float = 60.0

    @classmethod
    def from_env(cls, env=None) -> "Settings":
        env = os.environ if env is None else env

        def num(key, default, lo, hi, kind=int):
            raw = env.get(key, "")
            if raw == "":
                return default
            try:
                v = kind(raw)
            except ValueError:
                raise MirrorError(f"{key} is not a number")
            if not lo <= v <= hi:
                raise MirrorError(f"{key}={v} is out of range {lo}..{hi}")
            return v

        repo = env.get("KK3_REPO_ID", "")
        if not _REPO_ID.match(repo):
            raise MirrorError("KK3_REPO_ID is not a Hugging Face repo id (owner/name)")
        rev = env.get("KK3_REVISION", "") or "main"
        if not _REVISION.match(rev) or ".." in rev:
            raise MirrorError("KK3_REVISION is not a branch, tag or commit name")
        try:
            dest = s3uri.parse(env.get("KK3_S3_URI", ""))
        except ValueError as e:
            raise MirrorError(f"KK3_S3_URI is not an S3 URI: {e}")
        endpoint = (env.get("HF_ENDPOINT", "") or "https://huggingface.co").rstrip("/")
        if not re.match(r"^https?://[A-Za-z0-9.:\[\]-]+(/[A-Za-z0-9._~/-]*)?$", endpoint):
            raise MirrorError("HF_ENDPOINT is not an http(s) URL")
        return cls(
            repo_id=repo, revision=rev, dest=dest, endpoint=endpoint,
            token=env.get("HF_TOKEN") or None,
            workers=num("KK3_MIRROR_WORKERS", 8, 1, 64),
            part_mib=num("KK3_PART_MIB", 64, 5, 512),
            part_concurrency=num("KK3_PART_CONCURRENCY", 4, 1, 32),
            retries=num("KK3_RETRIES", 3, 0, 20),
            progress_s=num("KK3_PROGRESS_S", 30.0, 0.05, 3600.0, float),
            prune=env.get("KK3_PRUNE", "") in ("1", "true"),
            timeout_s=num("KK3_HTTP_TIMEOUT_S", 60.0, 1.0, 600.0, float),
        )


@dataclass(frozen=True)
class RepoFile:
    path: str
    size: int
    digest: str  # "sha256:<hex>" (LFS files) or "git-sha1:<hex>" (git blob id)


def log(msg: str) -> None:
    print(f"{time.strftime('%H:%M:%S', time.gmtime())} mirror: {msg}", flush=True)


def gb(n: float) -> str:
    return f"{n / 1e9:.1f}"


# ------------------------------------------------------------------ hub (stdlib HTTP)

class Hub:
    """The few hub endpoints the mirror needs; the token is never sent to a redirect target."""

    def __init__(self, s: Settings):
        self.s = s

    def _request(self, url: str, headers: Optional[Dict[str, str]] = None) -> urllib.request.Request:
        req = urllib.request.Request(url, headers={"User-Agent": "kimi-k3-mirror/1", **(headers or {})})
        if self.s.token:
            # unredirected: urllib does not carry it over to the CDN a download redirects to
            req.add_unredirected_header("Authorization", f"Bearer {self.s.token}")
        return req

    def _open(self, url: str, headers=None):
        try:
            return urllib.request.urlopen(self._request(url, headers), timeout=self.s.timeout_s)
        except urllib.error.HTTPError as e:
            hint = {401: " (a gated or private repo: set kimi-k3:hfToken)", 403: " (no access with "
                    "this token: accept the model's terms on the hub)", 404: " (no such repo, "
                    "revision or file)"}.get(e.code, "")
            raise MirrorError(f"hub answered HTTP {e.code} for {_safe_url(url)}{hint}") from None
        except (urllib.error.URLError, OSError) as e:
            raise MirrorError(f"cannot reach the hub at {_safe_url(url)}: {e}") from None

    def _json(self, url: str):
        with self._open(url) as r:
            body = r.read()
            link = r.headers.get("Link", "")
        try:
            return json.loads(body), link
        except ValueError:
            raise MirrorError(f"hub sent something that is not JSON for {_safe_url(url)}") from None

    def commit(self) -> str:
        q = urllib.parse.quote
        data, _ = self._json(f"{self.s.endpoint}/api/models/{self.s.repo_id}/revision/"
                             f"{q(self.s.revision, safe='')}")
        sha = data.get("sha") if isinstance(data, dict) else None
        if not isinstance(sha, str) or not _COMMIT.match(sha):
            raise MirrorError(f"hub did not return a commit for {self.s.repo_id}@{self.s.revision}")
        return sha

    def files(self, commit: str) -> List[RepoFile]:
        url: Optional[str] = (f"{self.s.endpoint}/api/models/{self.s.repo_id}/tree/{commit}"
                              f"?recursive=true&expand=false")
        out: List[RepoFile] = []
        pages = 0
        while url:
            page, link = self._json(url)
            pages += 1
            if not isinstance(page, list):
                raise MirrorError("hub tree listing is not a list")
            for entry in page:
                if isinstance(entry, dict) and entry.get("type") == "file":
                    out.append(_repo_file(entry))
            url = _next_link(link, self.s.endpoint)
            if pages > 10_000:
                raise MirrorError("hub tree listing does not end")
        if not out:
            raise MirrorError(f"{self.s.repo_id}@{commit} lists no files")
        paths = [f.path for f in out]
        if len(set(paths)) != len(paths):
            raise MirrorError("hub tree listing names a file twice")
        return sorted(out, key=lambda f: f.path)

    def download(self, commit: str, path: str):
        q = urllib.parse.quote(path, safe="/")
        return self._open(f"{self.s.endpoint}/{self.s.repo_id}/resolve/{commit}/{q}")


def _safe_url(url: str) -> str:
    return url.split("?", 1)[0]


def _next_link(link: str, endpoint: str) -> Optional[str]:
    """The `rel="next"` URL of a Link header (RFC 8288), only if it stays on the hub."""
    for part in link.split(","):
        m = re.match(r'\s*<([^>]*)>\s*;(.*)$', part)
        if m and re.search(r'rel="?next"?', m.group(2)):
            nxt = urllib.parse.urljoin(endpoint + "/", m.group(1))
            if urllib.parse.urlsplit(nxt).netloc != urllib.parse.urlsplit(endpoint).netloc:
                raise MirrorError("hub pagination points to another host")
            return nxt
    return None


def check_path(path: object) -> str:
    """A repository path safe to use as an object key and a local file name (or MirrorError)."""
    if not isinstance(path, str) or not path or len(path) > 1024:
        raise MirrorError("hub listed a file without a usable path")
    parts = path.split("/")
    if (path.startswith("/") or any(p in ("", ".", "..") for p in parts)
            or any(ord(c) < 0x20 or c in "\\\x7f" for c in path)):
        raise MirrorError(f"hub listed an unsafe path {path!r}")
    if parts[0] == BOOK:
        raise MirrorError(f"hub listed {path!r}, which collides with kimi-k3's bookkeeping")
    return path


def _repo_file(entry: dict) -> RepoFile:
    path = check_path(entry.get("path"))
    size = entry.get("size")
    lfs = entry.get("lfs")
    if isinstance(lfs, dict):
        digest, size = f"sha256:{lfs.get('oid')}", lfs.get("size", size)
    else:
        digest = f"git-sha1:{entry.get('oid')}"
    if not isinstance(size, int) or size < 0:
        raise MirrorError(f"hub listed {path!r} without a size")
    algo, _, hexd = digest.partition(":")
    if not _HEX[algo].match(str(hexd)):
        raise MirrorError(f"hub listed {path!r} without a usable checksum")
    return RepoFile(path, size, digest)


# ------------------------------------------------------------------ verified stream

class VerifyingReader:
    """File-like reader over a hub response that fails the upload if the bytes are not the hub's.

    boto3 reads it to the end; at the end (or on too many bytes) it raises, so s3transfer aborts
    the (multipart) upload and no object with wrong content is ever created.
    """

    def __init__(self, raw, f: RepoFile, progress: "Progress"):
        self.raw, self.f, self.progress = raw, f, progress
        algo = f.digest.split(":", 1)[0]
        self.h = hashlib.sha256() if algo == "sha256" else hashlib.sha1(b"blob %d\0" % f.size)
        self.n = 0
        self.checked = False

    def read(self, size: int = -1) -> bytes:
        chunk = self.raw.read(size if size and size > 0 else MIB)
        if chunk:
            self.n += len(chunk)
            if self.n > self.f.size:
                raise MirrorError(f"{self.f.path}: hub sent more than its listed {self.f.size} bytes")
            self.h.update(chunk)
            self.progress.add(len(chunk))
            return chunk
        self._check()
        return b""

    def _check(self):
        if self.checked:
            return
        self.checked = True
        if self.n != self.f.size:
            raise MirrorError(f"{self.f.path}: got {self.n} bytes, the hub lists {self.f.size}")
        got = f"{self.f.digest.split(':', 1)[0]}:{self.h.hexdigest()}"
        if got != self.f.digest:
            raise MirrorError(f"{self.f.path}: content does not match the hub's checksum "
                              f"({self.f.digest.split(':', 1)[0]})")


class Progress:
    """Bytes copied so far; a thread logs them every `every_s` seconds."""

    def __init__(self, total: int, files: int, every_s: float):
        self.total, self.files, self.every_s = total, files, every_s
        self.done_bytes = 0
        self.done_files = 0
        self.lock = threading.Lock()
        self.t0 = time.monotonic()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def add(self, n: int):
        with self.lock:
            self.done_bytes += n

    def file_done(self, n_bytes_skipped: int = 0):
        with self.lock:
            self.done_files += 1
            self.done_bytes += n_bytes_skipped

    def line(self) -> str:
        with self.lock:
            b, f = self.done_bytes, self.done_files
        dt = max(time.monotonic() - self.t0, 1e-6)
        rate = b / dt
        eta = (self.total - b) / rate if rate > 0 else float("inf")
        pct = 100.0 * b / self.total if self.total else 100.0
        eta_s = "?" if eta == float("inf") else f"{eta / 60:.0f} min"
        return (f"progress {gb(b)}/{gb(self.total)} GB ({pct:.0f}%), files {f}/{self.files}, "
                f"{rate / 1e9:.2f} GB/s, eta {eta_s}")

    def _run(self):
        while not self.stop.wait(self.every_s):
            log(self.line())

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()


# ------------------------------------------------------------------ S3 side

def s3_client(s: Settings):
    import boto3
    from botocore.config import Config

    return boto3.client("s3", config=Config(retries={"max_attempts": 10, "mode": "adaptive"},
                                            max_pool_connections=max(10, s.workers * s.part_concurrency + 4)))


def existing_objects(s3, dest: s3uri.S3Uri) -> Dict[str, int]:
    """{relative path: size} of every object under the prefix."""
    out: Dict[str, int] = {}
    base = dest.key("")
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=dest.bucket, Prefix=base):
        for obj in page.get("Contents", []):
            out[obj["Key"][len(base):]] = obj["Size"]
    return out


def digest_of(s3, dest: s3uri.S3Uri, path: str) -> Optional[str]:
    head = s3.head_object(Bucket=dest.bucket, Key=dest.key(path))
    return head.get("Metadata", {}).get(DIGEST_META)


def manifest_text(repo_id: str, commit: str, files: List[RepoFile]) -> str:
    lines = [MANIFEST_HEADER, f"# repo {repo_id}", f"# revision {commit}",
             f"# files {len(files)}", f"# bytes {sum(f.size for f in files)}"]
    lines += [f"{f.size}\t{f.digest}\t{f.path}" for f in files]
    return "\n".join(lines) + "\n"


def complete_text(repo_id: str, commit: str, files: List[RepoFile], manifest: str) -> str:
    return (f"repo={repo_id}\nrevision={commit}\nfiles={len(files)}\n"
            f"bytes={sum(f.size for f in files)}\n"
            f"manifest_sha256={hashlib.sha256(manifest.encode()).hexdigest()}\n")


def exists(s3, dest: s3uri.S3Uri, path: str) -> bool:
    """Is the object `path` under the prefix there? Asked with ListObjectsV2(Prefix=<its key>),
    which the job's role may do (s3:ListBucket under the model prefix, iam.py), never with
    HEAD/GET: S3 answers those 403, not 404, for a missing key unless the request's own context
    grants s3:ListBucket (S3 API Reference, GetObject/HeadObject "Permissions",
    https://docs.aws.amazon.com/AmazonS3/latest/API/API_GetObject.html), and a GetObject carries
    no `s3:prefix`, so a prefix-conditioned grant never counts there.

    The first key listed under a prefix equal to a key is that key if it exists (keys list in
    UTF-8 binary order and a string sorts before its extensions)."""
    key = dest.key(path)
    page = s3.list_objects_v2(Bucket=dest.bucket, Prefix=key, MaxKeys=1)
    return any(o.get("Key") == key for o in page.get("Contents", []))


def _get_text(s3, dest: s3uri.S3Uri, path: str) -> Optional[str]:
    """The object's text, or None if it is not there (looked up by listing: `exists`)."""
    from botocore.exceptions import ClientError

    if not exists(s3, dest, path):
        return None
    try:
        return s3.get_object(Bucket=dest.bucket, Key=dest.key(path))["Body"].read().decode()
    except ClientError as e:
        if e.response.get("Error", {}).get("Code") in ("NoSuchKey", "404"):
            return None  # deleted between the listing and the read
        raise


def _field(text: Optional[str], name: str) -> Optional[str]:
    for line in (text or "").splitlines():
        k, _, v = line.partition("=")
        if k == name:
            return v
    return None


# ------------------------------------------------------------------ the copy

def copy_one(s: Settings, hub: Hub, s3, commit: str, f: RepoFile, progress: Progress) -> None:
    from boto3.s3.transfer import TransferConfig

    cfg = TransferConfig(multipart_threshold=s.part_mib * MIB, multipart_chunksize=s.part_mib * MIB,
                         max_concurrency=s.part_concurrency, use_threads=True)
    last: Optional[BaseException] = None
    for attempt in range(s.retries + 1):
        reader = None
        try:
            with hub.download(commit, f.path) as raw:
                reader = VerifyingReader(raw, f, progress)
                s3.upload_fileobj(reader, s.dest.bucket, s.dest.key(f.path),
                                  ExtraArgs={"Metadata": {DIGEST_META: f.digest}}, Config=cfg)
            if reader.n != f.size or not reader.checked:
                raise MirrorError(f"{f.path}: upload ended before the hub's {f.size} bytes")
            progress.file_done()
            log(f"copied {f.path} ({gb(f.size)} GB)")
            return
        except MirrorError as e:
            last = e
        except Exception as e:  # network errors mid-stream, S3 errors: retried, then reported
            last = e
        if reader is not None:
            progress.add(-reader.n)
        if attempt < s.retries:
            log(f"retrying {f.path} ({attempt + 1}/{s.retries}): {_reason(last)}")
            time.sleep(min(2 ** attempt, 30))
    raise MirrorError(f"{f.path}: {_reason(last)}")


def _reason(e: Optional[BaseException]) -> str:
    if e is None:
        return "unknown error"
    cause = e
    # s3transfer wraps what the reader raised; report the innermost MirrorError if there is one
    while cause is not None and not isinstance(cause, MirrorError):
        cause = cause.__cause__ or cause.__context__
    return str(cause or e)


def verify(s3, dest: s3uri.S3Uri, files: List[RepoFile]) -> List[str]:
    """Problems with the prefix against the hub's listing (empty list = complete)."""
    have = existing_objects(s3, dest)
    problems = []
    for f in files:
        size = have.get(f.path)
        if size is None:
            problems.append(f"missing {f.path}")
        elif size != f.size:
            problems.append(f"{f.path}: {size} bytes in S3, the hub lists {f.size}")
        elif digest_of(s3, dest, f.path) != f.digest:
            problems.append(f"{f.path}: checksum metadata differs from the hub's")
    return problems


def run(s: Settings, s3=None) -> int:
    s3 = s3 or s3_client(s)
    hub = Hub(s)
    commit = hub.commit()
    files = hub.files(commit)
    total = sum(f.size for f in files)
    log(f"{s.repo_id}@{s.revision} is commit {commit}: {len(files)} files, {gb(total)} GB "
        f"-> {s.dest}/")
    manifest = manifest_text(s.repo_id, commit, files)
    marker = complete_text(s.repo_id, commit, files, manifest)
    if _complete(s3, s.dest, files, marker):
        log("mirror already complete for this commit; nothing to do")
        return 0
    _copy_missing(s, hub, s3, commit, files, total)
    _verify(s3, s.dest, files)
    _extra_objects(s3, s, files)
    s3.put_object(Bucket=s.dest.bucket, Key=s.dest.key(MANIFEST), Body=manifest.encode())
    # last: the one object that says "complete"; stage.sh checks the manifest against it
    s3.put_object(Bucket=s.dest.bucket, Key=s.dest.key(COMPLETE), Body=marker.encode())
    log(f"complete: {len(files)} files, {gb(total)} GB verified; wrote {s.dest}/{COMPLETE}")
    return 0


def _complete(s3, dest: s3uri.S3Uri, files: List[RepoFile], marker: str) -> bool:
    """True when the mirror already holds this commit, verified; otherwise any completion
    marker is removed first (another commit, or a damaged mirror: stagers must not use it
    while it changes)."""
    current = _get_text(s3, dest, COMPLETE)
    if current == marker and not verify(s3, dest, files):
        return True
    if current is not None:
        log("mirror holds another revision or is damaged: removing its completion marker first")
        s3.delete_object(Bucket=dest.bucket, Key=dest.key(COMPLETE))
    return False


def _copy_missing(s: Settings, hub: Hub, s3, commit: str, files: List[RepoFile], total: int) -> None:
    """Copy every file not yet in S3 with the hub's size and checksum, in parallel; every failed
    file is reported, then MirrorError (a rerun resumes)."""
    have = existing_objects(s3, s.dest)
    todo: List[RepoFile] = []
    with Progress(total, len(files), s.progress_s) as progress:
        for f in files:
            if have.get(f.path) == f.size and digest_of(s3, s.dest, f.path) == f.digest:
                progress.file_done(f.size)
            else:
                todo.append(f)
        if len(todo) < len(files):
            log(f"resuming: {len(files) - len(todo)} files already in S3, {len(todo)} to copy")
        errors: List[str] = []
        with ThreadPoolExecutor(max_workers=s.workers) as pool:
            futures = {pool.submit(copy_one, s, hub, s3, commit, f, progress): f for f in todo}
            for fut in as_completed(futures):
                try:
                    fut.result()
                except Exception as e:  # report every failed file, then fail the Job
                    errors.append(_reason(e))
        log(progress.line())
    if errors:
        for e in errors:
            log(f"FAILED {e}")
        raise MirrorError(f"{len(errors)} of {len(todo)} files failed; rerun the Job to resume")


def _verify(s3, dest: s3uri.S3Uri, files: List[RepoFile]) -> None:
    problems = verify(s3, dest, files)
    if problems:
        for p in problems[:20]:
            log(f"VERIFY {p}")
        raise MirrorError(f"verification failed: {len(problems)} problems; no completion marker "
                          f"written")


def _extra_objects(s3, s: Settings, files: List[RepoFile]) -> None:
    """Objects under the prefix the hub no longer lists: removed with KK3_PRUNE, else noted."""
    extra = sorted(set(existing_objects(s3, s.dest)) - {f.path for f in files} - {MANIFEST})
    if not extra:
        return
    if s.prune:
        for path in extra:
            s3.delete_object(Bucket=s.dest.bucket, Key=s.dest.key(path))
        log(f"removed {len(extra)} objects the hub no longer lists")
    else:
        log(f"note: {len(extra)} objects under the prefix are not in the hub's listing "
            f"(e.g. {extra[0]}); stage.sh deletes them from nodes")


def main(argv=None) -> int:
    try:
        return run(Settings.from_env())
    except MirrorError as e:
        log(f"ERROR: {e}")
        return 1


if __name__ == "__main__":
    sys.exit(main())
