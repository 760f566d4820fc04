"""The planner against every published deployment point (docs/planner.md, "Calibration", names their sources) and its refusals."""

import pytest

from components.inference.errors import ConfigError, PlanError
from components.inference.planner import PlanRequest, plan


def test_b300_single_node_is_tp8_with_1m_context_in_fp8():
    p = plan(PlanRequest("mxfp4", "p6-b300.48xlarge", 1))
    par = p.parallelism
    assert (par.tensor_parallel, par.data_parallel, par.pipeline_parallel) == (8, 1, 1)
    assert not par.enable_expert_parallel
    assert p.max_model_len == 1_048_576
    assert p.memory.kv_cache_dtype == "fp8"
    assert p.memory.gpu_memory_utilization == 0.95
    assert p.full_length_seqs_per_replica >= 1


def test_b300_two_nodes_is_tp8_pp2_at_090():
    p = plan(PlanRequest("mxfp4", "p6-b300.48xlarge", 2))
    assert (p.parallelism.tensor_parallel, p.parallelism.pipeline_parallel) == (8, 2)
    assert p.memory.gpu_memory_utilization == 0.90
    assert p.max_num_batched_tokens == 8192


def test_eight_h200_cannot_hold_mxfp4_and_says_the_minimum():
    with pytest.raises(PlanError) as e:
        plan(PlanRequest("mxfp4", "p5en.48xlarge", 1))
    assert e.value.key == "kimi-k3:nodes"
    assert "use at least 2" in str(e.value)
    assert "1.68 TB" in str(e.value)


def test_h100_needs_four_nodes_like_the_recipe():
    with pytest.raises(PlanError, match="use at least 4"):
        plan(PlanRequest("mxfp4", "p5.48xlarge", 2))
    assert plan(PlanRequest("mxfp4", "p5.48xlarge", 4)).parallelism.pipeline_parallel == 4


def test_b200_needs_two_nodes():
    with pytest.raises(PlanError, match="use at least 2"):
        plan(PlanRequest("mxfp4", "p6-b200.48xlarge", 1))


def test_four_a3_is_the_seed_layout():
    p = plan(PlanRequest("w4a8", "atlas-800-a3", 4, max_model_len=131072))
    par = p.parallelism
    assert (par.tensor_parallel, par.data_parallel, par.pipeline_parallel) == (16, 4, 1)
    assert par.enable_expert_parallel and par.expert_parallel == 64
    assert par.data_parallel_size_local == 1
    assert p.max_num_seqs == 16
    assert p.max_num_batched_tokens == 24576
    assert p.memory.gpu_memory_utilization == 0.9
    assert p.cold_start.startup_timeout_s == 7200


def test_1m_context_on_a3_needs_eight_nodes():
    for nodes in (4, 7):
        with pytest.raises(PlanError) as e:
            plan(PlanRequest("w4a8", "atlas-800-a3", nodes, max_model_len=1_048_576))
        assert "use at least 8" in str(e.value)
    p = plan(PlanRequest("w4a8", "atlas-800-a3", 8, max_model_len=1_048_576))
    assert p.parallelism.expert_parallel == 128
    assert p.max_num_batched_tokens == 8192


def test_planner_picks_1m_on_eight_a3_nodes_when_unset():
    assert plan(PlanRequest("w4a8", "atlas-800-a3", 8)).max_model_len == 1_048_576
    assert plan(PlanRequest("w4a8", "atlas-800-a3", 4)).max_model_len < 1_048_576


def test_one_a3_node_cannot_hold_w4a8():
    with pytest.raises(PlanError) as e:
        plan(PlanRequest("w4a8", "atlas-800-a3", 1))
    assert str(e.value).startswith("kimi-k3:nodes=1 cannot hold Kimi K3 W4A8 (1.56 TB)")
    assert str(e.value).endswith("use at least 2")


@pytest.mark.parametrize("req,key", [
    (PlanRequest("w4a8", "p6-b300.48xlarge", 1), "kimi-k3:model"),
    (PlanRequest("mxfp4", "atlas-800-a3", 4), "kimi-k3:model"),
    (PlanRequest("nope", "atlas-800-a3", 4), "kimi-k3:model"),
    (PlanRequest("mxfp4", "p6-b300.48xlarge", 3), "kimi-k3:nodes"),
    (PlanRequest("mxfp4", "p6-b300.48xlarge", 0), "kimi-k3:nodes"),
    (PlanRequest("w4a8", "atlas-800-a3", 65), "kimi-k3:nodes"),
    (PlanRequest("w4a8", "atlas-800-a3", 4, kv_cache_dtype="fp8"), "kimi-k3:kvCacheDtype"),
    (PlanRequest("w4a8", "atlas-800-a3", 4, max_model_len=2_000_000), "kimi-k3:maxModelLen"),
    (PlanRequest("w4a8", "atlas-800-a3", 4, gpu_memory_utilization=1.2), "kimi-k3:gpuMemoryUtilization"),
    (PlanRequest("w4a8", "atlas-800-a3", 4, weights_source="s3"), "kimi-k3:weightsSource"),
    (PlanRequest("mxfp4", "p6-b300.48xlarge", 1, stream_weights=True), "kimi-k3:streamWeights"),
    (PlanRequest("w4a8", "atlas-800-a3", 4, model_overrides={"layers": 3}), "kimi-k3:modelOverrides"),
])
def test_bad_input_names_the_key(req, key):
    with pytest.raises(ConfigError) as e:
        plan(req)
    assert e.value.key == key
    assert "\n" not in str(e.value) and ";" in str(e.value)


def test_overrides_change_the_answer():
    base = plan(PlanRequest("w4a8", "atlas-800-a3", 4, max_model_len=131072))
    more = plan(PlanRequest("w4a8", "atlas-800-a3", 4, max_model_len=131072,
                            model_overrides={"mla_layers": 66}))
    assert more.memory.kv_bytes_per_token_per_device == 2 * base.memory.kv_bytes_per_token_per_device


def test_streaming_from_s3_skips_staging():
    p = plan(PlanRequest("mxfp4", "p6-b300.48xlarge", 1, weights_source="s3", stream_weights=True))
    assert p.cold_start.loading == "stream-s3" and p.cold_start.stage_s == 0


def test_plan_round_trips_and_explains():
    p = plan(PlanRequest("mxfp4", "p6-b300.48xlarge", 2))
    from components.inference.planner import Plan
    assert Plan.from_dict(p.to_dict()) == p
    text = p.explain()
    assert "TP8 x PP2" in text and len(text.splitlines()) <= 12
