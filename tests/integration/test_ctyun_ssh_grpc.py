"""The SSH-driven CTyun resources through Pulumi's real dynamic-provider host over gRPC.

As under `pulumi up`: each provider is pickled into `__provider` by Pulumi's own serializer and
runs in `python -m pulumi.dynamic`; properties travel as protobuf Structs (numbers as floats).
Checks that the pickled providers work with no client or credential inside them, that the
host key pin and the serving job behave the same through the engine's protocol, and that the
secret inputs are never part of the pickled provider.
"""

import base64

from components.ctyun_hcc.bootstrap import HostKeyPinProvider
from components.ctyun_hcc.service import SlurmServiceProvider
from tests.integration.dynamic_host import DynamicProviderHost, dynamic_urn, serialized
from tests.integration.slurm_env import (
    API_KEY,
    host_key,
    instances,
    password_props,
    prepare,
    squeue_names,
)


def test_pin_and_service_through_the_provider_host(services, workspace):
    pin_provider = serialized(HostKeyPinProvider())
    svc_provider = serialized(SlurmServiceProvider())
    for blob in (pin_provider, svc_provider):
        raw = base64.b64decode(blob)
        assert API_KEY.encode() not in raw and b"BEGIN OPENSSH PRIVATE KEY" not in raw
    with DynamicProviderHost(env={"SLURM_CONF": services["SLURM_CONF"]}) as host:
        urn = dynamic_urn("ctyun:HostKeyPin", "kimi-k3-hostkey")
        inputs, failures = host.check(urn, {}, {**password_props(services),
                                                "__provider": pin_provider})
        assert failures == []
        pin_id, pin = host.create(urn, inputs)
        assert pin["hostKey"] == host_key(services)
        assert pin["loginKey"].startswith("-----BEGIN OPENSSH PRIVATE KEY-----")
        _, refreshed, _ = host.read(pin_id, urn, pin)
        assert refreshed["hostKey"] == pin["hostKey"]
        assert refreshed["loginKey"] == pin["loginKey"]
        host.delete(pin_id, urn, refreshed)

        urn = dynamic_urn("ctyun:SlurmService", "kimi-k3-service")
        props = {**prepare(services, workspace, api_key=True), "hostKey": pin["hostKey"],
                 "__provider": svc_provider}
        inputs, failures = host.check(urn, {}, props)
        assert failures == []
        svc_id, out = host.create(urn, inputs)
        assert out["endpoint"] == "http://127.0.0.1:11025/v1" and out["jobId"] in squeue_names()
        assert out["nodes"] == ["kk3n0", "kk3n1", "kk3n2", "kk3n3"]

        changed = {**inputs, "servedModelName": "Kimi-K3-other"}
        diff = host.diff(svc_id, urn, out, changed)
        assert "servedModelName" in diff.replaces and diff.deleteBeforeReplace
        same = host.diff(svc_id, urn, out, inputs)
        assert not same.replaces and same.changes != same.DIFF_SOME

        host.delete(svc_id, urn, out)
    assert out["jobId"] not in squeue_names()
    assert all(not names for names in instances(services).values())
