"""The metric table, the doubles and the monitoring objects held to the upstream files themselves
(recorded in tests/contracts/upstream): every cited line declares the metric it is cited for, and
every Helm value and custom resource kimi-k3 writes exists in the chart and its CRD schemas."""

import re

import jsonschema
import pytest
import yaml

from components.aws_eks import monitoring
from components.program.tree import undoubled
from components.observability import metrics
from tests.contracts import upstream
from tests.doubles import exporter_doubles, vllm_metrics

VLLM = {"vllm-0.33.0": "v0.33.0", "vllm-0.23.0": "v0.23.0"}
LOGGERS = "vllm/v1/metrics/loggers.py"


def lines(repo, commit, path):
    return upstream.read(repo, commit, path).splitlines()


@pytest.mark.parametrize("source", sorted(VLLM))
def test_every_vllm_name_is_declared_at_its_cited_line(source):
    text = lines("vllm-project/vllm", VLLM[source], LOGGERS)
    for m in metrics.METRICS[source].values():
        assert text[m.line - 1].strip() == f'name="{m.name}",', (source, m.name, m.line)
        doc = " ".join(text[m.line: m.line + 4])
        assert m.help.split(".")[0] in doc, (m.name, doc)


def test_names_missing_from_0_23_are_not_in_it():
    text = upstream.read("vllm-project/vllm", "v0.23.0", LOGGERS)
    for m in metrics.METRICS["vllm-0.33.0"].values():
        if m.name not in metrics.METRICS["vllm-0.23.0"]:
            assert f'"{m.name}"' not in text
    assert "gpu_cache_usage_perc" not in text  # removed upstream (PR #29330)
    assert "gpu_cache_usage_perc" not in upstream.read("vllm-project/vllm", "v0.33.0", LOGGERS)


def test_the_vllm_double_cites_the_same_lines():
    for name, kind, l33, l23, doc, _ in vllm_metrics.DECLARED:
        for version, line in (("v0.33.0", l33), ("v0.23.0", l23)):
            text = upstream.read("vllm-project/vllm", version, LOGGERS)
            if line is None:
                assert f'"{name}"' not in text
            else:
                assert text.splitlines()[line - 1].strip() == f'name="{name}",', (version, name)
        assert f"self._{kind}_cls(" in upstream.read("vllm-project/vllm", "v0.33.0", LOGGERS)
    for version, line in (("v0.33.0", vllm_metrics.SUCCESS[1]), ("v0.23.0", vllm_metrics.SUCCESS[2])):
        assert lines("vllm-project/vllm", version, LOGGERS)[line - 1].strip() == \
            f'name="{vllm_metrics.SUCCESS[0]}",'


def test_every_dcgm_name_is_a_default_counter_at_its_line():
    repo, commit, _ = monitoring.DCGM_SOURCE
    csv = lines(repo, commit, "etc/default-counters.csv")
    for m in metrics.METRICS["dcgm-exporter-4.5.3-4.8.2"].values():
        field, kind, help_ = [x.strip() for x in csv[m.line - 1].split(",", 2)]
        assert (field, kind, help_) == (m.name, m.kind, m.help)
    text = exporter_doubles.dcgm_text(1)
    for m in metrics.METRICS["dcgm-exporter-4.5.3-4.8.2"].values():
        assert f"# HELP {m.name} {m.help}" in text


#: the lines of the chart's own list (templates/metrics-configmap.yaml) for the table's names
CHART_LINES = {"DCGM_FI_DEV_GPU_TEMP": 24, "DCGM_FI_DEV_POWER_USAGE": 27, "DCGM_FI_DEV_GPU_UTIL": 36,
               "DCGM_FI_DEV_FB_FREE": 51, "DCGM_FI_DEV_FB_USED": 52}


def test_the_chart_mounts_its_own_list_and_it_has_every_dcgm_name():
    """dcgm-exporter reads `-f /etc/dcgm-exporter/default-counters.csv`, and the chart mounts
    its ConfigMap's built-in list there (kimi-k3 sets no `customMetrics`): that list, not the
    image's file, decides which names exist on aws-eks."""
    repo, commit, _ = monitoring.DCGM_SOURCE
    defaults = upstream.load_yaml(repo, commit, "deployment/values.yaml")
    path = defaults["arguments"][defaults["arguments"].index("-f") + 1]
    mount = next(m for m in defaults["extraVolumeMounts"] if m["mountPath"] == path)
    volume = next(v for v in defaults["extraConfigMapVolumes"] if v["name"] == mount["name"])
    template = lines(repo, commit, "deployment/templates/metrics-configmap.yaml")
    assert volume["configMap"]["name"] in template[3]  # metadata.name: exporter-metrics-config-map
    assert "customMetrics" not in monitoring.dcgm_values({"nvidia.com/gpu.present": "true"})
    assert set(CHART_LINES) == set(metrics.METRICS["dcgm-exporter-4.5.3-4.8.2"])
    for m in metrics.METRICS["dcgm-exporter-4.5.3-4.8.2"].values():
        line = template[CHART_LINES[m.name] - 1].strip()
        assert [x.strip() for x in line.split(",", 2)] == [m.name, m.kind, m.help], line
        assert CHART_LINES[m.name] > next(i for i, t in enumerate(template, 1) if "else" in t)


def test_every_npu_name_is_built_at_its_line():
    repo, commit, paths = metrics.NPU_FILES
    for m in metrics.METRICS["npu-exporter-v26.1.0"].values():
        where = m.help.rsplit("(", 1)[1].rstrip(")")
        path = next(p for p in paths if p.endswith(where))
        line = lines(repo, commit, path)[m.line - 1]
        assert re.search(rf'BuildDesc\("{re.escape(m.name)}", "{re.escape(m.help.rsplit(" (", 1)[0])}"\)', line), line
        assert f"# HELP {m.name} " in exporter_doubles.npu_text(1)


# ---- kube-prometheus-stack and dcgm-exporter -------------------------------------------------

def _paths(tree, prefix=()):
    for k, v in tree.items():
        if isinstance(v, dict) and v:
            yield from _paths(v, prefix + (k,))
        else:
            yield prefix + (k,)


def _exists(defaults, path):
    node = defaults
    for k in path:
        if not isinstance(node, dict) or k not in node:
            return False
        node = node[k]
    return True


def kps_defaults():
    repo, commit, base = monitoring.KPS_SOURCE
    return upstream.load_yaml(repo, commit, f"{base}/values.yaml")


def test_every_kube_prometheus_stack_value_is_a_chart_value():
    defaults = kps_defaults()
    values = monitoring.kps_values(remote_write_url=monitoring.amp_remote_write_url(
        "ws-12345678-abcd-1234-abcd-123456789012", "us-east-2"), region="us-east-2")
    for path in _paths(values):
        assert _exists(defaults, path), ".".join(path)
    spec = defaults["prometheus"]["prometheusSpec"]
    assert spec["podMonitorSelectorNilUsesHelmValues"] is True  # why ours sets it false
    assert spec["image"]["tag"] == "v3.14.0-distroless"  # 3.x keeps vLLM's colons
    assert defaults["grafana"]["sidecar"]["dashboards"]["label"] == "grafana_dashboard"
    repo, commit, base = monitoring.KPS_SOURCE
    chart = upstream.load_yaml(repo, commit, f"{base}/Chart.yaml")
    assert chart["version"] == monitoring.KPS["version"]


def test_every_dcgm_value_is_a_chart_value():
    repo, commit, _ = monitoring.DCGM_SOURCE
    defaults = upstream.load_yaml(repo, commit, "deployment/values.yaml")
    for path in _paths(monitoring.dcgm_values({"nvidia.com/gpu.present": "true"})):
        assert _exists(defaults, path[:1]), ".".join(path)
    assert defaults["image"]["tag"] == "4.5.3-4.8.2-distroless"
    assert upstream.load_yaml(repo, commit, "deployment/Chart.yaml")["version"] == monitoring.DCGM["version"]


def _undeclared(obj, schema, path=""):
    """Keys of `obj` the schema does not declare (Kubernetes would drop them silently)."""
    out = []
    if isinstance(obj, dict) and isinstance(schema.get("properties"), dict):
        for k, v in obj.items():
            if k not in schema["properties"]:
                out.append(f"{path}.{k}")
            else:
                out += _undeclared(v, schema["properties"][k], f"{path}.{k}")
    elif isinstance(obj, list) and isinstance(schema.get("items"), dict):
        for i, v in enumerate(obj):
            out += _undeclared(v, schema["items"], f"{path}[{i}]")
    return out


def valid(obj, crd_file):
    """The CRD's own check (its patterns are Go's: not compiled unless a value uses them) and
    no key the CRD does not declare."""
    schema = _schema(crd_file)
    jsonschema.Draft7Validator(schema).validate(obj)
    assert _undeclared(obj, schema) == []


def _schema(crd_file):
    repo, commit, base = monitoring.KPS_SOURCE
    crd = upstream.load_yaml(repo, commit, f"{base}/charts/crds/crds/{crd_file}")
    v1 = next(v for v in crd["spec"]["versions"] if v["name"] == "v1")
    return v1["schema"]["openAPIV3Schema"]


@pytest.mark.parametrize("key", [None, "kimi-k3-secrets"])
def test_the_pod_monitor_fits_the_crd(key):
    obj = monitoring.pod_monitor("kimi-k3", {"app.kubernetes.io/name": "kimi-k3"}, key_secret=key)
    valid(obj, "crd-podmonitors.yaml")
    ep = obj["spec"]["podMetricsEndpoints"][0]
    assert ep["metricRelabelings"][0]["replacement"] == "vllm:$1"
    assert ("authorization" in ep) == bool(key)


def test_a_pod_monitor_the_crd_refuses_is_caught():
    obj = monitoring.pod_monitor("kimi-k3", {"a": "b"})
    obj["spec"]["podMetricsEndpoints"][0]["portNumber"] = 70000
    with pytest.raises(jsonschema.ValidationError):
        valid(obj, "crd-podmonitors.yaml")
    typo = monitoring.pod_monitor("kimi-k3", {"a": "b"})
    typo["spec"]["podMetricsEndpoints"][0]["metricRelabeling"] = []
    with pytest.raises(AssertionError, match="metricRelabeling"):
        valid(typo, "crd-podmonitors.yaml")


def test_the_prometheus_rule_fits_the_crd():
    valid(monitoring.prometheus_rule("kimi-k3"), "crd-prometheusrules.yaml")


def test_dashboards_become_labelled_config_maps():
    maps = monitoring.dashboard_config_maps("monitoring", "cuda")
    assert [m["metadata"]["name"] for m in maps] == ["kimi-k3-accelerators-dashboard",
                                                     "kimi-k3-serving-dashboard"]
    assert all(m["metadata"]["labels"] == {"grafana_dashboard": "1"} for m in maps)
    assert all(len(yaml.safe_dump(m)) < 1_000_000 for m in maps)
    # the Pulumi names carry the stack's prefix once; the old doubled names stay as aliases
    named = [undoubled("kimi-k3", monitoring.DASHBOARD_APP, m["metadata"]["name"]) for m in maps]
    assert [n for n, _ in named] == ["kimi-k3-accelerators-dashboard", "kimi-k3-serving-dashboard"]
    assert [[(a.name, a.parent) for a in als] for _, als in named] == [
        [("kimi-k3-kimi-k3-accelerators-dashboard", ...)], [("kimi-k3-kimi-k3-serving-dashboard", ...)]]


@pytest.mark.parametrize("ws,region", [("ws-123", "us-east-2"), ("ws-12345678-abcd-1234-abcd-123456789012/../x", "us-east-2"),
                                       ("ws-12345678-abcd-1234-abcd-123456789012", "evil.com/x"), ("", "")])
def test_an_amp_workspace_that_is_not_one_is_refused(ws, region):
    with pytest.raises(ValueError):
        monitoring.amp_remote_write_url(ws, region)
