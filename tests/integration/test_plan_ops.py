"""What `plan` writes for operating the stack: dashboards and alert rules, plan.json's `cost` and
`clock`, and the summary's cost row and clock (the real program under the mock engine)."""

import json

import pytest

from components.cli import plan_ops
from components.cli.main import main
from components.observability import alerts, dashboards


def plan(capsys, tmp_path, stack, *sets, quiet=True):
    out = tmp_path / stack
    args = ["plan", "--stack", stack, "--out", str(out)] + [a for s in sets for a in ("--set", s)]
    code = main(args + (["--quiet"] if quiet else []))
    text, err = capsys.readouterr()
    assert code == 0, err
    return out, json.loads((out / "plan.json").read_text()), text


@pytest.mark.parametrize("stack,platform", [("ctyun-hcc", "ascend"), ("aws-eks", "cuda")])
def test_dashboards_and_alert_rules_are_written(capsys, tmp_path, stack, platform):
    out, doc, _ = plan(capsys, tmp_path, stack)
    for name, text in dashboards.build(platform).items():
        assert (out / "dashboards" / name).read_text() == text
    assert (out / "prometheus" / "alerts.yml").read_text() == alerts.render()
    assert [s["key"] for s in doc["metrics"]["sources"]] == (
        ["vllm-0.23.0", "npu-exporter-v26.1.0", "prometheus"] if platform == "ascend"
        else ["vllm-0.33.0", "dcgm-exporter-4.5.3-4.8.2", "prometheus"])


def test_aws_cost_and_clock(capsys, tmp_path):
    _, doc, _ = plan(capsys, tmp_path, "aws-eks")
    cost = doc["cost"]
    assert cost["usd_per_hour"] is None and cost["known_usd_per_hour"] == 0.15
    # us-east-2 (the stack's aws:region) has no EC2/S3 figure of its own; the block has no list rate
    assert cost["unknown"] == ["aws:ec2:m7i.xlarge", "aws:capacity-block:p6-b300.48xlarge", "aws:s3-storage"]
    assert cost["region"] == "us-east-2"
    s3 = next(p for p in cost["parts"] if p["key"] == "aws:s3-storage")
    assert s3["quantity"] == 1454  # the MXFP4 checkpoint's 1,561 GB in the 2^30-byte GB S3 bills
    clock = doc["clock"]
    assert [p["name"] for p in clock["phases"]] == ["infrastructure", "block-wait", "nodes", "staging",
                                                   "engine", "gate"]
    assert clock["estimate_s"] == 1200 + 600 + 312 + 498 + 120 and clock["not_estimated"] == ["block-wait"]
    block_start = doc["outputs"]["reservationWindow"]["start"]  # the (mock) block's start: a day ahead
    assert block_start in clock["phases"][1]["basis"]


def test_ctyun_cost_and_clock(capsys, tmp_path):
    _, doc, _ = plan(capsys, tmp_path, "ctyun-hcc")
    assert [(p["key"], p["quantity"]) for p in doc["cost"]["parts"]] == [
        ("ctyun:atlas-800-a3", 4), ("ctyun:sfs", 1), ("ctyun:eip", 1)]
    phases = {p["name"]: p for p in doc["clock"]["phases"]}
    assert phases["cluster-ready"]["estimate_s"] is None and phases["cluster-ready"]["bound_s"] == 7200
    assert phases["broadcast"]["estimate_s"] == 520 and phases["engine"]["estimate_s"] == 1420


def test_the_counts_follow_the_config(capsys, tmp_path):
    _, doc, _ = plan(capsys, tmp_path, "ctyun-hcc", "kimi-k3:nodes=8")
    assert doc["cost"]["parts"][0]["quantity"] == 8
    _, doc, _ = plan(capsys, tmp_path, "aws-eks", "kimi-k3:accelerator=h200", "kimi-k3:nodes=2")
    gpu = next(p for p in doc["cost"]["parts"] if p["key"].startswith("aws:capacity-block:"))
    assert (gpu["key"], gpu["quantity"]) == ("aws:capacity-block:p5en.48xlarge", 2)
    _, doc, _ = plan(capsys, tmp_path, "aws-eks", "kimi-k3:replicas=2")
    gpu = next(p for p in doc["cost"]["parts"] if p["key"].startswith("aws:capacity-block:"))
    assert gpu["quantity"] == 2  # every replica's node


def test_us_east_1_prices_what_was_read_for_it(capsys, tmp_path):
    _, doc, _ = plan(capsys, tmp_path, "aws-eks", "aws:region=us-east-1")
    cost = doc["cost"]
    parts = {p["key"]: p for p in cost["parts"]}
    assert parts["aws:ec2:m7i.xlarge"]["usd_per_hour"] == 0.4032
    assert parts["aws:s3-storage"]["usd_per_hour"] == pytest.approx(1454 * 0.023 / 730, abs=1e-6)
    assert cost["known_usd_per_hour"] == pytest.approx(0.15 + 0.4032 + 1454 * 0.023 / 730, abs=1e-5)
    assert cost["unknown"] == ["aws:capacity-block:p6-b300.48xlarge"] and cost["usd_per_hour"] is None


def test_the_summary_shows_cost_and_clock(capsys, tmp_path):
    _, _, text = plan(capsys, tmp_path, "aws-eks", quiet=False)
    assert "cost           unknown: at least $0.15/h known (EKS control plane" in text
    assert "clock (from `pulumi up`): 46 min from `pulumi up` to the first accepted token + block-wait" in text
    assert "\n  infrastructure        20 min  EKS control plane provisioning averages 15 min" in text


def test_a_query_for_a_metric_the_stack_lacks_stops_the_plan_before_writing(capsys, tmp_path, monkeypatch):
    bad = dashboards.Panel("old", "percentunit", (dashboards.Query("vllm:gpu_cache_usage_perc", "x"),))
    monkeypatch.setattr(dashboards, "SERVING", dashboards.SERVING + (bad,))
    with pytest.raises(plan_ops.ObservabilityError, match="vllm:gpu_cache_usage_perc .* is not exposed "
                                                          "by vllm-0.33.0"):
        main(["plan", "--stack", "aws-eks", "--out", str(tmp_path / "x"), "--quiet"])
    assert not (tmp_path / "x").exists()


def test_replace_row():
    text = "model          K3\ncost           unknown\nnote           n"
    assert plan_ops.replace_row(text, "cost", "$1/h") == "model          K3\ncost           $1/h\nnote           n"
    assert plan_ops.replace_row("no such row", "cost", "x") == "no such row"


def test_a_contracted_price_is_the_cost(capsys, tmp_path):
    _, doc, _ = plan(capsys, tmp_path, "ctyun-hcc", "kimi-k3:usdPerHour=98.5")
    assert doc["cost"]["usd_per_hour"] == 98.5
    assert doc["cost"]["source"] == "contracted price (kimi-k3:usdPerHour)"
    _, _, text = plan(capsys, tmp_path, "aws-eks", "kimi-k3:usdPerHour=1_000.25", quiet=False)
    assert "cost           $1,000.25/h (contracted price (kimi-k3:usdPerHour))" in text


@pytest.mark.parametrize("value,said", [
    ("-3", "kimi-k3:usdPerHour=-3 is not a price"), ("0", "kimi-k3:usdPerHour=0 is not a price"),
    ("nan", "kimi-k3:usdPerHour='nan' is not finite"), ("1e309", "is not finite"),
    ("$98", "kimi-k3:usdPerHour='$98' is not a number"), ("١٠", "is not a number"),
    ("98.5/h", "is not a number")])
def test_a_contracted_price_that_is_not_one_is_refused(capsys, tmp_path, value, said):
    code = main(["plan", "--stack", "ctyun-hcc", "--out", str(tmp_path / "x"), "--quiet",
                 "--set", f"kimi-k3:usdPerHour={value}"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and said in err and "98.5" in err
    assert not (tmp_path / "x").exists()


def test_the_outputs_logs_reads_are_exported(capsys, tmp_path):
    _, doc, _ = plan(capsys, tmp_path, "ctyun-hcc")
    out = doc["outputs"]
    assert out["ssh"] == {"host": "198.51.100.10", "port": 22, "user": "root", "hostKey": None,
                          "bastion": "", "bastionHostKey": "", "logDir": "/home/kimi-k3/logs"}
    assert out["sshLoginKey"] == "[secret]"
    assert out["sshCommand"].endswith("ssh -i k3.key root@198.51.100.10")
    _, doc, _ = plan(capsys, tmp_path, "aws-eks")
    k = doc["outputs"]["kubernetes"]
    assert (k["namespace"], k["container"], k["region"]) == ("kimi-k3", "vllm", "us-east-2")
    assert k["podSelector"] == {"app.kubernetes.io/name": "kimi-k3", "app.kubernetes.io/instance": "kimi-k3"}


def test_the_gates_get_the_price_only_when_one_is_set(capsys, tmp_path):
    def gate_inputs(doc):
        return next(r["inputs"] for r in doc["resources"]
                    if r["type"].endswith(("ctyun:AcceptanceGate", "aws:EndpointReadiness")))
    for stack in ("ctyun-hcc", "aws-eks"):
        _, doc, _ = plan(capsys, tmp_path, stack)
        assert "usdPerHour" not in gate_inputs(doc)
        _, doc, _ = plan(capsys, tmp_path, stack, "kimi-k3:usdPerHour=98.5")
        assert gate_inputs(doc)["usdPerHour"] == 98.5


def _types(doc):
    return {(r["type"], r["name"]): r for r in doc["resources"]}


def test_aws_monitoring_is_declared_by_default(capsys, tmp_path):
    _, doc, _ = plan(capsys, tmp_path, "aws-eks", "kimi-k3:apiKey=k3-test-key-0123456789abcdef0123")
    res = _types(doc)
    kps = res[("kubernetes:helm.sh/v3:Release", "kimi-k3-kube-prometheus-stack")]["inputs"]
    assert (kps["chart"], kps["version"], kps["namespace"]) == ("kube-prometheus-stack", "88.5.3", "monitoring")
    assert kps["values"]["prometheus"]["prometheusSpec"]["podMonitorSelectorNilUsesHelmValues"] is False
    dcgm = res[("kubernetes:helm.sh/v3:Release", "kimi-k3-dcgm-exporter")]["inputs"]
    assert dcgm["values"]["nodeSelector"] == {"kimi-k3/gpu-node": "true"}
    pm = res[("kubernetes:monitoring.coreos.com/v1:PodMonitor", "kimi-k3-pod-monitor")]
    assert pm["parent"].endswith("kimi-k3-inference") or "inference" in pm["parent"]
    ep = pm["inputs"]["spec"]["podMetricsEndpoints"][0]
    assert ep["authorization"]["credentials"] == {"name": "kimi-k3-secrets", "key": "VLLM_API_KEY"}
    assert ("kubernetes:monitoring.coreos.com/v1:PrometheusRule", "kimi-k3-alert-rules") in res
    assert not any(t == "aws:eks/podIdentityAssociation:PodIdentityAssociation" and "prometheus" in n
                   for t, n in res)


def test_aws_monitoring_off_and_amp(capsys, tmp_path):
    _, doc, _ = plan(capsys, tmp_path, "aws-eks", "kimi-k3:monitoring=false")
    assert not any("prometheus" in n or "dcgm" in n or "monitor" in n for _, n in _types(doc))
    ws = "ws-12345678-abcd-1234-abcd-123456789012"
    _, doc, _ = plan(capsys, tmp_path, "aws-eks", f"kimi-k3:ampWorkspaceId={ws}")
    res = _types(doc)
    spec = res[("kubernetes:helm.sh/v3:Release", "kimi-k3-kube-prometheus-stack")]["inputs"]["values"][
        "prometheus"]["prometheusSpec"]
    assert spec["remoteWrite"] == [{"url": f"https://aps-workspaces.us-east-2.amazonaws.com/workspaces/{ws}/api/v1/remote_write",
                                    "sigv4": {"region": "us-east-2"}}]
    assoc = res[("aws:eks/podIdentityAssociation:PodIdentityAssociation", "kimi-k3-prometheus-identity")]["inputs"]
    assert (assoc["namespace"], assoc["serviceAccount"]) == ("monitoring", "kimi-k3-prometheus")
    policy = json.loads(res[("aws:iam/rolePolicy:RolePolicy", "kimi-k3-prometheus-amp")]["inputs"]["policy"])
    assert policy["Statement"][0]["Action"] == ["aps:RemoteWrite"]
    assert policy["Statement"][0]["Resource"] == f"arn:aws:aps:us-east-2:*:workspace/{ws}"


@pytest.mark.parametrize("sets,said", [
    (["kimi-k3:monitoring=perhaps"], "kimi-k3:monitoring='perhaps' is not a boolean"),
    (["kimi-k3:ampWorkspaceId=ws-123"], "kimi-k3:ampWorkspaceId='ws-123' is not an Amazon Managed Prometheus workspace id"),
    (["kimi-k3:ampWorkspaceId=ws-12345678-abcd-1234-abcd-123456789012/../x"], "is not an Amazon Managed"),
    (["kimi-k3:ampWorkspaceId=ws-12345678-abcd-1234-abcd-123456789012", "kimi-k3:monitoring=false"],
     "needs kimi-k3:monitoring"),
    (["kimi-k3:namespace=monitoring"], "kimi-k3:namespace='monitoring'"),
    (["kimi-k3:serving=hyperpod", "kimi-k3:hyperpodClusterName=hp1", "kimi-k3:monitoring=true"],
     "kimi-k3:monitoring"),
])
def test_monitoring_keys_that_are_wrong_are_refused(capsys, tmp_path, sets, said):
    args = ["plan", "--stack", "aws-eks", "--out", str(tmp_path / "x"), "--quiet"]
    for s in sets:
        args += ["--set", s]
    code = main(args)
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and said in err, err


def test_the_grafana_output_and_release_names(capsys, tmp_path):
    _, doc, _ = plan(capsys, tmp_path, "aws-eks")
    assert doc["outputs"]["grafana"].startswith(
        "kubectl -n monitoring port-forward svc/kimi-k3-monitoring-grafana 3000:80")
    res = _types(doc)
    assert res[("kubernetes:helm.sh/v3:Release", "kimi-k3-kube-prometheus-stack")]["inputs"]["name"] == \
        "kimi-k3-monitoring"
    _, doc, _ = plan(capsys, tmp_path, "aws-eks", "kimi-k3:monitoring=false")
    assert "grafana" not in doc["outputs"]
