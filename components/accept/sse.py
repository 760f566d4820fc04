"""Server-sent events, decoded incrementally from the bytes as they arrive (pure).

Why our own decoder: the checks time each event at the moment its bytes arrive (TTFT, TPOT),
so decoding must work on whatever chunks the socket delivers, not on whole lines or a whole body.
It follows the WHATWG "event stream interpretation" rules: lines end in CRLF, LF or CR; a line
starting with `:` is a comment (vLLM sends `: keep-alive` comments while a request is idle,
vllm/entrypoints/serve/utils/sse_keep_alive.py in vLLM 0.33.0); `data:` lines of one event are
joined with `\\n`; a blank line dispatches the event; one space after the colon is dropped.

Bounded: a line longer than MAX_LINE_CHARS, or an event whose data grows past MAX_EVENT_CHARS,
raises SseLimitError (vLLM's largest event is one chunk of a few hundred bytes), so a server
that never sends a line end cannot make the decoder hold more than that.
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass
from typing import List

#: the sentinel vLLM (and OpenAI) send as the last event of a chat stream
DONE = "[DONE]"
#: the longest line, and the most data one event may carry, in characters
MAX_LINE_CHARS = 1024 * 1024
MAX_EVENT_CHARS = 1024 * 1024


class SseLimitError(ValueError):
    """The stream broke one of the decoder's bounds; the message says which."""


@dataclass(frozen=True)
class SseEvent:
    data: str
    event: str = "message"


class SseDecoder:
    """Feed bytes with `feed()`; get back the events completed by them."""

    def __init__(self) -> None:
        self._text = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._buf = ""
        self._data: List[str] = []
        self._event = ""
        self._pending_cr = False
        #: where the search for the next line end resumes (the buffer before it has none)
        self._scan = 0
        self._event_chars = 0
        #: comment lines seen (keep-alives); they never count as output
        self.comments = 0

    def feed(self, chunk: bytes) -> List[SseEvent]:
        text = self._text.decode(chunk)
        if self._pending_cr and text.startswith("\n"):
            text = text[1:]  # the LF of a CRLF split across two chunks
        self._pending_cr = False
        buf = self._buf + text
        out: List[SseEvent] = []
        pos = 0  # lines are cut by position and the buffer sliced once: linear in its size
        while True:
            cut = _line_end(buf, max(pos, self._scan))
            if cut is None:
                break
            self._scan = 0
            line, sep_len = buf[pos:cut], 1
            if buf[cut] == "\r":
                if cut + 1 < len(buf):
                    sep_len = 2 if buf[cut + 1] == "\n" else 1
                else:
                    self._pending_cr = True  # maybe half of a CRLF: drop a leading LF next time
            pos = cut + sep_len
            ev = self._line(line)
            if ev is not None:
                out.append(ev)
        self._buf = buf[pos:]
        self._scan = len(self._buf)
        if self._scan > MAX_LINE_CHARS:
            raise SseLimitError(f"an event-stream line is longer than "
                                f"{MAX_LINE_CHARS // 1024} KiB without a line end")
        return out

    def close(self) -> List[SseEvent]:
        """End of stream: an event not terminated by a blank line is discarded (per the spec)."""
        self._data, self._event, self._buf, self._scan, self._event_chars = [], "", "", 0, 0
        return []

    def _line(self, line: str):
        if line == "":
            if not self._data:
                self._event = ""
                return None
            ev = SseEvent("\n".join(self._data), self._event or "message")
            self._data, self._event, self._event_chars = [], "", 0
            return ev
        if line.startswith(":"):
            self.comments += 1
            return None
        field, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if field == "data":
            self._event_chars += len(value) + 1
            if self._event_chars > MAX_EVENT_CHARS:
                raise SseLimitError(f"an event carries more than {MAX_EVENT_CHARS // 1024} KiB "
                                    "of data")
            self._data.append(value)
        elif field == "event":
            self._event = value
        return None  # `id`, `retry` and unknown fields carry nothing the checks use


def _line_end(buf: str, start: int = 0):
    """Index of the first CR or LF in `buf` from `start`, or None."""
    i_n, i_r = buf.find("\n", start), buf.find("\r", start)
    if i_n < 0:
        return i_r if i_r >= 0 else None
    if i_r < 0:
        return i_n
    return min(i_n, i_r)
