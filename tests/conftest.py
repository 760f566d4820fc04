"""Test-wide settings.

Hypothesis: in CI (`CI=true`, set by .ci/run) the property tests are derandomized, so a landing
is judged on the same examples every time and cannot fail on luck; elsewhere they explore with
fresh random examples (run the suite locally to find new counterexamples, then pin each one as
an explicit test).
"""

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, print_blob=True)
settings.register_profile("dev", print_blob=True)
settings.load_profile("ci" if os.environ.get("CI") else "dev")
