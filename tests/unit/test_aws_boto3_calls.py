"""Every AWS API call the aws-eks target makes, and the test that runs it against the pinned model.

`CALLS` is the table (service, operation as boto3 spells it) -> the test modules that drive the
product's code for it: through botocore's Stubber (`add_response`/`add_client_error` validate
our parameters and the answer against the pinned model), or, for S3, against moto's server
(botocore validates the parameters and parses the answer with the same model). Whichever the
double, tests/botocore_fields.py fails any test whose code reads a field the model's output
shape does not have.

The source scan finds every `<client>.<operation>` (called, or handed on as a method) and
`get_paginator("<operation>")` /
`_pages(s3, "<operation>")` in components/aws_eks: a call added without a row here, a row whose
call is gone, or a row whose test no longer stubs or serves it fails.
"""

from __future__ import annotations

import ast
import pathlib
import re

import botocore.session
import pytest
from botocore import xform_name

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "components" / "aws_eks"

#: the variable names the package gives its clients -> the service
RECEIVERS = {"ec2": "ec2", "eks": "eks", "asg": "autoscaling", "sm": "sagemaker", "elbv2": "elbv2",
             "elb": "elb", "s3": "s3"}
MOTO = "moto"  # served by moto's S3 server (tests/integration/local_s3.py)

CALLS = {
    ("ec2", "describe_capacity_block_offerings"): ["tests/unit/test_aws_capacity.py", "tests/unit/test_aws_purchase.py"],
    ("ec2", "describe_availability_zones"): ["tests/unit/test_aws_capacity.py"],
    ("ec2", "describe_capacity_reservations"): ["tests/unit/test_aws_adopt.py", "tests/unit/test_aws_capacity.py",
                                                "tests/unit/test_aws_purchase.py"],
    ("ec2", "purchase_capacity_block"): ["tests/unit/test_aws_purchase.py"],
    # the leftover check before the network goes (cleanup.py)
    ("ec2", "describe_network_interfaces"): ["tests/unit/test_aws_cleanup.py"],
    ("ec2", "describe_volumes"): ["tests/unit/test_aws_cleanup.py"],
    ("ec2", "describe_security_groups"): ["tests/unit/test_aws_cleanup.py"],
    ("elbv2", "describe_load_balancers"): ["tests/unit/test_aws_cleanup.py", "tests/unit/test_hyperpod_cluster.py"],
    ("elbv2", "describe_tags"): ["tests/unit/test_aws_cleanup.py", "tests/unit/test_hyperpod_cluster.py"],
    ("elb", "describe_load_balancers"): ["tests/unit/test_aws_cleanup.py", "tests/unit/test_hyperpod_cluster.py"],
    ("elb", "describe_tags"): ["tests/unit/test_aws_cleanup.py", "tests/unit/test_hyperpod_cluster.py"],
    ("eks", "list_nodegroups"): ["tests/unit/test_aws_roll_guard.py"],
    ("eks", "describe_nodegroup"): ["tests/unit/test_aws_roll_guard.py"],
    ("eks", "update_nodegroup_config"): ["tests/unit/test_aws_roll_guard.py"],
    ("eks", "describe_update"): ["tests/unit/test_aws_roll_guard.py"],
    ("autoscaling", "describe_auto_scaling_groups"): ["tests/unit/test_aws_roll_guard.py",
                                                      "tests/unit/test_aws_scaling.py"],
    ("autoscaling", "describe_scheduled_actions"): ["tests/unit/test_aws_scaling.py"],
    ("autoscaling", "delete_scheduled_action"): ["tests/unit/test_aws_scaling.py"],
    ("autoscaling", "put_scheduled_update_group_action"): ["tests/unit/test_aws_scaling.py"],
    ("autoscaling", "update_auto_scaling_group"): ["tests/unit/test_aws_scaling.py"],
    ("sagemaker", "search_training_plan_offerings"): ["tests/unit/test_hyperpod_training_plan.py"],
    ("sagemaker", "describe_training_plan"): ["tests/unit/test_hyperpod_training_plan.py"],
    ("sagemaker", "create_training_plan"): ["tests/unit/test_hyperpod_training_plan.py"],
    ("sagemaker", "describe_cluster"): ["tests/unit/test_hyperpod_cluster.py"],
    ("sagemaker", "list_cluster_nodes"): ["tests/unit/test_hyperpod_cluster.py"],
    ("eks", "describe_addon_versions"): ["tests/unit/test_hyperpod_addon_check.py"],
    ("eks", "describe_addon_configuration"): ["tests/unit/test_hyperpod_addon_check.py"],
    # the mirror Job (weights/mirror.py) and the gate's progress watch (weights/watch.py)
    ("s3", "list_objects_v2"): [MOTO, "tests/integration/test_weights_scripts.py",
                                "tests/integration/test_aws_mirror_progress.py"],
    ("s3", "list_multipart_uploads"): [MOTO, "tests/integration/test_aws_mirror_progress.py"],
    ("s3", "list_parts"): [MOTO, "tests/integration/test_aws_mirror_progress.py"],
    ("s3", "head_object"): [MOTO, "tests/integration/test_weights_scripts.py"],
    ("s3", "get_object"): [MOTO, "tests/integration/test_weights_scripts.py"],
    ("s3", "put_object"): [MOTO, "tests/integration/test_weights_scripts.py"],
    ("s3", "delete_object"): [MOTO, "tests/integration/test_weights_scripts.py"],
}


def _operations(service: str) -> dict:
    model = botocore.session.get_session().get_service_model(service)
    return {xform_name(o): o for o in model.operation_names}


def calls_in_source() -> set:
    """(service, operation) for every client call in the package (module docstring)."""
    found = set()
    ops = {svc: _operations(svc) for svc in set(RECEIVERS.values())}
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            # `ec2.describe_volumes(...)` and a method handed on uncalled (`_paged(ec2.describe_volumes, ...)`)
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                recv = node.value.id
                if recv in RECEIVERS and node.attr in ops[RECEIVERS[recv]]:
                    found.add((RECEIVERS[recv], node.attr))
            if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
                continue
            f = node.func
            recv = f.value.id if isinstance(f.value, ast.Name) else None
            if f.attr == "get_paginator" and recv in RECEIVERS and node.args and isinstance(node.args[0], ast.Constant):
                found.add((RECEIVERS[recv], node.args[0].value))
        for m in re.finditer(r"_pages\((\w+), \"(\w+)\"", path.read_text()):
            found.add((RECEIVERS[m.group(1)], m.group(2)))
    return found


def test_every_call_in_the_source_has_a_row_and_every_row_a_call():
    assert calls_in_source() == set(CALLS)


def test_the_scan_sees_every_client_the_package_makes():
    """A client under a variable name the scan does not know would hide its calls."""
    services = set()
    for path in PACKAGE.rglob("*.py"):
        services |= set(re.findall(r"client\(\"([a-z0-9-]+)\"", path.read_text()))
    assert services - {"sts"} <= set(RECEIVERS.values())  # sts: only presigned (kube_api.eks_token)
    unknown = []
    for path in PACKAGE.rglob("*.py"):
        for m in re.finditer(r"(\w+) = (?:aws_api\.client|ec2_client|sagemaker|s3_client|session\.client)\(",
                             path.read_text()):
            if m.group(1) not in RECEIVERS and m.group(1) not in ("sess", "sts"):
                unknown.append((path.name, m.group(1)))
    assert not unknown


@pytest.mark.parametrize("call", sorted(CALLS), ids=lambda c: f"{c[0]}.{c[1]}")
def test_each_call_is_an_operation_of_the_pinned_model_and_its_test_drives_it(call):
    service, op = call
    assert op in _operations(service), f"{service}.{op} is not in the pinned botocore model"
    tests = CALLS[call]
    if tests[0] == MOTO:
        for t in tests[1:]:
            text = (ROOT / t).read_text()
            assert "local_s3" in text or "moto" in text, t
        return
    stubbed = re.compile(rf"add_(?:response|client_error)\(\s*[\"']{op}[\"']")
    for t in tests:
        assert stubbed.search((ROOT / t).read_text()), f"{t} does not stub {op}"


def test_a_misread_field_is_caught():
    """The field check of tests/botocore_fields.py is live in this process."""
    import boto3
    from botocore.stub import Stubber

    from tests import botocore_fields

    sm = boto3.client("sagemaker", region_name="us-east-2", aws_access_key_id="x", aws_secret_access_key="y")
    with Stubber(sm) as stub:
        stub.add_response("describe_cluster", {"ClusterArn": "arn:aws:sagemaker:us-east-2:1:cluster/abc",
                                               "ClusterStatus": "InService", "InstanceGroups": []})
        d = sm.describe_cluster(ClusterName="c")
    assert d.get("ClusterStatus") == "InService"
    with pytest.raises(botocore_fields.UnmodeledField, match="DescribeClusterResponse.Status"):
        d.get("Status")
    assert botocore_fields.take() == ["DescribeCluster: DescribeClusterResponse.Status"]
