"""The Kubernetes side of the aws-eks stack uses the same AWS identity as the rest (issue 9 item 6).

Under the mock engine, the real program: with `aws:profile`, pulumi-eks gets
`provider_credential_opts` and the Kubernetes provider's kubeconfig runs `aws eks get-token
--profile` (pulumi-eks's own `kubeconfigJson` never carries the profile, see cluster.py); static
`aws:accessKey` keys, which that kubeconfig cannot use, stop the program with one line.
"""

import json

import pulumi
import pytest

from components.offline.runner import SECRET, run_program

CR = "cr-0123456789abcdef0"
BASE = {"kimi-k3:capacityReservationId": CR, "kimi-k3:apiAccessCidrs": "198.51.100.7/32"}


def _k8s_provider(run, name="kimi-k3-k8s"):
    found = [r for r in run.of_type("pulumi:providers:kubernetes") if r["name"] == name]
    assert len(found) == 1
    return found[0]["inputs"]


def _token_args(kubeconfig: str):
    kc = json.loads(kubeconfig)
    assert kc["users"][0]["user"].keys() == {"exec"}  # no token, no key: only the command
    return kc["users"][0]["user"]["exec"]


@pytest.fixture(scope="module")
def with_profile():
    return run_program("aws-eks", {**BASE, "aws:profile": "kk3-deploy"})


def test_the_profile_reaches_pulumi_eks_and_the_kubernetes_provider(with_profile):
    eks = next(r["inputs"] for r in with_profile.of_type("eks:index:Cluster"))
    assert eks["providerCredentialOpts"] == {"profileName": "kk3-deploy"}
    ex = _token_args(_k8s_provider(with_profile)["kubeconfig"])
    assert ex["command"] == "aws" and ex["args"][:4] == ["eks", "get-token", "--cluster-name", "kimi-k3-aws-eks"]
    assert ex["args"][-2:] == ["--profile", "kk3-deploy"] and "env" not in ex
    assert ex["args"][ex["args"].index("--region") + 1] == "us-east-2"
    # the cluster's real endpoint and CA (aws.eks.get_cluster), not pulumi-eks's profile-less kubeconfig
    kc = json.loads(_k8s_provider(with_profile)["kubeconfig"])
    assert kc["clusters"][0]["cluster"]["server"] == "https://mock.eks.invalid"
    assert with_profile.outputs["kubeconfig"] == SECRET  # the output stays secret


def test_without_a_profile_the_default_chain_is_used():
    run = run_program("aws-eks", BASE)
    eks = next(r["inputs"] for r in run.of_type("eks:index:Cluster"))
    assert "providerCredentialOpts" not in eks
    assert "--profile" not in _token_args(_k8s_provider(run)["kubeconfig"])["args"]


@pytest.mark.parametrize("extra", [{}, {"aws:profile": "kk3-deploy"}])
def test_static_keys_stop_the_program_before_anything_is_created(extra):
    cfg = {**BASE, **extra, "aws:accessKey": "AKIAEXAMPLEKEY000001", "aws:secretKey": "do-not-leak-secret-key"}
    with pytest.raises(pulumi.RunError) as e:
        run_program("aws-eks", cfg, as_deployed=True)
    msg = str(e.value)
    assert msg.startswith("aws:accessKey='[set]' cannot reach the cluster's kubeconfig")
    assert "aws:profile" in msg and "\n" not in msg.strip()
    assert "do-not-leak" not in msg and "AKIAEXAMPLE" not in msg
