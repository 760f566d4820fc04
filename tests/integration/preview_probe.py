"""A provider whose `check` tries to reach the host in its input and swallows the failure: the
hostile input of tests/integration/test_preview_unknowns.py's calls check (no_calls.py must
record the attempt). Not a double of anything; it keeps nothing."""

from __future__ import annotations

import socket

from components.dynamic.provider import Provider


class CallingCheck(Provider):
    def check_inputs(self, news):
        try:
            socket.create_connection((news["host"], 443), timeout=1).close()
        except OSError:
            pass  # what a careless provider does: the attempt still shows in the calls log
        return []
