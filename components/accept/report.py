"""The acceptance report: its JSON fields, the ten-second summary and the exit code (pure).

Report fields (issue 11): `endpoint`, `model`, `checks` (list of `{name, ok, detail}` in the
order they ran), `load` (`requests`, `errors`, `concurrency`, `ttft_s` {p50, p95}, `tpot_s`
{p50, p95}, `output_tokens_per_s` from the client's wall time, plus `reference_points` that
match the deployment's hardware, and `usd_per_hour`/`usd_per_mtok` when a price per hour is
given: USD per million output tokens at the measured rate, X / (output tokens per hour / 10^6))
or null when the load part is off. Exit codes: 0 every check
passed, 1 one failed (its name on the summary's last line), 2 bad usage (the CLI's business).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Dict, List, Optional

#: the checks, named exactly as the issue names them, in the order they run
CHECK_NAMES = ("health", "models", "chat", "stream", "reasoning", "tool_call", "auth",
               # known answers (known.py / known_checks.py, issue 23)
               "arithmetic", "json_schema", "needle", "greedy_repeat", "greedy_replicas",
               "load")
#: the known-answer checks (run together by known_checks.run_known)
KNOWN_CHECKS = ("arithmetic", "json_schema", "needle", "greedy_repeat", "greedy_replicas")


@dataclass(frozen=True)
class CheckResult:
    name: str
    ok: bool
    detail: str

    def __post_init__(self):
        if self.name not in CHECK_NAMES:
            raise ValueError(f"unknown check {self.name!r}")


@dataclass
class LoadResult:
    """What the load part measured (all times in seconds, client side)."""

    requests: int
    errors: int
    concurrency: int
    ttft_s: Dict[str, Optional[float]]
    tpot_s: Dict[str, Optional[float]]
    output_tokens_per_s: Optional[float]
    wall_s: float
    output_tokens: int
    max_tokens: int
    prompt_tokens_mean: Optional[float] = None
    first_errors: List[str] = field(default_factory=list)
    reference_points: List[Dict[str, Any]] = field(default_factory=list)
    #: the price per hour of what serves the endpoint, when given, and what a million output
    #: tokens cost at the measured rate
    usd_per_hour: Optional[float] = None
    usd_per_mtok: Optional[float] = None


def build(endpoint: str, model: str, checks: List[CheckResult], load: Optional[LoadResult],
          elapsed_s: float, hardware: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    return {
        "endpoint": endpoint,
        "model": model,
        "ok": all(c.ok for c in checks),
        "checks": [asdict(c) for c in checks],
        "load": asdict(load) if load is not None else None,
        "hardware": hardware,
        "elapsed_s": round(elapsed_s, 2),
    }


def price(report: Dict[str, Any], usd_per_hour: Optional[float]) -> Dict[str, Any]:
    """`report` with its load part priced: `usd_per_hour` and `usd_per_mtok` (components/accept/
    load.py usd_per_mtok). Nothing to price without a load part or a price."""
    from .load import usd_per_mtok

    load = report.get("load")
    if load is not None and usd_per_hour is not None:
        load["usd_per_hour"] = usd_per_hour
        load["usd_per_mtok"] = usd_per_mtok(usd_per_hour, load.get("output_tokens_per_s"))
    return report


def first_failure(report: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    return next((c for c in report["checks"] if not c["ok"]), None)


def exit_code(report: Dict[str, Any]) -> int:
    return 0 if first_failure(report) is None else 1


def _ms(v: Optional[float]) -> str:
    return "-" if v is None else f"{v * 1000:.0f} ms"


def summary(report: Dict[str, Any]) -> str:
    """What a person reads in ten seconds; the last line is PASS, or FAIL and the check's name."""
    lines = [f"accept {report['endpoint']} model {report['model']} ({report['elapsed_s']} s)"]
    for c in report["checks"]:
        lines.append(f"  {'ok  ' if c['ok'] else 'FAIL'} {c['name']:<9} {c['detail']}")
    load = report.get("load")
    if load:
        tps = load["output_tokens_per_s"]
        lines.append(
            f"  load: {load['requests']} requests at concurrency {load['concurrency']}, "
            f"{load['errors']} errors; TTFT p50 {_ms(load['ttft_s']['p50'])} p95 "
            f"{_ms(load['ttft_s']['p95'])}; TPOT p50 {_ms(load['tpot_s']['p50'])} p95 "
            f"{_ms(load['tpot_s']['p95'])}; {'-' if tps is None else f'{tps:.1f}'} output tok/s")
        if load.get("usd_per_hour") is not None:
            per = load.get("usd_per_mtok")
            lines.append(f"  cost: {'-' if per is None else f'${per:,.2f}'} per million output "
                         f"tokens at ${load['usd_per_hour']:,.2f}/h and the rate measured here")
        for ref in load.get("reference_points") or []:
            f = ref["figures"]
            lines.append(
                f"  reference ({ref['match']}): {ref['layout']} {ref['weights']}, "
                f"{ref['workload']['input_tokens']}/{ref['workload']['output_tokens']} tokens at "
                f"concurrency {ref['workload']['concurrency']}: {f['output_tokens_per_s']} tok/s, "
                f"TTFT mean {_ms(f.get('ttft_s_mean'))}, TPOT mean {_ms(f.get('tpot_s_mean'))} "
                f"[{ref['source'].split(' ')[0]}]")
    elif any(c["name"] == "load" for c in report["checks"]):
        lines.append("  load: not run")
    else:
        lines.append("  load: off")
    bad = first_failure(report)
    lines.append("PASS" if bad is None else f"FAIL {bad['name']}")
    return "\n".join(lines)
