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

import uuid
from typing import Any, Dict, Optional

import pulumi
from pulumi.dynamic import CreateResult, DiffResult, ReadResult

from ..dynamic.provider import DynamicResource, Provider

TYPE = "pulumi-python:dynamic/aws:StackOwner"


class StackOwnerProvider(Provider):
    serialize_as_secret_always = False
    OUTPUTS = ("ownerToken",)

    def create(self, props: Dict[str, Any]) -> CreateResult:
        token = uuid.uuid4().hex
        return CreateResult(token, {**props, "ownerToken": token})

    def diff(self, id_: str, olds: Dict[str, Any], news: Dict[str, Any]) -> DiffResult:
        # the token never changes: a new one would stop recognising the block bought with the old
        return DiffResult(changes=False)

    def read(self, id_: str, props: Dict[str, Any]) -> ReadResult:
        return ReadResult(id_, {**props, "ownerToken": id_})

    # delete: the base's (only the state entry goes)


class StackOwner(DynamicResource, module="aws", name="StackOwner"):
    """This stack's ownership token (see the module docstring)."""

    ownerToken: pulumi.Output[str]

    def __init__(self, resource_name: str, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__(StackOwnerProvider(), resource_name, {}, opts)
