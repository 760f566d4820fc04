"""tests/missing.py: a real part that cannot run fails the test under CI and is skipped only
on a developer machine (the project's rule: tests never skip for something missing in CI)."""

import pytest

from tests.missing import missing


def test_under_ci_a_missing_part_fails(monkeypatch):
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="cannot run under CI=true: needs root"):
        missing("needs root")


@pytest.mark.parametrize("ci", ["", "false"])
def test_elsewhere_it_is_skipped_with_the_reason(monkeypatch, ci):
    monkeypatch.setenv("CI", ci)
    with pytest.raises(pytest.skip.Exception, match="needs root"):
        missing("needs root")
