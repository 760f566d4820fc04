"""Double of vLLM's Prometheus metrics (`GET /metrics` of `vllm serve`), for the dashboards' tests.

Written from vLLM's own code, not from kimi-k3's metric table (components/observability/
metrics.py), so a wrong name in the table shows up as a dashboard query that returns nothing:

- the metrics: `vllm/v1/metrics/loggers.py`, class `PrometheusStatLogger`, read in the release
  wheels (`pip download vllm==<v> --no-deps`; upstream
  https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/v1/metrics/loggers.py, commit 4ba787ec9,
  and .../v0.23.0/..., commit 0fc695fc6). `DECLARED` below lists each metric with the line of its
  `name=` in both files (None: absent in that release), its class and its `documentation`;
- labels: `labelnames = ["model_name", "engine"]` (0.33.0 line 499, 0.23.0 line 429), the value
  of `model_name` is `--served-model-name`, `engine` the engine index as a string; series are
  created per engine when the logger starts (`create_metric_per_engine`), so they read 0 before
  any request; `vllm:request_success` adds `finished_reason`, one series per `FinishReason`
  (`vllm/v1/engine/__init__.py`: stop, length, abort, error, repetition);
- buckets: 0.33.0 `vllm/v1/metrics/buckets.py` (TIME_TO_FIRST_TOKEN_BUCKETS,
  INTER_TOKEN_LATENCY_BUCKETS, REQUEST_LATENCY_BUCKETS); 0.23.0 has the same lists inline;
- the exposition: vLLM declares them with prometheus_client's Counter/Gauge/Histogram (loggers.py
  line 9) and serves them with `Mount("/metrics", make_asgi_app(registry=registry))`
  (0.33.0 `vllm/entrypoints/serve/instrumentator/metrics.py`), i.e. prometheus_client's content
  negotiation: `choose_encoder(Accept)` and gzip when accepted. This double does exactly that with
  the prometheus_client pinned in requirements-dev.txt (0.26.0), which, like every release from
  0.23, writes `vllm:` as `vllm_` to a scraper asking for OpenMetrics without
  `escaping=allow-utf-8` (Prometheus 2.x). `/metrics` is outside vLLM's guarded prefixes.

What a request records follows `PrometheusStatLogger.record`: on finish, prompt and generation
token counters, the request's success counter, TTFT, inter-token latencies (one per output token
after the first), TPOT, e2e, queue, prefill, decode and inference times; prefix-cache queries
and hits per scheduled prompt; the scheduler gauges as the double's engine sets them.
"""

from __future__ import annotations

import gzip
import threading
from typing import Dict, List, Optional, Tuple

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.exposition import choose_encoder, gzip_accepted

VERSIONS = ("0.33.0", "0.23.0")
FINISH_REASONS = ("stop", "length", "abort", "error", "repetition")

# buckets.py (0.33.0); the same numbers inline in 0.23.0 loggers.py lines 755-870
TTFT_BUCKETS = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0,
                7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0)
ITL_BUCKETS = (0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5,
               10.0, 20.0, 40.0, 80.0)
LATENCY_BUCKETS = (0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0,
                   60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0)
PREEMPTION_BUCKETS = (1, 2, 3, 4, 5, 10, 20)  # 0.33.0 buckets.py REQUEST_NUM_PREEMPTIONS_BUCKETS

# (name, class, name= line in 0.33.0, in 0.23.0, documentation, buckets)
DECLARED: Tuple[Tuple, ...] = (
    ("vllm:num_requests_running", "gauge", 528, 452,
     "Number of requests in model execution batches.", None),
    ("vllm:num_requests_waiting", "gauge", 538, 462,
     "Number of requests waiting to be processed.", None),
    ("vllm:kv_cache_usage_perc", "gauge", 620, 520, "KV-cache usage. 1 means 100 percent usage.",
     None),
    ("vllm:prefix_cache_queries", "counter", 662, 543,
     "Prefix cache queries, in terms of number of queried tokens.", None),
    ("vllm:prefix_cache_hits", "counter", 673, 554,
     "Prefix cache hits, in terms of number of cached tokens.", None),
    ("vllm:num_preemptions", "counter", 739, 620, "Cumulative number of preemption from the engine.",
     None),
    ("vllm:prompt_tokens", "counter", 748, 629, "Number of prefill tokens processed.", None),
    ("vllm:generation_tokens", "counter", 799, 663, "Number of generation tokens processed.", None),
    ("vllm:time_to_first_token_seconds", "histogram", 931, 755,
     "Histogram of time to first token in seconds.", TTFT_BUCKETS),
    ("vllm:inter_token_latency_seconds", "histogram", 941, 788,
     "Histogram of inter-token latency in seconds.", ITL_BUCKETS),
    ("vllm:request_time_per_output_token_seconds", "histogram", 951, 818,
     "Histogram of time_per_output_token_seconds per request.", ITL_BUCKETS),
    ("vllm:e2e_request_latency_seconds", "histogram", 961, 871,
     "Histogram of e2e request latency in seconds.", LATENCY_BUCKETS),
    ("vllm:request_queue_time_seconds", "histogram", 971, 881,
     "Histogram of time spent in WAITING phase for request.", LATENCY_BUCKETS),
    ("vllm:request_inference_time_seconds", "histogram", 981, 891,
     "Histogram of time spent in RUNNING phase for request.", LATENCY_BUCKETS),
    ("vllm:request_prefill_time_seconds", "histogram", 991, 901,
     "Histogram of time spent in PREFILL phase for request.", LATENCY_BUCKETS),
    ("vllm:request_decode_time_seconds", "histogram", 1001, 911,
     "Histogram of time spent in DECODE phase for request.", LATENCY_BUCKETS),
    ("vllm:request_num_preemptions", "histogram", 1011, None,
     "Histogram of the number of times a request was preempted.", PREEMPTION_BUCKETS),
)
SUCCESS = ("vllm:request_success", 809, 673, "Count of successfully processed requests.")


class VllmMetrics:
    """vLLM's metrics of one API server: `engines` engines (data-parallel ranks) of one model."""

    def __init__(self, version: str = "0.33.0", model_name: str = "Kimi-K3", engines: int = 1):
        if version not in VERSIONS:
            raise ValueError(f"the double knows vLLM {', '.join(VERSIONS)}, not {version}")
        self.version, self.model_name, self.engines = version, model_name, engines
        self.registry = CollectorRegistry()
        self._lock = threading.Lock()
        self._m: Dict[str, object] = {}
        col = 2 if version == "0.33.0" else 3
        for row in DECLARED:
            name, kind, doc, buckets = row[0], row[1], row[4], row[5]
            if row[col] is None:
                continue
            labels = ["model_name", "engine"]
            if kind == "gauge":
                metric = Gauge(name, doc, labels, registry=self.registry)
            elif kind == "counter":
                metric = Counter(name, doc, labels, registry=self.registry)
            else:
                metric = Histogram(name, doc, labels, buckets=buckets, registry=self.registry)
            for e in range(engines):  # create_metric_per_engine: every series exists from start
                metric.labels(model_name, str(e))
            self._m[name] = metric
        self._success = Counter(SUCCESS[0], SUCCESS[3], ["model_name", "engine", "finished_reason"],
                                registry=self.registry)
        for e in range(engines):
            for reason in FINISH_REASONS:
                self._success.labels(model_name, str(e), reason)

    def names(self) -> List[str]:
        return sorted(self._m) + [SUCCESS[0]]

    def _l(self, name: str, engine: int):
        return self._m[name].labels(self.model_name, str(engine))

    # ---- what the engine reports ---------------------------------------------------------
    def set_scheduler(self, running: int, waiting: int, kv_usage: float, engine: int = 0) -> None:
        with self._lock:
            self._l("vllm:num_requests_running", engine).set(running)
            self._l("vllm:num_requests_waiting", engine).set(waiting)
            self._l("vllm:kv_cache_usage_perc", engine).set(kv_usage)

    def scheduled(self, prompt_tokens: int, cached_tokens: int, engine: int = 0) -> None:
        """A prompt scheduled: prefix-cache lookups of its tokens and the hits among them."""
        with self._lock:
            self._l("vllm:prefix_cache_queries", engine).inc(prompt_tokens)
            self._l("vllm:prefix_cache_hits", engine).inc(cached_tokens)

    def preempted(self, engine: int = 0) -> None:
        with self._lock:
            self._l("vllm:num_preemptions", engine).inc()

    def finished(self, *, prompt_tokens: int, output_tokens: int, queue_s: float, ttft_s: float,
                 e2e_s: float, finished_reason: str = "length", engine: int = 0,
                 preemptions: int = 0) -> None:
        """One finished request, as `record` of the stat logger records it."""
        if finished_reason not in FINISH_REASONS:
            raise ValueError(f"finished_reason {finished_reason!r} is not vLLM's")
        prefill = max(0.0, ttft_s - queue_s)
        decode = max(0.0, e2e_s - ttft_s)
        with self._lock:
            self._l("vllm:prompt_tokens", engine).inc(prompt_tokens)
            self._l("vllm:generation_tokens", engine).inc(output_tokens)
            self._success.labels(self.model_name, str(engine), finished_reason).inc()
            self._l("vllm:time_to_first_token_seconds", engine).observe(ttft_s)
            if output_tokens > 1:
                itl = decode / (output_tokens - 1)
                for _ in range(output_tokens - 1):
                    self._l("vllm:inter_token_latency_seconds", engine).observe(itl)
                self._l("vllm:request_time_per_output_token_seconds", engine).observe(itl)
            self._l("vllm:e2e_request_latency_seconds", engine).observe(e2e_s)
            self._l("vllm:request_queue_time_seconds", engine).observe(queue_s)
            self._l("vllm:request_inference_time_seconds", engine).observe(prefill + decode)
            self._l("vllm:request_prefill_time_seconds", engine).observe(prefill)
            self._l("vllm:request_decode_time_seconds", engine).observe(decode)
            if "vllm:request_num_preemptions" in self._m:
                self._l("vllm:request_num_preemptions", engine).observe(preemptions)

    # ---- GET /metrics --------------------------------------------------------------------
    def exposition(self, accept: Optional[str], accept_encoding: Optional[str] = None
                   ) -> Tuple[List[Tuple[str, str]], bytes]:
        """(headers, body) as prometheus_client's make_asgi_app answers `GET /metrics`."""
        encoder, content_type = choose_encoder(accept or "")
        with self._lock:
            body = encoder(self.registry)
        headers = [("content-type", content_type)]
        if gzip_accepted(accept_encoding or ""):
            body = gzip.compress(body)
            headers.append(("content-encoding", "gzip"))
        return headers, body
