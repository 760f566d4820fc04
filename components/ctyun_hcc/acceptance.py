"""`AcceptanceGate`: the acceptance checks against the CTyun endpoint, after the Slurm service.

Type `pulumi-python:dynamic/ctyun:AcceptanceGate`. Declared after `SlurmService` (which waited
for /health, /v1/models and a chat answer), it runs components/accept's checks (health, models,
chat, stream, reasoning, tool_call, auth, and the load part sized by `kimi-k3:acceptLoad`):

- from the deployer when the endpoint answers TCP there (`via` = auto or direct);
- else over a local port forward through the master's SSH connection to node 0's port
  (`via` = auto or ssh): the head often has only a cluster address.

With several replicas (`kimi-k3:replicas` > 1) the endpoint is the router's front on the master
(`node0Addr` is then where the master reaches it) and `replicaAddrs` lists each replica's head
(its Slurm job's node-0 address, serving `replicaPort`): the checks run through the router, and
`greedy_replicas` asks each replica directly, once, over one forward per replica through the
master (their heads have only cluster addresses), comparing with the router's answers.

A failed check fails the create with "acceptance check <name> failed: <detail>", and the
service stays in the state (cancelled by `pulumi destroy`, or kept and checked again by the
next `pulumi up`, which runs only this gate again). A new job (its `jobId`), a changed
endpoint or load size runs the checks again; a refresh keeps the last result (it sends no
traffic). Output `acceptance`: the summary of components/accept/gate.py, plus `via`. Nothing
to delete.
"""

from __future__ import annotations

import socket
from contextlib import ExitStack
from typing import Any, Dict, Optional
from urllib.parse import urlsplit

import pulumi
import pulumi.dynamic
from pulumi.dynamic import CreateResult, UpdateResult

from .port_forward import LocalForward
from .ssh_resource import SECRET_OUTPUTS, SSH_INPUTS, SshStepProvider

STEP_INPUTS: Dict[str, Any] = {
    "endpoint": "", "node0Addr": "", "port": 0, "jobId": "", "servedModelName": "Kimi-K3",
    "apiKey": "", "loadRequests": 0, "loadConcurrency": 1, "loadMaxTokens": 64,
    "hardware": {}, "requestTimeoutS": 300, "via": "auto", "connectCheckS": 5,
    # behind the router: each replica's head address and the port the replicas serve on
    "replicaAddrs": [], "replicaPort": 0,
}
VIA = ("auto", "direct", "ssh")


def reachable(endpoint: str, timeout_s: float) -> bool:
    """Does the endpoint's host:port accept a TCP connection from here?"""
    parts = urlsplit(endpoint)
    try:
        socket.create_connection((parts.hostname, parts.port or 80), timeout=timeout_s).close()
        return True
    except OSError:
        return False


class AcceptanceGateProvider(SshStepProvider):
    STEP_INPUTS = STEP_INPUTS
    REPLACE_KEYS = ()
    DELETE_BEFORE_REPLACE = False

    SECRET_INPUTS = ("apiKey",)

    def resource_id(self, p, outs):
        return f"{p['endpoint']}:job-{p['jobId']}:accept"

    def _size(self, p):
        from ..accept.sizing import LoadSize

        n = int(p.get("loadRequests") or 0)
        return LoadSize(n, int(p["loadConcurrency"]), int(p["loadMaxTokens"])) if n else None

    def gate(self, p: Dict[str, Any], previous_key: Optional[str] = None) -> Dict[str, Any]:
        """Run the checks the way `via` says; the outputs, or raise naming the failed check.
        `previous_key`: the key before a rotation, which the auth check must see refused."""
        from ..accept.gate import (AcceptanceFailed, gate_config, known_kwargs, run_gate,
                                   usd_per_hour_input)

        via = p.get("via") or "auto"
        if via not in VIA:
            raise ValueError(f"via={via!r}: use one of {', '.join(VIA)}")
        key = p.get("apiKey") or None
        plog = self.progress(p)
        direct = via == "direct" or (via == "auto" and
                                     reachable(p["endpoint"], float(p["connectCheckS"])))

        def run(url: str, how: str, replicas=()):
            cfg = gate_config(url, p["servedModelName"], key, self._size(p),
                              dict(p.get("hardware") or {}) or None,
                              float(p["requestTimeoutS"]), replicas=replicas,
                              previous_key=previous_key, **known_kwargs(p))
            with plog.phase("accept-gate", f"acceptance checks on {p['endpoint']} ({how})") as ph:
                try:
                    out = run_gate(cfg, on_check=lambda r: ph.update(
                        f"{r.name}: {'ok' if r.ok else 'FAILED'}"), usd_per_hour=usd_per_hour_input(p))
                except AcceptanceFailed as e:
                    raise RuntimeError(f"{e} (endpoint {p['endpoint']}, {how})") from None
            return {**out, "endpoint": p["endpoint"], "via": how}

        addrs = [str(a) for a in p.get("replicaAddrs") or []]
        if direct and not addrs:
            return {"acceptance": run(p["endpoint"], "from the deployer")}
        with ExitStack() as stack:
            runner = stack.enter_context(self.runner(p))
            # one forward per replica head, through the master (cluster addresses only)
            replicas = [stack.enter_context(LocalForward(runner, a, int(p["replicaPort"]))).url
                        + "/v1" for a in addrs]
            if direct:
                return {"acceptance": run(p["endpoint"], "from the deployer", replicas)}
            fwd = stack.enter_context(LocalForward(runner, p["node0Addr"], int(p["port"])))
            how = f"over SSH to {p['node0Addr']}:{int(p['port'])}"
            return {"acceptance": run(fwd.url + "/v1", how, replicas)}

    # the gate needs SSH only when it forwards: create/update do not open a runner first
    def create(self, props):
        p = self.inputs(props)
        outs = self.gate(p)
        return CreateResult(self.resource_id(p, outs), {**p, **outs})

    def update(self, id_, olds, news):
        from ..accept.gate import previous_key_of

        o, n = self.inputs(olds), self.inputs(news)
        if any(o.get(k) != n.get(k) for k in STEP_INPUTS):
            outs = self.gate(n, previous_key_of(o, n))  # a new key: the old one must be refused
        else:
            outs = {"acceptance": olds.get("acceptance")}
        return UpdateResult({**n, **outs})

    # read: the base's (the record of the last gate; refresh does not re-run the checks)

    def delete(self, id_, props):
        return None


class AcceptanceGate(pulumi.dynamic.Resource, module="ctyun", name="AcceptanceGate"):
    """The acceptance checks; see the module docstring. Inputs: SSH_INPUTS + STEP_INPUTS."""

    acceptance: pulumi.Output[dict]

    def __init__(self, resource_name: str, inputs: Dict[str, Any],
                 opts: Optional[pulumi.ResourceOptions] = None):
        props = {**{k: None for k in {**SSH_INPUTS, **STEP_INPUTS}}, "progressFile": None,
                 **inputs, "acceptance": None}
        opts = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(
            additional_secret_outputs=SECRET_OUTPUTS + ["apiKey"]))
        super().__init__(AcceptanceGateProvider(), resource_name, props, opts)
