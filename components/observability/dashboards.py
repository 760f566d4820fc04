"""The Grafana dashboards both stacks ship, built with Grafana's grafana-foundation-sdk. Pure.

Two dashboards: `kimi-k3-serving` (vLLM's own metrics: latency percentiles, tokens per second,
running and waiting requests, KV-cache usage, prefix-cache hit rate, preemptions, the endpoint's
scrape) is the same JSON on both targets, because it queries only names vLLM 0.23.0 and 0.33.0
share (`metrics.py`); `kimi-k3-accelerators` (utilisation, memory, power, temperature) queries
the exporter of the stack's accelerator: NVIDIA's dcgm-exporter or Ascend's npu-exporter.

The panels are data (`SERVING`, `ACCELERATORS`), so the tests can evaluate every query against a
real Prometheus and check every name against the metric table; `build()` turns them into
dashboard JSON (grafana-foundation-sdk 1769699379!11.6.0: "types and builders generated for
Grafana v11.6.x"; schemaVersion 41). Queries use `$__rate_interval` (Grafana's rate window), a
`datasource` variable, so the same JSON works in any Grafana with a Prometheus data source, and a
`replica` variable (`REPLICA_VAR`: one, several or all of the replicas ctyun-hcc labels; "All"
where no target carries the label). `evaluable` puts values in for the tests.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from typing import Dict, Mapping, Tuple

#: the scrape job of vLLM's API server (the Prometheus configs and PodMonitor set it)
VLLM_JOB = "vllm"
RATE = "$__rate_interval"
#: the dashboards' replica filter: every selector carries it. ctyun-hcc's Prometheus labels each
#: replica's targets `replica="<i>"` (components/ctyun_hcc/monitoring.py); where no target has
#: the label (aws-eks: the pods are the instances) the variable's "All" is `.*`, which also
#: matches a series without it (PromQL: a label that is not there has the empty value,
#: https://prometheus.io/docs/prometheus/latest/querying/basics/#instant-vector-selectors)
REPLICA_VAR = "replica"
ONE = f'{REPLICA_VAR}=~"${REPLICA_VAR}"'
SEL = "{" + ONE + "}"
#: what a test (or a reader with curl) puts in for the Grafana variables: every replica, a 1 m window
EVALUATE = {RATE: "1m", f"${REPLICA_VAR}": ".*"}


@dataclass(frozen=True)
class Query:
    expr: str
    legend: str


@dataclass(frozen=True)
class Panel:
    title: str
    unit: str  # Grafana unit id: s, percentunit, percent, short, watt, celsius
    queries: Tuple[Query, ...]
    description: str = ""
    row: str = ""


def _quantiles(metric: str, qs=(0.5, 0.9, 0.99)) -> Tuple[Query, ...]:
    return tuple(Query(f"histogram_quantile({q}, sum by (le) (rate({metric}_bucket{SEL}[{RATE}])))",
                       f"p{int(q * 100)}") for q in qs)


SERVING: Tuple[Panel, ...] = (
    Panel("Time to first token", "s", _quantiles("vllm:time_to_first_token_seconds"),
          "From the request's arrival to its first output token (queueing and prefill).", "Latency"),
    Panel("Time per output token", "s", _quantiles("vllm:request_time_per_output_token_seconds"),
          "Per request: decode time over its output tokens (TPOT).", "Latency"),
    Panel("Inter-token latency", "s", _quantiles("vllm:inter_token_latency_seconds"),
          "Between consecutive output tokens of a request (per step).", "Latency"),
    Panel("End-to-end request latency", "s", _quantiles("vllm:e2e_request_latency_seconds"),
          "Arrival to the last token.", "Latency"),
    Panel("Queue time", "s", _quantiles("vllm:request_queue_time_seconds", (0.5, 0.99)),
          "Time a request waited before it was scheduled.", "Latency"),
    Panel("Tokens per second", "short", (
        Query(f"sum(rate(vllm:generation_tokens_total{SEL}[{RATE}]))", "output"),
        Query(f"sum(rate(vllm:prompt_tokens_total{SEL}[{RATE}]))", "prompt"),
    ), "Output (generated) and prompt (prefilled) tokens per second, all engines.", "Throughput"),
    Panel("Finished requests per second", "reqps", (
        Query(f"sum by (finished_reason) (rate(vllm:request_success_total{SEL}[{RATE}]))",
              "{{finished_reason}}"),
    ), "By how they finished: stop, length, abort, error, repetition.", "Throughput"),
    Panel("Running and waiting requests", "short", (
        Query(f"sum(vllm:num_requests_running{SEL})", "running"),
        Query(f"sum(vllm:num_requests_waiting{SEL})", "waiting"),
    ), "Requests in the engines' batches, and queued; a queue that keeps growing means the "
       "replica is saturated.", "Scheduler"),
    Panel("Requests per replica", "short", (
        Query(f"sum by (instance) (vllm:num_requests_running{SEL})", "{{instance}} running"),
        Query(f"sum by (instance) (vllm:num_requests_waiting{SEL})", "{{instance}} waiting"),
    ), "Each replica's API server (instance): how the router spreads the load.", "Scheduler"),
    Panel("KV-cache usage", "percentunit", (
        Query(f"max by (instance, engine) (vllm:kv_cache_usage_perc{SEL})",
              "{{instance}} engine {{engine}}"),
    ), "Share of the KV cache in use per engine (data-parallel rank) of each replica's API "
       "server (instance); near 1 new requests wait "
       "and running ones may be preempted.", "Scheduler"),
    Panel("Prefix-cache hit rate", "percentunit", (
        Query(f"sum(rate(vllm:prefix_cache_hits_total{SEL}[{RATE}])) / "
              f"sum(rate(vllm:prefix_cache_queries_total{SEL}[{RATE}]))", "hit rate"),
    ), "Prompt tokens served from the prefix cache over prompt tokens looked up.", "Scheduler"),
    Panel("Preemptions per second", "short", (
        Query(f"sum(rate(vllm:num_preemptions_total{SEL}[{RATE}]))", "preemptions"),
    ), "Requests the engine had to evict from the KV cache and recompute later.", "Scheduler"),
    Panel("Endpoint scraped", "short", (
        Query(f'up{{job="{VLLM_JOB}",{ONE}}}', "{{instance}}"),
    ), "1 while Prometheus reaches vLLM's /metrics on the API server, 0 when it does not.",
          "Endpoint"),
)

def _sel(expr: str) -> str:
    """`expr` with the replica filter on every exporter selector (their names are bare there)."""
    return re.sub(r"\b(DCGM_FI_[A-Z_]+|npu_chip_info_[a-z_]+)\b", lambda m: m.group(1) + SEL, expr)


ACCELERATORS: Mapping[str, Tuple[Panel, ...]] = {
    "cuda": (
        Panel("GPU utilisation", "percent", (
            Query(_sel("DCGM_FI_DEV_GPU_UTIL"), "{{instance}} gpu {{gpu}}"),),
              "Share of time a kernel ran on the GPU (dcgm-exporter)."),
        Panel("GPU memory used", "percentunit", (
            Query(_sel("DCGM_FI_DEV_FB_USED / (DCGM_FI_DEV_FB_USED + DCGM_FI_DEV_FB_FREE)"),
                  "{{instance}} gpu {{gpu}}"),), "Framebuffer used over used + free."),
        Panel("GPU power", "watt", (
            Query(_sel("DCGM_FI_DEV_POWER_USAGE"), "{{instance}} gpu {{gpu}}"),
            Query(_sel("sum(DCGM_FI_DEV_POWER_USAGE)"), "total"),), "Power draw in W."),
        Panel("GPU temperature", "celsius", (
            Query(_sel("DCGM_FI_DEV_GPU_TEMP"), "{{instance}} gpu {{gpu}}"),)),
    ),
    "ascend": (
        Panel("NPU AI-core utilisation", "percent", (
            Query(_sel("npu_chip_info_utilization"), "{{instance}} npu {{id}}"),),
              "AI-core utilisation per NPU (npu-exporter)."),
        Panel("NPU HBM used", "percentunit", (
            Query(_sel("npu_chip_info_hbm_used_memory / npu_chip_info_hbm_total_memory"),
                  "{{instance}} npu {{id}}"),), "HBM used over total (a ratio: the exporter's "
                                                "unit cancels)."),
        Panel("NPU power", "watt", (
            Query(_sel("npu_chip_info_power"), "{{instance}} npu {{id}}"),
            Query(_sel("sum(npu_chip_info_power)"), "total"),), "As npu-exporter reports it."),
        Panel("NPU temperature", "celsius", (
            Query(_sel("npu_chip_info_temperature"), "{{instance}} npu {{id}}"),)),
        Panel("NPU health", "short", (
            Query(_sel("npu_chip_info_health_status"), "{{instance}} npu {{id}}"),),
              "1 healthy, 0 unhealthy."),
    ),
}


#: every dashboard uid starts with it: Grafana's uids are global to an instance (a dashboard
#: with the same uid replaces another), so the project's name keeps ours apart
UID_PREFIX = "kimi-k3-"
SERVING_UID = f"{UID_PREFIX}serving"
ACCELERATORS_UID = f"{UID_PREFIX}accelerators"


def panels_for(platform: str) -> Dict[str, Tuple[Panel, ...]]:
    """{dashboard uid: panels} of a stack whose accelerators are on `platform`."""
    if platform not in ACCELERATORS:
        raise KeyError(f"no accelerator dashboard for platform {platform!r}")
    return {SERVING_UID: SERVING, ACCELERATORS_UID: ACCELERATORS[platform]}


TITLES = {SERVING_UID: "Kimi K3 / serving (vLLM)",
          ACCELERATORS_UID: "Kimi K3 / accelerators"}


def _dashboard(uid: str, panels: Tuple[Panel, ...]) -> dict:
    from grafana_foundation_sdk.builders.dashboard import (Dashboard, DatasourceVariable,
                                                           QueryVariable, Row)
    from grafana_foundation_sdk.builders.prometheus import Dataquery
    from grafana_foundation_sdk.builders.timeseries import Panel as TimeSeries
    from grafana_foundation_sdk.models.dashboard import DataSourceRef, VariableRefresh

    ds = DataSourceRef(type_val="prometheus", uid="${datasource}")
    d = (Dashboard(TITLES[uid]).uid(uid).tags(["kimi-k3"]).refresh("30s").time("now-3h", "now")
         .editable()
         .with_variable(DatasourceVariable("datasource").label("Data source").type("prometheus"))
         .with_variable(QueryVariable(REPLICA_VAR).label("Replica").datasource(ds)
                        .query(f'label_values(up{{job="{VLLM_JOB}"}}, {REPLICA_VAR})')
                        .multi(True).include_all(True).all_value(".*")
                        .refresh(VariableRefresh.ON_DASHBOARD_LOAD)))
    row, pid = None, 1
    for p in panels:
        if p.row and p.row != row:
            row = p.row
            d = d.with_row(Row(row).id(pid))
            pid += 1
        ts = (TimeSeries().id(pid).title(p.title).unit(p.unit).datasource(ds).height(8).span(12))
        if p.description:
            ts = ts.description(p.description)
        for i, q in enumerate(p.queries):
            ts = ts.with_target(Dataquery().ref_id(chr(ord("A") + i)).expr(q.expr)
                                .legend_format(q.legend).datasource(ds))
        d = d.with_panel(ts)
        pid += 1
    return d.build()


def build(platform: str) -> Dict[str, str]:
    """{file name: dashboard JSON} for a stack on `platform`, deterministic (sorted keys)."""
    return {f"{uid}.json": _json(uid, panels) for uid, panels in panels_for(platform).items()}


@functools.lru_cache(maxsize=None)
def _json(uid: str, panels: Tuple[Panel, ...]) -> str:
    """One dashboard's JSON, made once per process for the same panels (frozen, so the key is
    their content): a plan writes the files and (aws-eks) puts them in ConfigMaps too."""
    from grafana_foundation_sdk.cog.encoder import JSONEncoder

    text = JSONEncoder(sort_keys=True, indent=2).encode(_dashboard(uid, panels))
    return json.dumps(json.loads(text), indent=2, sort_keys=True) + "\n"


def evaluable(expr: str, values: Mapping[str, str] = EVALUATE) -> str:
    """`expr` with Grafana's variables put in (`EVALUATE`: all replicas, a 1 m rate window), as
    Prometheus's HTTP API takes it."""
    for var, value in values.items():
        expr = expr.replace(var, value)
    return expr


def queries(platform: str) -> Tuple[str, ...]:
    """Every expression the dashboards of `platform` run, in panel order."""
    return tuple(q.expr for panels in panels_for(platform).values() for p in panels
                 for q in p.queries)
