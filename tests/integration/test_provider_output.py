"""What a Python dynamic provider can show during `pulumi up`, observed on Pulumi's real host.

The engine starts `python -m pulumi.dynamic ENGINE_ADDRESS` and turns every line the host
writes to stdout (after the port) or stderr into a message of the stack's row
(sdk/go/common/resource/plugin/plugin.go, `runtrace`, pulumi/pulumi#18253). This test plays
the engine: it passes the address of a real Engine gRPC server and records what reaches it.
For pulumi==3.272.0 nothing does: the host configures its Settings without an engine, so
`pulumi.log` falls back to stderr, `ephemeral` and `debug` are lost, and `logging` below
WARNING vanishes. If a Pulumi upgrade changes this, this test fails: update docs/progress.md.
"""

import json
from concurrent import futures
from importlib.metadata import version

import grpc
from google.protobuf import empty_pb2
from pulumi.runtime.proto import engine_pb2_grpc

from tests.integration.dynamic_host import DynamicProviderHost, dynamic_urn, serialized
from tests.integration.output_probe import OutputProbe


class RecordingEngine(engine_pb2_grpc.EngineServicer):
    def __init__(self):
        self.logs = []

    def Log(self, request, context):
        self.logs.append((request.severity, request.message, request.ephemeral))
        return empty_pb2.Empty()


def test_only_stdout_and_stderr_leave_a_dynamic_provider(tmp_path):
    assert version("pulumi") == "3.272.0"  # the facts below are for this version
    engine = RecordingEngine()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    engine_pb2_grpc.add_EngineServicer_to_server(engine, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    progress = tmp_path / ".kimi-k3" / "progress" / "probe.jsonl"
    try:
        with DynamicProviderHost(cwd=tmp_path, args=[f"127.0.0.1:{port}"]) as host:
            host.configure({})
            host.create(dynamic_urn("test:OutputProbe", "probe"),
                        {"__provider": serialized(OutputProbe()), "progressFile": str(progress),
                         "apiKey": "canary-key-5e1f"})
            host.proc.terminate()
            out, err = (s.decode() for s in host.proc.communicate(timeout=10))
    finally:
        server.stop(0)
    assert engine.logs == []                         # no Log RPC: the host ignores the address
    err_lines = err.splitlines()
    assert "probe: engine client is None" in err_lines
    assert "info: probe: pulumi.log.info" in err_lines
    assert "info: probe: pulumi.log.info ephemeral" in err_lines   # printed, not ephemeral
    assert "warning: probe: pulumi.log.warn" in err_lines
    assert "error: probe: pulumi.log.error" in err_lines
    assert "probe: logging.warning" in err_lines                   # logging's last resort
    assert "probe: print to stderr" in err_lines
    assert "debug" not in err and "logging.info" not in err        # these vanish
    assert "probe: print to stdout" in out
    # what the project relies on: the record in the program's file, sparse lines on stderr
    events = [json.loads(line)["event"] for line in progress.read_text().splitlines()]
    assert events == ["start", "update", "done"]
    assert any(line.startswith("kimi-k3 progress: probe-wait: waiting for") for line in err_lines)
    assert "canary-key-5e1f" not in progress.read_text() + err
