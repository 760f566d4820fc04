"""A random ownership token made once per stack and kept in its state (no API call).

Why: a stack's names come from organisation, project and stack, and two people deploying the
shipped stack files from local backends have the same three. Each target records a token that
only its own state holds and marks what it creates with it (aws-eks: the Capacity Block's tag;
ctyun-hcc: the VPC, subnet and security group descriptions). The token is made by the first
`up` and read from state ever after; it never changes (a new one would disown everything marked
with the old), and delete removes only the state entry.

The targets keep their own provider classes and type tokens (`owner.py`, `owner_provider.py`):
deployed stacks' states name those classes.
"""

from __future__ import annotations

import uuid
from typing import Any, Dict

from pulumi.dynamic import CreateResult, DiffResult, ReadResult

from .provider import Provider


class OwnerTokenProvider(Provider):
    """create: a fresh uuid4 hex token as id and `ownerToken`; diff: never; read: from the id."""

    serialize_as_secret_always = False
    OUTPUTS = ("ownerToken",)

    def create(self, props: Dict[str, Any]) -> CreateResult:
        token = uuid.uuid4().hex
        return CreateResult(token, {**props, "ownerToken": token})

    def diff(self, id_: str, olds: Dict[str, Any], news: Dict[str, Any]) -> DiffResult:
        return DiffResult(changes=False)

    def read(self, id_: str, props: Dict[str, Any]) -> ReadResult:
        return ReadResult(id_, {**props, "ownerToken": id_})

    # delete: the base's (only the state entry goes)
