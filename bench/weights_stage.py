"""Throughput of the mirror (hub double -> S3) and stage (S3 -> local disk) programs on this machine.

A sanity check of the scripts, not a claim about AWS: S3 is moto's server on 127.0.0.1 (one
Python process), the hub is tests/doubles/hf_hub_double.py, the AWS CLI is PyPI's v1 (the
classic transfer client; the init container's v2 uses CRT), all on the same 2 cores.

    .venv/bin/python bench/weights_stage.py [--files 4] [--mib 256] [--concurrency 16]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from components.aws_eks.weights import scripts  # noqa: E402
from tests.doubles.hf_hub_double import HubDouble, Repo  # noqa: E402
from tests.integration.local_s3 import LocalS3  # noqa: E402

PREFIX = "models/moonshotai/Kimi-K3"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=4)
    ap.add_argument("--mib", type=int, default=256)
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--chunk-mb", type=int, default=16)
    a = ap.parse_args()
    files = {f"model-{i:05d}-of-{a.files:05d}.safetensors":
             hashlib.shake_256(b"%d" % i).digest(a.mib * 1024 * 1024) for i in range(a.files)}
    total = sum(len(v) for v in files.values())
    s3 = LocalS3().start()
    try:
        bucket = s3.new_bucket()
        with HubDouble([Repo("moonshotai/Kimi-K3", files)]) as hub:
            env = s3.env(KK3_REPO_ID="moonshotai/Kimi-K3", KK3_S3_URI=f"s3://{bucket}/{PREFIX}",
                         HF_ENDPOINT=hub.url, KK3_PART_MIB=str(max(5, a.chunk_mb)),
                         KK3_MIRROR_WORKERS="4", KK3_PROGRESS_S="3600")
            t0 = time.monotonic()
            r = subprocess.run([sys.executable, str(scripts.path("mirror.py"))], env=env,
                               capture_output=True, text=True)
            mirror_s = time.monotonic() - t0
            assert r.returncode == 0, r.stdout + r.stderr
        with tempfile.TemporaryDirectory() as d:
            dest = Path(d) / "Kimi-K3"
            env = s3.env(KK3_S3_URI=f"s3://{bucket}/{PREFIX}", KK3_DEST=str(dest),
                         KK3_S3_CONCURRENCY=str(a.concurrency), KK3_S3_CHUNK_MB=str(a.chunk_mb),
                         KK3_PROGRESS_S="3600")
            t0 = time.monotonic()
            r = subprocess.run(["bash", str(scripts.path("stage.sh"))], env=env,
                               capture_output=True, text=True)
            stage_s = time.monotonic() - t0
            assert r.returncode == 0, r.stdout + r.stderr
            t0 = time.monotonic()
            r = subprocess.run(["bash", str(scripts.path("stage.sh"))], env=env,
                               capture_output=True, text=True)
            skip_s = time.monotonic() - t0
            assert "already staged" in r.stdout
    finally:
        s3.stop()
    gb = total / 1e9
    print(f"data: {a.files} files x {a.mib} MiB = {gb:.2f} GB; cores: {os.cpu_count()}")
    print(f"mirror (hub double -> moto): {mirror_s:.1f} s, {gb / mirror_s:.3f} GB/s")
    print(f"stage (moto -> disk, AWS CLI v1, {a.concurrency} x {a.chunk_mb} MB): {stage_s:.1f} s, "
          f"{gb / stage_s:.3f} GB/s")
    print(f"stage again on a staged node (skip): {skip_s:.1f} s")


if __name__ == "__main__":
    main()
