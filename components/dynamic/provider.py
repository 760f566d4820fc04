"""`Provider`: the one skeleton of kimi-k3's Pulumi dynamic providers.

Why: a dynamic provider object is pickled into the stack's state (the `__provider` property)
and its operations run in a separate host process (`python -m pulumi.dynamic`) that prints
whatever an operation raises, whole traceback included. Every provider therefore needs the same
things, and they used to be written ten times over and had drifted. A subclass declares what
differs (class attributes, below) and implements its operations; the base guarantees:

- **`__provider` stripped** from every property bag before an operation sees it;
- **olds upgraded**: an input renamed since a stack was deployed (`RENAMED`, old -> new) is read
  under its new name in every bag (olds of check/diff/update, props of read/delete), so an
  `up` after a rename shows no diff and replaces nothing; `upgrade` is the hook for more;
- **redaction**: whatever an operation raises (chained exceptions included) and every record of
  a logger made by `redacted_logger` while it runs are redacted (redact.py) of the operation's
  secrets: the values of its secret-named inputs (`redact.SECRET_FIELD_RE`), of `SECRET_INPUTS`,
  and the credentials in use (`credential_values`, read at call time, never kept);
- **nothing kept**: the provider refuses instance attributes (it is pickled into state: no
  client, socket or credential may ride along); each operation builds what it needs;
- **check**: `check_inputs(news)` returns the failures (one line each: key, value, fix);
- **diff**: the compared inputs (`DIFF_KEYS`, else `INPUTS`) less `IGNORED_KEYS` and the
  steering inputs (`STEERING_KEYS`: where progress goes, how long to wait) change when the new
  value differs or is unknown (preview); `REPLACE_KEYS` (or all, `REPLACE_ALL`) replace;
  `drifted(olds, news)` reports a change seen by the last refresh;
- **deadlines**: `deadline(p, op)` is the operation's `Deadline` from its input
  (`TIMEOUT_INPUTS[op]`, else `timeoutS`, else `DEFAULT_TIMEOUT_S`), and `Deadline.until` polls
  within it, failing with what it waited for, what it saw last and the setting to raise;
- **progress**: `progress(p)` is the progress log the program named (`progressFile`,
  `progressExpect`), redacting the operation's secrets;
- `read`, `update` and `delete` default to what a record needs: the state as it is, the new
  inputs over the old state, nothing to call.

On the resource side, `DynamicResource` checks input names, declares the outputs and marks
`SECRET_OUTPUTS` (`additional_secret_outputs`): the same lists the provider uses.
"""

from __future__ import annotations

import contextvars
import functools
import logging
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Tuple, TypeVar

import pulumi
import pulumi.dynamic
from pulumi.dynamic import (CheckFailure, CheckResult, DiffResult, ReadResult, ResourceProvider,
                            UpdateResult)

from ..progress.record import STEERING_INPUTS, ProgressLog
from .redact import redact_error, redact_text, secret_fields

PROVIDER_KEY = "__provider"
#: how an unknown value (preview) is spelled on the wire (pulumi.runtime.rpc.UNKNOWN)
UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"
OPERATIONS = ("check", "diff", "create", "read", "update", "delete")
T = TypeVar("T")


def is_unknown(value: Any) -> bool:
    """True for a value not known until apply: the wire sentinel or the host's Unknown()."""
    return value == UNKNOWN or type(value).__name__ == "Unknown"


def known(value: Any) -> bool:
    return value is not None and not is_unknown(value)


def strip(props: Mapping[str, Any]) -> Dict[str, Any]:
    """Properties without the serialized provider (never sent to an API or compared)."""
    return {k: v for k, v in props.items() if k != PROVIDER_KEY}


# ---------------------------------------------------------------------------- deadlines

class DeadlineExceeded(Exception):
    """A wait ran out of its operation's deadline (the message says what, what was last seen
    and which setting bounds it)."""

    def __init__(self, what: str, waited_s: float, last_seen: str, setting: str):
        self.what, self.last_seen = what, last_seen
        super().__init__(f"gave up waiting for {what}: the deadline ({setting}) passed after "
                         f"{waited_s:.1f} s (last seen: {last_seen}); raise {setting} or run "
                         "`pulumi up` again")


@dataclass(frozen=True)
class Deadline:
    """When an operation must have finished: `at` is a `clock()` (time.monotonic) value, and
    `setting` names what bounds it in messages. Clock and sleep are injectable for tests."""

    seconds: float
    setting: str
    at: float
    clock: Callable[[], float] = field(default=time.monotonic, compare=False, repr=False)
    error: Callable[..., Exception] = field(default=DeadlineExceeded, compare=False, repr=False)

    @classmethod
    def after(cls, seconds: Any, setting: str, clock: Callable[[], float] = time.monotonic,
              error: Callable[..., Exception] = DeadlineExceeded) -> "Deadline":
        return cls(float(seconds), setting, clock() + float(seconds), clock, error)

    def left(self) -> float:
        return max(0.0, self.at - self.clock())

    def passed(self) -> bool:
        return self.clock() >= self.at

    def until(self, what: str, probe: Callable[[], Tuple[bool, T, str]], poll_s: float,
              sleep: Callable[[float], None] = time.sleep, phase=None) -> T:
        """Call `probe()` -> (done, value, what was seen) until done, then return `value`;
        past the deadline raise `error(what, waited_s, last seen, setting)`. Never sleeps past
        the deadline; `phase` (a progress phase) gets what was seen."""
        started = self.clock()
        while True:
            done, value, seen = probe()
            if done:
                return value
            if phase is not None:
                phase.update(seen)
            if self.passed():
                raise self.error(what, self.clock() - started, seen, self.setting)
            sleep(max(0.0, min(float(poll_s), self.left())))


# ---------------------------------------------------------------------------- log redaction

#: the secrets of the provider operation running in this context (for the log filter)
_ACTIVE: contextvars.ContextVar = contextvars.ContextVar("kk3_provider_secrets", default=())


class RedactingFilter(logging.Filter):
    """Redacts every record of its logger: the running operation's secrets, `extra()`'s, and
    any secret-named field or recognisable credential (redact.py)."""

    def __init__(self, extra: Callable[[], Iterable[str]] = tuple):
        super().__init__()
        self.extra = extra

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            text = record.getMessage()
        except (TypeError, ValueError):
            return True
        red = redact_text(text, [*_ACTIVE.get(), *self.extra()])
        if red != text:
            record.msg, record.args = red, ()
        return True


def redacted_logger(name: str, extra: Callable[[], Iterable[str]] = tuple) -> logging.Logger:
    """The logger `name` with a `RedactingFilter` (once; a logger's filters apply only to the
    records logged on it, so every provider module takes its logger from here)."""
    logger = logging.getLogger(name)
    if not any(isinstance(f, RedactingFilter) for f in logger.filters):
        logger.addFilter(RedactingFilter(extra))
    return logger


# ---------------------------------------------------------------------------- the base

def _operation(fn):
    """Wrap one protocol method: bags upgraded (stripped, renamed), the operation's secrets
    active for the log filter, whatever it raises redacted of them."""
    if getattr(fn, "_kk3_operation", False):
        return fn

    @functools.wraps(fn)
    def operation(self, *args):
        args = tuple(self.upgrade(a) if isinstance(a, Mapping) else a for a in args)
        secrets = self.secrets(*[a for a in args if isinstance(a, Mapping)])
        token = _ACTIVE.set(tuple(secrets))
        try:
            return fn(self, *args)
        except Exception as e:
            redact_error(e, secrets)
            raise
        finally:
            _ACTIVE.reset(token)

    operation._kk3_operation = True
    return operation


class Provider(ResourceProvider):
    """Base of every kimi-k3 dynamic provider; see the module docstring for what it promises.

    Declare (class attributes, all optional):
    `INPUTS` {name: default} (`inputs()` fills and limits to them), `OUTPUTS`,
    `SECRET_OUTPUTS`, `SECRET_INPUTS`, `DIFF_KEYS`, `IGNORED_KEYS`, `STEERING_KEYS`,
    `REPLACE_KEYS`/`REPLACE_ALL`, `STABLES`, `DELETE_BEFORE_REPLACE`, `RENAMED`,
    `TIMEOUT_INPUTS` {operation: input}, `DEFAULT_TIMEOUT_S`, `DEADLINE_ERROR`.
    Implement `create`/`update`/`delete` (and `read` for refresh), `check_inputs`, and
    `credential_values` when the provider calls an API with credentials.
    """

    INPUTS: Mapping[str, Any] = {}
    OUTPUTS: Tuple[str, ...] = ()
    SECRET_OUTPUTS: Tuple[str, ...] = ()
    SECRET_INPUTS: Tuple[str, ...] = ()
    DIFF_KEYS: Tuple[str, ...] = ()
    IGNORED_KEYS: Tuple[str, ...] = ()
    STEERING_KEYS: Tuple[str, ...] = tuple(STEERING_INPUTS)
    REPLACE_KEYS: Tuple[str, ...] = ()
    REPLACE_ALL = False
    STABLES: Tuple[str, ...] = ()
    DELETE_BEFORE_REPLACE = True
    RENAMED: Mapping[str, str] = {}
    TIMEOUT_INPUTS: Mapping[str, str] = {}
    DEFAULT_TIMEOUT_S = 600.0
    DEADLINE_ERROR: Callable[..., Exception] = DeadlineExceeded

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        for name in OPERATIONS:
            if name in cls.__dict__:
                setattr(cls, name, _operation(cls.__dict__[name]))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is pickled into the stack's state and keeps "
                             f"nothing: build {name!r} inside the operation that needs it")

    # ---- hooks ---------------------------------------------------------------------------
    def check_inputs(self, news: Dict[str, Any]) -> List[CheckFailure]:
        """The failures of `news` (unknown values are not judged)."""
        return []

    def credential_values(self) -> List[str]:
        """The credentials this provider's calls would use now (to redact; never stored)."""
        return []

    def upgrade(self, props: Mapping[str, Any]) -> Dict[str, Any]:
        """`props` without `__provider`, inputs renamed since a stack was deployed under their
        new names (an old name that is also an output stays)."""
        p = strip(props)
        for old, new in self.RENAMED.items():
            if old in p:
                value = p[old] if old in self.OUTPUTS else p.pop(old)
                p.setdefault(new, value)
        return p

    def drifted(self, olds: Dict[str, Any], news: Dict[str, Any]) -> bool:
        """A change the inputs do not show (what the last refresh saw differs)."""
        return False

    @staticmethod
    def same(old: Any, new: Any) -> bool:
        return old == new

    # ---- helpers -------------------------------------------------------------------------
    def input_defaults(self) -> Mapping[str, Any]:
        return self.INPUTS

    def inputs(self, props: Mapping[str, Any]) -> Dict[str, Any]:
        """The inputs of `props`: with `INPUTS` declared, exactly those, unset (None) ones at
        their defaults; else every property as it is."""
        p = self.upgrade(props)
        defaults = self.input_defaults()
        if not defaults:
            return p
        return {k: p[k] if p.get(k) is not None else d for k, d in defaults.items()}

    def changed(self, olds: Mapping[str, Any], news: Mapping[str, Any]) -> List[str]:
        """Compared inputs whose new value differs from the old or is not known yet."""
        keys = self.DIFF_KEYS or tuple(self.input_defaults()) or tuple(news)
        return [k for k in keys if k not in self.STEERING_KEYS and k not in self.IGNORED_KEYS
                and (is_unknown(news.get(k)) or not self.same(olds.get(k), news.get(k)))]

    def secrets(self, *bags: Mapping[str, Any]) -> List[str]:
        """What no text may show during an operation on `bags` (see the module docstring)."""
        found: List[Any] = []
        for bag in bags:
            found += secret_fields(dict(bag))
            found += [bag.get(k) for k in self.SECRET_INPUTS]
        found += self.credential_values()
        return sorted({s for s in found if isinstance(s, str) and s and known(s)})

    def deadline(self, p: Mapping[str, Any], op: str, setting: Optional[str] = None) -> Deadline:
        """The deadline of operation `op`, from its input (see the module docstring)."""
        key = self.TIMEOUT_INPUTS.get(op, "timeoutS")
        seconds = p.get(key)
        if not known(seconds) or seconds in ("", 0):
            seconds = self.DEFAULT_TIMEOUT_S
        return Deadline.after(seconds, setting or f"the {key} input", error=self.DEADLINE_ERROR)

    def progress(self, p: Mapping[str, Any], secrets: Iterable[str] = ()) -> ProgressLog:
        """The progress log the program named (`progressFile`), or one that records nothing."""
        path, expect = p.get("progressFile"), p.get("progressExpect")
        return ProgressLog(path if known(path) and path else None,
                           secrets=[*self.secrets(p), *(s for s in secrets if s)],
                           expect=expect if known(expect) and isinstance(expect, Mapping) else None)

    def warn(self, text: str) -> None:
        """A warning `pulumi up` shows, redacted of the running operation's secrets."""
        pulumi.log.warn(redact_text(text, _ACTIVE.get()))

    # ---- the protocol's defaults ---------------------------------------------------------
    def check(self, olds: Dict[str, Any], news: Dict[str, Any]) -> CheckResult:
        return CheckResult(news, self.check_inputs(news))

    def diff(self, id_: str, olds: Dict[str, Any], news: Dict[str, Any]) -> DiffResult:
        o, n = self.inputs(olds), self.inputs(news)
        changed = self.changed(o, n)
        replaces = changed if self.REPLACE_ALL else [k for k in changed if k in self.REPLACE_KEYS]
        return DiffResult(changes=bool(changed) or self.drifted(olds, n), replaces=replaces,
                          stables=(list(self.STABLES) if not replaces else []) or None,
                          delete_before_replace=self.DELETE_BEFORE_REPLACE)

    def read(self, id_: str, props: Dict[str, Any]) -> ReadResult:
        """Refresh of a record: nothing to look up, the state as it is."""
        return ReadResult(id_, props)

    def update(self, id_: str, olds: Dict[str, Any], news: Dict[str, Any]) -> UpdateResult:
        """An update of a record: the new inputs over the old state (Pulumi's own default would
        return no outputs at all)."""
        return UpdateResult({**olds, **news})

    def delete(self, id_: str, props: Dict[str, Any]) -> None:
        """Forgetting a record: nothing to call."""


for _name in ("check", "diff", "read", "update", "delete"):  # the defaults are operations too
    setattr(Provider, _name, _operation(Provider.__dict__[_name]))


class DynamicResource(pulumi.dynamic.Resource):
    """A dynamic resource of a `Provider`: subclass it with `module=` and `name=` (the type
    token `pulumi-python:dynamic/<module>:<name>`) and pass the provider and the inputs."""

    def __init__(self, provider: Provider, resource_name: str, inputs: Mapping[str, Any],
                 opts: Optional[pulumi.ResourceOptions] = None):
        allowed = provider.input_defaults()
        unknown = sorted(set(inputs) - set(allowed)) if allowed else []
        if unknown:
            raise TypeError(f"{type(self).__name__}: unknown inputs {unknown}")
        props = {**{k: None for k in provider.OUTPUTS},
                 **{k: v for k, v in inputs.items() if v is not None}}
        if provider.SECRET_OUTPUTS:
            opts = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(
                additional_secret_outputs=list(provider.SECRET_OUTPUTS)))
        super().__init__(provider, resource_name, props, opts)
