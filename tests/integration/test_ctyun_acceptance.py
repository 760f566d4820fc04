"""The CTyun acceptance gate against the real local sshd + 4-node Slurm, vLLM as its double.

SlurmService starts the job (head on kk3n0, 10.77.0.10, whose "public" address 127.0.0.1 does
not reach it from here), then AcceptanceGate runs the checks: over an SSH port forward through
the master when the endpoint does not answer from the deployer, directly when it does, and a
fault injected into the head's API fails the gate with the check's name. Run under
`flock /tmp/kk3-services.lock` (shared services).
"""

import base64

import pytest

from components.ctyun_hcc.acceptance import AcceptanceGateProvider, reachable
from components.ctyun_hcc.service import SlurmServiceProvider
from tests.integration.dynamic_host import DynamicProviderHost, dynamic_urn, serialized
from tests.integration.slurm_env import (
    API_KEY,
    clear_faults,
    host_key,
    inject_fault,
    no_leftovers,
    prepare,
    ssh_props,
)


def gate_props(services, out, **kw):
    props = ssh_props(services, hostKey=host_key(services), endpoint=out["endpoint"],
                      node0Addr=out["node0Addr"], port=11025, jobId=out["jobId"],
                      servedModelName="Kimi-K3", apiKey=API_KEY, loadRequests=8,
                      loadConcurrency=4, loadMaxTokens=16, requestTimeoutS=20,
                      hardware={"accelerator": "ascend-910c", "node_shape": "atlas-800-a3",
                                "nodes": 4})
    props.update(kw)
    return props


def test_gate_over_ssh_forward_and_directly(services, workspace, tmp_path):
    clear_faults(services)
    svc = SlurmServiceProvider()
    out = svc.create(prepare(services, workspace, api_key=True)).outs
    try:
        assert out["endpoint"] == "http://127.0.0.1:11025/v1" and not reachable(out["endpoint"], 2)
        gate = AcceptanceGateProvider()
        progress = tmp_path / "progress.jsonl"
        res = gate.create({**gate_props(services, out), "progressFile": str(progress)})
        acc = res.outs["acceptance"]
        assert acc["ok"] and acc["via"] == "over SSH to 10.77.0.10:11025", acc
        assert acc["checks"] == {n: True for n in ("health", "models", "chat", "stream",
                                                    "reasoning", "tool_call", "auth",
                                                    "arithmetic", "json_schema", "needle",
                                                    "greedy_repeat", "load")}
        assert acc["load"]["requests"] == 8 and acc["load"]["errors"] == 0
        assert [r["match"] for r in acc["reference"]] == ["exact"]
        assert acc["endpoint"] == out["endpoint"]
        text = progress.read_text()
        assert "accept-gate" in text and API_KEY not in text
        assert API_KEY not in repr(acc)

        # the head's cluster address answers from here: no SSH needed (no SSH inputs work)
        direct = gate_props(services, {**out, "endpoint": "http://10.77.0.10:11025/v1"},
                            sshPort=1, loadRequests=0)
        acc2 = gate.create(direct).outs["acceptance"]
        assert acc2["ok"] and acc2["via"] == "from the deployer" and acc2["load"] is None

        # nothing changed but the progress file: no new run; a new job id runs the checks again
        same = gate.update("x", res.outs, {**gate_props(services, out), "progressFile": "/x"})
        assert same.outs["acceptance"] == acc
        assert not gate.diff("x", res.outs, {**gate_props(services, out),
                                             "progressFile": "/x"}).changes
        assert gate.diff("x", res.outs, {**gate_props(services, out), "jobId": "999"}).changes

        # as under `pulumi up`: pickled into __provider, run by Pulumi's dynamic-provider host
        blob = serialized(AcceptanceGateProvider())
        assert API_KEY.encode() not in base64.b64decode(blob)
        with DynamicProviderHost(env={"SLURM_CONF": services["SLURM_CONF"]}) as host:
            urn = dynamic_urn("ctyun:AcceptanceGate", "kimi-k3-accept")
            inputs, failures = host.check(urn, {}, {**gate_props(services, out, loadRequests=4),
                                                    "__provider": blob})
            assert failures == []
            _, outs = host.create(urn, inputs)
        assert outs["acceptance"]["ok"] and outs["acceptance"]["load"]["requests"] == 4
    finally:
        svc.delete("x", out)
    no_leftovers(services)


def test_a_broken_tool_parser_fails_the_gate_by_name(services, workspace):
    clear_faults(services)
    inject_fault(services, "vllm_api", "broken_tool_json")  # the head's next start only
    svc = SlurmServiceProvider()
    out = svc.create(prepare(services, workspace, api_key=True)).outs  # readiness passes
    try:
        with pytest.raises(RuntimeError) as err:
            AcceptanceGateProvider().create(gate_props(services, out, loadRequests=0))
        msg = str(err.value)
        assert msg.startswith("acceptance check tool_call failed: ") and "not valid JSON" in msg
        assert "over SSH to 10.77.0.10:11025" in msg and API_KEY not in msg
    finally:
        svc.delete("x", out)
        clear_faults(services)
    no_leftovers(services)
