"""The add-on charts the GPU nodes need, their pinned versions and the values kimi-k3 passes.

Pure. Where the device plugins' pods land is decided by the charts' own defaults (their
values.yaml and templates) merged with our values, so those defaults are kept as data
(`chart_facts.yaml`, each with the upstream file, tag and commit it was read from) and every pin
must have an entry there. How the pairing works (docs/aws-eks.md, "Device plugins"):

- NVIDIA device plugin: the chart's *required* node affinity accepts a node labelled
  `nvidia.com/gpu.present=true` (or two Node Feature Discovery labels; NFD is not installed). The
  GPU node group carries that label (`GPU_NODE_LABELS`), so the default affinity is kept as is;
  its default tolerations already tolerate our `nvidia.com/gpu` taint. We add only a
  nodeSelector so it runs on our GPU nodes.
- EFA device plugin: its affinity is built from `supportedInstanceLabels` (instance types), not
  from an `affinity` value; the pinned version must list every instance type we offer. It
  runs only when a replica spans nodes (only then do pods request EFA devices) and needs our
  GPU toleration (its chart tolerates nothing but CriticalAddonsOnly).
- LWS controller: only for multi-node replicas; it runs on the system nodes.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Dict, List, Optional

import yaml

from ..inference.errors import ConfigError
from .layout import GPU_NODE_LABEL, GPU_TAINT as GPU_TOLERATION

FACTS_FILE = Path(__file__).with_name("chart_facts.yaml")

#: the NVIDIA chart's default required affinity matches this label (one of its three terms)
NVIDIA_PRESENT_LABEL = "nvidia.com/gpu.present"
#: labels of every GPU node (the node group sets them)
GPU_NODE_LABELS = {GPU_NODE_LABEL: "true", NVIDIA_PRESENT_LABEL: "true"}


@dataclass(frozen=True)
class Chart:
    """One Helm release: where the chart comes from, which version, our values."""

    release: str  # suffix of the Pulumi resource name (`<name>-<release>`)
    chart: str
    version: str
    repo: Optional[str]  # None when `chart` is a full oci:// reference
    namespace: str
    values: Dict[str, Any]
    create_namespace: bool = False
    #: wait for the release's pods: yes for LWS (its webhook must answer before a LeaderWorkerSet
    #: can be applied), no for DaemonSets on GPU nodes of a block that may start days later
    await_ready: bool = False


NVIDIA_DEVICE_PLUGIN_VERSION = "0.19.3"
EFA_DEVICE_PLUGIN_VERSION = "v0.5.30"
LWS_VERSION = "0.8.0"


@lru_cache(maxsize=1)
def facts() -> Dict[str, Any]:
    """chart_facts.yaml, parsed (libyaml's parser when PyYAML has it: the same data as
    yaml.safe_load, about 0.05 s sooner; tests/unit/test_aws_config.py compares them)."""
    return yaml.load(FACTS_FILE.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def chart_facts(chart: str, version: str) -> Dict[str, Any]:
    """The recorded facts of `chart` at `version`; KeyError naming what is missing."""
    try:
        return facts()[chart]["versions"][version]
    except KeyError:
        raise KeyError(f"no facts recorded for chart {chart} {version} in {FACTS_FILE.name}: read its "
                       "values.yaml and templates upstream and add them before pinning it") from None


def efa_supports(instance_type: str, version: str = EFA_DEVICE_PLUGIN_VERSION) -> bool:
    """Does the EFA chart at `version` schedule its plugin on `instance_type` by default?"""
    labels = chart_facts("aws-efa-k8s-device-plugin", version)["defaults"]["supportedInstanceLabels"]
    return instance_type in labels["values"]


def check_efa_supported(accelerator: str, instance_type: str) -> None:
    """Refuse a multi-node layout on an instance type the pinned EFA chart would never serve;
    the refusal quotes `kimi-k3:accelerator` (the caller requotes it as the user wrote it)."""
    if not efa_supports(instance_type):
        raise ConfigError("kimi-k3:accelerator", accelerator,
                          "use an accelerator whose instance type the EFA device plugin chart "
                          f"{EFA_DEVICE_PLUGIN_VERSION} lists (components/aws_eks/chart_facts.yaml), or "
                          "kimi-k3:nodes=1",
                          f"(instance type {instance_type}) is not in the pinned EFA device plugin's "
                          "supported instances")


def charts(multi_node: bool) -> List[Chart]:
    """The releases to install, in order, with exactly the values we pass."""
    chart_facts("nvidia-device-plugin", NVIDIA_DEVICE_PLUGIN_VERSION)  # every pin has its facts
    out = [Chart(
        "nvidia-device-plugin", "nvidia-device-plugin", NVIDIA_DEVICE_PLUGIN_VERSION,
        facts()["nvidia-device-plugin"]["repo"], "kube-system",
        # default affinity and tolerations kept (the node carries nvidia.com/gpu.present=true)
        {"nodeSelector": {GPU_NODE_LABEL: "true"}})]
    if multi_node:
        chart_facts("aws-efa-k8s-device-plugin", EFA_DEVICE_PLUGIN_VERSION)
        out.append(Chart(
            "efa-device-plugin", "aws-efa-k8s-device-plugin", EFA_DEVICE_PLUGIN_VERSION,
            facts()["aws-efa-k8s-device-plugin"]["repo"], "kube-system",
            {"nodeSelector": {GPU_NODE_LABEL: "true"}, "tolerations": [dict(GPU_TOLERATION)]}))
        chart_facts("lws", LWS_VERSION)
        out.append(Chart("lws", f"{facts()['lws']['repo']}/lws", LWS_VERSION, None, "lws-system", {},
                         create_namespace=True, await_ready=True))
    return out
