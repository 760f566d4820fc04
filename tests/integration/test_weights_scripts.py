"""The mirror (hub -> S3) and stage (S3 -> node disk) programs, run for real.

S3 is moto's server on 127.0.0.1 (tests/integration/local_s3.py, once for this module); the hub
is tests/doubles/hf_hub_double.py; the AWS CLI is PyPI's `awscli`. `mirror.py` runs as a script
(as in the mirror Job, importing s3uri.py from next to it) and `stage.sh` under bash (as in the
init container); both get their settings from the environment only.
"""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from components.aws_eks.weights import iam
from components.aws_eks.weights import mirror as m
from components.aws_eks.weights import scripts
from tests.doubles.hf_hub_double import HubDouble, Repo
from tests.doubles.s3_policy_gate import PolicyGate

REPO_ID = "moonshotai/Kimi-K3"
TOKEN = "hf_test_token_never_printed"
MIB = 1024 * 1024
PREFIX = "models/moonshotai/Kimi-K3"


def _files(seed: int = 1) -> dict:
    rnd = lambda n, k: hashlib.shake_256(b"%d-%d" % (seed, k)).digest(n)  # noqa: E731
    return {
        "config.json": b'{"model_type": "kimi_k3"}\n',
        "README.md": b"# Kimi K3 (test double)\n",
        "model-00001-of-00003.safetensors": rnd(12 * MIB + 7, 1),  # 3 parts of 5 MiB
        "model-00002-of-00003.safetensors": rnd(3 * MIB, 2),
        "model-00003-of-00003.safetensors": rnd(4096, 3),
        "tokenizer/tiktoken.model": rnd(2048, 4),
    }


@pytest.fixture
def hub():
    with HubDouble([Repo(REPO_ID, _files(), private=True)], token=TOKEN, page_size=2) as h:
        yield h


@pytest.fixture
def bucket(s3):
    return s3.new_bucket()


def run_mirror(s3, hub, bucket, **env):
    e = s3.env(KK3_REPO_ID=REPO_ID, KK3_S3_URI=f"s3://{bucket}/{PREFIX}", HF_ENDPOINT=hub.url,
               HF_TOKEN=TOKEN, KK3_PART_MIB="5", KK3_MIRROR_WORKERS="3", KK3_RETRIES="1",
               KK3_PROGRESS_S="0.2")
    e.update(env)
    return subprocess.run([sys.executable, str(scripts.path("mirror.py"))], env=e,
                          capture_output=True, text=True, timeout=120)


def stage_cmd():
    return ["bash", str(scripts.path("stage.sh"))]


def stage_env(s3, bucket, dest, **env):
    e = s3.env(KK3_S3_URI=f"s3://{bucket}/{PREFIX}", KK3_DEST=str(dest), KK3_S3_CONCURRENCY="8",
               KK3_S3_CHUNK_MB="5", KK3_PROGRESS_S="1")
    e.update(env)
    return e


def run_stage(s3, bucket, dest, **env):
    return subprocess.run(stage_cmd(), env=stage_env(s3, bucket, dest, **env), capture_output=True,
                          text=True, timeout=120)


def keys(s3, bucket):
    out = {}
    for page in s3.client().get_paginator("list_objects_v2").paginate(Bucket=bucket):
        for o in page.get("Contents", []):
            out[o["Key"]] = o["Size"]
    return out


class Watch:
    """Polls while a program runs: whenever the completion marker exists, is everything there?"""

    def __init__(self, seen_complete, everything_there):
        self.seen, self.there = seen_complete, everything_there
        self.violations, self.saw_marker = [], False
        self.stop = threading.Event()
        self.t = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self.stop.is_set():
            try:
                if self.seen():
                    self.saw_marker = True
                    if not self.there():
                        self.violations.append(time.monotonic())
            except Exception:  # a listing racing a write: try again
                pass
            time.sleep(0.02)

    def __enter__(self):
        self.t.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.t.join()
        # one last look once the program has ended (the marker may be seconds old by now)
        if self.seen():
            self.saw_marker = True
            if not self.there():
                self.violations.append(time.monotonic())


def s3_watch(s3, bucket, files):
    want = {f"{PREFIX}/{p}": len(c) for p, c in files.items()}
    return Watch(lambda: f"{PREFIX}/{m.COMPLETE}" in keys(s3, bucket),
                 lambda: all(keys(s3, bucket).get(k) == n for k, n in want.items()))


def node_watch(dest, files):
    return Watch(lambda: (dest / ".kimi-k3" / "staged").exists(),
                 lambda: all((dest / p).exists() and (dest / p).stat().st_size == len(c)
                             for p, c in files.items()))


# ---------------------------------------------------------------- mirror: hub -> S3

def test_mirror_copies_everything_verified_and_marks_complete_last(s3, hub, bucket):
    files = _files()
    with s3_watch(s3, bucket, files) as w:
        r = run_mirror(s3, hub, bucket)
    assert r.returncode == 0, r.stdout + r.stderr
    assert w.saw_marker and not w.violations
    have = keys(s3, bucket)
    for path, content in files.items():
        body = s3.client().get_object(Bucket=bucket, Key=f"{PREFIX}/{path}")["Body"].read()
        assert body == content, path
    manifest = s3.client().get_object(Bucket=bucket, Key=f"{PREFIX}/{m.MANIFEST}")["Body"].read().decode()
    rows = [line.split("\t") for line in manifest.splitlines() if not line.startswith("#")]
    assert {p: int(n) for n, _, p in rows} == {p: len(c) for p, c in files.items()}
    assert {p: d.split(":")[0] for _, d, p in rows}["config.json"] == "git-sha1"
    assert {p: d for _, d, p in rows}["model-00002-of-00003.safetensors"] == \
        "sha256:" + hashlib.sha256(files["model-00002-of-00003.safetensors"]).hexdigest()
    marker = s3.client().get_object(Bucket=bucket, Key=f"{PREFIX}/{m.COMPLETE}")["Body"].read().decode()
    assert f"manifest_sha256={hashlib.sha256(manifest.encode()).hexdigest()}" in marker
    assert set(have) == {f"{PREFIX}/{p}" for p in files} | {f"{PREFIX}/{m.MANIFEST}", f"{PREFIX}/{m.COMPLETE}"}
    # the tree was read page by page, the token went to the hub but never to the CDN
    assert sum(1 for meth, p, _ in hub.requests if "/tree/" in p) >= 3
    assert all(auth for meth, p, auth in hub.requests if p.startswith("/api/"))
    assert not any(auth for meth, p, auth in hub.requests if p.startswith("/cdn/"))
    assert "progress" in r.stdout and TOKEN not in r.stdout + r.stderr


def test_mirror_rerun_of_a_complete_mirror_downloads_nothing(s3, hub, bucket):
    assert run_mirror(s3, hub, bucket).returncode == 0
    before = dict(hub.served)
    r = run_mirror(s3, hub, bucket)
    assert r.returncode == 0 and "already complete" in r.stdout
    assert hub.served == before


def test_mirror_interrupted_copy_is_finished_by_a_rerun(s3, hub, bucket):
    big = "model-00001-of-00003.safetensors"
    hub.truncate_once[big] = 6 * MIB  # the connection drops in the middle of the second part
    with s3_watch(s3, bucket, _files()) as w:
        r = run_mirror(s3, hub, bucket, KK3_RETRIES="0")
    assert r.returncode == 1 and big in r.stdout
    assert not w.saw_marker
    have = keys(s3, bucket)
    assert f"{PREFIX}/{big}" not in have and f"{PREFIX}/{m.COMPLETE}" not in have
    assert not s3.client().list_multipart_uploads(Bucket=bucket).get("Uploads")  # aborted
    served = dict(hub.served)
    r = run_mirror(s3, hub, bucket)
    assert r.returncode == 0, r.stdout
    assert "resuming: 5 files already in S3, 1 to copy" in r.stdout
    assert {p: hub.served[p] - served.get(p, 0) for p in hub.served} == \
        {p: (1 if p == big else 0) for p in hub.served}
    body = s3.client().get_object(Bucket=bucket, Key=f"{PREFIX}/{big}")["Body"].read()
    assert body == _files()[big]


@pytest.mark.parametrize("fault", ["corrupt", "missing"])
def test_mirror_detects_a_corrupt_or_missing_file_and_writes_no_marker(s3, hub, bucket, fault):
    bad = "model-00002-of-00003.safetensors"
    getattr(hub, fault).add(bad)
    r = run_mirror(s3, hub, bucket)
    assert r.returncode == 1
    expect = "does not match the hub's checksum" if fault == "corrupt" else "HTTP 404"
    assert bad in r.stdout and expect in r.stdout, r.stdout
    have = keys(s3, bucket)
    assert f"{PREFIX}/{bad}" not in have and f"{PREFIX}/{m.COMPLETE}" not in have


def test_mirror_of_a_new_revision_withdraws_the_marker_first(s3, hub, bucket):
    assert run_mirror(s3, hub, bucket).returncode == 0
    repo = hub.repos[REPO_ID]
    repo.files = {k: v for k, v in _files(seed=2).items() if k != "README.md"}
    repo.commit = "fedcba9876543210fedcba9876543210fedcba98"
    repo.branches["main"] = repo.commit
    hub.missing.add("model-00003-of-00003.safetensors")  # the new revision cannot complete
    r = run_mirror(s3, hub, bucket)
    assert r.returncode == 1 and "removing its completion marker" in r.stdout
    assert f"{PREFIX}/{m.COMPLETE}" not in keys(s3, bucket)
    hub.missing.clear()
    r = run_mirror(s3, hub, bucket, KK3_PRUNE="1")
    assert r.returncode == 0 and "removed 1 objects" in r.stdout
    assert f"{PREFIX}/README.md" not in keys(s3, bucket)


def test_mirror_refuses_bad_settings_without_echoing_them(s3, hub, bucket):
    r = run_mirror(s3, hub, bucket, KK3_S3_URI="s3://Bad_Bucket/$(touch /tmp/kk3-canary)")
    assert r.returncode == 1 and "KK3_S3_URI is not an S3 URI" in r.stdout
    assert "touch" not in r.stdout


# ---------------------------------------------------------------- stage: S3 -> node disk

@pytest.fixture(scope="module")
def pristine(s3):
    """One mirror made by mirror.py for the module; each stage test gets a server-side copy."""
    with HubDouble([Repo(REPO_ID, _files(), private=True)], token=TOKEN, page_size=2) as h:
        bucket = s3.new_bucket()
        r = run_mirror(s3, h, bucket)
        assert r.returncode == 0, r.stdout
    return bucket


@pytest.fixture
def mirrored(s3, pristine, bucket):
    c = s3.client()
    for key in keys(s3, pristine):
        c.copy_object(Bucket=bucket, Key=key, CopySource={"Bucket": pristine, "Key": key})
    return bucket


def _same_as_hub(dest: Path, files: dict):
    for path, content in files.items():
        assert (dest / path).read_bytes() == content, path


def test_stage_copies_verifies_and_marks_last(s3, mirrored, tmp_path):
    dest = tmp_path / "models" / "Kimi-K3"
    with node_watch(dest, _files()) as w:
        r = run_stage(s3, mirrored, dest)
    assert r.returncode == 0, r.stdout + r.stderr
    assert w.saw_marker and not w.violations
    _same_as_hub(dest, _files())
    assert (dest / ".kimi-k3" / "staged").read_text() == s3.client().get_object(
        Bucket=mirrored, Key=f"{PREFIX}/{m.COMPLETE}")["Body"].read().decode()
    assert "staging 6 files" in r.stdout and "GB/s" in r.stdout


def test_stage_skips_a_node_that_is_already_staged(s3, mirrored, tmp_path):
    dest = tmp_path / "Kimi-K3"
    # a long progress interval: the script must still end at once (no child keeps stdout open,
    # or subprocess.run would wait for it until its timeout)
    assert run_stage(s3, mirrored, dest, KK3_PROGRESS_S="3600").returncode == 0
    mtimes = {p: (dest / p).stat().st_mtime_ns for p in _files()}
    r = run_stage(s3, mirrored, dest)
    assert r.returncode == 0 and "already staged on this node" in r.stdout
    assert {p: (dest / p).stat().st_mtime_ns for p in _files()} == mtimes


def test_stage_interrupted_by_a_kill_is_finished_by_a_rerun(s3, mirrored, tmp_path):
    dest = tmp_path / "Kimi-K3"
    env = stage_env(s3, mirrored, dest, KK3_S3_MAX_BANDWIDTH_MBPS="2", KK3_S3_CONCURRENCY="2")
    p = subprocess.Popen(stage_cmd(), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True, start_new_session=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not any(dest.glob("*.safetensors*")):
        time.sleep(0.05)
    time.sleep(0.5)
    os.killpg(p.pid, signal.SIGKILL)  # the pod is killed: no trap, no cleanup
    p.wait()
    assert not (dest / ".kimi-k3" / "staged").exists()
    big = dest / "model-00001-of-00003.safetensors"
    assert not big.exists() or big.stat().st_size != len(_files()[big.name])
    r = run_stage(s3, mirrored, dest)
    assert r.returncode == 0, r.stdout + r.stderr
    _same_as_hub(dest, _files())
    assert sorted(x.name for x in dest.iterdir()) == sorted(
        [".kimi-k3", "README.md", "config.json", "tokenizer"] +
        [f"model-0000{i}-of-00003.safetensors" for i in (1, 2, 3)])  # no temporary leftovers


def test_stage_repairs_partial_and_stale_files_from_an_earlier_run(s3, mirrored, tmp_path):
    dest = tmp_path / "Kimi-K3"
    dest.mkdir()
    files = _files()
    (dest / "config.json").write_bytes(files["config.json"])
    (dest / "model-00002-of-00003.safetensors").write_bytes(files["model-00002-of-00003.safetensors"][:1000])
    (dest / "model-00001-of-00003.safetensors.aB3dE9f0").write_bytes(b"x" * 100)  # a temp file
    (dest / "model-00009-of-00009.safetensors").write_bytes(b"an older revision's shard")
    r = run_stage(s3, mirrored, dest)
    assert r.returncode == 0, r.stdout + r.stderr
    _same_as_hub(dest, files)
    assert not (dest / "model-00009-of-00009.safetensors").exists()
    assert not (dest / "model-00001-of-00003.safetensors.aB3dE9f0").exists()


@pytest.mark.parametrize("damage", ["truncated", "deleted"])
def test_stage_detects_a_damaged_mirror_and_writes_no_marker(s3, mirrored, tmp_path, damage):
    key = f"{PREFIX}/model-00002-of-00003.safetensors"
    if damage == "truncated":
        s3.client().put_object(Bucket=mirrored, Key=key, Body=b"short")
    else:
        s3.client().delete_object(Bucket=mirrored, Key=key)
    dest = tmp_path / "Kimi-K3"
    r = run_stage(s3, mirrored, dest)
    assert r.returncode == 3, r.stdout + r.stderr
    expect = "has 5 bytes, the manifest says" if damage == "truncated" else "missing model-00002"
    assert expect in r.stdout and "not marking it staged" in r.stdout
    assert not (dest / ".kimi-k3" / "staged").exists()


def test_stage_when_the_mirror_is_not_complete(s3, mirrored, tmp_path):
    s3.client().delete_object(Bucket=mirrored, Key=f"{PREFIX}/{m.COMPLETE}")
    dest = tmp_path / "Kimi-K3"
    r = run_stage(s3, mirrored, dest, KK3_ON_INCOMPLETE="fallback")
    assert r.returncode == 0 and "leaving this node to the hub download" in r.stdout
    assert not (dest / ".kimi-k3" / "staged").exists() and not list(dest.glob("*.safetensors"))
    r = run_stage(s3, mirrored, dest, KK3_ON_INCOMPLETE="fail")
    assert r.returncode == 4 and "is not complete" in r.stdout
    r = run_stage(s3, mirrored, dest, KK3_ON_INCOMPLETE="wait", KK3_WAIT_S="2", KK3_WAIT_POLL_S="1")
    assert r.returncode == 4 and "still not complete after 2 s" in r.stdout


def test_stage_waits_for_a_mirror_that_completes(s3, hub, bucket, tmp_path):
    dest = tmp_path / "Kimi-K3"
    p = subprocess.Popen(stage_cmd(), env=stage_env(s3, bucket, dest, KK3_ON_INCOMPLETE="wait",
                                                     KK3_WAIT_S="60", KK3_WAIT_POLL_S="1"),
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert run_mirror(s3, hub, bucket).returncode == 0
    out, _ = p.communicate(timeout=90)
    assert p.returncode == 0 and "waiting for the mirror" in out, out
    _same_as_hub(dest, _files())


def test_stage_from_your_own_bucket_checks_against_its_listing(s3, bucket, tmp_path):
    files = _files(seed=3)
    for path, content in files.items():
        s3.client().put_object(Bucket=bucket, Key=f"{PREFIX}/{path}", Body=content)
    dest = tmp_path / "Kimi-K3"
    r = run_stage(s3, bucket, dest, KK3_REQUIRE_MARKER="0")
    assert r.returncode == 0, r.stdout + r.stderr
    _same_as_hub(dest, files)
    r = run_stage(s3, bucket, dest, KK3_REQUIRE_MARKER="0")
    assert "already staged" in r.stdout


@pytest.mark.parametrize("key,value", [
    ("KK3_S3_URI", "s3://bucket/$(touch CANARY)"),
    ("KK3_S3_URI", "s3://bucket/a/../b"),
    ("KK3_S3_URI", 's3://bucket/"; touch CANARY; "'),
    ("KK3_DEST", "/models/$(touch CANARY)"),
    ("KK3_DEST", "/"),
    ("KK3_S3_CONCURRENCY", "8; touch CANARY"),
    ("KK3_S3_CLIENT", "crt\n  endpoint_url = http://evil"),
])
def test_stage_refuses_bad_settings(s3, bucket, tmp_path, key, value):
    env = stage_env(s3, bucket, tmp_path / "d")
    env[key] = value.replace("CANARY", str(tmp_path / "canary"))
    r = subprocess.run(stage_cmd(), env=env, capture_output=True, text=True, timeout=30, cwd=tmp_path)
    assert r.returncode == 2, r.stdout + r.stderr
    assert key in r.stdout and not (tmp_path / "canary").exists()


# ---------------------------------------------------------------- compile cache: node <-> S3

class _Health:
    """A stand-in for vLLM's /health (200 once `ready` is set), on 127.0.0.1."""

    def __init__(self):
        import http.server

        outer = self
        self.ready = threading.Event()
        self.polls = 0  # GETs answered so far

        class H(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_GET(self):
                outer.polls += 1
                self.send_response(200 if outer.ready.is_set() and self.path == "/health" else 503)
                self.send_header("Content-Length", "0")
                self.end_headers()

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.port = self.server.server_address[1]

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def cache_env(s3, bucket, cache_dir, key="0123456789abcdef", **extra):
    return s3.env(KK3_CACHE_URI=f"s3://{bucket}/compile-cache", KK3_CACHE_KEY=key, KK3_RANK="0",
                  KK3_CACHE_DIR=str(cache_dir), KK3_POLL_S="1", **extra)


def entry_files(s3, bucket, prefix):
    """{path: size} of the files of the compile-cache entry at `prefix` (its entry object names the
    attempt that holds them), {} while there is no entry."""
    c = s3.client()
    try:
        text = c.get_object(Bucket=bucket, Key=prefix + ".kimi-k3/entry")["Body"].read().decode()
    except c.exceptions.NoSuchKey:
        return {}
    attempt = text.split()[1]
    return {k[len(prefix) + len(attempt) + 1:]: n for k, n in keys(s3, bucket).items()
            if k.startswith(f"{prefix}{attempt}/") and "/.kimi-k3/" not in k}


def run_cache(mode, env):
    return subprocess.run(["bash", str(scripts.path("compile_cache.sh")), mode], env=env,
                          capture_output=True, text=True, timeout=60)


def test_compile_cache_is_saved_after_health_and_restored_by_key(s3, bucket, tmp_path):
    first = tmp_path / "node1"
    r = run_cache("restore", cache_env(s3, bucket, first))
    assert r.returncode == 0 and "no compile cache" in r.stdout
    (first / "torch_compile_cache" / "abc" / "rank_0_0").mkdir(parents=True)
    files = {"torch_compile_cache/abc/rank_0_0/graph.py": b"g" * 5000,
             "torch_compile_cache/abc/rank_0_0/inductor.bin": os.urandom(6 * MIB)}
    for rel, data in files.items():
        (first / rel).write_bytes(data)
    health = _Health()
    prefix = "compile-cache/0123456789abcdef/rank-0/"
    marker = prefix + ".kimi-k3/entry"  # written last, once
    watch = Watch(lambda: marker in keys(s3, bucket),
                  lambda: entry_files(s3, bucket, prefix) == {k: len(v) for k, v in files.items()})
    # the sidecar and the restores run with exactly the serving role's policy (create-only writes)
    gate = PolicyGate(s3, iam.serving_policy(bucket, PREFIX, "compile-cache")).__enter__()
    env = cache_env(gate, bucket, first, KK3_HEALTH_HOST="127.0.0.1", KK3_HEALTH_PORT=str(health.port),
                    KK3_HEALTH_PATH="/health")
    p = subprocess.Popen(["bash", str(scripts.path("compile_cache.sh")), "save"], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        with watch:
            deadline = time.monotonic() + 30
            while health.polls < 1 and time.monotonic() < deadline:  # it asked, and got 503
                time.sleep(0.05)
            assert health.polls >= 1 and marker not in keys(s3, bucket)  # not before it is healthy
            health.ready.set()
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and marker not in keys(s3, bucket):
                time.sleep(0.2)
        assert p.poll() is None  # a sidecar: it idles, it never ends the pod
    finally:
        os.killpg(p.pid, signal.SIGTERM)
        out = p.communicate(timeout=30)[0]
        health.close()
    try:
        assert watch.saw_marker and not watch.violations, out
        assert not list(first.glob(".kimi-k3-outgoing"))
        second = tmp_path / "node2"
        r = run_cache("restore", cache_env(gate, bucket, second))
        assert r.returncode == 0 and "restored and verified 2 files" in r.stdout, r.stdout + r.stderr
        for rel, data in files.items():
            assert (second / rel).read_bytes() == data
        assert "already holds" in run_cache("restore", cache_env(gate, bucket, second)).stdout
        other = tmp_path / "node3"  # another launch spec: another key, nothing reused
        r = run_cache("restore", cache_env(gate, bucket, other, key="fedcba9876543210"))
        assert "no compile cache" in r.stdout and not list(other.rglob("*.bin"))
        assert not gate.denied and not gate.unknown, (gate.denied, gate.unknown)
    finally:
        gate.__exit__(None, None, None)


def test_compile_cache_refuses_bad_settings(s3, bucket, tmp_path):
    for extra in ({"KK3_CACHE_KEY": "$(id)"}, {"KK3_RANK": "0; id"},
                  {"KK3_CACHE_URI": "s3://b/../x"}, {"KK3_CACHE_DIR": "/"}):
        env = cache_env(s3, bucket, tmp_path / "c")
        env.update(extra)
        r = run_cache("restore", env)
        assert r.returncode == 2 and list(extra)[0] in r.stdout, r.stdout
