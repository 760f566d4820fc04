"""What `accept` shows of a server's answer: never our key, never a terminal escape (pure).

A server is free to put anything in its answers, including the `Authorization` header it was
sent (an echo) and terminal control sequences. Everything `accept` prints, writes to `--out`,
records in the stack output or raises passes through one `Scrubber`:

- every spelling of the key the project's scrubber knows (as is, JSON-escaped, URL-encoded) and
  any `authorization: ...`-style echo become `[secret]`; the scrubber is the project's own
  (`redact_text`), so one rule covers CTyun's answers, the progress file and `accept`;
- parsed answers are scrubbed field by field (`tree`), keys included, after JSON decoding: a
  key spelled with `\\u` escapes in the raw body is caught once decoded;
- a text that holds the key only once JSON `\\uXXXX` escapes or URL `%XX` escapes are decoded
  (a raw body, or a tool call's arguments, which are JSON inside JSON) is shown decoded and
  scrubbed; text without such a spelling of the key is left exactly as it came;
- text is scrubbed whole before it is cut short, so an excerpt never shows a prefix of the key;
- control characters (C0 but tab, DEL, C1: ESC starts a terminal escape sequence, CSI is C1)
  are shown as `\\xNN`, so a server cannot move the cursor, retitle the window or hide a line.
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Optional, Tuple
from urllib.parse import unquote

from ..dynamic.redact import SHOWN, redact_text
from ..inference.quoting import terminal_text

#: a JSON escape of one UTF-16 unit (surrogate pairs are decoded pairwise, below)
_U_ESCAPE = re.compile(r"\\u([0-9a-fA-F]{4})")


def decoded(text: str) -> str:
    """`text` with JSON `\\uXXXX`, `\\/` and URL `%XX` escapes decoded (for looking, not
    for use)."""
    if "\\" in text:
        text = _U_ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), text).replace("\\/", "/")
        text = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    if "%" in text:
        text = unquote(text, errors="replace")
    return text


def printable(text: str) -> str:
    """`text` with every terminal control character shown as `\\xNN` (newlines too)."""
    return terminal_text(text)


class Scrubber:
    """Replaces `secrets` (the API key) in text and in parsed JSON. Without a secret it only
    makes text printable: a server cannot echo a key it was never sent."""

    def __init__(self, secrets: Iterable[Optional[str]] = ()):
        self.secrets: Tuple[str, ...] = tuple(s for s in secrets if isinstance(s, str) and s)

    def text(self, text: Any) -> str:
        text = text if isinstance(text, str) else str(text)
        if not self.secrets:
            return text
        if ("\\" in text or "%" in text):
            plain = decoded(text)
            if plain != text and any(s in plain for s in self.secrets):
                text = plain  # the key was spelled with escapes: show it decoded, then scrub
        for s in self.secrets:  # the project scrubber leaves values under 4 characters alone
            if len(s) < 4:
                text = text.replace(s, SHOWN)
        return redact_text(text, self.secrets)

    def shown(self, text: Any) -> str:
        """Scrubbed and printable: for anything a person reads."""
        return printable(self.text(text))

    def tree(self, obj: Any) -> Any:
        """A copy of a parsed JSON value (dicts, lists, scalars) with every string scrubbed.

        Iterative, so depth costs no stack; callers bound the depth before (protocol.parse_json).
        """
        if not self.secrets:
            return obj
        if isinstance(obj, str):
            return self.text(obj)
        if not isinstance(obj, (dict, list)):
            return obj
        root = [obj]
        todo = [(root, 0, obj)]
        while todo:
            parent, slot, node = todo.pop()
            if isinstance(node, dict):
                copy = {}
                parent[slot] = copy
                for k, v in node.items():
                    k2 = self.text(k) if isinstance(k, str) else k
                    copy[k2] = v
                    todo.append((copy, k2, v))
            elif isinstance(node, list):
                copy = list(node)
                parent[slot] = copy
                for i, v in enumerate(copy):
                    todo.append((copy, i, v))
            elif isinstance(node, str):
                parent[slot] = self.text(node)
        return root[0]

    def report(self, obj: Any) -> Any:
        """A report (dicts/lists of JSON values) with every string scrubbed and printable."""
        if isinstance(obj, str):
            return self.shown(obj)
        if isinstance(obj, dict):
            return {self.shown(k) if isinstance(k, str) else k: self.report(v)
                    for k, v in obj.items()}
        if isinstance(obj, (list, tuple)):
            return [self.report(v) for v in obj]
        return obj


NO_SECRETS = Scrubber()
