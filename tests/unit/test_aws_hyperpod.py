"""HyperPod: the InferenceEndpointConfig against the operator's CRD (tests/contracts/hyperpod/),
the API key from a Kubernetes Secret, one model argument, keys that do not apply refused."""

import re
from pathlib import Path

import pytest
import yaml

from components.offline.runner import SECRET, run_program
from tests.contracts import upstream

FACTS = yaml.safe_load((Path(__file__).resolve().parents[1] / "contracts" / "hyperpod" / "iec_facts.yaml").read_text())
HP = {"kimi-k3:serving": "hyperpod", "kimi-k3:hyperpodClusterName": "hp-eks"}


def _schema_problems(spec):
    """`spec` against the v1 spec schema of the CRD as recorded (tests/contracts/upstream): every
    type, enum, pattern, maxLength and required keyword the record keeps (jsonschema), and every
    field unknown where the record lists the properties."""
    import jsonschema

    crd = upstream.load_yaml(*upstream.HYPERPOD_CRD)
    schema = next(v for v in crd["spec"]["versions"] if v["name"] == "v1")["schema"]["openAPIV3Schema"]
    schema = schema["properties"]["spec"]
    problems = [f"spec.{'.'.join(map(str, e.path))}: {e.message}"
                for e in jsonschema.Draft7Validator(schema).iter_errors(spec)]

    def unknown(obj, sch, where):
        if isinstance(obj, dict) and sch.get("properties"):
            for k, v in obj.items():
                if k not in sch["properties"]:
                    problems.append(f"{where}.{k} is not in the CRD")
                else:
                    unknown(v, sch["properties"][k], f"{where}.{k}")
        elif isinstance(obj, list) and isinstance(sch.get("items"), dict):
            for i, v in enumerate(obj):
                unknown(v, sch["items"], f"{where}[{i}]")
    unknown(spec, schema, "spec")
    return problems


def check_against_crd(iec):
    """Problems of `iec` under the recorded CRD facts (unknown fields, required, patterns) and
    under the recorded CRD's own schema (`_schema_problems`)."""
    problems = _schema_problems(iec["spec"])

    def fields(obj, allowed, required, where):
        for k in obj:
            if k not in allowed:
                problems.append(f"{where}.{k} is not a field of the CRD")
        for k in required:
            if k not in obj:
                problems.append(f"{where}.{k} is required")

    assert iec["apiVersion"] == FACTS["apiVersion"] and iec["kind"] == FACTS["kind"]
    spec = iec["spec"]
    fields(spec, FACTS["spec"]["properties"], FACTS["spec"]["required"], "spec")
    name = spec["modelName"]
    if len(name) > FACTS["spec"]["modelName"]["maxLength"] or not re.match(FACTS["spec"]["modelName"]["pattern"], name):
        problems.append(f"spec.modelName {name!r}")
    if not re.match(FACTS["spec"]["instanceType"]["pattern"], spec["instanceType"]):
        problems.append("spec.instanceType")
    for k in ("maxDeployTimeInSeconds", "replicas"):
        if k in spec and not (isinstance(spec[k], int) and 0 < spec[k] < 2**31):
            problems.append(f"spec.{k} is not an int32")
    w = spec["worker"]
    fields(w, FACTS["worker"]["properties"], FACTS["worker"]["required"], "spec.worker")
    for e in w.get("environmentVariables", []):
        fields(e, FACTS["environmentVariable"]["properties"], FACTS["environmentVariable"]["required"], "env")
        for ref, body in (e.get("valueFrom") or {}).items():
            if ref not in FACTS["environmentVariable"]["valueFrom"]:
                problems.append(f"env valueFrom.{ref}")
            if ref == "secretKeyRef":
                f = FACTS["environmentVariable"]["secretKeyRef"]
                fields(body, f["properties"], f["required"], "secretKeyRef")
    msc = spec["modelSourceConfig"]
    fields(msc, FACTS["modelSourceConfig"]["properties"], FACTS["modelSourceConfig"]["required"], "modelSourceConfig")
    assert msc["modelSourceType"] in FACTS["modelSourceConfig"]["modelSourceType"]
    hf = msc.get("huggingFaceModel") or {}
    fields(hf, FACTS["huggingFaceModel"]["properties"], FACTS["huggingFaceModel"]["required"], "huggingFaceModel")
    if not re.match(FACTS["huggingFaceModel"]["modelId"]["pattern"], hf["modelId"]):
        problems.append("huggingFaceModel.modelId")
    if "commitSHA" in hf and not re.match(FACTS["huggingFaceModel"]["commitSHA"]["pattern"], hf["commitSHA"]):
        problems.append("huggingFaceModel.commitSHA")
    if "tokenSecretRef" in hf:
        f = FACTS["huggingFaceModel"]["tokenSecretRef"]
        fields(hf["tokenSecretRef"], f["properties"], f["required"], "tokenSecretRef")
    fields(w["modelVolumeMount"], FACTS["modelVolumeMount"]["properties"], FACTS["modelVolumeMount"]["required"], "mount")
    fields(w["modelInvocationPort"], FACTS["modelInvocationPort"]["properties"],
           FACTS["modelInvocationPort"]["required"], "port")
    lb = spec.get("loadBalancer") or {}
    fields(lb, FACTS["loadBalancer"]["properties"], [], "loadBalancer")
    if "healthCheckPath" in lb and not re.match(FACTS["loadBalancer"]["healthCheckPath"]["pattern"],
                                                lb["healthCheckPath"]):
        problems.append("loadBalancer.healthCheckPath")
    m = spec.get("metrics") or {}
    fields(m, FACTS["metrics"]["properties"], [], "metrics")
    mm = m.get("modelMetrics") or {}
    fields(mm, FACTS["metrics"]["modelMetrics"]["properties"], [], "metrics.modelMetrics")
    if "path" in mm and not re.match(FACTS["metrics"]["modelMetrics"]["path"]["pattern"], mm["path"]):
        problems.append("metrics.modelMetrics.path")
    tls = spec.get("tlsConfig") or {}
    fields(tls, FACTS["tlsConfig"]["properties"], [], "tlsConfig")
    uri = tls.get("tlsCertificateOutputS3Uri")
    if uri is not None and not re.match(FACTS["tlsConfig"]["tlsCertificateOutputS3Uri"]["pattern"], uri):
        problems.append("tlsConfig.tlsCertificateOutputS3Uri")
    custom = tls.get("customCertificateConfig")
    if custom is not None:
        f = FACTS["tlsConfig"]["customCertificateConfig"]
        fields(custom, f["properties"], f["required"], "customCertificateConfig")
        for k in ("acmArn", "domainName"):
            if not re.match(f[k]["pattern"], custom.get(k, "")):
                problems.append(f"customCertificateConfig.{k}")
    dns = spec.get("dnsConfig")
    if dns is not None:
        fields(dns, FACTS["dnsConfig"]["properties"], FACTS["dnsConfig"]["required"], "dnsConfig")
        if not custom:
            problems.append("dnsConfig requires tlsConfig.customCertificateConfig")
        if not re.match(FACTS["dnsConfig"]["hostedZoneId"]["pattern"], dns.get("hostedZoneId", "")):
            problems.append("dnsConfig.hostedZoneId")
    return problems


@pytest.fixture(scope="module")
def with_secrets():
    return run_program("aws-eks", {**HP, "kimi-k3:apiKey": "sk-hp-do-not-leak-0123456789abcdefg", "kimi-k3:hfToken": "hf_hp_do_not_leak"})


def iec_of(run):
    return next(r for r in run.of_type("kubernetes:inference.sagemaker.aws.amazon.com/v1:InferenceEndpointConfig"))["inputs"]


def test_the_endpoint_config_matches_the_operators_crd(with_secrets):
    assert check_against_crd(iec_of(with_secrets)) == []
    assert check_against_crd(iec_of(run_program("aws-eks", HP))) == []


def test_the_api_key_and_hub_token_reach_the_endpoint_from_a_kubernetes_secret(with_secrets):
    iec = iec_of(with_secrets)
    env = {e["name"]: e for e in iec["spec"]["worker"]["environmentVariables"]}
    assert env["VLLM_API_KEY"]["valueFrom"] == {"secretKeyRef": {"name": "kimi-k3-secrets", "key": "VLLM_API_KEY"}}
    assert "value" not in env["VLLM_API_KEY"]
    hf = iec["spec"]["modelSourceConfig"]["huggingFaceModel"]
    assert hf["tokenSecretRef"] == {"name": "kimi-k3-secrets", "key": "HF_TOKEN"}
    secret = next(r for r in with_secrets.of_type("kubernetes:core/v1:Secret"))["inputs"]
    assert secret["metadata"] == {"name": "kimi-k3-secrets", "namespace": iec["metadata"]["namespace"]}
    assert secret["stringData"] == SECRET
    deps = {r["name"]: r["dependencies"] for r in with_secrets.resources}
    assert "kimi-k3-secrets" in deps["kimi-k3-endpoint-config"]
    text = repr(with_secrets.resources) + repr(with_secrets.outputs) + repr(with_secrets.inference.artifacts)
    assert "sk-hp-do-not-leak-0123456789abcdefg" not in text and "hf_hp_do_not_leak" not in text


def test_exactly_one_model_argument_and_an_explicit_entrypoint(with_secrets):
    from components.inference import api_guard

    w = iec_of(with_secrets)["spec"]["worker"]
    # with an API key the command writes kimi-k3's API-key guard first, then execs `vllm serve`
    assert w["command"] == list(api_guard.HYPERPOD_COMMAND)
    assert w["args"][:2] == ["vllm", "serve"]
    vllm_args = w["args"][2:]
    assert "--model" not in vllm_args and vllm_args.count(w["modelVolumeMount"]["mountPath"]) == 1
    assert vllm_args[0] == w["modelVolumeMount"]["mountPath"]
    assert not any(a == "moonshotai/Kimi-K3" for a in vllm_args)  # the hub id is the operator's, not vLLM's
    plain = iec_of(run_program("aws-eks", HP))["spec"]["worker"]  # no key: vllm serve itself
    assert plain["command"] == ["vllm", "serve"] and plain["args"][0] == vllm_args[0]


def test_deploy_time_and_replicas_come_from_the_plan_and_the_config():
    run = run_program("aws-eks", {**HP, "kimi-k3:replicas": "3"})
    spec = iec_of(run)["spec"]
    c = run.inference.plan.cold_start
    assert spec["replicas"] == 3
    assert spec["maxDeployTimeInSeconds"] == c.stage_s + c.startup_timeout_s > 3600  # CRD default too short


def test_keys_that_do_not_apply_are_refused_by_a_real_preview():
    import pulumi

    for key, value in (("kimi-k3:capacityReservationId", "cr-0123456789abcdef0"),
                       ("kimi-k3:allowedCidrs", "203.0.113.0/24"), ("kimi-k3:rootVolumeGib", "300")):
        with pytest.raises(pulumi.RunError) as e:
            run_program("aws-eks", {**HP, key: value}, as_deployed=True)
        assert str(e.value).startswith(f"{key}=") and "hyperpod" in str(e.value)


def test_accept_load_is_never_silently_dropped(with_secrets):
    """No gate runs on HyperPod: an explicit size is refused, the default is warned about."""
    import pulumi

    with pytest.raises(pulumi.RunError) as e:
        run_program("aws-eks", {**HP, "kimi-k3:acceptLoad": "64x16"}, as_deployed=True)
    assert str(e.value).startswith("kimi-k3:acceptLoad='64x16' does not apply to kimi-k3:serving=hyperpod")
    warned = [w for w in with_secrets.warnings if "no readiness or acceptance gate" in w]
    assert len(warned) == 1 and "kimi-k3:acceptLoad=auto is therefore not run" in warned[0]
    off = run_program("aws-eks", {**HP, "kimi-k3:acceptLoad": "off"})
    assert [w for w in off.warnings if "no readiness or acceptance gate" in w and "acceptLoad" not in w]


def test_the_kubeconfig_uses_the_stacks_profile():
    import json

    from components.aws_eks.cluster import exec_kubeconfig

    kc = json.loads(exec_kubeconfig("hp-eks", "https://x", "Y2E=", "us-east-2", profile="kk3-deploy"))
    user = kc["users"][0]["user"]["exec"]
    # --profile on the command line: AWS_PROFILE in the environment would lose to ambient keys
    assert user["args"][-2:] == ["--profile", "kk3-deploy"] and "env" not in user
    assert user["args"][user["args"].index("--region") + 1] == "us-east-2"


def test_the_crd_check_catches_wrong_types_enums_and_unknown_nested_fields(with_secrets):
    import copy

    good = iec_of(with_secrets)
    assert check_against_crd(good) == []
    bad = copy.deepcopy(good)
    bad["spec"]["metrics"]["modelMetrics"]["port"] = "8000"  # a string where the CRD wants an integer
    bad["spec"]["loadBalancer"]["routingAlgorithm"] = "random"  # not in the CRD's enum
    bad["spec"]["worker"]["modelInvocationPort"]["containerPrt"] = 8000  # a typo the operator would drop
    problems = check_against_crd(bad)
    assert any(p.startswith("spec.metrics.modelMetrics.port: '8000' is not of type 'integer'") for p in problems)
    assert any(p.startswith("spec.loadBalancer.routingAlgorithm: 'random' is not one of") for p in problems)
    assert "spec.worker.modelInvocationPort.containerPrt is not in the CRD" in problems


def test_recorded_facts_match_the_crd_upstream():
    """iec_facts.yaml against the operator's CRD itself (tests/contracts/upstream, at the commit
    the facts name)."""
    crd = upstream.load_yaml(*upstream.HYPERPOD_CRD)
    assert crd["spec"]["group"] + "/v1" == FACTS["apiVersion"]
    assert crd["spec"]["names"]["kind"] == FACTS["kind"]
    v1 = next(v for v in crd["spec"]["versions"] if v["name"] == "v1")
    assert v1["served"] and v1["storage"]
    spec = v1["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert sorted(spec["properties"]) == sorted(FACTS["spec"]["properties"])
    assert spec["required"] == FACTS["spec"]["required"]
    for k in ("maxLength", "pattern"):
        assert spec["properties"]["modelName"][k] == FACTS["spec"]["modelName"][k]
    w = spec["properties"]["worker"]
    assert sorted(w["properties"]) == sorted(FACTS["worker"]["properties"]) and w["required"] == FACTS["worker"]["required"]
    env = w["properties"]["environmentVariables"]["items"]
    assert sorted(env["properties"]) == sorted(FACTS["environmentVariable"]["properties"])
    assert sorted(env["properties"]["valueFrom"]["properties"]) == sorted(FACTS["environmentVariable"]["valueFrom"])
    hf = spec["properties"]["modelSourceConfig"]["properties"]["huggingFaceModel"]
    assert sorted(hf["properties"]) == sorted(FACTS["huggingFaceModel"]["properties"])
    assert hf["properties"]["modelId"]["pattern"] == FACTS["huggingFaceModel"]["modelId"]["pattern"]
    assert hf["properties"]["commitSHA"]["pattern"] == FACTS["huggingFaceModel"]["commitSHA"]["pattern"]
    from components.config.values import MODEL_COMMIT

    assert MODEL_COMMIT.pattern == FACTS["huggingFaceModel"]["commitSHA"]["pattern"]
    assert "HF_TOKEN" in hf["properties"]["tokenSecretRef"]["description"]
    for section in ("loadBalancer", "metrics", "tlsConfig"):
        assert sorted(spec["properties"][section]["properties"]) == sorted(FACTS[section]["properties"])
    lb = spec["properties"]["loadBalancer"]["properties"]["healthCheckPath"]
    assert (lb["default"], lb["pattern"]) == (FACTS["loadBalancer"]["healthCheckPath"]["default"],
                                              FACTS["loadBalancer"]["healthCheckPath"]["pattern"])
    mm = spec["properties"]["metrics"]["properties"]["modelMetrics"]["properties"]
    assert sorted(mm) == sorted(FACTS["metrics"]["modelMetrics"]["properties"])
    assert mm["port"]["default"] == FACTS["metrics"]["modelMetrics"]["port"]["default"]
    assert (mm["path"]["default"], mm["path"]["pattern"]) == (FACTS["metrics"]["modelMetrics"]["path"]["default"],
                                                              FACTS["metrics"]["modelMetrics"]["path"]["pattern"])
    uri = spec["properties"]["tlsConfig"]["properties"]["tlsCertificateOutputS3Uri"]
    assert uri["pattern"] == FACTS["tlsConfig"]["tlsCertificateOutputS3Uri"]["pattern"]
    custom = spec["properties"]["tlsConfig"]["properties"]["customCertificateConfig"]
    f = FACTS["tlsConfig"]["customCertificateConfig"]
    assert sorted(custom["properties"]) == sorted(f["properties"]) and custom["required"] == f["required"]
    for k in ("acmArn", "domainName"):
        assert custom["properties"][k]["pattern"] == f[k]["pattern"]
    dns = spec["properties"]["dnsConfig"]
    assert dns["required"] == FACTS["dnsConfig"]["required"]
    assert dns["properties"]["hostedZoneId"]["pattern"] == FACTS["dnsConfig"]["hostedZoneId"]["pattern"]
    from components.aws_eks.hyperpod import settings as hps

    assert hps.ACM_ARN.pattern == f["acmArn"]["pattern"] and hps.DOMAIN.pattern == f["domainName"]["pattern"]
    status = v1["schema"]["openAPIV3Schema"]["properties"]["status"]["properties"]
    assert status["state"]["enum"] == FACTS["status"]["state"]
    assert set(FACTS["status"]["read"]) <= set(status)
    assert set(FACTS["status"]["tlsCertificate"]) <= set(status["tlsCertificate"]["properties"])
    assert set(FACTS["status"]["deploymentStatus"]) <= set(status["deploymentStatus"]["properties"])

    assert spec["properties"]["maxDeployTimeInSeconds"]["default"] == 3600
    for key in ("maxDeployTimeInSeconds", "replicas"):
        for k, v in FACTS["spec"][key].items():
            assert spec["properties"][key][k] == v, (key, k)
    assert spec["properties"]["instanceType"]["pattern"] == FACTS["spec"]["instanceType"]["pattern"]
    secret = env["properties"]["valueFrom"]["properties"]["secretKeyRef"]
    assert sorted(secret["properties"]) == sorted(FACTS["environmentVariable"]["secretKeyRef"]["properties"])
    assert secret["required"] == FACTS["environmentVariable"]["secretKeyRef"]["required"]
    msc = spec["properties"]["modelSourceConfig"]
    assert sorted(msc["properties"]) == sorted(FACTS["modelSourceConfig"]["properties"])
    assert msc["required"] == FACTS["modelSourceConfig"]["required"]
    assert msc["properties"]["modelSourceType"]["enum"] == FACTS["modelSourceConfig"]["modelSourceType"]
    token = hf["properties"]["tokenSecretRef"]
    assert sorted(token["properties"]) == sorted(FACTS["huggingFaceModel"]["tokenSecretRef"]["properties"])
    assert token["required"] == FACTS["huggingFaceModel"]["tokenSecretRef"]["required"]
    assert hf["required"] == FACTS["huggingFaceModel"]["required"]
    for part in ("modelVolumeMount", "modelInvocationPort"):
        got = w["properties"][part]
        assert sorted(got["properties"]) == sorted(FACTS[part]["properties"]), part
        assert got["required"] == FACTS[part]["required"], part


def test_the_health_check_and_metrics_reach_vllm_not_the_operators_defaults(with_secrets):
    """/ping and port 8080 (the CRD's defaults) are not served by vLLM: both are set, and with an
    API key the operator's scrape (which has no key) is off."""
    plain = iec_of(run_program("aws-eks", HP))
    assert plain["spec"]["loadBalancer"] == {"healthCheckPath": "/health"}
    assert plain["spec"]["metrics"] == {"enabled": True, "modelMetrics": {"path": "/metrics", "port": 8000}}
    assert iec_of(with_secrets)["spec"]["metrics"]["enabled"] is False
