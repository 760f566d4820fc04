"""The `logs` command's pure parts: input checks (hostile values refused with the fix), the aws-eks
pod choice and the Kubernetes API calls (against a transport answering as the API reference
documents `read log of the specified Pod`), and the CLI's one-line errors about outputs."""

import json

import httpx
import pytest

from components.aws_eks.logs import (PodLogs, check_lines as aws_lines, check_node as aws_node,
                                     hyperpod_logs_output, pick_container, pick_pod)
from components.cli.main import main
from components.ctyun_hcc.logs import LogRequest, check_dir, check_job, check_node, remote_command


@pytest.mark.parametrize("value", ["", "1a", "-1", "1;id", "1 2", "١", "9" * 13])
def test_job_ids_are_numbers(value):
    with pytest.raises(ValueError, match=r"--job .* is not a Slurm job id"):
        check_job(value)


@pytest.mark.parametrize("value", ["a3compute0001", "kk3n0", "0", "15", "node-1.local"])
def test_node_names_and_ranks(value):
    assert check_node(value) == value


@pytest.mark.parametrize("value", ["", "-n", "a;b", "$(id)", "a b", "x" * 64, ".hidden", "é"])
def test_hostile_nodes(value):
    with pytest.raises(ValueError, match=r"--node .* is not a node"):
        check_node(value)


@pytest.mark.parametrize("value", ["", "logs", "/home/../etc", "/a/./b", "/a b", "/a;b", "/a$(id)"])
def test_log_dirs(value):
    with pytest.raises(ValueError, match="log directory"):
        check_dir(value)


def test_every_value_reaches_the_shell_quoted():
    cmd = remote_command(LogRequest("/home/kimi-k3/logs", "42", "a3compute0001", 10, True))
    assert "grep -l -m1 -F -- '(a3compute0001, ' /home/kimi-k3/logs/node_42.*.out" in cmd
    assert cmd.endswith('exec tail -n 10 -F -- "$@"')
    with pytest.raises(ValueError):
        LogRequest("/home/kimi-k3/logs", "42", lines=0)


# ---- aws-eks -------------------------------------------------------------------------------

PODS = {"items": [{"metadata": {"name": "kimi-k3-0-1"}}, {"metadata": {"name": "kimi-k3-0"}},
                  {"metadata": {"name": "kimi-k3-old", "deletionTimestamp": "2026-12-01T00:00:00Z"}}]}


def api(seen):
    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        assert request.headers["authorization"] == "Bearer tok"
        if request.url.path == "/api/v1/namespaces/kimi-k3/pods":
            return httpx.Response(200, json=PODS)
        if request.url.path.endswith("/log"):
            return httpx.Response(200, content=b"INFO line 1\nINFO line 2\n")
        return httpx.Response(404, json={"kind": "Status", "code": 404})
    return PodLogs("https://api.example", lambda: "tok", client=httpx.Client(transport=httpx.MockTransport(handler)))


def test_pods_and_log_follow_the_api_reference():
    seen = []
    logs = api(seen)
    pods = logs.pods("kimi-k3", {"app.kubernetes.io/name": "kimi-k3", "app.kubernetes.io/instance": "kimi-k3"})
    assert seen[0].url.params["labelSelector"] == "app.kubernetes.io/instance=kimi-k3,app.kubernetes.io/name=kimi-k3"
    assert pick_pod(pods, None) == "kimi-k3-0"  # the leader sorts first; the deleting pod is gone
    assert pick_pod(pods, "1") == "kimi-k3-0-1" and pick_pod(pods, "kimi-k3-0-1") == "kimi-k3-0-1"
    out = []
    logs.read("kimi-k3", "kimi-k3-0", "vllm", 50, True, out.append)
    req = seen[-1]
    assert req.url.path == "/api/v1/namespaces/kimi-k3/pods/kimi-k3-0/log"
    assert dict(req.url.params) == {"container": "vllm", "tailLines": "50", "follow": "true"}
    assert b"".join(out) == b"INFO line 1\nINFO line 2\n"


def test_no_pod_or_an_unknown_one_says_what_there_is():
    with pytest.raises(ValueError, match="no serving pod found"):
        pick_pod([], None)
    with pytest.raises(ValueError, match="no such serving pod; there are kimi-k3-0, kimi-k3-0-1"):
        pick_pod(PODS["items"][:2], "7")


def test_an_api_error_is_reported():
    logs = PodLogs("https://api.example", lambda: "t", client=httpx.Client(
        transport=httpx.MockTransport(lambda r: httpx.Response(403, text="forbidden: pods/log"))))
    with pytest.raises(RuntimeError, match="HTTP 403 forbidden"):
        logs.read("kimi-k3", "p", "vllm", 10, False, lambda b: None)


@pytest.mark.parametrize("value", ["a/b", "A", "-x", "$(id)", "p;q", "x" * 254])
def test_hostile_pod_names(value):
    with pytest.raises(ValueError, match="is not a pod"):
        aws_node(value)
    with pytest.raises(ValueError):
        aws_lines(0)


@pytest.mark.parametrize("typed,problem", [("١", "='١' is not an integer"), ("x", "='x' is not an integer"),
                                           ("0", "=0 is out of range"), ("-3", "=-3 is out of range"),
                                           ("100001", "=100001 is out of range"), (" ", "=' ' is not an integer")])
def test_lines_takes_the_config_grammar_before_anything_is_read(tmp_path, capsys, typed, problem):
    """--lines is read with the config values' integer grammar (ASCII digits: Python's int()
    took '١' as 1) and bounded before the outputs are read: one line quoting it as typed."""
    missing = tmp_path / "never-read.json"
    assert main(["logs", "--stack", "s", "--outputs", str(missing), f"--lines={typed}"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.splitlines() == [err] and err.startswith(f"error: --lines{problem}")
    assert "never-read" not in err


# ---- the CLI's errors about outputs ---------------------------------------------------------

@pytest.mark.parametrize("outputs,fragment", [
    ("not json", "is not readable JSON"),
    ("[1]", "not a JSON object"),
    # (open-ended: a target registered later adds its own outputs after these)
    ('{"endpoint": "x"}', "no registered target's (none of the outputs that tell them: "
                           "ctyun-hcc: slurmJobId or ssh; aws-eks: kubernetes or kubeconfig"),
    ('{"slurmJobId": "1"}', "have no `ssh`"),
    ('{"slurmJobId": "1", "ssh": {"host": "h"}, "sshLoginKey": "k"}', "no pinned hostKey"),
    ('{"slurmJobId": "1", "ssh": {"host": "h", "hostKey": "ssh-ed25519 AAAA", "logDir": "/etc/../x"}, '
     '"sshLoginKey": "k"}', "log directory '/etc/../x'"),
    ('{"kubeconfig": "x"}', "have no `kubernetes`"),
    # caData that is not EKS's base64 PEM: not base64, base64 of no certificate, of no text
    *[(json.dumps({"kubernetes": {"apiEndpoint": "https://api.example", "caData": ca, "clusterName": "c",
                                  "region": "us-east-2"}}), "caData that is not a base64 PEM certificate")
      for ca in ("abc", "bW9jaw==", "//79")],
])
def test_outputs_problems_are_one_line_exit_2(tmp_path, capsys, outputs, fragment):
    f = tmp_path / "o.json"
    f.write_text(outputs)
    assert main(["logs", "--stack", "s", "--outputs", str(f)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and fragment in err and "sshLoginKey" not in err.replace("`", "")


def test_a_target_without_a_logs_reader_is_not_listed(tmp_path, capsys, monkeypatch):
    """A registered target with no `logs_outputs` (a third target need not bring a reader) is
    left out of the list of outputs that tell a target, not shown as `name: ` with nothing."""
    from components.program import registry

    monkeypatch.setitem(registry.REGISTRY, "no-logs", registry.Entry("x", ("b300",), ("mxfp4", 1, 8000)))
    f = tmp_path / "o.json"
    f.write_text('{"endpoint": "x"}')
    assert main(["logs", "--stack", "s", "--outputs", str(f)]) == 2
    err = capsys.readouterr().err
    assert "aws-eks: kubernetes or kubeconfig)" in err and "no-logs" not in err


def test_the_login_key_is_never_printed(tmp_path, capsys):
    f = tmp_path / "o.json"
    f.write_text(json.dumps({"slurmJobId": "x1", "ssh": {"host": "h", "hostKey": "k", "logDir": "/l"},
                             "sshLoginKey": "-----BEGIN OPENSSH PRIVATE KEY-----SECRET"}))
    assert main(["logs", "--stack", "s", "--outputs", str(f)]) == 2
    assert "SECRET" not in "".join(capsys.readouterr())


# ---- HyperPod: the operator's pods and their worker container --------------------------------

WORKER = {"metadata": {"name": "kimik3-abc"}, "spec": {"containers": [
    {"name": "sidecar", "ports": [{"containerPort": 9113}]},
    {"name": "model", "ports": [{"containerPort": 8000, "name": "http"}]}]}}


def test_the_container_is_named_or_serves_the_port_or_is_the_only_one():
    assert pick_container(WORKER, "vllm", 8000) == "vllm"  # aws-eks names it
    assert pick_container(WORKER, None, 8000) == "model"
    only = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "one"}]}}
    assert pick_container(only, None, 8000) == "one"
    with pytest.raises(ValueError, match="pod kimik3-abc: no container serves port 7000 and it has "
                                         "2 \\(sidecar, model\\); read one with kubectl logs -c NAME"):
        pick_container(WORKER, None, 7000)


def _operator_api(seen, status):
    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if request.url.path == ("/apis/inference.sagemaker.aws.amazon.com/v1/namespaces/kimi-k3/"
                                "inferenceendpointconfigs/kimik3"):
            return httpx.Response(200, json={"kind": "InferenceEndpointConfig", "status": status})
        if request.url.path == "/api/v1/namespaces/kimi-k3/pods":
            return httpx.Response(200, json={"items": [WORKER]})
        if request.url.path.endswith("/log"):
            return httpx.Response(200, content=b"INFO worker up\n")
        return httpx.Response(404, json={"kind": "Status", "code": 404})
    return handler


def test_hyperpod_pods_are_the_ones_the_operator_labelled():
    seen = []
    logs = PodLogs("https://api.example", lambda: "tok",
                   client=httpx.Client(transport=httpx.MockTransport(_operator_api(
                       seen, {"state": "DeploymentComplete", "selector": "app=kimik3,team=x"}))))
    assert logs.operator_selector("kimi-k3", "kimik3") == {"app": "kimik3", "team": "x"}
    seen.clear()
    logs = PodLogs("https://api.example", lambda: "tok",
                   client=httpx.Client(transport=httpx.MockTransport(_operator_api(seen, {}))))
    assert logs.operator_selector("kimi-k3", "kimik3") == {}  # not written yet: the whole namespace
    seen.clear()
    with pytest.raises(ValueError, match="InferenceEndpointConfig '../../secrets' is not a Kubernetes name"):
        logs.operator_selector("kimi-k3", "../../secrets")
    assert seen == []  # refused before any request


def _pod_logs_through(monkeypatch, handler):
    """`logs` on aws-eks talks to `handler` (an httpx MockTransport handler standing for the
    Kubernetes API) with a fixed EKS token."""
    import components.aws_eks.kube_api as kube_api
    import components.aws_eks.logs as eks_logs

    class Logs(eks_logs.PodLogs):
        def __init__(self, endpoint, token, verify=True, client=None, timeout_s=20.0):
            super().__init__(endpoint, token, client=httpx.Client(transport=httpx.MockTransport(handler)))

    monkeypatch.setattr(eks_logs, "PodLogs", Logs)
    monkeypatch.setattr(kube_api, "eks_token", lambda session, name, region: "tok")


def test_the_cli_reads_the_worker_of_the_operators_pod(tmp_path, capsys, monkeypatch):
    seen = []
    handler = _operator_api(seen, {"selector": "app=kimik3"})
    _pod_logs_through(monkeypatch, handler)
    f = tmp_path / "o.json"
    f.write_text(json.dumps({"kubeconfig": "x", "kubernetes": {
        "apiEndpoint": "https://api.example", "caData": "", "clusterName": "hp", "region": "us-east-2",
        "namespace": "kimi-k3", "podSelector": {}, "container": None,
        "inferenceEndpointConfig": "kimik3", "port": 8000}}))
    assert main(["logs", "--stack", "s", "--outputs", str(f), "--lines", "5"]) == 0
    out = capsys.readouterr()
    assert out.out == "INFO worker up\n" and "== pod kimik3-abc" in out.err
    assert seen[1].url.params["labelSelector"] == "app=kimik3"
    assert dict(seen[2].url.params) == {"container": "model", "tailLines": "5"}


def test_hyperpod_logs_output_is_one_line_and_refuses_a_hostile_name():
    import shlex
    out = hyperpod_logs_output("aws-eks", "kimi-k3", "kimik3")
    words = shlex.split(out["kubectl"].split("[")[0].replace(";", " ;"))
    assert words[:2] == ["export", "KUBECONFIG=k3.kubeconfig"] and "--all-containers" in words
    assert ("kubectl -n kimi-k3 get inferenceendpointconfig kimik3 -o "
            "jsonpath='{.status.selector}'") in out["kubectl"]
    with pytest.raises(ValueError, match="is not a Kubernetes name"):
        hyperpod_logs_output("aws-eks", "kimi-k3", "x$(id)")
    with pytest.raises(ValueError, match="namespace 'a b' is not a Kubernetes name"):
        hyperpod_logs_output("aws-eks", "a b", "kimik3")


def test_the_cli_says_in_one_line_what_the_api_refused(tmp_path, capsys, monkeypatch):
    """An endpoint config the identity may not read (HTTP 403) is one line and exit 1, not a
    traceback."""
    _pod_logs_through(monkeypatch, lambda r: httpx.Response(
        403, text="inferenceendpointconfigs is forbidden"))
    f = tmp_path / "o.json"
    f.write_text(json.dumps({"kubernetes": {
        "apiEndpoint": "https://api.example", "caData": "", "clusterName": "hp", "region": "us-east-2",
        "namespace": "kimi-k3", "podSelector": {}, "inferenceEndpointConfig": "kimik3", "port": 8000}}))
    assert main(["logs", "--stack", "s", "--outputs", str(f)]) == 1
    err = capsys.readouterr().err.strip()
    assert err == ("error: reading InferenceEndpointConfig kimi-k3/kimik3: HTTP 403 "
                   "inferenceendpointconfigs is forbidden")


@pytest.mark.parametrize("where", ["listing", "reading"])
def test_the_cli_says_in_one_line_when_the_api_cannot_be_reached(tmp_path, capsys, monkeypatch, where):
    """A Kubernetes API that refuses connections (a closed port on loopback), while listing the
    pods or while reading the log, is one line naming the endpoint and exit 1, not a traceback."""
    import socket

    import components.aws_eks.kube_api as kube_api
    import components.aws_eks.logs as eks_logs

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    endpoint = f"https://127.0.0.1:{port}"
    if where == "reading":
        class Logs(eks_logs.PodLogs):
            def pods(self, namespace, selector):
                return [{"metadata": {"name": "p0"}, "spec": {"containers": [{"name": "vllm"}]}}]
        monkeypatch.setattr(eks_logs, "PodLogs", Logs)
    monkeypatch.setattr(kube_api, "eks_token", lambda session, name, region: "tok")
    f = tmp_path / "o.json"
    f.write_text(json.dumps({"kubernetes": {
        "apiEndpoint": endpoint, "caData": "", "clusterName": "c", "region": "us-east-2",
        "namespace": "kimi-k3", "podSelector": {"app": "kimi-k3"}, "container": "vllm", "port": 8000}}))
    assert main(["logs", "--stack", "s", "--outputs", str(f)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith(f"error: the cluster's Kubernetes API {endpoint} could not be asked (Connect")
    assert "Traceback" not in "\n".join(err)


# ---- a stack mid-destroy, or damaged outputs: one line, never a traceback ---------------------

def _login_key():
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ed25519

    k = ed25519.Ed25519PrivateKey.generate()
    priv = k.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH,
                           serialization.NoEncryption()).decode()
    pub = k.public_key().public_bytes(serialization.Encoding.OpenSSH,
                                      serialization.PublicFormat.OpenSSH).decode()
    return priv, pub


def test_a_master_that_is_gone_is_one_line(tmp_path, capsys):
    """The outputs of the last `pulumi up`, the master already deleted: the SSH port refuses."""
    import socket

    priv, pub = _login_key()
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    f = tmp_path / "o.json"
    f.write_text(json.dumps({"slurmJobId": "12", "sshLoginKey": priv,
                             "ssh": {"host": "127.0.0.1", "port": port, "hostKey": pub, "logDir": "/l"}}))
    assert main(["logs", "--stack", "s", "--outputs", str(f)]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "ConnectionRefusedError" in err
    assert "is the cluster still there?" in err and "PRIVATE KEY" not in err


@pytest.mark.parametrize("ssh,shown", [
    ({"host": "127.0.0.1", "port": "22; rm -rf /"}, "port '22; rm -rf /'"),
    ({"host": "", "port": 22}, "host ''"),
    ({"host": "h", "port": 70000}, "port '70000'"),
    ({"host": "h", "port": 22, "bastion": "root@b:x"}, "bastion 'root@b:x'"),
])
def test_a_damaged_ssh_output_is_one_line_exit_2(tmp_path, capsys, ssh, shown):
    priv, pub = _login_key()
    f = tmp_path / "o.json"
    f.write_text(json.dumps({"slurmJobId": "12", "sshLoginKey": priv,
                             "ssh": {**ssh, "hostKey": pub, "logDir": "/l"}}))
    assert main(["logs", "--stack", "s", "--outputs", str(f)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "is damaged" in err and shown in err


def test_pulumi_printing_no_json_is_one_line(tmp_path, capsys, monkeypatch):
    """`pulumi stack output` that prints something else (a CLI double on PATH: a warning
    banner mid-destroy, say)."""
    fake = tmp_path / "bin" / "pulumi"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho 'warning: the stack is being destroyed'\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}:/usr/bin:/bin")
    assert main(["logs", "--stack", "s"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "did not print JSON" in err


# ---- what a log holds is shown, never acted on (cli/logs.py TerminalSafe) -------------------
#: what a client can put in vLLM's log (a prompt, a model name): clear screen, retitle, OSC 52
#: (write the clipboard), an OSC 8 link, a bare carriage return over the line, CSI as C1
HOSTILE_LOG = ("INFO ok\n\x1b[2J\x1b[H\x1b]0;owned\x07\x1b]52;c;cm0gLXJmIH4=\x07"
               "\x1b]8;;http://evil.example/\x07click\x1b]8;;\x07 rm -rf ~\rINFO all fine  \n"
               "\u009b31mred\x08\x7f tab\there é — 漢\r\n").encode()


def _shown(chunks):
    from components.cli.logs import TerminalSafe

    out = []
    safe = TerminalSafe(out.append)
    for c in chunks:
        safe(c)
    safe.flush()
    return b"".join(out)


@pytest.mark.parametrize("size", [1, 2, 3, 7, 4096])
def test_a_log_cannot_drive_the_terminal_however_it_is_cut(size):
    """Every control is shown as \\xNN, also when a read ends between a C1's two bytes or a
    carriage return and its line feed; text, tabs, line ends (\\n, \\r\\n) pass as they came."""
    got = _shown([HOSTILE_LOG[i:i + size] for i in range(0, len(HOSTILE_LOG), size)])
    assert not any(b in got for b in (b"\x1b", b"\x07", b"\x08", b"\x7f", b"\xc2\x9b"))
    assert b"\r" not in got.replace(b"\r\n", b"")
    assert got == (b"INFO ok\n\\x1b[2J\\x1b[H\\x1b]0;owned\\x07\\x1b]52;c;cm0gLXJmIH4=\\x07"
                   b"\\x1b]8;;http://evil.example/\\x07click\\x1b]8;;\\x07 rm -rf ~\\x0dINFO all "
                   b"fine  \n\\x9b31mred\\x08\\x7f tab\there " + "é — 漢".encode() + b"\r\n")


@pytest.mark.parametrize("size", [1, 2, 5, 4096])
def test_a_log_shows_the_controls_terminal_text_shows(size):
    """One set (inference/quoting.py TERMINAL_CONTROLS): each control, an escape sequence, C1
    controls as UTF-8 (CSI, OSC) and a lone carriage return come out of the logs command exactly
    as `terminal_text` shows them, but a log's line feeds, which pass; text beyond (NBSP, whose
    UTF-8 shares C1's lead byte, CJK, an emoji) passes untouched."""
    from components.inference.quoting import TERMINAL_CONTROLS, terminal_text

    text = ("".join(f"a{c}b" for c in TERMINAL_CONTROLS) + "\x1b[2J\x1b]52;c;eA==\x07 \u009b31m "
            "\u009d0;t\u009c lone\rover \u00a0\u00ff\u0100 漢 \U0001F600\n")
    data = text.encode()
    got = _shown([data[i:i + size] for i in range(0, len(data), size)]).decode()
    assert got == terminal_text(text).replace("\\x0a", "\n")
    assert not any(c in got for c in TERMINAL_CONTROLS.replace("\n", ""))


def test_a_lone_byte_held_at_the_end_is_written():
    assert _shown([b"done\r"]) == b"done\\x0d"
    assert _shown([b"x\xc2"]) == b"x\xc2"  # not a control: passed as it came


def test_the_aws_logs_command_shows_escapes_in_a_pod_log(tmp_path, capsys, monkeypatch):
    """End to end through the CLI: the pod's log as the API returns it, escapes shown."""
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/api/v1/namespaces/kimi-k3/pods":
            return httpx.Response(200, json={"items": [WORKER]})
        if request.url.path.endswith("/log"):
            return httpx.Response(200, content=HOSTILE_LOG)
        return httpx.Response(404, json={"kind": "Status", "code": 404})

    _pod_logs_through(monkeypatch, handler)
    f = tmp_path / "o.json"
    f.write_text(json.dumps({"kubernetes": {
        "apiEndpoint": "https://api.example", "caData": "", "clusterName": "c", "region": "us-east-2",
        "namespace": "kimi-k3", "podSelector": {"app": "kimik3"}, "container": "model"}}))
    assert main(["logs", "--stack", "s", "--outputs", str(f)]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\\x1b]52;c;" in out and "\\x0dINFO all fine" in out
    assert out.startswith("INFO ok\n") and "é — 漢" in out


def test_a_replicas_job_is_read_in_its_own_work_directory():
    """Replica i > 0 runs in `<workDir>/replica-<i>` (ctyun_hcc/replicas.py), so `--job` with its
    id reads the logs there; replica 0's job, a job not in `replicas` and one replica read logDir."""
    from components.ctyun_hcc.logs_command import log_dir_of

    replicas = [{"jobId": "41", "nodes": [], "head": "a"}, {"jobId": "42", "nodes": [], "head": "b"}]
    assert log_dir_of("/home/kimi-k3/logs", replicas, "42") == "/home/kimi-k3/replica-1/logs"
    assert log_dir_of("/home/kimi-k3/logs", replicas, "41") == "/home/kimi-k3/logs"
    assert log_dir_of("/home/kimi-k3/logs", replicas, "7") == "/home/kimi-k3/logs"
    assert log_dir_of("/home/kimi-k3/logs", None, "42") == "/home/kimi-k3/logs"
    assert log_dir_of("/home/kimi-k3/logs", "damaged", "42") == "/home/kimi-k3/logs"
    # the directory still goes through LogRequest's path check and the shell quoting
    cmd = remote_command(LogRequest(log_dir_of("/home/kimi-k3/logs", replicas, "42"), "42", None, 200, False))
    assert "/home/kimi-k3/replica-1/logs/job_42.out" in cmd


def test_the_bastion_key_file_is_read_bounded_and_only_with_a_bastion(tmp_path):
    """`logs --bastion-key FILE` on ctyun-hcc: unused without a bastion; a file that is no
    private key (a public key, a huge file) is refused in one line, its content never shown."""
    from components.cli.logs import UsageError
    from components.ctyun_hcc.logs_command import MAX_KEY_FILE_BYTES, bastion_key

    assert bastion_key("", None) is None and bastion_key("", tmp_path / "absent") is None
    with pytest.raises(UsageError, match="--bastion-key FILE"):
        bastion_key("u@b:22", None)
    with pytest.raises(UsageError, match="is not readable"):
        bastion_key("u@b:22", tmp_path / "absent")
    pub = tmp_path / "k.pub"
    pub.write_text("ssh-ed25519 AAAAsecretish\n")
    with pytest.raises(UsageError) as e:
        bastion_key("u@b:22", pub)
    assert "AAAAsecretish" not in str(e.value)
    big = tmp_path / "big"
    big.write_bytes(b"-----BEGIN OPENSSH PRIVATE KEY-----\n" + b"A" * MAX_KEY_FILE_BYTES)
    with pytest.raises(UsageError, match="does not hold"):
        bastion_key("u@b:22", big)
    key = tmp_path / "k"
    key.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbg==\n-----END OPENSSH PRIVATE KEY-----\n")
    assert bastion_key("u@b:22", key).startswith("-----BEGIN OPENSSH PRIVATE KEY-----")
