"""The target contract (components/program/contract.py): one registry line per target, every
method implemented by both targets and called once per run; each stack's config parsed once and
its files rendered once (issue 18)."""

from __future__ import annotations

import inspect
from collections import Counter

import pytest

from components.offline.runner import run_program
from components.program import registry
from components.program.contract import Target

ABSTRACT = sorted(Target.__abstractmethods__)


@pytest.mark.parametrize("name", sorted(registry.REGISTRY))
def test_each_registered_target_implements_the_whole_contract(name):
    target = registry.load_target(name)
    assert isinstance(target, Target) and target.name == name
    cls = type(target)
    for method in ABSTRACT:
        assert method in cls.__dict__, f"{cls.__name__} inherits {method} from the contract"
        assert not getattr(getattr(cls, method), "__isabstractmethod__", False)


def test_the_contract_names_every_part_of_a_target():
    assert ABSTRACT == sorted([
        "parse_config", "node_shape", "node_count", "plan_request", "runtime", "render",
        "exposures", "deploy_requirements", "infrastructure", "serve", "gates", "outputs",
        "mock_outputs", "clock_phases", "cost_parts"])


#: asked by the plan command after the program ran (cli/plan_ops.py), not by the program
PLAN_ONLY = ("cost_parts",)


def _counting(monkeypatch, module_name: str) -> Counter:
    """Replace the module's TARGET by one that counts the contract calls."""
    import importlib

    module = importlib.import_module(module_name)
    calls: Counter = Counter()
    base = type(module.TARGET)

    def wrap(method):
        def counted(self, *args, **kwargs):
            calls[method] += 1
            return getattr(base, method)(self, *args, **kwargs)
        return counted

    counting = type(f"Counting{base.__name__}", (base,), {m: wrap(m) for m in ABSTRACT})
    monkeypatch.setattr(module, "TARGET", counting())
    return calls


@pytest.mark.parametrize("stack,overrides", [
    ("ctyun-hcc", {}),
    ("aws-eks", {}),
    ("aws-eks", {"kimi-k3:serving": "hyperpod", "kimi-k3:hyperpodClusterName": "hp1"}),
])
def test_the_program_calls_each_contract_method_once(monkeypatch, stack, overrides):
    calls = _counting(monkeypatch, registry.REGISTRY[stack].module)
    run = run_program(stack, overrides)
    # mock_outputs: asked once by the offline runner, for its stand-ins
    assert calls == Counter({m: 1 for m in ABSTRACT if m not in PLAN_ONLY})
    # the plan command's additions ask the target for its cost parts and its clock
    from components.cli import plan_ops

    doc = plan_ops.document(run)
    assert calls == Counter({**{m: 1 for m in ABSTRACT}, "clock_phases": 2})
    assert doc["cost"]["parts"] and doc["clock"]["phases"]


def test_aws_eks_parses_its_config_and_renders_once(monkeypatch):
    from components.aws_eks import config as cfgmod
    from components.inference import render_k8s as rk

    counts: Counter = Counter()
    for owner, name in ((cfgmod, "parse"), (rk, "render"), (rk, "render_weights"),
                        (rk, "render_api_guard")):
        original = getattr(owner, name)

        def counted(*a, __n=name, __f=original, **k):
            counts[__n] += 1
            return __f(*a, **k)
        monkeypatch.setattr(owner, name, counted)
    run_program("aws-eks")
    assert counts == Counter({"parse": 1, "render": 1, "render_weights": 1, "render_api_guard": 1})


def test_ctyun_hcc_parses_its_config_and_renders_once(monkeypatch):
    from components.ctyun_hcc import cluster, target

    counts: Counter = Counter()
    for owner, name in ((target, "parse_serve_config"), (cluster, "parse_hcc_config"),
                        (target, "render_all")):
        original = getattr(owner, name)

        def counted(*a, __n=name, __f=original, **k):
            counts[__n] += 1
            return __f(*a, **k)
        monkeypatch.setattr(owner, name, counted)
    run_program("ctyun-hcc")
    assert counts == Counter({"parse_serve_config": 1, "parse_hcc_config": 1, "render_all": 1})


def test_the_program_never_probes_a_target():
    """No `getattr` on a target (or what it built): the program, K3Inference, the offline runner
    and the plan command use the contract."""
    import ast

    import components.cli.plan
    import components.cli.plan_ops
    import components.inference.component
    import components.offline.runner
    import components.program.pipeline

    for module in (components.program.pipeline, components.inference.component, components.cli.plan,
                   components.cli.plan_ops, components.offline.runner):
        for node in ast.walk(ast.parse(inspect.getsource(module))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "getattr":
                probed = ast.unparse(node.args[0])
                assert not any(w in probed for w in ("target", "inference", "deployment", "infra")), \
                    f"{module.__name__}: getattr({probed}, ...)"


def test_the_alert_rules_are_rendered_once_for_the_plan_and_the_program(monkeypatch):
    """ctyun-hcc's program hands the rules file to the master's Prometheus and the plan writes
    the same file: one rendering (observability/alerts.py `render`, kept per process)."""
    from components.cli import plan_ops
    from components.observability import alerts

    counts: Counter = Counter()
    original = alerts.rules_document

    def counted(*a, **k):
        counts["rules_document"] += 1
        return original(*a, **k)
    monkeypatch.setattr(alerts, "rules_document", counted)
    alerts.render.cache_clear()
    files = plan_ops.files(run_program("ctyun-hcc"))
    assert counts == Counter({"rules_document": 1})
    assert files["prometheus/alerts.yml"] == alerts.render()
