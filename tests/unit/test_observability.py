"""Metric names as data: every dashboard and alert query uses only names the stack's own vLLM
and accelerator exporter expose (components/observability/), and the name reader refuses what
it cannot check."""

import json

import pytest
import yaml

from components.inference.catalog import ACCELERATORS, DEFAULT_IMAGE_FOR_PLATFORM, IMAGES
from components.observability import alerts, dashboards, metrics, scrape
from components.observability.promql import PromQLError, metric_names

PLATFORMS = sorted({a.platform for a in ACCELERATORS.values()})


def deployed_sources(platform):
    """What a stack on `platform` deploys: its default image's vLLM and its exporter."""
    image = IMAGES[DEFAULT_IMAGE_FOR_PLATFORM[platform]]
    return metrics.sources_for(image.vllm_version, platform)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_every_dashboard_and_alert_query_uses_names_the_stack_exposes(platform):
    sources = deployed_sources(platform)
    exprs = dashboards.queries(platform) + alerts.queries()
    assert metrics.problems(exprs, sources) == ()
    # and each name has a citation: the file at its tag, the declaring line, commit and date
    for expr in exprs:
        for name in metric_names(expr):
            src, m = metrics.metric_of(name, sources)
            assert src.url.startswith("https://") and src.commit and src.date
            assert name == "up" or m.line > 0


def test_the_deployed_versions_are_the_catalogs():
    assert deployed_sources("cuda") == ("vllm-0.33.0", "dcgm-exporter-4.5.3-4.8.2", "prometheus")
    assert deployed_sources("ascend") == ("vllm-0.23.0", "npu-exporter-v26.1.0", "prometheus")


def test_the_serving_dashboard_is_the_same_on_both_targets():
    assert dashboards.build("cuda")["kimi-k3-serving.json"] == \
        dashboards.build("ascend")["kimi-k3-serving.json"]
    for platform in PLATFORMS:
        assert set(dashboards.build(platform)) == {"kimi-k3-serving.json", "kimi-k3-accelerators.json"}


def test_a_removed_vllm_name_is_refused_with_the_source_named():
    """vllm:gpu_cache_usage_perc was removed (vllm-project/vllm PR #29330); 0.33 has not got it."""
    out = metrics.problems(["max(vllm:gpu_cache_usage_perc)"], deployed_sources("cuda"))
    assert out == ("vllm:gpu_cache_usage_perc (in 'max(vllm:gpu_cache_usage_perc)') is not exposed "
                   "by vllm-0.33.0, dcgm-exporter-4.5.3-4.8.2, prometheus",)


def test_a_name_of_the_newer_vllm_is_refused_for_the_older_image():
    q = "histogram_quantile(0.9, sum by (le) (rate(vllm:request_num_preemptions_bucket[5m])))"
    assert metrics.problems([q], deployed_sources("cuda")) == ()
    assert len(metrics.problems([q], deployed_sources("ascend"))) == 1


def test_the_other_platforms_exporter_names_are_refused():
    assert metrics.problems(["DCGM_FI_DEV_GPU_UTIL"], deployed_sources("ascend"))
    assert metrics.problems(["npu_chip_info_power"], deployed_sources("cuda"))


def test_the_exposed_names_follow_prometheus_client():
    m = metrics.METRICS["vllm-0.33.0"]
    assert m["vllm:generation_tokens"].series() == ("vllm:generation_tokens_total",)
    assert m["vllm:time_to_first_token_seconds"].series() == tuple(
        f"vllm:time_to_first_token_seconds_{s}" for s in ("bucket", "sum", "count"))
    assert m["vllm:kv_cache_usage_perc"].series() == ("vllm:kv_cache_usage_perc",)
    # the declared name is not a series of a counter or histogram
    assert "vllm:generation_tokens" not in metrics.series_names(("vllm-0.33.0",))


def test_an_unknown_vllm_release_is_refused_with_what_to_do():
    with pytest.raises(metrics.UnknownVersion, match=r"vLLM 0\.99\.0 .*known: 0\.33\.0, 0\.23\.0.*"
                       r"loggers\.py"):
        metrics.sources_for("0.99.0", "cuda")
    with pytest.raises(KeyError, match="tpu"):
        metrics.sources_for("0.33.0", "tpu")


def test_citation_names_file_line_and_commit():
    assert metrics.citation("vllm:kv_cache_usage_perc", ("vllm-0.33.0",)) == (
        "vllm:kv_cache_usage_perc: https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/v1/"
        "metrics/loggers.py line 620 (4ba787ec9 (vllm/_version.py of the 0.33.0 wheel), 2026-11-01)")
    assert "not in any" in metrics.citation("nope", ("vllm-0.33.0",))


# ---- the name reader -------------------------------------------------------------------------

@pytest.mark.parametrize("expr,names", [
    ('histogram_quantile(0.99, sum by (le, model_name) (rate(a_bucket{model_name=~"x|y"}[$__rate_interval])))',
     {"a_bucket"}),
    ("sum without (engine) (x) + max by(a)(y) / on (gpu) group_left (UUID) z", {"x", "y", "z"}),
    ("a offset 5m and b @ 1609746000 or c unless d", {"a", "b", "c", "d"}),
    ('up{job="vllm"} == 0 or absent(up{job="vllm"})', {"up"}),
    ("rate(x[5m:30s]) > bool 1e3", {"x"}),
    ("-inf < nan", set()),
    ("topk(3, sum by (le) (y))", {"y"}),
])
def test_metric_names(expr, names):
    assert metric_names(expr) == names


@pytest.mark.parametrize("expr", [
    'x{instance="vllm:gpu_cache_usage_perc"}',   # a name-like label value is not a name
    "x{job='not_a_metric'}",
    'label_replace(x, "dst", "$1", "src", "(.*)")',
])
def test_names_inside_strings_and_matchers_are_not_names(expr):
    assert metric_names(expr) == {"x"}


@pytest.mark.parametrize("expr,why", [
    ('{__name__=~"vllm:.*"}', "__name__"),
    ('sum({__name__="vllm:kv_cache_usage_perc"})', "__name__"),
    ("$metric", "variable"),
    ("rate(${metric}[5m])", "variable"),
    ("sum(x", "unclosed"),
    ("sum(x))", "unbalanced"),
    ("x[5m)", "unbalanced"),
    ("x # comment", "unexpected"),
    ("x;drop", "unexpected"),
])
def test_what_the_reader_cannot_check_is_refused(expr, why):
    with pytest.raises(PromQLError, match=why):
        metric_names(expr)
    assert metrics.problems([expr], deployed_sources("cuda"))  # and reported, not passed


# ---- the files -----------------------------------------------------------------------------

def test_dashboards_are_deterministic_grafana_json():
    a, b = dashboards.build("cuda"), dashboards.build("cuda")
    assert a == b
    for text in a.values():
        d = json.loads(text)
        assert d["schemaVersion"] == 41 and d["uid"].startswith("kimi-k3-")
        assert d["templating"]["list"][0]["name"] == "datasource"
        ids = [p["id"] for p in d["panels"]]
        assert len(ids) == len(set(ids))
        for p in d["panels"]:
            for t in p.get("targets", []):
                assert t["refId"] and t["expr"] and t["datasource"]["uid"] == "${datasource}"


def test_rules_file_holds_the_three_rules():
    doc = yaml.safe_load(alerts.render())
    rules = doc["groups"][0]["rules"]
    assert [r["alert"] for r in rules] == ["KimiK3EndpointDown", "KimiK3KvCacheFull",
                                          "KimiK3QueueGrowing"]
    assert all(r["for"] and r["labels"]["severity"] for r in rules)


def test_scrape_config_renames_only_on_the_vllm_job():
    doc = scrape.config(vllm=["10.0.0.1:11025"], exporters={"npu-exporter": ["10.0.0.1:8082"]},
                        rule_files=["alerts.yml"])
    jobs = {j["job_name"]: j for j in doc["scrape_configs"]}
    assert jobs["vllm"]["metric_relabel_configs"] == [{
        "source_labels": ["__name__"], "regex": "vllm_(.+)", "target_label": "__name__",
        "replacement": "vllm:$1"}]
    assert "metric_relabel_configs" not in jobs["npu-exporter"]
    with pytest.raises(ValueError, match="vLLM job"):
        scrape.config(vllm=["a:1"], exporters={"vllm": ["b:2"]})


def test_every_selector_of_every_dashboard_carries_the_replica_filter():
    """ctyun-hcc labels each replica's targets `replica`; a query without the filter would mix
    the replicas whatever the user picks."""
    import re
    for platform in ("cuda", "ascend"):
        for expr in dashboards.queries(platform):
            for name in metrics_names_in(expr):
                assert re.search(re.escape(name) + r'(_bucket)?\{[^}]*replica=~"\$replica"', expr), \
                    (name, expr)
        for text in dashboards.build(platform).values():
            var = json.loads(text)["templating"]["list"][1]
            assert (var["name"], var["includeAll"], var["allValue"], var["multi"]) == \
                ("replica", True, ".*", True)
            assert var["query"] == 'label_values(up{job="vllm"}, replica)'


def metrics_names_in(expr):
    from components.observability.promql import metric_names
    return metric_names(expr)


def test_evaluable_puts_in_every_replica_or_one():
    expr = dashboards.queries("ascend")[0]
    assert "$" not in dashboards.evaluable(expr)
    assert 'replica=~"1"' in dashboards.evaluable(expr, {**dashboards.EVALUATE, "$replica": "1"})


def test_scrape_groups_carry_their_labels_and_empty_ones_are_left_out():
    j = scrape.job("node", [(["10.0.0.1:9100"], {"replica": "0"}), ([], {"replica": "1"}),
                            (["10.0.0.9:9100"], {})])
    assert j["static_configs"] == [{"targets": ["10.0.0.1:9100"], "labels": {"replica": "0"}},
                                   {"targets": ["10.0.0.9:9100"]}]
    assert scrape.job("node", [([], {"replica": "0"})])["static_configs"] == [{"targets": []}]
