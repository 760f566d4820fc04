"""How Helm merges a release's values onto a chart's values.yaml: a model of the outside contract.

Source: helm/helm `pkg/chartutil/coalesce.go` (Helm 3; `pkg/chart/common/util/coalesce.go` in
Helm 4), `CoalesceValues` / `coalesceValues` / `coalesceTablesFullKey`, and the Helm docs
("Values Files": "a value of null deletes the key"; lists are not merged). Rules modelled:
- a key only in the chart's defaults keeps the default;
- a key the user sets to null (None) is removed from the result;
- both sides tables (dicts): merged key by key, recursively, user keys winning;
- anything else (scalars, lists, a table replaced by a scalar): the user's value replaces the
  default whole. So overriding `affinity.nodeAffinity....nodeSelectorTerms` replaces the chart's
  list of terms, and `tolerations: [...]` replaces the chart's tolerations.
Built from those sources, not from kimi-k3's code.
"""

from __future__ import annotations

import copy
from typing import Any, Dict, Mapping


def coalesce(defaults: Mapping[str, Any], user: Mapping[str, Any]) -> Dict[str, Any]:
    """The values a chart template sees: `user` values over the chart's `defaults`."""
    out: Dict[str, Any] = copy.deepcopy(dict(defaults))
    for key, value in user.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = coalesce(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out
