"""What every CTyun dynamic provider needs at call time, kept out of the pickled provider.

A dynamic provider object is pickled into the Pulumi state, so it holds nothing but code.
Credentials and the endpoint are looked up here when an operation runs: environment first
(`CTYUN_AK`, `CTYUN_SK`, `CTYUN_ENDPOINT`), then the stack config the engine hands the provider
host through `configure` (`ctyun:accessKey`, `ctyun:secretKey`, `ctyun:endpoint`), kept in this
module's process-local dict, never on the provider instance. Nothing here derives names from
the stack: the host reports it as "stack"; the program passes names in as inputs.
"""

from __future__ import annotations

import contextvars
import functools
import logging
import os
import time
from typing import Any, Dict, Iterable, List, Mapping

from ..inference.errors import ConfigError
from ..progress.record import STEERING_INPUTS, ProgressLog
from .api.ehpc import Ehpc
from .api.redact import redact_text, scrub, secret_fields
from .api.transport import Transport, credentials_from
from .api.vpc import VpcApi
from .api.waits import Waiter

PROVIDER_KEY = "__provider"
#: how an unknown value (preview) is spelled on the wire (pulumi.runtime.rpc.UNKNOWN)
UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"

#: stack config the dynamic-provider host received (process-local; never pickled)
RUNTIME_CONFIG: Dict[str, Any] = {}

#: inputs that only steer a provider (where to call, how long to wait, where progress goes):
#: changing them alone is no update, which would otherwise turn every output unknown in preview
STEERING_KEYS = frozenset({"endpoint", "timeoutS", "pollIntervalS", "createTimeoutS",
                           "updateTimeoutS", "deleteTimeoutS", "lostAnswerWaitS",
                           *STEERING_INPUTS})


def is_unknown(value: Any) -> bool:
    """True for a value not known until apply: the wire sentinel or the host's Unknown()."""
    return value == UNKNOWN or type(value).__name__ == "Unknown"


def known(value: Any) -> bool:
    return value is not None and not is_unknown(value)


def remember_config(config: Any) -> None:
    """Keep the `ctyun:*` values of a `pulumi.dynamic.ConfigureRequest.config`."""
    raw = getattr(config, "_props", None) or {}
    for key in ("ctyun:accessKey", "ctyun:secretKey", "ctyun:endpoint"):
        if raw.get(key) is not None:
            RUNTIME_CONFIG[key] = raw[key]


def strip(props: Mapping[str, Any]) -> Dict[str, Any]:
    """Properties without the serialized provider (never sent to an API or compared)."""
    return {k: v for k, v in props.items() if k != PROVIDER_KEY}


def with_defaults(props: Mapping[str, Any], defaults: Mapping[str, Any]) -> Dict[str, Any]:
    """`props` limited to the keys of `defaults`, missing or None ones filled from it."""
    return {k: props.get(k) if props.get(k) is not None else d for k, d in defaults.items()}


def changed_inputs(olds: Dict[str, Any], news: Dict[str, Any], keys: Iterable[str]) -> list:
    """Keys (other than steering ones) whose new value differs or is not known yet."""
    return [k for k in keys if k not in STEERING_KEYS
            and (is_unknown(news.get(k)) or olds.get(k) != news.get(k))]


def transport(props: Mapping[str, Any]) -> Transport:
    """A fresh transport for one operation, credentials resolved at each request."""
    return Transport(credentials=lambda: credentials_from(os.environ, RUNTIME_CONFIG),
                     endpoint=props.get("endpoint") or RUNTIME_CONFIG.get("ctyun:endpoint")
                     or None)


def ehpc(props: Mapping[str, Any], t: Transport = None) -> Ehpc:
    return Ehpc(t or transport(props), str(props["regionID"]))


def vpc(props: Mapping[str, Any], t: Transport = None) -> VpcApi:
    return VpcApi(t or transport(props), str(props["regionID"]))


def waiter(props: Mapping[str, Any]) -> Waiter:
    return Waiter(float(props.get("pollIntervalS") or 30))


def credential_values() -> List[str]:
    """The access key pair in use (to redact), or nothing when none is configured."""
    try:
        c = credentials_from(os.environ, RUNTIME_CONFIG)
    except ConfigError:
        return []
    return [c.ak, c.sk]


def provider_secrets(*bags: Any) -> List[str]:
    """Every secret a CTyun provider operation may meet: the secret-named inputs it was given
    (`rootPassword`) and the credentials."""
    found: List[str] = []
    for bag in bags:
        found += [v for v in secret_fields(bag) if known(v)]
    return [s for s in found + credential_values() if isinstance(s, str) and s]


#: the secrets of the provider operation running in this context (for the log filter)
_ACTIVE: contextvars.ContextVar = contextvars.ContextVar("kk3_ctyun_secrets", default=())


class _RedactingFilter(logging.Filter):
    """Redacts every record of the `kimi_k3.ctyun` logger (api/redact.py)."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            text = record.getMessage()
        except (TypeError, ValueError):
            return True
        red = redact_text(text, [*_ACTIVE.get(), *credential_values()])
        if red != text:
            record.msg, record.args = red, ()
        return True


LOG = logging.getLogger("kimi_k3.ctyun")
if not any(isinstance(f, _RedactingFilter) for f in LOG.filters):
    LOG.addFilter(_RedactingFilter())

_METHODS = ("check", "diff", "create", "read", "update", "delete")


def redacting(cls):
    """Class decorator for a CTyun dynamic provider: whatever its operations raise or log is
    redacted of the operation's secrets (its inputs' secret fields, the credentials) before it
    leaves, chained exceptions included (Pulumi's host prints the whole traceback)."""
    for name in _METHODS:
        fn = cls.__dict__.get(name)
        if fn is None or getattr(fn, "_kk3_redacting", False):
            continue

        def wrap(fn):
            @functools.wraps(fn)
            def guarded(self, *args):
                secrets = provider_secrets(*[a for a in args if isinstance(a, Mapping)])
                token = _ACTIVE.set(tuple(secrets))
                try:
                    return fn(self, *args)
                except Exception as e:
                    scrub(e, secrets)
                    raise
                finally:
                    _ACTIVE.reset(token)
            guarded._kk3_redacting = True
            return guarded

        setattr(cls, name, wrap(fn))
    return cls


def progress(props: Mapping[str, Any], secrets: Iterable[str] = ()) -> ProgressLog:
    """The progress log the program named (`progressFile`), or one that records nothing.
    Besides `secrets`, the credentials are redacted from what it records."""
    path = props.get("progressFile")
    secrets = [*secrets, *credential_values()]
    return ProgressLog(path if known(path) else None, secrets=[s for s in secrets if s],
                       expect=props.get("progressExpect") if known(
                           props.get("progressExpect")) else None)


def deadline_in(seconds: Any) -> float:
    return time.monotonic() + float(seconds)
