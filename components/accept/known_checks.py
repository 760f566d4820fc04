"""The known-answer checks against a live endpoint (I/O; what they ask and judge: known.py).

`run_known(c, cfg, record, wanted)` sends its requests in one batch, all at once, so their
decodes share the server's batch and the checks cost about one answer's time plus the needle's
prefill (known_cost.py estimates it): the arithmetic set, the greedy copies of its first problems
(identical requests beside the originals), the JSON extraction, the needle at every length and,
when replica endpoints are given, the arithmetic set to every replica directly. The needle's
long prompts are sized from the control prompt's own token count, read first from a one-token
request on that prompt (a 2048-token prefill, which the control itself then finds in the prefix
cache), so they need not wait for the control's answer. The routes and fields used are OpenAI's.
"""

from __future__ import annotations

import asyncio
import random
import secrets
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ..inference.catalog import MODELS
from . import known as kn
from .client import Answer, Client
from .protocol import ProtocolError, first_message
from .report import CheckResult

#: requests of one known-answer batch in flight per endpoint (the set is small)
MAX_IN_FLIGHT = 32
#: characters per token the needle's control prompt is cut at (English prose: about 4); the
#: longer prompts use the server's own count of the control
CONTROL_CHARS_PER_TOKEN = 4.0
#: the largest context a server's /v1/models `max_model_len` is believed for: 4 x the largest
#: context in the catalog. The needle builds its longest prompt in memory from that figure, so a
#: server claiming 10**10 tokens would have `accept` build tens of GB of text (the client's
#: memory must stay bounded whatever the server sends); above it the needle runs its control
#: only and fails, naming the figure.
MAX_BELIEVED_CONTEXT_TOKENS = 4 * max(m.max_context_tokens for m in MODELS.values())
#: characters per prompt token believed from the sizing request's `usage.prompt_tokens`: a
#: tokenizer gives at least one character per token of this English text (less only by the chat
#: template's few tokens) and real ones about 3-5; a server reporting 1 token for the 8 kB
#: control would make each longer prompt some 8,000 times larger. Outside the range the longer
#: prompts are not sized and the needle fails, naming the counts.
CHARS_PER_TOKEN_RANGE = (1.0, 16.0)


@dataclass
class Reply:
    """One known-answer request's outcome: `content` None with `why` when there is none."""

    content: Optional[str]
    why: str = ""
    prompt_tokens: Optional[int] = None


def read_reply(a: Answer) -> Reply:
    if a.status is None:
        return Reply(None, a.error or "no answer")
    if a.status != 200:
        return Reply(None, a.describe())
    try:
        msg, finish = first_message(a.body)
    except ProtocolError as e:
        return Reply(None, str(e))
    usage = a.body.get("usage") if isinstance(a.body, dict) else None
    tokens = usage.get("prompt_tokens") if isinstance(usage, dict) else None
    content = msg.get("content")
    if not isinstance(content, str) or not content.strip():
        why = f"no content (finish_reason {finish!r})"
        if finish == "length":
            why += ": max_tokens spent before the answer (reasoning?)"
        return Reply(None, why, tokens if isinstance(tokens, int) else None)
    return Reply(content, "", tokens if isinstance(tokens, int) else None)


async def _ask(c: Client, body: Dict[str, Any], gate: asyncio.Semaphore) -> Reply:
    async with gate:
        return read_reply(await c.chat(body))


async def _arithmetic(c: Client, model: str, max_tokens: int, gate: asyncio.Semaphore,
                      ps: Sequence[kn.Problem]) -> List[Reply]:
    return list(await asyncio.gather(*(
        _ask(c, kn.chat_body(model, kn.arithmetic_prompt(p), max_tokens), gate) for p in ps)))


def _answers(ps: Sequence[kn.Problem], replies: Sequence[Reply]):
    got = {p.id: kn.extract_integer(r.content) for p, r in zip(ps, replies)}
    why = {p.id: (r.why or "no integer in the answer") for p, r in zip(ps, replies)
           if got[p.id] is None}
    return got, why


def _host(url: str) -> str:
    return url.split("://", 1)[-1].rstrip("/").removesuffix("/v1")


async def run_known(c: Client, cfg, record: Callable[[CheckResult], None],
                    wanted: Sequence[str]) -> None:
    """Run the known-answer checks of `wanted` (names in report.CHECK_NAMES) and record them.

    One batch, sent at once after the needle's one-token sizing request: the arithmetic set,
    its greedy copies, the extraction, the needle at every length and (directly) every
    replica's set."""
    model, mt = cfg.model, cfg.known_max_tokens
    ps = kn.problems()
    repeat = ps[:kn.REPEAT_PROBLEMS]
    codes = kn.needle_codes(random.Random(secrets.randbits(64)))
    async with Client(cfg.endpoint, cfg.api_key, timeout_s=cfg.timeout_s,
                      max_connections=MAX_IN_FLIGHT) as kc:
        gate = asyncio.Semaphore(MAX_IN_FLIGHT)
        needle_on = "needle" in wanted
        ctx = await _context_tokens(kc, cfg) if needle_on else Context(None, "")
        context, unsized = ctx.tokens, ctx.not_believed
        per_token = None
        lengths = kn.needle_lengths(context, cfg.needle_cap_tokens)
        if needle_on and len(lengths) > 1:
            per_token, unsized = await _chars_per_token(kc, model, gate, lengths[0], codes)
        jobs: Dict[str, Any] = {
            "arithmetic": _arithmetic(kc, model, mt, gate, ps),
            "json_schema": _ask(kc, kn.shipment_body(model, mt), gate),
        }
        if needle_on:
            asked = lengths if per_token is not None else lengths[:1]
            sizes = [CONTROL_CHARS_PER_TOKEN] + [per_token * kn.NEEDLE_MARGIN for _ in asked[1:]]
            jobs["needle"] = asyncio.gather(*(_needle_at(kc, model, mt, gate, t, chars, codes)
                                              for t, chars in zip(asked, sizes)))
        if "greedy_repeat" in wanted:
            jobs["greedy_repeat"] = _arithmetic(
                kc, model, mt, gate, [p for p in repeat for _ in range(kn.REPEAT_COPIES)])
        if "greedy_replicas" in wanted:
            jobs["greedy_replicas"] = _replicas(cfg, model, mt, ps)
        done = dict(zip(list(jobs), await asyncio.gather(*jobs.values())))
    got, why = _answers(ps, done["arithmetic"])
    if "arithmetic" in wanted:
        record(CheckResult("arithmetic", *kn.judge_arithmetic(got, why)))
    if "json_schema" in wanted:
        r = done["json_schema"]
        record(CheckResult("json_schema", *(kn.judge_shipment(r.content)
                                            if r.content is not None else (False, r.why))))
    if needle_on:
        record(_needle_result(cfg, done["needle"], codes, lengths, context, ctx.source, unsized))
    if "greedy_repeat" in wanted:
        record(_repeat_result(ps, repeat, got, done["arithmetic"], done["greedy_repeat"]))
    if "greedy_replicas" in wanted:
        per_replica = {name: _answers(ps, replies)[0]
                       for name, replies in done["greedy_replicas"].items()}
        record(CheckResult("greedy_replicas", *kn.judge_replicas(got, per_replica)))


async def _chars_per_token(c: Client, model: str, gate: asyncio.Semaphore, control_tokens: int,
                           codes) -> Tuple[Optional[float], str]:
    """Characters per prompt token of the needle's text on this server: the control prompt
    asked for one token, its `usage.prompt_tokens` read; (None, why) when there is none."""
    prompt = kn.needle_prompt(int(control_tokens * CONTROL_CHARS_PER_TOKEN), codes)
    r = await _ask(c, kn.chat_body(model, prompt, 1), gate)
    if r.prompt_tokens:
        per_token = len(prompt) / r.prompt_tokens
        lo, hi = CHARS_PER_TOKEN_RANGE
        if lo <= per_token <= hi:
            return per_token, ""
        return None, (f"the server reported {r.prompt_tokens} prompt tokens for the "
                      f"{len(prompt)}-character control prompt ({per_token:.3g} characters per "
                      f"token, outside {lo:g}-{hi:g}): not believed")
    if r.why and not r.why.startswith("no content"):  # no reply, an HTTP error, not a chat reply
        return None, f"the sizing request on the control prompt failed: {r.why}"
    return None, "the server reported no usage.prompt_tokens for the control prompt"


def _needle_result(cfg, found: Sequence[Tuple], codes, lengths: Sequence[int],
                   context: Optional[int], source: str, unsized: str = "") -> CheckResult:
    """The needle check from every length's answer (`_needle_at`), saying when only the
    control ran (no context length, or no token count to size the longer prompts from) or the
    lengths were capped below the context."""
    ok, detail = kn.judge_needle([f[:3] for f in found], codes)
    if unsized:  # why the longer prompts could not be sized
        ok = False
        detail += f"; control only: {unsized}, so the longer prompts could not be sized"
    elif len(lengths) == 1:
        detail += f"; context length {source}: control only"
    elif cfg.needle_cap_tokens and context and lengths[-1] < context - kn.NEEDLE_ANSWER_TOKENS:
        detail += f"; capped at {cfg.needle_cap_tokens} tokens of the {context} context"
    return CheckResult("needle", ok, detail)


def _repeat_result(ps: Sequence[kn.Problem], repeat: Sequence[kn.Problem],
                   got: Dict[str, Optional[int]], firsts: Sequence[Reply],
                   copies_sent: Sequence[Reply]) -> CheckResult:
    """greedy_repeat: the first answer of each repeated problem and its copies (sent in order,
    kn.REPEAT_COPIES per problem) must agree, in value and text."""
    by_id = {p.id: r for p, r in zip(ps, firsts)}
    copies: Dict[str, List[Optional[int]]] = {p.id: [] for p in repeat}
    texts: Dict[str, List[str]] = {p.id: [by_id[p.id].content or ""] for p in repeat}
    why: Dict[str, str] = {p.id: by_id[p.id].why for p in repeat if by_id[p.id].why}
    for i, r in enumerate(copies_sent):
        pid = repeat[i // kn.REPEAT_COPIES].id
        copies[pid].append(kn.extract_integer(r.content))
        texts[pid].append(r.content or "")
        if r.why:
            why.setdefault(pid, r.why)
    return CheckResult("greedy_repeat", *kn.judge_repeat(got, copies, texts, why))


async def _replicas(cfg, model: str, max_tokens: int, ps) -> Dict[str, List[Reply]]:
    """The arithmetic set sent to every replica directly, all replicas at once."""

    async def one(url: str) -> Tuple[str, List[Reply]]:
        async with Client(url, cfg.api_key, timeout_s=cfg.timeout_s,
                          max_connections=len(ps)) as rc:
            return _host(url), await _arithmetic(rc, model, max_tokens,
                                                 asyncio.Semaphore(MAX_IN_FLIGHT), ps)

    return dict(await asyncio.gather(*(one(u) for u in cfg.replicas)))


@dataclass(frozen=True)
class Context:
    """The context length the needle may build prompts for: `tokens` (None when unknown or not
    believed), `source` (given, the server's max_model_len, unknown) and `not_believed`, why a
    server's figure was dropped (the needle then runs its control only and fails)."""

    tokens: Optional[int]
    source: str
    not_believed: str = ""


async def _context_tokens(c: Client, cfg) -> Context:
    """The user's `context_tokens`, else the model's `max_model_len` in the server's /v1/models,
    believed up to MAX_BELIEVED_CONTEXT_TOKENS (the ceiling applies to what a server says only:
    the needle's prompts are built in memory from it)."""
    if cfg.context_tokens:
        return Context(int(cfg.context_tokens), "given")
    a = await c.request("GET", "/models", timeout_s=min(c.timeout_s, 30))
    data = a.body.get("data") if isinstance(a.body, dict) else None
    for m in data if isinstance(data, list) else ():
        if isinstance(m, dict) and m.get("id") == cfg.model and isinstance(m.get("max_model_len"), int):
            claim, source = m["max_model_len"], "the server's max_model_len"
            if claim > MAX_BELIEVED_CONTEXT_TOKENS:
                return Context(None, source, (
                    f"the server's max_model_len {claim} is above {MAX_BELIEVED_CONTEXT_TOKENS} "
                    "tokens (4 x the largest context known): not believed"))
            return Context(claim, source)
    return Context(None, "unknown")


async def _needle_at(c: Client, model: str, max_tokens: int, gate: asyncio.Semaphore,
                     target_tokens: int, chars_per_token: float, codes):
    """One needle request of about `target_tokens` prompt tokens: (prompt tokens, extracted
    codes, note)."""
    prompt = kn.needle_prompt(int(target_tokens * chars_per_token), codes)
    r = await _ask(c, kn.chat_body(model, prompt, max_tokens), gate)
    tokens = r.prompt_tokens or int(len(prompt) / chars_per_token)
    return tokens, kn.extract_codes(r.content), "" if r.content else f"({r.why})"
