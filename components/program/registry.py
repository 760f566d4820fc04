"""The explicit registry from a stack's `kimi-k3:target` to the module that builds it.

Each target module exposes `create(name, shared, secrets) -> InferenceTarget`; cloud SDKs are
imported only when that target is chosen, so a missing SDK for one cloud never breaks the other.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Optional

from .contract import InferenceTarget
from ..config.shared import SharedSettings

REGISTRY = {
    "ctyun-hcc": "components.ctyun_hcc.target",
    "aws-eks": "components.aws_eks.target",
}


@dataclass(frozen=True)
class Secrets:
    """Secret stack config as Pulumi Outputs (never plain strings); None when not set."""

    api_key: Optional[Any] = None  # kimi-k3:apiKey -> vLLM's VLLM_API_KEY
    hf_token: Optional[Any] = None  # kimi-k3:hfToken -> HF_TOKEN for hub downloads


def build_target(name: str, shared: SharedSettings, secrets: Secrets) -> InferenceTarget:
    module = importlib.import_module(REGISTRY[shared.target])
    return module.create(name, shared, secrets)
