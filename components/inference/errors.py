"""Errors a user can act on.

Every refusal in kimi-k3 names the config key, the value received and the fix, in one line, so
that the plan command can print it and exit 2, and `pulumi preview` can stop before anything is
created. The value is quoted as the user wrote it (`shown`), or the message says the key is
unset; what Python made of it (`95.0`, `True`, `None`) is never what the user reads. Nothing
here imports Pulumi.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass


class _NotShown:
    """Stands for a value an error must not print (a secret, or a value of unknown meaning)."""

    def __repr__(self) -> str:
        return "<not shown>"


#: pass as `value` when the value may be a secret: the message says `<not shown>`
NOT_SHOWN = _NotShown()


@dataclass(frozen=True)
class Default:
    """The value an unset key took: shown as `key (not set, default VALUE)`."""

    value: object


#: text shown without quotes: a decimal number as typed (`95`, `0.9`, `1_000`, `1e309`), ASCII only
_BARE = re.compile(r"^-?[0-9]+(?:_[0-9]+)*(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?$")


def shown(value: object) -> str:
    """`value` on one line, in the spelling of a stack file: a number as typed, any other text
    in quotes with escapes (spaces, an empty value, look-alike digits and control characters
    show), flags as true/false, lists and objects as JSON.

    Refusals should carry the text the user wrote (`RawConfig.refuse`, `requote`); the typed
    forms are a fallback for values only known as typed (a provider's inputs at deploy time)."""
    if value is NOT_SHOWN:
        return repr(NOT_SHOWN)
    if isinstance(value, str):
        return value if _BARE.match(value) else repr(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float, list, tuple, dict)) or value is None:
        return json.dumps(value, default=str)
    return repr(value)


class KimiK3Error(Exception):
    """Base class for errors the user can fix by changing input."""


class ConfigError(KimiK3Error):
    """A stack config value is wrong: says which key, what value, and what to do.

    `value` is the value as written (None: the key is unset; `Default(v)`: unset, took `v`;
    `NOT_SHOWN`: a secret)."""

    def __init__(self, key: str, value: object, fix: str, problem: str = "is not valid"):
        self.key = key
        self.value = value
        self.fix = fix
        self.problem = problem
        super().__init__(self._message())

    def _message(self) -> str:
        if self.value is None:
            head = f"{self.key} (not set)"
        elif isinstance(self.value, Default):
            head = f"{self.key} (not set, default {shown(self.value.value)})"
        else:
            head = f"{self.key}={shown(self.value)}"
        return f"{head} {self.problem}; {self.fix}"

    def with_value(self, value: object) -> "ConfigError":
        """The same refusal (same class) quoting `value` instead."""
        other = type(self).__new__(type(self))  # not copy.copy: it would call __init__(message)
        other.__dict__.update(self.__dict__)
        other.value = value
        other.args = (other._message(),)
        return other


class PlanError(ConfigError):
    """The requested deployment cannot work on the requested hardware (e.g. it does not fit)."""
