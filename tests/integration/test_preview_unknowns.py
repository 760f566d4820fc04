"""The program under a real `pulumi preview` of a new stack (issues 18/19/20/24): every stack
variant a user deploys completes, registers what `pulumi up` registers, and hands its dynamic
providers unknown inputs they neither judge nor act on; the refusals documented "at preview"
still stop it there.

The engine double is tests/preview_engine.py (`PreviewOfCreate`: ids "", computed outputs
unknown, `is_dry_run()` true - from the pulumi 3.272.0 SDK's contract, cited there); the
dynamic providers are driven through Pulumi's real provider host (`python -m pulumi.dynamic`,
tests/integration/dynamic_host.py) with every network connect and process start refused and
recorded (tests/integration/no_calls.py). One program run per variant and engine, shared by the
module (`runs`); one host for the module.

What is unknown at such a preview, and why nothing breaks: docs/architecture.md, "Under a real
preview".
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Dict, Tuple

import pulumi
import pytest

import components
from components.dynamic.provider import Provider
from tests.integration.dynamic_host import PROVIDER_KEY, ProviderError, from_struct, to_struct
from tests.integration.no_calls import GuardedHost, refuse_calls
from tests.preview_engine import (UNKNOWN, PreviewOfCreate, Run, contains_unknown, dynamic_provider,
                                  plain, run_preview, run_up)

KEY = "kk3-preview-key-0123456789abcdefghijkl"
#: what a real preview of ctyun-hcc needs besides the shipped file (docs/ctyun-hcc.md: where to
#: order, and an SSH route for the bootstrap, else it stops: REFUSALS, MISSING_AT_CHECK)
CTYUN = {"ctyun:regionId": "bb9fdb42056f11eda1610242ac110002",
         "ctyun:azName": "cn-huadong1-jsnj1A-public-ctcloud",
         "kimi-k3:sshAllowedCidrs": "198.51.100.7/32", "ctyun:rootPassword": "K3-Passw0rd!"}
#: and of aws-eks: who may reach the Kubernetes API (docs/aws-eks.md, else it stops)
EKS = {"kimi-k3:apiAccessCidrs": "198.51.100.7/32"}
CR = "cr-0123456789abcdef0"
VARIANTS: Dict[str, Tuple[str, Dict[str, str]]] = {
    "ctyun-hcc shipped": ("ctyun-hcc", CTYUN),
    "ctyun-hcc 2 replicas": ("ctyun-hcc", {**CTYUN, "kimi-k3:replicas": "2"}),
    "ctyun-hcc public, TLS": ("ctyun-hcc", {**CTYUN, "kimi-k3:allowedCidrs": "203.0.113.0/24",
                                            "kimi-k3:apiKey": KEY}),
    "aws-eks shipped, no capacity decision": ("aws-eks", EKS),
    "aws-eks adopted block": ("aws-eks", {**EKS, "kimi-k3:capacityReservationId": CR}),
    "aws-eks buys under a fee cap": ("aws-eks", {**EKS, "kimi-k3:maxUpfrontFeeUsd": "150000"}),
    "aws-eks 2 replicas": ("aws-eks", {**EKS, "kimi-k3:replicas": "2", "kimi-k3:nodes": "2"}),
    "aws-eks public, TLS": ("aws-eks", {**EKS, "kimi-k3:allowedCidrs": "203.0.113.0/24",
                                        "kimi-k3:tlsDomain": "k3.example.com", "kimi-k3:apiKey": KEY}),
    "hyperpod, existing cluster": ("aws-eks", {"kimi-k3:serving": "hyperpod",
                                               "kimi-k3:hyperpodClusterName": "hp1"}),
    "hyperpod end to end": ("aws-eks", {**EKS, "kimi-k3:serving": "hyperpod", "kimi-k3:apiKey": KEY,
                                        "kimi-k3:maxUpfrontFeeUsd": "150000"}),
}


class Runs:
    """(variant, engine) -> the run, made on first use (one program run each for the module)."""

    def __init__(self):
        self.done: Dict[Tuple[str, str], Run] = {}

    def get(self, variant: str, engine: str) -> Run:
        if (variant, engine) not in self.done:
            stack, overrides = VARIANTS[variant]
            self.done[(variant, engine)] = (run_preview if engine == "preview" else run_up)(
                stack, overrides)
        return self.done[(variant, engine)]


@pytest.fixture(scope="module")
def runs():
    return Runs()


# ---- (a) the program completes, logs no error, and really ran with unknowns ------------------

@pytest.mark.parametrize("variant", list(VARIANTS))
def test_the_preview_completes_without_an_error(runs, variant):
    run = runs.get(variant, "preview")
    assert [m for level, m in run.program.messages if level in ("ERROR", "CRITICAL")] == []
    # what makes it a preview: the endpoint is not known before the cluster exists (unless the
    # config names it, or the cluster exists already), and a dynamic resource gets an input
    # computed from a resource still to be created
    assert run.program.outputs["endpoint"] == KNOWN_ENDPOINTS.get(variant)
    assert any(d.unknown_inputs() for d in run.dynamic) == (variant not in ON_EXISTING)


#: endpoints a preview knows: named by the config (tlsDomain), or an existing cluster's
KNOWN_ENDPOINTS = {"aws-eks public, TLS": "https://k3.example.com:8000/v1",
                   "hyperpod, existing cluster": "hyperpod:kimi-k3/kimik3"}
#: variants that create nothing a dynamic resource reads (the cluster is looked up, and known)
ON_EXISTING = {"hyperpod, existing cluster"}


# ---- (b) a real preview shows every resource `up` creates -----------------------------------

@pytest.mark.parametrize("variant", list(VARIANTS))
def test_the_preview_registers_what_up_registers(runs, variant):
    preview, up = runs.get(variant, "preview"), runs.get(variant, "up")
    assert sorted(up.urns() - preview.urns()) == []  # created only inside an apply
    assert sorted(preview.urns() - up.urns()) == []
    assert len(up.urns()) >= 5


#: what `up` says that a new stack's preview cannot: message start -> why (both are logged in
#: an apply on what the purchase or lookup answers, which does not exist before `up`)
SAID_ONLY_AT_UP = {
    "Capacity Block ": "the block's id and window are the CapacityBlock resource's outputs "
                       "(components/aws_eks/infrastructure.py), unknown until it buys or adopts",
    "training plan ": "the plan's window and zone are the TrainingPlan resource's outputs "
                      "(components/aws_eks/hyperpod/resources.py), unknown until it buys or adopts",
}


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_the_preview_says_what_up_says_but_the_purchase_windows(runs, variant):
    preview, up = runs.get(variant, "preview"), runs.get(variant, "up")
    said = preview.program.messages
    assert [m for m in said if m not in up.program.messages] == []
    only_up = [text for level, text in up.program.messages if (level, text) not in said]
    assert [t for t in only_up if not t.startswith(tuple(SAID_ONLY_AT_UP))] == []
    assert len(only_up) == (0 if variant.startswith("ctyun") or variant in ON_EXISTING else 1), only_up


def test_a_resource_made_inside_an_apply_is_missing_from_the_preview(tmp_path):
    """The comparison's own guard: a program that creates a resource inside an `apply` on an
    output computed at create (the defect (b) is after) registers it under `up` only."""
    main = tmp_path / "__main__.py"
    main.write_text(
        "import pulumi\n"
        "from components.ctyun_hcc.owner_provider import HccStackOwner\n"
        "owner = HccStackOwner('first')\n"
        "owner.ownerToken.apply(lambda t: HccStackOwner('inside-apply'))\n")
    stack, overrides = VARIANTS["ctyun-hcc shipped"]
    from components.offline.runner import run_program

    names = {engine: {r["name"] for r in run_program(stack, overrides, main=main, as_deployed=True,
                                                      engine=engine).resources}
             for engine in (PreviewOfCreate, None)}
    assert names[None] - names[PreviewOfCreate] == {"inside-apply"}


def test_the_double_answers_a_create_as_a_preview_does(tmp_path):
    """The engine double's own contract: under it the id and a computed output of a resource to
    be created are unknown, an apply on them does not run, and inputs stay known; the same
    program under the known-output engine sees all of them."""
    main = tmp_path / "__main__.py"
    main.write_text(
        "import pulumi\n"
        "from components.ctyun_hcc.network_provider import HccNetwork\n"
        "net = HccNetwork('net', {'regionID': 'r1', 'vpc': 'create', 'subnet': 'create'})\n"
        "pulumi.export('id', net.id)\n"
        "pulumi.export('vpc', net.vpcID)\n"
        "pulumi.export('applied', net.vpcID.apply(lambda v: 'ran'))\n"
        "pulumi.export('region', net.regionID)\n"
        "pulumi.export('dryRun', pulumi.runtime.is_dry_run())\n")
    from components.offline.runner import run_program

    stack, overrides = VARIANTS["ctyun-hcc shipped"]
    outs = {engine: run_program(stack, overrides, main=main, as_deployed=True, engine=engine).outputs
            for engine in (PreviewOfCreate, None)}
    assert outs[PreviewOfCreate] == {"id": None, "vpc": None, "applied": None, "region": "r1",
                                     "dryRun": True}
    assert outs[None] == {"id": "net-id", "vpc": "vpc-mock", "applied": "ran", "region": "r1",
                          "dryRun": False}


# ---- (c) dynamic providers at preview: unknown inputs judged by nobody, nothing called ----------

@pytest.fixture(scope="module")
def host(tmp_path_factory):
    """One guarded provider host for the module: stack config through Configure, as the
    engine passes it (fake CTyun credentials; AWS's from a fake environment, never a real one)."""
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith(("CTYUN_", "AWS_"))}
    h = GuardedHost(tmp_path_factory.mktemp("no-calls") / "calls.log")
    h.env = {**env, "PYTHONPATH": h.env["PYTHONPATH"], "KK3_NO_CALLS_LOG": str(h.log),
             "AWS_ACCESS_KEY_ID": "AKIAPREVIEWDOUBLE000", "AWS_SECRET_ACCESS_KEY": "preview-double",
             "AWS_DEFAULT_REGION": "us-east-2", "AWS_EC2_METADATA_DISABLED": "true"}
    h.start()
    h.configure({"ctyun:accessKey": "preview-double-ak", "ctyun:secretKey": "preview-double-sk",
                 "aws:region": "us-east-2"})
    try:
        yield h
    finally:
        h.stop()


def engine_at_preview(host, d, old):
    """What the engine asks `d`'s provider at preview: check as a create (no olds), check as
    an update over `old` (the state `up` left), then diff against that state. Returns the
    failures of both checks and the diff's answer."""
    urn = f"urn:pulumi:preview::kimi-k3::{d.type}::{d.name}"
    created, create_failures = host.check(urn, {}, d.inputs)
    checked, update_failures = host.check(urn, old.inputs, d.inputs)
    for bag in (created, checked):  # check keeps what is not known yet unknown (no default for it)
        assert [k for k in d.unknown_inputs() if not contains_unknown(plain(bag.get(k)))] == [], d.name
    olds = {**old.state, PROVIDER_KEY: old.inputs[PROVIDER_KEY]}
    if olds.get("jobId") == "mock":  # a Slurm job id as Slurm gives it: the stand-in's would
        olds["jobId"] = "4242"       # skip the live lookup a diff must not make at preview
    diff = host.diff(old.id, urn, olds, checked)
    return create_failures + update_failures, diff


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_dynamic_providers_judge_nothing_and_call_nothing_at_preview(runs, host, variant):
    preview, up = runs.get(variant, "preview"), runs.get(variant, "up")
    olds = {d.name: d for d in up.dynamic}
    seen = {}
    for d in preview.dynamic:
        host.forget_calls()
        failures, diff = engine_at_preview(host, d, olds[d.name])
        seen[d.name] = (d.unknown_inputs(), failures, host.calls())
        assert failures == [], (d.name, d.unknown_inputs())
        assert host.calls() == [], (d.name, d.unknown_inputs())
    # the variant did hand providers unknowns (none where the cluster exists and is known)
    assert any(u for u, _, _ in seen.values()) == (variant not in ON_EXISTING)


def test_the_guard_sees_a_provider_that_calls_out(host):
    """The calls check's own guard: a provider whose check connects somewhere is recorded,
    though it swallows the failure."""
    from tests.integration.dynamic_host import serialized
    from tests.integration.preview_probe import CallingCheck

    host.forget_calls()
    _, failures = host.check("urn:pulumi:preview::kimi-k3::pulumi-python:dynamic/test:Probe::p", {},
                             {"host": "192.0.2.1", PROVIDER_KEY: serialized(CallingCheck())})
    assert failures == []
    assert host.calls() == ["resolve '192.0.2.1'"]


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_one_unknown_input_at_a_time_is_judged_by_nobody_either(runs, variant, monkeypatch):
    """The preview of an update that changes one upstream resource: one computed input as the
    preview has it (unknown, or holding unknowns), the others as `up` knows them. Every
    provider's check fails nothing and its diff raises nothing and calls nothing for each such
    input (in this process, as the host would call it: the values through the wire format)."""
    preview, up = runs.get(variant, "preview"), runs.get(variant, "up")
    olds = {d.name: d for d in up.dynamic}
    tried = refuse_calls(monkeypatch)
    asked = 0
    for d in preview.dynamic:
        old = olds[d.name]
        provider = dynamic_provider(d.inputs)
        old_inputs = from_struct(to_struct(old.inputs))
        state = from_struct(to_struct({**old.state, PROVIDER_KEY: old.inputs[PROVIDER_KEY]}))
        if state.get("jobId") == "mock":
            state["jobId"] = "4242"  # as in engine_at_preview: a lookup would be seen
        for key in d.unknown_inputs():
            news = from_struct(to_struct({**old.inputs, key: d.inputs[key]}))
            checked = provider.check(old_inputs, news)
            assert checked.failures == [], (d.name, key, checked.failures)
            provider.diff(old.id, state, checked.inputs)
            assert tried == [], (d.name, key)
            asked += 1
    assert (asked > 0) == (variant not in ON_EXISTING)


def test_the_one_diff_that_reads_live_state_does_so_only_when_nothing_is_unknown(runs, host):
    """The Slurm service's diff asks Slurm over SSH whether its job still runs, by design, when
    its inputs are unchanged and known (a second `up`: test_second_up.py); with the preview's
    unknowns it does not get there (test above). The guard sees the lookup it would make."""
    [svc] = [d for d in runs.get("ctyun-hcc shipped", "up").dynamic if d.type.endswith(":SlurmService")]
    urn = f"urn:pulumi:preview::kimi-k3::{svc.type}::{svc.name}"
    olds = {**svc.state, "jobId": "4242", PROVIDER_KEY: svc.inputs[PROVIDER_KEY]}
    host.forget_calls()
    host.diff(svc.id, urn, olds, svc.inputs)
    assert [c.split(" ")[0] for c in host.calls()][:1] == ["resolve"], host.calls()


#: kimi-k3's provider classes that no resource uses as they are: each is the shared base of
#: providers that do (one API's calls and credentials, SSH steps, the owner token, on-delete
#: steps) or a mixin; the classes that subclass them are the ones resources carry
BASES = {"components.aws_eks.aws_api.AwsProvider", "components.ctyun_hcc.provider_runtime.CtyunProvider",
         "components.ctyun_hcc.ssh_resource.SshStepProvider",
         "components.dynamic.owner_token.OwnerTokenProvider",
         "components.aws_eks.cleanup._OnDelete"}


def provider_classes():
    """Every dynamic provider class defined under components/ (imported: each module once)."""
    for info in pkgutil.walk_packages(components.__path__, "components."):
        if not info.name.endswith("__main__"):
            importlib.import_module(info.name)
    found, todo = set(), [Provider]
    while todo:
        for sub in todo.pop().__subclasses__():
            todo.append(sub)
            if sub.__module__.startswith("components."):
                found.add(f"{sub.__module__}.{sub.__qualname__}")
    return found


def test_every_dynamic_provider_is_asked_at_preview(runs):
    """(c) covers every provider in components/: each is carried by a resource of some variant's
    preview (a new provider needs a variant here, or it would go unasked)."""
    carried = set()
    for variant in VARIANTS:
        for d in runs.get(variant, "preview").dynamic:
            p = type(dynamic_provider({PROVIDER_KEY: d.inputs[PROVIDER_KEY]}))
            carried.add(f"{p.__module__}.{p.__qualname__}")
    assert sorted(provider_classes() - BASES - carried) == []
    assert BASES <= provider_classes()


# ---- (d) what docs/ and README say stops a preview still stops it --------------------------

def registered_at_preview(stack, overrides):
    """Run the preview and return (its error, the resources it registered before stopping)."""
    from components.offline.runner import run_program

    made = []

    class Counting(PreviewOfCreate):
        def new_resource(self, args):
            made.append(args.name)
            return super().new_resource(args)

    with pytest.raises(pulumi.RunError) as e:
        run_program(stack, overrides, as_deployed=True, engine=Counting)
    return str(e.value), made


REFUSALS = {
    # README "Without either SSH route, `pulumi preview` stops before creating anything"
    "ctyun-hcc without an SSH route": (
        "ctyun-hcc", {k: v for k, v in CTYUN.items() if k != "kimi-k3:sshAllowedCidrs"},
        "kimi-k3:sshAllowedCidrs=[] is empty and there is no kimi-k3:sshBastion"),
    # docs/aws-eks.md "With neither, a real preview stops with one line naming kimi-k3:apiAccessCidrs"
    "aws-eks without a route to the Kubernetes API": (
        "aws-eks", {}, "kimi-k3:apiAccessCidrs (not set) "),
    # docs/security.md: "Without either, a public endpoint is refused at preview"
    "aws-eks public endpoint without TLS": (
        "aws-eks", {**EKS, "kimi-k3:allowedCidrs": "203.0.113.0/24", "kimi-k3:apiKey": KEY},
        "kimi-k3:allowedCidrs"),
    # docs/aws-eks.md: "A version past the end of EKS extended support ... is refused at preview"
    "aws-eks version past extended support": (
        "aws-eks", {**EKS, "kimi-k3:clusterVersion": "1.31"}, "kimi-k3:clusterVersion=1.31 left EKS extended support"),
    # docs/aws-eks.md: "`default`, any `kube-*` and the add-ons' `lws-system` are refused at preview"
    "aws-eks namespace default": (
        "aws-eks", {**EKS, "kimi-k3:namespace": "default"}, "kimi-k3:namespace='default' is a namespace of the cluster's own"),
    # docs/aws-eks.md: "a Graviton type is refused at preview, where EKS would refuse it only after the block is bought"
    "aws-eks Graviton system nodes": (
        "aws-eks", {**EKS, "kimi-k3:systemInstanceType": "m7g.xlarge"}, "kimi-k3:systemInstanceType='m7g.xlarge' is an AWS Graviton"),
    # docs/aws-eks.md: kmsKeyArn "in aws:region (EKS takes no other; another region's is refused at preview)"
    "aws-eks KMS key of another region": (
        "aws-eks", {**EKS, "kimi-k3:kmsKeyArn": "arn:aws:kms:us-west-2:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"},
        "kimi-k3:kmsKeyArn='arn:aws:kms:us-west-2:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab' is in us-west-2"),
}


@pytest.mark.parametrize("case", list(REFUSALS))
def test_refusals_at_preview_still_stop_it_before_anything_is_created(case):
    stack, overrides, start = REFUSALS[case]
    error, made = registered_at_preview(stack, overrides)
    assert error.startswith(start) and "\n" not in error, error
    assert made == []


def test_an_eks_version_skip_is_refused_by_the_roll_guard_at_preview(runs, host):
    """docs/aws-eks.md: "a jump of two (1.33 -> 1.35) ... is refused at preview by the GPU roll
    guard": the guard's diff refuses it with the preview's inputs (the launch template's version
    unknown), calling nothing."""
    base = {**EKS, "kimi-k3:capacityReservationId": CR}
    up = {d.name: d for d in run_up("aws-eks", {**base, "kimi-k3:clusterVersion": "1.33"}).dynamic}
    [guard] = [d for d in runs.get("aws-eks adopted block", "preview").dynamic
               if d.type.endswith(":GpuRollGuard")]
    assert UNKNOWN in str(guard.inputs["rollKey"])
    host.forget_calls()
    with pytest.raises(ProviderError, match="kimi-k3:clusterVersion=1.35 is refused: EKS updates a cluster one minor version"):
        engine_at_preview(host, guard, up[guard.name])
    assert host.calls() == []


#: docs/ctyun-hcc.md: `regionId`, `azName` "required by `pulumi up` (the offline plan runs without;
#: `pulumi preview` stops naming them)"; the root password likewise (`pulumi config set --secret
#: ctyun:rootPassword`). The program stops a real preview on them in one line naming every missing
#: key (ctyun_hcc/cluster.py `account_requirement`); the providers' `check` refuses them again
#: (input name, the refusal), for a program that let one through.
MISSING_AT_CHECK = {
    "ctyun:regionId": ("regionID", "regionID is required: pulumi config set ctyun:regionId <region id>"),
    "ctyun:azName": ("azName", "azName is required: pulumi config set ctyun:azName <availability zone>"),
    "ctyun:rootPassword": ("rootPassword",
                           "rootPassword is required: pulumi config set --secret ctyun:rootPassword <password>"),
}


@pytest.mark.parametrize("key", list(MISSING_AT_CHECK))
def test_a_missing_ctyun_setting_stops_the_preview_in_the_program_in_one_line(key):
    with pytest.raises(pulumi.RunError) as e:
        run_preview("ctyun-hcc", {k: v for k, v in CTYUN.items() if k != key})
    text = str(e.value)
    assert text.startswith(f"{key} (not set) is needed to order the cluster;") and "\n" not in text, text
    assert "K3-Passw0rd!" not in text
    with pytest.raises(pulumi.RunError, match=r"ctyun:regionId \(not set\) is needed to order the cluster "
                                              r"\(so are ctyun:azName, ctyun:rootPassword\)"):
        run_preview("ctyun-hcc", {"kimi-k3:sshAllowedCidrs": CTYUN["kimi-k3:sshAllowedCidrs"]})


@pytest.mark.parametrize("key", list(MISSING_AT_CHECK))
def test_a_missing_ctyun_setting_is_refused_again_by_check_without_a_call(host, runs, key):
    """The order's `check`, given the preview's inputs without the key, refuses it and calls nothing."""
    preview = runs.get("ctyun-hcc shipped", "preview")
    [order] = [d for d in preview.dynamic if d.name == "kimi-k3-hcc-order"]
    field, refusal = MISSING_AT_CHECK[key]
    inputs = {k: v for k, v in order.inputs.items() if k != field}
    host.forget_calls()
    failures = host.check(f"urn:pulumi:preview::kimi-k3::{order.type}::{order.name}", {}, inputs)[1]
    assert (field, refusal) in failures, failures
    assert host.calls() == []


def test_no_capacity_decision_is_said_at_preview_with_what_up_will_do(runs):
    """docs/aws-eks.md, stacks/Pulumi.aws-eks.yaml: with neither a block to adopt nor a fee cap,
    `pulumi up` lists the offerings and stops without buying; the preview says so, and its
    Capacity Block input asks for no purchase (the check above calls nothing)."""
    run = runs.get("aws-eks shipped, no capacity decision", "preview")
    said = [w for w in run.program.warnings if w.startswith("no Capacity Block to adopt")]
    assert len(said) == 1 and "`pulumi up` lists the matching offerings with their upfront fees and " \
        "stops before anything is created" in said[0], said
    [block] = [d for d in run.dynamic if d.type.endswith(":CapacityBlock")]
    assert not block.inputs.get("reservationId") and not block.inputs.get("maxUpfrontFeeUsd")
