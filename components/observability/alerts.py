"""The alert rules both stacks ship, as a Prometheus rules file. Pure.

Three rules, each about what a user of the endpoint would notice first:
- `KimiK3EndpointDown`: Prometheus cannot scrape vLLM's API server (`up == 0`), or has no target
  for it at all (`absent`): the endpoint does not answer.
- `KimiK3KvCacheFull`: an engine's KV cache stays above `KV_FULL` for 5 minutes: new requests
  wait and running ones are preempted.
- `KimiK3QueueGrowing`: requests are waiting and their number grew over 10 minutes, for 10
  minutes: the replica takes in more than it finishes.
Per replica where the targets carry `replica` (ctyun-hcc's several Slurm jobs: engine 0 of one
replica is not engine 0 of another); where none does, the `by` lists group as without it.
They query only names vLLM 0.23.0 and 0.33.0 share (`metrics.py`), so one file serves both
targets. `tests/integration/promtool/alerts_test.yml` has one `promtool test rules` case per rule and
the test suite runs `promtool check rules` on the rendered file.
"""

from __future__ import annotations

import functools
from typing import Dict, List, Tuple


from .dashboards import VLLM_JOB

KV_FULL = 0.95

RULES: Tuple[Dict, ...] = (
    {"alert": "KimiK3EndpointDown",
     "expr": f'up{{job="{VLLM_JOB}"}} == 0 or absent(up{{job="{VLLM_JOB}"}})',
     "for": "2m",
     "labels": {"severity": "critical"},
     "annotations": {
         "summary": "vLLM's API server is not answering Prometheus",
         "description": "No successful scrape of vLLM's /metrics{{ with $labels.instance }} on "
                        "{{ . }}{{ end }} for 2 minutes (or no target at all). Check the serving "
                        "job or pods first: python -m components status, then the logs "
                        "(docs/day-two.md)."}},
    {"alert": "KimiK3KvCacheFull",
     "expr": f"max by (model_name, replica, engine) (vllm:kv_cache_usage_perc) > {KV_FULL}",
     "for": "5m",
     "labels": {"severity": "warning"},
     "annotations": {
         "summary": "KV cache above 95% on engine {{ $labels.engine }}"
                    "{{ with $labels.replica }} of replica {{ . }}{{ end }}",
         "description": "Engine {{ $labels.engine }} of {{ $labels.model_name }} has had its KV "
                        "cache {{ $value | humanizePercentage }} full for 5 minutes: requests "
                        "queue and get preempted. Lower the load, shorten max-model-len, or add "
                        "a replica."}},
    {"alert": "KimiK3QueueGrowing",
     "expr": "sum by (model_name, replica) (vllm:num_requests_waiting) > 0 and "
             "sum by (model_name, replica) (delta(vllm:num_requests_waiting[10m])) > 0",
     "for": "10m",
     "labels": {"severity": "warning"},
     "annotations": {
         "summary": "Requests keep piling up for {{ $labels.model_name }}",
         "description": "{{ $value }} requests waiting and the queue has grown for 10 minutes: "
                        "the replica takes in more than it finishes."}},
)


def rules_document(group: str = "kimi-k3") -> Dict[str, List[Dict]]:
    return {"groups": [{"name": group, "rules": [dict(r) for r in RULES]}]}


@functools.lru_cache(maxsize=None)
def render(group: str = "kimi-k3") -> str:
    """The rules file (YAML) `promtool check rules` accepts; made once per process (the plan
    writes it and, on ctyun-hcc, the program hands the same text to the master's Prometheus)."""
    import yaml

    return ("# Alert rules of kimi-k3 (components/observability/alerts.py); do not edit by hand.\n"
            + yaml.safe_dump(rules_document(group), sort_keys=False, width=100))


def queries() -> Tuple[str, ...]:
    return tuple(r["expr"] for r in RULES)
