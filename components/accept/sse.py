"""Server-sent events, decoded incrementally from the bytes as they arrive (pure).

Why our own decoder: the checks time each event at the moment its bytes arrive (TTFT, TPOT),
so decoding must work on whatever chunks the socket delivers, not on whole lines or a whole body.
It follows the WHATWG "event stream interpretation" rules: lines end in CRLF, LF or CR; a line
starting with `:` is a comment (vLLM sends `: keep-alive` comments while a request is idle,
vllm/entrypoints/serve/utils/sse_keep_alive.py in vLLM 0.33.0); `data:` lines of one event are
joined with `\\n`; a blank line dispatches the event; one space after the colon is dropped.
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass
from typing import List

#: the sentinel vLLM (and OpenAI) send as the last event of a chat stream
DONE = "[DONE]"


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
        #: comment lines seen (keep-alives); they never count as output
        self.comments = 0

    def feed(self, chunk: bytes) -> List[SseEvent]:
        text = self._text.decode(chunk)
        if self._pending_cr and text.startswith("\n"):
            text = text[1:]  # the LF of a CRLF split across two chunks
        self._pending_cr = False
        self._buf += text
        out: List[SseEvent] = []
        while True:
            cut = _line_end(self._buf)
            if cut is None:
                break
            line, sep_len = self._buf[:cut], 1
            if self._buf[cut] == "\r":
                if cut + 1 < len(self._buf):
                    sep_len = 2 if self._buf[cut + 1] == "\n" else 1
                else:
                    self._pending_cr = True  # maybe half of a CRLF: drop a leading LF next time
            self._buf = self._buf[cut + sep_len:]
            ev = self._line(line)
            if ev is not None:
                out.append(ev)
        return out

    def close(self) -> List[SseEvent]:
        """End of stream: an event not terminated by a blank line is discarded (per the spec)."""
        self._data, self._event, self._buf = [], "", ""
        return []

    def _line(self, line: str):
        if line == "":
            if not self._data:
                self._event = ""
                return None
            ev = SseEvent("\n".join(self._data), self._event or "message")
            self._data, self._event = [], ""
            return ev
        if line.startswith(":"):
            self.comments += 1
            return None
        field, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if field == "data":
            self._data.append(value)
        elif field == "event":
            self._event = value
        return None  # `id`, `retry` and unknown fields carry nothing the checks use


def _line_end(buf: str):
    """Index of the first CR or LF in `buf`, or None."""
    i_n, i_r = buf.find("\n"), buf.find("\r")
    if i_n < 0:
        return i_r if i_r >= 0 else None
    if i_r < 0:
        return i_n
    return min(i_n, i_r)
