"""components/dynamic/provider.py: what the base promises every dynamic provider, checked on a
probe provider (tests/integration/base_provider_probe.py) and on every real provider: nothing
kept on the object, `__provider` stripped, old input names read under the new ones, diff rules,
deadlines, and no secret in what an operation raises, logs, warns or records as progress."""

import base64
import logging
import traceback

import pulumi
import pytest
from pulumi.dynamic.dynamic import serialize_provider

from components.aws_eks.capacity import CapacityBlockProvider
from components.aws_eks.cleanup import LeftoverCheckProvider, LoadBalancerGoneProvider
from components.aws_eks.readiness import EndpointReadinessProvider
from components.aws_eks.scaling import BlockScalingProvider
from components.aws_eks.weights.notice import MirrorNoticeProvider
from components.ctyun_hcc import bootstrap
from components.ctyun_hcc.acceptance import AcceptanceGateProvider
from components.ctyun_hcc.cluster_order import HccClusterOrderProvider
from components.ctyun_hcc.cluster_provider import HccClusterProvider
from components.ctyun_hcc.network_provider import HccNetwork, HccNetworkProvider
from components.ctyun_hcc.owner_provider import HccStackOwnerProvider
from components.ctyun_hcc.service import SlurmServiceProvider
from components.ctyun_hcc.sg_provider import HccSecurityGroupProvider
from components.dynamic.provider import (OPERATIONS, UNKNOWN, Deadline, DeadlineExceeded,
                                         Provider)
from components.progress.record import read_records
from tests.integration.base_provider_probe import CREDENTIAL_ENV, BaseProbe

API_BACKED = (HccClusterProvider, HccClusterOrderProvider, HccSecurityGroupProvider,
              HccNetworkProvider, HccStackOwnerProvider, CapacityBlockProvider,
              LoadBalancerGoneProvider, LeftoverCheckProvider, EndpointReadinessProvider,
              BlockScalingProvider, MirrorNoticeProvider)
SSH_BACKED = (bootstrap.HostKeyPinProvider, bootstrap.MasterInQueueProvider,
              bootstrap.NvmeMountProvider, bootstrap.ModelWeightsProvider,
              bootstrap.SifImageProvider, bootstrap.BroadcastProvider, SlurmServiceProvider,
              AcceptanceGateProvider)
PASSWORD, EXTRA, CREDENTIAL = "canary-root-pw-4c1d", "canary-extra-9b7e", "canary-cred-31f0"


@pytest.mark.parametrize("cls", API_BACKED + SSH_BACKED, ids=lambda c: c.__name__)
def test_every_provider_is_on_the_base_and_keeps_nothing(cls):
    p = cls()
    assert isinstance(p, Provider)
    for name in OPERATIONS:
        assert getattr(getattr(cls, name), "_kk3_operation", False), name  # wrapped by the base
    assert vars(p) == {}
    with pytest.raises(AttributeError, match="keeps nothing"):
        p.client = object()  # a client (or credential) would be pickled into the state
    raw = base64.b64decode(serialize_provider(p))
    assert len(raw) < 200 and cls.__name__.encode() in raw  # by reference, no instance state


def test_provider_is_stripped_and_old_names_are_read_under_the_new():
    p = BaseProbe()
    old_state = {"__provider": "blob", "old_name": "a", "size_gb": 10.0, "seen": ["x"]}
    out = p.update("probe-1", old_state, {"__provider": "blob", "newName": "a", "sizeGb": 10})
    assert "__provider" not in out.outs["seen"] and out.outs["seenOlds"] == ["newName", "seen", "sizeGb"]
    assert p.create({"__provider": "blob", "newName": "a"}).outs == {"newName": "a", "seen": ["newName"]}
    assert p.read("probe-1", old_state).outs == {"newName": "a", "sizeGb": 10.0, "seen": ["x"]}
    check = p.check({"__provider": "blob", "old_name": "a"}, {"__provider": "blob", "newName": "a"})
    assert check.inputs == {"newName": "a"} and check.failures == []


def test_diff_compares_declared_inputs_and_reads_old_names():
    p = BaseProbe()
    old = {"__provider": "blob", "old_name": "a", "size_gb": 10.0, "progressFile": "/x.jsonl"}
    same = p.diff("probe-1", old, {"newName": "a", "sizeGb": 10, "progressFile": "/y.jsonl"})
    assert same.changes is False and same.replaces == []  # renamed inputs, steering only changed
    grown = p.diff("probe-1", old, {"newName": "a", "sizeGb": 20})
    assert grown.changes and grown.replaces == [] and grown.delete_before_replace is True
    assert p.diff("probe-1", old, {"newName": "b", "sizeGb": 10}).replaces == ["newName"]
    preview = p.diff("probe-1", old, {"newName": "a", "sizeGb": UNKNOWN})
    assert preview.changes and preview.replaces == []  # not known yet: a change


def test_every_old_input_name_of_the_capacity_block_is_read_under_its_new_name():
    """CapacityBlock's inputs were snake_case: state written before holds those names."""
    p = CapacityBlockProvider()
    renamed = {**p.RENAMED, **p.RENAMED_OUTPUT_NAMES}
    assert all(new[0].islower() and "_" not in new for new in renamed.values())
    old = {"instance_type": "p6-b300.48xlarge", "instance_count": 2.0, "reservation_id": "cr-1",
           "duration_hours": 24.0, "earliest_start": "e", "latest_start": "l",
           "max_upfront_fee_usd": 9.0, "stack_identity": "o/p/s", "purchased": False,
           "requested": {"instance_type": "p6-b300.48xlarge", "instance_count": 1.0}}
    up = p.upgrade(old)
    assert up["instanceType"] == "p6-b300.48xlarge" and up["instanceCount"] == 1.0  # as asked
    assert up["reservationId"] == "cr-1" and up["reservation_id"] == "cr-1"  # input and output
    assert (up["durationHours"], up["earliestStart"], up["latestStart"], up["maxUpfrontFeeUsd"],
            up["stackIdentity"]) == (24.0, "e", "l", 9.0, "o/p/s")
    assert not {"duration_hours", "earliest_start", "latest_start", "max_upfront_fee_usd",
                "stack_identity"} & set(up)
    assert p.upgrade({**old, "purchased": True})["reservationId"] is None  # bought: no input id


def test_deadline_from_the_operations_input_and_a_wait_within_it():
    p = BaseProbe()
    assert p.deadline({"createTimeoutS": 30}, "create").seconds == 30
    assert p.deadline({"timeoutS": 7}, "delete").seconds == 7             # the fallback input
    assert p.deadline({}, "delete").seconds == 5.0                        # the class default
    assert p.deadline({"createTimeoutS": UNKNOWN}, "create").seconds == 5.0
    now, slept = [100.0], []

    def sleep(s):
        slept.append(s)
        now[0] += s

    d = Deadline.after(10, "the timeoutS input (ctyun:deleteTimeoutS)", clock=lambda: now[0])
    with pytest.raises(DeadlineExceeded) as e:
        d.until("group sg-1 to be deleted", lambda: (False, None, "still listed"), 3, sleep)
    assert slept == [3, 3, 3, 1]                     # never sleeps past the deadline
    assert str(e.value) == ("gave up waiting for group sg-1 to be deleted: the deadline (the "
                            "timeoutS input (ctyun:deleteTimeoutS)) passed after 10.0 s (last "
                            "seen: still listed); raise the timeoutS input "
                            "(ctyun:deleteTimeoutS) or run `pulumi up` again")
    calls = iter([(False, None, "a"), (True, "done", "b")])
    assert Deadline.after(10, "x", clock=lambda: now[0]).until("y", lambda: next(calls), 1,
                                                               sleep) == "done"


def test_a_providers_deadline_raises_its_own_error():
    from components.ctyun_hcc.api.errors import CtyunError

    d = HccNetworkProvider().deadline({"timeoutS": 0}, "delete")
    assert d.seconds == Provider.DEFAULT_TIMEOUT_S  # 0 means the default, never "no time at all"
    late = Deadline(1, "s", at=0.0, clock=lambda: 5.0, error=HccNetworkProvider.DEADLINE_ERROR)
    with pytest.raises(CtyunError, match="the work may still finish on CTyun's side"):
        late.until("x", lambda: (False, None, "y"), 1, lambda s: None)


def test_canary_nothing_an_operation_says_carries_a_secret(tmp_path, monkeypatch, caplog):
    """A failing operation logs, warns, records progress and raises text made of its secrets:
    a secret-named input, a declared secret input, and the credential it reads at call time."""
    monkeypatch.setenv(CREDENTIAL_ENV, CREDENTIAL)
    warned = []
    monkeypatch.setattr(pulumi.log, "warn", lambda text, *a, **k: warned.append(text))
    progress = tmp_path / "p.jsonl"
    props = {"__provider": "blob", "newName": "a", "fail": True, "rootPassword": PASSWORD,
             "extraSecret": EXTRA, "progressFile": str(progress)}
    for op in ("create", "update", "delete"):
        caplog.clear()
        args = {"create": (props,), "update": ("probe-1", props, props),
                "delete": ("probe-1", props)}[op]
        with caplog.at_level(logging.WARNING, logger="kimi_k3.probe"):
            with pytest.raises(RuntimeError) as e:
                getattr(BaseProbe(), op)(*args)
        shown = "".join(traceback.format_exception(e.value)) + repr(e.value.__cause__)
        assert "__provider" not in shown and "[secret]" in shown
        logged = " ".join(r.getMessage() for r in caplog.records)
        assert "[secret]" in logged
        for canary in (PASSWORD, EXTRA, CREDENTIAL):
            assert canary not in shown, (op, shown)
            assert canary not in logged and canary not in " ".join(warned)
    text = progress.read_text()
    assert len(read_records(str(progress))) >= 6 and "[secret]" in text
    assert not any(c in text for c in (PASSWORD, EXTRA, CREDENTIAL))


def test_a_resource_refuses_inputs_its_provider_does_not_take():
    with pytest.raises(TypeError, match=r"HccNetwork: unknown inputs \['vpcId'\]"):
        HccNetwork("net", {"regionID": "r", "vpcId": "vpc-1"})
