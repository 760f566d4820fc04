"""The component tree before issue 18, as aliases: stacks deployed then keep their resources.

Before, the ctyun-hcc stack had `K3Inference` (named `kimi-k3`) at the root with the CTyun
cluster component and the bootstrap and serving steps under it, and the aws-eks stack had
`K3Inference` (also `kimi-k3`) at the root without children beside the EKS cluster component,
which held everything. Now each target's component is at the top and `K3Inference`
(`kimi-k3-inference`) is attached to it (docs/architecture.md, "The component tree"). Every resource whose
URN changed carries an alias to its old one, so `pulumi up` after the change updates in place;
tests/integration/test_urn_aliases.py checks them against the URNs recorded before
(tests/golden/urns/). A resource whose only change is an ancestor's move inherits that
ancestor's alias in the engine (pulumi/pulumi pkg/resource/deploy/step_generator.go,
generateAliases, https://github.com/pulumi/pulumi/blob/1a16857a44f16e46a9dce29f184c511062a70f80/pkg/resource/deploy/step_generator.go).
"""

from __future__ import annotations

from typing import List, Sequence, Tuple

import pulumi

from ..inference.component import TYPE as INFERENCE_TYPE


def inference_aliases(name: str) -> List[pulumi.Alias]:
    """K3Inference was the stack's root resource, named like the program (`name`)."""
    return [pulumi.Alias(name=name, parent=None)]


def old_inference_urn(name: str) -> str:
    """The URN K3Inference had at the root (the parent of ctyun-hcc's resources before)."""
    return f"urn:pulumi:{pulumi.get_stack()}::{pulumi.get_project()}::{INFERENCE_TYPE}::{name}"


def moved_from(old_parent) -> List[pulumi.Alias]:
    """Aliases of a resource that was a child of `old_parent` (a resource or its URN) under the
    same name and type."""
    return [pulumi.Alias(parent=old_parent)]


def undoubled(prefix: str, app: str, meta_name: str,
              aliases: Sequence[pulumi.Alias] = ()) -> Tuple[str, List[pulumi.Alias]]:
    """The Pulumi name of a cluster object and its aliases, the one rule for every object whose
    Kubernetes name carries the app prefix (`kimi-k3-weights-scripts`, the dashboards'
    `kimi-k3-serving-dashboard`): the resource prefix (`prefix`, kimi-k3) and the Kubernetes name
    without `app-`, so the prefix is not doubled (until 2026-12-02 the Pulumi names were
    `kimi-k3-kimi-k3-...`). The old name is aliased under the current parent (a stack deployed
    before the rename) and under each earlier parent in `aliases` (a stack deployed before the
    component tree moved it), so `pulumi up` updates in place and replaces nothing
    (tests/integration/test_urn_aliases.py). The Kubernetes name itself is unchanged."""
    new = f"{prefix}-{meta_name.removeprefix(app + '-')}"
    old = f"{prefix}-{meta_name}"
    if old == new:
        return new, list(aliases)
    moved = [pulumi.Alias(name=old, parent=a.parent) for a in aliases if a.parent is not ...]
    return new, [pulumi.Alias(name=old), *moved, *aliases]
