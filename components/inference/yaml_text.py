"""YAML text of the rendered manifests, byte for byte what `yaml.safe_dump` writes, faster.

PyYAML's pure-Python emitter looks at every character of a scalar twice in Python loops: once to
choose its style (`Emitter.analyze_scalar`) and once to write it (`Emitter.write_double_quoted`).
The aws-eks manifests carry whole scripts in ConfigMaps (tens of kilobytes, written
double-quoted because an indented line is a break followed by a space), and those two loops were
the largest single cost of an offline plan after importing the SDKs (~0.2 s of 69 resources'
run). libyaml's emitter (`CSafeDumper`) is fast but folds long double-quoted lines differently,
so it would change the files.

`SafeDumper` here is PyYAML's SafeDumper with those two methods rewritten to do the same thing
in fewer Python steps (PyYAML 6.0.x, lib/yaml/emitter.py, pinned in requirements.txt:
https://github.com/yaml/pyyaml/blob/6.0.2/lib/yaml/emitter.py):

- `analyze_scalar` computes the same flags with regular expressions over the whole scalar
  instead of a character loop (each flag is commented with the loop's rule it replaces);
- `write_double_quoted` runs PyYAML's loop body unchanged, but only at the positions where that
  body can do something (a space, a character it escapes, the character after an escape, the
  end): at any other position both of its branches are false, so skipping it changes nothing.

tests/unit/test_yaml_text.py compares both methods with PyYAML's own on generated scalars
(hypothesis) and on every manifest of the stacks' plans.
"""

from __future__ import annotations

import functools
import re

import yaml
from yaml.emitter import ScalarAnalysis

#: characters PyYAML's analysis treats as a line break, and as whitespace around indicators
_BREAKS = "\n\x85\u2028\u2029"
_WS = "\0 \t\r" + _BREAKS

_BREAK = re.compile("[\n\x85\u2028\u2029]")
_BREAK_SPACE = re.compile("[\n\x85\u2028\u2029] ")
_SPACE_BREAK = re.compile(" [\n\x85\u2028\u2029]")
#: indicators anywhere but first
_FLOW_INNER = re.compile(r"[,?\[\]{}:]")
#: ':' followed by whitespace or last (not first: checked apart)
_COLON_BLOCK = re.compile(":(?=[\x00 \t\r\n\x85\u2028\u2029]|\\Z)")
#: '#' preceded by whitespace (so never first)
_HASH_AFTER_WS = re.compile("[\x00 \t\r\n\x85\u2028\u2029]#")
#: characters outside '\n' and printable ASCII (all "special" without allow_unicode)
_NOT_ASCII_PRINTABLE = re.compile("[^\n\x20-\x7e]")
#: the characters write_double_quoted escapes (without allow_unicode)
_DQ_ESCAPED = re.compile('["\\\\\x85\u2028\u2029\ufeff]|[^\x20-\x7e]')


@functools.lru_cache(maxsize=None)
def _unicode_patterns():
    """With allow_unicode (the manifests do not use it; compiling these takes ~14 ms): the
    special characters (outside '\\n', printable ASCII, '\\x85', the printable unicode ranges,
    U+10FFFF excluded as by the loop's `< '\\U0010ffff'`, and U+FEFF), and those
    write_double_quoted escapes."""
    return (re.compile("[^\n\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010fffe]|\ufeff"),
            re.compile('["\\\\\x85\u2028\u2029\ufeff]|[^\x20-\x7e\xa0-\ud7ff\ue000-\ufffd]'))


def _indicators(scalar: str):
    """(flow indicators, block indicators) as the analysis loop finds them in a non-empty scalar."""
    first = scalar[0]
    # document indicators
    flow = block = scalar.startswith("---") or scalar.startswith("...")
    # the first character, "followed by whitespace" when it is the only one or the next is
    followed = len(scalar) == 1 or scalar[1] in _WS
    if first in "#,[]{}&*!|>'\"%@`" or (first == "-" and followed):
        flow = block = True
    if first in "?:":
        flow = True
        block = block or followed
    # the others: ',?[]{}' and ':' are flow indicators; ':' followed by whitespace (or last)
    # and '#' preceded by whitespace are block indicators too
    if _FLOW_INNER.search(scalar, 1):
        flow = True
    if _COLON_BLOCK.search(scalar, 1):
        block = True
    if _HASH_AFTER_WS.search(scalar):
        flow = block = True
    return flow, block


def _allowed(flow, block, line_breaks, special, leading, trailing_space, trailing_break,
             break_space, space_break) -> dict:
    """The loop's own decisions on the styles, unchanged (`leading`: a leading space or break)."""
    plain_flow = plain_block = single = block_style = True
    if leading or trailing_space or trailing_break or line_breaks:
        plain_flow = plain_block = False
    if trailing_space:
        block_style = False
    if break_space:
        plain_flow = plain_block = single = False
    if space_break or special:
        plain_flow = plain_block = single = block_style = False
    return dict(allow_flow_plain=plain_flow and not flow, allow_block_plain=plain_block and not block,
                allow_single_quoted=single, allow_double_quoted=True, allow_block=block_style)


def _escape(ch: str) -> str:
    """The escape write_double_quoted writes for `ch`."""
    if ch in yaml.emitter.Emitter.ESCAPE_REPLACEMENTS:
        return "\\" + yaml.emitter.Emitter.ESCAPE_REPLACEMENTS[ch]
    if ch <= "\xFF":
        return "\\x%02X" % ord(ch)
    if ch <= "\uFFFF":
        return "\\u%04X" % ord(ch)
    return "\\U%08X" % ord(ch)


class SafeDumper(yaml.SafeDumper):
    """yaml.SafeDumper, its scalar analysis and double-quoted writer made faster (same output)."""

    def analyze_scalar(self, scalar):
        if not scalar:  # the loop's special case, as it is
            return super().analyze_scalar(scalar)
        flow, block = _indicators(scalar)
        line_breaks = _BREAK.search(scalar) is not None
        special = (_unicode_patterns()[0] if self.allow_unicode else _NOT_ASCII_PRINTABLE).search(scalar) is not None
        allowed = _allowed(flow, block, line_breaks, special, scalar[0] in " " + _BREAKS,
                           scalar[-1] == " ", scalar[-1] in _BREAKS,
                           _BREAK_SPACE.search(scalar) is not None,
                           _SPACE_BREAK.search(scalar) is not None)
        return ScalarAnalysis(scalar=scalar, empty=False, multiline=line_breaks, **allowed)

    def _put(self, data: str) -> None:
        self.column += len(data)
        if self.encoding:
            data = data.encode(self.encoding)
        self.stream.write(data)

    def _escaped(self, ch: str) -> bool:
        """Does write_double_quoted escape `ch`?"""
        return ch in '"\\\x85\u2028\u2029\uFEFF' or not (
            "\x20" <= ch <= "\x7E"
            or (self.allow_unicode and ("\xA0" <= ch <= "\uD7FF" or "\uE000" <= ch <= "\uFFFD")))

    def _fold(self, text: str, start: int, end: int) -> int:
        """Break the line at `end` as write_double_quoted does; the new start."""
        data = text[start:end] + "\\"
        if start < end:
            start = end
        self._put(data)
        self.write_indent()
        self.whitespace = False
        self.indention = False
        if text[start] == " ":
            self._put("\\")
        return start

    def _next(self, text: str, start: int, end: int) -> int:
        """The next position where write_double_quoted's body can act, from `end` (when start >=
        end, just after an escape, it can act there already): a character it escapes, the end,
        or a space where the line would pass best_width (column + (end - start) > best_width;
        neither changes until the body writes)."""
        n = len(text)
        if end >= n or start >= end:
            return end
        m = (_unicode_patterns()[1] if self.allow_unicode else _DQ_ESCAPED).search(text, end)
        nxt = m.start() if m else n
        limit = start + self.best_width - self.column + 1
        if limit < nxt:
            space = text.find(" ", max(end, limit), nxt)
            if space != -1:
                nxt = space
        return nxt

    def write_double_quoted(self, text, split=True):
        # PyYAML's loop (emitter.py, write_double_quoted), its body visited only where it can act
        self.write_indicator('"', True)
        start = end = 0
        n = len(text)
        while end <= n:
            ch = text[end] if end < n else None
            if ch is None or self._escaped(ch):
                if start < end:
                    self._put(text[start:end])
                    start = end
                if ch is not None:
                    self._put(_escape(ch))
                    start = end + 1
            if 0 < end < n - 1 and (ch == " " or start >= end) \
                    and self.column + (end - start) > self.best_width and split:
                start = self._fold(text, start, end)
            end = self._next(text, start, end + 1)
        self.write_indicator('"', False)


def safe_dump(data, **kwds) -> str:
    """`yaml.safe_dump(data, **kwds)` as text, with the faster SafeDumper (same bytes)."""
    return yaml.dump_all([data], None, Dumper=SafeDumper, **kwds)
