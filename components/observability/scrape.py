"""Prometheus scrape jobs for vLLM and the exporters, with the rename vLLM's names need. Pure.

Why the relabel rule: vLLM names its metrics `vllm:...`. prometheus_client 0.23 and later (vLLM
requires only `prometheus_client>=0.18.0`, so any of them may be in an image) writes `:` as `_`
when a scraper asks for OpenMetrics 1.0.0 without `escaping=allow-utf-8`
(prometheus/client_python PR #1180, open 2026-06-04: "When a metric name contains a colon ...
and the client negotiates `escaping=underscores` ... the sample line replaced the colon with an
underscore"). Prometheus 2.x (Debian's 2.42 among them) asks exactly that way, so it stores
`vllm_time_to_first_token_seconds_bucket`; Prometheus 3.x asks with `escaping=allow-utf-8` and
keeps the colons (kubernetes-sigs/inference-perf issue #600, 2026-07-06, hit the same with SGLang
and fixed it with metric_relabel_configs). `VLLM_RELABEL` renames `vllm_x` back to `vllm:x` on
the vLLM engine job only: a no-op where the colons survive, and never on another job (vllm-router
names its own metrics `vllm_router_*`). tests/integration/test_observability_prometheus.py shows
the rename on a real Prometheus 2.42 and the dashboards working through the rule.
"""

from __future__ import annotations

from typing import Dict, List, Mapping, Optional, Sequence, Tuple, Union

import yaml

from .dashboards import VLLM_JOB

#: metric_relabel_configs entry of the vLLM engine job (Prometheus config syntax)
VLLM_RELABEL: Dict = {"source_labels": ["__name__"], "regex": "vllm_(.+)",
                      "target_label": "__name__", "replacement": "vllm:$1"}
#: the same rule in prometheus-operator's RelabelConfig spelling (PodMonitor metricRelabelings)
VLLM_RELABEL_OPERATOR: Dict = {"sourceLabels": ["__name__"], "regex": "vllm_(.+)",
                               "targetLabel": "__name__", "replacement": "vllm:$1"}


#: the label every target of one replica carries (ctyun-hcc with several replicas: one Slurm job
#: each); the dashboards' `replica` variable filters on it
REPLICA_LABEL = "replica"
#: a target group: its targets and the labels Prometheus adds to every series scraped from them
#: (`static_config`: `targets`, `labels`:
#: https://prometheus.io/docs/prometheus/latest/configuration/configuration/#static_config)
Group = Tuple[Sequence[str], Mapping[str, str]]


def job(name: str, targets: Union[Sequence[str], Sequence[Group]], *, relabel_vllm: bool = False,
        scrape_interval: Optional[str] = None) -> Dict:
    """One static scrape job: `targets` as plain "host:port" strings (one group, no labels) or
    as groups (`Group`), each with its own labels (an empty group is left out)."""
    if targets and not isinstance(targets[0], str):
        static = [{"targets": list(t), **({"labels": dict(lab)} if lab else {})}
                  for t, lab in targets if t] or [{"targets": []}]
    else:
        static = [{"targets": list(targets)}]
    out: Dict = {"job_name": name, "static_configs": static}
    if scrape_interval:
        out["scrape_interval"] = scrape_interval
    if relabel_vllm:
        out["metric_relabel_configs"] = [dict(VLLM_RELABEL)]
    return out


def config(*, vllm: Union[Sequence[str], Sequence[Group]],
           exporters: Optional[Dict[str, Union[Sequence[str], Sequence[Group]]]] = None,
           rule_files: Sequence[str] = (), scrape_interval: str = "15s",
           relabel_vllm: bool = True) -> Dict:
    """A prometheus.yml: the vLLM job (with the rename) and one job per exporter."""
    jobs: List[Dict] = [job(VLLM_JOB, vllm, relabel_vllm=relabel_vllm)]
    for name, targets in sorted((exporters or {}).items()):
        if name == VLLM_JOB:
            raise ValueError(f"exporter job {name!r} would take the vLLM job's name")
        jobs.append(job(name, targets))
    doc: Dict = {"global": {"scrape_interval": scrape_interval,
                            "evaluation_interval": scrape_interval}}
    if rule_files:
        doc["rule_files"] = list(rule_files)
    doc["scrape_configs"] = jobs
    return doc


def render(doc: Dict) -> str:
    return yaml.safe_dump(doc, sort_keys=False, width=100)
