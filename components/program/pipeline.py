"""One pass down: stack config -> settings -> plan -> launch spec -> rendered files -> resources.

`prepare()` is the pure half, run before any resource: the stack's config is parsed once (the
shared keys, then the target's own) into one StackSettings, planned on the target's hardware,
turned into a launch spec on the target's runtime and rendered once; a real deployment stops on
the first unmet requirement. `declare()` hands that Deployment to the target: its component at
the top of the stack, K3Inference attached to it, the serving resources under K3Inference. Each
contract method is called once (contract.py).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Tuple

from ..config.keys import check_namespaces
from ..config.pins import warnings as pin_warnings
from ..config.shared import exposure_warnings, parse_settings, plaintext_warning, revision_warning
from ..inference.catalog import MODELS
from ..inference.errors import ConfigError
from ..inference.launch import LaunchSpec, launch
from ..inference.planner import Plan
from ..inference.planner import plan as make_plan
from .contract import Deployment, Secrets, StackSettings, Target
from .registry import load_target

NAMESPACE = "kimi-k3"
#: the name the program gives its components (children are named f"{NAME}-...")
NAME = "kimi-k3"


@dataclass(frozen=True)
class Prepared:
    """The target and its Deployment, and what the program says before declaring anything."""

    target: Target
    deployment: Deployment
    #: deploy requirements an offline plan only warns about, then what is opened to whom
    warnings: Tuple[str, ...]


def load(raw: Mapping[str, object], stack: str) -> Tuple[Target, StackSettings]:
    """The stack's target and its config, parsed once: the shared keys, then the target's own
    (ConfigError on bad input)."""
    shared = parse_settings(raw, stack)
    target = load_target(shared.target)
    return target, StackSettings(shared, target.parse_config(shared))


def plan_and_launch(target: Target, settings: StackSettings) -> Tuple[Plan, LaunchSpec]:
    """The plan on the target's hardware and the launch spec on its runtime (pure); a refusal
    quotes the shared key as the user wrote it (the planner only sees typed values)."""
    shared = settings.shared
    base = dataclasses.replace(shared.plan_request(), node_shape=target.node_shape(settings),
                               nodes=target.node_count(settings))
    try:
        plan = make_plan(target.plan_request(settings, base))
        return plan, launch(plan, target.runtime(settings))
    except ConfigError as err:
        raise shared.requote(err) from None


def deployment_of(target: Target, settings: StackSettings, secrets: Secrets) -> Deployment:
    """Plan on the target's hardware, launch on its runtime, render once (pure)."""
    from ..config.pins import model_pin

    plan, spec = plan_and_launch(target, settings)
    rendered = target.render(settings, plan, spec)
    shared = settings.shared
    pins = (model_pin(MODELS[shared.model].repo_id, shared.revision(), target.unpinned_weights(settings)),
            *target.pins(settings, rendered))
    return Deployment(settings, plan, spec, rendered, secrets,
                      tuple(target.deploy_requirements(settings)), pins)


def prepare(raw: Mapping[str, object], stack: str, secrets: Secrets, offline: bool) -> Prepared:
    """Everything decided before the first resource; raises KimiK3Error on bad input.

    A real deployment (`offline` false) stops on the first deploy requirement the config leaves
    unmet; the offline plan records them (plan.json) and warns.
    """
    target, settings = load(raw, stack)
    deployment = deployment_of(target, settings, secrets)
    if deployment.requirements and not offline:
        raise deployment.requirements[0].error()
    warnings = [f"a real `pulumi up` would stop here: {r.text()}" for r in deployment.requirements]
    warnings += exposure_warnings(target.exposures(settings), settings.shared.has_api_key)
    warnings += plaintext_warning(settings.shared)
    warnings += revision_warning(settings.shared, target.unpinned_weights(settings))
    warnings += pin_warnings(deployment.pins)
    return Prepared(target, deployment, tuple(warnings))


def declare(name: str, prepared: Prepared):
    """The target's component at the top, K3Inference attached to it; (component, K3Inference)."""
    import pulumi

    from ..inference.component import K3Inference
    from .tree import inference_aliases

    target, deployment = prepared.target, prepared.deployment
    infrastructure = target.infrastructure(name, deployment)
    inference = K3Inference(name, deployment, target, infrastructure,
                            pulumi.ResourceOptions(parent=infrastructure, aliases=inference_aliases(name)))
    infrastructure.register_outputs({"endpoint": inference.endpoint, **inference.extra_outputs})
    return infrastructure, inference


def all_config_keys() -> List[str]:
    """Every `namespace:key` of the running program's stack config (values are not read)."""
    from pulumi.runtime import config as pconfig

    return sorted(set(pconfig.get_config_env()) | set(pconfig.CONFIG.get()))


def raw_shared_config(project: str = NAMESPACE) -> Dict[str, object]:
    """All `kimi-k3:*` config of the running program, prefix stripped, values as given.

    Reads what the Pulumi engine passed (PULUMI_CONFIG) and what was set in-process (mocks).
    """
    from pulumi.runtime import config as pconfig

    merged: Dict[str, object] = {}
    merged.update(pconfig.get_config_env())
    merged.update(pconfig.CONFIG.get())
    out = {}
    for key, value in merged.items():
        ns, _, name = key.partition(":")
        if ns == NAMESPACE and name:
            if isinstance(value, str) and value[:1] in "[{":
                try:
                    value = json.loads(value)
                except ValueError:
                    pass
            out[name] = value
    return out


def run(project: str, stack: str) -> Tuple[Any, Any, Prepared]:
    """The whole program (what `__main__.py` runs): check, prepare, warn, declare.

    Bad input raises pulumi.RunError with the one-line message, before anything is created.
    """
    import pulumi

    from ..inference.errors import KimiK3Error
    from ..offline.runner import offline
    from ..progress.program import announce

    config = pulumi.Config(NAMESPACE)
    try:
        check_namespaces(all_config_keys())
        prepared = prepare(raw_shared_config(project), stack,
                           Secrets(api_key=config.get_secret("apiKey"),
                                   hf_token=config.get_secret("hfToken")),
                           offline=offline())
    except KimiK3Error as err:
        raise pulumi.RunError(str(err)) from None
    # exposure is a decision: every public opening is said out loud at plan and preview
    for line in prepared.warnings:
        pulumi.log.warn(line)
    # how to follow the long waits (docs/progress.md); the run's record carries the plan's clock
    # and the contracted price per hour, for `status` (components/progress/clock.py)
    from ..progress.clock import for_deployment

    announce(for_deployment(prepared.deployment), prepared.deployment.shared.usd_per_hour)
    infrastructure, inference = declare(NAME, prepared)
    return infrastructure, inference, prepared
