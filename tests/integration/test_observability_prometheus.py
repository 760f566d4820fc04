"""The dashboards and alerts against a real Prometheus (Debian's 2.42) scraping the vLLM double
and the exporter doubles on loopback: every dashboard query returns data for the vLLM release and
exporter each target deploys, through the relabel rule that Prometheus 2.x needs; promtool checks
the rules file and runs one test case per rule."""

from __future__ import annotations

import math
import shutil
import subprocess
from pathlib import Path

import httpx
import pytest

from components.observability import alerts, dashboards, scrape
from tests.doubles.exporter_doubles import ExporterDouble, dcgm_text, npu_text
from tests.doubles.vllm_openai import DoubleConfig, VllmOpenAIDouble
from tests.integration.prometheus_server import Prometheus, binary

HERE = Path(__file__).parent
KEY = "kk3-prometheus-scrape-key-8d2c41"
GUARD = ("components.inference.kk3_api_guard.ApiKeyGuard",)
#: what each target deploys: vLLM release (catalog.IMAGES) and exporter job
STACKS = {"cuda": ("0.33.0", "dcgm-exporter", dcgm_text, 1),
          "ascend": ("0.23.0", "npu-exporter", npu_text, 4)}
#: the Accept header Prometheus 2.42 sends (captured on a listener: ops research note A1.4)
PROM2_ACCEPT = ("application/openmetrics-text;version=1.0.0,application/openmetrics-text;"
                "version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1")


def _traffic(d: VllmOpenAIDouble, headers=None) -> None:
    """A few streamed chat completions, one prompt twice (a prefix-cache hit)."""
    for i, text in enumerate(["hello", "hello", "tell me about the sea", "and the sky"]):
        body = {"model": "Kimi-K3", "messages": [{"role": "user", "content": text}],
                "max_tokens": 8 + i, "stream": True}
        with httpx.stream("POST", f"{d.url}/chat/completions", json=body, headers=headers,
                          timeout=10) as r:
            assert r.status_code == 200
            r.read()


def _finite(result) -> bool:
    return any(math.isfinite(float(s["value"][1])) for s in result)


def _shipped_queries(platform: str):
    """Every `expr` of the dashboard JSON kimi-k3 writes (what Grafana runs), each with the
    variables put in: never an empty list, never a variable left, the same set as
    dashboards.queries (so a panel the JSON gained cannot escape the evaluation below)."""
    import json

    found = []

    def walk(o):
        if isinstance(o, dict):
            if isinstance(o.get("expr"), str):
                found.append(o["expr"])
            for v in o.values():
                walk(v)
        elif isinstance(o, list):
            for v in o:
                walk(v)

    for text in dashboards.build(platform).values():
        walk(json.loads(text))
    assert len(found) >= 10 and sorted(found) == sorted(dashboards.queries(platform))
    out = [dashboards.evaluable(e) for e in found]
    assert not [e for e in out if "$" in e]
    return out


def _alert_series_present(p) -> list:
    """The metric names each alert rule selects that have no series at all (a rule on a name
    the scraped release does not expose would never fire)."""
    from components.observability.promql import metric_names

    return [(r["alert"], n) for r in alerts.RULES for n in sorted(metric_names(r["expr"]))
            if not p.query(n)]


def _run(tmp_path: Path, platform: str, *, relabel: bool = True, guard: bool = False):
    """Prometheus scraping the stack's doubles; returns {query: result} and the raw lookups."""
    version, exporter_job, text, engines = STACKS[platform]
    cfg = DoubleConfig(metrics_version=version, engines=engines, ttft_s=0.02, tpot_s=0.002,
                       api_key=KEY if guard else None, middleware=GUARD if guard else ())
    headers = {"Authorization": f"Bearer {KEY}"} if guard else None
    with VllmOpenAIDouble(cfg) as d, ExporterDouble(text) as ex:
        target = f"127.0.0.1:{d.port}"
        doc = scrape.config(vllm=[target], exporters={exporter_job: [ex.target]},
                            rule_files=["alerts.yml"], scrape_interval="1s", relabel_vllm=relabel)
        if guard:  # the scraper sends the key (kimi-k3's guard covers /metrics too) ...
            doc["scrape_configs"][0]["authorization"] = {"type": "Bearer", "credentials_file": "key"}
            # ... and one that does not gets nothing
            doc["scrape_configs"].append(scrape.job("no-key", [target]))
        files = {"alerts.yml": alerts.render(), "key": KEY}
        with Prometheus(tmp_path / platform, doc, files) as p:
            p.targets_up(2)
            _traffic(d, headers)
            p.scrapes(3, 1.0)
            results = {e: p.query(e) for e in _shipped_queries(platform)}
            dead_alert_names = _alert_series_present(p)
            extra = {e: p.query(e) for e in ("vllm_num_requests_running", "vllm:num_requests_running",
                                             'up{job="no-key"}')}
            rules = httpx.get(f"{p.url}/api/v1/rules", timeout=5).json()["data"]["groups"]
    return results, extra, rules, dead_alert_names


#: ascend's run is the ctyun-hcc master's config with two replicas (the last test here: one
#: Prometheus start less, each costs ~6 s before its first scrape)
@pytest.mark.parametrize("platform", ["cuda"])
def test_every_dashboard_query_returns_data_through_the_relabel_rule(tmp_path, platform):
    results, extra, rules, dead = _run(tmp_path, platform, guard=(platform == "cuda"))
    empty = [e for e, r in results.items() if not r or not _finite(r)]
    assert results and empty == [], f"queries without data on {platform}: {empty}"
    assert dead == [], f"alert rules on names with no series: {dead}"
    # Prometheus 2.42 did get `vllm_` names from the double: the rule renamed them back
    assert extra["vllm_num_requests_running"] == [] and extra["vllm:num_requests_running"]
    # the alert rules loaded and evaluate cleanly against the live series
    assert [r["name"] for r in rules[0]["rules"]] == [r["alert"] for r in alerts.RULES]
    assert all(r["health"] == "ok" for r in rules[0]["rules"])
    if platform == "cuda":  # the guard let the keyed scraper in and kept the other out
        assert [s["value"][1] for s in extra['up{job="no-key"}']] == ["0"]


def test_without_the_relabel_rule_prometheus_2_sees_no_vllm_names(tmp_path):
    """The reason for the rule: a 2.x server stores vllm_* and every vllm: query is empty."""
    results, extra, _, dead = _run(tmp_path, "ascend", relabel=False)
    assert dead  # the same check sees the vllm: names of the alerts go missing
    assert extra["vllm:num_requests_running"] == [] and extra["vllm_num_requests_running"]
    vllm_queries = [e for e in results if "vllm:" in e]
    assert vllm_queries and all(results[e] == [] for e in vllm_queries)


def test_the_double_negotiates_like_prometheus_client():
    with VllmOpenAIDouble(DoubleConfig()) as d:
        root = d.url[:-len("/v1")]
        as_2x = httpx.get(f"{root}/metrics", headers={"Accept": PROM2_ACCEPT})
        as_3x = httpx.get(f"{root}/metrics", headers={
            "Accept": "application/openmetrics-text;version=1.0.0;escaping=allow-utf-8"})
        plain = httpx.get(f"{root}/metrics")
    assert "escaping=underscores" in as_2x.headers["content-type"]
    # the sample lines are renamed (the HELP and TYPE lines keep the colon)
    assert "vllm_kv_cache_usage_perc{" in as_2x.text and "vllm:kv_cache_usage_perc{" not in as_2x.text
    assert 'vllm:kv_cache_usage_perc{engine="0",model_name="Kimi-K3"}' in as_3x.text
    assert plain.headers["content-type"].startswith("text/plain; version=0.0.4")
    assert "vllm:generation_tokens_total{" in plain.text and "# EOF" not in plain.text


def test_the_0_23_double_lacks_what_0_23_lacks():
    with VllmOpenAIDouble(DoubleConfig(metrics_version="0.23.0")) as d:
        text = httpx.get(f"{d.url[:-3]}/metrics").text
    assert "vllm:request_num_preemptions" not in text and "vllm:num_preemptions_total" in text


# ---- promtool -------------------------------------------------------------------------------

def _promtool(tmp_path: Path, rules_text: str):
    shutil.copy(HERE / "promtool" / "alerts_test.yml", tmp_path / "alerts_test.yml")
    (tmp_path / "alerts.yml").write_text(rules_text)
    check = subprocess.run([binary("promtool"), "check", "rules", "alerts.yml"], cwd=tmp_path,
                           capture_output=True, text=True)
    test = subprocess.run([binary("promtool"), "test", "rules", "alerts_test.yml"], cwd=tmp_path,
                          capture_output=True, text=True)
    return check, test


def test_promtool_checks_the_rules_and_runs_a_case_per_rule(tmp_path):
    check, test = _promtool(tmp_path, alerts.render())
    assert check.returncode == 0 and "SUCCESS: 3 rules found" in check.stdout, check.stdout + check.stderr
    assert test.returncode == 0, test.stdout + test.stderr
    cases = (HERE / "promtool" / "alerts_test.yml").read_text()
    for rule in alerts.RULES:
        assert f"alertname: {rule['alert']}" in cases


def test_promtool_catches_a_rule_that_no_longer_fires(tmp_path):
    """The cases bite: a KV threshold above the test's 96% makes the KV case fail."""
    broken = alerts.render().replace("> 0.95", "> 0.97")
    check, test = _promtool(tmp_path, broken)
    assert check.returncode == 0
    assert test.returncode != 0 and "KimiK3KvCacheFull" in test.stdout + test.stderr


def test_promtool_refuses_a_broken_rules_file(tmp_path):
    check, _ = _promtool(tmp_path, alerts.render().replace("max by (model_name, replica, engine)", "max by ("))
    assert check.returncode != 0


# ---- several replicas on ctyun-hcc: the master's config, every replica scraped and labelled ----

def test_every_replica_is_scraped_and_labelled_and_the_dashboards_filter_by_it(tmp_path):
    """components/ctyun_hcc/monitoring.prometheus_config for 2 replicas x 2 nodes, as rendered,
    on a real Prometheus: each replica's head (its own loopback address, the config's one port)
    and each node's npu-exporter (the real port 8082 on the node's address) are scraped with
    `replica="<i>"`; every ascend dashboard query returns data for all replicas through the
    relabel rule (vLLM 0.23.0 with four engines, as ctyun-hcc deploys it), the alert rules load,
    and the `replica` variable picks one (only replica 1 gets traffic)."""
    from components.ctyun_hcc import monitoring
    from tests.integration.prometheus_server import free_port

    heads, port = ("127.0.0.11", "127.0.0.13"), free_port()
    nodes = (("127.0.0.11", "127.0.0.12"), ("127.0.0.13", "127.0.0.14"))
    version, _, _, engines = STACKS["ascend"]
    cfg = DoubleConfig(metrics_version=version, engines=engines, ttft_s=0.01, tpot_s=0.001)
    doc = monitoring.prometheus_config(
        port=port, replicas=[monitoring.ReplicaTargets(h, n) for h, n in zip(heads, nodes)],
        key_file=None, scrape_interval="1s")
    with VllmOpenAIDouble(cfg, heads[0], port) as d0, VllmOpenAIDouble(cfg, heads[1], port) as d1, \
            ExporterDouble(npu_text, nodes[0][0], monitoring.NPU_EXPORTER_PORT), \
            ExporterDouble(npu_text, nodes[0][1], monitoring.NPU_EXPORTER_PORT), \
            ExporterDouble(npu_text, nodes[1][0], monitoring.NPU_EXPORTER_PORT), \
            ExporterDouble(npu_text, nodes[1][1], monitoring.NPU_EXPORTER_PORT), \
            Prometheus(tmp_path, doc, {"alerts.yml": alerts.render()}) as p:
        assert d0.port == d1.port == port
        p.targets_up(6)  # 2 vLLM + 4 npu-exporters (no node exporter runs here)
        _traffic(d1)
        p.scrapes(3, 1.0)
        up = {(s["metric"]["job"], s["metric"]["instance"]): s["metric"].get("replica")
              for s in p.query('up{job=~"vllm|npu-exporter"} == 1')}
        everything = {e: p.query(e) for e in _shipped_queries("ascend")}
        dead = _alert_series_present(p)
        tokens = next(e for e in dashboards.queries("ascend") if "generation_tokens_total" in e)
        per = {r: p.query(dashboards.evaluable(tokens, {**dashboards.EVALUATE, "$replica": r}))
               for r in ("0", "1")}
        by_replica = {s["metric"]["replica"]: float(s["value"][1])
                      for s in p.query("sum by (replica) (vllm:generation_tokens_total)")}
        renamed = {e: p.query(e) for e in ("vllm_num_requests_running", "vllm:num_requests_running")}
        rules = httpx.get(f"{p.url}/api/v1/rules", timeout=5).json()["data"]["groups"]
    assert up == {**{("vllm", f"{h}:{port}"): str(i) for i, h in enumerate(heads)},
                  **{("npu-exporter", f"{a}:8082"): str(i) for i, ns in enumerate(nodes) for a in ns}}
    assert everything and [e for e, r in everything.items() if not r or not _finite(r)] == []
    assert dead == []
    assert float(per["1"][0]["value"][1]) > 0 and float(per["0"][0]["value"][1]) == 0
    assert by_replica["1"] > 0 and by_replica["0"] == 0
    # Prometheus 2.42 got `vllm_` names from the doubles: the rule renamed them back
    assert renamed["vllm_num_requests_running"] == [] and renamed["vllm:num_requests_running"]
    assert [r["name"] for r in rules[0]["rules"]] == [r["alert"] for r in alerts.RULES]
    assert all(r["health"] == "ok" for r in rules[0]["rules"])
