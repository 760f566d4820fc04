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


def metric_names(expr: str) -> FrozenSet[str]:
    """The metric names `expr` selects (PromQLError when it cannot be checked)."""
    toks = _tokens(expr)
    names = set()
    stack: List[str] = []  # open brackets, innermost last
    label_list_depth = None  # depth of a `by (...)`-style list being skipped
    for i, (kind, text) in enumerate(toks):
        nxt = toks[i + 1] if i + 1 < len(toks) else ("", "")
        inside = stack[-1] if stack else ""
        if kind == "open":
            if text == "(" and i > 0 and toks[i - 1][0] == "ident" \
                    and toks[i - 1][1] in LABEL_LIST_AFTER and label_list_depth is None:
                label_list_depth = len(stack) + 1
            stack.append(text)
            continue
        if kind == "close":
            if not stack or stack[-1] != _PAIRS[text]:
                raise PromQLError(f"unbalanced {text!r} in {expr!r}")
            if label_list_depth == len(stack):
                label_list_depth = None
            stack.pop()
            continue
        if inside == "{":
            if kind == "ident" and text == "__name__":
                raise PromQLError(f"a selector by __name__ hides the metric name from the check: "
                                  f"{expr!r}; name the metric instead")
            continue
        if inside == "[":
            continue  # durations, subquery steps and Grafana's $__rate_interval
        if kind == "var":
            raise PromQLError(f"Grafana variable {text} outside a range in {expr!r}: it could "
                              "stand for a metric name, which the check cannot see")
        if kind != "ident" or label_list_depth is not None:
            continue
        if text in KEYWORDS or nxt == ("open", "("):
            continue
        if text in AGGREGATIONS and nxt[1] in ("by", "without"):
            continue
        names.add(text)
    if stack:
        raise PromQLError(f"unclosed {stack[-1]!r} in {expr!r}")
    return frozenset(names)
