"""Fault matrix: each fault x create/expand/shrink/delete ends converged with zero leaks."""

import pytest

from tests.integration.ctyun_fault_matrix import run_scenario, scenarios
from tests.integration.ctyun_fixtures import emu, emulator  # noqa: F401


@pytest.mark.parametrize("fault,op", scenarios())
def test_fault_then_retry_converges_without_leaks(emu, fault, op):  # noqa: F811
    result = run_scenario(emu, fault, op)
    assert result["converged"], result["errors"]
    assert result["most_clusters"] <= 1, "a fault made the provider order a second cluster"
    assert result["leaked"] == 0, result["inventory"]
    if fault in ("http500", "http502", "throttle", "drop", "lost_response"):
        # transient faults are absorbed by the client's retries: no error reaches the user
        assert result["errors"] == []
    if fault in ("fail_job", "slow_job"):
        assert len(result["errors"]) == 1  # the user sees one clear error, the re-run succeeds
