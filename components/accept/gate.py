"""The acceptance gate at the end of `pulumi up`: run the checks, fail with the check's name.

Both targets call `run_gate` right after their readiness wait, from inside a dynamic provider
(Pulumi-free here). It returns the summary exported as the stack output `acceptance`, or
raises `AcceptanceFailed("acceptance check <name> failed: <detail>")`.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Callable, Dict, Optional, Sequence

from .report import first_failure, price
from .sizing import LoadSize

if TYPE_CHECKING:  # imported where the gate runs: the program only takes its inputs from here
    from .runner import AcceptConfig

#: what one request of the gate may take (a real K3 answer of 256 tokens under load is seconds)
GATE_REQUEST_TIMEOUT_S = 300.0
#: max_tokens of the functional checks: room for Kimi K3's reasoning before its answer
GATE_MAX_TOKENS = 512
#: the needle's longest prompt when the target gives no cap of its own from the plan
#: (known_cost.needle_cap_tokens): a long prefill must not stretch the gate
GATE_NEEDLE_CAP_TOKENS = 32768


class AcceptanceFailed(RuntimeError):
    """A check failed; the message names it and says what was seen."""

    def __init__(self, check: str, detail: str, report: Dict[str, Any]):
        self.check, self.detail, self.report = check, detail, report
        super().__init__(f"acceptance check {check} failed: {detail}")


#: the gate resources' input carrying the stack's price per hour (only when one is set, so a
#: stack without it sees no new input)
PRICE_INPUT = "usdPerHour"


def price_input(usd_per_hour: Optional[float]) -> Dict[str, Any]:
    """The gate resources' price input: `{"usdPerHour": X}`, or nothing when no price is set (a
    stack without one sees no new input, hence no update)."""
    return {PRICE_INPUT: float(usd_per_hour)} if usd_per_hour else {}


def usd_per_hour_input(props: Dict[str, Any]) -> Optional[float]:
    """The gate's `usdPerHour` input: a positive finite number, else None (never an error: the
    program checked `kimi-k3:usdPerHour`; a state written otherwise just has no price)."""
    import math

    v = props.get(PRICE_INPUT)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
        return None
    return float(v)


KNOWN_INPUT = "acceptKnown"


def known_input(plan) -> Dict[str, Any]:
    """The gate resources' known-answer input from the plan: the context length the needle
    reaches and its cap, where the estimated prefill of the longest prompt stays within
    known_cost.NEEDLE_PREFILL_BUDGET_S on one data-parallel rank (None: no cap needed)."""
    from ..inference.catalog import MODELS
    from .known_cost import needle_cap_tokens

    par = plan.parallelism
    cap = needle_cap_tokens(MODELS[plan.model], plan.accelerator,
                            par.tensor_parallel * par.pipeline_parallel, plan.max_model_len)
    return {KNOWN_INPUT: {"contextTokens": int(plan.max_model_len), "needleCapTokens": cap}}


def known_kwargs(props: Dict[str, Any]) -> Dict[str, Any]:
    """gate_config's keyword arguments from the `acceptKnown` input (nothing when the state has
    none: the gate's default cap then applies)."""
    k = props.get(KNOWN_INPUT)
    if not isinstance(k, dict) or not isinstance(k.get("contextTokens"), (int, float)):
        return {}
    cap = k.get("needleCapTokens")
    return {"context_tokens": int(k["contextTokens"]),
            "needle_cap_tokens": int(cap) if isinstance(cap, (int, float)) and cap > 0 else None}


def gate_config(endpoint: str, model: str, api_key: Optional[str], size: Optional[LoadSize],
                hardware: Optional[Dict[str, Any]] = None,
                timeout_s: float = GATE_REQUEST_TIMEOUT_S, *,
                context_tokens: Optional[int] = None,
                needle_cap_tokens: Optional[int] = GATE_NEEDLE_CAP_TOKENS,
                replicas: Sequence[str] = (), previous_key: Optional[str] = None) -> AcceptConfig:
    """The gate's run: the functional checks, the known answers (the needle up to
    `context_tokens`, at most `needle_cap_tokens`; `replicas`: each replica's OpenAI base URL
    behind a router, asked directly once) and the load part `size`. `previous_key`: the key
    before `kimi-k3:apiKey` changed (`previous_key_of`), which `auth` must see refused."""
    from .runner import AcceptConfig  # the checks' HTTP client (httpx): only when a gate runs

    return AcceptConfig(endpoint=endpoint, model=model, api_key=api_key or None,
                        concurrency=size.concurrency if size else 1,
                        requests=size.requests if size else 0,
                        max_tokens=GATE_MAX_TOKENS,
                        load_max_tokens=size.max_tokens if size else None,
                        timeout_s=timeout_s, hardware=hardware, context_tokens=context_tokens,
                        needle_cap_tokens=needle_cap_tokens,
                        replicas=tuple(replicas),
                        previous_keys=(previous_key,) if previous_key and previous_key != api_key
                        else ()).validate()


def previous_key_of(olds, news) -> Optional[str]:
    """The key a gate's update must see refused: the old `apiKey` input when the new one differs
    (a rotation, docs/day-two.md), else None (no key before, or the same key)."""
    old, new = (olds or {}).get("apiKey") or None, (news or {}).get("apiKey") or None
    return old if old and new and old != new else None


def summary_output(report: Dict[str, Any]) -> Dict[str, Any]:
    """The stack output `acceptance`: what passed, the load figures, the matching references."""
    load = report.get("load")
    bad = first_failure(report)
    return {
        "ok": bad is None,
        "checks": {c["name"]: c["ok"] for c in report["checks"]},
        "failed": None if bad is None else {"check": bad["name"], "detail": bad["detail"]},
        "load": None if not load else {
            "requests": load["requests"], "errors": load["errors"],
            "concurrency": load["concurrency"], "ttft_s": load["ttft_s"],
            "tpot_s": load["tpot_s"], "output_tokens_per_s": load["output_tokens_per_s"],
            "max_tokens": load["max_tokens"],
            # the stack's price per hour (kimi-k3:usdPerHour) and USD per million output tokens
            "usd_per_hour": load.get("usd_per_hour"), "usd_per_mtok": load.get("usd_per_mtok"),
        },
        "reference": [
            {"id": r["id"], "match": r["match"], "source": r["source"].split(" ")[0],
             "output_tokens_per_s": r["figures"].get("output_tokens_per_s"),
             "ttft_s_mean": r["figures"].get("ttft_s_mean"),
             "tpot_s_mean": r["figures"].get("tpot_s_mean"), "workload": r["workload"]}
            for r in (load or {}).get("reference_points") or []],
        "endpoint": report["endpoint"],
        "checked_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "elapsed_s": report["elapsed_s"],
    }


def run_gate(cfg: AcceptConfig, on_check: Optional[Callable[[Any], None]] = None,
             usd_per_hour: Optional[float] = None) -> Dict[str, Any]:
    """Run the checks; the `acceptance` summary, or AcceptanceFailed naming the first failure.
    With the stack's price per hour the load part also says what a million output tokens cost."""
    from .runner import accept

    report = price(accept(cfg, on_check), usd_per_hour)
    bad = first_failure(report)
    if bad is not None:
        raise AcceptanceFailed(bad["name"], bad["detail"], report)
    return summary_output(report)
