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


#: (stack, config) -> what `first_up` saw: one program run per config for the whole module
_RUNS = {}


def first_up(stack, overrides):
    """Each dynamic resource's inputs (with its pickled provider) and the state the run left."""
    key = (stack, tuple(sorted(overrides.items())))
    if key not in _RUNS:
        _RUNS[key] = _record(stack, overrides)
    return _RUNS[key]


def _record(stack, overrides):
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

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(pmocks.MockMonitor, "RegisterResource", recording)
        run_program(stack, overrides)
    return tuple(seen)


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
def test_a_second_up_with_the_same_config_changes_nothing(service_runs, variant):
    stack, overrides = VARIANTS[variant]
    seen = first_up(stack, overrides)
    assert len(seen) >= 6, [t for t, *_ in seen]
    assert changed_on_second_up(seen) == {}


def test_a_diff_comparing_an_output_with_an_input_is_caught(monkeypatch, service_runs):
    """The test's own guard: a provider whose diff compares its outputs with the inputs of the
    same name (the training plan's bug) is reported."""
    from pulumi.dynamic import DiffResult

    from components.aws_eks.capacity import CapacityBlockProvider

    def naive(self, id_, olds, news):
        return DiffResult(changes=any(olds.get(k) != news.get(k) for k in olds if k != "__provider"))

    seen = first_up("aws-eks", {})
    monkeypatch.setattr(CapacityBlockProvider, "diff", naive)
    assert list(changed_on_second_up(seen)) == ["kimi-k3-capacity"]


# ---- day two: a changed config touches what it must, and never replaces what is billed ----------

#: resources whose replacement orders (and bills) again, or tears down what serves
BILLED = {"pulumi-python:dynamic/ctyun:HccClusterOrder", "pulumi-python:dynamic/ctyun:HccCluster",
          "pulumi-python:dynamic/ctyun:HccNetwork", "pulumi-python:dynamic/ctyun:HccSecurityGroup",
          "pulumi-python:dynamic/aws:CapacityBlock", "pulumi-python:dynamic/aws:TrainingPlan"}
CR = {"kimi-k3:capacityReservationId": "cr-0123456789abcdef0"}
FIRST_KEY, NEW_KEY = "kk3-first-key-0123456789abcdefghijkl", "kk3-second-key-0123456789abcdefghijk"
#: what each step a user takes (docs/day-two.md) does to the dynamic resources: name -> action
CHANGES = {
    "ctyun grow 4 -> 5 nodes": ("ctyun-hcc", {}, {"kimi-k3:nodes": "5"}, {
        "kimi-k3-hcc-cluster": "update", "kimi-k3-shrink": "update", "kimi-k3-check": "update",
        "kimi-k3-nvme": "update", "kimi-k3-bcast": "update", "kimi-k3-exporters": "update",
        "kimi-k3-service": "replace", "kimi-k3-accept": "update", "kimi-k3-prometheus": "update"}),
    "ctyun 1 -> 2 replicas": ("ctyun-hcc", {}, {"kimi-k3:replicas": "2"}, {
        "kimi-k3-hcc-cluster": "update", "kimi-k3-shrink": "update", "kimi-k3-check": "update",
        "kimi-k3-nvme": "update", "kimi-k3-bcast": "update", "kimi-k3-exporters": "update",
        "kimi-k3-service": "replace", "kimi-k3-service-r1": "create", "kimi-k3-router": "create",
        "kimi-k3-accept": "update", "kimi-k3-prometheus": "update"}),
    "ctyun 2 -> 1 replicas": ("ctyun-hcc", {"kimi-k3:replicas": "2"}, {}, {
        "kimi-k3-hcc-cluster": "update", "kimi-k3-shrink": "update", "kimi-k3-check": "update",
        "kimi-k3-nvme": "update", "kimi-k3-bcast": "update", "kimi-k3-exporters": "update",
        "kimi-k3-service": "replace", "kimi-k3-service-r1": "delete", "kimi-k3-router": "delete",
        "kimi-k3-accept": "update", "kimi-k3-prometheus": "update"}),
    "ctyun shorter context": ("ctyun-hcc", {}, {"kimi-k3:maxModelLen": "65536"}, {
        "kimi-k3-service": "replace"}),
    "ctyun new API key": ("ctyun-hcc", {"kimi-k3:apiKey": FIRST_KEY}, {"kimi-k3:apiKey": NEW_KEY}, {
        "kimi-k3-service": "replace", "kimi-k3-accept": "update", "kimi-k3-prometheus": "update"}),
    # the pods roll through their template (tests/integration/test_key_rotation.py); the gate
    # checks again, with the new key
    "aws new API key": ("aws-eks", {"kimi-k3:apiKey": FIRST_KEY}, {"kimi-k3:apiKey": NEW_KEY}, {
        "kimi-k3-readiness": "update"}),
    "aws 1 -> 2 nodes on an adopted block": ("aws-eks", CR, {**CR, "kimi-k3:nodes": "2"}, {
        "kimi-k3-capacity": "update", "kimi-k3-gpu-scaling": "update", "kimi-k3-readiness": "update"}),
    "aws EKS upgrade": ("aws-eks", CR, {**CR, "kimi-k3:clusterVersion": "1.36"}, {
        "kimi-k3-gpu-roll-guard": "update", "kimi-k3-gpu-scaling": "update"}),
    "aws fee cap set": ("aws-eks", {}, {"kimi-k3:maxUpfrontFeeUsd": "90000"}, {}),
}


def actions(before, after):
    """name -> create/update/replace/delete, as the engine would decide for dynamic resources."""
    olds = {name: (inputs, state) for _, name, inputs, state in before}
    out = {}
    for type_, name, inputs, _ in after:
        if name not in olds:
            out[name] = "create"
            continue
        old_inputs, old_state = olds[name]
        d = second_diff(type_, {**inputs}, {**old_state, "__provider": old_inputs["__provider"]})
        if d.replaces:
            out[name] = "replace"
            assert type_ not in BILLED, f"{name} ({type_}) would be replaced: {d.replaces}"
        elif d.changes:
            out[name] = "update"
    out.update({name: "delete" for name in olds if name not in {n for _, n, *_ in after}})
    return out


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_a_day_two_change_touches_what_it_must(service_runs, change):
    stack, before, after, expected = CHANGES[change]
    assert actions(first_up(stack, before), first_up(stack, after)) == expected
