"""Render a LaunchSpec as the shell scripts that run it under Slurm + Apptainer (CTyun HCC).

Plain functions from (Plan, LaunchSpec, SlurmLayout) to script text, so the offline plan command
can write them and golden tests can show a reviewer every changed line. No I/O, no Pulumi.

The scripts fix the CTyun seed's errata (docs/seed-mapping.md, "Errors fixed"): one port (the spec's), the
planner's integer `--max-model-len`, bash everywhere with `set -euo pipefail`, an Apptainer
instance named after the job and stopped by a trap on exit or `scancel`, one work-dir path,
node 0's address taken from the first host of `$SLURM_JOB_NODELIST` (its Slurm NodeAddr,
resolved if it is a name), and each node's own address and interface derived from its route
to node 0 instead of a hard-coded `eno0`. Secret env values (`VLLM_API_KEY`, `HF_TOKEN`) are
read on the node from root-only files; no script contains them. With an API key, kimi-k3's
API-key guard (`api-guard/kk3_api_guard.py`, written root-only by the service) is bind-mounted
read-only into the instance and put in front of the image's PYTHONPATH for the head's
`--middleware` (components/inference/api_guard.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import List, Mapping, Sequence, Tuple

from ..config.values import data_path, file_name, slurm_name
from ..inference import api_guard as guard
from ..inference.launch import PLACEHOLDERS, LaunchSpec, RoleSpec
from ..inference.planner import Plan
from ..inference.curl import BEARER_TOKEN_ERE, curl_with_bearer
from ..inference.quoting import ere_literal, json_text, shell_word as q

#: placeholder name -> shell variable that node.sh sets
SHELL_VARS: Mapping[str, str] = {
    "NODE0_ADDR": "NODE0_ADDR",
    "NODE_ADDR": "NODE_ADDR",
    "NODE_IFNAME": "NODE_IFNAME",
    "NODE_RANK": "node_rank",  # not exported: torch reads an environment NODE_RANK
}
_PLACEHOLDER = re.compile(r"\$\{(" + "|".join(PLACEHOLDERS) + r")\}")
_SAFE_PATH = re.compile(r"^(/[A-Za-z0-9._+-]+)+$")
_ENV_NAME = re.compile(r"^[A-Z_][A-Z0-9_]*$")
#: the config key behind each layout field, so a refusal names what the user set
LAYOUT_KEYS = {"work_dir": "kimi-k3:workDir", "model_dir": "kimi-k3:modelRoot",
               "sif_dir": "kimi-k3:sifDir", "sif_file": "kimi-k3:sifName",
               "partition": "ctyun:queueName", "job_name": "kimi-k3:jobName"}

SCRIPT_NAMES = ("srun.sh", "node.sh", "bcast.sh", "mount_nvme.sh", "check.sh", "preflight.sh",
                "watchdog.sh")


@dataclass(frozen=True)
class SlurmLayout:
    """Where things live on the cluster and which Slurm names to use (defaults: the CTyun seed).

    `work_dir` must be on storage every node sees (the cluster's shared /home), because srun
    runs `node.sh` from there and the secret files live under it.
    """

    partition: str = "batch"
    #: `#SBATCH --gres=<name>:<devices>` only when set: a cluster whose nodes declare no such
    #: GRES would refuse the job. The service reads the nodes' GRES (`sinfo -o %G`: `gpu` on the
    #: seed's cluster) and adds `--gres` when submitting, only where there is one.
    gres_name: str = ""
    job_name: str = "kimi-k3"
    work_dir: str = "/home/kimi-k3"
    model_dir: str = "/mnt/nvme1n1/model/Kimi-K3-w4a8"
    sif_dir: str = "/mnt/nvme0n1/apptainer"
    sif_file: str = "vllm-ascend_kimi-k3-a3.sif"
    binds: Tuple[Tuple[str, str], ...] = (
        ("/usr/local/sbin", "/usr/local/sbin"),
        ("/usr/local/Ascend/driver", "/usr/local/Ascend/driver"),
    )
    #: (device, mount point) pairs for mount_nvme.sh
    disks: Tuple[Tuple[str, str], ...] = (
        ("/dev/nvme0n1", "/mnt/nvme0n1"),
        ("/dev/nvme1n1", "/mnt/nvme1n1"),
    )
    fs_type: str = "xfs"
    #: environment modules the bcast job loads (the seed's MPI build of cthpc_model_bcast)
    bcast_modules: Tuple[str, ...] = ("mpich/3.2.1/gcc-10.3.1", "cthpc_910b/2.0.0/mpich-3.2.1")
    bcast_mpi: str = "pmi2"
    bcast_time: str = "01:00:00"

    @property
    def secret_dir(self) -> str:
        """Root-only directory (0700) holding one file (0600) per secret env variable."""
        return f"{self.work_dir}/secrets"

    @property
    def api_guard_dir(self) -> str:
        """Root-only directory (0700) holding kk3_api_guard.py (0600), bind-mounted read-only."""
        return f"{self.work_dir}/{guard.HOST_SUBDIR}"

    @property
    def log_dir(self) -> str:
        return f"{self.work_dir}/logs"

    def validate(self) -> "SlurmLayout":
        """Raise ConfigError (naming the key behind the field) for values that the scripts
        cannot carry; return self. Targets check their keys first, with the same grammars."""
        for attr in ("work_dir", "model_dir", "sif_dir"):  # roots: the target's choice
            data_path(LAYOUT_KEYS[attr], getattr(self, attr), roots=None)
        file_name(LAYOUT_KEYS["sif_file"], self.sif_file)
        for attr in ("partition", "job_name"):
            slurm_name(LAYOUT_KEYS[attr], getattr(self, attr))
        # the rest are this module's defaults, not config: a bad one is a programming error
        for path in [p for pair in self.binds + self.disks for p in pair]:
            if not _SAFE_PATH.match(path) or "/../" in path + "/" or "/./" in path + "/":
                raise ValueError(f"layout path {path!r} is not a plain absolute path")
        for name in (self.gres_name or "gpu", self.fs_type, self.bcast_mpi or "none",
                     *self.bcast_modules):
            if not re.match(r"^[A-Za-z0-9][A-Za-z0-9._/-]*$", name):
                raise ValueError(f"layout name {name!r} is not a plain name")
        if not re.match(r"^[0-9]{1,3}:[0-5][0-9]:[0-5][0-9]$", self.bcast_time):
            raise ValueError(f"bcast_time {self.bcast_time!r} is not HH:MM:SS")
        return self


def shell_word(arg: str) -> str:
    """`arg` as one shell word; `${PLACEHOLDER}`s become double-quoted shell variables, every
    other character is quoted (quoting.shell_word) and so taken literally."""
    parts: List[str] = []
    pos = 0
    for m in _PLACEHOLDER.finditer(arg):
        if m.start() > pos:
            parts.append(q(arg[pos:m.start()]))
        parts.append('"${' + SHELL_VARS[m.group(1)] + '}"')
        pos = m.end()
    if pos < len(arg) or not parts:
        parts.append(q(arg[pos:]))
    return "".join(parts)


def _argv_lines(argv: Sequence[str], indent: str) -> str:
    """One flag (with its value) per line, as a bash array body."""
    lines: List[str] = []
    i = 0
    if len(argv) >= 3 and argv[1] == "serve":  # `vllm serve MODEL` on one line
        lines.append(indent + " ".join(shell_word(a) for a in argv[:3]))
        i = 3
    while i < len(argv):
        word = shell_word(argv[i])
        if argv[i].startswith("--") and i + 1 < len(argv) and not argv[i + 1].startswith("--"):
            word += " " + shell_word(argv[i + 1])
            i += 1
        lines.append(indent + word)
        i += 1
    return "\n".join(lines)


def _secret_block(spec: LaunchSpec, layout: SlurmLayout) -> str:
    if not spec.secret_env:
        return ""
    names = " ".join(q(_env_name(n)) for n in spec.secret_env)
    return f"""# secrets come from root-only files, one per variable, never from this script
secret_dir={q(layout.secret_dir)}
secret_names=({names})
for name in "${{secret_names[@]}}"; do
  file="$secret_dir/$name"
  if [ ! -r "$file" ] || [ "$(stat -c %a "$file")" != 600 ]; then
    echo "secret $file is missing or not mode 600" >&2
    exit 1
  fi
  export "$name=$(cat "$file")"
done

"""


def _env_name(name: str) -> str:
    if not _ENV_NAME.match(name):
        raise ValueError(f"{name!r} is not an environment variable name")
    return name


def _env_lines(role: RoleSpec) -> str:
    return "\n".join(f"  export {_env_name(k)}={shell_word(v)}" for k, v in role.env)


def _sbatch(option: str, value: object) -> str:
    """One `#SBATCH --option=value` line. sbatch reads these itself (no shell): the value must
    be one plain word, which the layout's grammars guarantee."""
    text = str(value)
    if not re.match(r"^[A-Za-z0-9._:/%,=+-]+$", text):
        raise ValueError(f"#SBATCH --{option} value {text!r} is not one plain word")
    return f"#SBATCH --{option}={text}\n"


def _header(what: str) -> str:
    return f"#!/bin/bash\n# {what}\n# Rendered by kimi-k3 (components/ctyun_hcc/scripts.py); do not edit by hand.\n"


#: the mark a stop by the stack leaves (resize.mark_stopped), relative to the work dir (shared)
STOP_MARK = "logs/service-stopped"
#: how often a service job requeues itself after losing a node before it gives up
MAX_REQUEUES = 5
#: A requeued job's batch script starts over with the same job id, so the same log names; Slurm
#: truncates an existing output file unless it is opened with `--open-mode=append` (sbatch(1)
#: and srun(1) `--open-mode`, whose default is slurm.conf's JobFileAppend: "By default, any
#: existing file is truncated"; SchedMD/slurm doc/man/man1/sbatch.1, doc/man/man1/srun.1,
#: doc/man/man5/slurm.conf.5 at commit 284c3b95f08a, 2026-08-20). The service job and its
#: node step append, so the first run's lines (why it ended) survive the requeue. Each run
#: prints one endpoint line carrying its run count (SLURM_RESTART_COUNT, the job's `Restarts`
#: in `scontrol show job`): the reader (service.endpoint_host) takes the LAST line, and only
#: when it is the current run's (until the new run has printed its own, the last is the old
#: run's, whose node 0 may be another node). A line without the run count is from an srun.sh
#: rendered before the append (a job adopted after an upgrade): that script truncated its log at
#: each start, so its one line is the current run's.
ENDPOINT_LINE_RE = re.compile(r"^endpoint: http://([0-9.]+):[0-9]+/v1 (?:run: ([0-9]+) )?")


def render_srun_sh(plan: Plan, spec: LaunchSpec, layout: SlurmLayout) -> str:
    """The sbatch script: allocate the nodes, find node 0's address, run node.sh on each node."""
    layout.validate()
    devices = plan.devices_per_node
    wd = layout.work_dir
    gres = _sbatch("gres", f"{layout.gres_name}:{devices}") if layout.gres_name else ""
    return _header("sbatch script: one vLLM replica over all allocated nodes (submit: sbatch srun.sh)") + f"""\
{_sbatch("job-name", layout.job_name)}{_sbatch("nodes", spec.nodes)}#SBATCH --ntasks-per-node=1
{_sbatch("partition", layout.partition)}{gres}#SBATCH --exclusive
{_sbatch("chdir", wd)}{_sbatch("output", layout.log_dir + "/job_%j.out")}{_sbatch("error", layout.log_dir + "/job_%j.err")}{_sbatch("open-mode", "append")}set -euo pipefail
export LC_CTYPE=C.UTF-8

# node 0 (the vLLM head) is $KK3_HEAD_HOST when it is part of the allocation (the master,
# which holds the public address), else the first host; the others follow in allocation order
hosts=$(scontrol show hostnames "$SLURM_JOB_NODELIST")
node0_host=$(printf '%s\\n' "$hosts" | awk 'NR == 1')
if [ -n "${{KK3_HEAD_HOST:-}}" ] && printf '%s\\n' "$hosts" | grep -x "$KK3_HEAD_HOST" >/dev/null; then
  node0_host=$KK3_HEAD_HOST
fi
NODE_ORDER=$({{ echo "$node0_host"; printf '%s\\n' "$hosts" | grep -vx "$node0_host" || true; }} | tr '\\n' ' ')
export NODE_ORDER

# node 0's address: its Slurm NodeAddr, resolved if it is a name
node0_addr=$(scontrol show node "$node0_host" | tr ' ' '\\n' | awk -F= '$1 == "NodeAddr" {{print $2}}')
case "$node0_addr" in
  *[!0-9.]* | "") node0_addr=$(getent ahostsv4 "${{node0_addr:-$node0_host}}" | awk 'NR == 1 {{print $1}}') ;;
esac
case "$node0_addr" in
  "" | 127.*)
    echo "cannot find a cluster address for node 0 ($node0_host): got '$node0_addr'" >&2
    exit 1 ;;
esac
export NODE0_ADDR="$node0_addr"

served_model={q(spec.served_model_name)}
# one line per run of the job: a requeue appends the next run's (with its count) to this log
echo "endpoint: http://$NODE0_ADDR:{int(spec.port)}/v1 run: ${{SLURM_RESTART_COUNT:-0}} served model: $served_model"
echo "nodes: $SLURM_JOB_NODELIST (vLLM ranks in order: $NODE_ORDER)"

# srun's own messages (which task ended first, and how) are kept to tell a lost node from a
# failed engine below; they still reach the job's error log
srun_err=$(mktemp)
set +e
srun --ntasks-per-node=1 --kill-on-bad-exit=1 --open-mode=append \\
  --output={q(layout.log_dir + "/node_%j.%t.out")} \\
  --error={q(layout.log_dir + "/node_%j.%t.err")} \\
  {q(wd + "/node.sh")} 2>&1 | tee "$srun_err" >&2
rc=${{PIPESTATUS[0]}}
set -e
first=$(grep -m1 -oE 'task [0-9]+: (Exited with exit code [0-9]+|Terminated|Killed)' "$srun_err" || true)
rm -f "$srun_err"
[ "$rc" -eq 0 ] && exit 0

# a node that reboots or fails: its shutdown TERMs the task there (that task is the first to end,
# with 143), or its slurmd stops answering. The task's exit ends the step; if this script ended
# too, the job would end FAILED before Slurm sets the node DOWN, and only a node of a running
# job makes Slurm requeue it (--requeue). So the script waits (SlurmdTimeout and a minute) for
# Slurm's own requeue, which ends it; if the node answered again in time (Slurm never set it
# DOWN) and every node runs a step again, it requeues the job itself (same id either way: the
# stack's state stays right). A self-requeue while a node is still silent is not done: Slurm
# 22.05 then left the restarted job unable to create a step ("Invalid generic resource") and
# pending for ever (seen on the local cluster). The first task to end is the cause:
# --kill-on-bad-exit TERMs the others after it, so srun's own exit code (the highest) says 143
# for a failed engine too. Nothing is waited for or requeued when the job is no longer RUNNING
# (cancelled), the stack's stop mark names it (a resize or destroy stopped it), it is not
# requeueable, or it restarted {MAX_REQUEUES} times already (then an operator should look).
probe() {{ timeout 120 srun --overlap --ntasks-per-node=1 --kill-on-bad-exit=0 true >/dev/null 2>&1; }}
requeueable() {{
  ! grep -qs "^[^ ]* $SLURM_JOB_ID " {q(wd + "/" + STOP_MARK)} \\
    && [ "${{SLURM_RESTART_COUNT:-0}}" -lt {MAX_REQUEUES} ] \\
    && scontrol -o show job "$SLURM_JOB_ID" | grep -q 'JobState=RUNNING .* Requeue=1 '
}}
lost=""
case "$first" in
  *"exit code 143" | *Terminated) lost="$first first (SIGTERM from outside the job, as a node's shutdown sends)" ;;
esac
if [ -z "$lost" ] && ! probe; then
  lost="a node of the job does not run a step any more (its slurmd is gone)"
fi
if [ -n "$lost" ] && requeueable; then
  # (a slurmctld that does not answer now must not end the script under set -e: the default)
  slurmd_timeout=$(scontrol show config 2>/dev/null | awk '$1 == "SlurmdTimeout" {{print $3}}' || true)
  case "$slurmd_timeout" in "" | *[!0-9]*) slurmd_timeout=300 ;; esac
  wait_s=$(( slurmd_timeout + 60 ))
  echo "job $SLURM_JOB_ID: srun ended with $rc: $lost; waiting up to $wait_s s for Slurm to requeue it" >&2
  sleep "$wait_s"  # Slurm's requeue ends this script
  if probe && requeueable; then
    echo "job $SLURM_JOB_ID: every node answers again; requeueing it (restart $(( ${{SLURM_RESTART_COUNT:-0}} + 1 )) of {MAX_REQUEUES})" >&2
    if scontrol requeue "$SLURM_JOB_ID"; then
      sleep 600  # the requeue ends this script
    fi
  fi
fi
exit "$rc"
"""


def _guard_block(spec: LaunchSpec, layout: SlurmLayout) -> str:
    if not spec.api_guard:
        return ""
    path = f"{layout.api_guard_dir}/{guard.FILE_NAME}"
    return f"""  # kimi-k3's API-key guard (--middleware {guard.IMPORT_PATH}): a root-only file
  api_guard={q(path)}
  if [ ! -r "$api_guard" ] || [ "$(stat -c %a "$api_guard")" != 600 ]; then
    echo "API-key guard $api_guard is missing or not mode 600" >&2
    exit 1
  fi
"""


def render_node_sh(plan: Plan, spec: LaunchSpec, layout: SlurmLayout) -> str:
    """Per-node launcher: start an Apptainer instance, run the head or a worker in it, clean up."""
    layout.validate()
    binds = [h + ":" + c for h, c in list(layout.binds) + [(layout.model_dir, spec.model_path)]]
    if spec.api_guard:
        binds.append(f"{layout.api_guard_dir}:{guard.CONTAINER_DIR}:ro")
    bind_args = " \\\n".join(f"  --bind {q(b)}" for b in binds)
    secret_block = _secret_block(spec, layout)
    head = spec.head
    guard_line = ("\n" + _guard_block(spec, layout)
                  + "  # the guard's directory in front of the image's own PYTHONPATH, then vLLM\n"
                  f"  argv=({' '.join(q(a) for a in guard.PREPEND_COMMAND)} \"${{argv[@]}}\")"
                  if spec.api_guard else "")
    if spec.worker is not None:
        worker_block = f"""else
{_env_lines(spec.worker)}
  argv=(
{_argv_lines(spec.worker.argv, "    ")}
  )
fi"""
    else:
        worker_block = """else
  echo "this spec runs on 1 node; node $node_rank has nothing to do" >&2
  exit 1
fi"""
    return _header("per-node launcher, run by srun on every node of the job (see srun.sh)") + f"""\
set -euo pipefail
export LC_CTYPE=C.UTF-8

: "${{SLURM_JOB_ID:?run me through srun.sh}}" "${{SLURMD_NODENAME:?run me through srun.sh}}"
: "${{NODE0_ADDR:?srun.sh exports NODE0_ADDR}}" "${{NODE_ORDER:?srun.sh exports NODE_ORDER}}"
# this node's vLLM rank: its place in NODE_ORDER (head first)
node_rank=$(tr ' ' '\\n' <<<"$NODE_ORDER" | awk -v h="$SLURMD_NODENAME" '$1 == h {{print NR - 1}}')
if [ -z "$node_rank" ]; then
  echo "$SLURMD_NODENAME is not in NODE_ORDER ($NODE_ORDER)" >&2
  exit 1
fi
sif={q(layout.sif_dir + "/" + layout.sif_file)}
instance={q(layout.job_name + "-")}"${{SLURM_JOB_ID}}"

# this node's address is the source of its route to node 0; the interface is the one owning it
NODE_ADDR=$(ip -o route get "$NODE0_ADDR" | awk '{{for (i = 1; i < NF; i++) if ($i == "src") {{print $(i + 1); exit}}}}')
NODE_IFNAME=$(ip -o -4 addr show | awk -v a="$NODE_ADDR" '{{split($4, p, "/"); if (p[1] == a) {{print $2; exit}}}}')
if [ -z "$NODE_ADDR" ] || [ -z "$NODE_IFNAME" ]; then
  echo "node $node_rank: no route to node 0 at $NODE0_ADDR" >&2
  exit 1
fi
export NODE_ADDR NODE_IFNAME

{secret_block}child=""
cleanup() {{
  trap - EXIT INT TERM
  if [ -n "$child" ]; then kill "$child" 2>/dev/null || true; fi
  apptainer instance stop "$instance" >/dev/null 2>&1 || true
}}
trap cleanup EXIT
trap 'cleanup; exit 143' TERM
trap 'cleanup; exit 130' INT

# a requeued job (same id, after a node failed) can meet the instance of its own earlier run
# on a node that kept it: it is this job's, so it is stopped before the new start
apptainer instance stop "$instance" >/dev/null 2>&1 || true
apptainer instance start --no-home --writable-tmpfs \\
{bind_args} \\
  "$sif" "$instance"

if [ "$node_rank" -eq 0 ]; then
{_env_lines(head)}
  argv=(
{_argv_lines(head.argv, "    ")}
  ){guard_line}
{worker_block}

echo "node $node_rank ($SLURMD_NODENAME, $NODE_ADDR on $NODE_IFNAME): starting ${{argv[0]}} in instance $instance"
apptainer exec "instance://$instance" "${{argv[@]}}" &
child=$!
wait "$child"
"""


def _module_block(layout: SlurmLayout) -> str:
    """`load_modules`: the seed's environment modules for cthpc_model_bcast, with a warning on
    stderr (never a silent skip) when the host has no environment-modules init script."""
    if not layout.bcast_modules:
        return "load_modules() { :; }\n"
    modules = "\n".join(f"    module load {q(m)}" for m in layout.bcast_modules)
    names = " ".join(layout.bcast_modules)
    return (
        "load_modules() {\n"
        "  if [ -r /etc/profile.d/modules.sh ]; then\n"
        "    set +u  # environment-modules' init reads unset variables\n"
        "    # shellcheck disable=SC1091\n"
        "    . /etc/profile.d/modules.sh\n"
        f"{modules}\n"
        "    set -u\n"
        "  else\n"
        f"    echo \"warning: /etc/profile.d/modules.sh not found on $(hostname -s): modules {names}"
        " not loaded (cthpc_model_bcast is found on PATH or not at all)\" >&2\n"
        "  fi\n"
        "}\n")


def render_bcast_sh(plan: Plan, spec: LaunchSpec, layout: SlurmLayout) -> str:
    """The broadcast: copy the SIF dir and the weights from the master to the nodes.

    Two methods, one script. The seed's: `sbatch bcast.sh` from the host that holds the files
    (the master) runs `cthpc_model_bcast` on every node of the job (`bcast.sh --node SRC DST`
    is the per-node step). Where a resource pool has no `cthpc_model_bcast` (the seed warns it
    is not on every pool; `bcast.sh --probe` says which method the master offers), `bcast.sh
    --copy SRC DST NODE...` (or `--copy-all NODE...` for both trees), run on the master outside
    any job, streams each tree to each node in parallel over the cluster network: a one-off
    server on the master hands every node one `tar` stream over TCP, the node's step (`srun -w
    NODE bcast.sh --receive ...`) unpacks it (no SSH between nodes, nothing written on the
    source; sbcast is not used: it sends one file at a time to every node of the allocation,
    the source included, and Slurm's step I/O moves ~25 MB/s). Both methods end with the same
    check: every node holds as many bytes as the source.
    """
    layout.validate()
    mpi = f" --mpi={q(layout.bcast_mpi)}" if layout.bcast_mpi else ""
    me = q(layout.work_dir + "/bcast.sh")
    part = q(layout.partition)
    return _header("broadcast: SIF image and weights from the master to the nodes (sbatch bcast.sh, or bcast.sh --copy)") + f"""\
{_sbatch("job-name", layout.job_name + "-bcast")}{_sbatch("nodes", spec.nodes)}#SBATCH --ntasks-per-node=1
{_sbatch("partition", layout.partition)}{_sbatch("time", layout.bcast_time)}{_sbatch("chdir", layout.work_dir)}{_sbatch("output", layout.log_dir + "/bcast_%j.out")}{_sbatch("error", layout.log_dir + "/bcast_%j.err")}set -euo pipefail

{_module_block(layout)}
# one short step on one node of the partition (outside a job: the --copy method)
on_node() {{
  local node=$1
  shift
  srun -p {part} -N 1 -n 1 -w "$node" --immediate=120 "$@"
}}

# a node's Slurm NodeAddr, resolved if it is a name
addr_of() {{
  local a
  a=$(scontrol show node "$1" | tr ' ' '\\n' | awk -F= '$1 == "NodeAddr" {{print $2}}')
  case "$a" in
    *[!0-9.]* | "") a=$(getent ahostsv4 "${{a:-$1}}" | awk 'NR == 1 {{print $1}}') ;;
  esac
  echo "$a"
}}

# --copy SRC DST NODE...: on the master, one tar stream per node over TCP, in parallel, then
# the sizes. A one-off server on the master (python3) hands each node that shows the run's
# token one `tar -c` of SRC; the node (bash's /dev/tcp and tar, nothing else) unpacks it in
# DST. Slurm's own step I/O (tar | srun) would need no port, but moves ~25 MB/s: hours per TB.
copy_to_nodes() {{
  local src=$1 dst=$2 node marker want got token port_file port server addr
  shift 2
  if [ ! -d "$src" ]; then
    echo "broadcast source $src is not a directory on $(hostname -s)" >&2
    return 1
  fi
  # a node that already sees the source at DST (shared storage) needs no copy
  marker=".kk3-bcast-$$-$RANDOM"
  : >"$src/$marker"
  local need=() pids=() failed=() short=()
  for node in "$@"; do
    if [ "$(on_node "$node" --time=5 stat -c shared "$dst/$marker" 2>/dev/null)" = shared ]; then
      echo "$node: $dst is the source's own storage; nothing to copy"
    else
      need+=("$node")
    fi
  done
  rm -f "$src/$marker"
  if [ "${{#need[@]}}" -gt 0 ]; then
    token=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \\n')
    port_file=$(mktemp)
    python3 - "$src" "$token" "${{#need[@]}}" >"$port_file" <<'PY' &
import socket, subprocess, sys
src, token, count = sys.argv[1], sys.argv[2].encode(), int(sys.argv[3])
srv = socket.socket()
srv.bind(("0.0.0.0", 0))
srv.listen(count)
print(srv.getsockname()[1], flush=True)
srv.settimeout(900)  # a node that never comes does not hold the master for ever
tars = []
while len(tars) < count:
    conn, _ = srv.accept()
    conn.settimeout(30)
    if conn.recv(len(token) + 1).strip() != token:
        conn.close()  # not one of this run's nodes
        continue
    conn.settimeout(None)
    tars.append(subprocess.Popen(["tar", "-C", src, "-cf", "-", "."], stdout=conn.fileno()))
    conn.close()
sys.exit(max(t.wait() for t in tars))
PY
    server=$!
    for _ in $(seq 1 50); do
      port=$(head -n 1 "$port_file")
      [ -z "$port" ] || break
      sleep 0.1
    done
    rm -f "$port_file"
    if [ -z "$port" ]; then
      echo "the copy server did not start on $(hostname -s) (python3 missing?)" >&2
      kill "$server" 2>/dev/null || true
      return 1
    fi
    for node in "${{need[@]}}"; do
      # the master's own address on the way to that node
      addr=$(ip -o route get "$(addr_of "$node")" | awk '{{for (i = 1; i < NF; i++) if ($i == "src") {{print $(i + 1); exit}}}}')
      echo "copying $src to $node:$dst (from $addr:$port)"
      on_node "$node" {me} --receive "$addr" "$port" "$token" "$dst" &
      pids+=("$!")
    done
    for i in "${{!pids[@]}}"; do
      wait "${{pids[$i]}}" || failed+=("${{need[$i]}}")
    done
    if [ "${{#failed[@]}}" -gt 0 ]; then
      kill "$server" 2>/dev/null || true
      echo "copy of $src failed on ${{failed[*]}}" >&2
      return 1
    fi
    wait "$server" || {{ echo "copy of $src: tar failed on $(hostname -s)" >&2; return 1; }}
  fi
  want=$(du -sb "$src" | awk '{{print $1}}')
  for node in "$@"; do
    got=$(on_node "$node" --time=5 {me} --size "$dst" | awk '{{print $2}}')
    [ "$got" = "$want" ] || short+=("$node=${{got:-unknown}}")
  done
  if [ "${{#short[@]}}" -gt 0 ]; then
    echo "broadcast of $src incomplete: source has $want bytes, but ${{short[*]}}" >&2
    return 1
  fi
  echo "copied $src to $*"
}}

case "${{1:-}}" in
  --node)
    # one step on one node: bind MPI to the interface that reaches the source host
    src_host=$2 path=$3
    src_addr=$(getent ahostsv4 "$src_host" | awk 'NR == 1 {{print $1}}')
    MPICH_NET_DEV=$(ip -o route get "$src_addr" | awk '{{for (i = 1; i < NF; i++) if ($i == "dev") {{print $(i + 1); exit}}}}')
    export MPICH_NET_DEV
    mkdir -p "$path"
    exec cthpc_model_bcast "$src_host" "$path" "$path" ;;
  --size)
    echo "$(hostname -s) $(du -sb "$2" | awk '{{print $1}}')"
    exit 0 ;;
  --probe)
    # which method this host offers: the seed's cthpc_model_bcast, else plain copies
    load_modules
    if command -v cthpc_model_bcast >/dev/null 2>&1; then echo "method cthpc_model_bcast"; else echo "method copy"; fi
    exit 0 ;;
  --receive)
    # one node's side of --copy: ADDR PORT TOKEN DST
    mkdir -p "$5"
    exec 3<>"/dev/tcp/$2/$3"
    printf '%s\\n' "$4" >&3
    exec tar -xf - -C "$5" <&3 ;;
  --copy)
    copy_to_nodes "${{@:2}}"
    exit ;;
  --copy-all)
    for path in {q(layout.sif_dir)} {q(layout.model_dir)}; do
      copy_to_nodes "$path" "$path" "${{@:2}}"
    done
    echo "broadcast complete"
    exit ;;
esac

load_modules
src_host="${{BCAST_SOURCE:-$SLURM_SUBMIT_HOST}}"
for path in {q(layout.sif_dir)} {q(layout.model_dir)}; do
  echo "broadcasting $path from $src_host to $SLURM_JOB_NODELIST"
  srun{mpi} --ntasks-per-node=1 \\
    --output={q(layout.log_dir + "/bcast_%j.%t.out")} \\
    --error={q(layout.log_dir + "/bcast_%j.%t.err")} \\
    {me} --node "$src_host" "$path"
done

# verify: every node holds the same number of bytes as the source host
for path in {q(layout.sif_dir)} {q(layout.model_dir)}; do
  sizes=$(srun --ntasks-per-node=1 {me} --size "$path")
  want=$(printf '%s\\n' "$sizes" | awk -v h="$src_host" '$1 == h {{print $2}}')
  want=${{want:-$(du -sb "$path" | awk '{{print $1}}')}}
  bad=$(printf '%s\\n' "$sizes" | awk -v w="$want" '$2 != w {{print $1 "=" $2}}')
  if [ -n "$bad" ]; then
    echo "broadcast of $path incomplete: source has $want bytes, but $bad" >&2
    exit 1
  fi
done
echo "broadcast complete"
"""


def render_mount_nvme_sh(layout: SlurmLayout) -> str:
    """Mount the local NVMe disks; format only a disk with no file system and no partitions.

    Idempotent: a disk already mounted where it belongs is left alone; fstab lines are keyed
    by UUID and added once. Any signature on a disk (file system, partition table, RAID or
    LVM member) means it holds data: it is never formatted.
    """
    layout.validate()
    pairs = "\n".join(f"  {q(d)} {q(m)}" for d, m in layout.disks)
    return _header("mount the local NVMe disks (run as root on every node; safe to re-run)") + f"""\
set -euo pipefail
fs_type={q(layout.fs_type)}
fstab=${{FSTAB:-/etc/fstab}}

if [ "$(id -u)" -ne 0 ]; then
  echo "run as root" >&2
  exit 1
fi

mount_one() {{
  local dev=$1 mnt=$2 fs uuid current
  if [ ! -b "$dev" ]; then
    echo "$dev: not a block device" >&2
    return 1
  fi
  mkdir -p "$mnt"
  fs=$(blkid -p -s TYPE -o value "$dev" || true)
  if [ -z "$fs" ]; then
    if [ -n "$(blkid -p -s PTTYPE -o value "$dev" || true)" ] || [ -n "$(wipefs --noheadings "$dev")" ] \\
        || [ "$(lsblk -nro NAME "$dev" | wc -l)" -gt 1 ]; then
      echo "$dev: holds a partition table or other signature; refusing to format it" >&2
      return 1
    fi
    echo "$dev: empty; creating $fs_type"
    "mkfs.$fs_type" -q "$dev"
    fs=$fs_type
  else
    echo "$dev: already holds $fs; not formatting"
  fi
  uuid=$(blkid -p -s UUID -o value "$dev")
  current=$(findmnt -rno SOURCE --mountpoint "$mnt" || true)
  if [ -z "$current" ]; then
    mount -t "$fs" UUID="$uuid" "$mnt"
    echo "$dev: mounted on $mnt"
  elif [ "$(readlink -f "$current")" != "$(readlink -f "$dev")" ]; then
    echo "$mnt: already holds $current, not $dev" >&2
    return 1
  fi
  if ! grep -q "^UUID=$uuid " "$fstab"; then
    echo "UUID=$uuid $mnt $fs defaults,nofail 0 0" >>"$fstab"
    echo "$dev: added to $fstab"
  fi
}}

while read -r dev mnt; do
  [ -n "$dev" ] || continue  # no disks in the layout: nothing to mount
  mount_one "$dev" "$mnt"
done <<'DISKS'
{pairs}
DISKS
echo "disks mounted"
"""


def render_check_sh(spec: LaunchSpec, layout: SlurmLayout) -> str:
    """Readiness checks in the order the service gates on them: health, models, one chat reply.

    `check.sh [BASE_URL] [health|models|chat|all]`; the API key, when the spec uses one, is read
    from its root-only file, checked against the bearer-token grammar (config/api_key.py; exit 2
    without sending anything if it does not match) and handed to curl as a header line on stdin
    (inference/curl.py `curl_with_bearer`): never in a process list, never curl config.
    """
    layout.validate()
    key_file = f"{layout.secret_dir}/VLLM_API_KEY"
    uses_key = "VLLM_API_KEY" in spec.secret_env
    model = spec.served_model_name
    body = json_text({"model": model,
                      "messages": [{"role": "user", "content": "Reply with one word: ready"}],
                      "max_tokens": 16, "temperature": 0})
    return _header("check the endpoint: check.sh [BASE_URL] [health|models|chat|all]") + f"""\
set -euo pipefail
base=${{1:-http://127.0.0.1:{int(spec.port)}}}
what=${{2:-all}}
key_file={q(key_file)}
model={q(model)}
use_key={"yes" if uses_key else "no"}

key=""
if [ "$use_key" = yes ]; then
  key=$(cat "$key_file")
  # the grammar of kimi-k3:apiKey (RFC 6750 b64token); C locale: ranges are ASCII only
  if ! (LC_ALL=C; [[ $key =~ {BEARER_TOKEN_ERE} ]]); then
    echo "check.sh: $key_file does not hold a bearer token (RFC 6750 characters); not sent" >&2
    exit 2
  fi
fi

call() {{
  # the key goes to curl as a header line on stdin (-H @-), never argv, never curl config
  if [ "$use_key" = yes ]; then
    {curl_with_bearer("key")} -fsS --max-time 60 "$@"
  else
    curl -fsS --max-time 60 "$@"
  fi
}}

health() {{
  call -o /dev/null "$base"{q(spec.readiness_path)}
  echo "health: ok"
}}

models() {{
  local out
  out=$(call "$base/v1/models")
  if ! printf '%s' "$out" | grep -E {q('"id" *: *' + ere_literal(json_text(model)))} >/dev/null; then
    echo "models: $model not served: $out" >&2
    return 1
  fi
  echo "models: $model listed"
}}

chat() {{
  local out
  out=$(call -H 'Content-Type: application/json' "$base/v1/chat/completions" \\
    -d {q(body)})
  if ! printf '%s' "$out" | grep '"choices"' >/dev/null; then
    echo "chat: no completion: $out" >&2
    return 1
  fi
  echo "chat: $out"
}}

case "$what" in
  health) health ;;
  models) models ;;
  chat) chat ;;
  all) health && models && chat ;;
  *) echo "usage: check.sh [BASE_URL] [health|models|chat|all]" >&2; exit 2 ;;
esac
"""


#: the guard's file, relative to the work dir (render_all's key, where the service writes it)
API_GUARD_FILE = f"{guard.HOST_SUBDIR}/{guard.FILE_NAME}"


def render_all(plan: Plan, spec: LaunchSpec, layout: SlurmLayout) -> Mapping[str, str]:
    """Every script, by file name (SCRIPT_NAMES)."""
    from .health_scripts import render_preflight_sh, render_watchdog_sh  # they build on this one

    return {
        "srun.sh": render_srun_sh(plan, spec, layout),
        "node.sh": render_node_sh(plan, spec, layout),
        "bcast.sh": render_bcast_sh(plan, spec, layout),
        "mount_nvme.sh": render_mount_nvme_sh(layout),
        "check.sh": render_check_sh(spec, layout),
        "preflight.sh": render_preflight_sh(layout),
        "watchdog.sh": render_watchdog_sh(layout),
    }


def api_guard_files(spec: LaunchSpec) -> Mapping[str, str]:
    """`{API_GUARD_FILE: text}` when the spec loads the API-key guard (node.sh binds it), else {}."""
    return {API_GUARD_FILE: guard.source()} if spec.api_guard else {}
