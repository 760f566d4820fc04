"""Metrics, dashboards and alert rules for a Kimi K3 deployment (pure: no Pulumi, no I/O).

`metrics` is the table of every metric name a dashboard or alert queries, per version of what
the stack deploys (vLLM, NVIDIA dcgm-exporter, Ascend npu-exporter), each cited at its source;
`promql` reads the metric names out of a query; `dashboards` builds the Grafana dashboards;
`alerts` the Prometheus rules; `scrape` the scrape jobs (with the relabel rule vLLM's names need
on Prometheus 2.x).
"""
