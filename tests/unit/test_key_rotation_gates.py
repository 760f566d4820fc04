"""The gate of a `pulumi up` that changed kimi-k3:apiKey hands the previous key to the acceptance's
auth check (accept/gate.py previous_key_of), on both targets, and never keeps it.

The check itself against a server that still takes the old key: tests/integration/
test_accept_double.py; the rotation on the real sshd and Slurm: test_slurm_service.py.
"""

from __future__ import annotations

import pytest

OLD, NEW = "kk3-old-key-0123456789abcdefghijklmn", "kk3-new-key-0123456789abcdefghijklmn"


@pytest.mark.parametrize("old,new,previous", [(OLD, NEW, OLD), (NEW, NEW, None), ("", NEW, None)],
                         ids=["rotated", "same key", "no key before"])
def test_ctyun_gate_update_passes_the_previous_key(monkeypatch, old, new, previous):
    from components.ctyun_hcc.acceptance import AcceptanceGateProvider

    seen = []
    monkeypatch.setattr(AcceptanceGateProvider, "gate",
                        lambda self, p, previous_key=None: seen.append(previous_key) or {"acceptance": {"ok": True}})
    base = {"endpoint": "http://10.0.0.1:11025/v1", "jobId": "7", "apiKey": old}
    news = {**base, "apiKey": new, "jobId": "8"}
    out = AcceptanceGateProvider().update("x", base, news).outs
    assert seen == [previous]
    assert OLD not in repr({k: v for k, v in out.items() if k != "apiKey"})


@pytest.mark.parametrize("old,new,previous", [(OLD, NEW, OLD), (NEW, NEW, None)], ids=["rotated", "same key"])
def test_aws_gate_update_passes_the_previous_key_and_keeps_it_out_of_the_state(monkeypatch, old, new, previous):
    from components.aws_eks import readiness

    seen = []

    def gate(self, p, deadline_of, raise_on_fail=True):
        seen.append(p.get(readiness.PREVIOUS_KEY))
        return {"ready": True, "state": "serving"}

    monkeypatch.setattr(readiness.EndpointReadinessProvider, "_gate", gate)
    props = {"namespace": "kimi-k3", "serviceName": "kimi-k3-api", "budgetS": 60, "apiKey": new}
    out = readiness.EndpointReadinessProvider().update("x", {**props, "apiKey": old}, props).outs
    assert seen == [previous]
    assert readiness.PREVIOUS_KEY not in out and OLD not in repr(
        {k: v for k, v in out.items() if k != "apiKey"})
