"""The `ctyun:*` stack config, parsed and checked before any API call (pure).

`parse_hcc_config(raw, shared)` turns the raw `ctyun:*` values (prefix stripped, as strings or
JSON values) plus the shared `kimi-k3:*` settings into a typed `HccConfig`, or raises
ConfigError naming the key, the value and the fix. Secrets (`ctyun:rootPassword`,
`ctyun:accessKey`, `ctyun:secretKey`) are known keys but never parsed into this object: they
stay Pulumi secret Outputs (cluster.py) or environment variables (client.py).

What only a real deployment needs (`ctyun:regionId`, `ctyun:azName`, `ctyun:rootPassword`) may
be missing here, so the offline plan command works from the stack file as shipped; the dynamic
providers' `check` refuses their absence during `pulumi preview`, before anything is created,
naming the config key.

The validators for cluster names, root passwords and sizes live here too, so the dynamic
provider's `check` applies exactly the same rules as the program.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from typing import Iterable, Mapping, Optional

from ..inference.errors import ConfigError
from ..settings import SharedSettings

#: the seed's "large model lite" cluster edition (大模型精简版)
DEFAULT_CLUSTER_TYPE = "大模型精简版"
STORAGE_TYPES = ("sfs", "oceanfs")
STORAGE_MIN_GB, STORAGE_MAX_GB = 500, 32768
CLUSTER_NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9-]{1,19}$")
SECRET_KEYS = frozenset({"rootPassword", "accessKey", "secretKey"})
KNOWN_KEYS = frozenset({
    "regionId", "azName", "clusterName", "clusterType", "vpcId", "subnetId", "vpcCidr",
    "subnetCidr", "securityGroup",
    "storageType", "storageSizeGb", "storageName", "specification", "image", "queueName",
    "masterInCompute", "onDemand", "publicIp", "endpoint", "createTimeoutS", "updateTimeoutS",
    "deleteTimeoutS", "pollIntervalS",
}) | SECRET_KEYS


@dataclass(frozen=True)
class HccConfig:
    """Everything the CTyun E-HPC cluster needs, except secrets. Units are in the names."""

    #: None until set: the offline plan command needs no account; `pulumi preview` stops at the
    #: cluster's check ("ctyun:regionId is required") before anything is created
    region_id: Optional[str]
    az_name: Optional[str]
    cluster_name: str
    #: "create" (a VPC owned by the stack) or an existing VPC id
    vpc_id: str
    #: "create" (a subnet owned by the stack, in `vpc_id`) or an existing subnet id
    subnet_id: str
    #: "create" (a group for this cluster, with only the needed rules) or an existing group id
    security_group: str
    compute_node_count: int
    cluster_type: str = DEFAULT_CLUSTER_TYPE
    vpc_cidr: str = "192.168.0.0/16"
    subnet_cidr: str = "192.168.0.0/24"
    storage_type: str = "sfs"
    storage_size_gb: int = 500
    storage_name: str = ""
    specification: Optional[str] = None
    image: Optional[str] = None
    queue_name: str = "batch"
    master_in_compute: bool = True
    on_demand: bool = True
    public_ip: bool = True
    endpoint: Optional[str] = None
    create_timeout_s: int = 7200
    update_timeout_s: int = 5400
    delete_timeout_s: int = 3600
    poll_interval_s: int = 30

    @property
    def serving_nodes(self) -> int:
        """Nodes that run vLLM: compute nodes, plus the master when it joins the queue."""
        return self.compute_node_count + (1 if self.master_in_compute else 0)


def cluster_name_problem(name: object) -> Optional[str]:
    """Why `name` is not a valid E-HPC cluster name, or None."""
    if not isinstance(name, str) or not CLUSTER_NAME_RE.match(name):
        return ("must be 2-20 characters of letters, digits and '-', starting with a letter")
    return None


def root_password_problem(pw: object) -> Optional[str]:
    """Why `pw` breaks CTyun's root password rules, or None. Never echoes the password."""
    if not isinstance(pw, str):
        return "must be a string"
    if not 8 <= len(pw) <= 30:
        return "must be 8-30 characters long"
    if pw.startswith("/"):
        return "must not start with '/'"
    if not (any(c.islower() for c in pw) and any(c.isupper() for c in pw)
            and any(c.isdigit() for c in pw) and any(not c.isalnum() for c in pw)):
        return "needs upper and lower case letters, a digit and a special character"
    return None


def storage_size_problem(size: object) -> Optional[str]:
    if not isinstance(size, int) or isinstance(size, bool) or \
            not STORAGE_MIN_GB <= size <= STORAGE_MAX_GB:
        return f"must be an integer from {STORAGE_MIN_GB} to {STORAGE_MAX_GB} (GB)"
    return None


def default_cluster_name(stack: str) -> str:
    """`k3-<stack>`, cut to 20 characters and reduced to the allowed alphabet."""
    cleaned = re.sub(r"[^A-Za-z0-9-]", "-", f"k3-{stack}")[:20].rstrip("-")
    return cleaned if len(cleaned) >= 2 else "k3-cluster"


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


def parse_hcc_config(raw: Mapping[str, object], shared: SharedSettings,
                     other_known: Iterable[str] = ()) -> HccConfig:
    """Typed, checked `HccConfig` from the raw `ctyun:*` config and the shared settings.

    `other_known` names `ctyun:*` keys that other modules parse (the bootstrap's SSH and disk
    keys); any key in neither set is refused as a likely misspelling.
    """
    for key in sorted(set(raw) - KNOWN_KEYS - set(other_known)):
        raise ConfigError(f"ctyun:{key}", raw[key], "remove it or check the spelling "
                          "(docs/ctyun-hcc.md lists the keys)", "is not a known key")
    region = _str(raw, "regionId")
    az = _str(raw, "azName")
    name = _str(raw, "clusterName", default_cluster_name(shared.stack))
    problem = cluster_name_problem(name)
    if problem:
        raise ConfigError("ctyun:clusterName", name, "pick another name", problem)
    vpc = _str(raw, "vpcId", "create")
    subnet = _str(raw, "subnetId", "create")
    if vpc == "create" and subnet != "create":
        raise ConfigError("ctyun:subnetId", subnet, "leave it unset (a subnet is created in the "
                          "new VPC) or give ctyun:vpcId", "cannot belong to a VPC still to be "
                          "created")
    for key, value in (("vpcId", vpc), ("subnetId", subnet)):
        prefix = "vpc-" if key == "vpcId" else "subnet-"
        if value != "create" and not value.startswith(prefix):
            raise ConfigError(f"ctyun:{key}", value, f"give an id ({prefix}...) or create",
                              "is not a CTyun id")
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
    storage_type = _str(raw, "storageType", "sfs").lower()
    if storage_type not in STORAGE_TYPES:
        raise ConfigError("ctyun:storageType", storage_type, "use sfs or oceanfs",
                          "is not a storage type E-HPC can order")
    size = _int(raw, "storageSizeGb", 500, -2**31, 2**31)
    problem = storage_size_problem(size)
    if problem:
        raise ConfigError("ctyun:storageSizeGb", size, "use 500 (the seed) or more", problem)
    master_in_compute = _bool(raw, "masterInCompute", True)
    compute = shared.nodes - 1 if master_in_compute else shared.nodes
    if compute < 1:
        raise ConfigError("kimi-k3:nodes", shared.nodes,
                          "use at least 2 nodes, or set ctyun:masterInCompute=false",
                          "leaves no compute node (E-HPC's large-model edition needs one)")
    queue = _str(raw, "queueName", "batch")
    if not re.match(r"^[A-Za-z][A-Za-z0-9_]{0,31}$", queue):
        raise ConfigError("ctyun:queueName", queue, "use letters, digits and '_' (e.g. batch)",
                          "is not a valid Slurm partition name")
    endpoint = _str(raw, "endpoint")
    if endpoint and not re.match(r"^https?://[^\s/]+", endpoint):
        raise ConfigError("ctyun:endpoint", endpoint, "give a URL such as https://host:port",
                          "is not an http(s) URL")
    poll = _int(raw, "pollIntervalS", 30, 1, 600)
    return HccConfig(
        region_id=region, az_name=az, cluster_name=name, vpc_id=vpc, subnet_id=subnet,
        security_group=sg, compute_node_count=compute,
        cluster_type=_str(raw, "clusterType", DEFAULT_CLUSTER_TYPE),
        vpc_cidr=str(cidrs["vpcCidr"]), subnet_cidr=str(cidrs["subnetCidr"]),
        storage_type=storage_type, storage_size_gb=size,
        storage_name=_str(raw, "storageName", f"{name}-fs"),
        specification=_str(raw, "specification"), image=_str(raw, "image"),
        queue_name=queue, master_in_compute=master_in_compute,
        on_demand=_bool(raw, "onDemand", True), public_ip=_bool(raw, "publicIp", True),
        endpoint=endpoint,
        create_timeout_s=_int(raw, "createTimeoutS", 7200, 60, 86400),
        update_timeout_s=_int(raw, "updateTimeoutS", 5400, 60, 86400),
        delete_timeout_s=_int(raw, "deleteTimeoutS", 3600, 60, 86400),
        poll_interval_s=poll,
    )
