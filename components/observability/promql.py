"""The metric names a PromQL expression selects, so they can be checked against the table. Pure.

Not a PromQL parser: a tokenizer that knows where a name can stand. Skipped: string literals,
label matchers inside `{...}`, ranges inside `[...]` (durations and Grafana's `$__rate_interval`),
numbers and durations, function and aggregation names (followed by `(`), keywords, and the label
lists after `by`/`without`/`on`/`ignoring`/`group_left`/`group_right`. What remains are metric
names. Refused (PromQLError): a selector by `__name__` (it would hide the name from the check), a
Grafana `$variable` outside a range (it could stand for a name), unbalanced brackets, and any
character PromQL does not have.
"""

from __future__ import annotations

import re
from typing import FrozenSet, List, Tuple

KEYWORDS = frozenset({"by", "without", "on", "ignoring", "group_left", "group_right", "bool",
                      "and", "or", "unless", "offset", "inf", "nan", "atan2"})
#: aggregation operators, which may take `by (...)` before their parenthesis
AGGREGATIONS = frozenset({"sum", "min", "max", "avg", "group", "stddev", "stdvar", "count",
                          "count_values", "bottomk", "topk", "quantile", "limitk", "limit_ratio"})
LABEL_LIST_AFTER = frozenset({"by", "without", "on", "ignoring", "group_left", "group_right"})
_TOKEN = re.compile(r"""
    (?P<space>\s+)
  | (?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`)
  | (?P<number>(?:0x[0-9a-fA-F]+|[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)(?:ms|[smhdwy])*)
  | (?P<var>\$\{?[A-Za-z_][A-Za-z0-9_]*\}?)
  | (?P<ident>[A-Za-z_:][A-Za-z0-9_:]*)
  | (?P<open>[({\[])
  | (?P<close>[)}\]])
  | (?P<op>==|!=|>=|<=|=~|!~|[-+*/%^<>=,@:])
""", re.X)
_PAIRS = {")": "(", "}": "{", "]": "["}


class PromQLError(ValueError):
    """The expression cannot be checked (see the module docstring for what is refused)."""


def _tokens(expr: str) -> List[Tuple[str, str]]:
    out, pos = [], 0
    while pos < len(expr):
        m = _TOKEN.match(expr, pos)
        if m is None:
            raise PromQLError(f"unexpected {expr[pos]!r} at {pos} in {expr!r}")
        if m.lastgroup != "space":
            out.append((m.lastgroup, m.group()))
        pos = m.end()
    return out


class _Walk:
    """Where the tokenizer stands: the open brackets (innermost last) and, while a
    `by (...)`-style label list is skipped, the depth of its parenthesis."""

    def __init__(self, expr: str):
        self.expr = expr
        self.stack: List[str] = []
        self.label_list_depth = None

    def bracket(self, kind: str, text: str, prev: Tuple[str, str]) -> None:
        if kind == "open":
            if text == "(" and prev[0] == "ident" and prev[1] in LABEL_LIST_AFTER \
                    and self.label_list_depth is None:
                self.label_list_depth = len(self.stack) + 1
            self.stack.append(text)
            return
        if not self.stack or self.stack[-1] != _PAIRS[text]:
            raise PromQLError(f"unbalanced {text!r} in {self.expr!r}")
        if self.label_list_depth == len(self.stack):
            self.label_list_depth = None
        self.stack.pop()

    def skips(self, kind: str, text: str) -> bool:
        """True for a token inside `{...}` or `[...]` (refusing `__name__` there), False
        outside; a Grafana variable outside a range is refused."""
        inside = self.stack[-1] if self.stack else ""
        if inside == "{":
            if kind == "ident" and text == "__name__":
                raise PromQLError(f"a selector by __name__ hides the metric name from the check: "
                                  f"{self.expr!r}; name the metric instead")
            return True
        if inside == "[":
            return True  # durations, subquery steps and Grafana's $__rate_interval
        if kind == "var":
            raise PromQLError(f"Grafana variable {text} outside a range in {self.expr!r}: it could "
                              "stand for a metric name, which the check cannot see")
        return False


def _is_name(kind: str, text: str, nxt: Tuple[str, str]) -> bool:
    """An identifier outside brackets that is no keyword, function or aggregation."""
    if kind != "ident" or text in KEYWORDS or nxt == ("open", "("):
        return False
    return not (text in AGGREGATIONS and nxt[1] in ("by", "without"))


def metric_names(expr: str) -> FrozenSet[str]:
    """The metric names `expr` selects (PromQLError when it cannot be checked)."""
    toks = _tokens(expr)
    names = set()
    walk = _Walk(expr)
    for i, (kind, text) in enumerate(toks):
        if kind in ("open", "close"):
            walk.bracket(kind, text, toks[i - 1] if i > 0 else ("", ""))
            continue
        if walk.skips(kind, text) or walk.label_list_depth is not None:
            continue
        if _is_name(kind, text, toks[i + 1] if i + 1 < len(toks) else ("", "")):
            names.add(text)
    if walk.stack:
        raise PromQLError(f"unclosed {walk.stack[-1]!r} in {expr!r}")
    return frozenset(names)
