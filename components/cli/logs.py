"""`python -m components logs --stack S [--follow] [--node N] [--lines L]`: the serving logs.

- ctyun-hcc: the Slurm job's logs on the master, over SSH (components/ctyun_hcc/logs.py), with
  the stack's own login key and the pinned host key (never trust-on-first-use here: the pin is
  in the stack's outputs);
- aws-eks: the vLLM pods' logs through the Kubernetes API (components/aws_eks/logs.py), with an
  EKS token from your AWS credentials; on HyperPod the pods the inference operator labelled (the
  `InferenceEndpointConfig`'s `status.selector`) and their worker container.

Where to connect comes from the stack's outputs: `pulumi stack output --json --show-secrets`
(run in the project directory), or `--outputs FILE` holding that JSON (e.g. saved once on the
machine that deployed). The outputs used: ctyun-hcc `ssh` {host, port, user, hostKey, bastion,
bastionHostKey, logDir}, `sshLoginKey` (secret), `slurmJobId`; aws-eks `kubernetes`
{apiEndpoint, caData, clusterName, region, namespace, podSelector, container, and on HyperPod
inferenceEndpointConfig and port}. Bad input exits 2
with one line; Ctrl-C ends `--follow`.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, Mapping

EXIT_BAD_INPUT = 2
EXIT_NOTHING = 3


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
    p.add_argument("--lines", type=int, default=200, help="lines from the end to start with (200)")
    p.add_argument("--job", help="ctyun-hcc: another Slurm job id than the output slurmJobId")
    p.add_argument("--outputs", type=Path, metavar="FILE",
                   help="the stack's outputs as JSON (`pulumi stack output --json --show-secrets`)")
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
        data = json.loads(p.stdout or "{}")
    if not isinstance(data, dict):
        raise UsageError("the stack's outputs are not a JSON object")
    return data


def _need(outputs: Mapping[str, Any], key: str) -> Any:
    if outputs.get(key) in (None, "", {}):
        raise UsageError(f"the stack's outputs have no `{key}` (a stack deployed before kimi-k3 "
                         "exported it, or not deployed yet): run `pulumi up`")
    return outputs[key]


def _ctyun(args, outputs) -> int:
    from ..ctyun_hcc.logs import LogRequest, remote_command
    from ..ctyun_hcc.ssh import SshCredentials, SshError, SshRunner, SshTarget, split_bastion

    ssh = _need(outputs, "ssh")
    key = _need(outputs, "sshLoginKey")
    job = args.job or str(_need(outputs, "slurmJobId"))
    if not isinstance(ssh, Mapping) or not ssh.get("hostKey"):
        raise UsageError("the stack's `ssh` output has no pinned hostKey: run `pulumi up`")
    try:
        req = LogRequest(str(ssh.get("logDir") or ""), job, args.node, args.lines, args.follow)
    except ValueError as e:
        raise UsageError(str(e)) from None
    bastion = ssh.get("bastion") or ""
    b_user, b_host, b_port = split_bastion(bastion) if bastion else ("root", None, 22)
    target = SshTarget(host=str(ssh["host"]), port=int(ssh.get("port") or 22),
                       user=str(ssh.get("user") or "root"), host_key=str(ssh["hostKey"]),
                       bastion_host=b_host, bastion_port=b_port, bastion_user=b_user,
                       bastion_host_key=ssh.get("bastionHostKey") or None, retries=1)
    creds = SshCredentials(private_key=str(key),
                           bastion_private_key=outputs.get("sshBastionKey") or None)
    out, err = sys.stdout.buffer, sys.stderr.buffer

    def write(stream):
        def w(data: bytes) -> None:
            stream.write(data)
            stream.flush()
        return w

    try:
        with SshRunner(target, creds) as runner:
            code = runner.stream(remote_command(req), write(out), write(err), pty=req.follow)
    except SshError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return EXIT_NOTHING if code == 3 else code


def _aws(args, outputs) -> int:
    import boto3

    from ..aws_eks.kube_api import eks_token, ssl_context
    from ..aws_eks.logs import PodLogs, check_lines, check_node, pick_container, pick_pod

    k = _need(outputs, "kubernetes")
    if not isinstance(k, Mapping):
        raise UsageError("the stack's `kubernetes` output is not an object: run `pulumi up`")
    try:
        check_node(args.node)
        check_lines(args.lines)
    except ValueError as e:
        raise UsageError(str(e)) from None
    import httpx
    from botocore.exceptions import BotoCoreError, ClientError

    session = boto3.Session()
    logs = PodLogs(str(k["apiEndpoint"]),
                   lambda: eks_token(session, str(k["clusterName"]), str(k["region"])),
                   verify=ssl_context(str(k["caData"])) if k.get("caData") else True)
    ns = str(k.get("namespace") or "kimi-k3")
    selector = dict(k.get("podSelector") or {})
    try:
        if not selector and k.get("inferenceEndpointConfig"):  # HyperPod: the operator's labels
            selector = logs.operator_selector(ns, str(k["inferenceEndpointConfig"]))
        pods = logs.pods(ns, selector)
        pod = pick_pod(pods, args.node)
        container = pick_container(next(p for p in pods if p["metadata"]["name"] == pod),
                                   k.get("container"), k.get("port"))
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_NOTHING
    except RuntimeError as e:  # the API said no (HTTP 403: your identity; 404: no such object)
        print(f"error: {e}", file=sys.stderr)
        return 1
    except (httpx.TransportError, BotoCoreError, ClientError) as e:
        return _unreachable(str(k["apiEndpoint"]), e)

    def write(data: bytes) -> None:
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()

    print(f"== pod {pod} (namespace {ns}) ==", file=sys.stderr)
    try:
        logs.read(ns, pod, container, args.lines, args.follow, write)
    except RuntimeError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except (httpx.TransportError, BotoCoreError, ClientError) as e:
        return _unreachable(str(k["apiEndpoint"]), e)
    return 0


def _unreachable(endpoint: str, e: BaseException) -> int:
    """The Kubernetes API could not be reached, or no AWS token made for it: one line, exit 1
    (the endpoint is public data of the stack; the error's text names no secret: the token is
    sent only in a header)."""
    print(f"error: the cluster's Kubernetes API {endpoint} could not be asked "
          f"({type(e).__name__}: {str(e)[:200]}): check your network path to it (kimi-k3:apiAccessCidrs, "
          "a VPN for a private endpoint) and your AWS credentials", file=sys.stderr)
    return 1


def run(args) -> int:
    try:
        outputs = stack_outputs(args.stack, args.outputs)
        if "slurmJobId" in outputs or "ssh" in outputs:
            return _ctyun(args, outputs)
        if "kubernetes" in outputs or "kubeconfig" in outputs:
            return _aws(args, outputs)
        raise UsageError(f"--stack {args.stack!r}: its outputs are neither a ctyun-hcc nor an "
                         "aws-eks stack's (no slurmJobId, no kubernetes)")
    except UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        return 0
