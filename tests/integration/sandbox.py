"""Run rendered scripts and remote command lines where nothing they do can matter, and watch them.

A test double of a cluster node for the hostile-config property test (issue 10):
- a private mount namespace (`unshare -m`) with a tmpfs as root, `/usr` and `/etc` bound
  read-only, and `chroot` into it: every write lands in the tmpfs and vanishes;
- `PATH` holds only `/sb/bin`: the side-effect-free text tools (awk, grep, sed, tr, cat, ...)
  linked to the real ones, and a recording stub for every command that acts on the world
  (Slurm, Apptainer, ip, curl, wget, mkdir, mv, mount, ...) answering as a node would, enough
  for the scripts to run to their end;
- the canary: a stub `kk3canary` (the command every hostile payload tries to run) and bash's
  `command_not_found_handle` (any other command nobody stubbed) both create `/sb/out/canary`
  and record the name; the count of such runs is what the test calls "executed" and must be 0.

Every stub call is recorded as (name, argv) so a test can check that a value reached its
command as exactly one argument, unchanged ("inert").
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

#: the real tools a script may use: they only read and print (mktemp: see below)
REAL_TOOLS = ("awk", "grep", "sed", "tr", "cat", "head", "tail", "sort", "uniq", "wc", "cut",
              "printf", "echo", "basename", "dirname", "env", "true", "false", "test", "[",
              "expr", "seq", "bash", "tee", "date", "xargs", "printenv", "md5sum", "sha256sum", "od",
              # writes only an empty file under the private root's /tmp (srun.sh keeps srun's
              # own messages in one since 727fd02), which vanishes with the tmpfs
              "mktemp")
#: stubbed: they act on the node, the cluster or the network
STUBS = ("srun", "sbatch", "scontrol", "squeue", "scancel", "sinfo", "apptainer", "ip", "getent",
         "curl", "wget", "mkdir", "mv", "chmod", "chown", "touch", "cp", "rm", "ln", "dd", "mount",
         "umount", "mkfs", "mkfs.xfs", "mkfs.ext4", "blkid", "lsblk", "wipefs", "findmnt", "du",
         "stat", "id", "hostname", "cthpc", "cthpc_model_bcast", "launcher", "modelscope", "aws",
         "hf", "kubectl", "sleep", "kill", "timeout", "find", "sync", "npu-smi", "vllm", "python3", "python", "pip", "nproc", "df", "jq",
         # the router's service.sh starts its supervisor loop detached (components/router/host.py)
         "setsid", "nohup",
         "kk3canary")

STUB = r'''#!/bin/bash
# recording stub (tests/integration/sandbox.py)
name=${0##*/}
printf '%s\0' "$name" "$#" "$@" >> /sb/out/calls  # one write: background stubs do not interleave
case "$name" in
  kk3canary) printf 'kk3canary\0' >> /sb/out/unexpected; : > /sb/out/canary; exit 0 ;;
  scontrol)
    if [ "${1:-}" = show ] && [ "${2:-}" = hostnames ]; then printf '%s\n' $SB_HOSTS
    elif [ "${1:-}" = show ] && [ "${2:-}" = node ]; then echo "NodeName=$3 NodeAddr=10.0.0.1 State=IDLE"
    fi ;;
  getent) echo "10.0.0.1      STREAM ${2:-x}" ;;
  ip)
    case "$*" in
      *"route get"*) echo "10.0.0.1 dev eth0 src 10.0.0.1 uid 0" ;;
      *"addr show"*) echo "2: eth0    inet 10.0.0.1/24 brd 10.0.0.255 scope global eth0" ;;
    esac ;;
  srun)
    # run the script a step would run (the first argument that is a file), as node $SB_NODE
    while [ "$#" -gt 0 ] && [ ! -f "$1" ]; do shift; done
    [ "$#" -eq 0 ] && exit 0
    SLURMD_NODENAME=${SB_NODE:-node0} exec bash "$@" ;;
  sbatch) echo "4242" ;;
  stat) echo 600 ;;
  du) echo "4096	${2:-.}" ;;
  id) echo 0 ;;
  hostname) echo "${SB_NODE:-node0}" ;;
  curl)
    url="" ; for a in "$@"; do case "$a" in http://*|https://*) url=$a ;; esac; done
    case " $* " in *" -K - "*|*" -H @- "*) cat > /dev/null ;; esac  # curl reads stdin
    case "$url" in
      */v1/models) printf '{"object":"list","data":[{"id":%s,"object":"model"}]}' "$SB_MODEL_JSON" ;;
      */chat/completions) printf '{"choices":[{"message":{"content":"ready"}}]}' ;;
    esac ;;
  launcher) echo '{"success": true}' ;;
  python3|python)  # the router's install.sh asks the interpreter its version first
    case "$*" in *'print("%d.%d" % sys.version_info[:2])'*) echo 3.11 ;; esac ;;
esac
exit 0
'''

BASHENV = r'''command_not_found_handle() {
  printf '%s\0' "$1" >> /sb/out/unexpected
  : > /sb/out/canary
  return 127
}
'''

SH = '#!/bin/bash\nexec bash "$@"\n'  # `sh -c` runs under bash so the not-found handler is on

RUN = r'''#!/bin/bash
# run each /sb/cmd/N (NUL-separated argv) with stdin /sb/cmd/N.in; record output and status
cd /tmp
for f in /sb/cmd/*.argv; do
  n=${f%.argv}; n=${n##*/}
  mapfile -d '' argv < "$f"
  "${argv[@]}" < "/sb/cmd/$n.in" > "/sb/out/$n.out" 2> "/sb/out/$n.err"
  echo "$?" > "/sb/out/$n.rc"
done
'''

ENTER = r'''#!/bin/bash
set -euo pipefail
sb=$1
root=$sb/root
mkdir -p "$root"
mount -t tmpfs -o size=64m kk3sandbox "$root"
for d in usr etc; do
  mkdir -p "$root/$d"
  mount --bind "/$d" "$root/$d"
  mount -o remount,bind,ro "$root/$d"
done
for l in bin lib lib64 sbin; do
  if [ -L "/$l" ]; then ln -s "$(readlink "/$l")" "$root/$l"; fi
done
mkdir -p "$root/sb/out" "$root/sb/bin" "$root/sb/cmd" "$root/dev" "$root/tmp"
mount --bind "$sb/out" "$root/sb/out"
mount --bind "$sb/bin" "$root/sb/bin"
mount -o remount,bind,ro "$root/sb/bin"
mount --bind "$sb/cmd" "$root/sb/cmd"
: > "$root/dev/null"
mount --bind /dev/null "$root/dev/null"
(cd "$sb/files" && cp -a . "$root/")
exec chroot "$root" /usr/bin/env -i PATH=/sb/bin HOME=/tmp BASH_ENV=/sb/bin/.bashenv \
  SB_HOSTS="$SB_HOSTS" SB_NODE="$SB_NODE" SB_MODEL_JSON="$SB_MODEL_JSON" \
  LC_ALL=C.UTF-8 /usr/bin/bash /sb/bin/.run
'''


@dataclass
class Outcome:
    calls: List[Tuple[str, Tuple[str, ...]]]
    unexpected: List[str]
    canary: bool
    results: List[Tuple[int, str, str]]  # (exit code, stdout, stderr) per command
    extra: Dict[str, object] = field(default_factory=dict)

    def called(self, name: str) -> List[Tuple[str, ...]]:
        return [args for n, args in self.calls if n == name]

    @property
    def executed(self) -> int:
        """Commands run that nothing legitimate runs (the canary and anything unstubbed)."""
        return len(self.unexpected)


def available() -> Optional[str]:
    """None when sandboxes can run here, else why not."""
    if os.geteuid() != 0:
        return "needs root (a mount namespace and chroot)"
    for tool in ("unshare", "chroot", "mount"):
        if shutil.which(tool) is None:
            return f"{tool} not found"
    return None


class Sandbox:
    """One stub directory, reused; each `run` gets a fresh private root."""

    def __init__(self, base: Path):
        self.base = Path(base)
        self.bin = self.base / "bin"
        self.bin.mkdir(parents=True, exist_ok=True)
        for tool in REAL_TOOLS:
            real = shutil.which(tool, path="/usr/bin:/bin")
            if real and not (self.bin / tool).exists():
                os.symlink(real, self.bin / tool)
        for name in STUBS:
            self._write(name, STUB)
        self._write("sh", SH)
        self._write(".bashenv", BASHENV, 0o644)
        self._write(".run", RUN)
        (self.base / "enter.sh").write_text(ENTER)

    def _write(self, name: str, text: str, mode: int = 0o755) -> None:
        p = self.bin / name
        if p.is_symlink():
            p.unlink()
        p.write_text(text)
        p.chmod(mode)

    def run(self, commands: Sequence[Sequence[str]], files: Mapping[str, str] = (),
            stdin: Sequence[bytes] = (), hosts: Sequence[str] = ("node0",), node: str = "node0",
            model_json: str = '"Kimi-K3"', timeout_s: float = 60) -> Outcome:
        """Run `commands` (argv lists) in order in a fresh root holding `files` (absolute path
        -> text; `.sh` files executable)."""
        work = Path(tempfile.mkdtemp(prefix="run-", dir=self.base))
        try:
            for d in ("out", "cmd", "files"):
                (work / d).mkdir()
            for path, text in dict(files).items():
                assert path.startswith("/"), path
                dest = work / "files" / path.lstrip("/")
                dest.parent.mkdir(parents=True, exist_ok=True)
                dest.write_text(text)
                dest.chmod(0o755 if path.endswith(".sh") else 0o644)
            for i, argv in enumerate(commands):
                (work / "cmd" / f"{i:03d}.argv").write_bytes(
                    b"".join(a.encode("utf-8", "surrogateescape") + b"\0" for a in argv))
                (work / "cmd" / f"{i:03d}.in").write_bytes(stdin[i] if i < len(stdin) else b"")
            os.symlink(self.bin, work / "bin")
            env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "SB_HOSTS": " ".join(hosts),
                   "SB_NODE": node, "SB_MODEL_JSON": model_json}
            proc = subprocess.run(["unshare", "-m", "--propagation", "private", "bash",
                                   str(self.base / "enter.sh"), str(work)],
                                  env=env, capture_output=True, timeout=timeout_s)
            if proc.returncode != 0:
                raise RuntimeError(f"sandbox failed: {proc.stderr.decode(errors='replace')}")
            out = work / "out"
            return Outcome(
                calls=_parse_calls((out / "calls").read_bytes() if (out / "calls").exists() else b""),
                unexpected=[u.decode(errors="replace") for u in
                            ((out / "unexpected").read_bytes().split(b"\0")
                             if (out / "unexpected").exists() else []) if u],
                canary=(out / "canary").exists(),
                results=[(int((out / f"{i:03d}.rc").read_text() or 255),
                          (out / f"{i:03d}.out").read_bytes().decode(errors="replace"),
                          (out / f"{i:03d}.err").read_bytes().decode(errors="replace"))
                         for i in range(len(commands))])
        finally:
            shutil.rmtree(work, ignore_errors=True)


def _parse_calls(blob: bytes) -> List[Tuple[str, Tuple[str, ...]]]:
    parts = blob.split(b"\0")
    calls, i = [], 0
    while i + 1 < len(parts) and parts[i]:
        name, argc = parts[i].decode(), int(parts[i + 1])
        args = tuple(p.decode("utf-8", "surrogateescape") for p in parts[i + 2:i + 2 + argc])
        calls.append((name, args))
        i += 2 + argc
    return calls


def json_str(value: str) -> str:
    return json.dumps(value)
