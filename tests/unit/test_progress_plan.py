"""The plan's expectations handed to waiting providers (`progressExpect`)."""

from components.inference.planner import WEIGHT_SOURCES, PlanRequest, plan
from components.progress.record import ProgressLog, read_records
from components.progress.plan import planned_waits


def test_ctyun_waits_carry_the_plans_figures_and_assumptions():
    p = plan(PlanRequest("w4a8", "atlas-800-a3", 4, max_model_len=131072))
    c = p.cold_start
    phases = {ph.name: ph for ph in c.phases}
    waits = planned_waits(p)
    assert waits["weights-stage"] == {"expected_s": phases["stage"].seconds,
                                      "assumption": phases["stage"].source}
    rate = WEIGHT_SOURCES[c.weights_source]
    assert f"from {c.weights_source} at {rate:g} GB/s" in waits["weights-stage"]["assumption"]
    assert waits["vllm-start"]["expected_s"] == sum(
        phases[n].seconds for n in ("load", "compile", "graphs")) == c.estimate_s
    assert f"gives up after {c.startup_timeout_s} s" in waits["vllm-start"]["assumption"]
    assert waits["readiness-gate"]["expected_s"] == c.first_token_s
    assert "weights-mirror" not in waits


def test_the_mirror_source_adds_the_mirror_and_streaming_has_no_stage():
    mirrored = plan(PlanRequest("mxfp4", "p6-b300.48xlarge", 1, weights_source="mirror"))
    waits = planned_waits(mirrored)
    assert waits["weights-mirror"]["expected_s"] == mirrored.cold_start.mirror_fill_s
    assert "from the hub on the system node" in waits["weights-mirror"]["assumption"]
    streamed = plan(PlanRequest("mxfp4", "p6-b300.48xlarge", 1, weights_source="s3", stream_weights=True))
    waits = planned_waits(streamed)
    assert "weights-stage" not in waits and "stream-s3" in waits["vllm-start"]["assumption"]


def test_a_provider_picks_them_up_by_phase_name(tmp_path):
    p = plan(PlanRequest("w4a8", "atlas-800-a3", 4, max_model_len=131072))
    path = str(tmp_path / "s.jsonl")
    with ProgressLog(path, expect=planned_waits(p), echo=False).phase("vllm-start", "/health"):
        pass
    assert read_records(path)[0]["expected_s"] == p.cold_start.estimate_s
