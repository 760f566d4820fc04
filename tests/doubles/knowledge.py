"""What the vLLM double "knows": answers to kimi-k3's known-answer questions (tests only).

A real Kimi K3 solves the word problems, extracts the shipment and reads the planted codes; the
double cannot think, so it answers the shipped problems from their data
(components/accept/known_answers.json, whose answers the unit tests recompute independently) and
retrieves the codes honestly: by reading the sentences "The access code for the X locker is N"
in the part of the prompt it sees. Its ways of being wrong are the ones a broken deployment
shows (vllm-project/vllm#52627, #51039): fluent text with wrong numbers, a context it silently
stops reading after N tokens, replicas that disagree, greedy answers that change from one
identical request to the next, a `response_format` it ignores.
"""

from __future__ import annotations

import json
import re
import threading
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Dict, Mapping, Optional

DATA = Path(__file__).resolve().parents[2] / "components" / "accept" / "known_answers.json"
_NEEDLE = re.compile(r"The access code for the (\w+) locker is (\d{6})\.")

#: faults of this module (vllm_openai.FAULTS lists them with the others)
FAULTS = {
    "wrong_numbers": "known answers come back fluent with every number off by one",
    "lost_needle": "the prompt is read only up to `needle_window_tokens` tokens; codes past it "
                   "are made up",
    "replica_drift": "this replica answers half of the word problems differently (+10)",
    "flaky_greedy": "every second identical greedy request gets another answer",
    "schema_ignored": "response_format is ignored: the extraction comes back as prose",
}


@lru_cache(maxsize=1)
def _data() -> Dict[str, Any]:
    return json.loads(DATA.read_text())


def _shift_numbers(text: str, by: int) -> str:
    return re.sub(r"\d+", lambda m: str(int(m.group()) + by).zfill(len(m.group())), text)


class Knowledge:
    """`answer(prompt, request, faults, count_tokens)` -> content, or None (not a known question)."""

    def __init__(self, needle_window_tokens: int = 8192):
        self.needle_window_tokens = needle_window_tokens
        self._seen: Dict[str, int] = {}
        self._lock = threading.Lock()

    def _nth(self, key: str) -> int:
        with self._lock:
            self._seen[key] = self._seen.get(key, 0) + 1
            return self._seen[key]

    def answer(self, prompt: str, req: Mapping[str, Any], faults,
               count_tokens: Callable[[str], int]) -> Optional[str]:
        out = self._arithmetic(prompt, faults) or self._shipment(prompt, req, faults) \
            or self._needle(prompt, faults, count_tokens)
        if out is not None and "wrong_numbers" in faults:
            out = _shift_numbers(out, 1)
        return out

    def _arithmetic(self, prompt: str, faults) -> Optional[str]:
        for i, p in enumerate(_data()["arithmetic"]):
            if p["question"] in prompt:
                value = p["answer"]
                if "replica_drift" in faults and i % 2 == 1:
                    value += 10
                if "flaky_greedy" in faults and self._nth(p["id"]) % 2 == 0:
                    value += 3
                return f"Working through the numbers step by step gives the total.\nANSWER: {value}"
        return None

    def _shipment(self, prompt: str, req: Mapping[str, Any], faults) -> Optional[str]:
        s = _data()["shipment"]
        if s["note"] not in prompt:
            return None
        fmt = req.get("response_format") or {}
        e = s["expected"]
        if fmt.get("type") != "json_schema" or "schema_ignored" in faults:
            return (f"Order {e['order_id']} ships {e['pallets']} pallets from {e['origin']} on "
                    f"{e['date']} with {e['carrier']}, {e['total_weight_kg']} kg in all.")
        return json.dumps(e)

    def _needle(self, prompt: str, faults, count_tokens) -> Optional[str]:
        asked = re.search(r"What are the access codes of the ([\w ,]+) lockers\?", prompt)
        if not asked:
            return None
        colours = re.findall(r"\w+", asked.group(1).replace(" and ", " "))
        codes = {}
        for m in _NEEDLE.finditer(prompt):
            seen = True
            if "lost_needle" in faults:
                seen = count_tokens(prompt[:m.start()]) < self.needle_window_tokens
            # a code it did not see is made up, fluently (always another six-digit number)
            codes[m.group(1)] = m.group(2) if seen else \
                str((int(m.group(2)) + 314159) % 900000 + 100000)
        return "\n".join(f"{c}: {codes.get(c, '000000')}" for c in colours)
