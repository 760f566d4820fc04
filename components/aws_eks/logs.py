"""The vLLM pods' logs through the Kubernetes API, as the deployer (an EKS token, the cluster's CA).

Kubernetes API reference, Pod v1, "read log of the specified Pod"
(https://kubernetes.io/docs/reference/kubernetes-api/workload-resources/pod-v1/#read-log-of-the-specified-pod,
read 2026-12-01): `GET /api/v1/namespaces/{namespace}/pods/{name}/log` with `container`, `follow`
(stream until the connection closes), `tailLines`; the answer is the log as text. The pods are
listed with the serving selector (`GET /api/v1/namespaces/{namespace}/pods?labelSelector=`),
sorted by name; without `--node` the first serving pod (the only one on one node; the
LeaderWorkerSet's leader, whose name has no worker suffix, sorts first), with `--node` a pod by
its name or its index in that order. Values are checked before any request (`check_*`).

HyperPod (`kimi-k3:serving=hyperpod`): the inference operator makes the pods, so kimi-k3 knows
neither their labels nor their containers' names in advance. The pods are those the operator
labelled, read from the `InferenceEndpointConfig`'s `status.selector` ("LabelSelector for the
deployment": the operator's CRD, tests/contracts/hyperpod/iec_facts.yaml) through
`GET /apis/inference.sagemaker.aws.amazon.com/v1/namespaces/{ns}/inferenceendpointconfigs/{name}`;
the container is the one declaring the worker's `modelInvocationPort` (`containerPort`, Pod v1
`spec.containers[].ports`), or the pod's only container (`pick_container`).
"""

from __future__ import annotations

import re
from typing import Callable, Dict, List, Mapping, Optional

_NAME = re.compile(r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?")  # DNS-1123 subdomain (pod names)
_INDEX = re.compile(r"[0-9]{1,4}")
MAX_LINES = 100_000


def check_node(value: Optional[str]) -> Optional[str]:
    if value is None:
        return None
    if not isinstance(value, str) or not (_INDEX.fullmatch(value) or _NAME.fullmatch(value)):
        raise ValueError(f"--node {value!r} is not a pod; give a pod name (kubectl -n kimi-k3 get "
                         "pods) or its index (0 is the first serving pod)")
    return value


def check_name(value: str, what: str) -> str:
    """A Kubernetes object name (DNS-1123 subdomain) that goes into a URL path and a shell line."""
    if not isinstance(value, str) or not _NAME.fullmatch(value):
        raise ValueError(f"{what} {value!r} is not a Kubernetes name (lower-case letters, digits, - and .)")
    return value


def check_lines(value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_LINES:
        raise ValueError(f"--lines {value!r} is out of range; use 1 to {MAX_LINES}")
    return value


def pick_pod(pods: List[Mapping], node: Optional[str]) -> str:
    """The pod whose log to read (ValueError naming what there is when none fits)."""
    names = sorted((p.get("metadata") or {}).get("name", "") for p in pods)
    names = [n for n in names if n]
    if not names:
        raise ValueError("no serving pod found (the GPU nodes may be scaled to zero outside the "
                         "Capacity Block); python -m components status shows where the stack is")
    if node is None:
        return names[0]
    if node.isdigit():
        if int(node) < len(names):
            return names[int(node)]
    elif node in names:
        return node
    raise ValueError(f"--node {node!r}: no such serving pod; there are {', '.join(names)}")


#: the operator's API group and version (tests/contracts/hyperpod/iec_facts.yaml `apiVersion`)
IEC_API = "inference.sagemaker.aws.amazon.com/v1"


def pick_container(pod: Mapping, container: Optional[str], port: Optional[int]) -> str:
    """The container whose log to read: `container` when the stack names it (aws-eks: `vllm`),
    else the one declaring `port` as a containerPort (HyperPod's worker), else the only one;
    ValueError naming the containers when none fits."""
    if container:
        return container
    spec = pod.get("spec") or {}
    names = [c.get("name", "") for c in spec.get("containers") or [] if c.get("name")]
    if port is not None:
        for c in spec.get("containers") or []:
            if any(int(q.get("containerPort") or 0) == int(port) for q in c.get("ports") or []):
                return c["name"]
    if len(names) == 1:
        return names[0]
    pod_name = (pod.get("metadata") or {}).get("name", "?")
    raise ValueError(f"pod {pod_name}: no container serves port {port} and it has "
                     f"{len(names)} ({', '.join(names) or 'none'}); read one with kubectl logs -c NAME")


def _selector_text(selector: Mapping[str, str]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(selector.items()))


class PodLogs:
    """Lists the serving pods and reads one pod's log, over one httpx client (injectable)."""

    def __init__(self, endpoint: str, token: Callable[[], str], verify=True, client=None,
                 timeout_s: float = 20.0):
        import httpx

        self.endpoint = endpoint.rstrip("/")
        self.token = token
        self.client = client or httpx.Client(verify=verify, trust_env=False,
                                             timeout=httpx.Timeout(timeout_s, read=None))

    def _headers(self) -> dict:
        return {"Authorization": f"Bearer {self.token()}"}

    def pods(self, namespace: str, selector: Mapping[str, str]) -> List[Mapping]:
        sel = _selector_text(selector)
        r = self.client.get(f"{self.endpoint}/api/v1/namespaces/{namespace}/pods",
                            params={"labelSelector": sel}, headers=self._headers())
        if r.status_code != 200:
            raise RuntimeError(f"listing pods in {namespace}: HTTP {r.status_code} {r.text[:200]}")
        return [p for p in r.json().get("items", [])
                if not (p.get("metadata") or {}).get("deletionTimestamp")]

    def operator_selector(self, namespace: str, name: str) -> Dict[str, str]:
        """The labels the HyperPod operator put on the endpoint's pods (`status.selector` of the
        InferenceEndpointConfig `name`); {} before it wrote one (then every pod of the stack's
        own namespace is the endpoint's)."""
        from .hyperpod.readiness import parse_selector

        check_name(name, "InferenceEndpointConfig")
        check_name(namespace, "namespace")
        r = self.client.get(f"{self.endpoint}/apis/{IEC_API}/namespaces/{namespace}/"
                            f"inferenceendpointconfigs/{name}", headers=self._headers())
        if r.status_code != 200:
            raise RuntimeError(f"reading InferenceEndpointConfig {namespace}/{name}: HTTP "
                               f"{r.status_code} {r.text[:200]}")
        return parse_selector((r.json().get("status") or {}).get("selector")) or {}

    def read(self, namespace: str, pod: str, container: str, lines: int, follow: bool,
             write: Callable[[bytes], None]) -> None:
        params = {"container": container, "tailLines": str(check_lines(lines))}
        if follow:
            params["follow"] = "true"
        url = f"{self.endpoint}/api/v1/namespaces/{namespace}/pods/{pod}/log"
        with self.client.stream("GET", url, params=params, headers=self._headers()) as r:
            if r.status_code != 200:
                r.read()
                raise RuntimeError(f"log of pod {pod}: HTTP {r.status_code} {r.text[:200]}")
            for chunk in r.iter_bytes():
                write(chunk)


def logs_output(stack: str, namespace: str, selector: Mapping[str, str]) -> dict:
    """The stack output `logs`: the `logs` command, and the same with kubectl alone (after the
    output `kubectl`'s kubeconfig step): `kubectl logs -l` with the serving pods' selector,
    their `vllm` container, every pod's lines prefixed with its name (kubectl logs flags `-l`,
    `-c`, `--prefix`, `--tail`, `-f`, `--max-log-requests`:
    https://kubernetes.io/docs/reference/kubectl/generated/kubectl_logs/, read 2026-12-02)."""
    labels = _selector_text(selector)
    return {"command": f"python -m components logs --stack {stack} [--follow] [--node N]",
            "kubectl": (f"KUBECONFIG=k3.kubeconfig kubectl -n {namespace} logs -l {labels} "
                        "-c vllm --prefix --tail=200 [-f --max-log-requests=16]")}


def hyperpod_logs_output(stack: str, namespace: str, iec_name: str) -> dict:
    """The stack output `logs` on HyperPod: the `logs` command, and kubectl with the selector
    the operator wrote into the endpoint config's status (`kubectl get -o jsonpath`), every
    container of those pods (`--all-containers`: the operator adds its own beside the worker)."""
    check_name(iec_name, "InferenceEndpointConfig")
    check_name(namespace, "namespace")
    sel = (f"$(kubectl -n {namespace} get inferenceendpointconfig {iec_name} "
           "-o jsonpath='{.status.selector}')")
    return {"command": f"python -m components logs --stack {stack} [--follow] [--node N]",
            "kubectl": (f'export KUBECONFIG=k3.kubeconfig; kubectl -n {namespace} logs -l "{sel}" '
                        "--all-containers --prefix --tail=200 [-f --max-log-requests=16]")}
