"""The Node objects an EKS managed node group produces, from the inputs our program gives AWS.

Outside contract (AWS and Kubernetes documentation, not kimi-k3's code):
- EKS "Managed node groups": the node group's `labels` become Kubernetes node labels, and EKS
  adds `eks.amazonaws.com/nodegroup`, `eks.amazonaws.com/nodegroup-image` and
  `eks.amazonaws.com/capacityType`; its `taints` become node taints, with the EKS API's effect
  names mapped `NO_SCHEDULE`->`NoSchedule`, `NO_EXECUTE`->`NoExecute`,
  `PREFER_NO_SCHEDULE`->`PreferNoSchedule` ("Recipe: prevent pods from being scheduled on
  specific nodes" / the `Taint` type of the EKS API reference).
- Kubernetes "Well-Known Labels, Annotations and Taints": the kubelet and the AWS cloud provider
  set `kubernetes.io/arch`, `kubernetes.io/os`, `kubernetes.io/hostname`,
  `node.kubernetes.io/instance-type` (the EC2 instance type), `topology.kubernetes.io/zone`
  and `topology.kubernetes.io/region`.
- Device plugins (Kubernetes "Device Plugins"): extended resources appear in the node's
  allocatable only after the plugin for them runs on the node and registers; the NVIDIA plugin
  advertises one `nvidia.com/gpu` per GPU, the EFA plugin one `vpc.amazonaws.com/efa` per EFA
  device, i.e. per EFA interface attached to the instance (interface type `efa` or `efa-only`).
CPU and memory allocatable: the instance's vCPUs and memory less a generous reserve for the
kubelet and system daemons (EKS reserves well under 1 core and 10 GiB on these sizes).
Huge pages: "Amazon EC2 instances with the EFA driver installed pre-allocate 5128 2MiB Huge Pages,
which you can request as resources" (awsdocs/amazon-eks-user-guide latest/ug/ml/node-efa.adoc,
commit 3088c3d146859e8c0408d7d28a112c3d9f92252f): an instance with EFA interfaces advertises
`hugepages-2Mi` = 5128 x 2 MiB, and the kubelet takes pre-allocated huge pages out of `memory`
(Kubernetes "Manage HugePages").
"""

from __future__ import annotations

from typing import Any, Dict, Mapping

from .scheduler import Node

EKS_TAINT_EFFECTS = {"NO_SCHEDULE": "NoSchedule", "NO_EXECUTE": "NoExecute",
                     "PREFER_NO_SCHEDULE": "PreferNoSchedule"}
RESERVED_MILLICORES = 1000
RESERVED_BYTES = 10 * 2**30
EFA_HUGEPAGES_2MI = 5128


def node_from_node_group(name: str, node_group: Mapping[str, Any], instance_type: str, zone: str,
                         vcpus: int, memory_gib: int, efa: bool = False) -> Node:
    """A steady-state node of `node_group` (recorded Pulumi inputs, camelCase as registered);
    `efa`: the instance has EFA interfaces (the EFA driver pre-allocates its huge pages)."""
    labels: Dict[str, str] = {str(k): str(v) for k, v in (node_group.get("labels") or {}).items()}
    labels.update({
        "kubernetes.io/arch": "amd64", "kubernetes.io/os": "linux", "kubernetes.io/hostname": name,
        "node.kubernetes.io/instance-type": instance_type,
        "topology.kubernetes.io/zone": zone, "topology.kubernetes.io/region": zone[:-1],
        "eks.amazonaws.com/nodegroup": str(node_group.get("nodeGroupName") or "ng"),
        "eks.amazonaws.com/capacityType": str(node_group.get("capacityType") or "ON_DEMAND"),
    })
    taints = [{"key": t["key"], "value": t.get("value", ""), "effect": EKS_TAINT_EFFECTS[t["effect"]]}
              for t in node_group.get("taints") or []]
    huge = EFA_HUGEPAGES_2MI * 2 * 2**20 if efa else 0
    allocatable = {"cpu": vcpus * 1000 - RESERVED_MILLICORES, "memory": memory_gib * 2**30 - RESERVED_BYTES - huge}
    if efa:
        allocatable["hugepages-2Mi"] = huge
    return Node(name, labels, taints, allocatable)


def efa_interfaces(launch_template: Mapping[str, Any]) -> int:
    """EFA devices an instance of `launch_template` (recorded inputs) gets."""
    return sum(1 for n in launch_template.get("networkInterfaces") or []
               if n.get("interfaceType") in ("efa", "efa-only"))
