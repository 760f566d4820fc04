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

from typing import List

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
