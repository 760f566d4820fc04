"""aws-eks's inputs to the cold-start model (components/inference/coldstart.py). Pure data.

Neither figure is measured here; both are assumptions for the first real run to replace (the
GPU node's events and the mirror Job's progress lines show the real ones).
"""

from __future__ import annotations

from typing import Mapping, Optional

#: block start -> GPU node running pods: instance launch and boot, EKS join, NVIDIA/EFA device
#: plugins, pulling the vLLM image (assumption)
NODE_READY_S = 600

#: baseline network bandwidth (Gb/s) of the system node types the mirror Job may run on; the
#: "up to" burst figures do not hold for a copy of hours. NOT confirmed from here (the EC2
#: instance-type tables were not reachable): check `aws ec2 describe-instance-types
#: --instance-types m7i.xlarge --query 'InstanceTypes[].NetworkInfo.NetworkCards[].
#: BaselineBandwidthInGbps'`. What is confirmed (EC2 User Guide, "Amazon EC2 instance network
#: bandwidth"): traffic through an internet gateway is capped at 5 Gb/s for instances with
#: fewer than 32 vCPUs. Unknown types are not bounded.
SYSTEM_BASELINE_GBPS: Mapping[str, float] = {
    "m7i.large": 0.781, "m7i.xlarge": 1.562, "m7i.2xlarge": 3.125, "m7i.4xlarge": 6.25,
    "m7i.8xlarge": 12.5, "m7i.12xlarge": 18.75, "m7i.16xlarge": 25.0,
}


def mirror_fill_gb_per_s(system_instance_type: str, hub_gb_per_s: float) -> Optional[float]:
    """The mirror's fill rate: the hub's, bounded by the system node's baseline bandwidth."""
    gbps = SYSTEM_BASELINE_GBPS.get(system_instance_type)
    if gbps is None:
        return None
    return min(hub_gb_per_s, gbps / 8)
