"""Golden files (tests/golden/): compare what the code renders with its golden file, or rewrite
the file, under one switch for the whole suite.

`KK3_UPDATE_GOLDEN=1 ./run test tests/unit` writes what the code renders now, for a reviewer to
read in `git diff`; unset (or 0), every golden test compares. The switch's retired names and any
other value stop the run (they would otherwise silently compare). Tests use the `golden` fixture
(tests/conftest.py): `golden.check(path, text)`.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
GOLDEN_SWITCH = "KK3_UPDATE_GOLDEN"
#: the names the switch had before there was one; set, they would silently compare instead
OLD_GOLDEN_SWITCHES = ("UPDATE_GOLDEN", "KIMI_K3_UPDATE_GOLDEN")


def update_golden(environ=os.environ) -> bool:
    """Whether golden files are rewritten (KK3_UPDATE_GOLDEN=1) or compared (unset or 0)."""
    for old in OLD_GOLDEN_SWITCHES:
        if old in environ:
            raise pytest.UsageError(f"{old} is not read; to rewrite the golden files set "
                                    f"{GOLDEN_SWITCH}=1 instead")
    value = environ.get(GOLDEN_SWITCH, "")
    if value not in ("", "0", "1"):
        raise pytest.UsageError(f"{GOLDEN_SWITCH}={value!r} is not a switch value; use "
                                f"{GOLDEN_SWITCH}=1 to rewrite the golden files, 0 or unset to "
                                "compare")
    return value == "1"


class Golden:
    """Compare rendered text with its golden file, or rewrite the file (the one switch)."""

    def __init__(self, update: bool):
        self.update = update

    def check(self, path: Path, text: str) -> None:
        shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
        if self.update:
            path.parent.mkdir(parents=True, exist_ok=True)
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                path.write_text(text, encoding="utf-8")
            return
        assert path.exists(), (f"missing golden file {shown}: review the output, then rerun "
                               f"with {GOLDEN_SWITCH}=1")
        assert text == path.read_text(encoding="utf-8"), (
            f"{shown} differs from what the code renders: review, then rerun with "
            f"{GOLDEN_SWITCH}=1")
