"""The planner against every published deployment point (docs/planner.md, "Calibration", names their sources) and its refusals."""

import pytest
from dataclasses import replace

from components.inference import coldstart as cs
from components.inference.catalog import GIB, MODELS, NODE_SHAPES
from components.inference.errors import ConfigError, PlanError
from components.inference.planner import (
    ColdStart as cs_cold,
    Plan,
    PlanRequest,
    _first_token_text,
    _minutes,
    plan,
)


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


# ---- merged from test_planner_behaviour.py:
# Planner behaviour away from the seed points: pipelined KV, Hopper contexts, every range's edges,
# the exact refusal a user reads, and the cold-start budget's safety factor.
#
# Written against the survivors of a mutation run (`./run mutate planner coldstart`): each test
# names the behaviour a plausible bug would break. Figures are derived by hand where the formula
# is simple (KV per token = MLA layers x (kv_lora_rank + rope dim) x dtype bytes / pipeline
# stages, docs/planner.md) and pinned where they are the catalog's arithmetic.

MLA_ELEMENTS_PER_TOKEN = 33 * (512 + 64)  # ModelArchitecture defaults: 33 MLA layers


@pytest.mark.parametrize("shape,nodes,dtype_bytes", [
    ("p5.48xlarge", 4, 2),        # Hopper, auto (bf16) KV, 4 pipeline stages
    ("p5en.48xlarge", 2, 2),      # Hopper, 2 stages
    ("p6-b300.48xlarge", 2, 1),   # Blackwell, fp8 KV, 2 stages
    ("p6-b300.48xlarge", 1, 1),   # no pipelining: all layers on every device
    ("atlas-800-a3", 4, 2),       # Ascend: DP across nodes, never pipelined
])
def test_kv_bytes_per_token_are_split_across_pipeline_stages_only(shape, nodes, dtype_bytes):
    p = plan(PlanRequest("w4a8" if shape == "atlas-800-a3" else "mxfp4", shape, nodes))
    stages = p.parallelism.pipeline_parallel
    assert stages == (1 if shape == "atlas-800-a3" else nodes)
    assert p.memory.kv_bytes_per_token_per_device == MLA_ELEMENTS_PER_TOKEN * dtype_bytes / stages
    # the KV capacity is what the KV cache holds at that per-token size
    m = p.memory
    assert abs(m.kv_tokens_per_replica - m.kv_cache_gib_per_device * GIB / m.kv_bytes_per_token_per_device) \
        < 0.001 * GIB / m.kv_bytes_per_token_per_device + 1


@pytest.mark.parametrize("shape,nodes,context,kv_tokens,full_seqs,util", [
    # Hopper: the profile caps the planner's own choice at 32K even where 1M would fit
    ("p5.48xlarge", 4, 32_768, 2_521_391, 75, 0.97),
    ("p5en.48xlarge", 2, 32_768, 1_808_274, 54, 0.97),
    # Blackwell pipelined: 0.90 utilization, the full 1M context
    ("p6-b300.48xlarge", 2, 1_048_576, 15_298_463, 14, 0.90),
    ("p6-b200.48xlarge", 2, 1_048_576, 6_248_934, 5, 0.90),
    ("p6-b300.48xlarge", 1, 1_048_576, 2_882_193, 2, 0.95),
])
def test_cuda_plans_pinned(shape, nodes, context, kv_tokens, full_seqs, util):
    p = plan(PlanRequest("mxfp4", shape, nodes))
    assert p.max_model_len == context
    assert p.memory.kv_tokens_per_replica == kv_tokens
    assert p.full_length_seqs_per_replica == full_seqs
    assert p.memory.gpu_memory_utilization == util


def test_hopper_cap_is_only_the_planners_choice_a_user_may_ask_for_more():
    assert plan(PlanRequest("mxfp4", "p5.48xlarge", 4)).max_model_len == 32_768
    assert plan(PlanRequest("mxfp4", "p5.48xlarge", 4, max_model_len=1_048_576)).max_model_len == 1_048_576


@pytest.mark.parametrize("nodes,context,batched,kv_tokens", [
    (2, 131_072, 24_576, 136_589),    # the largest ladder step that fits two A3 nodes
    (4, 524_288, 8_192, 758_531),     # above 128K the tutorial's 8192 batched tokens
    (8, 1_048_576, 8_192, None),
])
def test_ascend_context_is_the_largest_ladder_step_that_fits(nodes, context, batched, kv_tokens):
    p = plan(PlanRequest("w4a8", "atlas-800-a3", nodes))
    assert p.max_model_len == context
    assert p.max_num_batched_tokens == batched
    assert p.max_num_seqs == 16
    if kv_tokens is not None:
        assert p.memory.kv_tokens_per_replica == kv_tokens
    # one step up the ladder does not fit: asking for it is refused with the minimum node count
    if context < 1_048_576:
        with pytest.raises(PlanError) as e:
            plan(PlanRequest("w4a8", "atlas-800-a3", nodes, max_model_len=context * 2))
        assert e.value.key == "kimi-k3:nodes"


def test_batched_tokens_follow_the_profile():
    assert plan(PlanRequest("mxfp4", "p6-b300.48xlarge", 1)).max_num_batched_tokens is None
    assert plan(PlanRequest("mxfp4", "p6-b300.48xlarge", 2)).max_num_batched_tokens == 8192
    assert plan(PlanRequest("mxfp4", "p5.48xlarge", 4)).max_num_batched_tokens == 4096
    assert plan(PlanRequest("w4a8", "atlas-800-a3", 4, max_model_len=131_072)).max_num_batched_tokens == 24_576
    assert plan(PlanRequest("w4a8", "atlas-800-a3", 4, max_model_len=131_073)).max_num_batched_tokens == 8_192
    assert plan(PlanRequest("w4a8", "atlas-800-a3", 4, max_num_batched_tokens=256)).max_num_batched_tokens == 256
    assert plan(PlanRequest("mxfp4", "p6-b300.48xlarge", 2, max_num_batched_tokens=300)).max_num_batched_tokens == 300


def test_explicit_knobs_win_over_the_profile():
    p = plan(PlanRequest("mxfp4", "p6-b300.48xlarge", 2, gpu_memory_utilization=0.5,
                         max_num_seqs=7, kv_cache_dtype="auto"))
    assert p.memory.gpu_memory_utilization == 0.5
    assert p.memory.usable_gib_per_device == round(p.memory.device_memory_gib * 0.5, 3)
    assert p.max_num_seqs == 7
    assert p.memory.kv_cache_dtype == "auto"
    assert p.memory.kv_bytes_per_token_per_device == MLA_ELEMENTS_PER_TOKEN * 2 / 2
    assert p.memory.kv_cache_gib_per_device == round(
        p.memory.usable_gib_per_device - p.memory.weights_gib_per_device - p.memory.reserve_gib_per_device, 3)


def test_weights_per_device_split_experts_across_ep_and_dense_across_tp():
    a3 = plan(PlanRequest("w4a8", "atlas-800-a3", 4))
    m = MODELS["w4a8"]
    weights = m.weights_bytes / GIB
    experts = weights * m.expert_weight_fraction
    assert a3.memory.weights_gib_per_device == round(experts / 64 + (weights - experts) / 16, 3)
    b300 = plan(PlanRequest("mxfp4", "p6-b300.48xlarge", 2))
    assert b300.memory.weights_gib_per_device == round(MODELS["mxfp4"].weights_bytes / GIB / 16, 3)


# --- every range: just inside accepted, just outside refused with the exact line a user reads ---

A3 = dict(model="w4a8", node_shape="atlas-800-a3", nodes=4)


@pytest.mark.parametrize("knob,value", [
    ("gpu_memory_utilization", 0.5), ("gpu_memory_utilization", 0.98),
    ("max_model_len", 1024), ("max_model_len", 524_288),
    ("max_num_seqs", 1), ("max_num_seqs", 4096),
    ("max_num_batched_tokens", 256),
])
def test_range_edges_are_accepted(knob, value):
    p = plan(PlanRequest(**A3, **{knob: value}))
    got = {"gpu_memory_utilization": p.memory.gpu_memory_utilization, "max_model_len": p.max_model_len,
           "max_num_seqs": p.max_num_seqs, "max_num_batched_tokens": p.max_num_batched_tokens}[knob]
    assert got == value


def test_node_count_edges():
    assert plan(PlanRequest("w4a8", "atlas-800-a3", 64)).parallelism.data_parallel == 64
    assert plan(PlanRequest("mxfp4", "p6-b300.48xlarge", 64)).parallelism.pipeline_parallel == 64
    assert plan(PlanRequest("w4a8", "atlas-800-a3", 3)).parallelism.expert_parallel == 48


@pytest.mark.parametrize("req,message", [
    (PlanRequest("nope", "atlas-800-a3", 4),
     "kimi-k3:model='nope' is not a known Kimi K3 weight variant; use one of mxfp4, nvfp4, w4a8"),
    (PlanRequest("w4a8", "nope", 4),
     # the catalog's shapes (docs/architecture.md: an accelerator added there is listed here)
     f"kimi-k3:accelerator='nope' is not a known node shape; use one of {', '.join(sorted(NODE_SHAPES))}"),
    (PlanRequest("w4a8", "p6-b300.48xlarge", 1),
     "kimi-k3:model='w4a8' (Kimi K3 W4A8) does not load on NVIDIA B300; use mxfp4 or nvfp4 on b300"),
    (PlanRequest("w4a8", "atlas-800-a3", 0), "kimi-k3:nodes=0 is out of range; use 1 to 64"),
    (PlanRequest("w4a8", "atlas-800-a3", 65), "kimi-k3:nodes=65 is out of range; use 1 to 64"),
    (PlanRequest("w4a8", "atlas-800-a3", 4.0), "kimi-k3:nodes=4.0 is out of range; use 1 to 64"),
    (PlanRequest("mxfp4", "p6-b300.48xlarge", 3),
     "kimi-k3:nodes=3 is not a power of two; use 2 or 4 (one pipeline stage per node, stages split "
     "the layers evenly)"),
    (PlanRequest("mxfp4", "p6-b300.48xlarge", 6),
     "kimi-k3:nodes=6 is not a power of two; use 4 or 8 (one pipeline stage per node, stages split "
     "the layers evenly)"),
    (PlanRequest(**A3, kv_cache_dtype="fp8"),
     "kimi-k3:kvCacheDtype='fp8' is not supported here; use one of auto on ascend-910c"),
    (PlanRequest(**A3, gpu_memory_utilization=0.49),
     "kimi-k3:gpuMemoryUtilization=0.49 is out of range; use a value from 0.5 to 0.98"),
    (PlanRequest(**A3, gpu_memory_utilization=0.99),
     "kimi-k3:gpuMemoryUtilization=0.99 is out of range; use a value from 0.5 to 0.98"),
    (PlanRequest(**A3, gpu_memory_utilization=1.0),
     "kimi-k3:gpuMemoryUtilization=1.0 is out of range; use a value from 0.5 to 0.98"),
    (PlanRequest(**A3, max_model_len=1023),
     "kimi-k3:maxModelLen=1023 is out of range; use 1024 to 1048576 (an integer; 131072 is 128K)"),
    (PlanRequest(**A3, max_model_len=1_048_577),
     "kimi-k3:maxModelLen=1048577 is out of range; use 1024 to 1048576 (an integer; 131072 is 128K)"),
    (PlanRequest(**A3, max_num_seqs=0), "kimi-k3:maxNumSeqs=0 is out of range; use 1 to 4096"),
    (PlanRequest(**A3, max_num_seqs=4097), "kimi-k3:maxNumSeqs=4097 is out of range; use 1 to 4096"),
    (PlanRequest(**A3, max_num_batched_tokens=255),
     "kimi-k3:maxNumBatchedTokens=255 is too small; use at least 256"),
    (PlanRequest(**A3, weights_source="s3"),
     "kimi-k3:weightsSource='s3' is not available here; use one of cthpc, modelscope on ascend-910c"),
    (PlanRequest("mxfp4", "p6-b300.48xlarge", 1, stream_weights=True),
     "kimi-k3:streamWeights=true needs weights in S3, not hub; set kimi-k3:weightsSource=s3 or "
     "mirror, or drop streamWeights"),
    (PlanRequest(**A3, model_overrides={"layers": 3}),
     "kimi-k3:modelOverrides='layers' is not a known assumption; use field names listed in "
     "docs/planner.md"),
    (PlanRequest(**A3, model_overrides={"mla_layers": "x"}),
     'kimi-k3:modelOverrides={"mla_layers": "x"} has a non-numeric value; give numbers'),
    (PlanRequest("mxfp4", "p6-b300.48xlarge", 1, weights_source="mirror", block_lead_s=-1),
     "kimi-k3:capacityEarliestStart=-1 is in the past; give a start in the future"),
    (PlanRequest("mxfp4", "p6-b300.48xlarge", 1, weights_source="mirror", mirror_fill_gb_per_s=0),
     "kimi-k3:systemInstanceType=0 gives no mirror bandwidth; use an instance type with network "
     "bandwidth"),
    (PlanRequest("mxfp4", "p5.48xlarge", 2),
     "kimi-k3:nodes=2 cannot hold Kimi K3 MXFP4 (1.68 TB) on 2 x p5.48xlarge (637 GiB of h100 per "
     "node); use at least 4"),
    (PlanRequest("w4a8", "atlas-800-a3", 4, max_model_len=1_048_576),
     "kimi-k3:nodes=4 cannot hold one 1048576-token sequence of Kimi K3 W4A8 next to its weights on "
     "4 x atlas-800-a3 (1.00 TiB of ascend-910c per node); use at least 8"),
    (PlanRequest("w4a8", "atlas-800-a3", 1),
     "kimi-k3:nodes=1 cannot hold Kimi K3 W4A8 (1.56 TB) on 1 x atlas-800-a3 (1.00 TiB of "
     "ascend-910c per node); use at least 2"),
])
def test_refusals_say_exactly_what_is_wrong_and_the_fix(req, message):
    with pytest.raises(ConfigError) as e:
        plan(req)
    assert str(e.value) == message


def test_a_sequence_no_node_count_can_hold_names_the_context_or_the_node_count():
    huge = {"mla_layers": 100_000}
    with pytest.raises(PlanError) as e:
        plan(PlanRequest(**A3, max_model_len=131_072, model_overrides=huge))
    assert e.value.key == "kimi-k3:maxModelLen" and e.value.value == 131_072
    assert e.value.fix == "lower kimi-k3:maxModelLen or use an accelerator with more memory"
    with pytest.raises(PlanError) as e:
        plan(PlanRequest(**A3, model_overrides=huge))
    assert e.value.key == "kimi-k3:nodes" and e.value.value == 4
    assert e.value.fix == "lower kimi-k3:maxModelLen or use an accelerator with more memory"


def test_minimum_node_count_is_searched_from_one_and_up_to_64():
    # one A3 node cannot hold w4a8; the smallest count that holds a 1M sequence is 8
    with pytest.raises(PlanError, match="use at least 2$"):
        plan(PlanRequest("w4a8", "atlas-800-a3", 1))
    with pytest.raises(PlanError, match="use at least 8$"):
        plan(PlanRequest("w4a8", "atlas-800-a3", 7, max_model_len=1_048_576))
    # a context only 64 nodes can hold is still found (the last count searched)
    # (a recurrent state of ~1.28 GB per sequence: 63 nodes fall short, 64 hold it)
    heavy = {"mla_layers": 42, "kv_lora_rank": 514, "kda_state_bytes_per_seq": 1_282_459_853}
    with pytest.raises(PlanError, match="use at least 64$"):
        plan(PlanRequest("w4a8", "atlas-800-a3", 32, max_model_len=1_048_576, model_overrides=heavy))
    assert plan(PlanRequest("w4a8", "atlas-800-a3", 64, max_model_len=1_048_576,
                            model_overrides=heavy)).max_model_len == 1_048_576
    # CUDA only searches powers of two
    with pytest.raises(PlanError, match="use at least 4$"):
        plan(PlanRequest("mxfp4", "p5.48xlarge", 1))


def test_notes_name_idle_expert_devices_and_queued_sequences():
    p = plan(PlanRequest("w4a8", "atlas-800-a3", 64))
    assert p.parallelism.expert_parallel == 1024
    assert "EP1024 exceeds the 896 routed experts: some devices hold none" in p.notes
    p = plan(PlanRequest("w4a8", "atlas-800-a3", 56))
    assert p.parallelism.expert_parallel == 896
    assert not any("routed experts" in n for n in p.notes)
    p = plan(PlanRequest("w4a8", "atlas-800-a3", 4))
    assert p.notes == ("only 1 of max-num-seqs 16 sequences fit at full length; vLLM queues the rest",)
    p = plan(PlanRequest("w4a8", "atlas-800-a3", 4, max_num_seqs=1))
    assert p.notes == ()
    assert plan(PlanRequest("mxfp4", "p6-b300.48xlarge", 1)).notes == ()


A3_TABLE = """\
model          Kimi K3 W4A8 (Eco-Tech/Kimi-K3-w4a8)
hardware       4 x atlas-800-a3 (16 x ascend-910c, 64 GiB each)
layout         DP4 x TP16, EP64 on 64 devices
memory/device  24.7 GiB weights + 6 GiB reserve + 26.9 GiB KV (of 57.6 at 0.9)
context        524,288 tokens, KV auto; 1 full-length seqs per replica, max-num-seqs 16
KV capacity    758,531 tokens per replica
cold start     stage 780 s (cthpc), load 520 s (local-nvme) + warm-up 900 s; timeout 7200 s
first token    37 min after the nodes are up (cthpc)
cost           unknown
note           only 1 of max-num-seqs 16 sequences fit at full length; vLLM queues the rest"""

H100_TABLE = """\
model          Kimi K3 MXFP4 (moonshotai/Kimi-K3)
hardware       4 x p5.48xlarge (8 x h100, 79.6 GiB each)
layout         TP8 x PP4 on 32 devices
memory/device  48.9 GiB weights + 6 GiB reserve + 22.3 GiB KV (of 77.2 at 0.97)
context        32,768 tokens, KV auto; 75 full-length seqs per replica, max-num-seqs 5
KV capacity    2,521,391 tokens per replica
cold start     stage 312 s (s3), load 24 s (local-nvme) + warm-up 600 s; timeout 3600 s
first token    16 min after the block starts (s3), 8.6 min with the compile cache; hub path 62 min, \
saves 3.1 GPU node-h per start ($173)
cost           $221.24/h"""


def test_explain_is_the_table_a_person_reads():
    assert plan(PlanRequest("w4a8", "atlas-800-a3", 4)).explain() == A3_TABLE
    # no catalog shape carries a price today: the cost rows are checked with one set here
    h100 = replace(plan(PlanRequest("mxfp4", "p5.48xlarge", 4, weights_source="s3", compile_cache=True)),
                   usd_per_hour=55.31)
    assert str(h100) == H100_TABLE


def test_explain_layout_names_only_the_parallelism_in_use():
    rows = {}
    for req in (PlanRequest("mxfp4", "p6-b300.48xlarge", 1), PlanRequest("mxfp4", "p6-b300.48xlarge", 2)):
        text = plan(req).explain()
        rows[req.nodes] = {line[:13].strip(): line[15:] for line in text.splitlines()}
    assert rows[1]["layout"] == "TP8 on 8 devices"
    assert rows[2]["layout"] == "TP8 x PP2 on 16 devices"
    assert rows[2]["context"].endswith("max-num-seqs vLLM default")
    assert rows[2]["first token"].startswith("60 min after the block starts (hub)")
    assert "hub path" not in rows[2]["first token"]
    streamed = plan(PlanRequest("mxfp4", "p6-b300.48xlarge", 2, weights_source="s3", stream_weights=True))
    assert "min after the block starts (s3, streamed); hub path" in streamed.explain()


def test_plan_round_trips_through_its_dict_with_phases_and_notes():
    p = plan(PlanRequest("w4a8", "atlas-800-a3", 4))
    assert p.notes and p.cold_start.phases
    back = Plan.from_dict(p.to_dict())
    assert back == p and isinstance(back.notes, tuple) and isinstance(back.cold_start.phases, tuple)
    d = p.to_dict()
    d.pop("notes")
    assert Plan.from_dict(d).notes == ()


# --- the cold-start budget: (load + compile + graphs) x 1.5, rounded up to a minute, floored ---

def _path(load, compile_s, graphs, stage=10_000, node=500):
    return cs.Path("hub", "local-nvme", (
        cs.Phase("node", node, "gpu", "t"), cs.Phase("stage", stage, "gpu", "t"),
        cs.Phase("load", load, "gpu", "t"), cs.Phase("compile", compile_s, "gpu", "t"),
        cs.Phase("graphs", graphs, "gpu", "t")))


@pytest.mark.parametrize("load,compile_s,graphs,floor,want", [
    (3000, 1000, 200, 3600, 6300),   # 4200 s x 1.5 = 6300 s, exactly 105 min
    (3001, 1000, 200, 3600, 6360),   # 6301.5 s rounds up to the next minute
    (100, 200, 100, 3600, 3600),     # 600 s x 1.5 is under the floor
    (2000, 400, 0, 3600, 3600),      # 3600 exactly
    (2000, 401, 0, 3600, 3660),
])
def test_startup_timeout_is_the_engine_phases_with_the_safety_factor(load, compile_s, graphs, floor, want):
    assert cs.COLD_START_SAFETY == 1.5
    assert cs.startup_timeout(_path(load, compile_s, graphs), floor) == want


def test_staging_and_node_boot_are_not_on_the_engine_clock():
    assert cs.startup_timeout(_path(3000, 1000, 200, stage=1, node=1), 0) == \
        cs.startup_timeout(_path(3000, 1000, 200, stage=90_000, node=9_000), 0) == 6300


def test_plan_timeout_covers_the_engine_phases_with_margin():
    for req in (PlanRequest("w4a8", "atlas-800-a3", 4), PlanRequest("mxfp4", "p5.48xlarge", 4),
                PlanRequest("mxfp4", "p6-b300.48xlarge", 2, weights_source="s3", stream_weights=True)):
        c = plan(req).cold_start
        engine = sum(ph.seconds for ph in c.phases if ph.name in ("load", "compile", "graphs"))
        assert c.startup_timeout_s >= 1.5 * engine
        assert c.startup_timeout_s % 60 == 0


def test_the_minimum_search_stops_at_64_and_allows_any_count_on_ascend():
    # ~1.49 GB of recurrent state per sequence: 64 nodes fall short (65 would not: never offered)
    past = {"mla_layers": 42, "kv_lora_rank": 514, "kda_state_bytes_per_seq": 1_490_108_663}
    with pytest.raises(PlanError) as e:
        plan(PlanRequest(**A3, max_model_len=1_048_576, model_overrides=past))
    assert e.value.key == "kimi-k3:maxModelLen" and e.value.fix.startswith("lower kimi-k3:maxModelLen")
    # Ascend counts need not be powers of two: the minimum here is 55, not 64
    with pytest.raises(PlanError, match="use at least 55$"):
        plan(PlanRequest("w4a8", "atlas-800-a3", 1, max_model_len=1_048_576, model_overrides={"mla_layers": 42}))


def test_layouts_are_exactly_the_published_ones():
    from components.inference.planner import Parallelism
    assert plan(PlanRequest("mxfp4", "p6-b300.48xlarge", 2)).parallelism == Parallelism(8, 1, 2, 1, False, 1)
    assert plan(PlanRequest("mxfp4", "p6-b300.48xlarge", 1)).parallelism.enable_expert_parallel is False
    assert plan(PlanRequest("w4a8", "atlas-800-a3", 3)).parallelism == Parallelism(16, 3, 1, 48, True, 1)
    assert "DP2 x TP16, EP32 on 32 devices" in plan(PlanRequest("w4a8", "atlas-800-a3", 2)).explain()


def test_pipelined_recurrent_state_is_split_across_tp_and_pp():
    # B300 x2 (TP8 x PP2): the KDA state of a sequence is split over 16 devices, so 14 full 1M
    # sequences fit; split over TP/PP (4) they would not
    p = plan(PlanRequest("mxfp4", "p6-b300.48xlarge", 2))
    state = MODELS["mxfp4"].architecture.kda_state_bytes_per_seq / 16
    per_seq = p.memory.kv_bytes_per_token_per_device * p.max_model_len + state
    assert p.full_length_seqs_per_replica == int(p.memory.kv_cache_gib_per_device * GIB // per_seq) == 14


def test_a_cold_start_dict_without_phases_reads_back():
    d = plan(PlanRequest("w4a8", "atlas-800-a3", 4)).to_dict()
    d["cold_start"].pop("phases")
    assert Plan.from_dict(d).cold_start.phases == ()


def _cold(**kw):
    base = dict(weights_source="s3", loading="local-nvme", stage_s=1, load_s=1, warmup_s=1, estimate_s=1,
                startup_timeout_s=60, first_token_s=1200)
    return cs_cold(**{**base, **kw})




def test_first_token_text_edges():
    assert _minutes(600) == "10 min" and _minutes(599) == "10.0 min" and _minutes(30) == "0.5 min"
    assert _first_token_text(_cold(first_token_cached_s=1200), None) == "20 min after the block starts (s3)"
    assert _first_token_text(_cold(first_token_cached_s=1199), None) == \
        "20 min after the block starts (s3), 20 min with the compile cache"
    assert _first_token_text(_cold(hub_first_token_s=1200, gpu_node_s_saved=0), None) == \
        "20 min after the block starts (s3); hub path 20 min"
    assert _first_token_text(_cold(hub_first_token_s=4980, gpu_node_s_saved=3780), 100.0) == \
        "20 min after the block starts (s3); hub path 83 min, saves 1.1 GPU node-h per start ($105)"
    assert _first_token_text(_cold(weights_source="hub", hub_first_token_s=1200, gpu_node_s_saved=5), 1.0) == \
        "20 min after the block starts (hub)"
    assert _first_token_text(_cold(loading="stream-s3"), None) == "20 min after the block starts (s3, streamed)"


# --- the cold-start paths, phase by phase (components/inference/coldstart.py) ---------------

ENGINE = cs.EngineStart(300, 60, 90, "eng-src")
GRAPHS = "CUDA-graph capture and warm-up; whn09: ~2 min on p6-b300 (SGLang); not cached"
NODE = "assumption: instance boot, EKS join, device plugins, image pull"
FILL_ASSUMED = ("assumption: the hub rate; a small system node's baseline bandwidth may bound it "
                "(see docs/aws-eks.md)")
LATE = "; the block starts before it is full, so this start stages from the hub"
LOCAL = "800 GB per node from local NVMe at 8 GB/s (assumption; modelexpress: 1m10s from fast local storage)"


def _cs_path(**kw):
    return cs.path(checkpoint_bytes=1_600_000_000_000, bytes_per_node=800e9, nvme_gb_per_s=8.0,
                   engine=ENGINE, **kw)


def _phases(p):
    return [(x.name, x.seconds, x.clock, x.source) for x in p.phases]


def test_a_mirror_the_block_outruns_stages_from_the_hub_meanwhile():
    p = _cs_path(source="mirror", stream=False, block_lead_s=100, node_ready_s=400, mirror_fill_gb_per_s=2.0)
    assert (p.source, p.loading) == ("mirror", "local-nvme")
    assert _phases(p) == [
        ("mirror", 800, "before-block", "1,600 GB from the hub on the system node (2 GB/s)" + LATE),
        ("node", 400, "gpu", NODE),
        ("stage", 3200, "gpu", "1,600 GB from hub at 0.5 GB/s; assumption: Hugging Face over the internet, "
                               "per node (peers report anything from 0.2 to 3 GB/s)"),
        ("load", 100, "gpu", LOCAL), ("compile", 300, "gpu", "eng-src"), ("graphs", 90, "gpu", GRAPHS)]
    assert p.gpu_seconds() == 4090 and p.gpu_seconds(cached=True) == 3790
    assert cs.startup_timeout(p, 600) == 780  # (100 + 300 + 90) x 1.5 = 735 -> 780


def test_a_full_mirror_stages_from_the_bucket_and_a_lead_equal_to_the_fill_is_enough():
    for lead in (None, 3200, 3201):
        p = _cs_path(source="mirror", stream=False, block_lead_s=lead)
        assert _phases(p) == [
            ("mirror", 3200, "before-block", f"1,600 GB from the hub on the system node ({FILL_ASSUMED})"),
            ("stage", 320, "gpu", "1,600 GB from mirror at 5 GB/s; the same S3 read as `s3`, from the stack's own bucket"),
            ("load", 100, "gpu", LOCAL), ("compile", 300, "gpu", "eng-src"), ("graphs", 90, "gpu", GRAPHS)]
    late = _cs_path(source="mirror", stream=False, block_lead_s=3199)
    assert late.phase("stage").source.startswith("1,600 GB from hub at 0.5 GB/s")


def test_streaming_from_an_incomplete_mirror_waits_for_it_on_the_gpu_clock():
    p = _cs_path(source="mirror", stream=True, block_lead_s=100, node_ready_s=400)
    assert (p.loading, [x.name for x in p.phases]) == (
        "stream-s3", ["mirror", "node", "wait", "stage", "load", "compile", "graphs"])
    assert p.phase("wait") == cs.Phase("wait", 2700, "gpu", "streaming needs the complete mirror: the pods wait for it")
    assert p.phase("stage") == cs.Phase("stage", 0, "gpu", "nothing staged: vLLM streams from S3")
    assert p.phase("load").seconds == 267 and p.phase("load").source.startswith("800 GB per node at 3 GB/s; ")
    assert p.gpu_seconds() == 400 + 2700 + 0 + 267 + 300 + 90
    # a node that boots after the mirror is full does not wait
    assert _cs_path(source="mirror", stream=True, block_lead_s=100, node_ready_s=3100).phase("wait") is None
    assert _cs_path(source="mirror", stream=True, block_lead_s=None).phase("wait") is None


def test_no_node_phase_without_a_boot_figure_and_no_mirror_phase_off_the_mirror():
    p = _cs_path(source="s3", stream=False)
    assert [x.name for x in p.phases] == ["stage", "load", "compile", "graphs"]
    assert p.phase("mirror") is None and p.phase("node") is None
    assert cs.stage_seconds(1_000_000_000, "cthpc") == 0.5
    assert cs.mirror_fill_seconds(1_000_000_000) == 2.0 and cs.mirror_fill_seconds(1_000_000_000, 4.0) == 0.25


def test_cold_start_inputs_reach_the_plan():
    base = plan(PlanRequest("mxfp4", "p6-b300.48xlarge", 1)).cold_start
    booted = plan(PlanRequest("mxfp4", "p6-b300.48xlarge", 1, node_ready_s=600)).cold_start
    assert booted.first_token_s == base.first_token_s + 600
    slow = plan(PlanRequest("mxfp4", "p6-b300.48xlarge", 1, weights_source="mirror")).cold_start
    fast = plan(PlanRequest("mxfp4", "p6-b300.48xlarge", 1, weights_source="mirror", mirror_fill_gb_per_s=2.0)).cold_start
    assert (slow.mirror_fill_s, fast.mirror_fill_s) == (3122, 780)
    # a block that starts now is a lead of 0, not a start in the past
    now = plan(PlanRequest("mxfp4", "p6-b300.48xlarge", 1, weights_source="mirror", block_lead_s=0))
    assert now.notes == ("the S3 mirror needs ~52 min to fill but the block starts in 0.0 min: this first start "
                         "stages from the hub, later starts from the mirror",)
    # Ascend keeps no compile cache worth the name (same compile time) and has no hub path
    a3 = plan(PlanRequest("w4a8", "atlas-800-a3", 4, compile_cache=True)).cold_start
    assert a3.first_token_cached_s is None and a3.gpu_node_s_saved == 0 and a3.hub_first_token_s is None
    cached = plan(PlanRequest("mxfp4", "p6-b300.48xlarge", 1, compile_cache=True)).cold_start
    assert cached.first_token_cached_s == cached.first_token_s - 330 + 30


def test_a_kv_cache_under_one_gib_still_holds_a_short_sequence():
    p = plan(PlanRequest("mxfp4", "p5.48xlarge", 4, max_model_len=1024, gpu_memory_utilization=0.6959))
    assert 0 < p.memory.kv_cache_gib_per_device < 1 and p.full_length_seqs_per_replica >= 1


def test_kv_dtype_refusal_lists_what_the_accelerator_takes():
    with pytest.raises(ConfigError) as e:
        plan(PlanRequest("mxfp4", "p6-b300.48xlarge", 1, kv_cache_dtype="int8"))
    assert str(e.value) == "kimi-k3:kvCacheDtype='int8' is not supported here; use one of auto, fp8 on b300"


def test_one_gpu_second_saved_is_still_shown():
    assert _first_token_text(_cold(hub_first_token_s=1201, gpu_node_s_saved=1), None) == \
        "20 min after the block starts (s3); hub path 20 min, saves 0.0 GPU node-h per start"


def test_a_wait_under_a_second_is_still_a_phase():
    p = cs.path(source="mirror", stream=True, checkpoint_bytes=50_350_000_000, bytes_per_node=1e9,
                nvme_gb_per_s=8.0, engine=ENGINE, block_lead_s=100)
    assert p.phase("mirror").seconds == 101 and p.phase("wait") == cs.Phase(
        "wait", 1, "gpu", "streaming needs the complete mirror: the pods wait for it")


def test_phase_to_dict():
    assert cs.Phase("load", 5, "gpu", "s").to_dict() == {"name": "load", "seconds": 5, "clock": "gpu", "source": "s"}


def test_the_refusal_says_the_model_does_not_fit_when_weights_and_reserve_fill_the_device():
    # 2 x A3 at 0.8: 46.8 GiB of weights fit in 51.2 usable, but not with the 6 GiB reserve
    with pytest.raises(PlanError) as e:
        plan(PlanRequest("w4a8", "atlas-800-a3", 2, gpu_memory_utilization=0.8))
    assert str(e.value).startswith("kimi-k3:nodes=2 cannot hold Kimi K3 W4A8 (1.56 TB) on 2 x atlas-800-a3")


def test_versions_compare_by_pep_440_and_garbage_is_refused():
    from components.inference.vllm_flags import supported, version_tuple
    assert version_tuple("0.23.0rc1") < version_tuple("0.23.0") < version_tuple("0.23.0.post1")
    assert version_tuple("0.33") == version_tuple("0.33.0") and version_tuple("0.9.2") < version_tuple("0.33")
    assert not supported({"--x": ("0.23.0", None)}, "--x", "0.23.0rc1")
    with pytest.raises(ValueError):
        version_tuple("1.x.3")


def test_unreachable_contexts_say_why_in_full():
    huge = {"mla_layers": 100_000}
    with pytest.raises(PlanError) as e:
        plan(PlanRequest(**A3, max_model_len=131_072, model_overrides=huge))
    assert str(e.value) == ("kimi-k3:maxModelLen=131072 cannot hold one 131072-token sequence of Kimi K3 W4A8 next "
                            "to its weights on 4 x atlas-800-a3 (1.00 TiB of ascend-910c per node); lower "
                            "kimi-k3:maxModelLen or use an accelerator with more memory")
    with pytest.raises(PlanError) as e:
        plan(PlanRequest(**A3, model_overrides=huge))
    assert str(e.value) == ("kimi-k3:nodes=4 cannot hold one 1024-token sequence of Kimi K3 W4A8 next to its weights "
                            "on 4 x atlas-800-a3 (1.00 TiB of ascend-910c per node); lower kimi-k3:maxModelLen or "
                            "use an accelerator with more memory")


def test_below_the_smallest_ladder_step_the_planner_takes_the_minimum_context():
    p = plan(PlanRequest("mxfp4", "p5.48xlarge", 4, gpu_memory_utilization=0.69))
    assert p.max_model_len == 1024 and p.memory.kv_cache_gib_per_device < 0.08


def test_usable_memory_is_rounded_to_three_places():
    p = plan(PlanRequest("mxfp4", "p5.48xlarge", 4, gpu_memory_utilization=0.9123))
    assert p.memory.usable_gib_per_device == round(79.6 * 0.9123, 3) == 72.619


def test_mirror_notes_and_the_targets_source_note():
    fill = plan(PlanRequest("mxfp4", "p6-b300.48xlarge", 1, weights_source="mirror")).cold_start.mirror_fill_s
    on_time = plan(PlanRequest("mxfp4", "p6-b300.48xlarge", 1, weights_source="mirror", block_lead_s=fill))
    assert on_time.notes == ("the S3 mirror fills in ~52 min on the system node: run `pulumi up` at least that long "
                             "before the block starts, or its first start stages from the hub",)
    late = plan(PlanRequest("mxfp4", "p6-b300.48xlarge", 1, weights_source="mirror", block_lead_s=fill - 1))
    assert "this first start stages from the hub" in late.notes[0]
    noted = plan(PlanRequest("mxfp4", "p6-b300.48xlarge", 1, source_note="weights from your bucket"))
    assert noted.notes == ("weights from your bucket",)
