"""The end-to-end HyperPod stack under Pulumi's mock engine (the real __main__.py): where each new
resource sits in the component tree, that nothing is created before the training plan decides,
the order destroy follows, and the inputs against the SDKs' models and the operator's CRD."""

import json
import re

import botocore.session
import pytest
from botocore.validate import ParamValidator
from pulumi import RunError  # run_program raises what `pulumi preview` shows

from components.aws_eks.hyperpod import catalog
from components.offline import order
from components.offline.runner import run_program
from tests.unit.test_aws_hyperpod import check_against_crd

KEY = "kk3-hyperpod-key-0123456789abcdefghij"
E2E = {"kimi-k3:serving": "hyperpod", "kimi-k3:apiKey": KEY}
ARN = "arn:aws:sagemaker:us-east-2:111122223333:training-plan/my-plan"
PLAN = "pulumi-python:dynamic/aws:TrainingPlan"
IEC = "kubernetes:inference.sagemaker.aws.amazon.com/v1:InferenceEndpointConfig"
VARIANTS = {
    "lists offers, buys nothing": {},
    "buys under a cap, two replicas": {"kimi-k3:maxUpfrontFeeUsd": "150000", "kimi-k3:replicas": "2"},
    "adopts, your VPC, AMP": {"kimi-k3:trainingPlanArn": ARN, "kimi-k3:vpcId": "vpc-0123456789abcdef0",
                              "kimi-k3:privateSubnetIds": "subnet-0123456789abcdef0,subnet-0123456789abcdef1",
                              "kimi-k3:privateApi": "true",
                              "kimi-k3:ampWorkspaceId": "ws-12345678-abcd-1234-abcd-123456789012"},
}


@pytest.fixture(scope="module", params=sorted(VARIANTS), ids=sorted(VARIANTS))
def run(request):
    return run_program("aws-eks", {**E2E, **VARIANTS[request.param]})


def one(run, type_token, name=None):
    found = [r for r in run.of_type(type_token) if name is None or r["name"] == name]
    assert len(found) == 1, (type_token, name, [r["name"] for r in found])
    return found[0]


def test_new_resources_sit_under_the_right_parent(run):
    parents = {(r["type"], r["name"]): r["parent"] for r in run.resources}
    assert parents[("kimi-k3:aws:EksCluster", "kimi-k3")] == "kimi-k3-aws-eks"
    assert parents[(PLAN, "kimi-k3-training-plan")] == "kimi-k3"
    assert parents[("kimi-k3:aws:HyperPodCluster", "kimi-k3-hyperpod")] == "kimi-k3"
    for t, n in (("aws-native:sagemaker:Cluster", "kimi-k3-hyperpod-cluster"),
                 ("aws:eks/addon:Addon", "kimi-k3-hyperpod-operator"),
                 ("pulumi-python:dynamic/aws:HyperPodGone", "kimi-k3-hyperpod-gone"),
                 ("pulumi-python:dynamic/aws:OperatorLoadBalancersGone", "kimi-k3-hyperpod-lbs-gone"),
                 ("aws:iam/openIdConnectProvider:OpenIdConnectProvider", "kimi-k3-hyperpod-oidc"),
                 ("aws:s3/bucket:Bucket", "kimi-k3-hyperpod-tls"),
                 ("pulumi:providers:aws-native", "kimi-k3-hyperpod-aws-native")):
        assert parents[(t, n)] == "kimi-k3-hyperpod", (t, n)
    for t, n in ((IEC, "kimi-k3-endpoint-config"), ("pulumi-python:dynamic/aws:HyperPodReadiness", "kimi-k3-readiness"),
                 ("kubernetes:core/v1:Namespace", "kimi-k3-ns")):
        assert parents[(t, n)] == "kimi-k3-inference", (t, n)
    assert not run.of_type("aws:eks/nodeGroup:NodeGroup") or all(
        r["name"] == "kimi-k3-system" for r in run.of_type("aws:eks/nodeGroup:NodeGroup"))  # no GPU node group
    assert not run.of_type("pulumi-python:dynamic/aws:CapacityBlock")
    names = [r["name"] for r in run.resources if not r["custom"]]
    assert len(names) == len(set(names))


def test_nothing_is_created_before_the_training_plan_decides(run):
    plan = one(run, PLAN)
    early = order.not_waiting_for(run.resources, plan["urn"],
                                  exempt_types={"pulumi-python:dynamic/aws:StackOwner": "the token (state only)"})
    assert early == [], f"created before the training plan decides: {early}"


def test_destroy_goes_endpoint_operator_cluster_proof_eks(run):
    """Destroy deletes a resource before what it waits for: these edges give the order."""
    urn = {(r["type"], r["name"]): r["urn"] for r in run.resources}
    waits = {r["urn"]: set(order.waits_for(r)) for r in run.resources}

    def after(a, b):  # a waits for b (so destroy deletes a first)
        return urn[b] in waits[urn[a]]

    iec, gone_lbs = (IEC, "kimi-k3-endpoint-config"), ("pulumi-python:dynamic/aws:OperatorLoadBalancersGone",
                                                      "kimi-k3-hyperpod-lbs-gone")
    operator, hp = ("aws:eks/addon:Addon", "kimi-k3-hyperpod-operator"), ("aws-native:sagemaker:Cluster",
                                                                          "kimi-k3-hyperpod-cluster")
    proof = ("pulumi-python:dynamic/aws:HyperPodGone", "kimi-k3-hyperpod-gone")
    system = ("aws:eks/nodeGroup:NodeGroup", "kimi-k3-system")
    assert after(iec, gone_lbs) and after(gone_lbs, operator) and after(operator, hp)
    assert after(hp, proof) and after(hp, system)
    assert after(("pulumi-python:dynamic/aws:HyperPodReadiness", "kimi-k3-readiness"), iec)


def test_the_hyperpod_cluster_is_replaced_by_deleting_it_first(run):
    """The next training plan in another zone moves the subnet (vpcConfig: create-only), which
    replaces the cluster; its name is fixed and the plan holds one set of nodes, so the old one
    must go first (hyperpod/cluster.py docstring)."""
    hp = one(run, "aws-native:sagemaker:Cluster")
    assert hp["delete_before_replace"] is True
    assert hp["inputs"]["clusterName"] == "kimi-k3-aws-eks"  # fixed: a second one would collide


def test_the_hyperpod_cluster_is_a_valid_create_cluster_request(run):
    inputs = one(run, "aws-native:sagemaker:Cluster")["inputs"]

    def pascal(v, key=""):
        if isinstance(v, dict):
            return dict(v) if key == "labels" else {k[:1].upper() + k[1:]: pascal(x, k) for k, x in v.items()}
        return [pascal(x, key) for x in v] if isinstance(v, list) else v
    req = pascal(inputs)
    shape = botocore.session.get_session().get_service_model("sagemaker").operation_model("CreateCluster").input_shape
    report = ParamValidator().validate(req, shape)
    assert not report.has_errors(), report.generate_report()
    group = req["InstanceGroups"][0]
    plan = one(run, PLAN)
    assert group["InstanceCount"] == plan["inputs"]["instanceCount"] and group["InstanceType"] == "ml.p6-b300.48xlarge"
    assert group["TrainingPlanArn"].startswith("arn:aws:sagemaker:") and ":training-plan/" in group["TrainingPlanArn"]
    assert re.fullmatch(r"arn:aws[a-z\-]*:eks:[a-z0-9\-]*:[0-9]{12}:cluster\/[0-9A-Za-z][A-Za-z0-9\-_]{0,99}",
                        req["Orchestrator"]["Eks"]["ClusterArn"])
    assert req["VpcConfig"]["SecurityGroupIds"] == ["sg-0mock00000000000"]


def test_the_endpoint_config_matches_the_crd_with_the_stacks_tls_bucket(run):
    spec = one(run, IEC)["inputs"]
    assert check_against_crd(spec) == []
    assert spec["spec"]["tlsConfig"] == {"tlsCertificateOutputS3Uri": "s3://kimi-k3-tls-mock0001/kimi-k3/certificates/"}
    assert spec["spec"]["loadBalancer"]["healthCheckPath"] == "/health"


def test_eks_is_a_version_hyperpod_documents_with_the_operators_addons(run):
    eks = one(run, "eks:index:Cluster")["inputs"]
    assert eks["version"] in catalog.K8S_VERSIONS and eks["authenticationMode"] == "API"
    addons = {r["inputs"]["addonName"]: r["inputs"].get("addonVersion") for r in run.of_type("aws:eks/addon:Addon")
              if r["inputs"]["addonName"] != "eks-pod-identity-agent"}  # AMP's (test below)
    assert addons == catalog.ADDON_VERSIONS
    execution = one(run, "aws:iam/role:Role", "kimi-k3-hyperpod-operator-role")["inputs"]
    assert execution["namePrefix"].startswith(catalog.EXECUTION_ROLE_PREFIX)
    trust = json.loads(execution["assumeRolePolicy"])
    assert [st.get("Principal") for st in trust["Statement"]][0] == {"Service": "sagemaker.amazonaws.com"}
    assert trust["Statement"][1]["Action"] == "sts:AssumeRoleWithWebIdentity"


def test_the_plan_is_adopted_without_a_token_or_bought_with_it():
    adopted = one(run_program("aws-eks", {**E2E, **VARIANTS["adopts, your VPC, AMP"]}), PLAN)["inputs"]
    assert adopted["trainingPlanArn"] == ARN and not adopted.get("stackToken") and not adopted.get("maxUpfrontFeeUsd")
    bought = run_program("aws-eks", {**E2E, "kimi-k3:maxUpfrontFeeUsd": "150000"})
    plan, owner = one(bought, PLAN), one(bought, "pulumi-python:dynamic/aws:StackOwner")
    assert plan["inputs"]["stackToken"] == "0" * 32 and owner["urn"] in order.waits_for(plan)
    assert plan["inputs"]["zones"] == ["us-east-2a", "us-east-2b", "us-east-2c"]


def test_the_outputs_speak_of_a_training_plan_and_a_real_endpoint():
    run = run_program("aws-eks", E2E)
    out = run.outputs
    assert out["trainingPlan"]["start"] and out["hyperpodCluster"]["arn"].startswith("arn:aws:sagemaker:")
    assert out["capacityCost"].startswith("not bought yet: a 24 h training plan of 1 x ml.p6-b300.48xlarge")
    assert out["readiness"]["state"] == "waiting-for-training-plan"  # the mocked plan starts tomorrow
    assert "after the training plan starts" in out["plan"] and "block" not in out["plan"].split("first token")[1]


@pytest.mark.parametrize("config", [E2E, {"kimi-k3:serving": "hyperpod", "kimi-k3:hyperpodClusterName": "hp"}],
                         ids=["own cluster", "your cluster"])
def test_both_hyperpod_modes_output_what_the_logs_command_reads(config):
    """`logs`, `kubernetes` (with the endpoint config whose status names the operator's pods, and
    the worker's port) and `kubectl`, as on the other targets (docs/day-two.md)."""
    out = run_program("aws-eks", config).outputs
    k = out["kubernetes"]
    assert (k["namespace"], k["inferenceEndpointConfig"], k["port"], k["podSelector"]) == \
        ("kimi-k3", "kimik3", 8000, {})
    assert k["apiEndpoint"].startswith("https://") and k["caData"] and k["clusterName"]
    assert out["logs"]["command"].startswith("python -m components logs --stack ")
    assert "get inferenceendpointconfig kimik3 -o jsonpath='{.status.selector}'" in out["logs"]["kubectl"]
    assert out["kubectl"].startswith("pulumi stack output --show-secrets kubeconfig > k3.kubeconfig")


def test_resources_per_mode():
    """The figures of docs/aws-eks.md (bench/hyperpod.py prints them)."""
    existing = run_program("aws-eks", {"kimi-k3:serving": "hyperpod", "kimi-k3:hyperpodClusterName": "hp"})
    e2e = run_program("aws-eks", E2E)
    assert len(existing.resources) < 10 < len(e2e.resources)


def test_your_certificate_and_zone_go_to_the_operator():
    cert = "arn:aws:acm:us-east-2:111122223333:certificate/0123abcd-0123-abcd-0123-0123456789ab"
    run = run_program("aws-eks", {**E2E, "kimi-k3:tlsDomain": "k3.example.com", "kimi-k3:tlsCertificateArn": cert,
                                  "kimi-k3:tlsHostedZoneId": "Z0123456789ABCDEFGHIJ"})
    spec = one(run, IEC)["inputs"]
    assert check_against_crd(spec) == []
    assert spec["spec"]["tlsConfig"]["customCertificateConfig"] == {"acmArn": cert, "domainName": "k3.example.com"}
    assert spec["spec"]["dnsConfig"] == {"hostedZoneId": "Z0123456789ABCDEFGHIJ"}


def test_a_certificate_of_another_region_is_refused_before_the_training_plan():
    cert = "arn:aws:acm:us-west-2:111122223333:certificate/0123abcd-0123-abcd-0123-0123456789ab"
    with pytest.raises(RunError) as e:
        run_program("aws-eks", {**E2E, "kimi-k3:tlsDomain": "k3.example.com", "kimi-k3:tlsCertificateArn": cert,
                                "kimi-k3:maxUpfrontFeeUsd": "150000"})
    assert str(e.value).startswith(f"kimi-k3:tlsCertificateArn={cert!r} is in us-west-2, not in aws:region")


@pytest.mark.parametrize("mode", [{}, {"kimi-k3:hyperpodClusterName": "hp"}], ids=["end-to-end", "your-cluster"])
def test_a_weak_api_key_is_refused_on_hyperpod_where_the_operator_decides_the_exposure(mode):
    """The operator's load balancer may be internet-facing (its decision, not allowedCidrs'), so
    the key gets the floor of a public endpoint (components/config/api_key.py); never shown."""
    with pytest.raises(RunError) as e:
        run_program("aws-eks", {**E2E, **mode, "kimi-k3:apiKey": "sk-short-key-1"})
    text = str(e.value)
    assert text.startswith("kimi-k3:apiKey=<not shown> is too weak for an endpoint open to public addresses "
                           "(14 characters") and "sk-short-key-1" not in text
    assert "on serving=hyperpod the inference operator's load balancer decides" in text


def test_amp_remote_write_has_the_pod_identity_agent(run):
    """HyperPod installs no weights path: Prometheus's Pod Identity association needs the agent
    the monitoring declares itself."""
    associations = run.of_type("aws:eks/podIdentityAssociation:PodIdentityAssociation")
    agents = [r for r in run.of_type("aws:eks/addon:Addon") if r["inputs"].get("addonName") == "eks-pod-identity-agent"]
    assert len(agents) == (1 if associations else 0)
    assert associations or "kimi-k3:ampWorkspaceId" not in run.config


def test_the_operators_namespace_is_made_before_the_addon_and_goes_after_it(run):
    """AWS's setup page creates `hyperpod-inference-system` before installing the add-on (its
    roles trust service accounts there); destroy then deletes the add-on before the namespace."""
    ns = one(run, "kubernetes:core/v1:Namespace", "kimi-k3-hyperpod-operator-ns")
    assert ns["inputs"]["metadata"]["name"] == catalog.OPERATOR_NAMESPACE == "hyperpod-inference-system"
    assert ns["parent"] == "kimi-k3-hyperpod"
    operator = one(run, "aws:eks/addon:Addon", "kimi-k3-hyperpod-operator")
    assert ns["urn"] in order.waits_for(operator)
    system = one(run, "aws:eks/nodeGroup:NodeGroup", "kimi-k3-system")
    assert system["urn"] in order.waits_for(ns)
