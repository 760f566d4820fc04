"""Run the real `__main__.py` under Pulumi's mock engine: no CLI, no cloud, no credentials.

This is what the offline plan command and the program-level tests use. Every resource the program
registers is recorded with its type, name, parent and inputs as the program passed them (secret
values replaced by "[secret]"); mocked resources answer with their inputs as outputs plus the
extra outputs a target declares for remote components (`MOCK_OUTPUTS`).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import gc
import json
import logging
import os
import runpy
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional

import yaml

PROJECT = "kimi-k3"
#: the organization `pulumi.get_organization()` answers on a self-managed (DIY: local file, S3)
#: backend, where stacks are `organization/<project>/<stack>` ("org must be set to
#: \"organization\"": Pulumi's automation.fullyQualifiedStackName reference,
#: https://www.pulumi.com/docs/reference/pkg/nodejs/pulumi/pulumi/functions/automation.fullyQualifiedStackName.html,
#: read 2026-12-02); the mock engine would otherwise answer None, and plans showed `None/kimi-k3/...`
ORGANIZATION = "organization"
ROOT = Path(__file__).resolve().parent.parent.parent
SECRET = "[secret]"
_SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270"
_SIG = "4dabf18193072939515e22adb298388d"


#: True while the program runs offline (the plan command, tests) rather than as a real deployment:
#: a target may then record a requirement a real `pulumi up` would refuse (aws-eks: API reachability)
OFFLINE: contextvars.ContextVar = contextvars.ContextVar("kimi_k3_offline", default=False)


def offline() -> bool:
    return OFFLINE.get()


class StackNotFound(Exception):
    pass


@dataclass
class ProgramRun:
    stack: str
    config: Dict[str, str]
    resources: List[Dict[str, Any]] = field(default_factory=list)
    outputs: Dict[str, Any] = field(default_factory=dict)
    inference: Any = None  # the K3Inference instance (plan, spec, artifacts)
    #: what the program decided before any resource (program/contract.py: Deployment)
    deployment: Any = None
    #: what the program logged with pulumi.log.warn (exposure, deploy requirements...), in order
    warnings: List[str] = field(default_factory=list)
    #: everything it logged with pulumi.log.info and above, as (level name, message), in order
    messages: List[tuple] = field(default_factory=list)

    def of_type(self, type_token: str) -> List[Dict[str, Any]]:
        return [r for r in self.resources if r["type"] == type_token]


def _strip_secrets(value: Any) -> Any:
    if isinstance(value, dict):
        if value.get(_SIG) == _SECRET_SIG:
            return SECRET
        return {k: _strip_secrets(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_strip_secrets(v) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)  # protobuf Struct numbers are floats; the program passed integers
    return value


class _Recorder(logging.Handler):
    def __init__(self, run: "ProgramRun"):
        super().__init__(logging.INFO)
        self.run = run

    def emit(self, record: logging.LogRecord) -> None:
        self.run.messages.append((record.levelname, record.getMessage()))
        if record.levelno >= logging.WARNING:
            self.run.warnings.append(record.getMessage())


def _recording_logger(run: "ProgramRun") -> logging.Logger:
    """The mock engine's logger for one run: messages are kept on `run`, not printed (the plan
    command prints the warnings once, as `warning: ...`)."""
    logger = logging.Logger("kimi_k3.mockrun", logging.INFO)  # not registered: one per run
    logger.addHandler(_Recorder(run))
    logger.propagate = False
    return logger


def _name_of(urn: str) -> Optional[str]:
    return urn.rsplit("::", 1)[-1] if urn else None


def _provider_urn(reference: str) -> Optional[str]:
    """The URN in a provider reference (`<provider URN>::<provider id>`); None when empty."""
    return reference.rsplit("::", 1)[0] if reference and "::" in reference else None


#: the type of the stack's root resource, which the engine leaves out of its children's URNs
ROOT_STACK_TYPE = "pulumi:pulumi:Stack"


def engine_urn(stack: str, project: str, parent_urn: str, type_: str, name: str) -> str:
    """The URN the Pulumi engine gives a resource: the parent's whole type chain (the stack's
    own type left out), then its type and name. Pulumi's mock monitor keeps only the parent's
    last type; this is the engine's rule (NewURN in sdk/go/common/resource/urn.go,
    https://github.com/pulumi/pulumi/blob/1a16857a44f16e46a9dce29f184c511062a70f80/sdk/go/common/resource/urn.go),
    so state keys and aliases can be checked offline as a real `pulumi up` computes them."""
    chain = type_
    if parent_urn:
        parent_chain = parent_urn.split("::")[2]
        if parent_chain != ROOT_STACK_TYPE:
            chain = f"{parent_chain}${type_}"
    return f"urn:pulumi:{stack}::{project}::{chain}::{name}"


def _alias(alias) -> Dict[str, Any]:
    """One alias as the SDK sent it: {"urn": ...} or the spec's fields (pulumi 3.272 sends specs
    to a monitor that supports them, as the mock monitor does: runtime/resource.py prepare_aliases)."""
    if alias.urn:
        return {"urn": alias.urn}
    s = alias.spec
    return {"name": s.name, "type": s.type, "stack": s.stack, "project": s.project,
            "parentUrn": s.parentUrn, "noParent": bool(s.noParent)}


def _mock_outputs(config: Mapping[str, str]) -> Dict[str, Callable[[Mapping[str, Any]], Dict[str, Any]]]:
    """The offline stand-ins of the stack's target (contract: Target.mock_outputs); none for a
    target that is not registered (the program refuses it by name before any resource)."""
    from ..program.registry import REGISTRY, load_target

    name = config.get(f"{PROJECT}:target")
    return dict(load_target(name).mock_outputs()) if name in REGISTRY else {}


def load_stack_config(stack: str, overrides: Optional[Mapping[str, str]] = None):
    """(config, secret keys) of `stacks/Pulumi.<stack>.yaml` with `overrides` applied.

    Encrypted values cannot be read offline: they become "[secret]" and stay marked secret.
    """
    path = ROOT / "stacks" / f"Pulumi.{stack}.yaml"
    if not path.exists():
        known = sorted(p.name[len("Pulumi."):-len(".yaml")] for p in (ROOT / "stacks").glob("Pulumi.*.yaml"))
        raise StackNotFound(f"--stack={stack!r} has no stacks/Pulumi.{stack}.yaml; use one of {', '.join(known)}")
    doc = yaml.safe_load(path.read_text()) or {}
    config: Dict[str, str] = {}
    secret_keys: List[str] = []
    for key, value in (doc.get("config") or {}).items():
        if isinstance(value, dict) and "secure" in value:
            config[key] = SECRET
            secret_keys.append(key)
        elif isinstance(value, str):
            config[key] = value
        else:
            config[key] = json.dumps(value)
    for key, value in (overrides or {}).items():
        config[key if ":" in key else f"{PROJECT}:{key}"] = value
    return config, secret_keys


class KnownOutputs:
    """The mock engine's answers as after a `pulumi up`: every resource has an id and its
    outputs are known (its inputs, plus the target's offline stand-ins, `MOCK_OUTPUTS`).

    `preview` is what the SDK is told (`pulumi.runtime.is_dry_run()`). Another engine (the
    tests' preview, tests/preview_engine.py) subclasses this and answers as a real preview of a
    new stack does; the plan command always runs this one."""

    preview = False

    def __init__(self, extra: Mapping[str, Callable[[Mapping[str, Any]], Dict[str, Any]]]):
        self.extra = extra

    def new_resource(self, args) -> tuple:
        state = dict(args.inputs)
        state.pop("__provider", None)
        if args.typ in self.extra:
            state.update(self.extra[args.typ](args.inputs))
        return (f"{args.name}-id" if args.custom else None), state

    def call(self, args) -> Dict[str, Any]:
        if args.token in self.extra:
            return self.extra[args.token](args.args)
        return {}


def run_program(stack: str, overrides: Optional[Mapping[str, str]] = None,
                main: Optional[Path] = None, as_deployed: bool = False,
                engine: Optional[Callable[..., KnownOutputs]] = None) -> ProgramRun:
    """Run `__main__.py` for `stack` under mocks and return what it registered.

    `as_deployed=True` makes the program behave as under a real `pulumi preview`/`up` (`OFFLINE`
    false), so tests can see the refusals a deployment would stop on. `engine` (a `KnownOutputs`
    subclass, made with the target's stand-ins) answers instead of `KnownOutputs`.
    """
    config, secret_keys = load_stack_config(stack, overrides)
    ctx = contextvars.Context()  # fresh Pulumi runtime state for every run
    with without_cycle_collection():
        return ctx.run(_run_offline, not as_deployed, stack, config, secret_keys, main or ROOT / "__main__.py",
                       engine or KnownOutputs)


@contextlib.contextmanager
def without_cycle_collection():
    """Python's cycle collector off for one program run, back on (if it was) afterwards; what a
    run that imported modules leaves is frozen (`gc.freeze`) first.

    Why: a run imports the SDKs of the stack's resources (pulumi-aws's ec2 package alone defines
    thousands of classes and typing generics) and the collector, triggered by every 700 new
    objects, walks all of them again on each pass: about 50 middle and 4 full passes per aws-eks
    plan, 0.5 s of its 4.4 s of CPU (0.15 s of ctyun-hcc's 1.2 s); without them a plan's peak
    memory grew by 1 MB (docs/benchmarks.md, "Offline plan speed"). Turned back on, its first pass would walk every
    object the run made once more (0.15 s): the modules and classes a run imported live as long
    as the process, so a run that imported something moves what it leaves to the permanent
    generation the collector skips. That keeps one such run's cyclic garbage (~55,000 objects
    after the first aws-eks run) for the life of the process: once per stack or variant that
    imports new modules, not per run (a later run of the same stack imports nothing and freezes
    nothing). Reference counting still frees everything that is not in a cycle at once. Nothing
    a run registers or writes depends on when cycles are collected."""
    was_enabled = gc.isenabled()
    modules = len(sys.modules)
    gc.disable()
    try:
        yield
    finally:
        if len(sys.modules) > modules:
            gc.freeze()
        if was_enabled:
            gc.enable()


def _run_offline(is_offline: bool, *args) -> ProgramRun:
    OFFLINE.set(is_offline)
    return _run(*args)


def _run(stack, config, secret_keys, main: Path, engine=KnownOutputs) -> ProgramRun:
    import pulumi
    from pulumi.runtime import mocks as pmocks
    from google.protobuf import json_format

    run = ProgramRun(stack=stack, config=dict(config))
    answers = engine(_mock_outputs(config))

    class Mocks(pulumi.runtime.Mocks):
        preview = answers.preview

        def new_resource(self, args: pulumi.runtime.MockResourceArgs):
            return answers.new_resource(args)

        def call(self, args: pulumi.runtime.MockCallArgs):
            return answers.call(args)

    class RecordingMonitor(pmocks.MockMonitor):
        def make_urn(self, parent: str, type_: str, name: str) -> str:
            return engine_urn(pulumi.get_stack(), PROJECT, parent, type_, name)

        def RegisterResource(self, request):
            response = super().RegisterResource(request)
            if request.type != "pulumi:pulumi:Stack":
                inputs = _strip_secrets(json_format.MessageToDict(request.object))
                inputs.pop("__provider", None)
                run.resources.append({
                    "type": request.type,
                    "name": request.name,
                    "parent": _name_of(request.parent),
                    "custom": bool(request.custom),
                    # a multi-language component (pulumi-eks's Cluster): creates resources in its provider
                    "remote": bool(request.remote),
                    "inputs": inputs,
                    # names of the resources it depends on, explicitly and through its inputs
                    # (destroy deletes it before them; `up` creates it after them: order.py)
                    "dependencies": sorted({_name_of(u) for u in request.dependencies}),
                    # the same as engine URNs (names are not unique: a subnet and its route table
                    # association share one), and the provider's URN (None: a default provider)
                    "dependency_urns": sorted(set(request.dependencies)),
                    "provider_urn": _provider_urn(request.provider),
                    # what the engine keys its state by, and the aliases as the SDK sent them
                    "urn": response.urn,
                    "parent_urn": request.parent,
                    "aliases": [_alias(a) for a in request.aliases],
                    # a replacement deletes the old one first (ResourceOptions.delete_before_replace)
                    "delete_before_replace": bool(request.deleteBeforeReplace),
                })
            return response

    if not isinstance(asyncio.get_event_loop_policy(), _TrackingPolicy):
        asyncio.set_event_loop_policy(_TrackingPolicy())
    run_loop = asyncio.new_event_loop()
    asyncio.set_event_loop(run_loop)
    try:
        _register(run, main, config, secret_keys, stack, Mocks, RecordingMonitor)
    finally:
        _close_run_loops(run_loop)
    return run


def _register(run: "ProgramRun", main: Path, config, secret_keys, stack, Mocks, RecordingMonitor) -> None:
    """Run the program on the current (fresh) loop and copy what it made into `run`."""
    import pulumi
    from pulumi.runtime import set_all_config, set_mocks
    from pulumi.runtime.settings import get_root_resource
    from pulumi.runtime.stack import wait_for_rpcs
    from pulumi.runtime.sync_await import _sync_await

    from ..inference.component import K3Inference
    from ..program.pipeline import Prepared

    mocks = Mocks()
    set_all_config(config, secret_keys)
    set_mocks(mocks, project=PROJECT, stack=stack, preview=mocks.preview, monitor=RecordingMonitor(mocks),
              logger=_recording_logger(run), organization=ORGANIZATION)
    old_cwd = os.getcwd()
    os.chdir(main.parent)
    try:
        namespace = runpy.run_path(str(main), run_name="__main__")
        _sync_await(wait_for_rpcs())
    except BaseException:
        # drain what the failed program queued, or the next run in this process waits forever
        try:
            _sync_await(wait_for_rpcs())
        except BaseException:  # noqa: BLE001 the first error is the one to report
            pass
        raise
    finally:
        os.chdir(old_cwd)
    run.inference = next((v for v in namespace.values() if isinstance(v, K3Inference)), None)
    run.deployment = next((v.deployment for v in namespace.values() if isinstance(v, Prepared)), None)
    root = get_root_resource()
    for name, value in (getattr(root, "outputs", None) or {}).items():
        out = pulumi.Output.from_input(value)
        secret = _sync_await(out.is_secret())
        run.outputs[name] = SECRET if secret else _sync_await(out.future())


class _TrackingPolicy(asyncio.DefaultEventLoopPolicy):
    """The default policy, remembering the loops it makes: Pulumi's mock monitor gives each
    worker thread an event loop of its own (pulumi/runtime/sync_await.py _ensure_event_loop)
    and never closes it; left to the interpreter's shutdown, closing one can fail on a socket
    already closed and print a traceback after the plan command's output."""

    def __init__(self):
        super().__init__()
        self.loops: List[asyncio.AbstractEventLoop] = []

    def new_event_loop(self):
        loop = super().new_event_loop()
        self.loops.append(loop)
        return loop


def _close_run_loops(run_loop: asyncio.AbstractEventLoop) -> None:
    """Stop the run's worker threads, close every loop the run made (its own included) and leave
    the thread a fresh current loop.

    Why: the run's loop ends with its default executor shut down; left as the thread's current
    loop, the next Pulumi program in this process (another run, or a `pulumi.runtime.test`) found
    it through `asyncio.get_event_loop()` and failed with "Executor shutdown has been called",
    so which unit tests passed depended on which ran before them. No current loop at all is no
    better: `pulumi.runtime.set_mocks` asks `asyncio.get_event_loop()` for one (resource.py
    `resource_output`). The fresh loop is closed by the next run, like the others it made."""
    try:
        if not run_loop.is_closed():
            run_loop.run_until_complete(run_loop.shutdown_default_executor())
    finally:
        policy = asyncio.get_event_loop_policy()
        made = policy.loops if isinstance(policy, _TrackingPolicy) else []
        for loop in made + [run_loop]:
            if not loop.is_running() and not loop.is_closed():
                loop.close()
        fresh = asyncio.new_event_loop()
        if isinstance(policy, _TrackingPolicy):
            policy.loops = [fresh]
        asyncio.set_event_loop(fresh)
