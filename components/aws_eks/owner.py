"""`StackOwner`: a random token created once per aws-eks stack and kept in its state.

Type token `pulumi-python:dynamic/aws:StackOwner`. Why: a Capacity Block this stack buys is
tagged so that an interrupted `pulumi up` (or a purchase whose answer was lost) adopts it instead
of buying a second one (capacity.py). Tagged with `<organization>/<project>/<stack>`, two users
of the shipped stack with local backends in one account had the same three names and would
adopt each other's block. The token is random, made by the first `up` and read from state ever
after, so no other stack has it. State only: no API call; delete removes only the state entry
(a block tagged with it stays what it is: AWS cannot cancel it).
"""

from __future__ import annotations

from typing import Optional

import pulumi

from ..dynamic.owner_token import OwnerTokenProvider
from ..dynamic.provider import DynamicResource

TYPE = "pulumi-python:dynamic/aws:StackOwner"


class StackOwnerProvider(OwnerTokenProvider):
    """The shared token provider under this target's class name (state names it)."""


class StackOwner(DynamicResource, module="aws", name="StackOwner"):
    """This stack's ownership token (see the module docstring)."""

    ownerToken: pulumi.Output[str]

    def __init__(self, resource_name: str, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__(StackOwnerProvider(), resource_name, {}, opts)
