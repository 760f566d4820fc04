"""The launch spec reproduces the seeds' and the recipe's command lines, errata fixed."""

import json
from pathlib import Path

import pytest

from components.inference.launch import LaunchSpec, Runtime, launch
from components.inference.planner import PlanRequest, plan

GOLDEN = Path(__file__).resolve().parent.parent / "golden"


def flags(argv):
    """{flag: value or True}; JSON values compared parsed, so spacing does not matter."""
    out, i = {}, 0
    while i < len(argv):
        a = argv[i]
        if a.startswith("--"):
            nxt = argv[i + 1] if i + 1 < len(argv) else None
            if nxt is None or nxt.startswith("--"):
                out[a] = True
                i += 1
                continue
            try:
                out[a] = json.loads(nxt) if nxt[:1] in "{[" else nxt
            except ValueError:
                out[a] = nxt
            i += 2
        else:
            i += 1
    return out


def seed_argv(name):
    lines = [l for l in (GOLDEN / "seeds" / name).read_text().splitlines() if l and not l.startswith("#")]
    argv = []
    for line in lines:
        flag, _, value = line.partition(" ")
        argv += [flag] + ([value] if value else [])
    return argv


def ctyun_spec(nodes=4):
    p = plan(PlanRequest("w4a8", "atlas-800-a3", nodes, max_model_len=131072))
    return launch(p, Runtime(image="quay.io/ascend/vllm-ascend:kimi-k3-a3", port=11025))


def aws_spec(nodes=1):
    p = plan(PlanRequest("mxfp4", "p6-b300.48xlarge", nodes))
    return launch(p, Runtime(image="vllm/vllm-openai:kimi-k3", port=8000, model_path="/models/Kimi-K3"))


def test_ctyun_head_matches_the_seed_with_errata_fixed():
    spec = ctyun_spec()
    assert flags(spec.head.argv) == flags(seed_argv("ctyun-head.txt"))
    assert spec.head.argv[:3] == ("vllm", "serve", "/model")


def test_no_local_media_access_on_either_target():
    """Seed erratum: `--allowed-local-media-path /` let any client read any file of the node."""
    for spec in (ctyun_spec(), ctyun_spec(nodes=2), aws_spec(), aws_spec(nodes=2)):
        for role in spec.roles():
            assert "--allowed-local-media-path" not in role.argv


def test_ctyun_workers_match_the_seed_worker_branch():
    spec = ctyun_spec()
    head = flags(spec.head.argv)
    for rank, worker in enumerate(spec.roles()[1:], start=1):
        w = flags(worker.argv)
        assert w.pop("--headless") is True
        assert w.pop("--data-parallel-start-rank") == str(rank)
        assert w == head


def test_ctyun_env_matches_the_seed_without_a_hard_coded_nic():
    spec = ctyun_spec()
    env = spec.head.env_dict
    assert env["HCCL_IF_IP"] == "${NODE_ADDR}"
    for k in ("GLOO_SOCKET_IFNAME", "TP_SOCKET_IFNAME", "HCCL_SOCKET_IFNAME"):
        assert env[k] == "${NODE_IFNAME}"
    assert env["VLLM_ENGINE_READY_TIMEOUT_S"] == "7200"
    assert env["HCCL_BUFFSIZE"] == "800" and env["OMP_NUM_THREADS"] == "1"
    assert "eno0" not in json.dumps(spec.to_dict())
    assert "VLLM_ENGINE_READY_TIMEOUT_S" not in spec.roles()[1].env_dict


def test_b300_matches_the_recipe():
    spec = aws_spec()
    ours, recipe = flags(spec.head.argv), flags(seed_argv("b300-recipe.txt"))
    for flag, value in recipe.items():
        assert ours.get(flag) == value, flag
    assert set(ours) - set(recipe) == {"--served-model-name", "--host", "--port"}
    env = spec.head.env_dict
    # never less than the recipe's 3600 s (the plan's own budget on NVMe is 22 min)
    assert env == {"VLLM_ALLREDUCE_USE_FLASHINFER": "1",
                   "VLLM_ENGINE_READY_TIMEOUT_S": str(spec.startup_timeout_s),
                   "VLLM_USE_V2_MODEL_RUNNER": "1", "VLLM_USE_RUST_FRONTEND": "1"}
    assert spec.startup_timeout_s == 3600
    assert spec.worker is None


def test_b300_two_nodes_pipelines_with_headless_worker():
    spec = aws_spec(2)
    head, worker = (flags(r.argv) for r in spec.roles())
    assert head["--pipeline-parallel-size"] == "2" and head["--node-rank"] == "0"
    assert worker["--node-rank"] == "1" and worker["--headless"] is True
    assert spec.head.env_dict["NCCL_CUMEM_ENABLE"] == "1"


def test_flashcomm1_is_gated_by_the_image_plugin_version(monkeypatch):
    from components.inference import catalog, launch as launch_mod
    newer = catalog.ServingImage("quay.io/ascend/vllm-ascend:v0.24.0", "ascend", "0.24.0", "0.24.0")
    monkeypatch.setitem(launch_mod.IMAGES, newer.ref, newer)
    p = plan(PlanRequest("w4a8", "atlas-800-a3", 4, max_model_len=131072))
    spec = launch(p, Runtime(image=newer.ref, port=11025))
    assert flags(spec.head.argv)["--additional-config"] == {"enable_cpu_binding": True}


def test_secrets_are_named_not_written():
    p = plan(PlanRequest("mxfp4", "p6-b300.48xlarge", 1))
    spec = launch(p, Runtime(image="vllm/vllm-openai:kimi-k3", port=8000, api_key=True))
    assert spec.secret_env == ("VLLM_API_KEY",)
    assert "--api-key" not in spec.head.argv


def test_unknown_image_is_refused():
    p = plan(PlanRequest("mxfp4", "p6-b300.48xlarge", 1))
    with pytest.raises(Exception, match="kimi-k3:image"):
        launch(p, Runtime(image="vllm/vllm-openai:latest", port=8000))


@pytest.mark.parametrize("name,make", [("ctyun-hcc", ctyun_spec), ("aws-eks", aws_spec)])
def test_launch_spec_golden(name, make, golden):
    spec = make()
    assert LaunchSpec.from_dict(json.loads(json.dumps(spec.to_dict()))) == spec
    golden.check(GOLDEN / "launch" / f"{name}.json", json.dumps(spec.to_dict(), indent=2) + "\n")
