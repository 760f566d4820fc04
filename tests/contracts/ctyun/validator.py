"""Check a request, a `returnObj` or a whole answer against the CTyun contract.

Strict by choice where CTyun's documentation leaves it open (CTyun contract 6.7): a field the tables
do not list is a problem, types are exact (an int field given "3" in a JSON body is a problem;
in the query string, where everything travels as text, "3" and 3 are the same bytes and both
pass, while "03", "3.0" or "x" do not), null is never a value for a request field (omit it),
and a required string that is blank is refused like a missing one (`Hpc.ParamCheck.NotBlank`).

Every problem is a `Problem`: a plain string naming the API, the field path and what is wrong,
carrying `.field` (dotted path, `[i]` for array entries) and `.kind` (missing, blank, unknown,
type, enum, length, items, range, pattern, rule, method) so the emulator can answer the code
CTyun documents. The value of `rootPassword` is never repeated in a message.
"""

from __future__ import annotations

import re
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

from . import convention, ebm, ehpc, storage, vpc
from .checks import CHECKS
from .spec import ABSENT, PRESENT, Api, Field, Rule

APIS: Dict[str, Api] = {a.name: a for a in ehpc.APIS + vpc.APIS + ebm.APIS + storage.APIS}
BY_PATH: Dict[str, Api] = {a.path: a for a in APIS.values()}
SECRET_FIELDS = {"rootPassword"}
QUERY_INT = re.compile(r"0|[1-9][0-9]*")
ELISION = "..."   # the key the contract's abbreviated examples use for "more fields"


class Problem(str):
    """One thing wrong with a request or answer (a str, with `.field` and `.kind`)."""

    field: str
    kind: str

    def __new__(cls, text: str, field: str, kind: str):
        obj = super().__new__(cls, text)
        obj.field, obj.kind = field, kind
        return obj


def get_api(name_or_path: str) -> Api:
    """An API by its name (`hpc/create-cluster`, `vpc/new-list`) or its path."""
    api = APIS.get(name_or_path) or BY_PATH.get(name_or_path)
    if api is None:
        raise KeyError(f"{name_or_path!r} is not an API of the CTyun contract "
                       f"(known: {', '.join(sorted(APIS))})")
    return api


def _show(f: Field, v: Any) -> str:
    if f.name in SECRET_FIELDS:
        return "(value hidden)"
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


def _tname(v: Any) -> str:
    return {bool: "bool", int: "int", float: "float", str: "str", dict: "obj", list: "array",
            type(None): "null"}.get(type(v), type(v).__name__)


class _Run:
    def __init__(self, api: Api, where: str, mode: str, partial: bool = False):
        self.api, self.where, self.mode, self.partial = api, where, mode, partial
        self.problems: List[Problem] = []

    def add(self, path: str, kind: str, text: str) -> None:
        label = f"{self.where} field '{path}'" if path else self.where
        self.problems.append(Problem(f"{self.api.name}: {label} {text}", path, kind))

    # -- structure ----------------------------------------------------------------------
    def obj(self, fields: Sequence[Field], obj: Dict[str, Any], prefix: str) -> None:
        known = {f.name: f for f in fields}
        for key in obj:
            if key not in known and not (self.partial and key == ELISION):
                what = ("is not in the documented table (unknown fields are refused: "
                        "CTyun contract 6 item 7)" if self.mode != "response"
                        else "is not a documented field of this answer")
                self.add(_join(prefix, key), "unknown", what)
        for f in fields:
            path = _join(prefix, f.name)
            if f.name not in obj:
                if self.mode != "response" and f.required == "Y":
                    self.add(path, "missing", "is missing (required)")
                elif self.mode == "response" and not self.partial:
                    self.add(path, "missing", "is missing from the answer")
                continue
            self.value(f, obj[f.name], path)

    def value(self, f: Field, v: Any, path: str) -> None:
        if v is None:
            if self.mode == "response":
                if not f.nullable:
                    self.add(path, "type", f"is null; documented as {f.type}")
            elif f.required == "Y":
                self.add(path, "blank", "is null (required, must not be blank)")
            else:
                self.add(path, "type", "is null; omit the field instead")
            return
        if self.mode == "query":
            v, ok = self._from_query(f, v, path)
            if not ok:
                return
        types = (f.type,) + (f.alt_types if self.mode == "response" else ())
        if not any(_is(t, v) for t in types):
            self.add(path, "type", f"must be {' or '.join(types)}, got {_tname(v)} "
                                   f"{_show(f, v)}")
            return
        if isinstance(v, str):
            self._str(f, v, path)
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            if f.enum and not _member(v, f.enum):
                self.add(path, "enum", f"is {v!r}, not one of {_enum(f.enum)}")
            if f.range and not f.range[0] <= v <= f.range[1]:
                self.add(path, "range", f"is {v!r}, outside {f.range[0]}-{f.range[1]}")
        elif isinstance(v, dict):
            self.obj(f.fields, v, path)
        elif isinstance(v, list):
            if f.items and not f.items[0] <= len(v) <= f.items[1]:
                self.add(path, "items", f"has {len(v)} entries, must have "
                                        f"{_span(f.items)}")
            for i, entry in enumerate(v):
                epath = f"{path}[{i}]"
                if f.type == "[obj]":
                    if not isinstance(entry, dict):
                        self.add(epath, "type", f"must be obj, got {_tname(entry)}")
                    else:
                        self.obj(f.fields, entry, epath)
                elif not isinstance(entry, str):
                    self.add(epath, "type", f"must be str, got {_tname(entry)}")
                elif self.mode != "response" and not entry.strip():
                    self.add(epath, "blank", "is blank")

    def _from_query(self, f: Field, v: Any, path: str) -> Tuple[Any, bool]:
        """Query values travel as text: accept the exact text form of the field's type."""
        if f.type == "int":
            if isinstance(v, int) and not isinstance(v, bool):
                return v, True
            if isinstance(v, str) and QUERY_INT.fullmatch(v):
                return int(v), True
            self.add(path, "type", f"must be an integer (decimal digits), got {_show(f, v)}")
            return v, False
        if f.type == "bool":
            if v in ("true", "false"):
                return v == "true", True
            self.add(path, "type", f"must be the text true or false, got {_show(f, v)}")
            return v, False
        return v, True

    def _str(self, f: Field, v: str, path: str) -> None:
        if self.mode != "response" and f.required == "Y" and not v.strip():
            self.add(path, "blank", "is blank (required, must not be blank)")
            return
        if self.mode == "response":
            if f.enum and v not in f.enum:
                self.add(path, "enum", f"is {v!r}, not one of {_enum(f.enum)}")
            return
        if f.length and not f.length[0] <= len(v) <= f.length[1]:
            self.add(path, "length", f"has {len(v)} characters, must have {_span(f.length)}")
            return
        if f.enum and v not in f.enum:
            self.add(path, "enum", f"is {_show(f, v)}, not one of {_enum(f.enum)}")
            return
        if f.pattern and not re.fullmatch(f.pattern, v):
            self.add(path, "pattern", f"is {_show(f, v)}, must match {f.pattern}")
        if f.check and v:
            reason = CHECKS[f.check](v)
            if reason:
                self.add(path, "pattern", f"is {_show(f, v)}: {reason}")

    # -- conditional rules ----------------------------------------------------------------
    def rules(self, rules: Iterable[Rule], root: Dict[str, Any]) -> None:
        for rule in rules:
            for prefix, scope in _scopes(root, rule.scope):
                self._rule(rule, prefix, scope)

    def _rule(self, rule: Rule, prefix: str, scope: Dict[str, Any]) -> None:
        tests = [_holds(scope, p, vals) for p, vals in rule.when]
        if tests and not (any(tests) if rule.when_any else all(tests)):
            return
        why = f"({rule.text}) [{rule.source}]"
        for p in rule.require:
            present, v = _lookup(scope, p)
            if not present or (isinstance(v, str) and not v.strip()):
                self.add(_join(prefix, p), "missing", f"is required here {why}")
        for p in rule.forbid:
            if _lookup(scope, p)[0]:
                self.add(_join(prefix, p), "rule", f"must not be sent here {why}")
        if rule.exactly_one:
            sent = [p for p in rule.exactly_one if _lookup(scope, p)[0]]
            if len(sent) != 1:
                names = ", ".join(_join(prefix, p) for p in rule.exactly_one)
                got = ", ".join(sent) if sent else "none"
                self.add(_join(prefix, (sent or rule.exactly_one)[0]), "rule",
                         f"conflicts: exactly one of {names} must be sent, got {got} {why}")
        for p, allowed in rule.restrict:
            present, v = _lookup(scope, p)
            if present and not _member(v, allowed):
                self.add(_join(prefix, p), "rule", f"is {v!r}, must be {_enum(allowed)} {why}")
        for p, lo, hi in rule.range:
            present, v = _lookup(scope, p)
            if present and _is("int", v) and not lo <= v <= hi:
                self.add(_join(prefix, p), "range", f"is {v!r}, outside {lo}-{hi} {why}")


def _join(prefix: str, name: str) -> str:
    return f"{prefix}.{name}" if prefix else name


def _span(r: Tuple[int, int]) -> str:
    return f"at least {r[0]}" if r[1] >= 2 ** 31 - 1 else f"{r[0]}-{r[1]}"


def _enum(values) -> str:
    return ", ".join(repr(v) if not isinstance(v, str) else v for v in values)


def _is(t: str, v: Any) -> bool:
    if t == "str":
        return isinstance(v, str)
    if t == "int":
        return isinstance(v, int) and not isinstance(v, bool)
    if t == "float":
        return isinstance(v, (int, float)) and not isinstance(v, bool)
    if t == "bool":
        return isinstance(v, bool)
    if t == "obj":
        return isinstance(v, dict)
    return isinstance(v, list)


def _member(v: Any, values) -> bool:
    """`v in values` without Python's True == 1 and 0 == False."""
    return any(type(v) is type(x) and v == x for x in values)


def _lookup(obj: Dict[str, Any], path: str) -> Tuple[bool, Any]:
    cur: Any = obj
    for part in path.split("."):
        if not isinstance(cur, dict) or cur.get(part) is None:
            return False, None
        cur = cur[part]
    return True, cur


def _holds(obj: Dict[str, Any], path: str, values) -> bool:
    present, v = _lookup(obj, path)
    if not present:
        return ABSENT in values
    return PRESENT in values or _member(v, values)


def _scopes(root: Dict[str, Any], scope: str):
    if not scope:
        yield "", root
        return
    many = scope.endswith("[]")
    present, v = _lookup(root, scope[:-2] if many else scope)
    if not present:
        return
    if many:
        for i, entry in enumerate(v if isinstance(v, list) else []):
            if isinstance(entry, dict):
                yield f"{scope[:-2]}[{i}]", entry
    elif isinstance(v, dict):
        yield scope, v


# ---------------------------------------------------------------------------- public API
def validate_request(api_name: str, query: Optional[Dict[str, Any]],
                     body: Optional[Dict[str, Any]] = None) -> List[str]:
    """Problems of one request (empty list = valid). GET APIs take `query` and no body; POST
    APIs take a JSON object `body` and no query string (CTyun contract 1.1)."""
    api = get_api(api_name)
    query = {} if query is None else query
    if api.method == "GET":
        run = _Run(api, "query", "query")
        if body is not None:
            run.add("", "method", "is GET: it takes no body (parameters go in the query)")
        if not isinstance(query, dict):
            run.add("", "type", f"query must be a mapping, got {_tname(query)}")
            return list(run.problems)
        run.obj(api.query_fields(), query, "")
        run.rules(api.rules, _typed_query(api, query))
        return list(run.problems)
    run = _Run(api, "body", "body")
    if query:
        run.add("", "method", "is POST: it takes no query string (parameters go in the body)")
    if not isinstance(body, dict):
        run.add("", "type", f"must be a JSON object, got {_tname(body)}")
        return list(run.problems)
    run.obj(api.body_fields(), body, "")
    run.rules(api.rules, body)
    return list(run.problems)


def validate_call(method: str, path: str, query: Optional[Dict[str, Any]],
                  body: Optional[Dict[str, Any]] = None) -> List[str]:
    """validate_request for a call given as method + path (a wrong method is a problem)."""
    api = BY_PATH.get(path)
    if api is None:
        return [Problem(f"{method} {path}: not an API of the CTyun contract", "", "method")]
    if method.upper() != api.method:
        return [Problem(f"{api.name}: is {api.method}, called with {method.upper()}", "",
                        "method")]
    return validate_request(api.name, query, body)


def _typed_query(api: Api, query: Dict[str, Any]) -> Dict[str, Any]:
    out = dict(query)
    for f in api.query_fields():
        v = out.get(f.name)
        if f.type == "int" and isinstance(v, str) and QUERY_INT.fullmatch(v):
            out[f.name] = int(v)
    return out


def validate_response(api_name: str, return_obj: Any, partial: bool = False) -> List[str]:
    """Problems of a `returnObj` against the documented answer of `api_name`. Every documented
    field must be there (`partial=True`, for the contract's abbreviated examples, lets fields
    be missing and ignores the elision key "..."); undocumented fields are problems. Where the
    sources document two shapes (list-queues), either passes."""
    api = get_api(api_name)
    first: Optional[List[Problem]] = None
    for shape in (api.response,) + api.variants:
        run = _Run(api, "answer", "response", partial)
        run.value(shape, return_obj, "returnObj")
        if not run.problems:
            return []
        first = first if first is not None else run.problems
    return list(first or [])


ENVELOPES = {family: e["keys"] for family, e in convention.ENVELOPES.items()}


def envelope_keys(api: Api) -> Tuple[str, ...]:
    keys = ENVELOPES[api.envelope]
    return keys + ("error",) if api.error_field else keys


def validate_envelope(api_name: str, doc: Any, partial: bool = False) -> List[str]:
    """Problems of a whole answer: the envelope of the API's family (CTyun contract 1.3), and on
    success (`str(statusCode) == "800"`) its `returnObj` (validate_response)."""
    api = get_api(api_name)
    run = _Run(api, "envelope", "response", partial)
    if not isinstance(doc, dict):
        run.add("", "type", f"must be a JSON object, got {_tname(doc)}")
        return list(run.problems)
    keys = envelope_keys(api)
    for k in doc:
        if k not in keys:
            run.add(k, "unknown", f"is not a field of the {api.envelope} envelope")
    for k in keys:
        if k not in doc and not partial:
            run.add(k, "missing", f"is missing from the {api.envelope} envelope")
    code = doc.get("statusCode")
    if "statusCode" in doc and str(code) not in ("800", "900"):
        run.add("statusCode", "enum", f"is {code!r}, not 800 or 900")
    for k in keys:
        if k in ("statusCode", "returnObj") or k not in doc:
            continue
        if not isinstance(doc[k], str):
            run.add(k, "type", f"must be str, got {_tname(doc[k])}")
    ok = str(code) == "800" or (partial and "statusCode" not in doc)
    err_key = "error" if api.envelope == "ehpc" else "errorCode"
    if ok and err_key in doc:
        want = "SUCCESS" if api.envelope == "vpc" else ""
        if doc[err_key] != want:
            run.add(err_key, "enum", f"is {doc[err_key]!r} on success, expected {want!r}")
    if str(code) == "900":
        if not doc.get(err_key):
            run.add(err_key, "missing", "must carry the error code on statusCode 900")
        return list(run.problems)
    problems = list(run.problems)
    if ok and "returnObj" in doc:
        problems += validate_response(api.name, doc["returnObj"], partial)
    return problems
