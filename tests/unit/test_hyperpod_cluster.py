"""The HyperPod cluster's and the operator's inputs against the pinned SDK models (botocore 1.44.8:
SageMaker CreateCluster, EKS CreateAddon, IAM), and the destroy proofs through botocore's
Stubber (SageMaker DescribeCluster/ListClusterNodes, ELBv2/ELB listings)."""

import json
from datetime import datetime, timezone

import boto3
import botocore.session
import pytest
from botocore.stub import Stubber
from botocore.validate import ParamValidator

from components.aws_eks.addons import GPU_NODE_LABELS
from components.aws_eks.hyperpod import catalog
from components.aws_eks.hyperpod import cluster as hpc
from components.aws_eks.hyperpod import operator as op
from components.aws_eks.hyperpod import proof

SESSION = botocore.session.get_session()
ROLE = "arn:aws:iam::111122223333:role/kimi-k3-hyperpod-node"
PLAN = "arn:aws:sagemaker:us-east-2:111122223333:training-plan/kimi-k3-abc-1"
EKS = "arn:aws:eks:us-east-2:111122223333:cluster/kimi-k3-aws-eks"
OIDC = "arn:aws:iam::111122223333:oidc-provider/oidc.eks.us-east-2.amazonaws.com/id/ABC"
ISSUER = "https://oidc.eks.us-east-2.amazonaws.com/id/ABC"


def validate(service: str, operation: str, params) -> None:
    shape = SESSION.get_service_model(service).operation_model(operation).input_shape
    report = ParamValidator().validate(params, shape)
    assert not report.has_errors(), report.generate_report()


def args():
    group = hpc.instance_group("ml.p6-b300.48xlarge", 2, ROLE, PLAN, GPU_NODE_LABELS)
    return hpc.cluster_args(hpc.cluster_name("aws-eks"), EKS, "subnet-0123456789abcdef0", "sg-0123456789abcdef0",
                            group, {"kimi-k3:stack-name": "org/kimi-k3/aws-eks"})


def test_the_cluster_is_a_valid_create_cluster_request():
    req = hpc.as_create_cluster(args())
    validate("sagemaker", "CreateCluster", req)
    g = req["InstanceGroups"][0]
    assert g["TrainingPlanArn"] == PLAN and g["InstanceType"] == "ml.p6-b300.48xlarge" and g["InstanceCount"] == 2
    assert g["KubernetesConfig"] == {"Labels": dict(GPU_NODE_LABELS)} and "LifeCycleConfig" not in g
    assert req["Orchestrator"] == {"Eks": {"ClusterArn": EKS}} and req["NodeRecovery"] == "Automatic"
    assert req["VpcConfig"] == {"SecurityGroupIds": ["sg-0123456789abcdef0"], "Subnets": ["subnet-0123456789abcdef0"]}


def test_the_aws_native_inputs_are_the_sdks_types():
    """The same dict builds pulumi-aws-native's typed args (unknown keys would raise TypeError)."""
    from pulumi_aws_native.sagemaker import ClusterInstanceGroupArgs, ClusterVpcConfigArgs

    a = args()
    group = dict(a["instance_groups"][0])
    ClusterInstanceGroupArgs(**group)
    ClusterVpcConfigArgs(**a["vpc_config"])


@pytest.mark.parametrize("stack, name", [
    ("aws-eks", "kimi-k3-aws-eks"), ("my_stack.prod", "kimi-k3-my-stack-prod"), ("---", "kimi-k3"),
    ("x" * 100, "kimi-k3-" + "x" * 55), ("ünï/côdé", "kimi-k3-n-c-d")])
def test_hostile_stack_names_give_a_valid_cluster_name(stack, name):
    got = hpc.cluster_name(stack)
    assert got == name
    validate("sagemaker", "DescribeCluster", {"ClusterName": got})
    import re

    assert re.fullmatch(SESSION.get_service_model("sagemaker").shape_for("ClusterName").metadata["pattern"], got)


def test_the_node_role_is_what_sagemaker_assumes_and_nothing_more():
    trust = json.loads(hpc.trust_policy())
    assert trust["Statement"] == [{"Effect": "Allow", "Principal": {"Service": "sagemaker.amazonaws.com"},
                                   "Action": "sts:AssumeRole"}]
    assert hpc.managed_policies()[0] == catalog.INSTANCE_ROLE_POLICY
    vpc = json.loads(hpc.vpc_policy())["Statement"][0]
    assert all(a.startswith("ec2:") and ("Describe" in a or "NetworkInterfacePermission" in a) for a in vpc["Action"])


# ---------------------------------------------------------------- the operator add-on

def test_the_addons_are_valid_create_addon_requests_in_the_scripts_order():
    config = op.addon_configuration("arn:aws:iam::111122223333:role/SageMakerHyperPodInference-x", "kimi-k3-tls-1",
                                    "arn:aws:sagemaker:us-east-2:111122223333:cluster/abc", "arn:alb", "arn:keda")
    for name in (*catalog.DEPENDENCY_ADDONS, catalog.OPERATOR_ADDON):
        a = op.addon_args(name)
        req = {"clusterName": "kimi-k3-aws-eks", "addonName": a["addon_name"], "addonVersion": a["addon_version"],
               "resolveConflicts": a["resolve_conflicts_on_create"]}
        if name == catalog.OPERATOR_ADDON:
            req["configurationValues"] = config
        validate("eks", "CreateAddon", req)
    assert list(catalog.ADDON_VERSIONS)[-1] == catalog.OPERATOR_ADDON  # dependencies first
    d = json.loads(config)
    assert set(d) == {"executionRoleArn", "tlsCertificateS3Bucket", "hyperpodClusterArn", "alb", "keda"}
    assert d["alb"] == {"enabled": True, "serviceAccount": {"create": True, "roleArn": "arn:alb"}}
    assert d["keda"]["auth"]["aws"]["irsa"] == {"enabled": True, "roleArn": "arn:keda"}


def test_each_operator_role_trusts_exactly_its_service_account():
    # the trust policies of AWS's setup page (operator.py): the execution role also trusts SageMaker;
    # the ALB controller's and KEDA's trust only their service account
    assert dict(op.TRUSTED_SERVICES) == {"execution": "sagemaker.amazonaws.com", "alb": None, "keda": None}
    for key, account in op.role_subjects().items():
        doc = json.loads(op.irsa_trust(OIDC, ISSUER, catalog.OPERATOR_NAMESPACE, account, op.TRUSTED_SERVICES[key]))
        web = doc["Statement"][-1]
        assert web["Principal"] == {"Federated": OIDC} and web["Action"] == "sts:AssumeRoleWithWebIdentity"
        assert web["Condition"]["StringEquals"] == {
            "oidc.eks.us-east-2.amazonaws.com/id/ABC:aud": "sts.amazonaws.com",
            "oidc.eks.us-east-2.amazonaws.com/id/ABC:sub":
                f"system:serviceaccount:{catalog.OPERATOR_NAMESPACE}:{account}"}
        assert len(doc["Statement"]) == (2 if key == "execution" else 1)
        if key == "execution":
            assert doc["Statement"][0] == {"Effect": "Allow", "Principal": {"Service": "sagemaker.amazonaws.com"},
                                           "Action": "sts:AssumeRole"}


def test_the_execution_role_may_touch_only_objects_of_the_tls_bucket_and_tag_certificates():
    doc = json.loads(op.tls_bucket_policy("kimi-k3-tls-abc"))
    acm = [s for s in doc["Statement"] if any(a.startswith("acm:") for a in s["Action"])]
    # operator 3.0's release notes: tagging the certificates it imports, and nothing more on ACM
    assert acm == [{"Sid": "CertificateTaggingPermission", "Effect": "Allow", "Action": ["acm:AddTagsToCertificate"],
                    "Resource": "arn:aws:acm:*:*:certificate/*"}]
    for s in doc["Statement"]:
        if s in acm:
            continue
        assert s["Resource"] == ["arn:aws:s3:::kimi-k3-tls-abc/*"]
        assert all(a.startswith("s3:") and "Bucket" not in a for a in s["Action"])
    writes = [s for s in doc["Statement"] if set(s["Action"]) & {"s3:PutObject", "s3:DeleteObject"}]
    assert all(s["Condition"] == {"StringEquals": {"aws:ResourceAccount": "${aws:PrincipalAccount}"}} for s in writes)


def test_the_alb_controller_policy_is_the_published_one_and_fits_a_managed_policy():
    doc = json.loads(op.alb_policy())
    assert doc["Version"] == "2012-10-17" and len(doc["Statement"]) == 16
    # IAM: a managed policy document is at most 6,144 characters, whitespace not counted
    assert len("".join(op.alb_policy().split())) <= 6144


# ---------------------------------------------------------------- destroy proofs (Stubber)

def client(service):
    return boto3.client(service, region_name="us-east-2", aws_access_key_id="testing",
                        aws_secret_access_key="testing")


def test_a_deleted_cluster_is_proven_gone_in_one_call():
    sm = client("sagemaker")
    with Stubber(sm) as stub:
        stub.add_client_error("describe_cluster", service_error_code="ResourceNotFound", http_status_code=400,
                              expected_params={"ClusterName": "kimi-k3-aws-eks"})
        assert proof.cluster_left(sm, "kimi-k3-aws-eks") == []
        stub.assert_no_pending_responses()


def test_a_cluster_still_there_names_every_node_it_still_lists():
    sm = client("sagemaker")
    t = datetime(2026, 12, 2, tzinfo=timezone.utc)
    node = {"InstanceGroupName": "serving", "InstanceType": "ml.p6-b300.48xlarge", "LaunchTime": t,
            "InstanceStatus": {"Status": "ShuttingDown"}}
    with Stubber(sm) as stub:
        stub.add_response("describe_cluster", {"ClusterArn": "arn:aws:sagemaker:us-east-2:111122223333:cluster/abc",
                                               "ClusterStatus": "Deleting", "InstanceGroups": []},
                          {"ClusterName": "c"})
        stub.add_response("list_cluster_nodes", {"ClusterNodeSummaries": [{**node, "InstanceId": "i-0a"}],
                                                 "NextToken": "n2"}, {"ClusterName": "c"})
        stub.add_response("list_cluster_nodes", {"ClusterNodeSummaries": [{**node, "InstanceId": "i-0b"}]},
                          {"ClusterName": "c", "NextToken": "n2"})
        left = proof.cluster_left(sm, "c")
        stub.assert_no_pending_responses()
    assert [x.text() for x in left] == ["HyperPod cluster c (Deleting)",
                                        "HyperPod node i-0a (ml.p6-b300.48xlarge, ShuttingDown)",
                                        "HyperPod node i-0b (ml.p6-b300.48xlarge, ShuttingDown)"]


def test_only_the_controllers_load_balancers_of_this_cluster_count():
    elbv2, elb = client("elbv2"), client("elb")
    lbs = [{"LoadBalancerArn": f"arn:aws:elasticloadbalancing:us-east-2:111122223333:loadbalancer/app/{n}/1",
            "LoadBalancerName": n} for n in ("ours", "other", "plain")]
    tags = [{"ResourceArn": lbs[0]["LoadBalancerArn"], "Tags": [{"Key": "elbv2.k8s.aws/cluster", "Value": "kimi-k3-aws-eks"},
                                                                 {"Key": "ingress.k8s.aws/stack", "Value": "kimi-k3/kimik3"}]},
            {"ResourceArn": lbs[1]["LoadBalancerArn"], "Tags": [{"Key": "elbv2.k8s.aws/cluster", "Value": "someone-else"}]},
            {"ResourceArn": lbs[2]["LoadBalancerArn"], "Tags": [{"Key": "Name", "Value": "plain"}]}]
    with Stubber(elbv2) as s2, Stubber(elb) as s1:
        s2.add_response("describe_load_balancers", {"LoadBalancers": lbs}, {})
        s2.add_response("describe_tags", {"TagDescriptions": tags}, {"ResourceArns": [lb["LoadBalancerArn"] for lb in lbs]})
        s1.add_response("describe_load_balancers", {"LoadBalancerDescriptions": []}, {})
        left = proof.operator_load_balancers(elbv2, elb, "kimi-k3-aws-eks")
        s2.assert_no_pending_responses()
    assert [(x.id.rsplit("/", 2)[-2], x.detail) for x in left] == [("ours", "kimi-k3/kimik3")]


def test_the_proofs_fail_the_destroy_naming_what_is_left(monkeypatch, tmp_path):
    class Phase:
        def __init__(self):
            self.seen = []

        def update(self, text):
            self.seen.append(text)

    from components.aws_eks.cleanup import Leftover, wait_until_empty

    clock = iter(range(0, 10_000, 10))
    left = wait_until_empty(lambda: [Leftover("HyperPod node", "i-0a", "Running")], 30, Phase(),
                            clock=lambda: next(clock), sleep=lambda s: None, poll_s=10)
    assert [x.id for x in left] == ["i-0a"]
    p = proof.HyperPodGoneProvider()
    monkeypatch.setattr(proof, "cluster_left", lambda sm, name: [Leftover("HyperPod node", "i-0a", "Running")])
    monkeypatch.setattr(proof.aws_api, "client", lambda *a, **k: None)
    with pytest.raises(RuntimeError) as e:
        p.delete("hyperpod-gone/c", {"clusterName": "c", "region": "us-east-2", "waitS": 0.01, "pollS": 0.01})
    assert "HyperPod cluster c is still there" in str(e.value) and "HyperPod node i-0a (Running)" in str(e.value)
    assert "aws sagemaker delete-cluster --cluster-name c" in str(e.value)


def _lb_round(s2, s1, ours: bool):
    """One listing of both ELB APIs: the operator's ALB of this cluster, or nothing."""
    arn = "arn:aws:elasticloadbalancing:us-east-2:111122223333:loadbalancer/app/k8s-kimik3/1"
    lbs = [{"LoadBalancerArn": arn, "LoadBalancerName": "k8s-kimik3"}] if ours else []
    s2.add_response("describe_load_balancers", {"LoadBalancers": lbs}, {})
    if ours:
        s2.add_response("describe_tags", {"TagDescriptions": [{"ResourceArn": arn, "Tags": [
            {"Key": "elbv2.k8s.aws/cluster", "Value": "kimi-k3-aws-eks"}]}]}, {"ResourceArns": [arn]})
    s1.add_response("describe_load_balancers", {"LoadBalancerDescriptions": []}, {})


def test_destroy_waits_for_the_cluster_and_its_nodes_to_be_gone_then_passes(monkeypatch):
    """The whole HyperPodGone delete through Stubber: still Deleting with a node listed, then
    SageMaker no longer knows the cluster: the destroy goes on."""
    sm = client("sagemaker")
    monkeypatch.setattr(proof.aws_api, "client", lambda service, *a, **k: {"sagemaker": sm}[service])
    with Stubber(sm) as stub:
        stub.add_response("describe_cluster", {"ClusterArn": "arn:aws:sagemaker:us-east-2:111122223333:cluster/abc",
                                               "ClusterStatus": "Deleting", "InstanceGroups": []}, {"ClusterName": "c"})
        stub.add_response("list_cluster_nodes", {"ClusterNodeSummaries": [
            {"InstanceGroupName": "serving", "InstanceId": "i-0a", "InstanceType": "ml.p6-b300.48xlarge",
             "LaunchTime": datetime(2026, 12, 2, tzinfo=timezone.utc), "InstanceStatus": {"Status": "ShuttingDown"}}]},
            {"ClusterName": "c"})
        stub.add_client_error("describe_cluster", service_error_code="ResourceNotFound", http_status_code=400,
                              expected_params={"ClusterName": "c"})
        proof.HyperPodGoneProvider().delete("hyperpod-gone/c", {"clusterName": "c", "region": "us-east-2",
                                                                 "waitS": 5, "pollS": 0.001})
        stub.assert_no_pending_responses()


def test_a_sagemaker_error_other_than_not_found_is_not_taken_for_gone():
    sm = client("sagemaker")
    with Stubber(sm) as stub:
        stub.add_client_error("describe_cluster", service_error_code="AccessDeniedException", http_status_code=400)
        with pytest.raises(Exception, match="AccessDenied"):
            proof.cluster_left(sm, "c")


def test_destroy_waits_for_the_operators_load_balancer_then_passes_or_names_it(monkeypatch):
    elbv2, elb = client("elbv2"), client("elb")
    monkeypatch.setattr(proof.OperatorLoadBalancersGoneProvider, "clients",
                        staticmethod(lambda p: {"elbv2": elbv2, "elb": elb}))
    p = {"clusterName": "kimi-k3-aws-eks", "region": "us-east-2", "waitS": 5, "pollS": 0.001}
    with Stubber(elbv2) as s2, Stubber(elb) as s1:
        _lb_round(s2, s1, ours=True)
        _lb_round(s2, s1, ours=False)
        proof.OperatorLoadBalancersGoneProvider().delete("operator-lbs-gone/kimi-k3-aws-eks", p)
        s2.assert_no_pending_responses()
    with Stubber(elbv2) as s2, Stubber(elb) as s1:
        for _ in range(3):
            _lb_round(s2, s1, ours=True)
        with pytest.raises(RuntimeError) as e:
            proof.OperatorLoadBalancersGoneProvider().delete("operator-lbs-gone/kimi-k3-aws-eks",
                                                             {**p, "waitS": 0.0015})
    assert "load balancer is still there" in str(e.value) and "k8s-kimik3" in str(e.value)
    assert "the operator and the network cannot go before it" in str(e.value)


def test_the_gate_reads_the_load_balancers_scheme_by_its_dns_name_across_pages(monkeypatch):
    """hyperpod/readiness.py HyperPodCluster.scheme: DescribeLoadBalancers, every page."""
    from components.aws_eks.hyperpod import readiness as hr

    elbv2 = client("elbv2")
    monkeypatch.setattr(hr.aws_api, "client", lambda service, *a, **k: {"elbv2": elbv2}[service])
    cluster = object.__new__(hr.HyperPodCluster)
    cluster.props = {"region": "us-east-2"}

    def lb(name, dns, scheme):
        return {"LoadBalancerArn": f"arn:aws:elasticloadbalancing:us-east-2:1:loadbalancer/app/{name}/1",
                "LoadBalancerName": name, "DNSName": dns, "Scheme": scheme}

    host = "k8s-kimik3-abc.us-east-2.elb.amazonaws.com"
    with Stubber(elbv2) as stub:
        stub.add_response("describe_load_balancers", {"LoadBalancers": [lb("other", "x.elb.amazonaws.com", "internal")],
                                                      "NextMarker": "m2"}, {})
        stub.add_response("describe_load_balancers", {"LoadBalancers": [lb("ours", host.upper(), "internet-facing")]},
                          {"Marker": "m2"})
        assert cluster.scheme(host) == "internet-facing"
        stub.add_response("describe_load_balancers", {"LoadBalancers": []}, {})
        assert cluster.scheme(host) is None
        stub.assert_no_pending_responses()


def test_the_pod_identity_agent_is_a_valid_create_addon_request():
    """Declared for the weights path and for AMP remote write (cluster.py)."""
    from components.aws_eks.cluster import POD_IDENTITY_AGENT

    validate("eks", "CreateAddon", {"clusterName": "kimi-k3-aws-eks", "addonName": POD_IDENTITY_AGENT["addon_name"],
                                    "configurationValues": POD_IDENTITY_AGENT["configuration_values"]})
    assert json.loads(POD_IDENTITY_AGENT["configuration_values"]) == {"tolerations": [{"operator": "Exists"}]}


def test_destroy_after_a_failed_create_names_the_failed_cluster_at_once(monkeypatch):
    """A create that failed leaves the cluster (status Failed) outside the stack's state: nothing
    deletes it, so the proof fails on its first look, naming it and the command, instead of
    waiting its hour. One answer is queued: a second look would be the Stubber's error, not this."""
    sm = client("sagemaker")
    monkeypatch.setattr(proof.aws_api, "client", lambda service, *a, **k: {"sagemaker": sm}[service])
    with Stubber(sm) as stub:
        stub.add_response("describe_cluster", {"ClusterArn": "arn:aws:sagemaker:us-east-2:111122223333:cluster/abc",
                                               "ClusterStatus": "Failed", "InstanceGroups": [],
                                               "FailureMessage": "InsufficientCapacity"}, {"ClusterName": "c"})
        stub.add_response("list_cluster_nodes", {"ClusterNodeSummaries": []}, {"ClusterName": "c"})
        with pytest.raises(RuntimeError) as e:
            proof.HyperPodGoneProvider().delete("hyperpod-gone/c", {"clusterName": "c", "region": "us-east-2",
                                                                     "waitS": 5, "pollS": 0.001})
        stub.assert_no_pending_responses()
    msg = str(e.value)
    assert "HyperPod cluster c is in SageMaker with status Failed" in msg and "not in the stack's state" in msg
    assert "aws sagemaker delete-cluster --cluster-name c" in msg and "\n" not in msg
