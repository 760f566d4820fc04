"""aws-eks keys added since the first behaviour tests, at their edges, with the exact line a user
reads: the namespace the stack declares (and deletes on destroy) must be its own; HyperPod has no
acceptance gate to size; start times are UTC whatever the deployer's machine says.

Kubernetes facts: `default` and `kube-*` namespaces exist in every cluster; the add-ons' Helm
releases own theirs (components/aws_eks/addons.py: kube-system, lws-system).
"""

from __future__ import annotations


import pytest

from components.aws_eks import config as c
from components.inference.errors import ConfigError
from components.config.shared import parse_settings

FIX = "use a namespace of the stack's own, such as kimi-k3 (the default): unset kimi-k3:namespace"
TAIL = "; the stack would declare it as its own and delete it on destroy; " + FIX


def parse(**kw):
    return c.parse(parse_settings({"target": "aws-eks", **kw}, "aws-eks"))


@pytest.mark.parametrize("ns", ["default", "kube-system", "kube-public", "kube-node-lease", "kube-x"])
def test_the_clusters_own_namespaces_are_refused(ns):
    with pytest.raises(ConfigError) as e:
        parse(namespace=ns)
    assert str(e.value) == f"kimi-k3:namespace={ns!r} is a namespace of the cluster's own (default, kube-*)" + TAIL


@pytest.mark.parametrize("nodes", ["1", "2"])
def test_the_add_ons_namespace_is_refused_on_any_layout(nodes):
    with pytest.raises(ConfigError) as e:
        parse(namespace="lws-system", nodes=nodes)
    assert str(e.value) == "kimi-k3:namespace='lws-system' is the namespace of the add-ons' Helm release" + TAIL


@pytest.mark.parametrize("ns", ["kimi-k3", "kubeflow", "kube", "k3-default", "lws"])
def test_other_namespaces_are_the_stacks_own(ns):
    assert parse(namespace=ns).namespace == ns


def test_hyperpod_has_no_acceptance_gate_to_size():
    with pytest.raises(ConfigError) as e:
        parse(serving="hyperpod", hyperpodClusterName="hp", acceptLoad="32")
    assert str(e.value) == (
        "kimi-k3:acceptLoad=32 does not apply to kimi-k3:serving=hyperpod (there is no readiness or "
        "acceptance gate on that path); unset it (or set off) and run `python -m components accept "
        "--endpoint URL/v1 --model NAME` once the operator reports the endpoint")
    assert parse(serving="hyperpod", hyperpodClusterName="hp", acceptLoad="off").serving == "hyperpod"


def test_a_hyperpod_cluster_name_that_eks_cannot_have_is_refused():
    with pytest.raises(ConfigError) as e:
        parse(serving="hyperpod", hyperpodClusterName="-bad name")
    assert str(e.value) == ("kimi-k3:hyperpodClusterName='-bad name' is not an EKS cluster name; give the EKS "
                            "cluster's name as `aws eks list-clusters` shows it (letters, digits, '-', '_'; up to 100)")


def test_your_bucket_is_kept_as_given():
    assert parse(weightsSource="s3", weightsS3Uri="s3://my-bucket/k3").weights_s3_uri == "s3://my-bucket/k3"
    assert parse().weights_s3_uri is None


@pytest.mark.parametrize("given,utc", [("2026-12-01T19:30:00+08:00", "2026-12-01T11:30:00Z"),
                                       ("2026-12-01T11:30:00Z", "2026-12-01T11:30:00Z"),
                                       ("2026-12-01T11:30:00", "2026-12-01T11:30:00Z")])
def test_start_times_are_utc_on_a_machine_in_utc_plus_8(shanghai, given, utc):
    """A time without a zone means UTC (as AWS reads it), not the deployer's local time."""
    assert parse(capacityEarliestStart=given).capacity.earliest_start == utc
