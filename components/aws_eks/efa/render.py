"""The EFA parts of the serving pods of a multi-node replica: resources, environment, the
userspace init container, the check that wraps `vllm serve`, their volumes and the scripts
ConfigMap. Pure dicts (render_k8s.py places them; the plan command writes them).

No value is pasted into shell text: the scripts come from the ConfigMap (`bash /kk3-efa/<script>`)
and take every value from the environment; the check runs the command it is given with `exec`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Dict, List

from . import transport as t

HERE = Path(__file__).resolve().parent
SCRIPTS = ("efa_check.sh", "efa_userspace.sh")
SCRIPTS_MOUNT = "/kk3-efa"
#: where the init container fills the userspace volume (mounted at /opt/amazon in vLLM's container)
INSTALL_MOUNT = "/kk3-efa-userspace"
SCRIPTS_VOLUME, USERSPACE_VOLUME = "efa-scripts", "efa-userspace"


def configmap_name(app: str) -> str:
    return f"{app}-efa-scripts"


def script_texts() -> Dict[str, str]:
    return {name: (HERE / name).read_text() for name in SCRIPTS}


def uses_efa(layout) -> bool:
    return layout.inter_node_transport == "efa" and layout.efa_per_node > 0


def _env(pairs) -> List[dict]:
    return [{"name": k, "value": v} for k, v in pairs]


def resources(layout) -> Dict[str, Dict[str, object]]:
    """Extra requests and limits: hugepages (requests = limits, as Kubernetes requires for them)
    and a memory request (no limit)."""
    if not uses_efa(layout):
        return {"requests": {}, "limits": {}}
    return {"requests": {"hugepages-2Mi": t.HUGEPAGES_2MI, "memory": t.MEMORY_REQUEST},
            "limits": {"hugepages-2Mi": t.HUGEPAGES_2MI}}


def vllm_env(layout) -> List[dict]:
    """NCCL's environment for the replica's transport (none on one node)."""
    if uses_efa(layout):
        return _env(t.efa_env(layout.efa_per_node))
    if layout.inter_node_transport == "tcp":
        return _env(t.tcp_env())
    return []


def command(layout, argv: List[str]) -> List[str]:
    """`vllm serve ...`, behind the EFA check when the replica uses EFA."""
    if not uses_efa(layout):
        return list(argv)
    return ["bash", f"{SCRIPTS_MOUNT}/efa_check.sh", *argv]


def vllm_mounts(layout) -> List[dict]:
    if not uses_efa(layout):
        return []
    out = [{"name": SCRIPTS_VOLUME, "mountPath": SCRIPTS_MOUNT, "readOnly": True}]
    if layout.efa_install:
        out.append({"name": USERSPACE_VOLUME, "mountPath": t.EFA_PREFIX, "readOnly": True})
    return out


def init_containers(spec, layout) -> List[dict]:
    """The EFA userspace from AWS's installer, unpacked in the serving image itself (its Ubuntu
    release picks the packages) into the volume vLLM's container mounts at /opt/amazon."""
    if not (uses_efa(layout) and layout.efa_install):
        return []
    env = {**t.installer_env(sha256=layout.efa_installer_sha256), "KK3_EFA_DEST": INSTALL_MOUNT}
    return [{"name": "efa-userspace", "image": spec.image,
             "command": ["bash", f"{SCRIPTS_MOUNT}/efa_userspace.sh"],
             "env": _env(env.items()),
             "volumeMounts": [{"name": SCRIPTS_VOLUME, "mountPath": SCRIPTS_MOUNT, "readOnly": True},
                              {"name": USERSPACE_VOLUME, "mountPath": INSTALL_MOUNT}]}]


def volumes(layout) -> List[dict]:
    if not uses_efa(layout):
        return []
    out = [{"name": SCRIPTS_VOLUME, "configMap": {"name": configmap_name(layout.name), "defaultMode": 0o555}}]
    if layout.efa_install:
        out.append({"name": USERSPACE_VOLUME, "emptyDir": {"sizeLimit": "2Gi"}})
    return out


def objects(layout) -> List[dict]:
    """The scripts ConfigMap (applied before the workload: the pods mount it)."""
    if not uses_efa(layout):
        return []
    return [{"apiVersion": "v1", "kind": "ConfigMap",
             "metadata": {"name": configmap_name(layout.name), "namespace": layout.namespace,
                          "labels": dict(layout.labels)},
             "data": script_texts()}]


class EfaParts:
    """This module's pieces as render_k8s's Interconnect (handed in with the layout: layout.py)."""

    resources = staticmethod(resources)
    vllm_env = staticmethod(vllm_env)
    command = staticmethod(command)
    init_containers = staticmethod(init_containers)
    volumes = staticmethod(volumes)
    vllm_mounts = staticmethod(vllm_mounts)
    objects = staticmethod(objects)


INTERCONNECT = EfaParts()
