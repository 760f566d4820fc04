"""What the device-plugin charts' DaemonSet templates make of their values: a model.

Each chart version's behaviour is data in components/aws_eks/chart_facts.yaml, read from the
chart's own templates (the file and commit are named there); `tests/unit/test_aws_scheduling.py`
re-reads the upstream files when the local mirrors exist. The interpretation here follows those
templates:
- `pod_fields_from_values`: `{{- with .Values.X }} X: {{ toYaml . }}`: the pod spec field is the
  merged value, omitted when empty/null;
- `fixed_tolerations`: tolerations the template writes before `.Values.tolerations`;
- `affinity_from: supportedInstanceLabels` (EFA chart): one required nodeSelectorTerm per key,
  `key In values`, the last term also carrying `extra_expression`; no `affinity` value is read.
"""

from __future__ import annotations

import copy
from typing import Any, Dict, Mapping, Optional

from components.aws_eks.addons import chart_facts

from .helm_values import coalesce


def daemonset_pod_spec(chart: str, version: str, user_values: Mapping[str, Any],
                       defaults_override: Optional[Mapping[str, Any]] = None) -> Optional[Dict[str, Any]]:
    """Scheduling-relevant pod spec of the chart's DaemonSet, or None if the chart renders none.

    `defaults_override` replaces the recorded defaults (tests use it for an older chart's values).
    """
    f = chart_facts(chart, version)
    defaults = copy.deepcopy(dict(defaults_override if defaults_override is not None else f["defaults"]))
    values = coalesce(defaults, user_values)
    tpl = f["template"]
    cond = tpl.get("rendered_if")
    if cond:
        node: Any = values
        for part in cond.split("."):
            node = node.get(part) if isinstance(node, Mapping) else None
        if not node:
            return None
    spec: Dict[str, Any] = {}
    for field, key in tpl.get("pod_fields_from_values", {}).items():
        v = values.get(key)
        if v:  # `with` skips empty maps/lists and null
            spec[field] = copy.deepcopy(v)
    fixed = [dict(t) for t in tpl.get("fixed_tolerations", [])]
    if fixed or "tolerations" in spec:
        spec["tolerations"] = fixed + list(spec.get("tolerations", []))
    if tpl.get("affinity_from") == "supportedInstanceLabels":
        labels = values["supportedInstanceLabels"]
        terms = [{"matchExpressions": [{"key": k, "operator": "In", "values": list(labels["values"])}]}
                 for k in labels["keys"]]
        if terms and tpl.get("extra_expression"):
            terms[-1]["matchExpressions"].append(dict(tpl["extra_expression"]))
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": terms}}}
    return spec


def advertised(chart: str, version: str, devices: Mapping[str, int]) -> Dict[str, int]:
    """Extended resources the chart's plugin advertises on a node with `devices`.

    `devices`: {"per-gpu": GPUs the driver sees, "per-efa-interface": EFA interfaces attached}.
    """
    return {resource: int(devices[kind]) for resource, kind in chart_facts(chart, version)["advertises"].items()}
