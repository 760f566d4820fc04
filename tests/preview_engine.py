"""The mock engine answering as a real `pulumi preview` of a new stack does (a test double of the
Pulumi engine, used by tests/integration/test_preview_unknowns.py).

Why: every other program-level test runs `__main__.py` with `preview=False` and known outputs for
every resource (components/offline/runner.py `KnownOutputs`). The first thing a user runs, the
preview of a fresh stack (`pulumi preview`, and the one `pulumi up` shows first), is different:
nothing exists yet, so a resource to be created has no id and whatever its provider computes is
unknown. An `apply` on such an output never runs, `Output.all(...)` of it stays unknown, and a
dynamic provider's `check`/`diff` receive the unknown sentinel in inputs made from it.

Built from the Pulumi Python SDK's own contract, pulumi 3.272.0 (requirements.txt), read in
https://github.com/pulumi/pulumi/tree/v3.272.0/sdk/python/lib/pulumi :

- runtime/mocks.py `set_mocks(preview=True)` sets the runtime's `dry_run`
  (`pulumi.runtime.is_dry_run()` is then true, as under `pulumi preview`); `MockMonitor`
  `RegisterResource` sends our `new_resource`'s id and state back as the engine's response;
- runtime/resource.py `register_resource`: "The ID is known if (and only if) it is a non-empty
  string" (`is_known = bool(resp.id)`): id "" is an unknown id;
- runtime/rpc.py `resolve_outputs`: under `is_dry_run()` the inputs the program passed are NOT
  echoed into the outputs (only with the legacy-apply switch); only what the engine returned is
  known, a returned `UNKNOWN` ("04da6b54-80e4-46f7-96ec-b56ff0331ba9") deserializes to
  `Unknown()` (`deserialize_property`), and every output the engine did not return resolves
  unknown ("will mark the value as known if we are not running a preview");
- runtime/invoke.py: an invoke whose arguments contain an unknown is not sent; it resolves
  unknown (so `call` below only ever sees known arguments, as a real provider does at preview).

What the engine returns for a create at preview: for a provider that does not support
preview, as `python -m pulumi.dynamic` does not (its `Configure` answers no `supportsPreview`,
pulumi/dynamic/__main__.py), "return the inputs as the state" (`provider.Create` and `Update`
with `req.Preview`, sdk/go/common/resource/plugin/provider_plugin.go,
https://github.com/pulumi/pulumi/blob/1a80e27fb0de7273710781b64a47bf6864395c69/sdk/go/common/resource/plugin/provider_plugin.go);
a bridged provider (aws, kubernetes, eks) answers with its inputs and its computed attributes
unknown. So: the inputs as the program sent them (unknowns stay unknown), plus `UNKNOWN` for what
the provider computes - a dynamic resource's declared outputs (`Provider.OUTPUTS`,
components/dynamic/provider.py), and for the others the outputs the target's offline stand-ins
declare (`MOCK_OUTPUTS`: ids, ARNs, endpoints, names and kubeconfigs the program reads) and
`id`/`arn`. A read of an existing resource (`Resource.get`, an id given) is done for real at
preview: answered known, as by `KnownOutputs`.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Set, Tuple

import dill
from pulumi.runtime import rpc

from components.offline.runner import KnownOutputs, ProgramRun, run_program

UNKNOWN = rpc.UNKNOWN
#: pulumi's marker of a secret value in a property map (pulumi/runtime/rpc.py _special_sig_key)
SIG = rpc._special_sig_key
DYNAMIC = "pulumi-python:dynamic/"
#: what every bridged resource computes at create (pulumi-aws: `id`, `arn`; unknown at preview)
ALWAYS_COMPUTED = ("id", "arn")


def is_unknown(value: Any) -> bool:
    return value == UNKNOWN or type(value).__name__ == "Unknown"


def known_part(value: Any) -> Any:
    """`value` with every unknown as None (what a stand-in can be asked about)."""
    if is_unknown(value):
        return None
    if isinstance(value, dict):
        return {k: known_part(v) for k, v in value.items()}
    if isinstance(value, list):
        return [known_part(v) for v in value]
    return value


def dynamic_provider(inputs: Mapping[str, Any]):
    """The provider a dynamic resource carries (`__provider`: pulumi.dynamic's dill pickle)."""
    pickled = rpc.unwrap_rpc_secret(inputs["__provider"])  # secret: it may carry a config value
    return dill.loads(base64.b64decode(pickled))


class PreviewOfCreate(KnownOutputs):
    """Answers as the engine's preview of a stack that does not exist yet (module docstring)."""

    preview = True

    def computed(self, args) -> Tuple[str, ...]:
        """The output names the provider of `args` computes (unknown at this preview)."""
        if args.typ.startswith(DYNAMIC):
            return tuple(dynamic_provider(args.inputs).OUTPUTS)
        names = list(ALWAYS_COMPUTED) if args.custom else []
        if args.typ in self.extra:
            names += list(self.extra[args.typ](known_part(dict(args.inputs))))
        return tuple(names)

    def new_resource(self, args) -> tuple:
        if args.resource_id:  # a read (`get`) or an import: the engine does it at preview too
            return super().new_resource(args)
        state: Dict[str, Any] = dict(args.inputs)
        state.pop("__provider", None)
        for name in self.computed(args):
            if name not in state or name in ALWAYS_COMPUTED:
                state[name] = UNKNOWN
        return "", state


@dataclass
class Dynamic:
    """One dynamic resource as the engine saw it: its inputs on the wire (secrets unwrapped, as
    the engine sends them to a provider that does not accept secrets - the dynamic host's
    Configure answers `acceptSecrets: False`; unknowns as `UNKNOWN`; `__provider` kept) and the
    id and state the engine answered."""

    type: str
    name: str
    inputs: Dict[str, Any]
    id: str
    state: Dict[str, Any]

    def unknown_inputs(self) -> List[str]:
        return sorted(k for k, v in self.inputs.items() if contains_unknown(v))


@dataclass
class Run:
    program: ProgramRun
    dynamic: List[Dynamic] = field(default_factory=list)

    def urns(self) -> Set[str]:
        return {r["urn"] for r in self.program.resources}


def plain(value: Any) -> Any:
    """`value` with Pulumi's secret wrappers taken off and every unknown spelled `UNKNOWN`."""
    if is_unknown(value):
        return UNKNOWN
    if isinstance(value, dict):
        if SIG in value:
            return plain(value.get("value"))
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def contains_unknown(value: Any) -> bool:
    if is_unknown(value):
        return True
    if isinstance(value, dict):
        return any(contains_unknown(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(contains_unknown(v) for v in value)
    return False


def _recording(engine: type, seen: List[Dynamic]) -> type:
    class Recording(engine):
        def new_resource(self, args):
            id_, state = super().new_resource(args)
            if args.typ.startswith(DYNAMIC):
                seen.append(Dynamic(args.typ, args.name, plain(dict(args.inputs)), id_ or "",
                                    plain(dict(state))))
            return id_, state

    return Recording


def run_preview(stack: str, overrides: Optional[Mapping[str, str]] = None) -> Run:
    """`__main__.py` for `stack` as a real `pulumi preview` of a new stack runs it."""
    seen: List[Dynamic] = []
    program = run_program(stack, overrides, as_deployed=True, engine=_recording(PreviewOfCreate, seen))
    return Run(program, seen)


def run_up(stack: str, overrides: Optional[Mapping[str, str]] = None) -> Run:
    """The same config as `pulumi up` runs it once everything exists (known outputs)."""
    seen: List[Dynamic] = []
    program = run_program(stack, overrides, as_deployed=True, engine=_recording(KnownOutputs, seen))
    return Run(program, seen)
