"""What a target provides to the program, written down in one place.

A target (CTyun HCC, AWS EKS, ...) is one folder under `components/` whose `target.py` defines
one subclass of `Target`, and one line in `registry.py`. The program (pipeline.py) calls every
method below once per run, in this order; nothing is discovered with `getattr` and nothing is
set on a target after it is built:

    parse_config(shared)                  its keys -> its typed config (ConfigError names a key)
    node_shape(settings), node_count(...)  the hardware the planner plans for
    plan_request(settings, request)       the planner's request, with what only the target knows
    runtime(settings)                     where the weights sit in the container, how they load
    render(settings, plan, spec)          its files (the plan command writes them) and the
                                          objects it declares: rendered once, declared as rendered
    exposures(settings)                   what it opens to whom (warned at every plan/preview)
    deploy_requirements(settings)         what a real `pulumi up` needs that an offline plan can
                                          only warn about (a deployment stops on the first)
    infrastructure(name, deployment)      its component, at the top of the stack, with the
                                          infrastructure as children (K3Inference is attached to it)
    serve(name, deployment, infra, parent)    the serving resources, children of `parent`
                                          (K3Inference)
    gates(name, deployment, infra, served, parent)  the readiness and acceptance gates, children
                                          of `parent`
    outputs(deployment, infra, served, gates) the stack outputs it adds (endpoint etc. are shared)
    mock_outputs()                        offline stand-ins: what its resources answer under the
                                          mock engine (components/offline/runner.py)
    clock_phases(deployment, block_start) the phases from `pulumi up` to the first accepted
                                          token, with estimates (progress/clock.py; asked by the
                                          program before `infrastructure`, for `status`)

and, by the plan command only (cli/plan_ops.py), after the program ran:

    cost_parts(resources, node_shape, nodes)  what the registered resources bill per hour
                                          (cost/estimate.py prices them)

Everything before `infrastructure` is pure (Pulumi config is read, no resource is registered), so
bad input stops the program before anything is created.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass
from typing import (Any, Callable, ClassVar, Dict, Generic, Mapping, Optional, Protocol, Sequence,
                    Tuple, TypeVar)

from ..config.shared import Exposure, SharedSettings
from ..inference.errors import ConfigError
from ..inference.launch import LaunchSpec, Runtime
from ..inference.planner import Plan, PlanRequest

C = TypeVar("C")  # a target's typed config
R = TypeVar("R", bound="Rendered")  # what a target renders
I = TypeVar("I")  # its infrastructure component  # noqa: E741
S = TypeVar("S", bound="Served")  # what its serving resources report
G = TypeVar("G", bound="Gates")  # what its gates report

#: offline stand-ins: {type token: fn(inputs) -> extra outputs} (components/offline/runner.py)
MockOutputs = Mapping[str, Callable[[Mapping[str, Any]], Dict[str, Any]]]


@dataclass(frozen=True)
class Secrets:
    """Secret stack config as Pulumi Outputs (never plain strings); None when not set."""

    api_key: Optional[Any] = None  # kimi-k3:apiKey -> vLLM's VLLM_API_KEY
    hf_token: Optional[Any] = None  # kimi-k3:hfToken -> HF_TOKEN for hub downloads


@dataclass(frozen=True)
class StackSettings(Generic[C]):
    """A stack's whole config, parsed once: the shared `kimi-k3:*` keys and the target's own."""

    shared: SharedSettings
    target: C


@dataclass(frozen=True)
class Rendered:
    """A target's rendered files: relative path -> text, exactly what its resources run."""

    files: Mapping[str, str]


class Requirement(Protocol):
    """Something a real `pulumi up` needs that the offline plan can only warn about."""

    def error(self) -> ConfigError:
        """The refusal a deployment stops on."""

    def text(self) -> str:
        """The same, as the offline plan's warning says it."""

    def to_dict(self) -> Dict[str, str]:
        """{"key", "problem", "fix"} for plan.json's `deploy_requirements`."""


@dataclass(frozen=True)
class Deployment(Generic[C, R]):
    """Everything decided before the first resource, handed to the target once."""

    settings: StackSettings[C]
    plan: Plan
    spec: LaunchSpec
    rendered: R
    secrets: Secrets
    requirements: Tuple[Requirement, ...] = ()
    #: what the deployment fetches from outside and whether each is pinned (config/pins.py)
    pins: Tuple[Any, ...] = ()

    @property
    def shared(self) -> SharedSettings:
        return self.settings.shared

    @property
    def config(self) -> C:
        """The target's typed config."""
        return self.settings.target


@dataclass(frozen=True)
class Served:
    """What a target's serving resources report: the endpoint (an Output or text)."""

    endpoint: Any


@dataclass(frozen=True)
class Gates:
    """What the readiness/acceptance gates report: the endpoint as they confirm it (None: the
    serving resources' own) and the acceptance report (None: no gate runs it)."""

    endpoint: Optional[Any] = None
    acceptance: Optional[Any] = None


class Target(abc.ABC, Generic[C, R, I, S, G]):
    """The contract every target implements (see the module docstring for the order of calls)."""

    #: the stack's `kimi-k3:target` value (and plan.json's `target`)
    name: ClassVar[str]

    @abc.abstractmethod
    def parse_config(self, shared: SharedSettings) -> C:
        """The target's typed config from its keys (`shared.target_config` and its own
        namespaces); ConfigError on bad input, before anything is created."""

    @abc.abstractmethod
    def node_shape(self, settings: StackSettings[C]) -> str:
        """Catalog key of the node shape the target provides (e.g. `atlas-800-a3`)."""

    @abc.abstractmethod
    def node_count(self, settings: StackSettings[C]) -> int:
        """Nodes per serving replica that the target provides."""

    @abc.abstractmethod
    def plan_request(self, settings: StackSettings[C], request: PlanRequest) -> PlanRequest:
        """`request` (the shared settings on this hardware) with what only the target knows."""

    @abc.abstractmethod
    def runtime(self, settings: StackSettings[C]) -> Runtime:
        """Where the weights sit inside the container and how vLLM loads them."""

    @abc.abstractmethod
    def render(self, settings: StackSettings[C], plan: Plan, spec: LaunchSpec) -> R:
        """The files that run `spec` on the target, and the objects it declares. Pure."""

    @abc.abstractmethod
    def exposures(self, settings: StackSettings[C]) -> Sequence[Exposure]:
        """Every opening the target makes, with the CIDRs it admits."""

    @abc.abstractmethod
    def deploy_requirements(self, settings: StackSettings[C]) -> Sequence[Requirement]:
        """What a real deployment of `settings` needs and the config does not give."""

    def pins(self, settings: StackSettings[C], rendered: R) -> Sequence[Any]:
        """The target's own artifacts (config/pins.Pin: images, installers, a SIF) besides the
        model repository, pinned or not, for plan.json `pins` and the plan's warnings."""
        return ()

    def unpinned_weights(self, settings: StackSettings[C]) -> str:
        """Why the target's weights download cannot take `kimi-k3:modelRevision` with this
        config ("": it takes `shared.revision()`), for the plan's warning (issue 21)."""
        return ""

    @abc.abstractmethod
    def infrastructure(self, name: str, deployment: Deployment[C, R]) -> I:
        """Declare the target's component (a ComponentResource at the top of the stack, a name
        of its own) and the infrastructure under it, named `f"{name}-..."`. The program attaches
        K3Inference to it and registers its outputs last."""

    @abc.abstractmethod
    def serve(self, name: str, deployment: Deployment[C, R], infrastructure: I, parent: Any) -> S:
        """Declare the resources that run the spec (named `f"{name}-..."`), as children of
        `parent` (K3Inference)."""

    @abc.abstractmethod
    def gates(self, name: str, deployment: Deployment[C, R], infrastructure: I, served: S,
              parent: Any) -> G:
        """Declare the readiness and acceptance gates (named `f"{name}-..."`), as children of
        `parent` (K3Inference)."""

    @abc.abstractmethod
    def outputs(self, deployment: Deployment[C, R], infrastructure: I, served: S,
                gates: G) -> Mapping[str, Any]:
        """The stack outputs the target adds to endpoint, servedModelName and plan."""

    @abc.abstractmethod
    def mock_outputs(self) -> MockOutputs:
        """What the target's resources answer under the mock engine, by type token."""

    @abc.abstractmethod
    def clock_phases(self, deployment: Deployment[C, R], block_start: Optional[str]) -> Sequence[Any]:
        """The phases (progress/clock.ClockPhase) from `pulumi up` to the first accepted token,
        each with the plan's estimate; `block_start`: when the capacity the stack waits for
        starts (ISO 8601), if the target has such a wait and it is known."""

    @abc.abstractmethod
    def cost_parts(self, resources: Sequence[Mapping[str, Any]], node_shape: str,
                   nodes: int) -> Sequence[Any]:
        """What a planned stack bills per hour (cost/estimate.Part, built with `part`), counted
        from the resources the program registered (plan.json's list) and every replica's
        `nodes` of `node_shape`."""
