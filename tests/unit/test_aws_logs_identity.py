"""`python -m components logs` signs its EKS token as the stack does: with the stack's aws:profile.

The stack's kubeconfig runs `aws eks get-token --profile <aws:profile>` and kimi-k3's own calls
use that profile over ambient AWS_* variables (aws_api.session); the logs command used the default
chain, so with a profile set it asked EKS as another principal (or none), which API
authentication mode refuses. The `kubernetes` output now names the profile.
"""

import json

import httpx

from tests.unit.test_logs import _operator_api

OUTPUTS = {"apiEndpoint": "https://api.example", "caData": "", "clusterName": "hp", "region": "us-east-2",
           "namespace": "kimi-k3", "podSelector": {}, "container": None, "inferenceEndpointConfig": "kimik3",
           "port": 8000}


def _run(tmp_path, monkeypatch, kubernetes):
    import components.aws_eks.kube_api as kube_api
    import components.aws_eks.logs as eks_logs
    from components.cli.main import main

    signed = []

    class Logs(eks_logs.PodLogs):
        def __init__(self, endpoint, token, verify=True, client=None, timeout_s=20.0):
            super().__init__(endpoint, token, client=httpx.Client(transport=httpx.MockTransport(
                _operator_api([], {"selector": "app=kimik3"}))))

    def token(session, name, region):
        signed.append((session.profile_name, session.region_name, name))
        return "tok"

    monkeypatch.setattr(eks_logs, "PodLogs", Logs)
    monkeypatch.setattr(kube_api, "eks_token", token)
    config = tmp_path / "aws-config"
    config.write_text("[default]\nregion = eu-west-1\n[profile k3-deployer]\nregion = us-east-2\n")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_PROFILE", "default")
    f = tmp_path / "o.json"
    f.write_text(json.dumps({"kubernetes": kubernetes}))
    return main(["logs", "--stack", "s", "--outputs", str(f), "--lines", "5"]), signed


def test_the_token_is_signed_with_the_stacks_profile_not_the_ambient_one(tmp_path, monkeypatch, capsys):
    code, signed = _run(tmp_path, monkeypatch, {**OUTPUTS, "profile": "k3-deployer"})
    assert code == 0 and capsys.readouterr().out == "INFO worker up\n"
    assert signed and set(signed) == {("k3-deployer", "us-east-2", "hp")}


def test_without_a_profile_the_default_chain_and_the_stacks_region(tmp_path, monkeypatch, capsys):
    code, signed = _run(tmp_path, monkeypatch, {**OUTPUTS, "profile": None})
    assert code == 0 and set(signed) == {("default", "us-east-2", "hp")}


def test_a_profile_this_machine_lacks_is_one_line(tmp_path, monkeypatch, capsys):
    code, signed = _run(tmp_path, monkeypatch, {**OUTPUTS, "profile": "prod-admin"})
    err = capsys.readouterr().err.strip()
    assert code == 1 and not signed
    assert err == ("error: the stack's aws:profile 'prod-admin' cannot be used here (ProfileNotFound); configure "
                   "it (aws configure --profile NAME) or run where it is")


def test_both_aws_eks_modes_name_the_profile_in_the_kubernetes_output():
    from components.offline.runner import run_program

    for cfg in ({"aws:profile": "k3-deployer"},
                {"aws:profile": "k3-deployer", "kimi-k3:serving": "hyperpod", "kimi-k3:hyperpodClusterName": "hp"},
                {"aws:profile": "k3-deployer", "kimi-k3:serving": "hyperpod", "kimi-k3:apiKey": "kk3-hyperpod-key-0123456789abcdefghij"}):
        out = run_program("aws-eks", cfg).outputs["kubernetes"]
        assert out["profile"] == "k3-deployer", cfg
