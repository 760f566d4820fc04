"""The explicit registry: a stack's `kimi-k3:target` -> the module defining its `Target`.

One line per target. A target module defines `TARGET`, an instance of its `Target` subclass
(contract.py). Modules are imported only when their target is chosen (or, offline, for their
mock outputs), so a missing SDK for one cloud never breaks the other; the accelerators a target
offers are listed here so the shared settings can check `kimi-k3:accelerator` without importing it.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Dict, Tuple

if TYPE_CHECKING:  # the contract imports the shared settings, which read this registry
    from .contract import Target


@dataclass(frozen=True)
class Entry:
    module: str  # defines TARGET
    accelerators: Tuple[str, ...]  # catalog keys, the default first


REGISTRY: Dict[str, Entry] = {
    "ctyun-hcc": Entry("components.ctyun_hcc.target", ("ascend-910c",)),
    "aws-eks": Entry("components.aws_eks.target", ("b300", "b200", "h200", "h100")),
}


def load_target(name: str) -> "Target":
    """The Target registered as `name` (KeyError for an unknown name: settings checked it)."""
    return importlib.import_module(REGISTRY[name].module).TARGET
