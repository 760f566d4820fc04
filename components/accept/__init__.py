"""Acceptance of a serving endpoint: is it ready, and does it work the way a user needs?

Used three ways: the `python -m components accept` command against any OpenAI-compatible
endpoint, and the readiness + acceptance gates at the end of `pulumi up` on both targets.

Library API (import from `components.accept`):

- `wait_ready(endpoint, model, api_key=None, timeout_s=600, poll_interval_s=10,
  request_timeout_s=30, on_poll=None) -> Readiness(ready, stage, last_seen, elapsed_s, polls)`:
  /health, then /v1/models listing `model`, then one real chat completion, until the deadline;
  `Readiness.error_message(endpoint, timeout_s)` is the one-line failure text.
- `accept(AcceptConfig(endpoint, model, api_key=None, concurrency=4, requests=16,
  max_tokens=256, timeout_s=120, hardware=None)) -> report dict` (fields in report.py);
  `exit_code(r)`, `first_failure(r)`, `summary(r)`.
- the deploy gate: `gate.run_gate(gate.gate_config(...))` -> the `acceptance` stack output or
  `gate.AcceptanceFailed`; its size from `sizing.load_size(kimi-k3:acceptLoad, ...)`.
- `*_async` forms of wait_ready and accept for callers already in an event loop of their own.

Modules: sse (SSE decoding), protocol (vLLM/OpenAI chat shapes, stream accumulation, timing),
stats (percentiles), reference (published figures, reference_points.json), report (report,
summary, exit code), sizing (acceptLoad) are pure; client (httpx), checks, load, readiness,
runner, gate do the I/O. Names are imported lazily: `components.accept.sizing` (used by the
settings parser) does not load the HTTP client.
"""

import importlib

_EXPORTS = {
    "Readiness": "readiness", "wait_ready": "readiness", "wait_ready_async": "readiness",
    "CHECK_NAMES": "report", "CheckResult": "report", "exit_code": "report",
    "first_failure": "report", "summary": "report",
    "AcceptConfig": "runner", "accept": "runner", "accept_async": "runner",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name):
    if name in _EXPORTS:
        return getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
