"""Every field the product reads from an AWS answer must exist in the pinned service model.

botocore checks what we *send* (parameter validation against the operation's input shape, on by
default) and Stubber checks the answers a test *gives* (`add_response` validates them against the
output shape), but nothing checks what the code *reads*: `resp.get("NoSuchField")` on a stubbed
or real answer silently returns None, so a misspelt or invented field passes every test and reads
nothing in production.

`install()` (called once per test process by tests/conftest.py) wraps every parsed answer of
every botocore client (Stubber's, moto's, any) in `Modeled` views: dicts that know their output
shape (botocore's own model: the pinned botocore in requirements) and record any key the code
looks up (`[]`, `.get`, `in`) that the shape does not have, then raise `UnmodeledField` (a
BaseException, so the product's broad `except Exception` cannot swallow it). The autouse fixture
in tests/conftest.py also fails the test on any recorded read, for reads made in threads.
Error answers (`ClientError.response`) are not wrapped: their `Error` fields are botocore's own.
"""

from __future__ import annotations

from typing import Any, List

#: keys botocore adds to every answer, whatever the shape
_ALWAYS = ("ResponseMetadata",)

#: unmodeled reads seen since the last `take()`: "Operation: Shape.Field"
seen: List[str] = []


class UnmodeledField(BaseException):
    """The code read a field the operation's output shape does not have."""


class Modeled(dict):
    """A structure of an answer; reads are checked against `shape.members` (module docstring)."""

    __slots__ = ("_shape", "_op", "_top")

    def __init__(self, data, shape, op: str, top: bool = False):
        super().__init__(data)
        self._shape, self._op, self._top = shape, op, top

    def _check(self, key: Any) -> None:
        if key in self._shape.members or (self._top and key in _ALWAYS):
            return
        where = f"{self._op}: {self._shape.name}.{key}"
        seen.append(where)
        raise UnmodeledField(f"{where} is not in the pinned model's output shape "
                             f"(members: {', '.join(sorted(self._shape.members))})")

    def __getitem__(self, key):
        self._check(key)
        return super().__getitem__(key)

    def get(self, key, default=None):
        self._check(key)
        return super().get(key, default)

    def __contains__(self, key):
        self._check(key)
        return super().__contains__(key)

    def __reduce__(self):  # copies and pickles are plain dicts
        return (dict, (dict(self),))


def view(value: Any, shape, op: str, top: bool = False) -> Any:
    """`value` (a parsed answer or part of one) with every structure a `Modeled` view."""
    if shape is None:
        return value
    kind = shape.type_name
    if kind == "structure" and isinstance(value, dict):
        members = shape.members
        return Modeled({k: view(v, members[k], op) if k in members else v for k, v in value.items()},
                       shape, op, top)
    if kind == "list" and isinstance(value, list):
        return [view(v, shape.member, op) for v in value]
    if kind == "map" and isinstance(value, dict):
        return {k: view(v, shape.value, op) for k, v in value.items()}
    return value


def install() -> None:
    """Wrap `BaseClient._make_api_call` once (idempotent)."""
    from botocore.client import BaseClient

    original = BaseClient._make_api_call
    if getattr(original, "_kk3_fields", False):
        return

    def _make_api_call(self, operation_name, api_params):
        parsed = original(self, operation_name, api_params)
        shape = self.meta.service_model.operation_model(operation_name).output_shape
        return view(parsed, shape, operation_name, top=True)

    _make_api_call._kk3_fields = True
    BaseClient._make_api_call = _make_api_call


def take() -> List[str]:
    """The unmodeled reads recorded so far, cleared."""
    out = list(seen)
    seen.clear()
    return out
