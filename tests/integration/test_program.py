"""The real `__main__.py` of both stacks under Pulumi's mock engine, and the plan command."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from components.offline.runner import run_program

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def ctyun():
    return run_program("ctyun-hcc")


@pytest.fixture(scope="module")
def aws():
    return run_program("aws-eks")


@pytest.mark.parametrize("stack", ["ctyun-hcc", "aws-eks"])
def test_default_program_registers_k3inference_with_plan_outputs(stack, request):
    run = request.getfixturevalue("ctyun" if stack == "ctyun-hcc" else "aws")
    inf = run.of_type("kimi-k3:inference:K3Inference")
    assert len(inf) == 1
    assert run.outputs["servedModelName"] == "Kimi-K3"
    assert "layout" in run.outputs["plan"]
    assert run.inference.artifacts, "the target rendered nothing"


def test_ctyun_program_plans_the_seed_layout(ctyun):
    spec = ctyun.inference.spec
    assert ctyun.inference.plan.parallelism.data_parallel == 4
    assert spec.port == 11025 and "--max-model-len" in spec.head.argv
    assert {"srun.sh", "node.sh"} <= {Path(p).name for p in ctyun.inference.artifacts}
    assert ctyun.outputs["endpoint"].endswith(":11025/v1")
    assert ctyun.outputs["curl"].startswith("curl -sS " + ctyun.outputs["endpoint"])


def test_aws_program_renders_manifests(aws):
    assert any(p.startswith("manifests/") for p in aws.inference.artifacts)
    assert aws.inference.plan.parallelism.tensor_parallel == 8


def test_every_resource_has_a_parent_and_known_secret_redaction(ctyun, aws):
    for run in (ctyun, aws):
        for r in run.resources:
            assert r["parent"], r
        text = json.dumps(run.resources)
        assert "sk-" not in text


def test_secret_config_never_reaches_plan_inputs_in_plain_text():
    run = run_program("aws-eks", {"kimi-k3:apiKey": "sk-plaintext-should-not-leak"})
    # given with --set, the value is plain config; the program still must read it as a secret
    text = json.dumps({"r": run.resources, "o": run.outputs})
    assert "sk-plaintext-should-not-leak" not in text
    assert run.inference.spec.secret_env == ("VLLM_API_KEY",)


def _plan_cli(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "components", "plan", *args],
                          cwd=cwd, capture_output=True, text=True, timeout=120)


def test_plan_command_writes_the_contract(tmp_path):
    res = _plan_cli("--stack", "ctyun-hcc", "--out", str(tmp_path), "--quiet")
    assert res.returncode == 0, res.stderr
    doc = json.loads((tmp_path / "plan.json").read_text())
    for key in ("stack", "target", "model", "hardware", "parallelism", "memory", "launch", "resources"):
        assert key in doc
    assert doc["hardware"] == {**doc["hardware"], "accelerator": "ascend-910c", "devices_per_node": 16,
                               "device_memory_gib": 64.0, "nodes": 4}
    assert doc["parallelism"]["expert_parallel"] == 64
    roles = [(l["role"], l["node_rank"]) for l in doc["launch"]]
    assert roles == [("head", 0), ("worker", 1), ("worker", 2), ("worker", 3)]
    assert "${NODE0_ADDR}" in doc["launch"][0]["argv"]
    assert all({"type", "name", "parent", "inputs"} <= set(r) for r in doc["resources"])
    assert (tmp_path / "srun.sh").exists() and (tmp_path / "node.sh").exists()


@pytest.mark.parametrize("args,fragment", [
    # the target's config is read whole before the planner: one node leaves no compute node
    (["--stack", "ctyun-hcc", "--set", "kimi-k3:nodes=1"], "kimi-k3:nodes=1 leaves no compute node"),
    (["--stack", "ctyun-hcc", "--set", "kimi-k3:nodes=1", "--set", "ctyun:masterInCompute=false"],
     "kimi-k3:nodes=1 cannot hold"),
    (["--stack", "aws-eks", "--set", "kimi-k3:accelerator=h200"], "use at least 2"),
    (["--stack", "aws-eks", "--set", "kimi-k3:model=w4a8"], "kimi-k3:model='w4a8'"),
    (["--stack", "nope"], "--stack='nope'"),
    (["--stack", "aws-eks", "--set", "kimi-k3:maxModelLen=128K"], "131072, not 128K"),
    (["--stack", "aws-eks", "--set", "kimi-k3:maxModelLn=1"], "kimi-k3:maxModelLn"),
    (["--stack", "aws-eks", "--set", "nodes"], "KEY=VALUE"),
])
def test_bad_input_exits_2_with_one_line(args, fragment, tmp_path):
    res = _plan_cli(*args, "--out", str(tmp_path))
    assert res.returncode == 2, (res.stdout, res.stderr)
    lines = [l for l in res.stderr.splitlines() if l.strip()]
    assert len(lines) == 1 and fragment in lines[0], res.stderr
    assert "Traceback" not in res.stderr
    assert not (tmp_path / "plan.json").exists()


def test_a_failed_run_does_not_break_the_next_one_in_the_same_process():
    import pulumi
    with pytest.raises(pulumi.RunError, match="kimi-k3:nodes=1"):
        run_program("ctyun-hcc", {"kimi-k3:nodes": "1"})
    run = run_program("aws-eks")
    assert run.outputs["servedModelName"] == "Kimi-K3"
