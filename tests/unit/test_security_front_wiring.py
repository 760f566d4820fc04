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


def test_the_ctyun_front_checks_the_key_from_a_root_only_file():
    """On the master the key never enters the router directory (shared file system) nor a
    command line: systemd reads it from host.key_file (EnvironmentFile=, no `-`: a missing
    file fails the start), the loop sources it in the subshell that execs the front's loop."""
    from components.router import host

    files = host.render("/home/kimi-k3/router", "kimi-k3", ["http://10.0.0.5:11026"], 11025,
                        api_key=True)
    key_file = host.key_file("kimi-k3")
    assert key_file == "/etc/kimi-k3/router/kimi-k3-front.env"
    assert files["front.argv"].split()[-2:] == ["--api-key-env", FRONT_KEY_ENV]
    assert f"EnvironmentFile={key_file}\n" in files["kimi-k3-front.service"]
    assert "EnvironmentFile" not in files["kimi-k3-router.service"]
    assert f"front_env={key_file}\n" in files["service.sh"]
    assert '. "$front_env"' in files["service.sh"]
    plain = host.render("/home/kimi-k3/router", "kimi-k3", ["http://10.0.0.5:11026"], 11025)
    assert "--api-key-env" not in plain["front.argv"]
    assert "EnvironmentFile" not in plain["kimi-k3-front.service"]
    assert "front_env=''\n" in plain["service.sh"]


def test_the_router_service_writes_the_key_root_only_and_restarts_on_a_new_one(monkeypatch):
    from components.ctyun_hcc import router_service as rs

    assert "apiKey" in rs.STEP_INPUTS and "apiKey" not in rs.LIVE_KEYS
    assert rs.RouterServiceProvider.SECRET_INPUTS == ("apiKey",)

    class Runner:
        def __init__(self):
            self.secrets, self.commands = {}, []

        def run(self, cmd, **kw):
            self.commands.append(cmd)

            class R:
                stdout, code = "supervisor loop\n", 0
            return R()

        def upload(self, path, text, mode):
            assert "kk3-key-0123456789abcdefghijklmnopqrstuv" not in text

        def write_secret(self, path, value):
            self.secrets[path] = value

    p = {**rs.STEP_INPUTS, "workerUrls": ["http://10.0.0.5:11026"],
         "apiKey": "kk3-key-0123456789abcdefghijklmnopqrstuv"}
    runner = Runner()
    monkeypatch.setattr(rs.RouterServiceProvider, "_wait_front", lambda self, runner, p: None)
    provider = rs.RouterServiceProvider()
    provider.apply(runner, p)
    assert runner.secrets == {"/etc/kimi-k3/router/kimi-k3-front.env":
                              "VLLM_API_KEY=kk3-key-0123456789abcdefghijklmnopqrstuv\n"}
    assert not any("kk3-key-0123456789" in c for c in runner.commands)
    runner = Runner()
    provider.apply(runner, {**p, "apiKey": None})
    assert runner.secrets == {}
    assert any(c.startswith("rm -f /etc/kimi-k3/router/kimi-k3-front.env") for c in runner.commands)


def test_a_key_outside_the_bearer_grammar_never_reaches_the_sourced_file(monkeypatch):
    """service.sh sources the key file as root (`. "$front_env"`): a key with `$(...)`, a quote
    or a line break would run there. The config refuses such keys (config/api_key.py); the step
    refuses them again at the sink, without showing them."""
    from components.ctyun_hcc import router_service as rs

    written = {}

    class Runner:
        def run(self, cmd, **kw):
            class R:
                stdout, code = "supervisor loop\n", 0
            return R()

        def upload(self, path, text, mode):
            pass

        def write_secret(self, path, value):
            written[path] = value

    monkeypatch.setattr(rs.RouterServiceProvider, "_wait_front", lambda self, runner, p: None)
    for hostile in ("$(touch /tmp/kk3-pwned)", "abc\nVLLM_API_KEY=x; id", "k3y'q", "k3y with-space"):
        p = {**rs.STEP_INPUTS, "workerUrls": ["http://10.0.0.5:11026"], "apiKey": hostile}
        try:
            rs.RouterServiceProvider().apply(Runner(), p)
        except ValueError as e:
            assert hostile not in str(e) and "kimi-k3:apiKey=" in str(e)
        else:
            raise AssertionError(f"{hostile!r} was written")
    assert written == {}
