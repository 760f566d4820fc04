"""Known-answer acceptance: what to ask, what the answer must be, how it is read (pure).

A server can answer every shape check (chat, stream, reasoning, tool call) and still decode
fluent, wrong text: vllm-project/vllm#52627 (Kimi-K3 behind a P/D split returned HTTP 200 with
garbled or wrong output under load) and #51039 (all requests degenerating after a long prefill)
are of that kind. These checks ask questions whose answers are known exactly and compare:

- `arithmetic`: word problems with integer answers (components/accept/known_answers.json; each
  answer is recomputed from its `work` expression by the unit tests);
- `json_schema`: an extraction constrained to a JSON schema (OpenAI `response_format`), one
  field computed (12 pallets x 640 kg);
- `needle`: codes planted at three depths of a long filler text, asked back, at a short control
  length and up to the deployment's context length;
- `greedy_repeat`: the same problems again, at once, must give the same answers;
- `greedy_replicas`: every replica, asked directly, must give the router's answers.

Sampling is sent explicitly on every request (temperature 0, top_p 1, a fixed seed): vLLM fills
omitted fields from the checkpoint's generation_config (vLLM 0.33.0
`vllm/config/model.py` `generation_config="auto"`), and Moonshot's own defaults are not greedy.
Greedy text is identical across batches only with vLLM's `VLLM_BATCH_INVARIANT=1` (vLLM 0.33.0
`vllm/envs.py`), so answers are compared after extraction (the integer, the code, the parsed
object), never as raw text. Only OpenAI request fields are sent.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

DATA = Path(__file__).with_name("known_answers.json")

#: sent with every known-answer request (greedy; a fixed seed for servers that sample anyway)
SAMPLING = {"temperature": 0.0, "top_p": 1.0, "seed": 20261201}
#: room for Kimi K3's reasoning before the final line (the answer is read from `content`)
KNOWN_MAX_TOKENS = 4096
ANSWER_LINE = ("Work it out, then give the final answer on its own last line as "
               "ANSWER: <integer>")

#: thresholds (what passing means; docs/acceptance.md explains each)
ARITHMETIC_MIN_CORRECT = 7  # of 8: one slip of a healthy model is tolerated, a wrong decoder is not
#: greedy_repeat: these problems (the first ones of the set), this many extra copies each
REPEAT_PROBLEMS = 3
REPEAT_COPIES = 3
#: needle: tokens of the short control; codes planted at these depths of the filler
NEEDLE_CONTROL_TOKENS = 2048
NEEDLE_DEPTHS = (0.1, 0.5, 0.9)
NEEDLE_COLOURS = ("amber", "cobalt", "jade")
#: at the longest length a model may miss one of three codes; shorter lengths must find all
NEEDLE_MIN_FOUND_LONGEST = 2
#: tokens kept free of the context length for the answer (and its reasoning) and the template
NEEDLE_ANSWER_TOKENS = KNOWN_MAX_TOKENS
NEEDLE_MARGIN = 0.97  # tokens are estimated from the control's usage; stay under the limit


@dataclass(frozen=True)
class Problem:
    id: str
    question: str
    answer: int
    work: str


@lru_cache(maxsize=1)
def dataset() -> Dict[str, Any]:
    return json.loads(DATA.read_text())


def problems() -> Tuple[Problem, ...]:
    return tuple(Problem(p["id"], p["question"], int(p["answer"]), p["work"])
                 for p in dataset()["arithmetic"])


def shipment() -> Dict[str, Any]:
    return dataset()["shipment"]


def chat_body(model: str, prompt: str, max_tokens: int, **extra) -> Dict[str, Any]:
    return {"model": model, "messages": [{"role": "user", "content": prompt}],
            "max_tokens": int(max_tokens), **SAMPLING, **extra}


def arithmetic_prompt(p: Problem) -> str:
    return f"{p.question}\n{ANSWER_LINE}"


# ---- reading answers ---------------------------------------------------------------------
_ANSWER = re.compile(r"ANSWER\s*[:=]\s*\**\s*(-?\d[\d,]*)", re.IGNORECASE)
_INT = re.compile(r"-?\d[\d,]*")


def extract_integer(text: Optional[str]) -> Optional[int]:
    """The integer after the last `ANSWER:`, else the last integer in the text, else None."""
    if not text:
        return None
    found = _ANSWER.findall(text) or _INT.findall(text)
    if not found:
        return None
    try:
        return int(found[-1].replace(",", ""))
    except ValueError:
        return None


def judge_arithmetic(got: Mapping[str, Optional[int]], why: Mapping[str, str]) -> Tuple[bool, str]:
    """`got`: problem id -> extracted answer (None: none); `why`: id -> reason when None."""
    ps = problems()
    wrong = [p for p in ps if got.get(p.id) != p.answer]
    right = len(ps) - len(wrong)
    ok = right >= ARITHMETIC_MIN_CORRECT
    parts = [f"{right}/{len(ps)} correct (threshold {ARITHMETIC_MIN_CORRECT})"]
    for p in wrong[:3]:
        seen = got.get(p.id)
        parts.append(f"{p.id}: expected {p.answer}, got "
                     + (str(seen) if seen is not None else why.get(p.id, "no answer")))
    return ok, "; ".join(parts)


def judge_repeat(first: Mapping[str, Optional[int]],
                 copies: Mapping[str, Sequence[Optional[int]]],
                 texts: Mapping[str, Sequence[str]],
                 why: Optional[Mapping[str, str]] = None) -> Tuple[bool, str]:
    """Every copy of a problem must give the first answer (None never agrees). A problem no
    request of which got an integer is reported as unanswered (with `why`: the first failing
    reply's reason), not as answers that differ: a server that answers nothing (an error, a
    redirect) has shown nothing about determinism."""
    bad, missing, same_text, n = [], [], 0, 0
    for pid, answers in copies.items():
        all_answers = [first.get(pid), *answers]
        if all(a is None for a in all_answers):
            missing.append(f"{pid}: {(why or {}).get(pid) or 'no integer in any answer'}")
        elif any(a is None for a in all_answers) or len(set(all_answers)) != 1:
            bad.append(f"{pid}: {all_answers}")
        ts = texts.get(pid) or []
        n += 1
        same_text += int(bool(ts) and len(set(ts)) == 1)
    copies_n = sum(len(a) for a in copies.values())
    if bad:
        return False, (f"greedy answers differ between identical requests: {'; '.join(bad[:3])}"
                       + (f"; no answer at all for {len(missing)} problem(s)" if missing else ""))
    if missing:
        return False, ("no answer to compare between identical requests: "
                       + "; ".join(missing[:3]))
    return True, (f"{len(copies)} problems x {copies_n // max(len(copies), 1) + 1} requests: same "
                  f"answers; identical text for {same_text}/{n} (text may differ without "
                  "VLLM_BATCH_INVARIANT=1)")


def judge_replicas(router: Mapping[str, Optional[int]],
                   replicas: Mapping[str, Mapping[str, Optional[int]]]) -> Tuple[bool, str]:
    """Every replica's answer to every problem must equal the router's (and be an answer)."""
    bad = []
    for name, answers in replicas.items():
        for p in problems():
            mine, theirs = answers.get(p.id), router.get(p.id)
            if mine is None or mine != theirs:
                bad.append(f"{name} answers {p.id} with {mine} (through the router: {theirs})")
    if bad:
        return False, "replicas disagree: " + "; ".join(bad[:3])
    return True, f"{len(replicas)} replicas give the router's answers to {len(problems())} problems"


# ---- JSON schema -----------------------------------------------------------------------
_TYPES = {"object": dict, "array": list, "string": str, "boolean": bool}


def schema_errors(obj: Any, schema: Mapping[str, Any], path: str = "$") -> List[str]:
    """Violations of the JSON-schema subset the check uses (type, properties, required,
    additionalProperties false, pattern, enum); [] when `obj` is valid."""
    wrong_type = _type_error(obj, schema.get("type"), path)
    if wrong_type:
        return [wrong_type]
    errors = []
    if "enum" in schema and obj not in schema["enum"]:
        errors.append(f"{path} is not one of {schema['enum']}")
    if isinstance(obj, str) and "pattern" in schema and not re.search(schema["pattern"], obj):
        errors.append(f"{path} does not match {schema['pattern']}")
    if isinstance(obj, dict):
        errors += _object_errors(obj, schema, path)
    return errors


def _type_error(obj: Any, t: Any, path: str) -> Optional[str]:
    """The violation of schema type `t` (a bool is neither an integer nor a number), or None."""
    if t == "integer":
        if isinstance(obj, bool) or not isinstance(obj, int):
            return f"{path} is not an integer"
    elif t == "number":
        if isinstance(obj, bool) or not isinstance(obj, (int, float)):
            return f"{path} is not a number"
    elif t in _TYPES and not isinstance(obj, _TYPES[t]):
        return f"{path} is not {'an' if t[0] in 'aeiou' else 'a'} {t}"
    return None


def _object_errors(obj: Mapping[str, Any], schema: Mapping[str, Any], path: str) -> List[str]:
    """An object's violations: required keys, additionalProperties false, its properties."""
    errors = []
    props = schema.get("properties") or {}
    for key in schema.get("required") or ():
        if key not in obj:
            errors.append(f"{path}.{key} is missing")
    if schema.get("additionalProperties") is False:
        errors += [f"{path}.{k} is not allowed" for k in obj if k not in props]
    for k, sub in props.items():
        if k in obj:
            errors += schema_errors(obj[k], sub, f"{path}.{k}")
    return errors


def shipment_body(model: str, max_tokens: int) -> Dict[str, Any]:
    s = shipment()
    return chat_body(model, f"{s['instruction']}\n\n{s['note']}", max_tokens,
                     response_format={"type": "json_schema", "json_schema": {
                         "name": "shipment", "schema": s["schema"], "strict": True}})


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, str) and isinstance(b, str):
        return a.strip().casefold() == b.strip().casefold()
    return type(a) is type(b) and a == b


def judge_shipment(content: Optional[str]) -> Tuple[bool, str]:
    s = shipment()
    if not content or not content.strip():
        return False, "no content"
    try:
        obj = json.loads(content)
    except ValueError:
        return False, f"the content is not JSON (response_format ignored?): {content[:80]!r}"
    errors = schema_errors(obj, s["schema"])
    if errors:
        return False, "the object breaks the schema: " + "; ".join(errors[:3])
    wrong = [f"{k}: expected {v!r}, got {obj.get(k)!r}" for k, v in s["expected"].items()
             if not _same(obj.get(k), v)]
    if wrong:
        return False, "schema-valid but wrong: " + "; ".join(wrong[:3])
    return True, f"schema-valid and all {len(s['expected'])} fields right (total_weight_kg computed)"


# ---- needle in a haystack -------------------------------------------------------------
_SUBJECTS = ("The ferry", "A gardener", "The old clock", "Our neighbour", "The library",
             "A fisherman", "The choir", "The night train", "A potter", "The orchard")
_VERBS = ("passed", "painted", "repaired", "visited", "watched", "carried", "measured",
          "described", "followed", "cleaned")
_OBJECTS = ("the harbour gate", "a blue fence", "the stone bridge", "the quiet square",
            "a wooden boat", "the market hall", "the northern road", "a copper kettle",
            "the long meadow", "the lighthouse stairs")
_WHEN = ("at dawn", "after lunch", "on Sunday", "before the rain", "in the evening",
         "during the fair", "at noon", "late at night", "in early spring", "after the storm")


def filler(chars: int, seed: int = 7) -> str:
    """Plain sentences without digits, about `chars` long (deterministic for a seed)."""
    rng = random.Random(seed)
    out, n = [], 0
    while n < chars:
        s = (f"{rng.choice(_SUBJECTS)} {rng.choice(_VERBS)} {rng.choice(_OBJECTS)} "
             f"{rng.choice(_WHEN)}. ")
        out.append(s)
        n += len(s)
    return "".join(out)[:chars]


def needle_sentence(colour: str, code: int) -> str:
    return f" The access code for the {colour} locker is {code:06d}. "


def needle_codes(rng: random.Random) -> Dict[str, int]:
    """Three distinct six-digit codes, one per colour."""
    codes: Dict[str, int] = {}
    while len(codes) < len(NEEDLE_COLOURS):
        c = rng.randrange(100000, 1000000)
        if c not in codes.values():
            codes[NEEDLE_COLOURS[len(codes)]] = c
    return codes


def needle_prompt(chars: int, codes: Mapping[str, int]) -> str:
    """A filler text of about `chars` characters with each code planted at its depth, then the
    question for all codes at once (one prefill per length)."""
    text = filler(chars)
    # plant from the deepest so earlier offsets stay valid; cut at a sentence boundary
    for depth, colour in sorted(zip(NEEDLE_DEPTHS, NEEDLE_COLOURS), reverse=True):
        at = text.rfind(". ", 0, max(int(len(text) * depth), 2)) + 1
        text = text[:at] + needle_sentence(colour, codes[colour]) + text[at:]
    names = ", ".join(NEEDLE_COLOURS[:-1]) + f" and {NEEDLE_COLOURS[-1]}"
    lines = "\n".join(f"{c}: <code>" for c in NEEDLE_COLOURS)
    return (f"Read the following text. It mentions the access codes of the {names} lockers."
            f"\n\n{text}\n\nWhat are the access codes of the {names} lockers? Answer with the "
            f"six-digit codes only, one line per locker, exactly in this form:\n{lines}")


def extract_codes(text: Optional[str]) -> Dict[str, Optional[int]]:
    out: Dict[str, Optional[int]] = {}
    for colour in NEEDLE_COLOURS:
        m = re.findall(rf"\b{colour}\b[^\d\n]{{0,40}}?(\d{{6}})(?!\d)", text or "", re.IGNORECASE)
        out[colour] = int(m[-1]) if m else None
    return out


def needle_lengths(context_tokens: Optional[int], cap_tokens: Optional[int] = None) -> List[int]:
    """Target prompt tokens: the control, one eighth of the usable context and the usable
    context (`context_tokens` less NEEDLE_ANSWER_TOKENS), deduplicated, ascending."""
    lengths = [NEEDLE_CONTROL_TOKENS]
    if context_tokens:
        usable = int(context_tokens) - NEEDLE_ANSWER_TOKENS
        if cap_tokens:
            usable = min(usable, int(cap_tokens))
        for t in (usable // 8, usable):
            if t > lengths[-1] * 1.5:
                lengths.append(t)
    return lengths


def judge_needle(found: Sequence[Tuple[int, Mapping[str, Optional[int]], str]],
                 codes: Mapping[str, int]) -> Tuple[bool, str]:
    """`found`: (prompt tokens, extracted codes, note) per length, ascending."""
    if not found:
        return False, "no length was asked"
    parts, ok = [], True
    longest = found[-1][0]
    for tokens, got, note in found:
        hits = [c for c in NEEDLE_COLOURS if got.get(c) == codes[c]]
        need = NEEDLE_MIN_FOUND_LONGEST if tokens == longest and len(found) > 1 \
            else len(NEEDLE_COLOURS)
        good = len(hits) >= need
        ok &= good
        miss = [f"{c} expected {codes[c]:06d} got "
                + (f"{got.get(c):06d}" if got.get(c) is not None else "none")
                for c in NEEDLE_COLOURS if c not in hits]
        parts.append(f"{tokens} tokens: {len(hits)}/{len(NEEDLE_COLOURS)} found (need {need})"
                     + (f" [{'; '.join(miss)}]" if miss and not good else "")
                     + (f" {note}" if note else ""))
    return ok, "; ".join(parts)
