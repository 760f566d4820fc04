"""The add-ons the HyperPod path installs after the training plan, checked before the plan is
bought or adopted (components/aws_eks/hyperpod/addon_check.py).

EKS is botocore's Stubber on the pinned EKS model (botocore 1.44.8): DescribeAddonVersions and
DescribeAddonConfiguration, each request's parameters and each canned answer validated against
it. The operator add-on's real schema could not be read here (no AWS account): the schema below
is a test double that lists the values AWS's setup page passes to the add-on
(https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-model-deployment-setup.html,
read 2026-12-02) and the `enabled` switches AWS's migration script sets; the hostile cases are
the schemas that would break kimi-k3's way of giving the roles (IRSA).
"""

import copy
import json

import boto3
import pytest
from botocore.stub import Stubber

from components.aws_eks.hyperpod import addon_check as ac
from components.aws_eks.hyperpod import catalog
from components.aws_eks.hyperpod import training_plan as tp

K8S = "1.34"
OBJ = "object"


def _obj(**props):
    return {"type": OBJ, "properties": props}


SCHEMA = _obj(
    executionRoleArn={"type": "string"}, tlsCertificateS3Bucket={"type": "string"},
    hyperpodClusterArn={"type": "string"}, jumpstartGatedModelDownloadRoleArn={"type": "string"},
    alb=_obj(enabled={"type": "boolean"}, serviceAccount=_obj(create={"type": "boolean"}, roleArn={"type": "string"})),
    keda=_obj(enabled={"type": "boolean"}, auth=_obj(aws=_obj(irsa=_obj(enabled={"type": "boolean"},
                                                                         roleArn={"type": "string"})))))


def eks_client():
    return boto3.client("eks", region_name="us-east-2", aws_access_key_id="testing", aws_secret_access_key="testing")


def versions_answer(addon, *versions):
    return {"addons": [{"addonName": addon, "addonVersions": [
        {"addonVersion": v, "compatibilities": [{"clusterVersion": K8S, "defaultVersion": i == 0}]}
        for i, v in enumerate(versions)]}]}


def expect_versions(stub, offered=None):
    for addon, version in catalog.ADDON_VERSIONS.items():
        stub.add_response("describe_addon_versions", versions_answer(addon, *(offered or {}).get(addon, [version])),
                          {"addonName": addon, "kubernetesVersion": K8S})


def expect_schema(stub, schema, pod_identity=()):
    answer = {"addonName": catalog.OPERATOR_ADDON, "addonVersion": catalog.ADDON_VERSIONS[catalog.OPERATOR_ADDON],
              "configurationSchema": json.dumps(schema)}
    if pod_identity:
        answer["podIdentityConfiguration"] = [{"serviceAccount": sa, "recommendedManagedPolicies": []}
                                              for sa in pod_identity]
    stub.add_response("describe_addon_configuration", answer,
                      {"addonName": catalog.OPERATOR_ADDON,
                       "addonVersion": catalog.ADDON_VERSIONS[catalog.OPERATOR_ADDON]})


def test_every_pin_offered_and_every_value_in_the_schema_passes_in_six_calls():
    eks = eks_client()
    with Stubber(eks) as stub:
        expect_versions(stub)
        expect_schema(stub, SCHEMA)
        assert ac.verify(eks, K8S, catalog.ADDON_VERSIONS) == []
        stub.assert_no_pending_responses()


def test_the_paths_checked_are_the_values_the_program_sets():
    assert ac.operator_paths() == sorted([
        ("alb", "enabled"), ("alb", "serviceAccount", "create"), ("alb", "serviceAccount", "roleArn"),
        ("executionRoleArn",), ("hyperpodClusterArn",), ("keda", "auth", "aws", "irsa", "enabled"),
        ("keda", "auth", "aws", "irsa", "roleArn"), ("keda", "enabled"), ("tlsCertificateS3Bucket",)])


def test_a_withdrawn_pin_is_refused_naming_what_eks_offers_and_the_schema_is_not_asked():
    eks = eks_client()
    with Stubber(eks) as stub:
        stub.add_response("describe_addon_versions",
                          versions_answer("aws-mountpoint-s3-csi-driver", "v1.15.0-eksbuild.1"),
                          {"addonName": "aws-mountpoint-s3-csi-driver", "kubernetesVersion": K8S})
        with pytest.raises(ac.AddonCheckError) as e:
            ac.verify(eks, K8S, catalog.ADDON_VERSIONS)
        stub.assert_no_pending_responses()
    msg = str(e.value)
    assert msg.startswith("kimi-k3:clusterVersion=1.34 ")
    assert "aws-mountpoint-s3-csi-driver" in msg and "['v1.15.0-eksbuild.1']" in msg and "v1.14.1-eksbuild.1" in msg
    assert "cannot be cancelled" in msg and "\n" not in msg


def test_versions_are_read_from_every_page():
    eks, addon = eks_client(), catalog.OPERATOR_ADDON
    with Stubber(eks) as stub:
        stub.add_response("describe_addon_versions", {**versions_answer(addon, "v1.1.0-eksbuild.1"), "nextToken": "t"},
                          {"addonName": addon, "kubernetesVersion": K8S})
        stub.add_response("describe_addon_versions", versions_answer(addon, "v1.0.0-eksbuild.1"),
                          {"addonName": addon, "kubernetesVersion": K8S, "nextToken": "t"})
        assert ac.offered_versions(eks, addon, K8S) == ["v1.1.0-eksbuild.1", "v1.0.0-eksbuild.1"]


def _without(path):
    schema = copy.deepcopy(SCHEMA)
    node = schema
    for key in path[:-1]:
        node = node["properties"][key]
    del node["properties"][path[-1]]
    return schema


@pytest.mark.parametrize("path, gap", [
    (("keda", "auth", "aws", "irsa"), "keda.auth.aws.irsa"),  # e.g. KEDA moved to Pod Identity
    (("alb", "serviceAccount", "roleArn"), "alb.serviceAccount.roleArn"),
    (("executionRoleArn",), "executionRoleArn"),
])
def test_a_schema_that_no_longer_takes_a_role_as_kimi_k3_gives_it_is_refused(path, gap):
    eks = eks_client()
    with Stubber(eks) as stub:
        expect_versions(stub)
        expect_schema(stub, _without(path))
        with pytest.raises(ac.AddonCheckError) as e:
            ac.verify(eks, K8S, catalog.ADDON_VERSIONS)
    msg = str(e.value)
    assert msg.startswith("kimi-k3:serving='hyperpod' ") and f"does not take {gap}," in msg
    assert ac.SETUP_PAGE in msg and "IRSA" in msg


def test_a_key_the_schema_requires_and_kimi_k3_does_not_set_is_refused():
    schema = {**SCHEMA, "required": ["executionRoleArn", "jumpstartGatedModelDownloadRoleArn"]}
    assert ac.schema_gaps(schema, ac.operator_paths()) == ["required jumpstartGatedModelDownloadRoleArn"]
    nested = copy.deepcopy(SCHEMA)
    nested["properties"]["keda"]["properties"]["auth"]["properties"]["aws"]["required"] = ["podIdentity"]
    assert ac.schema_gaps(nested, ac.operator_paths()) == ["required keda.auth.aws.podIdentity"]


def test_a_free_form_level_accepts_what_is_under_it():
    assert ac.schema_gaps({"type": OBJ, "properties": {"keda": {"type": OBJ}}}, [("keda", "auth", "x")]) == []


def test_an_unreadable_schema_is_refused():
    eks = eks_client()
    with Stubber(eks) as stub:
        expect_versions(stub)
        stub.add_response("describe_addon_configuration", {"addonName": catalog.OPERATOR_ADDON,
                                                           "configurationSchema": "not json"})
        with pytest.raises(ac.AddonCheckError, match="no readable configuration schema"):
            ac.verify(eks, K8S, catalog.ADDON_VERSIONS)


def test_pod_identity_offered_besides_irsa_is_reported_not_refused():
    eks = eks_client()
    with Stubber(eks) as stub:
        expect_versions(stub)
        expect_schema(stub, SCHEMA, pod_identity=("keda-operator",))
        notes = ac.verify(eks, K8S, catalog.ADDON_VERSIONS)
    assert len(notes) == 1 and "also offers EKS Pod Identity for keda-operator" in notes[0] and "IRSA" in notes[0]


def test_a_denied_call_is_one_line_naming_the_permission():
    eks = eks_client()
    with Stubber(eks) as stub:
        stub.add_client_error("describe_addon_versions", service_error_code="AccessDeniedException",
                              http_status_code=403)
        with pytest.raises(ac.AddonCheckError) as e:
            ac.verify(eks, K8S, catalog.ADDON_VERSIONS)
    assert "allow eks:DescribeAddonVersions" in str(e.value) and "\n" not in str(e.value)


# ---------------------------------------------------------------- before the purchase

BUY = {"region": "us-east-2", "instanceType": "ml.p6-b300.48xlarge", "instanceCount": 1, "durationHours": 24,
       "maxUpfrontFeeUsd": 100_000, "stackToken": "0" * 32, "stackName": "org/kimi-k3/aws-eks",
       "zones": ["us-east-2a"], "clusterVersion": K8S, "addons": dict(catalog.ADDON_VERSIONS)}


@pytest.mark.parametrize("mode", ["buy", "adopt"])
def test_the_provider_checks_before_any_sagemaker_call(monkeypatch, mode):
    """A withdrawn pin stops create before SageMaker is asked anything: the SageMaker stub has
    no answer queued, so any call would fail with the Stubber's own error, not this one."""
    props = dict(BUY) if mode == "buy" else {
        **BUY, "trainingPlanArn": "arn:aws:sagemaker:us-east-2:111122223333:training-plan/p"}
    eks, sm = eks_client(), boto3.client("sagemaker", region_name="us-east-2", aws_access_key_id="testing",
                                         aws_secret_access_key="testing")
    monkeypatch.setattr(tp.aws_api, "client", lambda service, props, **kw: {"eks": eks, "sagemaker": sm}[service])
    with Stubber(eks) as estub, Stubber(sm) as sstub:
        estub.add_response("describe_addon_versions", versions_answer("aws-mountpoint-s3-csi-driver"),
                           {"addonName": "aws-mountpoint-s3-csi-driver", "kubernetesVersion": K8S})
        with pytest.raises(ac.AddonCheckError, match="aws-mountpoint-s3-csi-driver for Kubernetes 1.34 in versions none"):
            tp.TrainingPlanProvider().create(props)
        sstub.assert_no_pending_responses()
