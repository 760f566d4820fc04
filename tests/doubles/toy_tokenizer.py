"""A stand-in tokenizer and chat template for the vLLM double (tests only; not Kimi's).

Kimi K3's tokenizer (tiktoken-based, ~160K ids) is not available here and need not be: what the
router and the prefix cache depend on is that the same text always gives the same ids and that
a text extending another gives ids extending the other's. Pieces are words with their leading
space, single punctuation marks and runs of other whitespace (GPT-style pre-tokenisation);
each piece's id is a hash of it. Roughly 1.3 pieces per English word, so a token count is of
the same order as a real tokenizer's.

The chat template is shaped like Kimi's (`<|im_user|>user<|im_middle|>...<|im_end|>`, as in
moonshotai/Kimi-K2-Instruct's tokenizer_config.json chat_template) so that a conversation's
rendering grows by appending: turn k+1's prompt starts with turn k's prompt.
"""

from __future__ import annotations

import re
import zlib
from typing import Any, Iterable, List, Mapping

_PIECE = re.compile(r" ?[A-Za-z0-9_]+| ?[^\sA-Za-z0-9_]|\s+")
SPECIAL = {"<|im_system|>": 1, "<|im_user|>": 2, "<|im_assistant|>": 3, "<|im_middle|>": 4,
           "<|im_end|>": 5}
_SPECIAL_RE = re.compile("(" + "|".join(re.escape(s) for s in SPECIAL) + ")")
VOCAB = 160_000


def _piece_id(piece: str) -> int:
    return 1000 + zlib.crc32(piece.encode()) % (VOCAB - 1000)


def encode(text: str) -> List[int]:
    out: List[int] = []
    for part in _SPECIAL_RE.split(text):
        if part in SPECIAL:
            out.append(SPECIAL[part])
        elif part:
            out.extend(_piece_id(p) for p in _PIECE.findall(part))
    return out


def count(text: str) -> int:
    return len(encode(text))


def content_text(m: Mapping[str, Any]) -> str:
    c = m.get("content")
    if isinstance(c, list):  # OpenAI content parts: the text parts only
        return "".join(p.get("text", "") for p in c if isinstance(p, dict))
    return "" if c is None else str(c)


def render(messages: Iterable[Mapping[str, Any]], add_generation_prompt: bool = True) -> str:
    out = []
    for m in messages:
        if not isinstance(m, Mapping):
            continue
        role = str(m.get("role", "user"))
        tag = {"system": "<|im_system|>", "assistant": "<|im_assistant|>"}.get(role, "<|im_user|>")
        out.append(f"{tag}{role}<|im_middle|>{content_text(m)}<|im_end|>")
    if add_generation_prompt:
        out.append("<|im_assistant|>assistant<|im_middle|>")
    return "".join(out)
