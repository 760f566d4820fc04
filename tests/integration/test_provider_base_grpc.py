"""The provider base's promises through Pulumi's real dynamic-provider host (`python -m
pulumi.dynamic` over gRPC, tests/integration/dynamic_host.py), and the CapacityBlock state written
before its inputs became camelCase (tests/golden/state/capacity_block.json, recorded with the code
of that time) meeting today's program and provider.

What the engine sees of a failed operation is the host's gRPC error, whose details are the whole
traceback (`_abort_with_traceback`); what a person sees besides is the host's stderr (log
records, `pulumi.log` and the progress echo end there). Neither may carry a secret.
"""

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import boto3
import pytest
from botocore.stub import Stubber
from pulumi.runtime.proto import provider_pb2

from components.aws_eks import capacity as cap
from components.offline.runner import run_program
from tests.integration.base_provider_probe import CREDENTIAL_ENV, BaseProbe
from tests.integration.dynamic_host import (PROVIDER_KEY, DynamicProviderHost, ProviderError,
                                            dynamic_urn, serialized)

PASSWORD, EXTRA, CREDENTIAL = "canary-root-pw-4c1d", "canary-extra-9b7e", "canary-cred-31f0"
RECORDED = json.loads((Path(__file__).resolve().parents[1] / "golden" / "state" /
                       "capacity_block.json").read_text())
BLOCK_URN = dynamic_urn("aws:CapacityBlock", "kimi-k3-capacity", stack="aws-eks")
CR = "cr-0123456789abcdef0"


def test_canary_through_the_host_errors_and_stderr_carry_no_secret(tmp_path):
    probe = serialized(BaseProbe())
    urn = dynamic_urn("test:BaseProbe", "probe")
    props = {PROVIDER_KEY: probe, "newName": "a", "fail": True, "rootPassword": PASSWORD,
             "extraSecret": EXTRA, "progressFile": str(tmp_path / "p.jsonl")}
    details = []
    with DynamicProviderHost(cwd=tmp_path, env={CREDENTIAL_ENV: CREDENTIAL}) as host:
        host.configure({})
        for call in (lambda: host.create(urn, props),
                     lambda: host.update("probe-1", urn, props, props),
                     lambda: host.delete("probe-1", urn, props),
                     lambda: host.create(urn, {**props, "fail": False, "waitS": 0.01,
                                               "createTimeoutS": 0.05})):
            with pytest.raises(ProviderError) as e:
                call()
            details.append(e.value.details)
        host.proc.terminate()
        _, err = (s.decode() for s in host.proc.communicate(timeout=10))
    assert all("Traceback" in d and "[secret]" in d for d in details)
    assert "keys ['extraSecret', 'fail', 'newName', 'progressFile', 'rootPassword']" in details[0]
    assert "gave up waiting for something that never comes: the deadline (the createTimeoutS " \
           "input) passed" in details[3] and "still nothing for [secret]" in details[3]
    assert "create: about to fail with [secret]" in err and "warning: create: warning" in err
    for canary in (PASSWORD, EXTRA, CREDENTIAL):
        assert not any(canary in d for d in details) and canary not in err
        assert canary not in (tmp_path / "p.jsonl").read_text()


@pytest.fixture(scope="module")
def program_inputs():
    """The CapacityBlock inputs today's program sends, adopting the recorded block and buying."""
    def block(run):
        found = [r for r in run.resources if r["type"] == "pulumi-python:dynamic/aws:CapacityBlock"]
        return found[0]["inputs"]

    return {"adopted": block(run_program("aws-eks", {"kimi-k3:capacityReservationId": CR})),
            "bought": block(run_program("aws-eks"))}


@pytest.mark.parametrize("mode", ["adopted", "bought"])
def test_an_up_over_state_with_the_old_input_names_changes_nothing(mode, program_inputs):
    """`pulumi up` after the rename, on a stack deployed before it: Check (old inputs, new
    inputs), then Diff (old state, checked inputs): no change, nothing replaced; `destroy`
    handles the old state too."""
    old = RECORDED[mode]
    provider = RECORDED["provider"]
    assert provider == serialized(cap.CapacityBlockProvider())  # the same class, by reference
    news = {**program_inputs[mode], PROVIDER_KEY: provider}
    assert "instanceType" in news and not {"instance_type", "reservation_id"} & set(news)
    with DynamicProviderHost() as host:
        host.configure({"aws:region": "us-east-2"})
        checked, failures = host.check(BLOCK_URN, {**old["inputs"], PROVIDER_KEY: provider}, news)
        assert failures == []
        d = host.diff(old["id"], BLOCK_URN, {**old["outputs"], PROVIDER_KEY: provider}, checked)
        assert d.changes == provider_pb2.DiffResponse.DIFF_NONE and list(d.replaces) == []
        # a real change over the old state is still seen (more nodes than the block holds)
        if mode == "adopted":
            more = host.diff(old["id"], BLOCK_URN, {**old["outputs"], PROVIDER_KEY: provider},
                             {**checked, "instanceCount": 2})
            assert more.changes == provider_pb2.DiffResponse.DIFF_SOME and list(more.replaces) == []
        host.delete(old["id"], BLOCK_URN, {**old["outputs"], PROVIDER_KEY: provider})


@pytest.fixture
def ec2(monkeypatch):
    client = boto3.client("ec2", region_name="us-east-2", aws_access_key_id="testing",
                          aws_secret_access_key="testing")
    monkeypatch.setattr(cap, "ec2_client", lambda props, max_attempts=5: client)
    monkeypatch.setattr(cap, "_now", lambda: datetime(2031, 6, 2, 12, 0, tzinfo=timezone.utc))
    with Stubber(client) as stub:
        yield stub
        stub.assert_no_pending_responses()


def _reservation(count=1):
    start = datetime(2031, 6, 2, 11, 30, tzinfo=timezone.utc)
    return {"CapacityReservationId": CR, "InstanceType": "p6-b300.48xlarge",
            "InstancePlatform": "Linux/UNIX", "AvailabilityZone": "us-east-2b",
            "TotalInstanceCount": count, "AvailableInstanceCount": count, "State": "active",
            "StartDate": start, "EndDate": start + timedelta(hours=24),
            "ReservationType": "capacity-block", "Tenancy": "default",
            "InstanceMatchCriteria": "targeted"}


def test_refresh_and_update_of_old_state_write_the_new_names(ec2, program_inputs):
    p = cap.CapacityBlockProvider()
    old = {**RECORDED["adopted"]["outputs"], PROVIDER_KEY: RECORDED["provider"]}
    ec2.add_response("describe_capacity_reservations", {"CapacityReservations": [_reservation()]},
                     {"CapacityReservationIds": [CR]})
    read = p.read(CR, old).outs
    assert (read["instanceType"], read["instanceCount"], read["reservationId"]) == \
        ("p6-b300.48xlarge", 1.0, CR)
    assert read["reservation_id"] == CR and read["state"] == "active"  # the block's outputs
    ec2.add_response("describe_capacity_reservations",
                     {"CapacityReservations": [_reservation(count=2)]}, {"CapacityReservationIds": [CR]})
    news = {**program_inputs["adopted"], "instanceCount": 2}
    updated = p.update(CR, old, news).outs
    assert updated["instanceCount"] == 2 and updated["instance_count"] == 2
    assert not {"duration_hours", "stack_identity"} & set(updated)
    bought = {**RECORDED["bought"]["outputs"], PROVIDER_KEY: RECORDED["provider"]}
    with pytest.raises(cap.CapacityError, match="does not fit Capacity Block"):
        p.diff(CR, bought, {**program_inputs["bought"], "instanceCount": 2})  # never buys twice
