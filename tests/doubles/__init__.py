"""Test doubles for what cannot exist on a test machine (named as doubles, used only by tests)."""
