"""`python -m components logs` on an aws-eks stack: the vLLM pods' logs through the Kubernetes
API, with an EKS token from your AWS credentials; on HyperPod the pods the inference operator
labelled (the `InferenceEndpointConfig`'s `status.selector`) and their worker container. The
command line and the outputs it reads: components/cli/logs.py.

The token is signed by the stack's identity: the `kubernetes` output names the stack's
`aws:profile` (when set), used as the stack's own calls and its kubeconfig use it (aws_api.session:
an explicit profile wins over ambient AWS_* variables), so `logs` and `kubectl` with the stack's
kubeconfig are the same principal, the one EKS granted (API authentication mode).
"""

from __future__ import annotations

import ssl
import sys
from typing import Mapping

from ..cli.logs import EXIT_NOTHING, TerminalSafe, UsageError, need


def show_logs(args, outputs) -> int:
    """`python -m components logs` on an aws-eks stack (cli/logs.py calls it)."""
    from . import aws_api
    from .kube_api import eks_token, ssl_context
    from .logs import PodLogs, check_lines, check_node, pick_container, pick_pod

    k = need(outputs, "kubernetes")
    if not isinstance(k, Mapping):
        raise UsageError("the stack's `kubernetes` output is not an object: run `pulumi up`")
    try:
        check_node(args.node)
        check_lines(args.lines)
    except ValueError as e:
        raise UsageError(str(e)) from None
    try:  # EKS's base64 PEM: anything else is a damaged outputs file, not a traceback
        verify = ssl_context(str(k["caData"])) if k.get("caData") else True
    except (ValueError, ssl.SSLError):  # binascii.Error and UnicodeDecodeError are ValueErrors
        raise UsageError("the stack's `kubernetes` output has a caData that is not a base64 PEM "
                         "certificate: save the outputs again (pulumi stack output --json --show-secrets)") from None
    import httpx
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        session = aws_api.session({"aws": {"region": k.get("region"), "profile": k.get("profile")}})
    except BotoCoreError as e:  # e.g. ProfileNotFound: the stack's profile is not on this machine
        print(f"error: the stack's aws:profile {k.get('profile')!r} cannot be used here ({type(e).__name__}); "
              "configure it (aws configure --profile NAME) or run where it is", file=sys.stderr)
        return 1
    logs = PodLogs(str(k["apiEndpoint"]),
                   lambda: eks_token(session, str(k["clusterName"]), str(k["region"])),
                   verify=verify)
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

    def raw(data: bytes) -> None:
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()

    write = TerminalSafe(raw)  # what the log holds is shown, never acted on (cli/logs.py)
    print(f"== pod {pod} (namespace {ns}) ==", file=sys.stderr)
    try:
        logs.read(ns, pod, container, args.lines, args.follow, write)
    except RuntimeError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except (httpx.TransportError, BotoCoreError, ClientError) as e:
        return _unreachable(str(k["apiEndpoint"]), e)
    finally:
        write.flush()
    return 0


def _unreachable(endpoint: str, e: BaseException) -> int:
    """The Kubernetes API could not be reached, or no AWS token made for it: one line, exit 1
    (the endpoint is public data of the stack; the error's text names no secret: the token is
    sent only in a header)."""
    print(f"error: the cluster's Kubernetes API {endpoint} could not be asked "
          f"({type(e).__name__}: {str(e)[:200]}): check your network path to it (kimi-k3:apiAccessCidrs, "
          "a VPN for a private endpoint) and your AWS credentials", file=sys.stderr)
    return 1
