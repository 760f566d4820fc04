"""The ctyun-hcc program with its metrics services (offline, Pulumi's mock engine): the master's
Prometheus is a child of K3Inference after the service, scraping vLLM on the service's node 0
and the exporters on every serving node, with the API key as a secret; the stack output
`metrics` says how to reach it; `kimi-k3:monitoring=false` leaves all of it out."""

from __future__ import annotations

import json

import yaml

from components.offline.runner import run_program

KEY = "sk-metrics-program-0123456789abcdefghij"


def _named(run, name):
    return next(r for r in run.resources if r["name"] == name)


def test_prometheus_is_wired_after_the_service_with_the_key_secret():
    run = run_program("ctyun-hcc", {"kimi-k3:apiKey": KEY})
    prom = _named(run, "kimi-k3-prometheus")
    assert prom["type"] == "pulumi-python:dynamic/ctyun:MasterPrometheus"
    assert prom["parent"] == "kimi-k3-inference" and "kimi-k3-service" in prom["dependencies"]
    doc = yaml.safe_load(prom["inputs"]["config"])
    jobs = {j["job_name"]: j for j in doc["scrape_configs"]}
    # node 0 of the mock service job; the four serving nodes of the default stack (the master
    # serves too: ctyun:masterInCompute)
    assert jobs["vllm"]["static_configs"][0]["targets"] == ["192.0.2.10:11025"]
    assert jobs["vllm"]["authorization"] == {"type": "Bearer", "credentials_file": "key"}
    addrs = [f"192.0.2.{i}" for i in range(10, 14)]
    assert jobs["npu-exporter"]["static_configs"][0]["targets"] == [f"{a}:8082" for a in addrs]
    assert jobs["node"]["static_configs"][0]["targets"] == [f"{a}:9100" for a in addrs]
    assert KEY not in json.dumps({"r": run.resources, "o": run.outputs})
    # the exporters: the chain's last step (after the broadcast), before the service takes the nodes
    exporters = _named(run, "kimi-k3-exporters")
    bcast = _named(run, "kimi-k3-bcast")
    assert exporters["type"] == "pulumi-python:dynamic/ctyun:NodeExporters"
    assert exporters["parent"] == bcast["parent"] and "kimi-k3-bcast" in exporters["dependencies"]
    assert "kimi-k3-exporters" in _named(run, "kimi-k3-service")["dependencies"]
    assert [n["addr"] for n in exporters["inputs"]["nodes"]] == addrs
    metrics = run.outputs["metrics"]
    assert metrics["tunnel"].startswith("ssh -N -L 9090:127.0.0.1:9090 root@198.51.100.10")
    assert metrics["listen"] == "127.0.0.1:9090"


def test_monitoring_false_leaves_the_metrics_services_out():
    run = run_program("ctyun-hcc", {"kimi-k3:monitoring": "false"})
    kinds = {r["type"] for r in run.resources}
    assert not any(k.endswith(("MasterPrometheus", "NodeExporters")) for k in kinds)
    assert "metrics" not in run.outputs
    # the logs output does not depend on it (components/ctyun_hcc/logs.py logs_output)
    assert run.outputs["logs"]["ssh"].endswith("tail -n 200 -F /home/kimi-k3/logs/job_mock.out "
                                               "/home/kimi-k3/logs/job_mock.err")


def test_with_two_replicas_prometheus_scrapes_every_replica_labelled_and_the_router():
    run = run_program("ctyun-hcc", {"kimi-k3:replicas": "2"})
    prom = _named(run, "kimi-k3-prometheus")
    assert {"kimi-k3-service", "kimi-k3-service-r1", "kimi-k3-router"} <= set(prom["dependencies"])
    jobs = {j["job_name"]: j["static_configs"] for j in
            yaml.safe_load(prom["inputs"]["config"])["scrape_configs"]}
    # the mock jobs: replica 0 on the master and compute 1-3, replica 1 on compute 4-7; the
    # heads serve on kimi-k3:port + 1 (the router's front has kimi-k3:port)
    assert jobs["vllm"] == [{"targets": ["192.0.2.10:11026"], "labels": {"replica": "0"}},
                            {"targets": ["192.0.2.14:11026"], "labels": {"replica": "1"}}]
    assert jobs["node"] == [
        {"targets": [f"192.0.2.{i}:9100" for i in range(10, 14)], "labels": {"replica": "0"}},
        {"targets": [f"192.0.2.{i}:9100" for i in range(14, 18)], "labels": {"replica": "1"}}]
    assert jobs["vllm-router"] == [{"targets": ["127.0.0.1:29000"]}]
