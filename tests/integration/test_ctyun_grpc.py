"""The CTyun providers through Pulumi's real dynamic-provider host (`python -m pulumi.dynamic`)
over gRPC, driven as the engine drives them (ctyun_stack.Stack with a host engine).

Credentials and the endpoint reach the host only as stack config through Configure (the host's
environment has no CTYUN_* variables), the way `pulumi up` passes `ctyun:*` secret config.
Properties travel as protobuf Structs (numbers as floats), the providers are pickled by Pulumi's
own serializer, unknowns are the engine's sentinel.
"""

import os

import pytest
from pulumi.runtime.proto import provider_pb2

from components.ctyun_hcc import cluster as wiring
from components.ctyun_hcc import provider_runtime as rt
from components.ctyun_hcc.cluster_order import HccClusterOrderProvider
from components.ctyun_hcc.cluster_provider import HccClusterProvider
from tests.emulators.ctyun.harness import EmulatorProcess
from tests.emulators.ctyun.state import SUBNET, VPC
from tests.integration.ctyun_stack import PASSWORD, Stack
from tests.integration.dynamic_host import (PROVIDER_KEY, UNKNOWN, DynamicProviderHost,
                                            ProviderError, dynamic_urn, serialized)

TYPES = {"owner": "ctyun:HccStackOwner", "net": "ctyun:HccNetwork",
         "sg": "ctyun:HccSecurityGroup", "order": "ctyun:HccClusterOrder",
         "cluster": "ctyun:HccCluster"}


def urn(name):
    return dynamic_urn(TYPES[name], f"kimi-k3-hcc-{name}")


class HostEngine:
    """The engine's side of the protocol, over the real host."""

    def __init__(self, host):
        self.host = host

    def check(self, name, p, news):
        return self.host.check(urn(name), {}, {**news, PROVIDER_KEY: serialized(p)})

    def create(self, name, p, news):
        return self.host.create(urn(name), news)

    def diff(self, name, p, id_, olds, news):
        d = self.host.diff(id_, urn(name), olds, news)
        return d.changes == provider_pb2.DiffResponse.DIFF_SOME, list(d.replaces)

    def update(self, name, p, id_, olds, news):
        return self.host.update(id_, urn(name), olds, news)

    def read(self, name, p, id_, outs):
        rid, routs, _ = self.host.read(id_, urn(name), outs)
        return rid, routs

    def delete(self, name, p, id_, outs):
        self.host.delete(id_, urn(name), outs)


@pytest.fixture(scope="module")
def hosted():
    emu = EmulatorProcess(job_seconds=0.08).start()
    clean_env = {k: v for k, v in os.environ.items() if not k.startswith("CTYUN_")}
    host = DynamicProviderHost()
    host.env = {**clean_env, "PYTHONPATH": host.env["PYTHONPATH"]}
    try:
        host.start()
        host.configure({"ctyun:accessKey": emu.ak, "ctyun:secretKey": emu.sk,
                        "ctyun:endpoint": emu.url})
        yield emu, host
    finally:
        host.stop()
        emu.stop()


@pytest.fixture
def env(hosted):
    emu, host = hosted
    emu.reset()
    emu.settings(job_seconds=0.08)
    return emu, host


def test_whole_stack_up_resize_refresh_destroy_over_grpc(env):
    emu, host = env
    s = Stack(engine=HostEngine(host))
    out = s.up()
    assert out["computeNodeCount"] == 3 and out["rootPassword"] == PASSWORD
    assert emu.sk not in out[PROVIDER_KEY] and emu.ak not in out[PROVIDER_KEY]
    assert s.up(kimi={"nodes": "5"})["computeNodeCount"] == 4
    s.refresh()
    assert s.outs("cluster")["computeNodeCount"] == 4 and s.outs("cluster")["masterPublicIP"]
    assert s.up(kimi={"nodes": "5"})["computeNodeCount"] == 4   # refresh changed nothing
    s.destroy()
    report = emu.report()
    assert report["leakedTotal"] == 0 and report["foreignTouched"] == []
    assert [o["api"] for o in report["orders"]].count("hpc/create-cluster") == 1


def test_preview_with_unknown_inputs_judges_nothing_and_calls_nothing(env):
    emu, host = env
    s = Stack()
    cfg, _ = s.config()
    order_in = wiring.order_inputs(cfg, UNKNOWN, UNKNOWN, "k3-sg", UNKNOWN, "")
    inputs, failures = host.check(urn("order"), {}, {
        **order_in, PROVIDER_KEY: serialized(HccClusterOrderProvider())})
    assert failures == [] and rt.is_unknown(inputs["vpcID"])
    cl_in = wiring.cluster_inputs(cfg, VPC, SUBNET, UNKNOWN, UNKNOWN, UNKNOWN, UNKNOWN,
                                  UNKNOWN, UNKNOWN, "")
    _, failures = host.check(urn("cluster"), {}, {
        **cl_in, PROVIDER_KEY: serialized(HccClusterProvider())})
    assert failures == []
    olds = {**wiring.cluster_inputs(cfg, VPC, SUBNET, "job-1", "cl-1", "t", {}, "sg-1",
                                    PASSWORD, ""), "clusterUUID": "cl-1"}
    d = host.diff("cl-1", urn("cluster"), olds, {**olds, "orderedAt": UNKNOWN,
                                                  PROVIDER_KEY: serialized(HccClusterProvider())})
    assert list(d.replaces) == ["orderedAt"] and d.deleteBeforeReplace
    assert emu.calls() == {}  # neither check nor diff called the API


def test_check_failures_come_back_as_engine_failures_without_the_password(env):
    emu, host = env
    cfg, _ = Stack().config()
    bad = {**wiring.order_inputs(cfg, VPC, SUBNET, "k3-sg", "Abc12345!x", ""),
           "queueName": "default", "computeNodeCount": 50.0}
    _, failures = host.check(urn("order"), {}, {
        **bad, PROVIDER_KEY: serialized(HccClusterOrderProvider())})
    assert {p for p, _ in failures} == {"queueName", "rootPassword", "computeNodeCount"}
    assert "Abc12345!x" not in str(failures) and emu.calls() == {}


def test_an_api_refusal_reaches_the_engine_as_an_error_without_secrets(env):
    emu, host = env
    emu.settings(quota_bare_metal=2)
    s = Stack(engine=HostEngine(host))
    with pytest.raises(ProviderError) as e:
        s.up()
    assert "Hpc.Quota.Exceeded" in e.value.details
    assert PASSWORD not in e.value.details and emu.sk not in e.value.details
    s.destroy()
    assert emu.report()["leakedTotal"] == 0
