"""`HccStackOwner`: a random token created once per stack and kept in its state.

Type token `pulumi-python:dynamic/ctyun:HccStackOwner`. Why: the stack's names come from
organization, project and stack, and two people deploying the shipped stack from local backends
have the same three. The token tells their resources apart: every VPC, subnet and security
group this stack creates carries it in its description (`ownership.owner_marker`), and nothing
without it is adopted, changed or deleted. No API call; delete removes only the state entry.
"""

from __future__ import annotations

from typing import Optional

import pulumi

from ..dynamic.owner_token import OwnerTokenProvider
from ..dynamic.provider import DynamicResource


class HccStackOwnerProvider(OwnerTokenProvider):
    """The shared token provider under this target's class name (state names it)."""


class HccStackOwner(DynamicResource, module="ctyun", name="HccStackOwner"):
    """This stack's ownership token (see the module docstring)."""

    ownerToken: pulumi.Output[str]

    def __init__(self, resource_name: str, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__(HccStackOwnerProvider(), resource_name, {}, opts)
