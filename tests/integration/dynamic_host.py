"""Drive any Pulumi dynamic provider through Pulumi's own provider host, as the engine does.

`pulumi up` runs a dynamic resource's CRUD in a separate process: the engine starts
`python -m pulumi.dynamic`, which prints the port of a gRPC ResourceProvider server, then sends
Configure, Check, Diff, Create, Read, Update and Delete with the properties marshalled as
protobuf Structs; the provider itself travels as the `__provider` property, pickled by
`pulumi.dynamic.dynamic.serialize_provider`. `DynamicProviderHost` does exactly that without the
Pulumi CLI, so a test exercises the real host, the real (de)serialisation, pickling of the
provider, unknowns during preview and error propagation.

Usage:
    with DynamicProviderHost(env={...}) as host:
        host.configure({"ctyun:endpoint": url})
        provider = serialized(MyProvider())
        inputs, failures = host.check(urn, {}, {**props, "__provider": provider})
        id_, outs = host.create(urn, inputs)
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import grpc
from google.protobuf import struct_pb2
from pulumi.dynamic.dynamic import serialize_provider
from pulumi.runtime import rpc
from pulumi.runtime.proto import provider_pb2, provider_pb2_grpc

ROOT = Path(__file__).resolve().parents[2]
UNKNOWN = rpc.UNKNOWN
PROVIDER_KEY = "__provider"


def serialized(provider: Any) -> str:
    """The `__provider` property value, made the way `pulumi.dynamic.Resource` makes it."""
    return serialize_provider(provider)


def dynamic_urn(module_type: str, name: str, stack: str = "test",
                project: str = "kimi-k3") -> str:
    """URN of a dynamic resource, e.g. module_type='ctyun:HccCluster'."""
    return f"urn:pulumi:{stack}::{project}::pulumi-python:dynamic/{module_type}::{name}"


def to_struct(props: Mapping[str, Any]) -> struct_pb2.Struct:
    """Marshal plain values as the engine does (an unknown stays the UNKNOWN sentinel)."""
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(rpc.serialize_properties(dict(props), {}))
    finally:
        loop.close()


def from_struct(struct: struct_pb2.Struct) -> Dict[str, Any]:
    return rpc.deserialize_properties(struct, keep_unknowns=True)


class ProviderError(Exception):
    """The host answered a call with an error (its details carry the provider's traceback)."""

    def __init__(self, method: str, code: grpc.StatusCode, details: str):
        self.method, self.code, self.details = method, code, details
        last = details.strip().splitlines()[-1] if details.strip() else ""
        super().__init__(f"{method} failed ({code.name}): {last}")


class DynamicProviderHost:
    """`python -m pulumi.dynamic` as a child process, with typed calls over gRPC."""

    #: how the host is started after the interpreter: the engine's `-m pulumi.dynamic`
    #: (a subclass may start the same module after a prelude: `-c ... runpy.run_module(...)`)
    LAUNCH: Sequence[str] = ("-m", "pulumi.dynamic")

    def __init__(self, env: Optional[Mapping[str, str]] = None, cwd: Path = ROOT,
                 timeout_s: float = 120.0, args: Sequence[str] = ()):
        self.env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
        self.cwd, self.timeout_s = cwd, timeout_s
        self.args = list(args)  # the engine passes its own address as the only argument
        self.proc: Optional[subprocess.Popen] = None
        self.channel: Optional[grpc.Channel] = None
        self.stub: Optional[provider_pb2_grpc.ResourceProviderStub] = None

    def start(self) -> "DynamicProviderHost":
        self.proc = subprocess.Popen([sys.executable, *self.LAUNCH, *self.args],
                                     cwd=self.cwd,
                                     env=self.env, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE)
        line = self.proc.stdout.readline().decode().strip()
        if not line.isdigit():
            err = self.proc.stderr.read(4000).decode(errors="replace") if self.proc.poll() else ""
            self.stop()
            raise RuntimeError(f"pulumi.dynamic host did not print its port: {line!r} {err}")
        self.channel = grpc.insecure_channel(f"127.0.0.1:{line}")
        grpc.channel_ready_future(self.channel).result(timeout=30)
        self.stub = provider_pb2_grpc.ResourceProviderStub(self.channel)
        return self

    def stop(self) -> None:
        if self.channel is not None:
            self.channel.close()
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.terminate()
                try:
                    self.proc.wait(5)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait(5)
            for s in (self.proc.stdout, self.proc.stderr):
                if s:
                    s.close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def _call(self, method: str, request):
        try:
            return getattr(self.stub, method)(request, timeout=self.timeout_s)
        except grpc.RpcError as e:
            raise ProviderError(method, e.code(), e.details() or "") from None

    # -- the engine's calls ---------------------------------------------------------------
    def configure(self, config: Mapping[str, str]) -> provider_pb2.ConfigureResponse:
        """Stack config as the engine passes it (`variables` and `args`)."""
        return self._call("Configure", provider_pb2.ConfigureRequest(
            variables=dict(config), args=to_struct(config), acceptSecrets=True,
            acceptResources=True))

    def check(self, urn: str, olds: Mapping, news: Mapping) -> Tuple[Dict, List[Tuple[str, str]]]:
        r = self._call("Check", provider_pb2.CheckRequest(
            urn=urn, olds=to_struct(olds), news=to_struct(news)))
        return from_struct(r.inputs), [(f.property, f.reason) for f in r.failures]

    def diff(self, id_: str, urn: str, olds: Mapping, news: Mapping) -> provider_pb2.DiffResponse:
        return self._call("Diff", provider_pb2.DiffRequest(
            id=id_, urn=urn, olds=to_struct(olds), news=to_struct(news)))

    def create(self, urn: str, props: Mapping) -> Tuple[str, Dict]:
        r = self._call("Create", provider_pb2.CreateRequest(urn=urn, properties=to_struct(props),
                                                            timeout=self.timeout_s))
        return r.id, from_struct(r.properties)

    def read(self, id_: str, urn: str, props: Mapping,
             inputs: Optional[Mapping] = None) -> Tuple[str, Dict, Dict]:
        r = self._call("Read", provider_pb2.ReadRequest(
            id=id_, urn=urn, properties=to_struct(props), inputs=to_struct(inputs or {})))
        return r.id, from_struct(r.properties), from_struct(r.inputs)

    def update(self, id_: str, urn: str, olds: Mapping, news: Mapping) -> Dict:
        r = self._call("Update", provider_pb2.UpdateRequest(
            id=id_, urn=urn, olds=to_struct(olds), news=to_struct(news), timeout=self.timeout_s))
        return from_struct(r.properties)

    def delete(self, id_: str, urn: str, props: Mapping) -> None:
        self._call("Delete", provider_pb2.DeleteRequest(id=id_, urn=urn,
                                                        properties=to_struct(props),
                                                        timeout=self.timeout_s))
