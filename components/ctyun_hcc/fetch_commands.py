"""The remote commands that fetch the weights and the SIF image onto the master, as plain
functions returning shell text (no I/O), for the bootstrap's ModelWeights and SifImage steps.

Sources and fallbacks, in the seed's (`000_22ac33c13a335847`) order:
- weights: `cthpc model install` (方式一), else ModelScope (方式二: `modelscope download --model
  Eco-Tech/Kimi-K3-w4a8 --local_dir DIR`), whose CLI the seed installs with pip; here into its
  own virtual environment (`python3 -m venv`, Python 3.8 or later as the seed says), so nothing
  of the master's Python is changed. The pip upgrade uses the seed's mirror
  (`-i https://pypi.tuna.tsinghua.edu.cn/simple`; no upgrade without an index); modelscope is
  pinned.
- SIF: `cthpc apptainer install` (方式一), else the seed's download from CTyun's ZOS (方式二,
  SEED_SIF_URL), https only; a download goes to `NAME.sif.part` (resumed by `wget -c`) and
  becomes `NAME.sif` only after its sha256, when one is configured, matches.
"""

from __future__ import annotations


from ..config.values import HTTPS_URL, SHA256_HEX
from ..inference.quoting import shell_word

#: the seed's ZOS address of the SIF image (方式二); its content changes as CTyun updates the
#: image ("更新时只需重新下载最新 SIF 镜像"), so pin a sha256 for a reproducible deployment
SEED_SIF_URL = "https://jiangsu-10.zos.ctyun.cn/galaxy/apptainer/vllm_ascend/vllm-ascend_kimi-k3-a3.sif"
#: the seed's pip mirror (used, as in the seed, for pip itself)
SEED_PIP_INDEX = "https://pypi.tuna.tsinghua.edu.cn/simple"
#: the ModelScope CLI installed when the master has none (pypi.org/project/modelscope, 1.40.2)
MODELSCOPE_PIP = "modelscope==1.40.2"
#: where that CLI's virtual environment lives on the master
MODELSCOPE_VENV = "/opt/kimi-k3/modelscope-venv"

SHA256_RE = SHA256_HEX
#: the file in a weights directory naming the revision it was downloaded at (modelscope only)
REVISION_MARK = ".kimi-k3-revision"


def cthpc_model_command(model_root: str, model_name: str) -> str:
    """The seed's 方式一 for the weights."""
    root = shell_word(model_root)
    return (f"mkdir -p {root} && cthpc model makecache && "
            f"cthpc model install {shell_word(model_name)} --dir {root}/")


def modelscope_command(repo: str, local_dir: str, pip_spec: str = MODELSCOPE_PIP,
                       pip_index: str = SEED_PIP_INDEX, venv: str = MODELSCOPE_VENV,
                       revision: str = "") -> str:
    """The seed's 方式二: `modelscope download`, the CLI from PATH or else installed into `venv`
    (created once; reused after). Fails naming what is missing (Python 3.8+, venv).

    `revision` (kimi-k3:modelRevision): `--revision` of the CLI (modelscope/modelscope
    modelscope/cli/download.py at commit 06058bb1a246: "Revision of the model", passed to
    snapshot_download), then recorded in `local_dir/REVISION_MARK`, which the checkpoint check
    compares, so a directory of another revision is downloaded again, never served as this one."""
    v = shell_word(venv)
    upgrade = (f"    {v}/bin/pip install -q --upgrade pip -i {shell_word(pip_index)}\n"
               if pip_index else "")
    return (
        "ms=$(command -v modelscope || true)\n"
        "if [ -z \"$ms\" ]; then\n"
        f"  if [ ! -f {v}/.kk3-complete ]; then  # none yet, or an install that was cut short\n"
        "    if ! python3 -c 'import sys; sys.exit(sys.version_info < (3, 8))' 2>/dev/null; then\n"
        "      echo 'modelscope needs Python 3.8 or later on the master (the seed); none found' >&2\n"
        "      exit 1\n"
        "    fi\n"
        f"    echo 'installing the ModelScope CLI into {venv}'\n"
        f"    rm -rf {v} && python3 -m venv {v}\n"
        f"{upgrade}"
        f"    {v}/bin/pip install -q {shell_word(pip_spec)}\n"
        f"    touch {v}/.kk3-complete\n"
        "  fi\n"
        f"  ms={v}/bin/modelscope\n"
        "fi\n"
        f"mkdir -p {shell_word(local_dir)}\n"
        f"\"$ms\" download --model {shell_word(repo)} --local_dir {shell_word(local_dir)}"
        + (f" --revision {shell_word(revision)}\n"
           f"printf '%s\\n' {shell_word(revision)} > {shell_word(local_dir + '/' + REVISION_MARK)}"
           if revision else ""))


def cthpc_sif_command(sif_dir: str, name: str) -> str:
    """The seed's 方式一 for the SIF image."""
    d = shell_word(sif_dir)
    return (f"mkdir -p {d} && cthpc apptainer makecache && "
            f"cthpc apptainer install {shell_word(name)} --dir {d}/")


def sif_download_command(url: str, target: str, sha256: str = "") -> str:
    """Download `url` (https) to `target`.part, resuming, then check the sha256 (when given)
    and rename into place. A part whose sum does not match is deleted (a resume could never
    heal it) and the command fails naming both sums."""
    check_url(url)
    if sha256 and not SHA256_RE.fullmatch(sha256):
        raise ValueError(f"sha256 {sha256!r} is not 64 lower-case hex digits")
    part = shell_word(target + ".part")
    verify = ""
    if sha256:
        verify = (f"got=$(sha256sum {part} | awk '{{print $1}}')\n"
                  f"if [ \"$got\" != {shell_word(sha256)} ]; then\n"
                  f"  rm -f {part}\n"
                  f"  echo \"sha256 of $url is $got, not {sha256} (kimi-k3:sifSha256); the download "
                  "was deleted\" >&2\n"
                  "  exit 3\n"
                  "fi\n")
    return (f"url={shell_word(url)}\n"
            f"mkdir -p \"$(dirname {shell_word(target)})\"\n"
            f"wget -q -c -O {part} \"$url\"\n"
            f"{verify}mv -f {part} {shell_word(target)}")


def sha256_check_command(path: str, sha256: str) -> str:
    """Exit 0 when `path`'s sha256 is `sha256`, else 3 with both sums on stderr."""
    if not SHA256_RE.fullmatch(sha256):
        raise ValueError(f"sha256 {sha256!r} is not 64 lower-case hex digits")
    return (f"f={shell_word(path)}; got=$(sha256sum \"$f\" | awk '{{print $1}}'); "
            f"[ \"$got\" = {shell_word(sha256)} ] || "
            f"{{ echo \"sha256 of $f is $got, not {sha256}\" >&2; exit 3; }}")


def check_url(url: str) -> str:
    """`url` if it is an https URL a shell word can carry; ValueError otherwise (the SIF runs as
    root on every node: never over plain http)."""
    if not HTTPS_URL.fullmatch(url or ""):
        raise ValueError(f"SIF URL {url!r} is not an https:// URL (kimi-k3:sifUrl)")
    return url
