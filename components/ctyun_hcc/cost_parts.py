"""What a ctyun-hcc stack bills per hour, counted from what its program registers (pure).

The A3 serving nodes, a separate E-HPC master when the order has one more node than serve, the
SFS file system and the EIP. Priced by components/cost (the catalog, its sources and dates):
`CtyunHcc.cost_parts`.
"""

from __future__ import annotations

from typing import Any, List, Mapping, Sequence

from ..cost.estimate import Part, inputs_of, part, positive_int


def ctyun_parts(resources: Sequence[Mapping[str, Any]], node_shape: str, nodes: int) -> List[Part]:
    parts = [part(f"ctyun:{node_shape}", nodes, "the serving nodes")]
    order = next((inputs_of(r) for r in resources
                  if r.get("type") == "pulumi-python:dynamic/ctyun:HccClusterOrder"), None)
    if order is None:
        return parts
    extra = positive_int(order.get("computeNodeCount")) + 1 - nodes
    if extra > 0:
        parts.append(part("ctyun:ehpc-master", extra, "a master outside the serving nodes"))
    if order.get("storageType") == "sfs" and positive_int(order.get("storageSizeGB")):
        parts.append(part("ctyun:sfs", 1, f"{order['storageSizeGB']} GB, {order.get('sfsType') or 'sfs'}"))
    if positive_int(order.get("eipBandwidthMbps")):
        parts.append(part("ctyun:eip", 1, f"{order['eipBandwidthMbps']} Mbit/s"))
    return parts
