"""The weights programs with exactly the permissions the stack grants them.

mirror.py, stage.sh and compile_cache.sh run against moto's S3 through tests/doubles/
s3_policy_gate.py, which enforces the very policy document components/aws_eks/weights/iam.py
renders for that role (and S3's documented 403 for a missing key without s3:ListBucket). A
first mirror run finds no completion marker; a first stage finds none; your own bucket may be a
bucket root (`s3://bucket`).
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from components.aws_eks.weights import iam
from components.aws_eks.weights import mirror as m
from components.aws_eks.weights import scripts
from tests.doubles.hf_hub_double import HubDouble, Repo
from tests.doubles.s3_policy_gate import PolicyGate, allowed
from tests.integration.test_weights_scripts import (PREFIX, REPO_ID, TOKEN, _files, _same_as_hub, cache_env,
                                                    keys, run_cache, run_mirror)


@pytest.fixture
def bucket(s3):
    return s3.new_bucket()


@pytest.fixture
def hub():
    with HubDouble([Repo(REPO_ID, _files(), private=True)], token=TOKEN, page_size=2) as h:
        yield h


def mirror_run(gate, hub, bucket):
    env = gate.env(KK3_REPO_ID=REPO_ID, KK3_S3_URI=f"s3://{bucket}/{PREFIX}", HF_ENDPOINT=hub.url,
                   HF_TOKEN=TOKEN, KK3_PART_MIB="5", KK3_MIRROR_WORKERS="3", KK3_RETRIES="1",
                   KK3_PROGRESS_S="0.2")
    return subprocess.run([sys.executable, str(scripts.path("mirror.py"))], env=env,
                          capture_output=True, text=True, timeout=120)


def stage_run(gate, uri, dest, **extra):
    env = gate.env(KK3_S3_URI=uri, KK3_DEST=str(dest), KK3_S3_CONCURRENCY="8", KK3_S3_CHUNK_MB="5",
                   KK3_PROGRESS_S="1", **extra)
    return subprocess.run(["bash", str(scripts.path("stage.sh"))], env=env, capture_output=True,
                          text=True, timeout=120)


def test_the_double_answers_a_missing_key_403_without_list_and_404_with_it(s3, bucket):
    """The contract the scripts are written against, seen through the double."""
    from botocore.exceptions import ClientError

    scoped = iam.mirror_policy(bucket, PREFIX)
    with PolicyGate(s3, scoped) as gate:
        with pytest.raises(ClientError) as e:
            gate.client().get_object(Bucket=bucket, Key=f"{PREFIX}/{m.COMPLETE}")
        assert e.value.response["Error"]["Code"] == "AccessDenied"
        with pytest.raises(ClientError) as e:
            gate.client().head_object(Bucket=bucket, Key=f"{PREFIX}/{m.COMPLETE}")
        assert e.value.response["Error"]["Code"] == "403"
        listed = gate.client().list_objects_v2(Bucket=bucket, Prefix=f"{PREFIX}/{m.COMPLETE}", MaxKeys=1)
        assert listed["KeyCount"] == 0
        with pytest.raises(ClientError):  # outside the prefix: no listing either
            gate.client().list_objects_v2(Bucket=bucket, Prefix="other/")
    unconditioned = {"Statement": [{"Effect": "Allow", "Action": ["s3:GetObject", "s3:ListBucket"],
                                    "Resource": [f"arn:aws:s3:::{bucket}", f"arn:aws:s3:::{bucket}/*"]}]}
    with PolicyGate(s3, unconditioned) as gate:
        with pytest.raises(ClientError) as e:
            gate.client().get_object(Bucket=bucket, Key="missing")
        assert e.value.response["Error"]["Code"] == "NoSuchKey"


def test_first_mirror_run_with_the_jobs_own_policy_completes(s3, hub, bucket):
    """No marker yet: the job must not read it with GET (403 under its role) but list it."""
    with PolicyGate(s3, iam.mirror_policy(bucket, PREFIX)) as gate:
        r = mirror_run(gate, hub, bucket)
        assert r.returncode == 0, r.stdout + r.stderr
        assert not gate.unknown, gate.unknown
        assert f"{PREFIX}/{m.COMPLETE}" in keys(s3, bucket)
        assert not [d for d in gate.denied if d[2] != "s3:ListBucketMultipartUploads"], gate.denied
        again = mirror_run(gate, hub, bucket)  # a complete mirror: read the marker, copy nothing
        assert again.returncode == 0 and "already complete" in again.stdout, again.stdout + again.stderr


def test_first_stage_with_the_pods_own_policy_falls_back_instead_of_failing(s3, bucket, tmp_path):
    """An empty mirror: stage.sh sees 'not complete yet' (listing), never a 403 it dies on."""
    policy = iam.serving_policy(bucket, PREFIX, "compile-cache")
    with PolicyGate(s3, policy) as gate:
        r = stage_run(gate, f"s3://{bucket}/{PREFIX}", tmp_path / "Kimi-K3", KK3_ON_INCOMPLETE="fallback")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "leaving this node to the hub download" in r.stdout


def test_stage_of_a_complete_mirror_with_the_pods_own_policy(s3, hub, bucket, tmp_path):
    assert run_mirror(s3, hub, bucket).returncode == 0
    with PolicyGate(s3, iam.serving_policy(bucket, PREFIX, "compile-cache")) as gate:
        dest = tmp_path / "Kimi-K3"
        r = stage_run(gate, f"s3://{bucket}/{PREFIX}", dest)
        assert r.returncode == 0, r.stdout + r.stderr
        assert not gate.denied and not gate.unknown, (gate.denied, gate.unknown)
    _same_as_hub(dest, _files())


@pytest.mark.parametrize("uri", ["s3://{b}", "s3://{b}/"])
def test_your_own_bucket_at_its_root_stages_with_its_policy(s3, bucket, tmp_path, uri):
    files = _files(seed=5)
    for path, content in files.items():
        s3.client().put_object(Bucket=bucket, Key=path, Body=content)
    policy = iam.serving_policy(bucket, "", None)
    assert "//" not in str(policy)
    with PolicyGate(s3, policy) as gate:
        dest = tmp_path / "Kimi-K3"
        r = stage_run(gate, uri.format(b=bucket), dest, KK3_REQUIRE_MARKER="0")
        assert r.returncode == 0, r.stdout + r.stderr + str(gate.denied)
    _same_as_hub(dest, files)


def test_compile_cache_restore_with_the_pods_own_policy(s3, bucket, tmp_path):
    with PolicyGate(s3, iam.serving_policy(bucket, PREFIX, "compile-cache")) as gate:
        r = run_cache("restore", cache_env(gate, bucket, tmp_path / "node1"))
    assert r.returncode == 0 and "no compile cache" in r.stdout, r.stdout + r.stderr


def test_the_grant_for_a_prefix_lists_only_that_prefix():
    doc = iam.serving_policy("b", "models/x", None)
    ctx = lambda p: {"s3:prefix": p}  # noqa: E731
    assert allowed(doc, "s3:ListBucket", "arn:aws:s3:::b", ctx("models/x/.kimi-k3/complete"))
    assert allowed(doc, "s3:ListBucket", "arn:aws:s3:::b", ctx("models/x/"))
    assert not allowed(doc, "s3:ListBucket", "arn:aws:s3:::b", ctx("models/xy/"))
    assert not allowed(doc, "s3:ListBucket", "arn:aws:s3:::b", {})
    assert allowed(doc, "s3:GetObject", "arn:aws:s3:::b/models/x/a.safetensors", {})
    assert not allowed(doc, "s3:GetObject", "arn:aws:s3:::b/models/xy/a", {})


# ---------------------------------------------------------------- compile cache: write once, verified

CACHE_PREFIX = "compile-cache/0123456789abcdef/rank-0/"  # cache_env's key, rank 0
ATTEMPT = "00112233aabbccdd"


def _sha(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()


def _write_entry(client, bucket, files, attempt=ATTEMPT, manifest=None):
    """An entry laid out as compile_cache.sh saves one: the files and their `sha256sum` manifest
    under the attempt, then `.kimi-k3/entry` naming both (every object created, never replaced)."""
    for path, data in files.items():
        client.put_object(Bucket=bucket, Key=f"{CACHE_PREFIX}{attempt}/{path}", Body=data, IfNoneMatch="*")
    if manifest is None:
        manifest = "".join(f"{_sha(files[p])}  {p}\n" for p in sorted(files)).encode()
    client.put_object(Bucket=bucket, Key=f"{CACHE_PREFIX}{attempt}/.kimi-k3/manifest", Body=manifest,
                      IfNoneMatch="*")
    client.put_object(Bucket=bucket, Key=f"{CACHE_PREFIX}.kimi-k3/entry", IfNoneMatch="*",
                      Body=f"attempt {attempt}\nmanifest {_sha(manifest)}\n".encode())


CACHE_FILES = {"torch_compile_cache/abc/rank_0_0/computation_graph.py": b"def forward(x):\n    return x\n",
               "torch_compile_cache/abc/rank_0_0/inductor/kernel.bin": bytes(range(256)) * 40}


def _code(err) -> str:
    return err.value.response["Error"]["Code"]


def test_the_serving_role_creates_compile_cache_objects_but_never_replaces_or_deletes_one(s3, bucket):
    """The hostile second writer: the serving role itself (any pod of the stack, or code the model
    repository runs in one), through exactly the policy iam.py renders."""
    from botocore.exceptions import ClientError

    with PolicyGate(s3, iam.serving_policy(bucket, PREFIX, "compile-cache")) as gate:
        c = gate.client()
        _write_entry(c, bucket, CACHE_FILES)  # what a saving pod does: allowed
        first = f"{CACHE_PREFIX}{ATTEMPT}/torch_compile_cache/abc/rank_0_0/computation_graph.py"
        for key in (first, f"{CACHE_PREFIX}.kimi-k3/entry", f"{CACHE_PREFIX}{ATTEMPT}/.kimi-k3/manifest"):
            with pytest.raises(ClientError) as e:  # conditional: S3 refuses to replace it
                c.put_object(Bucket=bucket, Key=key, Body=b"evil", IfNoneMatch="*")
            assert _code(e) == "PreconditionFailed"
            with pytest.raises(ClientError) as e:  # unconditional: the role may not even ask
                c.put_object(Bucket=bucket, Key=key, Body=b"evil")
            assert _code(e) == "AccessDenied"
            with pytest.raises(ClientError) as e:
                c.delete_object(Bucket=bucket, Key=key)
            assert _code(e) == "AccessDenied"
        with pytest.raises(ClientError) as e:  # multipart carries no If-None-Match until the end
            c.create_multipart_upload(Bucket=bucket, Key=f"{CACHE_PREFIX}{ATTEMPT}/big.bin")
        assert _code(e) == "AccessDenied"
        with pytest.raises(ClientError) as e:  # the weights stay read-only
            c.put_object(Bucket=bucket, Key=f"{PREFIX}/evil.py", Body=b"x", IfNoneMatch="*")
        assert _code(e) == "AccessDenied"
        assert not gate.unknown, gate.unknown
    got = s3.client().get_object(Bucket=bucket, Key=first)["Body"].read()
    assert got == CACHE_FILES["torch_compile_cache/abc/rank_0_0/computation_graph.py"]


def _restore(gate, bucket, node):
    return run_cache("restore", cache_env(gate, bucket, node))


def test_a_saved_entry_is_restored_verified_with_the_pods_own_policy(s3, bucket, tmp_path):
    _write_entry(s3.client(), bucket, CACHE_FILES)
    with PolicyGate(s3, iam.serving_policy(bucket, PREFIX, "compile-cache")) as gate:
        r = _restore(gate, bucket, tmp_path / "node")
        assert not gate.denied and not gate.unknown, (gate.denied, gate.unknown)
    assert r.returncode == 0 and "restored and verified 2 files" in r.stdout, r.stdout + r.stderr
    for path, data in CACHE_FILES.items():
        assert (tmp_path / "node" / path).read_bytes() == data
    assert not list((tmp_path / "node").glob(".kimi-k3-incoming*"))


def _added_by_the_role(s3, bucket):
    """A pod adds a file to a saved entry: a new key, which the role may create."""
    with PolicyGate(s3, iam.serving_policy(bucket, PREFIX, "compile-cache")) as gate:
        gate.client().put_object(Bucket=bucket, Key=f"{CACHE_PREFIX}{ATTEMPT}/torch_compile_cache/abc/"
                                 "rank_0_0/evil.py", Body=b"import os\n", IfNoneMatch="*")


def _replaced_by_an_admin(s3, bucket):
    """Bytes replaced by someone the role's policy does not bind (or a mixed, broken upload)."""
    s3.client().put_object(Bucket=bucket, Key=f"{CACHE_PREFIX}{ATTEMPT}/torch_compile_cache/abc/rank_0_0/"
                           "computation_graph.py", Body=b"import os; os.system('id')\n")


def _hostile_manifest(s3, bucket):
    """An entry whose manifest points outside the cache directory."""
    c = s3.client()
    for k in list(keys(s3, bucket)):
        c.delete_object(Bucket=bucket, Key=k)
    _write_entry(c, bucket, CACHE_FILES, manifest=f"{_sha(b'x')}  ../../etc/cron.d/x\n".encode())


@pytest.mark.parametrize("tamper", [_added_by_the_role, _replaced_by_an_admin, _hostile_manifest])
def test_the_restore_refuses_a_tampered_entry(s3, bucket, tmp_path, tamper):
    _write_entry(s3.client(), bucket, CACHE_FILES)
    tamper(s3, bucket)
    node = tmp_path / "node"
    with PolicyGate(s3, iam.serving_policy(bucket, PREFIX, "compile-cache")) as gate:
        r = _restore(gate, bucket, node)
    assert r.returncode == 0 and "REFUSED the compile cache" in r.stdout, r.stdout + r.stderr
    assert [p.name for p in node.iterdir()] == []  # nothing of it, not even the restored mark
