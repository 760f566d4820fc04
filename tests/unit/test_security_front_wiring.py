"""The router front checks the API key itself wherever kimi-k3 runs it with one (kk3_front.py
`--api-key-env`): the aws-eks router Deployment's front gets the key from the serving Secret
and the flag; without a key neither. The front's behaviour with hostile clients:
tests/integration/test_security_front_auth.py."""

from components.router import k8s
from components.router.settings import FRONT_KEY_ENV


def front_of(objs):
    deployment = next(o for o in objs if o["kind"] == "Deployment")
    return next(c for c in deployment["spec"]["template"]["spec"]["containers"]
                if c["name"] == "front")


def test_the_aws_front_checks_the_key_from_the_secret():
    front = front_of(k8s.render("ns", "kimi-k3", 8000, {"app": "x"},
                                api_key_secret=("kimi-k3-secrets", "VLLM_API_KEY")))
    assert front["command"][-2:] == ["--api-key-env", FRONT_KEY_ENV]
    key_env = [e for e in front["env"] if e["name"] == FRONT_KEY_ENV]
    assert key_env == [{"name": FRONT_KEY_ENV, "valueFrom": {"secretKeyRef": {
        "name": "kimi-k3-secrets", "key": "VLLM_API_KEY"}}}]
    assert "value" not in key_env[0]


def test_without_a_key_the_front_has_neither_flag_nor_key():
    front = front_of(k8s.render("ns", "kimi-k3", 8000, {"app": "x"}))
    assert "--api-key-env" not in front["command"]
    assert FRONT_KEY_ENV not in {e["name"] for e in front["env"]}


def test_a_new_key_rolls_the_front_too():
    """The front reads the key at start, like the replicas: its pod template is marked with the
    Secret's uid (components/inference/secret_roll.py), so a new key restarts it as well;
    without the key in its env it would keep refusing the new key with 401."""
    from components.inference import secret_roll

    objs = k8s.render("ns", "kimi-k3", 8000, {"app": "x"},
                      api_key_secret=("kimi-k3-secrets", "VLLM_API_KEY"))
    deployment = next(o for o in objs if o["kind"] == "Deployment")
    assert secret_roll.marked(secret_roll.mark(deployment, "kimi-k3-secrets"))
