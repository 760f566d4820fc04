"""Fixtures shared by the unit tests."""

import time

import pytest


@pytest.fixture
def shanghai(monkeypatch):
    """A deployer's machine in UTC+8 (time.tzset re-reads TZ); the local zone is restored after."""
    monkeypatch.setenv("TZ", "Asia/Shanghai")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()
