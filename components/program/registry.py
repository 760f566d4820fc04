"""The explicit registry: a stack's `kimi-k3:target` -> the module defining its `Target`.

One line per target. A target module defines `TARGET`, an instance of its `Target` subclass
(contract.py). Modules are imported only when their target is chosen (the offline runner too
loads only the stack's target), so a missing SDK for one cloud never breaks the other; the
accelerators a target offers and its defaults for the shared keys are listed here so the shared
settings can check and default `kimi-k3:*` without importing it.
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
    defaults: Tuple[str, int, int]  # kimi-k3:model, kimi-k3:nodes, kimi-k3:port when unset
    #: config namespaces of its own besides kimi-k3 (their near-misses are refused: config/keys.py)
    namespaces: Tuple[str, ...] = ()
    #: `python -m components logs`: the module whose `show_logs(args, outputs)` reads the
    #: stack's logs, and the stack outputs that tell a stack of this target (cli/logs.py)
    logs_module: str = ""
    logs_outputs: Tuple[str, ...] = ()


REGISTRY: Dict[str, Entry] = {
    "ctyun-hcc": Entry("components.ctyun_hcc.target", ("ascend-910c",), ("w4a8", 4, 11025), ("ctyun",),
                       "components.ctyun_hcc.logs_command", ("slurmJobId", "ssh")),
    "aws-eks": Entry("components.aws_eks.target", ("b300", "b200", "h200", "h100"), ("mxfp4", 1, 8000),
                     (), "components.aws_eks.logs_command", ("kubernetes", "kubeconfig")),
}


def load_target(name: str) -> "Target":
    """The Target registered as `name` (KeyError for an unknown name: settings checked it)."""
    return importlib.import_module(REGISTRY[name].module).TARGET
