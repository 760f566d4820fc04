"""NCCL between the nodes of a replica: over EFA (the default), or over TCP sockets when asked for.

Pure data and functions. What AWS documents for NCCL over EFA on EKS, and what kimi-k3 takes:
- the pod requests every EFA device of the node (`vpc.amazonaws.com/efa`, advertised by the EFA
  device plugin) and `hugepages-2Mi` with a `memory` request ("Amazon EC2 instances with the EFA
  driver installed pre-allocate 5128 2MiB Huge Pages, which you can request as resources";
  AWS's two-node example requests `hugepages-2Mi: 5120Mi` and `memory: 32000Mi`:
  awsdocs/amazon-eks-user-guide latest/ug/ml/node-efa.adoc, commit
  3088c3d146859e8c0408d7d28a112c3d9f92252f); `IPC_LOCK`, since EFA pins memory;
- NCCL reaches EFA through the aws-ofi-nccl plugin and libfabric's `efa` provider. NCCL loads
  `libnccl-net-<NCCL_NET_PLUGIN>.so` ("we always install lib{n,r}ccl-net-ofi.so. To use the
  default shared library, either NCCL_NET_PLUGIN=lib{n,r}ccl-net-ofi.so or NCCL_NET_PLUGIN=ofi
  must be set": aws/aws-ofi-nccl v1.21.1 src/Makefile.am, commit
  2475c4c736907e68ebeadb3848f31231ee4a44d0); libfabric and the plugin must be on the library path;
- `FI_PROVIDER=efa`, `FI_EFA_USE_DEVICE_RDMA=1` and `FI_EFA_FORK_SAFE=1` are what AWS's samples
  set (aws-samples/awsome-distributed-training micro-benchmarks/nccl-tests/kubernetes/
  nccl-tests.yaml, commit 50820097a734ff9300a05149b6a60ed5eb7f91af); a current plugin forces the
  efa provider and fork safety itself and says the RDMA flag is no longer needed but harmless
  (aws-ofi-nccl v1.21.1 doc/efa-env-var.md, src/platform-aws.cpp), so setting them costs nothing
  and helps an older plugin. NCCL's buffer and chunk sizes are left to the plugin's p6-b300
  platform entry (src/platform-aws.cpp, from v1.21.0);
- `NCCL_DEBUG=INFO` (subsystems INIT and NET) so the log says which network NCCL uses (docs).

The stock serving image (vllm/vllm-openai) has no aws-ofi-nccl or libfabric (vLLM's
docker/Dockerfile installs neither; vllm-project/vllm#55635 reports the gap), so kimi-k3
installs the EFA userspace into the pod from AWS's EFA installer (efa_userspace.sh), as vLLM's
own tools/install_efa_userspace.sh does (commit c648b8bc2766ab29f20855cd5e83d3bed4105748, not
confirmed in a vLLM release), and checks it before vLLM starts (efa_check.sh).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Dict, List, Optional, Tuple

from ...inference.catalog import NodeShape

TRANSPORTS = ("efa", "tcp")
DEFAULT_TRANSPORT = "efa"

#: AWS's EFA installer: 1.51.0 (2026-10-22) ships libfabric 2.7.0amzn2.0, rdma-core 65.0 and
#: aws-ofi-nccl 1.22.0 (EC2 User Guide, "Elastic Fabric Adapter release notes", read 2026-12-01 in
#: its copy https://docs.amazonaws.cn/en_us/AWSEC2/latest/UserGuide/efa-changelog.md); aws-ofi-nccl has a
#: p6-b300 platform entry since 1.21.0. No sha256 of 1.51.0 could be found at a source kimi-k3 can
#: cite (searched 2026-12-02: the release notes list none; AWS ParallelCluster's cookbook pins one
#: per version it ships, cookbooks/aws-parallelcluster-environment/attributes/environment.rb, but
#: the newest found there is 1.41.0, aws/aws-parallelcluster-cookbook#2953), so none is pinned by default: the
#: download is trusted through TLS to efa-installer.amazonaws.com alone, every plan says so, and
#: `kimi-k3:efaInstallerSha256` pins it (`installer_pin`).
EFA_INSTALLER_VERSION = "1.51.0"
EFA_INSTALLER_URL = "https://efa-installer.amazonaws.com/aws-efa-installer-{version}.tar.gz"
#: where the EFA userspace sits in the serving container (the installer's own prefix)
EFA_PREFIX = "/opt/amazon"
#: serving images known to carry aws-ofi-nccl and libfabric (none of the catalog's yet)
IMAGES_WITH_EFA: frozenset = frozenset()

HUGEPAGES_2MI = "5120Mi"
#: a memory request next to hugepages (Kubernetes wants cpu or memory requested with them); no
#: memory limit: vLLM's host memory use is not capped
MEMORY_REQUEST = "32000Mi"

#: NCCL's own log lines that say which network a replica really uses (NCCL_DEBUG=INFO; every line
#: is prefixed `<host>:<pid>:<tid> NCCL INFO `). NVIDIA/nccl v2.30.7-1 src/init.cc ("Using network
#: %s"), src/plugin/net/net_v12.cc ("NET/Plugin: Loaded net plugin %s"); aws-ofi-nccl v1.21.1
#: src/nccl_ofi_net.cpp ("Selected provider is %s, fabric is %s (found %d nics)", prefixed
#: "NET/OFI ") and src/nccl_ofi_interface_nvidia.cpp (the plugin's name, "Libfabric"; "AWS
#: Libfabric" up to 1.11.0); src/transport/net_socket.cc ("NET/Socket : Using").
EFA_LOG_LINES = ("NCCL INFO Using network Libfabric", "NET/OFI Selected provider is efa",
                 "NET/Plugin: Loaded net plugin Libfabric")
TCP_LOG_LINES = ("NCCL INFO Using network Socket", "NET/Socket : Using")


@dataclass(frozen=True)
class InterNode:
    """What the plan assumes about traffic between the nodes of a replica (plan.json
    `plan.inter_node`, the summary's `inter-node` row)."""

    transport: str  # "efa" | "tcp"
    network: str  # how NCCL reaches the other node
    links_per_node: int
    assumed_gbps_per_node: Optional[int]
    bandwidth_source: str
    confirm_in_log: Tuple[str, ...]
    warning: str = ""

    def to_dict(self) -> dict:
        return asdict(self)

    def summary(self) -> str:
        """One line for the plan summary's `inter-node` row."""
        if self.transport == "efa":
            return (f"EFA: {self.network}; {self.links_per_node} EFA devices per node, "
                    f"{self.assumed_gbps_per_node:,} Gbps/node assumed (unconfirmed, see plan.json)")
        return f"TCP (EFA opted out): {self.network}; bandwidth not assumed"


def inter_node(shape: NodeShape, transport: str) -> InterNode:
    """The plan's statement for a replica over several `shape` nodes."""
    if transport == "efa":
        return InterNode(
            "efa", "NCCL over aws-ofi-nccl (NCCL network 'Libfabric') and libfabric's efa provider",
            shape.efa_network_cards, shape.network_gbps,
            f"{shape.network_gbps} Gbps per node is kimi-k3's catalog figure for {shape.key} "
            "(components/inference/catalog.py), which a third-party instance dataset agrees with; "
            "not confirmed from an AWS page. Check it: aws ec2 describe-instance-types "
            f"--instance-types {shape.key} --query 'InstanceTypes[0].NetworkInfo' "
            "(EfaInfo.MaximumEfaInterfaces, NetworkCards[].PeakBandwidthInGbps)",
            EFA_LOG_LINES)
    return InterNode(
        "tcp", "NCCL's own sockets on eth0 (the ENA interface of network card 0); no EFA device "
        "is requested", 1, None,
        "not assumed: card 0's share of the node's bandwidth is not stated by kimi-k3", TCP_LOG_LINES,
        warning=("kimi-k3:interNodeTransport=tcp: the nodes of a replica talk over TCP on eth0, not "
                 f"EFA ({shape.efa_network_cards} x EFA, {shape.network_gbps} Gbps/node unused); "
                 "pipeline traffic between nodes is slower; unset it to use EFA"))


#: the network NCCL must use over EFA: aws-ofi-nccl's plugin name. With NCCL_NET set, NCCL
#: initialises only the plugin of that name and fails ("Failed to initialize any NET plugin",
#: ncclInvalidUsage) instead of falling back to its own Socket transport when the plugin does not
#: load or finds no EFA device (NVIDIA/nccl src/init.cc reads NCCL_NET into config.netName;
#: src/plugin/net.cc at ebd1e929285881cb4df02c3459588a2e12b2d8c0 matches it with strcasecmp
#: against each plugin's name). "Libfabric" is the plugin's name since aws-ofi-nccl 1.12
#: ("AWS Libfabric" up to 1.11.0, which it still answers to when NCCL_NET says so:
#: nvidia_plugin_name_fixup in src/nccl_ofi_interface_nvidia.cpp); the EFA installer kimi-k3
#: unpacks ships 1.22.0
NCCL_NET_EFA = "Libfabric"


def efa_env(efa_devices: int) -> List[Tuple[str, str]]:
    """The serving container's environment for NCCL over EFA (the library path is prepended by
    efa_check.sh, which keeps the image's own). `NCCL_NET` makes a plugin or EFA failure at
    NCCL's initialisation an error, never a silent fall back to TCP (NCCL_NET_EFA). The three
    FI_* settings are what AWS's samples set; aws-ofi-nccl's EFA cheatsheet (doc/efa-env-var.md
    at 2daf7d303aa139a03140aa530957d10521e4478d) says its current versions need none of them
    (FI_PROVIDER=efa "for aws-ofi-nccl<=1.5.0", FI_EFA_FORK_SAFE "not needed anymore",
    FI_EFA_USE_DEVICE_RDMA=1 "not harmful to set it on p4/p5 instances with the newer software")."""
    return [("FI_PROVIDER", "efa"), ("FI_EFA_USE_DEVICE_RDMA", "1"), ("FI_EFA_FORK_SAFE", "1"),
            ("NCCL_NET_PLUGIN", "ofi"), ("NCCL_NET", NCCL_NET_EFA), ("NCCL_DEBUG", "INFO"),
            ("NCCL_DEBUG_SUBSYS", "INIT,NET"), ("KK3_EFA_DEVICES", str(efa_devices)), ("KK3_EFA_PREFIX", EFA_PREFIX)]


def tcp_env() -> List[Tuple[str, str]]:
    """NCCL on its socket transport (NCCL_NET names the network: "Socket" is NCCL's own)."""
    return [("NCCL_NET", "Socket"), ("NCCL_DEBUG", "INFO"), ("NCCL_DEBUG_SUBSYS", "INIT,NET")]


def installer_env(version: str = EFA_INSTALLER_VERSION, sha256: str = "") -> Dict[str, str]:
    env = {"KK3_EFA_INSTALLER_VERSION": version, "KK3_EFA_INSTALLER_URL": EFA_INSTALLER_URL.format(version=version)}
    if sha256:
        env["KK3_EFA_INSTALLER_SHA256"] = sha256  # efa_userspace.sh refuses another tarball (exit 5)
    return env


def installer_pin(sha256: str, version: str = EFA_INSTALLER_VERSION):
    """The EFA installer as config/pins.py records it: pinned by `kimi-k3:efaInstallerSha256`,
    else unverified and warned, with the one-liner that pins it."""
    from ...config.pins import PINNED, UNPINNED, Pin

    url = EFA_INSTALLER_URL.format(version=version)
    how = f"pulumi config set kimi-k3:efaInstallerSha256 $(curl -sSfL {url} | sha256sum | cut -d' ' -f1)"
    if sha256:
        return Pin(f"AWS's EFA installer {version}", url, PINNED, "kimi-k3:efaInstallerSha256", how)
    return Pin(f"AWS's EFA installer {version}", url, UNPINNED, "kimi-k3:efaInstallerSha256", how,
               f"the serving pods unpack AWS's EFA installer {version} ({url}) without checking a "
               "checksum: kimi-k3 found no published sha256 of it, so it is trusted through TLS to "
               f"efa-installer.amazonaws.com alone; pin what you reviewed: {how}")


def needs_userspace(image: str) -> bool:
    """Does the pod install the EFA userspace itself (the image does not carry it)?"""
    return image.partition("@")[0] not in IMAGES_WITH_EFA
