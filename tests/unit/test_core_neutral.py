"""The shared core (components/inference/) knows no target: it imports neither target's package,
takes the weights staging from the layout it is handed, and reads accelerator-specific
environment and flags from the hardware profiles (issue 18 item 6)."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

from components.inference import launch as launch_mod
from components.inference import profiles
from components.inference import render_k8s as rk
from components.inference.launch import Runtime, launch
from components.inference.planner import PlanRequest, plan

CORE = Path(launch_mod.__file__).resolve().parent
TARGET_PACKAGES = ("aws_eks", "ctyun_hcc")


def _imports(path: Path):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            yield ("." * node.level) + (node.module or "")
        elif isinstance(node, ast.Import):
            yield from (a.name for a in node.names)


@pytest.mark.parametrize("path", sorted(CORE.glob("*.py")), ids=lambda p: p.name)
def test_the_core_imports_no_target(path):
    for name in _imports(path):
        assert not any(pkg in name.split(".") for pkg in TARGET_PACKAGES), f"{path.name}: {name}"


def _cuda(nodes=1):
    p = plan(PlanRequest("mxfp4", "p6-b300.48xlarge", nodes))
    return p, launch(p, Runtime(image="vllm/vllm-openai:kimi-k3", port=8000, model_path="/models/k3"))


def test_a_layout_without_a_stager_stages_nothing():
    p, spec = _cuda()
    deployment = next(o for o in rk.render(p, spec, rk.K8sLayout()) if o["kind"] == "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    assert "initContainers" not in pod and "serviceAccountName" not in pod
    assert [v["name"] for v in pod["volumes"]] == ["dshm"]
    assert rk.render_weights(spec, rk.K8sLayout()) == []


def test_accelerator_env_and_flags_come_from_the_profiles():
    ascend = plan(PlanRequest("w4a8", "atlas-800-a3", 4))
    spec = launch(ascend, Runtime(image="quay.io/ascend/vllm-ascend:kimi-k3-a3", port=11025))
    env = spec.head.env_dict
    for name, value in profiles.PROFILES["ascend-a3"].node_env:
        assert env[name] == value
    assert env["ASCEND_RT_VISIBLE_DEVICES"] == ",".join(str(i) for i in range(16))
    assert "VLLM_ENGINE_READY_TIMEOUT_S" not in spec.worker.env_dict  # the head waits
    hopper = plan(PlanRequest("mxfp4", "p5en.48xlarge", 2))
    argv = launch(hopper, Runtime(image="vllm/vllm-openai:kimi-k3", port=8000)).head.argv
    flags = profiles.PROFILES["hopper"].extra_args
    at = argv.index(flags[0])
    assert argv[at:at + len(flags)] == flags


def test_the_ascend_flags_come_from_its_profile(monkeypatch):
    """vllm-ascend's tutorial flags (--compilation-config, --mm-processor-cache-gb,
    --additional-config switches, --mm-encoder-tp-mode) are the A3 profile's data: a profile
    without them gives an argv without them, and one with others gives those, in place."""
    ascend = plan(PlanRequest("w4a8", "atlas-800-a3", 4))
    rt = Runtime(image="quay.io/ascend/vllm-ascend:kimi-k3-a3", port=11025)
    full = launch(ascend, rt).head.argv
    at = full.index("--compilation-config")
    assert full[at:at + 4] == profiles.PROFILES["ascend-a3"].extra_args
    assert full[full.index("--additional-config") + 1] == \
        '{"enable_cpu_binding":true,"enable_flashcomm1":true}'
    bare = dataclasses.replace(profiles.PROFILES["ascend-a3"], extra_args=(), additional_config=(),
                               extra_args_late=())
    monkeypatch.setitem(launch_mod.PROFILES, "ascend-a3", bare)
    argv = launch(ascend, rt).head.argv
    for flag in ("--compilation-config", "--mm-processor-cache-gb", "--additional-config",
                 "--mm-encoder-tp-mode"):
        assert flag not in argv
    other = dataclasses.replace(bare, extra_args_late=("--mm-encoder-tp-mode", "weights"))
    monkeypatch.setitem(launch_mod.PROFILES, "ascend-a3", other)
    argv = launch(ascend, rt).head.argv
    late = argv.index("--mm-encoder-tp-mode")
    assert argv[late - 1] == f"{ascend.memory.gpu_memory_utilization:g}"  # right after the memory
    assert argv[late + 1:late + 3] == ("weights", "--limit-mm-per-prompt")


def test_a_profile_with_an_unknown_placeholder_is_refused(monkeypatch):
    bad = dataclasses.replace(profiles.PROFILES["blackwell"],
                              node_env=(("NCCL_SOCKET_IFNAME", "${NODE_IFACE}"),))
    monkeypatch.setitem(launch_mod.PROFILES, "blackwell", bad)
    p = plan(PlanRequest("mxfp4", "p6-b300.48xlarge", 1))
    with pytest.raises(ValueError, match="NODE_IFACE"):
        launch(p, Runtime(image="vllm/vllm-openai:kimi-k3", port=8000))


# ---- the shared packages name no target: a third target is its folder + one registry line ----

COMPONENTS = CORE.parent
TARGET_NAMES = frozenset({"ctyun-hcc", "aws-eks", "aws-eks-hyperpod"})
#: where the shared code may still name a target, and why (docs/architecture.md says the same)
NAMES_TARGETS = {
    "program/registry.py": "the registry: one line per target",
    "cli/plan.py": "the stacks `plan` writes when none is given (stack names, not a branch)",
    "progress/clock.py": "runs recorded before the plan's clock was (`unestimated`); a target's "
                         "runs record their clock (Target.clock_phases)",
}


def _shared_modules():
    for path in sorted(COMPONENTS.rglob("*.py")):
        rel = path.relative_to(COMPONENTS).as_posix()
        if rel.split("/")[0] not in TARGET_PACKAGES:
            yield rel, path


def _names_a_target(path: Path):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Constant) and node.value in TARGET_NAMES:
            yield f"line {node.lineno}: {node.value!r}"
    for name in _imports(path):
        if any(pkg in name.split(".") for pkg in TARGET_PACKAGES):
            yield f"imports {name}"


def test_only_the_listed_shared_modules_name_a_target():
    """Cost parts and clock phases are contract methods (Target.cost_parts, clock_phases), a
    target's config namespaces and its `logs` reader are in its registry line: a shared module
    that branches on a target's name again fails here."""
    found = {rel: list(_names_a_target(path)) for rel, path in _shared_modules()}
    found = {rel: hits for rel, hits in found.items() if hits}
    assert sorted(found) == sorted(NAMES_TARGETS), found


def test_the_guard_sees_a_branch_on_a_target_name(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text('def parts(target):\n    return 1 if target == "aws-eks" else 2\n')
    assert list(_names_a_target(probe)) == ["line 2: 'aws-eks'"]
    probe.write_text("from ..ctyun_hcc.cost_parts import ctyun_parts\n")
    assert list(_names_a_target(probe)) == ["imports ..ctyun_hcc.cost_parts"]
