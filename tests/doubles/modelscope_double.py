"""Double of the ModelScope CLI (`pip install modelscope`; `modelscope download --model REPO
--local_dir DIR`), packed as a wheel that pip installs offline into the bootstrap's virtual
environment, so the fallback path (no cthpc -> a venv -> pip install -> download) runs for real.

Built from the outside contract: the seed (`000_22ac33c13a335847`, 方式二) and
modelscope/modelscope `modelscope/cli/download.py` (commit 06058bb1a2464fba14973b2e22e0e451dd64a4fd):
`download` takes `--model`, `--revision`, `--cache_dir`, `--local_dir` (the cache dir is then
ignored), `--include`/`--exclude`, `--max-workers`, and a whole-repository download writes the
files under `--local_dir`. The double writes a small HF-style checkpoint there (config.json, an
index and the shards it names) and logs the call like the site doubles do. It knows one
repository, `Eco-Tech/Kimi-K3-w4a8`; any other is "not found", as the hub would answer.
"""

from __future__ import annotations

import base64
import hashlib
import zipfile
from pathlib import Path

NAME, VERSION = "modelscope", "1.40.2+kk3double"
KNOWN_REPO = "Eco-Tech/Kimi-K3-w4a8"

CLI = '''"""modelscope CLI double (tests/doubles/modelscope_double.py)."""
import argparse, json, os, socket, sys, time


def main(argv=None):
    parser = argparse.ArgumentParser(prog="modelscope")
    sub = parser.add_subparsers(dest="command")
    dl = sub.add_parser("download")
    dl.add_argument("--model", required=True)
    dl.add_argument("--revision")
    dl.add_argument("--cache_dir")
    dl.add_argument("--local_dir")
    dl.add_argument("--include", nargs="*")
    dl.add_argument("--exclude", nargs="*")
    dl.add_argument("--max-workers", type=int, default=8)
    dl.add_argument("files", nargs="*")
    args = parser.parse_args(argv)
    log = os.environ.get("KK3_DOUBLES_LOG")
    if log:
        with open(log, "a") as f:
            f.write(json.dumps({"tool": "modelscope", "host": socket.gethostname().split(".")[0],
                                "argv": sys.argv[1:], "pid": os.getpid(), "t": time.time()}) + "\\n")
    if args.command != "download":
        parser.error("only `modelscope download` is implemented by the double")
    if args.model != "%(repo)s":
        print(f"Repo {args.model} not exists on https://www.modelscope.cn", file=sys.stderr)
        return 1
    out = args.local_dir or os.path.join(args.cache_dir or ".", args.model)
    os.makedirs(out, exist_ok=True)
    shards = [f"model-{i:05d}-of-00004.safetensors" for i in range(1, 5)]
    for shard in shards:
        with open(os.path.join(out, shard), "wb") as f:
            f.write(b"\\0" * 2048)
    with open(os.path.join(out, "model.safetensors.index.json"), "w") as f:
        json.dump({"weight_map": {f"w{i}": s for i, s in enumerate(shards)}}, f)
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump({"model_type": "kimi_k3"}, f)
    print(f"Successfully Downloaded from model {args.model} to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
''' % {"repo": KNOWN_REPO}


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def build_wheel(directory: Path) -> Path:
    """Write the double's wheel (PEP 427: the module, METADATA, WHEEL, entry_points.txt,
    RECORD) into `directory`; returns its path."""
    dist = f"{NAME}-{VERSION}.dist-info"
    files = {
        "modelscope_cli_double.py": CLI.encode(),
        f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {VERSION}\n"
                            "Summary: test double of the ModelScope CLI\n".encode(),
        f"{dist}/WHEEL": b"Wheel-Version: 1.0\nGenerator: kimi-k3-tests\nRoot-Is-Purelib: true\n"
                         b"Tag: py3-none-any\n",
        f"{dist}/entry_points.txt": b"[console_scripts]\nmodelscope = modelscope_cli_double:main\n",
    }
    record = [_record_line(n, d) for n, d in files.items()] + [f"{dist}/RECORD,,"]
    files[f"{dist}/RECORD"] = ("\n".join(record) + "\n").encode()
    path = Path(directory) / f"{NAME}-{VERSION}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as z:
        for n, d in files.items():
            z.writestr(n, d)
    return path
