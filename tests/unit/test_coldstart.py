"""Cold-start arithmetic: block start -> first token per weights path (components/inference/coldstart.py)."""

from hypothesis import given, settings, strategies as st

from components.inference import coldstart as cs
from components.inference.catalog import NODE_SHAPES
from components.inference.errors import ConfigError
from components.inference.planner import Plan, PlanRequest, plan

CUDA_SHAPES = sorted(k for k, s in NODE_SHAPES.items() if s.accelerator.platform == "cuda")

cuda_requests = st.builds(
    PlanRequest,
    model=st.sampled_from(["mxfp4", "nvfp4"]),
    node_shape=st.sampled_from(CUDA_SHAPES),
    nodes=st.sampled_from([1, 2, 4, 8]),
    block_lead_s=st.one_of(st.none(), st.integers(0, 3 * 86400)),
    node_ready_s=st.integers(0, 3600),
    compile_cache=st.booleans(),
    mirror_fill_gb_per_s=st.one_of(st.none(), st.floats(0.01, 20.0)),
)


def _plan(req, **kw):
    try:
        return plan(PlanRequest(**{**req.__dict__, **kw}))
    except ConfigError:
        return None  # does not fit this hardware: nothing to compare


@settings(max_examples=300, deadline=None)
@given(cuda_requests)
def test_the_mirror_is_never_slower_than_the_hub_on_the_gpu_clock(req):
    mirror, hub = _plan(req, weights_source="mirror"), _plan(req, weights_source="hub")
    if mirror is None:
        return
    assert mirror.cold_start.first_token_s <= hub.cold_start.first_token_s
    assert mirror.cold_start.hub_first_token_s == hub.cold_start.first_token_s
    saved = (hub.cold_start.first_token_s - mirror.cold_start.first_token_s) * mirror.nodes
    assert mirror.cold_start.gpu_node_s_saved == saved >= 0
    fill = mirror.cold_start.mirror_fill_s
    if req.block_lead_s is None or req.block_lead_s >= fill:
        # a full mirror before the block: staging is the S3 read, not the hub's
        assert mirror.cold_start.stage_s < hub.cold_start.stage_s
    else:
        assert mirror.cold_start.stage_s == hub.cold_start.stage_s  # stage.sh's hub fallback
        assert any("stages from the hub" in n for n in mirror.notes)


@settings(max_examples=300, deadline=None)
@given(cuda_requests, st.sampled_from(["hub", "s3", "mirror"]), st.booleans())
def test_timeouts_cover_the_estimate_of_the_chosen_path(req, source, stream):
    p = _plan(req, weights_source=source, stream_weights=stream and source != "hub")
    if p is None:
        return
    c = p.cold_start
    after_vllm_starts = sum(ph.seconds for ph in c.phases if ph.name in ("load", "compile", "graphs"))
    assert c.startup_timeout_s >= after_vllm_starts * cs.COLD_START_SAFETY
    assert c.startup_timeout_s >= c.estimate_s == c.load_s + c.warmup_s
    assert c.first_token_s == sum(ph.seconds for ph in c.phases if ph.clock == "gpu")
    if c.first_token_cached_s is not None:
        assert c.first_token_cached_s < c.first_token_s
    # the timeout follows the path: streaming (slower load) never gets less than local NVMe
    if source != "hub" and not stream:
        streamed = _plan(req, weights_source=source, stream_weights=True)
        assert streamed.cold_start.startup_timeout_s >= c.startup_timeout_s
    assert Plan.from_dict(p.to_dict()) == p


def test_b300_figures_and_their_sources():
    p = plan(PlanRequest("mxfp4", "p6-b300.48xlarge", 1, weights_source="mirror", compile_cache=True))
    c = p.cold_start
    names = [ph.name for ph in c.phases]
    assert names == ["mirror", "stage", "load", "compile", "graphs"]
    assert c.phases[0].clock == "before-block" and all(ph.clock == "gpu" for ph in c.phases[1:])
    assert all(ph.source for ph in c.phases)
    assert c.stage_s == 312  # 1561 GB at 5 GB/s
    assert c.hub_first_token_s - c.first_token_s == 3122 - 312
    assert c.first_token_cached_s == c.first_token_s - 300
    text = p.explain()
    assert "first token" in text and "hub path" in text and "GPU node-h per start" in text


def test_streaming_from_a_mirror_that_is_not_full_waits_for_it():
    p = plan(PlanRequest("mxfp4", "p6-b300.48xlarge", 1, weights_source="mirror",
                         stream_weights=True, block_lead_s=600))
    wait = next(ph for ph in p.cold_start.phases if ph.name == "wait")
    assert wait.clock == "gpu" and wait.seconds == p.cold_start.mirror_fill_s - 600


def test_a_mirror_that_fills_exactly_by_the_block_start_counts_as_full():
    # found by hypothesis: 1561 GB at 20 GB/s = 78.05 s, shown as 78 s; a lead of 78 s is "full"
    req = PlanRequest(model="mxfp4", node_shape="p5.48xlarge", nodes=4, block_lead_s=78,
                      node_ready_s=0, compile_cache=False, mirror_fill_gb_per_s=20.0)
    mirror, hub = _plan(req, weights_source="mirror"), _plan(req, weights_source="hub")
    assert mirror.cold_start.mirror_fill_s == 78
    assert mirror.cold_start.stage_s < hub.cold_start.stage_s


def test_hub_has_no_mirror_and_saves_nothing():
    c = plan(PlanRequest("mxfp4", "p6-b300.48xlarge", 1)).cold_start
    assert c.weights_source == "hub" and c.mirror_fill_s is None and c.gpu_node_s_saved == 0
    assert c.first_token_s == c.hub_first_token_s


# ---------------------------------------------------------------- the engine's ready timeout

@settings(max_examples=200, deadline=None)
@given(cuda_requests)
def test_the_engine_ready_timeout_is_never_below_the_recipes_and_says_why(req):
    """VLLM_ENGINE_READY_TIMEOUT_S >= the recipe's 3600 s on CUDA, or the plan's larger budget;
    plan.json's cold_start carries the reason next to the number."""
    from components.inference.profiles import RECIPE_READY_TIMEOUT_S

    p = _plan(req)
    if p is None:
        return
    c = p.cold_start
    budget = cs.startup_timeout(cs.Path(c.weights_source, c.loading, c.phases), 0)
    assert c.startup_timeout_s == max(RECIPE_READY_TIMEOUT_S, budget)
    why = p.to_dict()["cold_start"]["startup_timeout_why"]
    assert why.startswith("the plan's budget" if budget > RECIPE_READY_TIMEOUT_S else "the floor of 3600 s")
    assert "Kimi-K3.yaml" in why or budget > RECIPE_READY_TIMEOUT_S


def test_a_budget_above_the_floor_wins_and_is_named():
    slow = cs.Path("hub", "local-nvme", (cs.Phase("load", 2000, "gpu", "x"), cs.Phase("compile", 1000, "gpu", "x"),
                                         cs.Phase("graphs", 200, "gpu", "x")))
    seconds, why = cs.startup_timeout_and_reason(slow, 3600, "the recipe")
    assert seconds == 4800 and why.startswith("the plan's budget: load + compile + graphs = 3200 s x 1.5")
    seconds, why = cs.startup_timeout_and_reason(slow, 7200, "the recipe")
    assert seconds == 7200 and why.startswith("the floor of 7200 s (the recipe)")
