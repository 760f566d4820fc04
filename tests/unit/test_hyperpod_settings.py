"""The end-to-end HyperPod path's keys: every guard with its hostile input, one line each, before
anything is created (components/aws_eks/hyperpod/settings.py, config.py)."""

import pytest

from components.aws_eks import config as aws
from components.aws_eks.hyperpod import catalog
from components.aws_eks.hyperpod import settings as hps
from components.config.shared import parse_settings
from components.inference.errors import ConfigError

KEY = "kk3-hyperpod-key-0123456789abcdefghij"
ARN = "arn:aws:sagemaker:us-east-2:111122223333:training-plan/my-plan"


def cfg(**kw):
    raw = {"target": "aws-eks", "serving": "hyperpod", "apiKey": KEY, **kw}
    return aws.parse(parse_settings(raw, "aws-eks"))


def refusal(**kw) -> str:
    with pytest.raises(ConfigError) as e:
        cfg(**kw)
    text = str(e.value)
    assert "\n" not in text
    return text


def test_without_a_cluster_name_the_stack_builds_the_hyperpod_cluster():
    c = cfg()
    assert c.hyperpod_end_to_end and c.applies_kubernetes_objects
    assert c.hyperpod.plan.instance_type == "ml.p6-b300.48xlarge" and c.hyperpod.plan.instance_count == 1
    assert c.hyperpod.plan.max_upfront_fee_usd == 0 and not c.hyperpod.plan.adopt
    assert c.cluster_version == catalog.DEFAULT_K8S_VERSION
    existing = cfg(hyperpodClusterName="hp-eks")
    assert not existing.hyperpod_end_to_end and existing.hyperpod is None


def test_adopt_and_buy():
    assert cfg(trainingPlanArn=ARN).hyperpod.plan.arn == ARN
    c = cfg(maxUpfrontFeeUsd="150000", capacityInstanceCount="2", replicas="2", capacityDurationHours="48",
            capacityEarliestStart="2026-12-05T00:00:00Z", capacityLatestStart="2026-12-06")
    p = c.hyperpod.plan
    assert (p.max_upfront_fee_usd, p.instance_count, p.duration_hours) == (150000, 2, 48)
    assert (p.earliest_start, p.latest_start) == ("2026-12-05T00:00:00Z", "2026-12-06T00:00:00Z")


@pytest.mark.parametrize("kw, start", [
    ({"apiKey": None}, "kimi-k3:apiKey (not set) is needed by the HyperPod cluster this stack builds"),
    ({"trainingPlanArn": "arn:aws:sagemaker:us-east-2:111122223333:cluster/abc"},
     "kimi-k3:trainingPlanArn='arn:aws:sagemaker:us-east-2:111122223333:cluster/abc' is not a SageMaker training plan ARN"),
    ({"trainingPlanArn": ARN + "\n--evil"}, "kimi-k3:trainingPlanArn="),
    ({"trainingPlanArn": "arn:aws:sagemaker:us-east-2:1111:training-plan/x"}, "kimi-k3:trainingPlanArn="),
    ({"trainingPlanArn": ARN, "maxUpfrontFeeUsd": "10"}, "kimi-k3:trainingPlanArn="),
    ({"maxUpfrontFeeUsd": "-1"}, "kimi-k3:maxUpfrontFeeUsd=-1 is negative"),
    ({"maxUpfrontFeeUsd": "lots"}, "kimi-k3:maxUpfrontFeeUsd='lots'"),
    ({"maxUpfrontFeeUsd": "inf"}, "kimi-k3:maxUpfrontFeeUsd='inf'"),
    ({"capacityInstanceCount": "1", "replicas": "2"}, "kimi-k3:capacityInstanceCount=1 is fewer than kimi-k3:replicas"),
    ({"capacityInstanceCount": "257"}, "kimi-k3:capacityInstanceCount=257"),
    ({"capacityDurationHours": "0"}, "kimi-k3:capacityDurationHours=0"),
    ({"capacityDurationHours": "87601"}, "kimi-k3:capacityDurationHours=87601"),
    ({"capacityEarliestStart": "tomorrow"}, "kimi-k3:capacityEarliestStart='tomorrow' is not a time"),
    ({"capacityEarliestStart": "2026-12-06T00:00:00Z", "capacityLatestStart": "2026-12-05T00:00:00Z"},
     "kimi-k3:capacityLatestStart='2026-12-05T00:00:00Z' is before the earliest start"),
    ({"clusterVersion": "1.35"}, "kimi-k3:clusterVersion=1.35 is not a Kubernetes version SageMaker HyperPod documents"),
    ({"clusterVersion": "1.34; rm -rf /"}, "kimi-k3:clusterVersion='1.34; rm -rf /' is not a Kubernetes version"),
    ({"capacityReservationId": "cr-0123456789abcdef0"}, "kimi-k3:capacityReservationId='cr-0123456789abcdef0' does not apply"),
    ({"capacityAllowLocalZones": "true"}, "kimi-k3:capacityAllowLocalZones='true' does not apply"),
    ({"rootVolumeGib": "500"}, "kimi-k3:rootVolumeGib=500 does not apply"),
    ({"nodes": "2"}, "kimi-k3:nodes=2 is more than HyperPod's one node per replica"),
    ({"allowedCidrs": "203.0.113.0/24"}, "kimi-k3:allowedCidrs='203.0.113.0/24' does not apply"),
    ({"weightsSource": "mirror"}, "kimi-k3:weightsSource='mirror' is not wired"),
])
def test_hostile_and_wrong_values_are_refused_in_one_line(kw, start):
    kw = {k: v for k, v in kw.items()}
    if kw.get("apiKey", "") is None:
        kw.pop("apiKey")
        raw = {"target": "aws-eks", "serving": "hyperpod"}
        with pytest.raises(ConfigError) as e:
            aws.parse(parse_settings(raw, "aws-eks"))
        assert str(e.value).startswith(start) and "\n" not in str(e.value)
        return
    assert refusal(**kw).startswith(start)


def test_the_existing_cluster_mode_refuses_the_end_to_end_keys():
    text = refusal(hyperpodClusterName="hp-eks", trainingPlanArn=ARN)
    assert text.startswith(f"kimi-k3:trainingPlanArn={ARN!r} does not apply with kimi-k3:hyperpodClusterName")
    with pytest.raises(ConfigError, match="does not apply to kimi-k3:serving=eks"):
        aws.parse(parse_settings({"target": "aws-eks", "trainingPlanArn": ARN}, "aws-eks"))


def test_an_accelerator_hyperpod_does_not_offer_is_refused():
    with pytest.raises(ConfigError) as e:
        hps.instance_type("p4d.24xlarge")
    assert str(e.value).startswith("kimi-k3:accelerator='p4d.24xlarge' is not a SageMaker HyperPod instance type")


@pytest.mark.parametrize("arn, region, ok", [
    (ARN, "us-east-2", True), (ARN, "us-west-2", False),
    ("arn:aws:sagemaker::111122223333:training-plan/x", "us-east-2", False), (None, "us-east-2", True)])
def test_an_adopted_plan_must_be_in_the_stacks_region(arn, region, ok):
    if ok:
        hps.check_region(arn, region)
        return
    with pytest.raises(ConfigError) as e:
        hps.check_region(arn, region)
    assert f"not in aws:region ({region})" in str(e.value)


def test_the_instance_table_matches_the_pinned_sagemaker_model():
    import botocore.session

    m = botocore.session.get_session().get_service_model("sagemaker")
    cluster_types = set(m.shape_for("ClusterInstanceType").enum)
    plan_types = set(m.shape_for("ReservedCapacityInstanceType").enum)
    for ec2_type, ml_type in catalog.INSTANCE_TYPES.items():
        assert ml_type == f"ml.{ec2_type}" and ml_type in cluster_types and ml_type in plan_types
    from components.aws_eks.config import SERVING_MODES  # noqa: F401  (the registry offers these)
    from components.inference.catalog import DEFAULT_SHAPE_FOR_ACCELERATOR
    from components.program.registry import REGISTRY

    for acc in REGISTRY["aws-eks"].accelerators:
        assert DEFAULT_SHAPE_FOR_ACCELERATOR[acc] in catalog.INSTANCE_TYPES, acc


def test_the_arn_pattern_is_the_models():
    import botocore.session

    m = botocore.session.get_session().get_service_model("sagemaker")
    assert m.shape_for("TrainingPlanArn").metadata["pattern"] == hps.TRAINING_PLAN_ARN.pattern.replace(
        "([a-z0-9\\-]*)", "[a-z0-9\\-]*").replace("([0-9]{12})", "[0-9]{12}").replace("(.+)", ".*")


CERT = "arn:aws:acm:us-east-2:111122223333:certificate/0123abcd-0123-abcd-0123-0123456789ab"


@pytest.mark.parametrize("kw, start", [
    ({"tlsDomain": "k3.example.com"}, "kimi-k3:tlsCertificateArn (not set) is needed"),
    ({"tlsHostedZoneId": "Z0123456789ABCDEFGHIJ"}, "kimi-k3:tlsCertificateArn (not set) is needed"),
    ({"tlsCertificateArn": CERT}, "kimi-k3:tlsDomain (not set) is needed"),
    ({"tlsDomain": "k3.example.com", "tlsCertificateArn": "arn:aws:iam::111122223333:server-certificate/x"},
     "kimi-k3:tlsCertificateArn='arn:aws:iam::111122223333:server-certificate/x' is not an ACM certificate ARN"),
    ({"tlsDomain": "*.example.com", "tlsCertificateArn": CERT}, "kimi-k3:tlsDomain="),
])
def test_your_certificate_is_acm_and_named(kw, start):
    assert refusal(**kw).startswith(start)


def test_your_certificate_reaches_the_config():
    c = cfg(tlsDomain="k3.example.com", tlsCertificateArn=CERT, tlsHostedZoneId="Z0123456789ABCDEFGHIJ")
    assert c.hyperpod.tls == hps.HyperPodTls("k3.example.com", CERT, "Z0123456789ABCDEFGHIJ")
    assert cfg().hyperpod.tls is None


def test_the_buying_notice_says_list_and_stop_without_a_plan_or_a_cap():
    """Neither kimi-k3:trainingPlanArn nor kimi-k3:maxUpfrontFeeUsd: `pulumi up` lists the
    offerings and stops, and the offline plan's stand-in plan is said to be one (it printed "buy
    the cheapest ... at most $0.00" next to a stand-in plan that looked bought)."""
    listing = cfg().hyperpod.plan
    assert listing.lists_only
    text = listing.buying_notice()
    assert "lists the matching training plan offerings" in text and "stops before anything is created" in text
    assert "stand-in plan" in text and "$0.00" not in text
    capped = cfg(maxUpfrontFeeUsd="1500").hyperpod.plan
    assert not capped.lists_only and "at most $1,500.00" in capped.buying_notice()
    assert not cfg(trainingPlanArn=ARN).hyperpod.plan.lists_only
