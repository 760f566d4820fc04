"""From parsed settings to (Plan, LaunchSpec): the pure half of the program, run before any resource.

The target decides where the weights sit inside the container and how they load (its module may
define `runtime(shared) -> Runtime`); everything else comes from the settings and the planner.
"""

from __future__ import annotations

import importlib
import json
from typing import Dict, List, Tuple

from ..inference.catalog import MODELS
from ..inference.errors import ConfigError
from ..inference.launch import LaunchSpec, Runtime, launch
from ..inference.planner import Plan, plan
from ..config.shared import SharedSettings
from .registry import REGISTRY

NAMESPACE = "kimi-k3"


def default_runtime(shared: SharedSettings) -> Runtime:
    """Runtime when the target does not define its own: weights mounted at /model (the seed)."""
    model_path = "/model" if shared.target == "ctyun-hcc" else f"/models/{MODELS[shared.model].local_dir_name}"
    return Runtime(
        image=shared.image,
        port=shared.port,
        served_model_name=shared.served_model_name,
        model_path=model_path,
        vision_chunks_per_prompt=shared.vision_chunks_per_prompt,
        api_key=shared.has_api_key,
        hf_token=shared.has_hf_token,
    )


def runtime_for(shared: SharedSettings) -> Runtime:
    module = importlib.import_module(REGISTRY[shared.target])
    make = getattr(module, "runtime", None)
    return make(shared) if make is not None else default_runtime(shared)


def plan_request_for(shared: SharedSettings):
    """The target's plan request (its module may define `plan_request(shared)`: e.g. aws-eks
    resolves its weights source and cold-start inputs), else the shared settings' own."""
    module = importlib.import_module(REGISTRY[shared.target])
    make = getattr(module, "plan_request", None)
    return make(shared) if make is not None else shared.plan_request()


def plan_and_launch(shared: SharedSettings) -> Tuple[Plan, LaunchSpec]:
    """Plan and launch spec for `shared`; raises ConfigError/PlanError on bad input, quoting
    the shared key as the user wrote it (the planner only sees typed values)."""
    try:
        p = plan(plan_request_for(shared))
        return p, launch(p, runtime_for(shared))
    except ConfigError as err:
        raise shared.requote(err) from None


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
