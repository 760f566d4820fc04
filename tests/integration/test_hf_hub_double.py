"""The hub double checked by the hub's own client (huggingface_hub 2.4.0 from PyPI), and
stage_hub.sh run for real with that client's `hf download`.

If the double drifted from the hub's contract (endpoints, pagination, LFS redirect headers), the
real client would fail here; this is what keeps tests/doubles/hf_hub_double.py honest.
"""

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from components.aws_eks.weights import scripts
from tests.doubles.hf_hub_double import HubDouble, Repo

REPO = "moonshotai/Kimi-K3"
TOKEN = "hf_double_token"
FILES = {"config.json": b'{"model_type": "kimi_k3"}\n',
         "model-00001-of-00002.safetensors": hashlib.shake_256(b"a").digest(3_000_000),
         "model-00002-of-00002.safetensors": hashlib.shake_256(b"b").digest(40_000),
         "tokenizer/tiktoken.model": hashlib.shake_256(b"c").digest(5000)}
BIN = str(Path(sys.executable).parent)


@pytest.fixture
def hub():
    with HubDouble([Repo(REPO, dict(FILES), private=True)], token=TOKEN, page_size=2) as h:
        yield h


def test_the_real_client_lists_the_double_as_it_lists_the_hub(hub):
    from huggingface_hub import HfApi

    api = HfApi(endpoint=hub.url, token=TOKEN)
    assert api.model_info(REPO).sha == hub.repos[REPO].commit
    tree = [f for f in api.list_repo_tree(REPO, recursive=True) if hasattr(f, "size")]
    assert {f.path: f.size for f in tree} == {p: len(c) for p, c in FILES.items()}
    lfs = {f.path: f.lfs.sha256 for f in tree if f.lfs}
    assert lfs == {p: hashlib.sha256(c).hexdigest() for p, c in FILES.items() if len(c) >= 1024}
    assert sum(1 for _, p, _ in hub.requests if "/tree/" in p) >= 3  # followed the Link pages
    with pytest.raises(Exception):
        HfApi(endpoint=hub.url, token="wrong").model_info(REPO)  # a private repo: 401


def _stage_hub(hub, dest, **env):
    e = {"PATH": BIN + os.pathsep + os.environ.get("PATH", "/usr/bin:/bin"), "HF_ENDPOINT": hub.url,
         "HF_TOKEN": TOKEN, "HF_HOME": str(dest.parent / "hf-home"), "HF_HUB_DISABLE_TELEMETRY": "1",
         "KK3_REPO_ID": REPO, "KK3_DEST": str(dest), "KK3_HUB_WORKERS": "4", **env}
    return subprocess.run(["bash", str(scripts.path("stage_hub.sh"))], env=e, capture_output=True,
                          text=True, timeout=120)


def test_stage_hub_downloads_with_the_real_client_and_skips_a_staged_node(hub, tmp_path):
    dest = tmp_path / "models" / "Kimi-K3"
    r = _stage_hub(hub, dest)
    assert r.returncode == 0, r.stdout + r.stderr
    for path, content in FILES.items():
        assert (dest / path).read_bytes() == content
    assert (dest / ".kimi-k3" / "staged").read_text().startswith("source=hub\n")
    # the LFS files came from the CDN (another origin) and the token never went there
    assert any(p.startswith("/cdn/") for _, p, _ in hub.requests)
    assert not any(auth for _, p, auth in hub.requests if p.startswith("/cdn/"))
    served = dict(hub.served)
    r = _stage_hub(hub, dest)
    assert r.returncode == 0 and "already staged" in r.stdout and hub.served == served
    assert TOKEN not in r.stdout + r.stderr


@pytest.mark.parametrize("key,value", [("KK3_REPO_ID", "moonshotai/K3;touch CANARY"),
                                       ("KK3_REVISION", "../main"), ("KK3_DEST", "/")])
def test_stage_hub_refuses_bad_settings(hub, tmp_path, key, value):
    r = _stage_hub(hub, tmp_path / "d", **{key: value.replace("CANARY", str(tmp_path / "canary"))})
    assert r.returncode == 2 and key in r.stdout and not (tmp_path / "canary").exists()


def test_stage_hub_restages_a_node_that_holds_another_revision(hub, tmp_path):
    """kimi-k3:modelRevision changed: a node staged at the old revision is not served as the new
    one (the marker names repo and revision; a different one means download again)."""
    dest = tmp_path / "models" / "Kimi-K3"
    commit = hub.repos[REPO].commit
    assert _stage_hub(hub, dest, KK3_REVISION="main").returncode == 0
    r = _stage_hub(hub, dest, KK3_REVISION=commit)
    assert r.returncode == 0 and "holds revision=main; downloading" in r.stdout, r.stdout + r.stderr
    assert f"revision={commit}\n" in (dest / ".kimi-k3" / "staged").read_text()
    r = _stage_hub(hub, dest, KK3_REVISION=commit)
    assert r.returncode == 0 and "already staged" in r.stdout
    bad = _stage_hub(hub, dest, KK3_REVISION="f" * 40)    # a commit the repository does not have
    assert bad.returncode != 0 and not (dest / ".kimi-k3" / "staged").exists()
