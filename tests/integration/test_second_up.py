"""A second `pulumi up` with the config unchanged changes nothing: every dynamic resource of
both stacks, given the state its first `up` left (its inputs and outputs), diffs as unchanged.

The engine's order on an `up` over an existing stack (pulumi/pkg/resource/deploy/step_generator.go,
the dynamic host pulumi/dynamic/__main__.py): `check(old inputs, new inputs)`, then
`diff(id, old outputs, checked inputs)`; a `changes` answer runs `update`, a `replaces` one
replaces the resource. A provider that compares an output against an input of the same name, or
a default against an unset value, re-runs its work (or replaces a purchase) on every `up`: the
HyperPod training plan did (51d1786), found only by hand. This asks every provider, for the
shipped stacks and the variants below, with the first run's state as the mock engine leaves it
(inputs plus the target's offline stand-in outputs, `mock_outputs.py`).

Two providers decide from live state by design, and are answered for here: a Slurm service whose
job no longer runs is submitted again (service.py `live_state`: asked over SSH, here RUNNING),
and a readiness gate that has not seen the endpoint ready gates again (the stand-in block has not
started: `ready` false; here the first `up` saw it ready).
"""

from __future__ import annotations

import base64

import dill
import pytest

from components.offline.runner import run_program

#: pulumi's marker of a secret value in a serialized property map (pulumi/runtime/rpc.py _special_sig_key)
SIG = "4dabf18193072939515e22adb298388d"
KEY = "kk3-second-up-key-0123456789abcdefghij"
VARIANTS = {
    "ctyun-hcc shipped": ("ctyun-hcc", {}),
    "ctyun-hcc 2 replicas": ("ctyun-hcc", {"kimi-k3:replicas": "2"}),
    "aws-eks shipped": ("aws-eks", {}),
    "aws-eks adopted block, 2 nodes x 2": ("aws-eks", {"kimi-k3:capacityReservationId": "cr-0123456789abcdef0",
                                                       "kimi-k3:nodes": "2", "kimi-k3:replicas": "2"}),
    "hyperpod, buys a plan": ("aws-eks", {"kimi-k3:serving": "hyperpod", "kimi-k3:apiKey": KEY,
                                          "kimi-k3:maxUpfrontFeeUsd": "150000"}),
    "hyperpod, adopts a plan": ("aws-eks", {
        "kimi-k3:serving": "hyperpod", "kimi-k3:apiKey": KEY,
        "kimi-k3:trainingPlanArn": "arn:aws:sagemaker:us-east-2:111122223333:training-plan/my-plan"}),
}


def plain(value):
    """A serialized property value with Pulumi's secret wrappers taken off."""
    if isinstance(value, dict):
        if SIG in value:
            return plain(value.get("value"))
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def first_up(monkeypatch, stack, overrides):
    """Each dynamic resource's inputs (with its pickled provider) and the state the run left."""
    from google.protobuf import json_format
    from pulumi.runtime import mocks as pmocks

    seen = []
    register = pmocks.MockMonitor.RegisterResource

    def recording(self, request):
        response = register(self, request)
        if request.type.startswith("pulumi-python:dynamic/"):
            seen.append((request.type, request.name, plain(json_format.MessageToDict(request.object)),
                         plain(json_format.MessageToDict(response.object))))
        return response

    monkeypatch.setattr(pmocks.MockMonitor, "RegisterResource", recording)
    run_program(stack, overrides)
    return seen


def second_diff(type_, inputs, state):
    provider = dill.loads(base64.b64decode(inputs["__provider"]))
    olds = {**state, "__provider": inputs["__provider"]}
    if type_.endswith("Readiness"):
        olds["ready"] = True  # the first `up` saw the endpoint ready
    news = provider.check(olds, inputs).inputs
    return provider.diff(f"{olds.get('id', 'id')}", olds, news)


@pytest.fixture
def service_runs(monkeypatch):
    from components.ctyun_hcc.service import SlurmServiceProvider

    monkeypatch.setattr(SlurmServiceProvider, "live_state", lambda self, props: "RUNNING")


def changed_on_second_up(seen):
    """name -> (type, changes, replaces) of every resource a second `up` would touch."""
    changed = {}
    for type_, name, inputs, state in seen:
        d = second_diff(type_, inputs, state)
        if d.changes or d.replaces:
            changed[name] = (type_, d.changes, d.replaces)
    return changed


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_a_second_up_with_the_same_config_changes_nothing(monkeypatch, service_runs, variant):
    stack, overrides = VARIANTS[variant]
    seen = first_up(monkeypatch, stack, overrides)
    assert len(seen) >= 6, [t for t, *_ in seen]
    assert changed_on_second_up(seen) == {}


def test_a_diff_comparing_an_output_with_an_input_is_caught(monkeypatch, service_runs):
    """The test's own guard: a provider whose diff compares its outputs with the inputs of the
    same name (the training plan's bug) is reported."""
    from pulumi.dynamic import DiffResult

    from components.aws_eks.capacity import CapacityBlockProvider

    def naive(self, id_, olds, news):
        return DiffResult(changes=any(olds.get(k) != news.get(k) for k in olds if k != "__provider"))

    seen = first_up(monkeypatch, "aws-eks", {})
    monkeypatch.setattr(CapacityBlockProvider, "diff", naive)
    assert list(changed_on_second_up(seen)) == ["kimi-k3-capacity"]
