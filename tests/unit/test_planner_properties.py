"""Planner and launch-spec invariants over generated inputs (hypothesis)."""

from hypothesis import given, settings, strategies as st

from components.inference.catalog import DEFAULT_IMAGE_FOR_PLATFORM, MODELS, NODE_SHAPES
from components.inference.errors import ConfigError
from components.inference.launch import Runtime, launch
from components.inference.planner import PlanRequest, plan
from components.inference.vllm_flags import check_flags

requests = st.builds(
    PlanRequest,
    model=st.sampled_from(sorted(MODELS)),
    node_shape=st.sampled_from(sorted(NODE_SHAPES)),
    nodes=st.integers(1, 64),
    max_model_len=st.one_of(st.none(), st.integers(1024, 1_048_576)),
    max_num_seqs=st.one_of(st.none(), st.integers(1, 512)),
    gpu_memory_utilization=st.one_of(st.none(), st.floats(0.5, 0.98)),
    kv_cache_dtype=st.one_of(st.none(), st.sampled_from(["auto", "fp8"])),
)


@settings(max_examples=300, deadline=None)
@given(requests)
def test_a_plan_either_fits_by_construction_or_is_refused(req):
    try:
        p = plan(req)
    except ConfigError as e:
        assert e.key.startswith("kimi-k3:") and str(e.value) in str(e)
        return
    par, mem = p.parallelism, p.memory
    assert par.tensor_parallel * par.data_parallel * par.pipeline_parallel == p.nodes * p.devices_per_node
    if par.enable_expert_parallel:
        assert par.expert_parallel == par.tensor_parallel * par.data_parallel
    else:
        assert par.expert_parallel == 1
    used = mem.weights_gib_per_device + mem.reserve_gib_per_device + mem.kv_cache_gib_per_device
    assert used <= mem.device_memory_gib * mem.gpu_memory_utilization + 0.002  # rounding to 3 places
    assert mem.kv_cache_gib_per_device > 0
    assert p.full_length_seqs_per_replica >= 1
    if req.max_model_len is not None:
        assert p.max_model_len == req.max_model_len
    assert p.cold_start.startup_timeout_s >= p.cold_start.estimate_s


@settings(max_examples=200, deadline=None)
@given(requests, st.integers(1024, 65535))
def test_launch_roles_are_consistent(req, port):
    try:
        p = plan(req)
    except ConfigError:
        return
    spec = launch(p, Runtime(image=DEFAULT_IMAGE_FOR_PLATFORM[p.platform], port=port))
    roles = spec.roles()
    assert len(roles) == p.nodes and roles[0].role == "head"
    assert "--data-parallel-start-rank" not in roles[0].argv
    ranks = set()
    for r in roles:
        assert r.argv[:3] == ("vllm", "serve", spec.model_path)
        check_flags(r.argv, spec.vllm_version)
        assert "VLLM_ENABLE_K3_LATENT_MOE_TAIL_FUSION" not in r.env_dict
        assert r.argv[r.argv.index("--port") + 1] == str(port)
        assert r.argv[r.argv.index("--max-model-len") + 1] == str(p.max_model_len)
        if r.role == "worker":
            assert "--headless" in r.argv
            if "--data-parallel-start-rank" in r.argv:
                ranks.add(r.argv[r.argv.index("--data-parallel-start-rank") + 1])
            else:
                ranks.add(r.argv[r.argv.index("--node-rank") + 1])
            assert "${NODE_RANK}" not in " ".join(r.argv)
    assert len(ranks) == p.nodes - 1
    assert "0" not in ranks
