"""The kube-scheduler filters that decide whether a pod fits a node: a model of the contract.

Built from the Kubernetes sources and API reference, not from kimi-k3's code (kubernetes/kubernetes):
- NodeAffinity filter, `pkg/scheduler/framework/plugins/nodeaffinity/node_affinity.go`: every
  `spec.nodeSelector` label must match exactly, and the required node affinity must match. The
  matching is `k8s.io/component-helpers/scheduling/corev1/nodeaffinity/nodeaffinity.go`:
  `nodeSelectorTerms` are ORed, the expressions of one term ANDed, a term with no expressions
  and no fields matches nothing; operators follow `apimachinery/pkg/labels/selector.go`:
  `In`/`Exists` need the label; `NotIn`/`DoesNotExist` also match when the label is absent;
  `Gt`/`Lt` compare integers. `matchFields` supports `metadata.name` only.
- TaintToleration filter, `pkg/scheduler/framework/plugins/tainttoleration/taint_toleration.go`:
  every taint with effect NoSchedule or NoExecute must be tolerated (PreferNoSchedule only
  scores). `ToleratesTaint` (`staging/src/k8s.io/api/core/v1/toleration.go`): an empty effect
  matches every effect; an empty key with operator Exists matches every taint; Exists ignores
  the value; Equal (the default operator) compares values.
- NodeResourcesFit filter, `pkg/scheduler/framework/plugins/noderesources/fit.go`: the pod's
  request is max(sum of its containers' requests, each init container's request) plus
  overhead; each requested resource must fit allocatable minus what pods already on the node
  request; a resource the node does not advertise has allocatable 0. Container requests
  default to limits when only limits are set (`pkg/apis/core/v1/defaults.go`).
- DaemonSet pods (`pkg/controller/daemon/util/daemonset_util.go`) get tolerations for the
  node-condition taints (not-ready, unreachable, disk/memory/pid pressure, unschedulable;
  network-unavailable with hostNetwork) and a required `matchFields metadata.name` term per
  node; the steady-state nodes below carry no condition taints, so only the user's taints count.
Quantities are plain integers (cores as millicores, bytes), enough for the resources used here.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

_QUANTITY = re.compile(r"^([0-9.]+)([a-zA-Z]*)$")
_SUFFIX = {"": 1, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "Ki": 2**10, "Mi": 2**20,
           "Gi": 2**30, "Ti": 2**40}


def quantity(resource: str, value: Any) -> int:
    """A resource quantity as an integer (cpu in millicores, memory in bytes, devices as counts)."""
    s = str(value)
    if resource == "cpu":
        return int(s[:-1]) if s.endswith("m") else int(float(s) * 1000)
    m = _QUANTITY.match(s)
    if not m or m.group(2) not in _SUFFIX:
        raise ValueError(f"cannot read quantity {value!r} of {resource}")
    return int(float(m.group(1)) * _SUFFIX[m.group(2)])


@dataclass
class Node:
    name: str
    labels: Dict[str, str]
    taints: List[Dict[str, str]] = field(default_factory=list)
    allocatable: Dict[str, int] = field(default_factory=dict)
    requested: Dict[str, int] = field(default_factory=dict)

    def add_pod(self, pod_spec: Mapping[str, Any]) -> None:
        for r, q in pod_request(pod_spec).items():
            self.requested[r] = self.requested.get(r, 0) + q


# ---------------------------------------------------------------- node affinity

def _requirement_matches(req: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    key, op, values = req["key"], req["operator"], [str(v) for v in req.get("values") or []]
    present = key in labels
    if op == "In":
        return present and labels[key] in values
    if op == "NotIn":
        return not present or labels[key] not in values
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if op in ("Gt", "Lt"):
        if not present or len(values) != 1:
            return False
        try:
            have, want = int(labels[key]), int(values[0])
        except ValueError:
            return False
        return have > want if op == "Gt" else have < want
    raise ValueError(f"unknown node selector operator {op!r}")


def _term_matches(term: Mapping[str, Any], node: Node) -> bool:
    exprs, fields = term.get("matchExpressions") or [], term.get("matchFields") or []
    if not exprs and not fields:
        return False
    if not all(_requirement_matches(e, node.labels) for e in exprs):
        return False
    return all(_requirement_matches(f, {"metadata.name": node.name}) for f in fields)


def node_affinity_reason(pod_spec: Mapping[str, Any], node: Node) -> Optional[str]:
    """None when the pod's nodeSelector and required node affinity accept `node`, else why not."""
    for k, v in (pod_spec.get("nodeSelector") or {}).items():
        if node.labels.get(k) != str(v):
            return f"nodeSelector {k}={v} (node has {node.labels.get(k)!r})"
    required = (((pod_spec.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution"))
    if required is not None:
        terms = required.get("nodeSelectorTerms") or []
        if not any(_term_matches(t, node) for t in terms):
            return f"required node affinity: none of {len(terms)} term(s) matches the node's labels"
    return None


# ---------------------------------------------------------------- taints and tolerations

def tolerates(toleration: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    effect = toleration.get("effect") or ""
    if effect and effect != taint["effect"]:
        return False
    key = toleration.get("key") or ""
    op = toleration.get("operator") or "Equal"
    if not key:
        return op == "Exists"
    if key != taint["key"]:
        return False
    if op == "Exists":
        return True
    if op == "Equal":
        return str(toleration.get("value") or "") == str(taint.get("value") or "")
    return False


def taint_reason(pod_spec: Mapping[str, Any], node: Node) -> Optional[str]:
    tolerations = pod_spec.get("tolerations") or []
    for taint in node.taints:
        if taint["effect"] not in ("NoSchedule", "NoExecute"):
            continue
        if not any(tolerates(t, taint) for t in tolerations):
            return f"untolerated taint {taint['key']}={taint.get('value', '')}:{taint['effect']}"
    return None


# ---------------------------------------------------------------- resources

def _container_request(c: Mapping[str, Any]) -> Dict[str, int]:
    res = c.get("resources") or {}
    requests = dict(res.get("limits") or {})
    requests.update(res.get("requests") or {})  # requests default to limits
    return {r: quantity(r, q) for r, q in requests.items()}


def pod_request(pod_spec: Mapping[str, Any]) -> Dict[str, int]:
    total: Dict[str, int] = {}
    for c in pod_spec.get("containers") or []:
        for r, q in _container_request(c).items():
            total[r] = total.get(r, 0) + q
    for c in pod_spec.get("initContainers") or []:
        for r, q in _container_request(c).items():
            total[r] = max(total.get(r, 0), q)
    for r, q in (pod_spec.get("overhead") or {}).items():
        total[r] = total.get(r, 0) + quantity(r, q)
    return total


def resources_reason(pod_spec: Mapping[str, Any], node: Node) -> Optional[str]:
    for r, q in pod_request(pod_spec).items():
        if q <= 0:
            continue
        free = node.allocatable.get(r, 0) - node.requested.get(r, 0)
        if q > free:
            return f"insufficient {r}: requests {q}, node has {free} free of {node.allocatable.get(r, 0)}"
    return None


# ---------------------------------------------------------------- the filter chain

DAEMONSET_TOLERATIONS = (
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/pid-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
)


def as_daemon_pod(pod_spec: Mapping[str, Any], node: Node) -> Dict[str, Any]:
    """The pod the DaemonSet controller creates for `node` (its tolerations and name term)."""
    spec = copy.deepcopy(dict(pod_spec))
    spec["tolerations"] = list(spec.get("tolerations") or []) + [dict(t) for t in DAEMONSET_TOLERATIONS]
    aff = spec.setdefault("affinity", {}).setdefault("nodeAffinity", {})
    req = aff.setdefault("requiredDuringSchedulingIgnoredDuringExecution", {"nodeSelectorTerms": [{}]})
    name_field = {"key": "metadata.name", "operator": "In", "values": [node.name]}
    # the controller replaces matchFields in every term with the node's name
    req["nodeSelectorTerms"] = [{**t, "matchFields": [name_field]} for t in (req.get("nodeSelectorTerms") or [{}])]
    return spec


def why_not(pod_spec: Mapping[str, Any], node: Node) -> Optional[str]:
    """None if kube-scheduler's filters accept `pod_spec` on `node`, else the first reason."""
    return node_affinity_reason(pod_spec, node) or taint_reason(pod_spec, node) or resources_reason(pod_spec, node)


def place(pods: Sequence[Tuple[str, Mapping[str, Any]]], nodes: Sequence[Node]) -> Dict[str, str]:
    """Bind `pods` (name, spec) one by one to the first node that fits (nodes are updated).

    Raises AssertionError naming the pod and every node's reason when one fits nowhere.
    """
    bound: Dict[str, str] = {}
    for name, spec in pods:
        reasons = {}
        for node in nodes:
            r = why_not(spec, node)
            if r is None:
                node.add_pod(spec)
                bound[name] = node.name
                break
            reasons[node.name] = r
        else:
            raise AssertionError(f"pod {name} fits no node: {reasons}")
    return bound
