"""What the CTyun API layer raises. Every message names the API; none carries a secret.

- `ApiError`: CTyun answered and refused (`statusCode` other than 800): its code and message.
- `ThrottledError`: refused as throttled on every attempt the deadline allowed.
- `TransportError`: no usable answer. `may_have_run` tells whether the request could have been
  executed (a timeout or a reset after sending) - the one case where an order without an
  idempotency token must never be repeated blindly.
- `ResponseError`: CTyun answered 800 but not in the documented shape (a missing field, a
  wrong type, a value outside the documented enum). Never turned into an empty result.
- `RequestError`: a request we were about to send breaks the documented field rules.
"""

from __future__ import annotations

from typing import Any


class CtyunError(Exception):
    """Base of everything the API layer raises."""


class ApiError(CtyunError):
    def __init__(self, api: str, code: str, message: str, http_status: int = 200,
                 request_id: str = ""):
        self.api, self.code, self.message = api, code, message
        self.http_status, self.request_id = http_status, request_id
        super().__init__(f"CTyun {api} refused: {code}: {message}"
                         + (f" (request {request_id})" if request_id else ""))

    def code_is(self, *codes: str) -> bool:
        return self.code in codes


class ThrottledError(ApiError):
    """Throttled until the retries or the deadline ran out."""


class TransportError(CtyunError):
    def __init__(self, api: str, detail: str, may_have_run: bool, retried: bool):
        self.api, self.detail = api, detail
        self.may_have_run, self.retried = may_have_run, retried
        note = ""
        if may_have_run and not retried:
            note = (" (not repeated: the request may have been executed and this call has no "
                    "documented idempotency token)")
        super().__init__(f"CTyun {api}: {detail}{note}")


def _show(value: Any, limit: int = 160) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


class ResponseError(CtyunError):
    """The answer is not in the documented shape: names the API, the field and what came."""

    def __init__(self, api: str, field: str, problem: str, got: Any = "<absent>"):
        self.api, self.field, self.problem, self.got = api, field, problem, got
        shown = got if got == "<absent>" else _show(got)
        super().__init__(f"CTyun {api} answered in an undocumented shape: {field} {problem} "
                         f"(got {shown}); see docs/ctyun-hcc.md, open questions")


class RequestError(CtyunError):
    """A request field breaks the documented rules (caught before sending)."""

    def __init__(self, api: str, field: str, value: Any, rule: str):
        self.api, self.field, self.rule = api, field, rule
        super().__init__(f"CTyun {api}: {field}={_show(value)} {rule}")
