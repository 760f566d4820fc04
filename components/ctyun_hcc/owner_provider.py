"""`HccStackOwner`: a random token created once per stack and kept in its state.

Type token `pulumi-python:dynamic/ctyun:HccStackOwner`. Why: the stack's names come from
organization, project and stack, and two people deploying the shipped stack from local backends
have the same three. The token tells their resources apart: every VPC, subnet and security
group this stack creates carries it in its description (`ownership.owner_marker`), and nothing
without it is adopted, changed or deleted. No API call; delete removes only the state entry.
"""

from __future__ import annotations

import uuid
from typing import Any, Dict, Optional

import pulumi
from pulumi.dynamic import CreateResult, DiffResult, ReadResult

from ..dynamic.provider import DynamicResource, Provider


class HccStackOwnerProvider(Provider):
    serialize_as_secret_always = False
    OUTPUTS = ("ownerToken",)

    def create(self, props: Dict[str, Any]) -> CreateResult:
        token = uuid.uuid4().hex
        return CreateResult(token, {**props, "ownerToken": token})

    def diff(self, id_: str, olds: Dict[str, Any], news: Dict[str, Any]) -> DiffResult:
        # the token never changes: a new one would orphan everything marked with the old
        return DiffResult(changes=False)

    def read(self, id_: str, props: Dict[str, Any]) -> ReadResult:
        return ReadResult(id_, {**props, "ownerToken": id_})

    # delete: the base's (only the state entry goes)


class HccStackOwner(DynamicResource, module="ctyun", name="HccStackOwner"):
    """This stack's ownership token (see the module docstring)."""

    ownerToken: pulumi.Output[str]

    def __init__(self, resource_name: str, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__(HccStackOwnerProvider(), resource_name, {}, opts)
