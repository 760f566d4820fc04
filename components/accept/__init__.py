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
  `report.exit_code(r)`, `report.first_failure(r)`, `report.summary(r)`.
- `*_async` forms of both for callers already in an event loop of their own.

Modules: sse (SSE decoding), protocol (vLLM/OpenAI chat shapes, stream accumulation, timing),
stats (percentiles), reference (published figures, reference_points.json), report (report,
summary, exit code) are pure; client (httpx), checks, load, readiness, runner do the I/O.
"""

from .readiness import Readiness, wait_ready, wait_ready_async
from .report import CHECK_NAMES, CheckResult, exit_code, first_failure, summary
from .runner import AcceptConfig, accept, accept_async

__all__ = ["AcceptConfig", "CHECK_NAMES", "CheckResult", "Readiness", "accept", "accept_async",
           "exit_code", "first_failure", "summary", "wait_ready", "wait_ready_async"]
