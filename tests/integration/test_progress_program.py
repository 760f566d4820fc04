"""The program's side of progress under the mock engine: the hint reaches the output, no file."""

from components.offline.runner import run_program


def test_the_program_says_how_to_follow_progress_and_writes_nothing_offline(tmp_path, monkeypatch):
    monkeypatch.setenv("KK3_PROGRESS_ROOT", str(tmp_path))
    run = run_program("aws-eks", {"kimi-k3:capacityReservationId": "cr-0123456789abcdef0"})
    hints = [m for level, m in run.messages if level == "INFO" and "components status" in m]
    assert hints and str(tmp_path / ".kimi-k3" / "progress" / "aws-eks.jsonl") in hints[0]
    assert not (tmp_path / ".kimi-k3").exists()   # the mock engine is not a `pulumi up`


def test_every_ctyun_step_gets_the_stacks_progress_file_and_the_plans_figures(tmp_path, monkeypatch):
    monkeypatch.setenv("KK3_PROGRESS_ROOT", str(tmp_path))
    run = run_program("ctyun-hcc")
    steps = [r for r in run.resources if r["type"].startswith("pulumi-python:dynamic/ctyun:")
             and "sshHost" in r["inputs"]]
    assert {r["type"].rsplit(":", 1)[1] for r in steps} >= {
        "HostKeyPin", "ModelWeights", "Broadcast", "SlurmService"}
    want = str(tmp_path / ".kimi-k3" / "progress" / "ctyun-hcc.jsonl")
    cold = run.inference.plan.cold_start
    for r in steps:
        assert r["inputs"]["progressFile"] == want, r["name"]
        assert r["inputs"]["progressExpect"]["vllm-start"]["expected_s"] == cold.estimate_s


def test_the_aws_gate_gets_the_stacks_progress_file_and_the_plans_first_token(tmp_path, monkeypatch):
    monkeypatch.setenv("KK3_PROGRESS_ROOT", str(tmp_path))
    run = run_program("aws-eks", {"kimi-k3:capacityReservationId": "cr-0123456789abcdef0"})
    gates = run.of_type("pulumi-python:dynamic/aws:EndpointReadiness")
    assert len(gates) == 1
    inputs = gates[0]["inputs"]
    assert inputs["progressFile"] == str(tmp_path / ".kimi-k3" / "progress" / "aws-eks.jsonl")
    cold = run.inference.plan.cold_start
    assert inputs["progressExpect"]["readiness-gate"]["expected_s"] == cold.first_token_s
