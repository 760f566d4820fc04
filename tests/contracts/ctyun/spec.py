"""The vocabulary of the CTyun contract: a field, a conditional rule, an API.

The contract itself is data (ehpc.py, vpc.py, examples.py) written from CTyun's documentation
and clients (sources.py); this module only defines
the shapes that data takes, so the validator and the emulator read one description.

Field types: `str`, `int`, `bool`, `float`, `obj`, `[obj]` (array of objects), `[str]`.
`required`: `Y` (documented required, or `Y*` in vpc.py's terms: required per CTyun's generated
Terraform structs), `-` optional, `C` conditional (the API's `rules` say when).
`in_`: `q` query string, `b` JSON body, `r` a response field.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Tuple

PRESENT = "<present>"   # a rule condition: the field is sent (not null)
ABSENT = "<absent>"     # a rule condition: the field is not sent (or null)

TYPES = ("str", "int", "bool", "float", "obj", "[obj]", "[str]")


@dataclass(frozen=True)
class Field:
    name: str
    type: str
    required: str = "-"
    in_: str = "b"
    enum: Tuple = ()
    length: Optional[Tuple[int, int]] = None   # characters of a str
    items: Optional[Tuple[int, int]] = None    # entries of an array
    range: Optional[Tuple[float, float]] = None  # value of an int/float
    pattern: Optional[str] = None              # full-match regex of a str
    check: Optional[str] = None                # a named rule in checks.py (name, password, ...)
    fields: Tuple["Field", ...] = ()           # members of an obj / entries of an [obj]
    nullable: bool = False                     # responses: documented as possibly null
    alt_types: Tuple[str, ...] = ()            # responses: other types the sources show
    note: str = ""
    source: str = ""

    def __post_init__(self):
        assert self.type in TYPES, (self.name, self.type)
        assert self.required in ("Y", "-", "C"), (self.name, self.required)
        assert self.in_ in ("q", "b", "r"), (self.name, self.in_)


@dataclass(frozen=True)
class Rule:
    """A conditional rule of a request, evaluated inside `scope` (a dotted path from the root;
    a trailing `[]` applies it to every entry of that array).

    `when`: conditions that must all hold (or any one, with `when_any`), each (path, values);
    values may hold PRESENT/ABSENT. Then: `require` (paths that must be sent), `forbid` (paths
    that must not be sent), `exactly_one` (one and only one of these paths is sent), `restrict`
    ((path, allowed values): a sent value must be one of them), `range` ((path, lo, hi)).
    """
    id: str
    text: str
    source: str
    scope: str = ""
    when: Tuple[Tuple[str, Tuple], ...] = ()
    when_any: bool = False
    require: Tuple[str, ...] = ()
    forbid: Tuple[str, ...] = ()
    exactly_one: Tuple[str, ...] = ()
    restrict: Tuple[Tuple[str, Tuple], ...] = ()
    range: Tuple[Tuple[str, float, float], ...] = ()


@dataclass(frozen=True)
class Api:
    """One API: where it lives, what it takes, what it answers.

    `envelope`: `ehpc` (statusCode/error/message/returnObj), `ehpc-old` (statusCode/errorCode/
    message/description/returnObj) or `vpc` (statusCode/errorCode/message/description/
    returnObj, plus `error` where `error_field`). `response` describes `returnObj`; `variants`
    lists other documented shapes of it (list-queues, CTyun contract 5). `paged`: the API
    takes pageNo/pageSize and answers totalCount/currentCount/totalPage.
    """
    name: str
    product: str
    host: str
    method: str
    path: str
    doc: str
    source: str
    envelope: str
    request: Tuple[Field, ...]
    response: Field
    rules: Tuple[Rule, ...] = ()
    variants: Tuple[Field, ...] = ()
    paged: bool = False
    answer: str = ""          # "job" (returns jobUUID), "list", "paged", "empty", "object"
    error_field: bool = False
    notes: Tuple[str, ...] = field(default_factory=tuple)

    def query_fields(self) -> Tuple[Field, ...]:
        return tuple(f for f in self.request if f.in_ == "q")

    def body_fields(self) -> Tuple[Field, ...]:
        return tuple(f for f in self.request if f.in_ == "b")
