"""Errors a user can act on.

Every refusal in kimi-k3 names the config key, the value received and the fix, in one line, so
that the plan command can print it and exit 2, and `pulumi preview` can stop before anything is
created. Nothing here imports Pulumi.
"""

from __future__ import annotations


class _NotShown:
    """Stands for a value an error must not print (a secret, or a value of unknown meaning)."""

    def __repr__(self) -> str:
        return "<not shown>"


#: pass as `value` when the value may be a secret: the message says `<not shown>`
NOT_SHOWN = _NotShown()


class KimiK3Error(Exception):
    """Base class for errors the user can fix by changing input."""


class ConfigError(KimiK3Error):
    """A stack config value is wrong: says which key, what value, and what to do."""

    def __init__(self, key: str, value: object, fix: str, problem: str = "is not valid"):
        self.key = key
        self.value = value
        self.fix = fix
        self.problem = problem
        super().__init__(f"{key}={value!r} {problem}; {fix}")


class PlanError(ConfigError):
    """The requested deployment cannot work on the requested hardware (e.g. it does not fit)."""
