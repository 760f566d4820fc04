"""The serving job's logs on the CTyun master, over SSH: the whole job's, or one node's.

Where they are (components/ctyun_hcc/scripts.py renders them; plan writes `srun.sh`):
`srun.sh` runs with `#SBATCH --output=<workDir>/logs/job_%j.out` and `--error=.../job_%j.err`
(the job's own lines: the endpoint, the node order), and each node's launcher with
`srun --output=<workDir>/logs/node_%j.%t.out --error=.../node_%j.%t.err` (vLLM's output, one pair
per Slurm task). A task number is not the vLLM node rank, so a node is found by the line its
launcher prints first (`node.sh`: `node <rank> (<host>, <address> on <nic>): starting ...`): by
its host name (as the stack output `slurmNodes` lists them) or its rank. Slurm's sbatch/srun
filename patterns: `%j` job id, `%t` task id (slurm-22-05-8-1 doc/man/man1/sbatch.1 and srun.1,
"filename pattern").

Every value that reaches the remote shell is checked first (`check_*`, a ValueError naming the
option, the value and the fix) and passed as a quoted word: a node name, job id or directory
cannot become a command. Reading uses `tail` (`-F` to follow).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from ..inference.quoting import shell_word

MAX_LINES = 100_000
_JOB = re.compile(r"[0-9]{1,12}")
_NODE = re.compile(r"[0-9]{1,4}|[A-Za-z0-9][A-Za-z0-9._-]{0,62}")
_DIR = re.compile(r"/[A-Za-z0-9._/-]{1,250}")


def check_job(value: str) -> str:
    if not isinstance(value, str) or not _JOB.fullmatch(value):
        raise ValueError(f"--job {value!r} is not a Slurm job id; give its number, e.g. --job 42 "
                         "(the stack output slurmJobId)")
    return value


def check_node(value: Optional[str]) -> Optional[str]:
    if value is None:
        return None
    if not isinstance(value, str) or not _NODE.fullmatch(value):
        raise ValueError(f"--node {value!r} is not a node; give a host name from the stack output "
                         "slurmNodes (e.g. a3compute0001) or a vLLM node rank (0 is the head)")
    return value


def check_lines(value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_LINES:
        raise ValueError(f"--lines {value!r} is out of range; use 1 to {MAX_LINES}")
    return value


def check_dir(value: str) -> str:
    if not isinstance(value, str) or not _DIR.fullmatch(value) or \
            any(part in (".", "..") for part in value.split("/")):
        raise ValueError(f"log directory {value!r} is not an absolute path of plain names; the "
                         "stack output logDir gives it (e.g. /home/kimi-k3/logs)")
    return value.rstrip("/") or "/"


@dataclass(frozen=True)
class LogRequest:
    log_dir: str
    job_id: str
    node: Optional[str] = None
    lines: int = 200
    follow: bool = False

    def __post_init__(self):
        check_dir(self.log_dir)
        check_job(self.job_id)
        check_node(self.node)
        check_lines(self.lines)


def remote_command(req: LogRequest) -> str:
    """The command that prints (or follows) the logs on the master. Exit 3: nothing to show."""
    d, job, node = shell_word(req.log_dir.rstrip("/")), shell_word(req.job_id), req.node
    if node is None:
        pick = f'set -- {d}/job_{job}.out {d}/job_{job}.err; what="job {req.job_id}"'
    else:
        if node.isdigit():
            grep = f"grep -l -m1 -E -- {shell_word(f'^node {node} [(]')}"
        else:
            grep = f"grep -l -m1 -F -- {shell_word(f'({node}, ')}"
        pick = (f'out=$({grep} {d}/node_{job}.*.out 2>/dev/null | head -n 1 || true); '
                f'if [ -z "$out" ]; then echo "no log of node {node} in job {req.job_id} under '
                f'{req.log_dir}; nodes with logs:" >&2; grep -h -m1 -E "^node [0-9]+ [(]" '
                f'{d}/node_{job}.*.out 2>/dev/null | cut -d: -f1 >&2 || true; exit 3; fi; '
                f'set -- "$out" "${{out%.out}}.err"; what="node {node} of job {req.job_id}"')
    keep = ('found=(); for f in "$@"; do [ -e "$f" ] && found+=("$f"); done; '
            'if [ ${#found[@]} -eq 0 ]; then echo "no log of $what in ' + req.log_dir.replace('"', '') +
            '" >&2; exit 3; fi')
    if req.follow:  # tail -F waits for a file that is not there yet
        return f'{pick}; {keep}; exec tail -n {req.lines} -F -- "$@"'
    return f'{pick}; {keep}; exec tail -n {req.lines} -- "${{found[@]}}"'


def logs_output(stack: str, host: str, port: int, user: str, bastion: str, log_dir: str,
                job_id: str) -> dict:
    """The stack output `logs`: the `logs` command, and the same with ssh alone (with the key
    the output `sshCommand` saves): the job's own log (`job_<id>.out/.err`); each node's vLLM
    log is `node_<id>.<task>.out` next to it (see the module docstring)."""
    jump = f" -J {shell_word(bastion)}" if bastion else ""
    p = f" -p {int(port)}" if int(port) != 22 else ""
    d = log_dir.rstrip("/")
    files = " ".join(shell_word(f"{d}/job_{job_id}.{ext}") for ext in ("out", "err"))
    return {"command": f"python -m components logs --stack {stack} [--follow] [--node N]",
            "ssh": f"ssh -i k3.key{jump}{p} {shell_word(f'{user}@{host}')} tail -n 200 -F {files}",
            "nodeLogs": f"{d}/node_{job_id}.<task>.out"}
