"""Kubernetes' `$(VAR)` expansion of a container's command, args and env values, as a test double.

Written from the outside contract, not from our renderer: the algorithm of
k8s.io/kubernetes `third_party/forked/golang/expansion/expand.go` (`Expand`,
`tryReadVariableName`, `MappingFuncFor`), which the kubelet applies to `command`, `args`
and `env[].value`. Rules, as that source defines them:
- `$$` is an escaped `$` and yields one `$`;
- `$(NAME)` yields the variable NAME when defined, else the text `$(NAME)` unchanged;
- `$(` without a closing `)` yields `$(` and scanning goes on after the `(`;
- `$` followed by any other character yields both characters; a final lone `$` stays.
The tests check that every value we render expands to exactly what the user configured.
"""

from __future__ import annotations

from typing import Mapping


def expand(text: str, env: Mapping[str, str]) -> str:
    out = []
    checkpoint = 0
    cursor = 0
    n = len(text)
    while cursor < n:
        if text[cursor] == "$" and cursor + 1 < n:
            out.append(text[checkpoint:cursor])
            rest = text[cursor + 1:]
            if rest[0] == "$":
                read, is_var, advance = "$", False, 1
            elif rest[0] == "(":
                close = rest.find(")", 1)
                if close != -1:
                    read, is_var, advance = rest[1:close], True, close + 1
                else:
                    read, is_var, advance = "$(", False, 1
            else:
                read, is_var, advance = "$" + rest[0], False, 1
            if is_var:
                out.append(env[read] if read in env else f"$({read})")
            else:
                out.append(read)
            cursor += advance
            checkpoint = cursor + 1
        cursor += 1
    return "".join(out) + text[checkpoint:]
