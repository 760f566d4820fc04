"""How big the deploy-time load part is: `kimi-k3:acceptLoad` and the plan's concurrency (pure).

`kimi-k3:acceptLoad` (both stacks):
- `auto` (default): concurrency = the plan's planned concurrency (max_num_seqs x data-parallel
  ranks, the sequences one replica schedules at once), capped at AUTO_CAP so the gate stays
  short; requests = 2 x concurrency; max_tokens AUTO_MAX_TOKENS;
- `off`: no load part (the functional checks always run);
- `R`: R requests at the auto concurrency; `RxC`: R requests at concurrency C.

Imports neither Pulumi nor the HTTP client: config/shared.py checks the key with it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from ..inference.errors import ConfigError

KEY = "kimi-k3:acceptLoad"
AUTO_CAP = 64
AUTO_MAX_TOKENS = 64
MAX_REQUESTS = 10_000
MAX_CONCURRENCY = 1024
#: counts in ASCII digits, as every integer value (components/config/values.py): `\d` would take '١٠'
_FORM = re.compile(r"^(auto|off|([0-9]+)(?:x([0-9]+))?)$")


@dataclass(frozen=True)
class LoadSize:
    requests: int
    concurrency: int
    max_tokens: int = AUTO_MAX_TOKENS


def parse_accept_load(value) -> str:
    """The canonical form of `kimi-k3:acceptLoad` (auto, off, R or RxC); ConfigError if not."""
    text = "auto" if value is None or str(value).strip() == "" else str(value).strip().lower()
    m = _FORM.match(text)
    if not m:
        raise ConfigError(KEY, value, "use auto, off, a request count such as 32, or "
                          "REQUESTSxCONCURRENCY such as 64x16", "is not a load size")
    if m.group(2):
        r, c = int(m.group(2)), int(m.group(3)) if m.group(3) else None
        if not 1 <= r <= MAX_REQUESTS:
            raise ConfigError(KEY, value, f"use 1 to {MAX_REQUESTS} requests (or off)",
                              "is out of range")
        if c is not None and not 1 <= c <= MAX_CONCURRENCY:
            raise ConfigError(KEY, value, f"use a concurrency of 1 to {MAX_CONCURRENCY}",
                              "is out of range")
        return f"{r}x{c}" if c else str(r)
    return text


def planned_concurrency(max_num_seqs: Optional[int], data_parallel: int) -> int:
    """Sequences one replica runs at once as planned, capped for a short gate."""
    if not max_num_seqs:
        return AUTO_CAP  # vLLM's own default is larger than any short gate wants
    return max(1, min(AUTO_CAP, int(max_num_seqs) * max(1, int(data_parallel))))


def load_size(setting: str, max_num_seqs: Optional[int], data_parallel: int) -> Optional[LoadSize]:
    """The load part for this plan and setting; None when it is off."""
    setting = parse_accept_load(setting)
    if setting == "off":
        return None
    auto_c = planned_concurrency(max_num_seqs, data_parallel)
    if setting == "auto":
        return LoadSize(2 * auto_c, auto_c)
    r, _, c = setting.partition("x")
    conc = int(c) if c else auto_c
    return LoadSize(int(r), min(conc, int(r)))
