"""One quoting function per target language: every free-form value that reaches a script or a
manifest goes through exactly one of these, never through an f-string between quotes.

- `shell_word(value)`: one POSIX shell word (single quotes, `'` as `'"'"'`: `shlex.quote`), so
  bash, sh and dash read back exactly `value` and expand nothing in it.
- `k8s_literal(value)`: text Kubernetes must not expand. In a container's `command`, `args` and
  `env[].value`, Kubernetes replaces `$(NAME)` by the variable NAME and reads `$$` as one `$`
  (k8s.io/kubernetes `third_party/forked/golang/expansion/expand.go`, `Expand` and
  `tryReadVariableName`; the rule is documented in the core/v1 Container API reference for
  `command`/`args`: "Double $$ are reduced to a single $, which allows for escaping the $(VAR_NAME)
  syntax"). Doubling every `$` therefore makes any text literal.
- `k8s_shell_command(script)`: `["sh", "-c", script]` for a container, with the script made
  literal for Kubernetes (the script's own values must already be `shell_word`s).
- `json_text(obj)`: a JSON document (request bodies, flag values) from Python objects: strings
  are escaped by `json.dumps`, never pasted between quotes.
- `ere_literal(value)`: `value` as a POSIX extended regular expression that matches only itself
  (for `grep -E` patterns built around a value).
- `terminal_text(value)`: text a terminal shows and never acts on: every C0 control but TAB,
  DEL and every C1 control (ECMA-48: ESC starts escape sequences, CSI 0x9b and OSC 0x9d are C1;
  a CR or BS can overwrite what was printed) shown as `\\xNN`. For text from outside (progress
  records, a server's answers) that reaches a person's terminal. The set is `TERMINAL_CONTROLS`;
  a stream of bytes (the logs command) matches it with `utf8_any(TERMINAL_CONTROLS)`.

Values that cannot be quoted at all are refused: a NUL byte cannot be part of any argv or
environment value (`QuotingError`).
"""

from __future__ import annotations

import json
import re
import shlex
from typing import Any, List


class QuotingError(ValueError):
    """The value cannot be represented in the target language (e.g. it contains NUL)."""


def _text(value: object) -> str:
    s = str(value)
    if "\0" in s:
        raise QuotingError("a NUL byte cannot be passed to a command or an environment variable")
    return s


def shell_word(value: object) -> str:
    """`value` as exactly one shell word that expands to `value` and runs nothing."""
    return shlex.quote(_text(value))


def shell_words(values) -> str:
    """Several values as shell words separated by spaces."""
    return " ".join(shell_word(v) for v in values)


def k8s_literal(value: object) -> str:
    """`value` for a Kubernetes command/args/env value, with no `$(VAR)` expansion."""
    return _text(value).replace("$", "$$")


def k8s_ref(name: str) -> str:
    """A deliberate Kubernetes variable reference `$(NAME)` (NAME must be a C identifier)."""
    if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", name):
        raise QuotingError(f"{name!r} is not a variable name")
    return f"$({name})"


def k8s_shell_command(script: str) -> List[str]:
    """A container command running `script` with sh, literal for Kubernetes."""
    return ["sh", "-c", k8s_literal(script)]


def json_text(obj: Any) -> str:
    """Compact JSON for `obj` (strings escaped by json.dumps; NaN/Infinity refused)."""
    return json.dumps(obj, separators=(",", ":"), allow_nan=False)


def ere_literal(value: object) -> str:
    """`value` as an extended regular expression matching exactly that text."""
    out = []
    for c in _text(value):
        if c in ".[]()*+?{}|^$\\":
            out.append("\\" + c if c in "\\^" else f"[{c}]")
        else:
            out.append(c)
    return "".join(out)


#: what a terminal acts on (ECMA-48): the C0 controls but TAB, DEL and the C1 controls. The one
#: definition: `terminal_text` shows each as `\\xNN`, and the logs command, which streams bytes
#: (components/cli/logs.py `TerminalSafe`), matches their UTF-8 encodings (`utf8_any`)
TERMINAL_CONTROLS = "".join(map(chr, [*range(0x00, 0x09), *range(0x0a, 0x20), *range(0x7f, 0xa0)]))
_TERMINAL_CONTROL = re.compile(f"[{re.escape(TERMINAL_CONTROLS)}]")


def utf8_any(chars: str) -> bytes:
    """A bytes regular expression matching the UTF-8 encoding of any one of `chars` (one class
    of last bytes per leading sequence: `[...]|\\xc2[...]`), for text read as bytes that cannot
    be decoded whole (a stream cut anywhere, a log that is not all UTF-8)."""
    tails: dict = {}
    for c in sorted(set(chars)):
        b = c.encode()
        tails.setdefault(b[:-1], []).append(b[-1:])
    return b"|".join(re.escape(lead) + b"[" + b"".join(map(re.escape, last)) + b"]"
                     for lead, last in tails.items())


def terminal_text(value: object) -> str:
    """`value` with every terminal control character (newlines too) shown as `\\xNN`."""
    return _TERMINAL_CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", str(value))
