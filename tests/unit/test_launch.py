"""The launch spec reproduces the seeds' and the recipe's command lines, errata fixed."""

import json
import pytest
from pathlib import Path

from components.inference import launch as L
from components.inference.catalog import IMAGES, ServingImage
from components.inference.errors import ConfigError
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
    newer = catalog.ServingImage("quay.io/ascend/vllm-ascend:v0.26.0", "ascend", "0.26.0", "0.26.0")
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


# ---- merged from test_launch_behaviour.py:
# The launch spec read as vLLM reads it: flags parsed into {flag: value}, per hardware family
# and role, against the published recipes (vLLM's Kimi K3 recipe for Blackwell/Hopper, the
# vllm-ascend K3 tutorial for A3; sources in docs/planner.md, "Calibration") and the seed errata
# (docs/seed-mapping.md).
#
# Goldens (tests/golden/launch) show a reviewer the whole argv; these tests say which flag
# matters and why, so a regenerated golden cannot hide a lost flag.

ASCEND = "quay.io/ascend/vllm-ascend:kimi-k3-a3"
CUDA = "vllm/vllm-openai:kimi-k3"


def _flags(argv):
    """argv after `vllm serve MODEL` as {flag: value} (True for a flag without a value)."""
    assert argv[:2] == ("vllm", "serve")
    out, i, rest = {}, 0, argv[3:]
    while i < len(rest):
        assert rest[i].startswith("--"), rest[i]
        assert rest[i] not in out, f"{rest[i]} given twice"
        if i + 1 < len(rest) and not rest[i + 1].startswith("--"):
            out[rest[i]] = rest[i + 1]
            i += 2
        else:
            out[rest[i]] = True
            i += 1
    return out


def _spec(model, shape, nodes, image, max_model_len=None, **runtime):
    p = plan(PlanRequest(model, shape, nodes, max_model_len=max_model_len,
                         **{k: runtime.pop(k) for k in ("weights_source", "stream_weights") if k in runtime}))
    return p, L.launch(p, L.Runtime(image=image, port=11025, **runtime))


COMMON = {"--served-model-name": "Kimi-K3", "--host": "0.0.0.0", "--port": "11025",
          "--trust-remote-code": True, "--enable-prefix-caching": True,
          "--enable-auto-tool-choice": True, "--tool-call-parser": "kimi_k3", "--reasoning-parser": "kimi_k3"}


def test_ascend_four_nodes_is_the_tutorials_dp4_tp16_ep_layout():
    p, spec = _spec("w4a8", "atlas-800-a3", 4, ASCEND, max_model_len=131072)
    head, worker = _flags(spec.head.argv), _flags(spec.worker.argv)
    assert spec.head.argv[2] == "/model"
    want = {**COMMON, "--tensor-parallel-size": "16", "--data-parallel-size": "4",
            "--data-parallel-size-local": "1", "--data-parallel-address": "${NODE0_ADDR}",
            "--data-parallel-rpc-port": "13389", "--enable-expert-parallel": True,
            "--max-num-seqs": "16", "--max-model-len": "131072", "--max-num-batched-tokens": "24576",
            "--gpu-memory-utilization": "0.9", "--mm-processor-cache-gb": "0",
            "--mm-encoder-tp-mode": "data"}
    for flag, value in want.items():
        assert head[flag] == value, flag
        assert worker[flag] == value, flag
    assert json.loads(head["--compilation-config"]) == {"cudagraph_mode": "FULL_DECODE_ONLY"}
    assert json.loads(head["--limit-mm-per-prompt"]) == {"vision_chunk": 40}
    assert json.loads(head["--additional-config"]) == {"enable_cpu_binding": True, "enable_flashcomm1": True}
    # seed errata: the head has no start rank; workers are headless with their rank
    assert "--headless" not in head and "--data-parallel-start-rank" not in head
    assert worker["--headless"] is True and worker["--data-parallel-start-rank"] == "${NODE_RANK}"
    assert set(worker) - set(head) == {"--headless", "--data-parallel-start-rank"}
    assert not {"--pipeline-parallel-size", "--kv-cache-dtype", "--load-format", "--api-key"} & set(head)


def test_ascend_env_per_role():
    p, spec = _spec("w4a8", "atlas-800-a3", 4, ASCEND, max_model_len=131072)
    head, worker = spec.head.env_dict, spec.worker.env_dict
    want = {"HCCL_IF_IP": "${NODE_ADDR}", "GLOO_SOCKET_IFNAME": "${NODE_IFNAME}",
            "TP_SOCKET_IFNAME": "${NODE_IFNAME}", "HCCL_SOCKET_IFNAME": "${NODE_IFNAME}",
            "HCCL_BUFFSIZE": "800", "PYTORCH_NPU_ALLOC_CONF": "expandable_segments:True",
            "OMP_PROC_BIND": "false", "OMP_NUM_THREADS": "1", "TASK_QUEUE_ENABLE": "1",
            "ASCEND_RT_VISIBLE_DEVICES": "0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15"}
    assert worker == want  # workers wait for the head: no engine timeout of their own
    assert head == {**want, "VLLM_ENGINE_READY_TIMEOUT_S": str(p.cold_start.startup_timeout_s)}
    assert spec.startup_timeout_s == p.cold_start.startup_timeout_s


@pytest.mark.parametrize("plugin,additional", [
    ("0.8.0", None),                                   # neither option exists yet
    ("0.9.0", {"enable_cpu_binding": True}),
    ("0.23.0", {"enable_cpu_binding": True, "enable_flashcomm1": True}),
    ("0.24.0", {"enable_cpu_binding": True, "enable_flashcomm1": True}),  # still read by 0.24
    ("0.25.1", {"enable_cpu_binding": True, "enable_flashcomm1": True}),  # and by 0.25
    ("0.26.0", {"enable_cpu_binding": True}),          # after 0.25: only a deprecation warning
])
def test_ascend_additional_config_follows_the_plugin_version(monkeypatch, plugin, additional):
    monkeypatch.setitem(IMAGES, "test/ascend:x", ServingImage("test/ascend:x", "ascend", "0.23.0", plugin))
    _, spec = _spec("w4a8", "atlas-800-a3", 4, "test/ascend:x", max_model_len=131072)
    got = _flags(spec.head.argv).get("--additional-config")
    assert (None if got is None else json.loads(got)) == additional


def test_blackwell_one_node_tp8_fp8_kv_without_pipeline_flags():
    p, spec = _spec("mxfp4", "p6-b300.48xlarge", 1, CUDA)
    f = _flags(spec.head.argv)
    assert spec.worker is None and spec.nodes == 1 and len(spec.roles()) == 1
    for flag, value in {**COMMON, "--tensor-parallel-size": "8", "--gpu-memory-utilization": "0.95",
                        "--load-format": "fastsafetensors", "--kv-cache-dtype": "fp8",
                        "--max-model-len": "1048576", "--no-enable-flashinfer-autotune": True}.items():
        assert f[flag] == value, flag
    assert json.loads(f["--attention-config"]) == {"use_prefill_query_quantization": True,
                                                   "mla_prefill_backend": "flashinfer"}
    assert not {"--pipeline-parallel-size", "--nnodes", "--node-rank", "--master-addr", "--headless",
                "--max-num-seqs", "--max-num-batched-tokens", "--moe-backend", "--data-parallel-size"} & set(f)
    env = spec.head.env_dict
    assert env == {"VLLM_ALLREDUCE_USE_FLASHINFER": "1", "VLLM_USE_V2_MODEL_RUNNER": "1",
                   "VLLM_USE_RUST_FRONTEND": "1",
                   "VLLM_ENGINE_READY_TIMEOUT_S": str(p.cold_start.startup_timeout_s)}
    assert [k for k, _ in spec.head.env][:3] == sorted(k for k in env if k != "VLLM_ENGINE_READY_TIMEOUT_S")


def test_blackwell_two_nodes_pipelines_with_rank_placeholders():
    p, spec = _spec("mxfp4", "p6-b300.48xlarge", 2, CUDA)
    head, worker = _flags(spec.head.argv), _flags(spec.worker.argv)
    for f in (head, worker):
        assert f["--pipeline-parallel-size"] == "2" and f["--nnodes"] == "2"
        assert f["--master-addr"] == "${NODE0_ADDR}" and f["--data-parallel-backend"] == "mp"
        assert f["--gpu-memory-utilization"] == "0.9" and f["--max-num-batched-tokens"] == "8192"
    assert head["--node-rank"] == "0" and "--headless" not in head
    assert worker["--node-rank"] == "${NODE_RANK}" and worker["--headless"] is True
    for env in (spec.head.env_dict, spec.worker.env_dict):
        assert env["NCCL_CUMEM_ENABLE"] == "1" and env["VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS"] == "1800"
        assert env["GLOO_SOCKET_IFNAME"] == env["NCCL_SOCKET_IFNAME"] == "${NODE_IFNAME}"
        assert env["VLLM_ENGINE_READY_TIMEOUT_S"] == str(p.cold_start.startup_timeout_s)
    roles = spec.roles()
    assert [r.node_rank for r in roles] == [0, 1] and roles[1].role == "worker"
    assert _flags(roles[1].argv)["--node-rank"] == "1"


def test_hopper_uses_the_recipes_kernels_and_bf16_kv():
    p, spec = _spec("mxfp4", "p5.48xlarge", 4, CUDA)
    f = _flags(spec.head.argv)
    assert f["--moe-backend"] == "marlin" and f["--disable-custom-all-reduce"] is True
    assert f["--attention-backend"] == "FLASHMLA" and f["--max-num-seqs"] == "5"
    assert f["--max-model-len"] == "32768" and f["--max-num-batched-tokens"] == "4096"
    assert f["--gpu-memory-utilization"] == "0.97"
    assert not {"--kv-cache-dtype", "--attention-config", "--load-format"} & set(f)
    assert spec.head.env_dict["PYTORCH_CUDA_ALLOC_CONF"] == "expandable_segments:True"


def test_load_format_follows_streaming_and_the_runtime_override():
    _, spec = _spec("mxfp4", "p6-b300.48xlarge", 1, CUDA, weights_source="s3", stream_weights=True)
    assert _flags(spec.head.argv)["--load-format"] == "runai_streamer"
    _, spec = _spec("mxfp4", "p6-b300.48xlarge", 1, CUDA, load_format="safetensors")
    assert _flags(spec.head.argv)["--load-format"] == "safetensors"


def test_runtime_values_reach_the_argv_and_spec():
    p, spec = _spec("w4a8", "atlas-800-a3", 4, ASCEND, max_model_len=131072, served_model_name="k3-x",
                    model_path="/weights/k3", host="10.0.0.1", rpc_port=14000, vision_chunks_per_prompt=7,
                    api_key=True, hf_token=True, extra_args=("--speculative-config", "{}"))
    f = _flags(spec.head.argv)
    assert spec.head.argv[2] == spec.model_path == "/weights/k3"
    assert (f["--served-model-name"], f["--host"], f["--data-parallel-rpc-port"]) == ("k3-x", "10.0.0.1", "14000")
    assert json.loads(f["--limit-mm-per-prompt"]) == {"vision_chunk": 7}
    assert spec.head.argv[-2:] == ("--speculative-config", "{}")
    assert (spec.served_model_name, spec.port, spec.rpc_port, spec.readiness_path) == ("k3-x", 11025, 14000, "/health")
    assert (spec.image, spec.vllm_version, spec.platform) == (ASCEND, "0.23.0", "ascend")
    assert spec.secret_env == ("VLLM_API_KEY", "HF_TOKEN")
    assert "--api-key" not in f  # the key comes from the environment, never the command line
    assert L.launch(p, L.Runtime(image=ASCEND, port=1, hf_token=True)).secret_env == ("HF_TOKEN",)
    assert L.launch(p, L.Runtime(image=ASCEND, port=1)).secret_env == ()


def test_flags_unknown_to_the_images_vllm_are_refused():
    p = plan(PlanRequest("mxfp4", "p6-b300.48xlarge", 1))
    with pytest.raises(ValueError, match="--no-such-flag"):
        L.launch(p, L.Runtime(image=CUDA, port=1, extra_args=("--no-such-flag",)))


@pytest.mark.parametrize("image,message", [
    ("nope:1", "kimi-k3:image='nope:1' is not a known serving image; use one of "
               "quay.io/ascend/vllm-ascend:kimi-k3-a3, vllm/vllm-openai:kimi-k3 (flags are checked per image)"),
    (ASCEND, "kimi-k3:image='quay.io/ascend/vllm-ascend:kimi-k3-a3' is built for ascend; use an image "
             "built for cuda"),
])
def test_image_refusals(image, message):
    p = plan(PlanRequest("mxfp4", "p6-b300.48xlarge", 1))
    with pytest.raises(ConfigError) as e:
        L.launch(p, L.Runtime(image=image, port=1))
    assert str(e.value) == message


def test_an_image_without_the_k3_parsers_is_refused(monkeypatch):
    monkeypatch.setitem(IMAGES, "old/vllm:1", ServingImage("old/vllm:1", "cuda", "0.22.9"))
    p = plan(PlanRequest("mxfp4", "p6-b300.48xlarge", 1))
    with pytest.raises(ConfigError) as e:
        L.launch(p, L.Runtime(image="old/vllm:1", port=1))
    assert str(e.value) == ("kimi-k3:image='old/vllm:1' has vLLM 0.22.9, which lacks the kimi_k3 parsers; "
                            "use an image with vLLM >= 0.23.0")
    # exactly the parsers' first release passes the parser check (an A3 image is on 0.23.0)
    monkeypatch.setitem(IMAGES, "new/ascend:1", ServingImage("new/ascend:1", "ascend", "0.23.0", "0.23.0"))
    a3 = plan(PlanRequest("w4a8", "atlas-800-a3", 4, max_model_len=131072))
    assert L.launch(a3, L.Runtime(image="new/ascend:1", port=1)).vllm_version == "0.23.0"


def test_spec_invariants_are_enforced():
    _, spec = _spec("mxfp4", "p6-b300.48xlarge", 2, CUDA)
    d = spec.__dict__
    bad_head = L.RoleSpec("worker", 0, spec.head.argv, spec.head.env)
    with pytest.raises(ValueError, match="^the head must be role 'head' at node rank 0$"):
        L.LaunchSpec(**{**d, "head": bad_head})
    with pytest.raises(ValueError, match="^the head must be role 'head' at node rank 0$"):
        L.LaunchSpec(**{**d, "head": L.RoleSpec("head", 1, spec.head.argv, spec.head.env)})
    with pytest.raises(ValueError, match="^the head must not get --data-parallel-start-rank$"):
        L.LaunchSpec(**{**d, "head": L.RoleSpec("head", 0, spec.head.argv + ("--data-parallel-start-rank", "0"), ())})
    with pytest.raises(ValueError, match="^a multi-node spec needs a worker template, a single-node one none$"):
        L.LaunchSpec(**{**d, "worker": None})
    with pytest.raises(ValueError, match="^a multi-node spec needs a worker template, a single-node one none$"):
        L.LaunchSpec(**{**d, "nodes": 1})
    with pytest.raises(ValueError, match="^workers must be --headless$"):
        L.LaunchSpec(**{**d, "worker": L.RoleSpec("worker", -1, ("vllm", "serve", "/m"), ())})


def test_the_api_key_guard_invariants_are_enforced():
    from components.inference import api_guard as guard
    _, keyed = _spec("mxfp4", "p6-b300.48xlarge", 1, CUDA, api_key=True)
    assert keyed.api_guard and guard.IMPORT_PATH in keyed.head.argv
    d = keyed.__dict__
    with pytest.raises(ValueError) as e:
        L.LaunchSpec(**{**d, "api_guard": False})
    assert str(e.value) == "api_guard and the head's --middleware flag disagree"
    rust = L.RoleSpec("head", 0, keyed.head.argv, tuple(keyed.head.env) + ((guard.RUST_FRONTEND_ENV, "1"),))
    with pytest.raises(ValueError) as e:
        L.LaunchSpec(**{**d, "head": rust})
    assert str(e.value) == "vLLM's Rust front end refuses --middleware: the guard needs the Python front end"


def test_spec_round_trips_through_its_dict():
    for args in (("w4a8", "atlas-800-a3", 4, ASCEND, 131072), ("mxfp4", "p6-b300.48xlarge", 1, CUDA, None)):
        _, spec = _spec(*args[:4], max_model_len=args[4], api_key=True)
        back = L.LaunchSpec.from_dict(json.loads(json.dumps(spec.to_dict())))
        assert back == spec and isinstance(back.secret_env, tuple)
        d = spec.to_dict()
        d.pop("secret_env")
        assert L.LaunchSpec.from_dict(d).secret_env == ()


def test_for_rank_fills_every_rank_placeholder_and_nothing_else():
    _, spec = _spec("w4a8", "atlas-800-a3", 4, ASCEND, max_model_len=131072)
    r3 = spec.worker.for_rank(3)
    assert (r3.role, r3.node_rank) == ("worker", 3)
    assert _flags(r3.argv)["--data-parallel-start-rank"] == "3"
    assert "${NODE_RANK}" not in " ".join(r3.argv) and "${NODE0_ADDR}" in " ".join(r3.argv)
    assert [r.node_rank for r in spec.roles()] == [0, 1, 2, 3]
    assert L.ph("NODE_ADDR") == "${NODE_ADDR}"
    assert L.model_dir_name(plan(PlanRequest("w4a8", "atlas-800-a3", 4))) == "Kimi-K3-w4a8"


def test_the_data_parallel_address_is_given_exactly_when_there_are_several_ranks():
    small = {"weights_bytes": 400_000_000_000}  # fits one A3 node: one data-parallel rank
    p1 = plan(PlanRequest("w4a8", "atlas-800-a3", 1, max_model_len=131072, model_overrides=small))
    f1 = _flags(L.launch(p1, L.Runtime(image=ASCEND, port=1)).head.argv)
    assert f1["--data-parallel-size"] == "1"
    assert "--data-parallel-address" not in f1 and "--data-parallel-rpc-port" not in f1
    _, spec2 = _spec("w4a8", "atlas-800-a3", 2, ASCEND, max_model_len=131072)
    f2 = _flags(spec2.head.argv)
    assert f2["--data-parallel-size"] == "2" and f2["--data-parallel-address"] == "${NODE0_ADDR}"
