"""Several replicas on one CTyun cluster: one Slurm job each, behind the router on the master (pure).

With `kimi-k3:replicas` = N > 1 (docs/router.md, "On ctyun-hcc"):

- the cluster holds N x `kimi-k3:nodes` serving nodes (config.py) and every one of them gets
  the weights and the image (the broadcast covers all serving nodes);
- replica i is its own Slurm job, `--exclusive` on its nodes like the single one: replica 0
  keeps the single replica's job name and work directory, replica i > 0 is `<job>-r<i>` in
  `<workDir>/replica-<i>` (the scripts carry both, and each job's service step writes its
  scripts there), so no job adopts, cancels or overwrites another's;
- every replica's head serves on the replica port, `kimi-k3:port` + 1: the router's front takes
  `kimi-k3:port` on the master, and the master may be one replica's head (`masterInCompute`);
- the router (components/router/host.py) reaches each head at its job's node-0 address.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Dict, Tuple

from ..config.shared import RESERVED_PORTS, SharedSettings
from ..router.settings import ROUTER_METRICS_PORT, ROUTER_PORT
from .scripts import SlurmLayout
from .serve_config import HccServeConfig

#: the replicas' port is the endpoint's plus this
REPLICA_PORT_OFFSET = 1


def replica_port(shared: SharedSettings, serve: HccServeConfig) -> int:
    """The port vLLM serves on: `kimi-k3:port` for one replica, else the replica port (the
    front has `kimi-k3:port`). ConfigError, in one line naming kimi-k3:port, when either would
    meet a port something else on the master or the nodes takes."""
    if shared.replicas == 1:
        return shared.port
    taken: Dict[int, str] = {ROUTER_PORT: "the router's own port",
                             ROUTER_METRICS_PORT: "the router's metrics port",
                             int(serve.ssh_port): "kimi-k3:sshPort",
                             **{p: why for p, why in RESERVED_PORTS}}
    if serve.tls:
        taken[int(serve.tls_port)] = "kimi-k3:tlsPort"
    port = shared.port + REPLICA_PORT_OFFSET
    for p, what in ((shared.port, "the router's front"), (port, "the replicas (kimi-k3:port + 1)")):
        if p in taken or p > 65535:
            raise shared.refuse("port", "pick another kimi-k3:port (e.g. 11025)",
                                f"gives {what} port {p}, which is "
                                f"{taken.get(p, 'above 65535')}")
    return port


def replica_work_dir(work_dir: str, i: int) -> str:
    """Replica i's work directory (its scripts, its logs, its stop mark: resize.py)."""
    return work_dir if not i else f"{work_dir.rstrip('/')}/replica-{i}"


def replica_layouts(layout: SlurmLayout, replicas: int) -> Tuple[SlurmLayout, ...]:
    """Each replica's job name and work directory (replica 0's are the single replica's)."""
    return (layout,) + tuple(
        replace(layout, job_name=f"{layout.job_name}-r{i}",
                work_dir=replica_work_dir(layout.work_dir, i)).validate()
        for i in range(1, replicas))


def file_prefix(i: int) -> str:
    """Where replica i's scripts are among the rendered files ("" for replica 0)."""
    return f"replica-{i}/" if i else ""


def resource_suffix(i: int) -> str:
    """Replica i's service and gate names: replica 0 keeps the single replica's."""
    return f"-r{i}" if i else ""


def router_dir(serve: HccServeConfig) -> str:
    """The router's directory on the master (its units, its packages, its logs)."""
    return f"{serve.work_dir.rstrip('/')}/router"
