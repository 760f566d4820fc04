"""The small contract between `K3Inference` and the clusters it runs on.

A target (CTyun HCC, AWS EKS, ...) is one folder under `components/`. It implements
`InferenceTarget`: it says which hardware it offers, renders the files that run the launch spec
on that hardware (pure, so the offline plan command can write them), and creates the Pulumi
resources that serve it. `K3Inference` only talks to this interface; the registry in
`components/program/registry.py` maps a stack to its target class.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional

from ..inference.launch import LaunchSpec
from ..inference.planner import Plan


@dataclass(frozen=True)
class Served:
    """What a target reports once its serving resources are declared.

    `endpoint` is the OpenAI base URL (`http://host:port/v1`), a Pulumi Output or a plain string;
    `outputs` are extra stack outputs the target wants exported (already marked secret where
    they must be).
    """

    endpoint: Any
    outputs: Mapping[str, Any] = field(default_factory=dict)


class InferenceTarget(abc.ABC):
    """A cluster that can run a `LaunchSpec`.

    Implementations are Pulumi ComponentResources (or own one); `render` must stay pure.
    """

    #: short name used in plan.json (`ctyun-hcc`, `aws-eks`)
    target_name: str = ""

    @abc.abstractmethod
    def node_shape_key(self) -> str:
        """Catalog key of the node shape this target provides (e.g. `atlas-800-a3`)."""

    @abc.abstractmethod
    def node_count(self) -> int:
        """Nodes per serving replica that this target provides."""

    @abc.abstractmethod
    def render(self, plan: Plan, spec: LaunchSpec) -> Mapping[str, str]:
        """Files (relative path -> text) that run `spec` on this target. Pure: no I/O."""

    @abc.abstractmethod
    def serve(self, plan: Plan, spec: LaunchSpec, parent: Optional[Any] = None) -> Served:
        """Declare the Pulumi resources that run `spec`; return the endpoint."""
