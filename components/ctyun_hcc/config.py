"""The `ctyun:*` stack config (and the CTyun exposure keys), parsed and checked before any
resource is registered (pure).

`parse_hcc_config(raw, shared, organization=..., project=...)` turns the raw `ctyun:*` values
(prefix stripped, strings or JSON values) plus the shared `kimi-k3:*` settings into a typed
`HccConfig`, or raises ConfigError naming the key, the value (never a secret's) and the fix.
Every rule is CTyun's documented one (api/rules.py), the same function the providers' `check`
calls, so a value is refused here when it is known at program time and again in `check`.

What only a real deployment needs (`ctyun:regionId`, `ctyun:azName`, `ctyun:rootPassword`) may
be missing here, so the offline plan works from the stack file as shipped; the providers'
`check` refuses their absence during `pulumi preview`, before anything is created.

Default names are unique to the stack and computed here, in the program, from organization,
project and stack (ownership.py); a provider never derives names (its host reports the stack
as "stack").

Exposure: `kimi-k3:allowedCidrs` opens only the model port; `kimi-k3:sshAllowedCidrs` (a target
key) opens SSH. Both pass `settings.check_exposure`.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Optional, Tuple

from ..config.keys import unknown_key
from ..inference.errors import ConfigError
from ..config.shared import SharedSettings, check_exposure, parse_cidrs
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
    "localSystemVolumeRaidUuid", "localDataVolumeRaidUuid", "cloudSystemDiskType",
    "cloudSystemDiskSizeGb", "systemDiskType", "systemDiskSizeGb",
    "endpoint", "createTimeoutS", "updateTimeoutS", "deleteTimeoutS", "lostAnswerWaitS",
    "pollIntervalS",
}) | SECRET_KEYS
SSH_CIDRS_KEY = "kimi-k3:sshAllowedCidrs"


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
    #: compute nodes wanted; the create order carries at most 49 (doc 23930), the rest are
    #: added by expand right after
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

    @property
    def cluster_name(self) -> str:
        return self.names.cluster

    @property
    def serving_nodes(self) -> int:
        """Nodes that run vLLM: compute nodes, plus the master when it joins the queue."""
        return self.compute_node_count + (1 if self.master_in_compute else 0)

    @property
    def order_count(self) -> int:
        return min(self.compute_node_count, rules.CREATE_ORDER_COUNT[1])


def _str(raw, key, default=None) -> Optional[str]:
    value = raw.get(key)
    if value is None or value == "":
        return default
    return str(value).strip()


def _int(raw, key, default, lo, hi) -> int:
    value = raw.get(key)
    if value is None or value == "":
        return default
    try:
        n = int(str(value))
    except ValueError:
        raise ConfigError(f"ctyun:{key}", value, "give an integer", "is not an integer")
    if not lo <= n <= hi:
        raise ConfigError(f"ctyun:{key}", n, f"use {lo} to {hi}", "is out of range")
    return n


def _bool(raw, key, default) -> bool:
    value = raw.get(key)
    if value is None or value == "":
        return default
    s = str(value).strip().lower()
    if s in ("true", "1", "yes"):
        return True
    if s in ("false", "0", "no"):
        return False
    raise ConfigError(f"ctyun:{key}", value, "use true or false", "is not a boolean")


def _choice(raw, key, options, default) -> str:
    value = _str(raw, key, default)
    if value not in options:
        raise ConfigError(f"ctyun:{key}", value, f"use one of {', '.join(options)}",
                          "is not a documented value")
    return value


def _name(key: str, value: str, problem: Optional[str], fix: str) -> None:
    if problem:
        raise ConfigError(key, value, fix, problem)


def _id(raw, key, prefix) -> str:
    value = _str(raw, key, "create")
    if value != "create" and not value.startswith(prefix):
        raise ConfigError(f"ctyun:{key}", value, f"give an id ({prefix}...) or create",
                          "is not a CTyun id")
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
    name = _str(raw, "clusterName", default_cluster_name(organization, project, shared.stack))
    _name("ctyun:clusterName", name, rules.cluster_name_problem(name),
          "pick another name (2-20 letters, digits and '-', starting with a letter)")
    names = names_for(name)
    vpc, subnet = _id(raw, "vpcId", "vpc-"), _id(raw, "subnetId", "subnet-")
    if vpc == "create" and subnet != "create":
        raise ConfigError("ctyun:subnetId", subnet, "leave it unset (a subnet is created in the "
                          "new VPC) or give ctyun:vpcId", "cannot belong to a VPC still to be "
                          "created")
    for key, value in (("VPC", names.vpc), ("subnet", names.subnet),
                       ("security group", names.security_group)):
        _name("ctyun:clusterName", name, rules.vpc_name_problem(value) and
              f"gives the {key} name {value!r}, which {rules.vpc_name_problem(value)}",
              "pick another cluster name")
    cidrs = {}
    for key, default in (("vpcCidr", "192.168.0.0/16"), ("subnetCidr", "192.168.0.0/24")):
        value = _str(raw, key, default)
        try:
            cidrs[key] = ipaddress.ip_network(value, strict=True)
        except ValueError:
            raise ConfigError(f"ctyun:{key}", value, "give a CIDR such as 192.168.0.0/24",
                              "is not a CIDR") from None
    if vpc == "create" and not cidrs["subnetCidr"].subnet_of(cidrs["vpcCidr"]):
        raise ConfigError("ctyun:subnetCidr", str(cidrs["subnetCidr"]),
                          f"pick a range inside ctyun:vpcCidr ({cidrs['vpcCidr']})",
                          "is not inside the VPC")
    sg = _str(raw, "securityGroup", "create")
    if sg != "create" and not sg.startswith("sg-"):
        raise ConfigError("ctyun:securityGroup", sg, "give a group id (sg-...) or create",
                          "is not a CTyun security group id")
    storage_type = _choice(raw, "storageType", STORAGE_TYPES, "sfs")
    storage_uid = _str(raw, "storageUid", "")
    lo, hi = rules.OCEANFS_GB if storage_type == "oceanfs" else rules.SFS_GB
    size = _int(raw, "storageSizeGb", 500, lo, hi)
    storage_name = _str(raw, "storageName", names.storage)
    _name("ctyun:storageName", storage_name, rules.fs_name_problem(storage_name),
          "use 2-255 letters, digits and '-', starting with a letter")
    master_in_compute = _bool(raw, "masterInCompute", True)
    compute = shared.nodes - 1 if master_in_compute else shared.nodes
    if compute < 1:
        raise ConfigError("kimi-k3:nodes", shared.nodes,
                          "use at least 2 nodes, or set ctyun:masterInCompute=false",
                          "leaves no compute node (E-HPC's large-model edition needs one)")
    queue = _str(raw, "queueName", "batch")
    _name("ctyun:queueName", queue, rules.queue_name_problem(queue),
          "use 1-15 letters, digits and '_' starting with a letter, not 'default' (e.g. batch)")
    on_demand = _bool(raw, "onDemand", True)
    cycle_type, cycle_count = _str(raw, "cycleType", ""), 0
    if not on_demand:
        cycle_type = _choice(raw, "cycleType", tuple(rules.CYCLE_COUNT), None)
        cycle_count = _int(raw, "cycleCount", None, *rules.CYCLE_COUNT[cycle_type]) \
            if raw.get("cycleCount") not in (None, "") else None
        if cycle_count is None:
            lo, hi = rules.CYCLE_COUNT[cycle_type]
            raise ConfigError("ctyun:cycleCount", None, f"give {lo} to {hi} (for "
                              f"ctyun:cycleType={cycle_type})", "is required for a subscription")
    public_ip = _bool(raw, "publicIp", True)
    eip = _int(raw, "eipBandwidthMbps", 100, *rules.EIP_MBPS) if public_ip else 0
    server = (
        ("localSystemVolumeRaidUuid", _str(raw, "localSystemVolumeRaidUuid", "")),
        ("localDataVolumeRaidUuid", _str(raw, "localDataVolumeRaidUuid", "")),
        ("cloudSystemDiskType", _str(raw, "cloudSystemDiskType", "") and _choice(
            raw, "cloudSystemDiskType", rules.SYSTEM_DISK_TYPES, None)),
        ("cloudSystemDiskSizeGb", _int(raw, "cloudSystemDiskSizeGb", 0, *rules.SYSTEM_DISK_GB)),
        ("systemDiskType", _choice(raw, "systemDiskType", rules.SYSTEM_DISK_TYPES, "SSD")),
        ("systemDiskSizeGb", _int(raw, "systemDiskSizeGb", 100, *rules.SYSTEM_DISK_GB)),
    )
    if bool(dict(server)["cloudSystemDiskType"]) != bool(dict(server)["cloudSystemDiskSizeGb"]):
        raise ConfigError("ctyun:cloudSystemDiskType", dict(server)["cloudSystemDiskType"],
                          "set both ctyun:cloudSystemDiskType and ctyun:cloudSystemDiskSizeGb, "
                          "or neither", "comes without its pair")
    pw = raw.get("rootPassword")
    if pw not in (None, "", OFFLINE_SECRET):
        problem = rules.root_password_problem(str(pw))
        if problem:
            raise ConfigError("ctyun:rootPassword", "(hidden)", "set another with `pulumi "
                              "config set --secret ctyun:rootPassword ...`", problem)
    endpoint = _str(raw, "endpoint")
    if endpoint:  # https, no credentials, query or fragment (printed without them)
        check_endpoint("ctyun:endpoint", endpoint)
    target = dict(shared.target_config)
    ssh = parse_cidrs(target.get("sshAllowedCidrs"), SSH_CIDRS_KEY)
    check_exposure(ssh, SSH_CIDRS_KEY, shared.allow_internet)
    check_exposure(shared.allowed_cidrs, "kimi-k3:allowedCidrs", shared.allow_internet)
    adopt = _str(raw, "adoptClusterUuid", "")
    if adopt and not adopt.startswith("cl-"):
        raise ConfigError("ctyun:adoptClusterUuid", adopt, "give the cluster's UUID (cl-...) "
                          "from hpc/list-clusters", "is not a cluster UUID")
    return HccConfig(
        region_id=_str(raw, "regionId"), az_name=_str(raw, "azName"), names=names,
        vpc_id=vpc, subnet_id=subnet, security_group=sg, compute_node_count=compute,
        ssh_cidrs=ssh, endpoint_cidrs=tuple(shared.allowed_cidrs),
        ssh_required=not str(target.get("sshBastion") or "").strip(),
        cluster_type=_str(raw, "clusterType", ""), adopt_cluster_uuid=adopt,
        vpc_cidr=str(cidrs["vpcCidr"]), subnet_cidr=str(cidrs["subnetCidr"]),
        subnet_type=_choice(raw, "subnetType", ("common", "cbm"), "common"),
        storage_type=storage_type, storage_size_gb=size, storage_name=storage_name,
        sfs_type=_choice(raw, "sfsType", rules.SFS_TYPES, "performance"),
        storage_uid=storage_uid,
        specification=_str(raw, "specification", ""),
        master_specification=_str(raw, "masterSpecification", ""),
        image=_str(raw, "image", ""), master_image=_str(raw, "masterImage", ""),
        queue_name=queue, master_in_compute=master_in_compute, on_demand=on_demand,
        cycle_type=cycle_type if not on_demand else "", cycle_count=cycle_count or 0,
        eip_bandwidth_mbps=eip, server_fields=server, endpoint=endpoint,
        create_timeout_s=_int(raw, "createTimeoutS", 7200, 60, 86400),
        update_timeout_s=_int(raw, "updateTimeoutS", 5400, 60, 86400),
        delete_timeout_s=_int(raw, "deleteTimeoutS", 3600, 60, 86400),
        lost_answer_wait_s=_int(raw, "lostAnswerWaitS", 900, 30, 86400),
        poll_interval_s=_int(raw, "pollIntervalS", 30, 1, 600),
    )
