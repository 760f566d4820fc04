"""Every metric name a dashboard or alert of kimi-k3 queries, per version of what exports it.

Metric names change between releases (`vllm:gpu_cache_usage_perc` is gone from vLLM 0.33:
vllm-project/vllm PR #29330 "Scheduled removal of deprecated metrics", 2025-11-24), so a query is
only right for the version a stack deploys. This module is that knowledge as data: each source
(a vLLM release, the pinned dcgm-exporter, the pinned npu-exporter, Prometheus itself) with the
file, tag, commit and date it was read at, and each metric with the line that declares it.
`tests/unit/test_observability.py` checks that every query of every dashboard and alert uses only
names of the sources the stack's own image and accelerator bring (`sources_for`).

Exposed names: vLLM declares its metrics with prometheus_client (`from prometheus_client import
Counter, Gauge, Histogram`, loggers.py line 9), which exposes a counter `x` as `x_total` and a
histogram as `x_bucket`/`x_sum`/`x_count`; `series()` derives them. The Go exporters declare the
exposed name directly (gauges). Pure data: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, FrozenSet, Mapping, Optional, Tuple


@dataclass(frozen=True)
class Source:
    """Where a set of metric names was read: a file at a tag, its commit and date."""

    key: str
    project: str
    version: str
    url: str  # the file (or folder) at the tag
    commit: str
    date: str  # of the commit or release build
    #: series labels every metric of this source carries (besides Prometheus's job/instance)
    labels: Tuple[str, ...] = ()
    note: str = ""


@dataclass(frozen=True)
class Metric:
    """One metric family as its source declares it."""

    name: str  # as declared (vLLM: before the _total / _bucket suffixes)
    kind: str  # counter | gauge | histogram
    line: int  # where the source declares it
    help: str
    unit: str = ""  # what a value means, when the source says it
    extra_labels: Tuple[str, ...] = ()

    def series(self) -> Tuple[str, ...]:
        """The series names a query can select (prometheus_client's exposition)."""
        if self.kind == "counter":
            return (f"{self.name}_total",)
        if self.kind == "histogram":
            return tuple(f"{self.name}_{s}" for s in ("bucket", "sum", "count"))
        return (self.name,)


_VLLM_NOTE = ("vllm-ascend 0.23.0 adds no Prometheus metric of its own (no module of the plugin "
              "imports prometheus_client), so the Ascend image exposes vLLM 0.23.0's")

SOURCES: Mapping[str, Source] = {s.key: s for s in (
    Source("vllm-0.33.0", "vLLM", "0.33.0",
           "https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/v1/metrics/loggers.py",
           "4ba787ec9 (vllm/_version.py of the 0.33.0 wheel)", "2026-11-01",
           ("model_name", "engine")),
    Source("vllm-0.23.0", "vLLM", "0.23.0",
           "https://github.com/vllm-project/vllm/blob/v0.23.0/vllm/v1/metrics/loggers.py",
           "0fc695fc6 (vllm/_version.py of the 0.23.0 wheel)", "2026-06-15",
           ("model_name", "engine"), _VLLM_NOTE),
    Source("dcgm-exporter-4.5.3-4.8.2", "NVIDIA dcgm-exporter", "4.5.3-4.8.2",
           "https://github.com/NVIDIA/dcgm-exporter/blob/4.5.3-4.8.2/etc/default-counters.csv",
           "691c92762eb551313c825f6efe4ceeee20982801", "2026-05-06",
           ("gpu", "UUID"), "README.md of the same tag shows the labels gpu and UUID; the chart "
           "4.8.2 mounts its own list over that file (deployment/templates/metrics-configmap.yaml "
           "of the same tag, lines 24, 27, 36, 51, 52: the same five names, kinds and help)"),
    Source("npu-exporter-v26.1.0", "Ascend MindCluster npu-exporter", "v26.1.0",
           "https://github.com/Ascend/mind-cluster/tree/v26.1.0/component/npu-exporter/collector/metrics",
           "9e132e216bb7b81f4a2742a4ac6d3b50754e8a77", "2026-07-29",
           ("id", "model_name", "vdie_id", "pcie_bus_info", "namespace", "pod_name", "container_name"),
           "labels: collector/common/metrics_collector.go CardLabel; Ascend910A3 is known "
           "(component/ascend-common/devmanager/common/constants.go line 154)"),
    Source("prometheus", "Prometheus", "2.x and 3.x",
           "https://prometheus.io/docs/concepts/jobs_instances/",
           "-", "read 2026-12-01", ("job", "instance"),
           "for each scrape: up{job, instance} is 1 if the instance is reachable, 0 if the scrape failed"),
)}

# (name, kind, line in 0.33.0, line in 0.23.0 or None when absent, help as declared)
_VLLM = (
    ("vllm:num_requests_running", "gauge", 528, 452, "Number of requests in model execution batches."),
    ("vllm:num_requests_waiting", "gauge", 538, 462, "Number of requests waiting to be processed."),
    ("vllm:kv_cache_usage_perc", "gauge", 620, 520, "KV-cache usage. 1 means 100 percent usage."),
    ("vllm:prefix_cache_queries", "counter", 662, 543,
     "Prefix cache queries, in terms of number of queried tokens."),
    ("vllm:prefix_cache_hits", "counter", 673, 554,
     "Prefix cache hits, in terms of number of cached tokens."),
    ("vllm:num_preemptions", "counter", 739, 620, "Cumulative number of preemption from the engine."),
    ("vllm:prompt_tokens", "counter", 748, 629, "Number of prefill tokens processed."),
    ("vllm:generation_tokens", "counter", 799, 663, "Number of generation tokens processed."),
    ("vllm:request_success", "counter", 809, 673, "Count of successfully processed requests."),
    ("vllm:time_to_first_token_seconds", "histogram", 931, 755,
     "Histogram of time to first token in seconds."),
    ("vllm:inter_token_latency_seconds", "histogram", 941, 788,
     "Histogram of inter-token latency in seconds."),
    ("vllm:request_time_per_output_token_seconds", "histogram", 951, 818,
     "Histogram of time_per_output_token_seconds per request."),
    ("vllm:e2e_request_latency_seconds", "histogram", 961, 871,
     "Histogram of e2e request latency in seconds."),
    ("vllm:request_queue_time_seconds", "histogram", 971, 881,
     "Histogram of time spent in WAITING phase for request."),
    ("vllm:request_prefill_time_seconds", "histogram", 991, 901,
     "Histogram of time spent in PREFILL phase for request."),
    ("vllm:request_decode_time_seconds", "histogram", 1001, 911,
     "Histogram of time spent in DECODE phase for request."),
    # 0.33 only: a shared dashboard must use vllm:num_preemptions_total instead
    ("vllm:request_num_preemptions", "histogram", 1011, None,
     "Histogram of the number of times a request was preempted."),
)
_VLLM_EXTRA_LABELS = {"vllm:request_success": ("finished_reason",)}

_DCGM = (  # default-counters.csv lines: "# DCGM FIELD, Prometheus metric type, help message"
    ("DCGM_FI_DEV_GPU_TEMP", "gauge", 11, "GPU temperature (in C).", "celsius"),
    ("DCGM_FI_DEV_POWER_USAGE", "gauge", 14, "Power draw (in W).", "watt"),
    ("DCGM_FI_DEV_GPU_UTIL", "gauge", 23, "GPU utilization (in %).", "percent"),
    ("DCGM_FI_DEV_FB_FREE", "gauge", 45, "Framebuffer memory free (in MiB).", "MiB"),
    ("DCGM_FI_DEV_FB_USED", "gauge", 46, "Framebuffer memory used (in MiB).", "MiB"),
)

_NPU = (  # file:line of the BuildDesc call under collector/metrics/
    ("npu_chip_info_utilization", "gauge", 48, "the ai core utilization", "percent",
     "collector_for_utilization.go"),
    ("npu_chip_info_hbm_used_memory", "gauge", 31, "the npu hbm used memory",
     "not stated in the source (a ratio of used to total needs none)", "collector_for_hbm.go"),
    ("npu_chip_info_hbm_total_memory", "gauge", 32, "the npu hbm total memory",
     "as npu_chip_info_hbm_used_memory", "collector_for_hbm.go"),
    # collector_for_npu.go collectPower: the chip's power from devmanager's GetDevicePowerInfo,
    # which returns DCMI's reading times 0.1 ("the accuracy is 0.1w, the result like: 8.2":
    # https://github.com/Ascend/mind-cluster/blob/master/component/ascend-common/devmanager/dcmi/dcmi.go
    # DcGetDevicePowerInfo, read 2026-12-02 in the stored versions of the file, not at v26.1.0)
    ("npu_chip_info_power", "gauge", 65, "the npu power", "watt", "collector_for_npu.go"),
    # DCMI's dcmi_get_device_temperature value as is; the source names no unit (degrees Celsius
    # is what the dashboard assumes: not checked here)
    ("npu_chip_info_temperature", "gauge", 64, "the npu temperature",
     "not stated in the source (Celsius assumed)", "collector_for_npu.go"),
    ("npu_chip_info_health_status", "gauge", 70, "the npu health status", "1 healthy, 0 unhealthy",
     "collector_for_npu.go"),
)


#: the npu-exporter files the names above are declared in (recorded for the tests)
NPU_FILES = ("Ascend/mind-cluster", "9e132e216bb7b81f4a2742a4ac6d3b50754e8a77", tuple(
    f"component/npu-exporter/collector/metrics/{f}" for f in
    ("collector_for_utilization.go", "collector_for_hbm.go", "collector_for_npu.go")))


def _build() -> Dict[str, Dict[str, Metric]]:
    out: Dict[str, Dict[str, Metric]] = {k: {} for k in SOURCES}
    for name, kind, l33, l23, doc in _VLLM:
        extra = _VLLM_EXTRA_LABELS.get(name, ())
        out["vllm-0.33.0"][name] = Metric(name, kind, l33, doc, extra_labels=extra)
        if l23 is not None:
            out["vllm-0.23.0"][name] = Metric(name, kind, l23, doc, extra_labels=extra)
    for name, kind, line, doc, unit in _DCGM:
        out["dcgm-exporter-4.5.3-4.8.2"][name] = Metric(name, kind, line, doc, unit)
    for name, kind, line, doc, unit, where in _NPU:
        out["npu-exporter-v26.1.0"][name] = Metric(name, kind, line, f"{doc} ({where})", unit)
    out["prometheus"]["up"] = Metric("up", "gauge", 0, "1 if the instance is healthy, i.e. "
                                     "reachable, or 0 if the scrape failed.")
    return out


METRICS: Mapping[str, Mapping[str, Metric]] = _build()

#: the exporter each accelerator platform runs beside vLLM (pinned: phase 2 deploys these)
EXPORTER_FOR_PLATFORM: Mapping[str, str] = {
    "cuda": "dcgm-exporter-4.5.3-4.8.2",
    "ascend": "npu-exporter-v26.1.0",
}


class UnknownVersion(KeyError):
    """No metric table for this vLLM release: a new image needs its names read first."""


def vllm_source(vllm_version: str) -> str:
    key = f"vllm-{vllm_version}"
    if key not in SOURCES:
        known = ", ".join(s.version for s in SOURCES.values() if s.project == "vLLM")
        raise UnknownVersion(f"no metric names recorded for vLLM {vllm_version} (known: {known}); "
                             "read its vllm/v1/metrics/loggers.py and add them to "
                             "components/observability/metrics.py")
    return key


def sources_for(vllm_version: str, platform: str) -> Tuple[str, ...]:
    """The sources a stack serving `vllm_version` on `platform` scrapes (Prometheus's own too)."""
    if platform not in EXPORTER_FOR_PLATFORM:
        raise KeyError(f"no accelerator exporter for platform {platform!r}")
    return (vllm_source(vllm_version), EXPORTER_FOR_PLATFORM[platform], "prometheus")


def series_names(sources: Tuple[str, ...]) -> FrozenSet[str]:
    """Every series name a query may select, given the sources a stack scrapes."""
    return frozenset(s for key in sources for m in METRICS[key].values() for s in m.series())


def metric_of(series: str, sources: Tuple[str, ...]) -> Optional[Tuple[Source, Metric]]:
    """The source and declaration behind a series name (None when no source has it)."""
    for key in sources:
        for m in METRICS[key].values():
            if series in m.series():
                return SOURCES[key], m
    return None


def citation(series: str, sources: Tuple[str, ...]) -> str:
    """`<url> line N (commit, date)` for a series, for docs and error messages."""
    found = metric_of(series, sources)
    if found is None:
        return f"{series}: not in any of {', '.join(sources)}"
    src, m = found
    where = f" line {m.line}" if m.line else ""
    return f"{series}: {src.url}{where} ({src.commit}, {src.date})"


def problems(exprs, sources: Tuple[str, ...]) -> Tuple[str, ...]:
    """One line per query that selects a name none of `sources` exposes (or cannot be read)."""
    from .promql import PromQLError, metric_names

    known = series_names(sources)
    out = []
    for expr in exprs:
        try:
            names = metric_names(expr)
        except PromQLError as e:
            out.append(str(e))
            continue
        for name in sorted(names - known):
            out.append(f"{name} (in {expr!r}) is not exposed by {', '.join(sources)}")
    return tuple(out)
