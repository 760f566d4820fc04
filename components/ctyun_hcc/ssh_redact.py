"""Secret values out of what an SSH command prints, whole or as it streams (pure).

Why a module of its own: `SshRunner.stream` (`logs -f` on the master) hands output over as
paramiko receives it, in reads of any size. Redacting each read on its own lets a secret that
straddles two reads through in two halves, neither of which matches. `StreamRedactor` keeps
back, after each read, only the end of what it has that could still be the start of a secret
(the longest such suffix, at most the longest secret's length - 1 characters), so a secret is
replaced whatever the cut, and output that cannot begin one is shown at once (a `tail -F` line
is not delayed until kilobytes more arrive). Bytes are decoded with one incremental UTF-8
decoder per stream, so a character cut between reads is not turned into U+FFFD either.

Under a pseudo-terminal (`logs -f`) the terminal driver writes each `\\n` as `\\r\\n` (termios
ONLCR, on by default), so a multi-line secret (a PEM private key) is also looked for in that
form.

What ends inside a possible secret: when the stream ends (or is interrupted) while a kept-back
tail is the first `MIN_SHOWN_PREFIX` or more characters of a secret, `[secret]` is shown for
it; a shorter tail (`-`, one letter) is shown as it is. Either way no secret is shown whole.
"""

from __future__ import annotations

import codecs
from typing import Iterable, List

SHOWN = "[secret]"
#: a kept-back tail this long that starts a secret is shown as SHOWN when the stream ends
MIN_SHOWN_PREFIX = 4


def variants(secrets: Iterable[str]) -> List[str]:
    """The values to look for: each secret, its pty form (`\\r\\n` line ends), longest first
    (so a secret that holds a shorter one is replaced whole)."""
    found = set()
    for s in secrets:
        if s:
            found.add(s)
            if "\n" in s:
                found.add(s.replace("\r\n", "\n").replace("\n", "\r\n"))
    return sorted(found, key=lambda s: (-len(s), s))


def redact(text: str, secrets: Iterable[str]) -> str:
    """`text` with every secret replaced by SHOWN (`secrets` as `variants` returns them)."""
    for s in secrets:
        if s in text:
            text = text.replace(s, SHOWN)
    return text


def secret_prefix_len(text: str, secrets: Iterable[str]) -> int:
    """Length of the longest suffix of `text` that is a proper prefix of one of `secrets`."""
    best = 0
    for s in secrets:
        start = max(0, len(text) - len(s) + 1)
        i = text.find(s[0], start)
        while i != -1 and len(text) - i > best:
            if s.startswith(text[i:]):
                best = len(text) - i
                break  # later starts are shorter suffixes
            i = text.find(s[0], i + 1)
    return best


class StreamRedactor:
    """Redacts one output stream read by read: `feed(bytes) -> str`, then `end() -> str`."""

    def __init__(self, secrets: Iterable[str]):
        self._secrets = variants(secrets)
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._held = ""

    def feed(self, data: bytes) -> str:
        text = self._held + self._decoder.decode(data)
        if not self._secrets:
            self._held = ""
            return text
        text = redact(text, self._secrets)
        keep = secret_prefix_len(text, self._secrets)
        self._held = text[len(text) - keep:] if keep else ""
        return text[:len(text) - keep]

    def end(self) -> str:
        """What is left when the stream ends (see the module docstring)."""
        text = redact(self._held + self._decoder.decode(b"", final=True), self._secrets)
        self._held = ""
        keep = secret_prefix_len(text, self._secrets)
        if keep >= MIN_SHOWN_PREFIX:
            return text[:len(text) - keep] + SHOWN
        return text
