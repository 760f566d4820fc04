"""`python -m components logs --stack S [--follow] [--node N] [--lines L]`: the serving logs.

- ctyun-hcc: the Slurm job's logs on the master, over SSH (components/ctyun_hcc/logs.py), with
  the stack's own login key and the pinned host key (never trust-on-first-use here: the pin is
  in the stack's outputs);
- aws-eks: the vLLM pods' logs through the Kubernetes API (components/aws_eks/logs.py), with an
  EKS token from your AWS credentials; on HyperPod the pods the inference operator labelled (the
  `InferenceEndpointConfig`'s `status.selector`) and their worker container.

Which target's reader runs is told by the outputs (program/registry.py `logs_outputs`; the
reader is the target's `logs_module`: ctyun_hcc/logs_command.py, aws_eks/logs_command.py).
Where to connect comes from the stack's outputs: `pulumi stack output --json --show-secrets`
(run in the project directory), or `--outputs FILE` holding that JSON (e.g. saved once on the
machine that deployed). The outputs used: ctyun-hcc `ssh` {host, port, user, hostKey, bastion,
bastionHostKey, logDir}, `sshLoginKey` (secret), `slurmJobId`, and through a bastion the key it
takes from `--bastion-key FILE` (the user's own key, stack config: the program never copies it into
an output); aws-eks `kubernetes`
{apiEndpoint, caData, clusterName, region, namespace, podSelector, container, and on HyperPod
inferenceEndpointConfig and port}. Bad input exits 2
with one line; Ctrl-C ends `--follow`.

What a log holds comes from outside: vLLM writes what clients send into it (a request's
prompt, a bad request's text, a model name), and so does anything else on the nodes. Every byte
shown passes through `TerminalSafe`, so an escape sequence in a log is shown as `\\x1b...`,
never acted on by the terminal (no cleared screen, retitled window, rewritten clipboard through
OSC 52, or line hidden with a bare carriage return), as `status` and `accept` show outside text.
"""

from __future__ import annotations

import importlib
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, Mapping

from ..config.values import integer
from ..inference.errors import ConfigError
from ..inference.quoting import TERMINAL_CONTROLS, utf8_any
from ..program.registry import REGISTRY

EXIT_BAD_INPUT = 2
EXIT_NOTHING = 3
#: the most `--lines` a reader is asked for (each target's reader checks it again:
#: aws_eks/logs.py, ctyun_hcc/logs.py)
MAX_LINES = 100_000
#: what a terminal acts on (inference/quoting.py TERMINAL_CONTROLS, the set `terminal_text`
#: shows) but the line ends a log is made of: a line feed, and a carriage return before one; a
#: carriage return not followed by a line feed moves the cursor back over a line shown
_SHOWN = "".join(c for c in TERMINAL_CONTROLS if c not in "\n\r")
_CONTROL_BYTES = re.compile(utf8_any(_SHOWN) + rb"|\r(?!\n)")
#: what may end a chunk with the rest of a control in the next one: a carriage return (a line
#: feed may follow) and the leading byte of a multi-byte control (C1: UTF-8 C2 80-C2 9F)
_HELD = frozenset([b"\r", *(c.encode()[:1] for c in _SHOWN if len(c.encode()) > 1)])


class TerminalSafe:
    """A `write(bytes)` that shows every terminal control byte of a log as `\\xNN` (a C1
    control as its code point, as `terminal_text` does) and passes everything else on as it
    came. Streamed: a carriage return or a UTF-8 lead byte C2 that ends one chunk is held until
    the next one says what it is, so a control split across two reads is still caught;
    `flush()` writes what is held at the end."""

    def __init__(self, write):
        self._write, self._held = write, b""

    @staticmethod
    def _shown(m) -> bytes:
        return b"\\x%02x" % ord(m.group().decode())

    def __call__(self, data: bytes) -> None:
        data, self._held = self._held + data, b""
        if data[-1:] in _HELD:
            data, self._held = data[:-1], data[-1:]
        if data:
            self._write(_CONTROL_BYTES.sub(self._shown, data))

    def flush(self) -> None:
        held, self._held = self._held, b""
        if held:
            self._write(_CONTROL_BYTES.sub(self._shown, held))


class UsageError(Exception):
    pass


def register(sub) -> None:
    p = sub.add_parser("logs", help="show (or follow) the serving logs: the Slurm job's on "
                       "ctyun-hcc, the vLLM pods' on aws-eks")
    p.add_argument("--stack", required=True, help="stack name, e.g. ctyun-hcc")
    p.add_argument("--follow", "-f", action="store_true", help="keep printing new lines (Ctrl-C ends)")
    p.add_argument("--node", help="one node: a host name (ctyun-hcc, the output slurmNodes) or "
                   "pod name (aws-eks), or its rank/index; default: the job's own log (ctyun-hcc) "
                   "or the first serving pod (aws-eks)")
    p.add_argument("--lines", default="200",
                   help=f"lines from the end to start with (200; 1 to {MAX_LINES})")
    p.add_argument("--job", help="ctyun-hcc: another Slurm job id than the output slurmJobId")
    p.add_argument("--outputs", type=Path, metavar="FILE",
                   help="the stack's outputs as JSON (`pulumi stack output --json --show-secrets`)")
    p.add_argument("--bastion-key", type=Path, metavar="FILE",
                   help="ctyun-hcc through kimi-k3:sshBastion: the private key the bastion takes "
                   "(the one kimi-k3:sshBastionPrivateKey, else kimi-k3:sshPrivateKey, holds; "
                   "stack config, never an output)")
    p.set_defaults(func=run)


def stack_outputs(stack: str, path=None) -> Dict[str, Any]:
    if path is not None:
        try:
            data = json.loads(Path(path).read_text())
        except (OSError, ValueError) as e:
            raise UsageError(f"--outputs {str(path)!r} is not readable JSON ({e.__class__.__name__}); "
                             "save it with: pulumi stack output --json --show-secrets > FILE") from None
    else:
        try:
            p = subprocess.run(["pulumi", "stack", "output", "--json", "--show-secrets",
                                "--stack", stack], capture_output=True, text=True, timeout=120)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise UsageError(f"cannot run `pulumi stack output` ({e.__class__.__name__}); install "
                             "the Pulumi CLI, or give --outputs FILE") from None
        if p.returncode != 0:
            first = (p.stderr.strip().splitlines() or ["no message"])[0]
            raise UsageError(f"--stack {stack!r}: `pulumi stack output` failed: {first}")
        try:
            data = json.loads(p.stdout or "{}")
        except ValueError:
            raise UsageError(f"--stack {stack!r}: `pulumi stack output --json` did not print JSON; "
                             "save the outputs with it and give --outputs FILE") from None
    if not isinstance(data, dict):
        raise UsageError("the stack's outputs are not a JSON object")
    return data


def need(outputs: Mapping[str, Any], key: str) -> Any:
    if outputs.get(key) in (None, "", {}):
        raise UsageError(f"the stack's outputs have no `{key}` (a stack deployed before kimi-k3 "
                         "exported it, or not deployed yet): run `pulumi up`")
    return outputs[key]


def run(args) -> int:
    try:  # the config grammar (ASCII digits, the flag quoted as typed), before anything is read
        args.lines = integer("--lines", args.lines, 1, MAX_LINES)
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        outputs = stack_outputs(args.stack, args.outputs)
        for entry in REGISTRY.values():  # the target whose outputs these are reads its logs
            if any(key in outputs for key in entry.logs_outputs):
                return importlib.import_module(entry.logs_module).show_logs(args, outputs)
        # a target without a logs reader (no `logs_outputs`) is not listed
        told = "; ".join(f"{name}: {' or '.join(e.logs_outputs)}" for name, e in REGISTRY.items()
                         if e.logs_outputs)
        raise UsageError(f"--stack {args.stack!r}: its outputs are no registered target's (none "
                         f"of the outputs that tell them: {told})")
    except UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        return 0
