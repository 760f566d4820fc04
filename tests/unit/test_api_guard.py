"""The API-key guard's pure parts: the ASGI messages it sends, what it imports, the wrappers that
put it on vLLM's PYTHONPATH (run for real with python3), and where the launch spec and the
renderers put it. The guard in a real server: tests/integration/test_api_guard.py."""

from __future__ import annotations

import ast
import asyncio
import json
import os
import subprocess
import sys

import pytest

from components.inference import api_guard
from components.aws_eks.weights.render import STAGER
from components.inference import render_k8s as rk
from components.inference.kk3_api_guard import ApiKeyGuard
from components.inference.launch import LaunchSpec, Runtime, launch
from components.inference.planner import PlanRequest, plan
from components.ctyun_hcc.scripts import API_GUARD_FILE, SlurmLayout, api_guard_files, render_all

KEY = "unit-key-93be"


def _run(guard, scope):
    sent, reached = [], []

    async def app(scope, receive, send):
        reached.append(scope["type"])

    async def receive():
        return {"type": "http.request", "body": b""}

    async def send(message):
        sent.append(message)

    guard.app = app
    asyncio.run(guard(scope, receive, send))
    return sent, reached


@pytest.fixture
def guard(monkeypatch):
    monkeypatch.setenv("VLLM_API_KEY", KEY)
    return ApiKeyGuard(None)


def test_no_key_refuses_to_build(monkeypatch):
    monkeypatch.delenv("VLLM_API_KEY", raising=False)
    with pytest.raises(RuntimeError, match="VLLM_API_KEY is empty or unset"):
        ApiKeyGuard(None)
    monkeypatch.setenv("VLLM_API_KEY", "")
    with pytest.raises(RuntimeError):
        ApiKeyGuard(None)


def test_lifespan_passes_untouched(guard):
    assert _run(guard, {"type": "lifespan"}) == ([], ["lifespan"])


def test_http_refusal_is_vllms_json_401(guard):
    sent, reached = _run(guard, {"type": "http", "method": "POST", "path": "/invocations",
                                 "headers": [(b"authorization", b"Bearer nope")]})
    assert reached == []
    assert sent[0] == {"type": "http.response.start", "status": 401, "headers": [
        [b"content-length", b"24"], [b"content-type", b"application/json"]]}
    assert sent[1] == {"type": "http.response.body", "body": b'{"error":"Unauthorized"}'}
    assert json.loads(sent[1]["body"]) == {"error": "Unauthorized"}


def test_websocket_without_the_http_extension_is_closed_before_accept(guard):
    sent, reached = _run(guard, {"type": "websocket", "path": "/v1/realtime", "headers": []})
    assert reached == [] and sent == [{"type": "websocket.close", "code": 1008}]
    sent, _ = _run(guard, {"type": "websocket", "path": "/v1/realtime", "headers": [],
                           "extensions": {"websocket.http.response": {}}})
    assert [m["type"] for m in sent] == ["websocket.http.response.start",
                                         "websocket.http.response.body"]
    _, reached = _run(guard, {"type": "websocket", "path": "/v1/realtime",
                              "headers": [(b"authorization", f"Bearer {KEY}".encode())]})
    assert reached == ["websocket"]


def test_health_is_open_only_to_get_and_head(guard):
    for method in ("GET", "HEAD"):
        assert _run(guard, {"type": "http", "method": method, "path": "/health", "headers": []})[1]
    for method in ("POST", "PUT", "DELETE"):
        assert not _run(guard, {"type": "http", "method": method, "path": "/health",
                                "headers": []})[1]


def test_shipped_module_needs_nothing_but_the_standard_library():
    tree = ast.parse(api_guard.source())
    imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import)
                for a in n.names} | {n.module.split(".")[0] for n in ast.walk(tree)
                                     if isinstance(n, ast.ImportFrom) and n.module}
    assert imported <= set(sys.stdlib_module_names), imported
    assert not any(isinstance(n, ast.ImportFrom) and n.level for n in ast.walk(tree))
    # no `$`: Kubernetes' $(VAR) expansion has nothing to act on in the HyperPod env value
    assert "$" not in api_guard.source()


def test_hyperpod_writer_puts_the_shipped_text_on_pythonpath_and_execs(tmp_path):
    probe = ("import os, kk3_api_guard; print(kk3_api_guard.__file__); "
             f"print(os.environ.get({api_guard.SOURCE_ENV!r}, 'gone')); print(os.environ['PYTHONPATH'])")
    env = {**os.environ, api_guard.SOURCE_ENV: api_guard.source(), "PYTHONPATH": "/keep/me"}
    out = subprocess.run([*api_guard.HYPERPOD_COMMAND, sys.executable, "-c", probe], env=env,
                         capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    path, leftover, pythonpath = out.stdout.split("\n")[:3]
    assert open(path).read() == api_guard.source()
    assert oct(os.stat(os.path.dirname(path)).st_mode & 0o777) == "0o700"
    assert leftover == "gone"  # the source is not passed on to vLLM's environment
    assert pythonpath == f"{os.path.dirname(path)}:/keep/me"


def test_prepend_wrapper_keeps_the_images_pythonpath(tmp_path):
    probe = "import os, sys; print(os.environ['PYTHONPATH']); print(sys.argv[1:])"
    for before, after in (("/cann/python", f"{api_guard.CONTAINER_DIR}:/cann/python"),
                          (None, api_guard.CONTAINER_DIR)):
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        if before:
            env["PYTHONPATH"] = before
        out = subprocess.run([*api_guard.PREPEND_COMMAND, sys.executable, "-c", probe, "a b", "$(x)"],
                             env=env, capture_output=True, text=True, timeout=60, cwd=tmp_path)
        assert out.returncode == 0, out.stderr
        assert out.stdout.split("\n")[:2] == [after, "['a b', '$(x)']"]


# ---- where the launch spec and the renderers put it ------------------------------------------

def _cuda(nodes=1, api_key=True):
    p = plan(PlanRequest("mxfp4", "p6-b300.48xlarge", nodes))
    return p, launch(p, Runtime(image="vllm/vllm-openai:kimi-k3", port=8000, api_key=api_key))


def _ascend(api_key=True):
    p = plan(PlanRequest("w4a8", "atlas-800-a3", 4, max_model_len=131072))
    return p, launch(p, Runtime(image="quay.io/ascend/vllm-ascend:kimi-k3-a3", port=11025,
                                api_key=api_key))


def test_the_flag_comes_with_the_key_and_only_on_the_head():
    for p, spec in (_cuda(2), _ascend()):
        assert spec.api_guard and spec.head.argv[-2:] == ("--middleware", api_guard.IMPORT_PATH)
        assert "--middleware" not in spec.worker.argv
    for p, spec in (_cuda(1, api_key=False), _ascend(api_key=False)):
        assert not spec.api_guard and "--middleware" not in spec.head.argv


def test_a_guarded_cuda_spec_runs_vllms_python_front_end():
    _, plain = _cuda(1, api_key=False)
    _, guarded = _cuda(1)
    assert plain.head.env_dict[api_guard.RUST_FRONTEND_ENV] == "1"
    assert api_guard.RUST_FRONTEND_ENV not in guarded.head.env_dict
    d = guarded.to_dict()
    d["head"]["env"] = [*d["head"]["env"], [api_guard.RUST_FRONTEND_ENV, "1"]]
    with pytest.raises(ValueError, match="Rust front end"):
        LaunchSpec.from_dict(d)
    d = plain.to_dict()
    d["api_guard"] = True
    with pytest.raises(ValueError, match="--middleware"):
        LaunchSpec.from_dict(d)


def test_kubernetes_serving_pod_mounts_the_guard_read_only():
    layout = rk.K8sLayout(stager=STAGER)
    for nodes in (1, 2):
        p, spec = _cuda(nodes)
        (cm,) = rk.render_api_guard(spec, layout)
        assert cm["kind"] == "ConfigMap" and cm["data"] == {api_guard.FILE_NAME: api_guard.source()}
        objs = rk.render(p, spec, layout)
        pods = [t["spec"] for t in _templates(objs[1])]
        head = pods[0]
        c = head["containers"][0]
        assert {"name": "api-guard", "mountPath": api_guard.CONTAINER_DIR, "readOnly": True} \
            in c["volumeMounts"]
        assert {"name": "PYTHONPATH", "value": api_guard.CONTAINER_DIR} in c["env"]
        vol = next(v for v in head["volumes"] if v["name"] == "api-guard")
        assert vol["configMap"]["name"] == cm["metadata"]["name"]
        for worker in pods[1:]:  # headless workers serve no HTTP: nothing to mount
            assert not any(v["name"] == "api-guard" for v in worker["volumes"])
    p, spec = _cuda(1, api_key=False)
    assert rk.render_api_guard(spec, layout) == []
    assert "api-guard" not in json.dumps(rk.render(p, spec, layout))


def _templates(workload):
    if workload["kind"] == "Deployment":
        return [workload["spec"]["template"]]
    t = workload["spec"]["leaderWorkerTemplate"]
    return [t["leaderTemplate"], t["workerTemplate"]]


def test_hyperpod_carries_the_guard_in_env_and_writes_it_before_vllm():
    layout = rk.K8sLayout(stager=STAGER)
    p, spec = _cuda(1)
    w = rk.render_hyperpod(p, spec, layout)["spec"]["worker"]
    assert w["command"] == list(api_guard.HYPERPOD_COMMAND)
    assert w["args"][:2] == ["vllm", "serve"] and w["args"][-2:] == ["--middleware",
                                                                   api_guard.IMPORT_PATH]
    env = {e["name"]: e for e in w["environmentVariables"]}
    assert env[api_guard.SOURCE_ENV]["value"] == api_guard.source()
    assert "valueFrom" in env["VLLM_API_KEY"]
    p, spec = _cuda(1, api_key=False)
    w = rk.render_hyperpod(p, spec, layout)["spec"]["worker"]
    assert w["command"] == ["vllm", "serve"] and api_guard.SOURCE_ENV not in json.dumps(w)


def test_slurm_scripts_bind_the_guard_read_only_and_wrap_only_the_head():
    p, spec = _ascend()
    files = render_all(p, spec, SlurmLayout())
    assert api_guard_files(spec) == {API_GUARD_FILE: api_guard.source()}
    node = files["node.sh"]
    assert f"--bind /home/kimi-k3/api-guard:{api_guard.CONTAINER_DIR}:ro" in node
    head, worker = node.split('if [ "$node_rank" -eq 0 ]; then', 1)[1].split("\nelse\n", 1)
    assert "python3 -c" in head and "python3 -c" not in worker
    assert "API-key guard $api_guard is missing or not mode 600" in node
    p, spec = _ascend(api_key=False)
    files = render_all(p, spec, SlurmLayout())
    assert api_guard_files(spec) == {} and "api-guard" not in files["node.sh"]
