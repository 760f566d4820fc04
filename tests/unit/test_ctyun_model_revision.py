"""kimi-k3:modelRevision on ctyun-hcc (issue 21 item 4): `modelscope download --revision`, the
revision recorded beside the weights, and the checkpoint check refusing a directory downloaded
at another revision (so a changed revision downloads again instead of serving the old files)."""

import subprocess
from pathlib import Path

from components.ctyun_hcc import fetch_commands as fc
from components.ctyun_hcc.bootstrap import ModelWeightsProvider

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def _bash(script: str, tmp: Path):
    return subprocess.run(["bash", "-c", "set -euo pipefail\n" + script], capture_output=True,
                          text=True, env={"PATH": f"{tmp / 'bin'}:/usr/bin:/bin",
                                          "CALLS": str(tmp / "calls")}, timeout=60)


def _modelscope_stub(tmp: Path) -> None:
    """A `modelscope` on PATH that records its argv and writes a checkpoint's config.json."""
    (tmp / "bin").mkdir()
    stub = tmp / "bin" / "modelscope"
    stub.write_text('#!/bin/bash\necho "modelscope $*" >> "$CALLS"\n'
                    'while [ $# -gt 0 ]; do [ "$1" = --local_dir ] && d=$2; shift; done\n'
                    'echo "{}" > "$d/config.json"\n')
    stub.chmod(0o755)


def test_the_revision_reaches_modelscope_and_is_recorded(tmp_path):
    _modelscope_stub(tmp_path)
    d = tmp_path / "model" / "Kimi-K3-w4a8"
    r = _bash(fc.modelscope_command("Eco-Tech/Kimi-K3-w4a8", str(d), revision=COMMIT), tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "calls").read_text().split() == [
        "modelscope", "download", "--model", "Eco-Tech/Kimi-K3-w4a8", "--local_dir", str(d),
        "--revision", COMMIT]
    assert (d / fc.REVISION_MARK).read_text() == COMMIT + "\n"
    # without a revision: no --revision, no mark (the repository's default)
    plain = fc.modelscope_command("Eco-Tech/Kimi-K3-w4a8", str(d))
    assert "--revision" not in plain and fc.REVISION_MARK not in plain


def test_a_directory_at_another_revision_is_not_a_checkpoint(tmp_path):
    d = tmp_path / "model" / "Kimi-K3-w4a8"
    d.mkdir(parents=True)
    (d / "config.json").write_text("{}")
    prov = ModelWeightsProvider()
    p = {"modelRoot": str(tmp_path / "model"), "modelName": "Kimi-K3-w4a8", "revision": COMMIT}
    check = prov._check(p)
    assert _bash(check, tmp_path).returncode == 3            # no mark: not this revision
    (d / fc.REVISION_MARK).write_text("v0.9\n")
    r = _bash(check, tmp_path)
    assert r.returncode == 3 and f"is not at revision {COMMIT}" in r.stdout
    (d / fc.REVISION_MARK).write_text(COMMIT + "\n")
    assert _bash(check, tmp_path).stdout.startswith("bytes ")
    # no revision asked for: any checkpoint will do (as before)
    assert _bash(prov._check({**p, "revision": ""}), tmp_path).stdout.startswith("bytes ")


def test_the_program_gives_modelscope_the_revision_and_warns_when_unpinned():
    from components.offline.runner import run_program

    def weights(run):
        return next(r for r in run.resources if r["name"] == "kimi-k3-weights")["inputs"]

    run = run_program("ctyun-hcc", {"kimi-k3:modelSource": "modelscope",
                                    "kimi-k3:modelRevision": COMMIT})
    assert weights(run)["revision"] == COMMIT
    assert not [w for w in run.warnings if "modelRevision" in w or "not pinned" in w]
    plain = run_program("ctyun-hcc", {"kimi-k3:modelSource": "modelscope"})
    assert weights(plain)["revision"] == ""
    assert any(w.startswith("kimi-k3:modelRevision is not set and kimi-k3 pins no commit of "
                            "Eco-Tech/Kimi-K3-w4a8") for w in plain.warnings)
