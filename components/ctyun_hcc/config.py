"""The `ctyun:*` stack config (and the CTyun exposure keys), parsed and checked before any
resource is registered (pure).

`parse_hcc_config(raw, shared, organization=..., project=...)` turns the raw `ctyun:*` values
(prefix stripped, strings or JSON values) plus the shared `kimi-k3:*` settings into a typed
`HccConfig`, or raises ConfigError naming the key, the value (never a secret's) and the fix.
Every rule is CTyun's documented one (api/rules.py), the same function the providers' `check`
calls, so a value is refused here when it is known at program time and again in `check`.

What only a real deployment needs (`ctyun:regionId`, `ctyun:azName`, `ctyun:rootPassword`) may
be missing here, so the offline plan works from the stack file as shipped (and warns); a real
preview stops on their absence in the program, in one line (cluster.py `account_requirement`),
and the providers' `check` refuses it again, before anything is created.

Default names are unique to the stack and computed here, in the program, from organization,
project and stack (ownership.py); a provider never derives names (its host reports the stack
as "stack").

Exposure: `kimi-k3:allowedCidrs` opens only the model port; `kimi-k3:sshAllowedCidrs` (a target
key) opens SSH. Both pass `settings.check_exposure`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Dict, Iterable, Mapping, Optional, Tuple

from ..config.keys import unknown_key
from ..config.shared import SharedSettings, check_exposure
from ..config.values import RawConfig, cidrs
from . import raid
from .api import rules
from .api.transport import check_endpoint
from .ownership import Names, default_cluster_name, names_for

STORAGE_TYPES = ("sfs", "oceanfs")
SECRET_KEYS = frozenset({"rootPassword", "accessKey", "secretKey"})
#: what the offline plan puts in place of a secret it cannot decrypt (components/offline/runner.py)
OFFLINE_SECRET = "[secret]"
KNOWN_KEYS = frozenset({
    "regionId", "azName", "clusterName", "clusterType", "adoptClusterUuid",
    "vpcId", "subnetId", "vpcCidr", "subnetCidr", "subnetType", "securityGroup",
    "storageType", "storageSizeGb", "storageName", "sfsType", "storageUid",
    "specification", "masterSpecification", "image", "masterImage", "queueName",
    "masterInCompute", "onDemand", "cycleType", "cycleCount", "publicIp", "eipBandwidthMbps",
    "localSystemRaid", "localDataRaid", "bmsDeviceType",
    "localSystemVolumeRaidUuid", "localDataVolumeRaidUuid", "cloudSystemDiskType",
    "cloudSystemDiskSizeGb", "systemDiskType", "systemDiskSizeGb",
    "endpoint", "createTimeoutS", "updateTimeoutS", "deleteTimeoutS", "lostAnswerWaitS",
    "pollIntervalS",
}) | SECRET_KEYS
SSH_CIDRS_KEY = "kimi-k3:sshAllowedCidrs"
#: compute nodes one cluster may hold (what HccCluster's `check` accepts: cluster_provider.py)
MAX_COMPUTE_NODES = 1000


@dataclass(frozen=True)
class HccConfig:
    """Everything the CTyun E-HPC cluster needs, except secrets. Units are in the names."""

    #: None until set: the offline plan needs no account; `pulumi preview` stops at `check`
    region_id: Optional[str]
    az_name: Optional[str]
    names: Names
    #: "create" (a VPC owned by the stack) or an existing VPC id
    vpc_id: str
    #: "create" (a subnet owned by the stack, in `vpc_id`) or an existing subnet id
    subnet_id: str
    #: "create" (a group of this stack with only the needed rules) or an existing group id
    security_group: str
    #: compute nodes wanted (`kimi-k3:nodes x kimi-k3:replicas`, less the master when it
    #: serves); the create order carries at most 49 (doc 23930), the rest are added by expand
    #: right after
    compute_node_count: int
    ssh_cidrs: Tuple[str, ...] = ()
    endpoint_cidrs: Tuple[str, ...] = ()
    #: SSH must be reachable from `ssh_cidrs` (False when a bastion is configured)
    ssh_required: bool = True
    cluster_type: str = ""
    adopt_cluster_uuid: str = ""
    vpc_cidr: str = "192.168.0.0/16"
    subnet_cidr: str = "192.168.0.0/24"
    subnet_type: str = "common"
    storage_type: str = "sfs"
    storage_size_gb: int = 500
    storage_name: str = ""
    sfs_type: str = "performance"
    storage_uid: str = ""
    specification: str = ""
    master_specification: str = ""
    image: str = ""
    master_image: str = ""
    queue_name: str = "batch"
    master_in_compute: bool = True
    on_demand: bool = True
    cycle_type: str = ""
    cycle_count: int = 0
    eip_bandwidth_mbps: int = 100
    server_fields: Tuple[Tuple[str, object], ...] = field(default_factory=tuple)
    endpoint: Optional[str] = None
    create_timeout_s: int = 7200
    update_timeout_s: int = 5400
    delete_timeout_s: int = 3600
    #: after an order's answer is lost: how long a listing may take to show what it made
    lost_answer_wait_s: int = 900
    poll_interval_s: int = 30
    #: `kimi-k3:replicas`: Slurm jobs of `replica_nodes` nodes each, behind the router on the
    #: master (docs/router.md)
    replicas: int = 1
    #: `ctyun:rootPassword` was given (its value is never kept here)
    root_password_set: bool = False

    @property
    def cluster_name(self) -> str:
        return self.names.cluster

    @property
    def serving_nodes(self) -> int:
        """Nodes that run vLLM, every replica's: compute nodes, plus the master when it joins
        the queue."""
        return self.compute_node_count + (1 if self.master_in_compute else 0)

    @property
    def replica_nodes(self) -> int:
        """Nodes of one replica (`kimi-k3:nodes`): what the planner plans for."""
        return self.serving_nodes // self.replicas

    @property
    def order_count(self) -> int:
        return min(self.compute_node_count, rules.CREATE_ORDER_COUNT[1])


def _problem(src: RawConfig, key: str, problem: Optional[str], fix: str, default=None) -> None:
    """Raise the refusal of `key` when a documented rule (api/rules.py) reports a problem."""
    if problem:
        raise src.refuse(key, fix, problem, default)


def _id(src: RawConfig, key: str, prefix: str) -> str:
    value = src.text(key, "create")
    if value != "create" and not value.startswith(prefix):
        raise src.refuse(key, f"give an id ({prefix}...) or create", "is not a CTyun id")
    return value


def parse_hcc_config(raw: Mapping[str, object], shared: SharedSettings,
                     other_known: Iterable[str] = (), organization: str = "organization",
                     project: str = "kimi-k3") -> HccConfig:
    """Typed, checked `HccConfig` from the raw `ctyun:*` config and the shared settings.

    `other_known` names `ctyun:*` keys that other modules parse (the bootstrap's); any key in
    neither set is refused as a likely misspelling.
    """
    for key in sorted(set(raw) - KNOWN_KEYS - set(other_known)):
        # never the value: a misspelt key may hold a secret (ctyun:rootPasword)
        raise unknown_key("ctyun", key, sorted(KNOWN_KEYS | set(other_known)), "docs/ctyun-hcc.md")
    src = RawConfig("ctyun", raw, secret=SECRET_KEYS)
    names = _names(src, default_cluster_name(organization, project, shared.stack))
    network = _network(src)
    storage = _storage(src, names)
    master_in_compute, compute = _compute_nodes(src, shared)
    queue = src.text("queueName", "batch")
    _problem(src, "queueName", rules.queue_name_problem(queue),
             "use 1-15 letters, digits and '_' starting with a letter, not 'default' (e.g. batch)")
    billing = _billing(src)
    server = _server_fields(src)
    _check_password(src)
    endpoint = src.text("endpoint")
    if endpoint:  # https, no credentials, query or fragment (printed without them)
        check_endpoint("ctyun:endpoint", endpoint)
    ssh = _exposure(shared)
    adopt = src.text("adoptClusterUuid", "")
    if adopt and not adopt.startswith("cl-"):
        raise src.refuse("adoptClusterUuid", "give the cluster's UUID (cl-...) from "
                         "hpc/list-clusters", "is not a cluster UUID")
    return HccConfig(
        region_id=src.text("regionId"), az_name=src.text("azName"), names=names,
        compute_node_count=compute, ssh_cidrs=ssh, endpoint_cidrs=tuple(shared.allowed_cidrs),
        ssh_required=not str(shared.target_config.get("sshBastion") or "").strip(),
        cluster_type=src.text("clusterType", ""), adopt_cluster_uuid=adopt,
        subnet_type=_subnet_type(src, storage["storage_type"], storage["storage_uid"]),
        sfs_type=src.choice("sfsType", rules.SFS_TYPES, "performance"),
        specification=src.text("specification", ""),
        master_specification=src.text("masterSpecification", ""),
        image=src.text("image", ""), master_image=src.text("masterImage", ""),
        queue_name=queue, master_in_compute=master_in_compute, server_fields=server,
        endpoint=endpoint, replicas=shared.replicas, **network, **storage, **billing, **_timeouts(src),
        root_password_set=src.raw.get("rootPassword") not in (None, ""),
    )


def _names(src: RawConfig, default: str) -> Names:
    """The cluster's name and the names derived from it (VPC, subnet, group, storage)."""
    name = src.text("clusterName", default)
    fix = "pick another name (2-20 letters, digits and '-', starting with a letter)"
    _problem(src, "clusterName", rules.cluster_name_problem(name), fix, default)
    names = names_for(name)
    for what, value in (("VPC", names.vpc), ("subnet", names.subnet),
                        ("security group", names.security_group)):
        problem = rules.vpc_name_problem(value)
        _problem(src, "clusterName", problem and f"gives the {what} name {value!r}, which {problem}",
                 "pick another cluster name", default)
    return names


def _network(src: RawConfig) -> Dict[str, str]:
    """The VPC, subnet and security group: ids to adopt, or `create` with these ranges."""
    vpc, subnet = _id(src, "vpcId", "vpc-"), _id(src, "subnetId", "subnet-")
    if vpc == "create" and subnet != "create":
        raise src.refuse("subnetId", "leave it unset (a subnet is created in the new VPC) or give "
                         "ctyun:vpcId", "cannot belong to a VPC still to be created")
    fix = "give a CIDR such as 192.168.0.0/24"
    vpc_cidr = src.cidr("vpcCidr", "192.168.0.0/16", fix)
    subnet_cidr = src.cidr("subnetCidr", "192.168.0.0/24", fix)
    if vpc == "create" and not subnet_cidr.subnet_of(vpc_cidr):
        raise src.refuse("subnetCidr", f"pick a range inside ctyun:vpcCidr ({vpc_cidr})",
                         "is not inside the VPC", default=str(subnet_cidr))
    sg = src.text("securityGroup", "create")
    if sg != "create" and not sg.startswith("sg-"):
        raise src.refuse("securityGroup", "give a group id (sg-...) or create",
                         "is not a CTyun security group id")
    return {"vpc_id": vpc, "subnet_id": subnet, "security_group": sg,
            "vpc_cidr": str(vpc_cidr), "subnet_cidr": str(subnet_cidr)}


def _storage(src: RawConfig, names: Names) -> Dict[str, object]:
    """The shared file system: type, size within the type's documented limits, name."""
    storage_type = src.choice("storageType", STORAGE_TYPES, "sfs")
    storage_uid = src.text("storageUid", "")
    lo, hi = rules.OCEANFS_GB if storage_type == "oceanfs" else rules.SFS_GB
    size = src.integer("storageSizeGb", 500, lo, hi)
    storage_name = src.text("storageName", names.storage)
    _problem(src, "storageName", rules.fs_name_problem(storage_name),
             "use 2-255 letters, digits and '-', starting with a letter", names.storage)
    return {"storage_type": storage_type, "storage_uid": storage_uid, "storage_size_gb": size,
            "storage_name": storage_name}


def _compute_nodes(src: RawConfig, shared: SharedSettings) -> Tuple[bool, int]:
    """(masterInCompute, compute nodes): every replica's `kimi-k3:nodes`, the master serving as
    one of them by default (replicas=2 with 4 nodes: the master and 7 compute nodes)."""
    master_in_compute = src.boolean("masterInCompute", True)
    total = shared.nodes * shared.replicas
    compute = total - 1 if master_in_compute else total
    if compute < 1:
        raise shared.refuse("nodes", "use at least 2 nodes, or set ctyun:masterInCompute=false",
                            "leaves no compute node (E-HPC's large-model edition needs one)")
    if compute > MAX_COMPUTE_NODES:  # the cluster resource's own bound (cluster_provider.check)
        raise shared.refuse("replicas", f"use at most {MAX_COMPUTE_NODES // shared.nodes} "
                            f"replicas of {shared.nodes} nodes",
                            f"needs {compute} compute nodes ({shared.replicas} x {shared.nodes}"
                            f"{' less the master' if master_in_compute else ''}); a cluster "
                            f"holds at most {MAX_COMPUTE_NODES}")
    return master_in_compute, compute


def _billing(src: RawConfig) -> Dict[str, object]:
    """On demand, or a subscription (cycle type and count); the public IP's bandwidth."""
    on_demand = src.boolean("onDemand", True)
    cycle_type, cycle_count = "", 0
    if not on_demand:
        if not src.given("cycleType"):
            raise src.refuse("cycleType", f"use one of {', '.join(rules.CYCLE_COUNT)}",
                             "is required for a subscription")
        cycle_type = src.choice("cycleType", tuple(rules.CYCLE_COUNT), None)
        lo, hi = rules.CYCLE_COUNT[cycle_type]
        cycle_count = src.integer("cycleCount", None, lo, hi)
        if cycle_count is None:
            raise src.refuse("cycleCount", f"give {lo} to {hi} (for ctyun:cycleType={cycle_type})",
                             "is required for a subscription")
    public_ip = src.boolean("publicIp", True)
    eip = src.integer("eipBandwidthMbps", 100, *rules.EIP_MBPS) if public_ip else 0
    return {"on_demand": on_demand, "cycle_type": cycle_type, "cycle_count": cycle_count,
            "eip_bandwidth_mbps": eip}


def _subnet_type(src: RawConfig, storage_type: str, storage_uid: str) -> str:
    """`common` (the default: an ordinary subnet) or `cbm` (a bare-metal one). Doc 23930 wants
    an ordinary subnet for elastic bare metal, ECS servers and OceanFS's endpoint, a bare-metal
    one for standard bare metal, and which the 910C is is not documented (CTyun contract
    6.18): the default suits everything else the order holds; a refusal naming the subnet says
    to try cbm. The cluster's one subnet cannot be cbm with an OceanFS order."""
    value = src.choice("subnetType", ("common", "cbm"), "common")
    if value == "cbm" and storage_type == "oceanfs" and not storage_uid:
        raise src.refuse("subnetType", "keep ctyun:subnetType=common, or use "
                         "ctyun:storageType=sfs", "cannot serve an OceanFS order: its endpoint "
                         "needs an ordinary subnet of the cluster's VPC (doc 23930 oceanFSOrder)")
    return value


def _raid_choice(src: RawConfig, key: str, old_key: str) -> str:
    """`ctyun:localSystemRaid` / `localDataRaid`: unset (the default layout, raid.py), `none`,
    a RAID name as raid-type-list lists it (`RAID1`) or its uuid (`r-...`); the former
    `...VolumeRaidUuid` key is read the same way (both given: refused)."""
    if src.given(key) and src.given(old_key):
        raise src.refuse(old_key, f"keep only ctyun:{key}", f"repeats ctyun:{key}")
    name = key if src.given(key) or not src.given(old_key) else old_key
    value = src.text(name, "") or ""
    problem = raid.choice_problem(value)
    if problem:
        raise src.refuse(name, "give none, a RAID name such as RAID1 or a uuid r-... from "
                         "/v4/ebm/raid-type-list (docs/ctyun-hcc.md, 'Local disks')", problem)
    return value


#: a bare-metal device type as API 4574 lists it (e.g. physical.s4.2xlarge1.6)
_DEVICE_TYPE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def _server_fields(src: RawConfig) -> Tuple[Tuple[str, object], ...]:
    """The bare-metal disk fields of the create order, in the server's order."""
    cloud_type = src.choice("cloudSystemDiskType", rules.SYSTEM_DISK_TYPES, "")
    cloud_size = src.integer("cloudSystemDiskSizeGb", 0, *rules.SYSTEM_DISK_GB)
    server = (
        ("localSystemRaid", _raid_choice(src, "localSystemRaid", "localSystemVolumeRaidUuid")),
        ("localDataRaid", _raid_choice(src, "localDataRaid", "localDataVolumeRaidUuid")),
        ("bmsDeviceType", src.matching(
            "bmsDeviceType", _DEVICE_TYPE, "give the device type CTyun's bare-metal console "
            "shows (letters, digits, '.', '_', '-'), e.g. physical.t2.large.1",
            "is not a bare-metal device type", "")),
        ("cloudSystemDiskType", cloud_type),
        ("cloudSystemDiskSizeGb", cloud_size),
        ("systemDiskType", src.choice("systemDiskType", rules.SYSTEM_DISK_TYPES, "SSD")),
        ("systemDiskSizeGb", src.integer("systemDiskSizeGb", 100, *rules.SYSTEM_DISK_GB)),
    )
    if bool(cloud_type) != bool(cloud_size):
        raise src.refuse("cloudSystemDiskType", "set both ctyun:cloudSystemDiskType and "
                         "ctyun:cloudSystemDiskSizeGb, or neither", "comes without its pair")
    return server


def _check_password(src: RawConfig) -> None:
    """The root password, when known here, by CTyun's rule (never quoted)."""
    pw = src.raw.get("rootPassword")
    if pw not in (None, "", OFFLINE_SECRET):
        _problem(src, "rootPassword", rules.root_password_problem(str(pw)),
                 "set another with `pulumi config set --secret ctyun:rootPassword ...`")


def _exposure(shared: SharedSettings) -> Tuple[str, ...]:
    """`kimi-k3:sshAllowedCidrs` (who reaches SSH); both CIDR lists by the exposure rule."""
    written = shared.target_config.get("sshAllowedCidrs")
    ssh = cidrs(SSH_CIDRS_KEY, written)
    check_exposure(ssh, SSH_CIDRS_KEY, shared.allow_internet, written)
    check_exposure(shared.allowed_cidrs, "kimi-k3:allowedCidrs", shared.allow_internet,
                   shared.source.written("allowedCidrs"))
    return ssh


def _timeouts(src: RawConfig) -> Dict[str, int]:
    """How long the providers wait, in seconds (the unit is in each key's name)."""
    return {"create_timeout_s": src.integer("createTimeoutS", 7200, 60, 86400),
            "update_timeout_s": src.integer("updateTimeoutS", 5400, 60, 86400),
            "delete_timeout_s": src.integer("deleteTimeoutS", 3600, 60, 86400),
            "lost_answer_wait_s": src.integer("lostAnswerWaitS", 900, 30, 86400),
            "poll_interval_s": src.integer("pollIntervalS", 30, 1, 600)}
