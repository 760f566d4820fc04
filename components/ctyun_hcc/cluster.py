"""`CtyunHccCluster`: the CTyun E-HPC cluster that serves Kimi K3, as one Pulumi component.

Type token `kimi-k3:ctyun:HccCluster`. It declares up to three dynamic resources:

- `<name>-net` (`HccNetwork`, only when `ctyun:vpcId` or `ctyun:subnetId` is "create", the
  default): a VPC and/or subnet owned by the stack;
- `<name>-sg` (`HccSecurityGroup`): a security group created for the cluster (or our rules in
  the existing group `ctyun:securityGroup`) that admits only TCP 22 (SSH) and the model port
  (`kimi-k3:port`) from each CIDR in `kimi-k3:allowedCidrs`. No CIDRs, no ingress rule: nothing
  is open to 0.0.0.0/0 unless it is written in `allowedCidrs`.
- `<name>-cluster` (`HccCluster`): the E-HPC cluster, master plus `compute_node_count` Ascend
  910C bare-metal compute nodes (see cluster_provider.py).

Contract used by `components/ctyun_hcc/target.py` (keep these names stable):

    CtyunHccCluster(name, config: HccConfig, shared: SharedSettings, secrets: Secrets, opts=None)
    .node_shape_key() -> "atlas-800-a3"
    .node_count() -> nodes that serve (compute nodes, plus the master when it joins the queue)
    Outputs: .cluster_id, .master_public_ip, .master_inner_ip,
             .nodes ([{"name", "inner_ip", "role"}], master first), .scheduler_version,
             .security_group_id, .vpc_id, .subnet_id, .root_password (secret),
             .queue_name (plain str),
             .master_in_compute (plain bool)

The root password is the secret stack config `ctyun:rootPassword` (E-HPC needs one and the
bootstrap logs in with it). It, `ctyun:regionId` and `ctyun:azName` may be missing when the
program runs offline (plan command); `pulumi preview` then stops at the providers' check, naming
the key, before anything is created. API credentials are not read here: the provider host reads
CTYUN_AK/CTYUN_SK or the secret config `ctyun:accessKey`/`ctyun:secretKey` at call time.
`load_hcc_config(shared)` reads and checks the program's `ctyun:*` config.
"""

from __future__ import annotations

import json
from typing import Any, Dict, Iterable, Optional

import pulumi

from ..settings import SharedSettings
from .cluster_provider import HccCluster
from .config import HccConfig, parse_hcc_config
from .network_provider import HccNetwork
from .sg_provider import HccSecurityGroup

NODE_SHAPE = "atlas-800-a3"
NAMESPACE = "ctyun"


def raw_ctyun_config() -> Dict[str, object]:
    """All `ctyun:*` config of the running program, prefix stripped (secrets included as
    given by the engine: only used to spot unknown keys, never printed)."""
    from pulumi.runtime import config as pconfig

    merged: Dict[str, object] = {}
    merged.update(pconfig.get_config_env())
    merged.update(pconfig.CONFIG.get())
    out: Dict[str, object] = {}
    for key, value in merged.items():
        ns, _, name = key.partition(":")
        if ns == NAMESPACE and name:
            if isinstance(value, str) and value[:1] in "[{":
                try:
                    value = json.loads(value)
                except ValueError:
                    pass
            out[name] = value
    return out


def load_hcc_config(shared: SharedSettings, other_known: Iterable[str] = ()) -> HccConfig:
    """The checked `HccConfig` of the running program (ConfigError on bad input).

    `other_known`: `ctyun:*` keys parsed elsewhere (e.g. by bootstrap.py), not refused here.
    """
    return parse_hcc_config(raw_ctyun_config(), shared, other_known)


def ingress_rules(shared: SharedSettings) -> list:
    """SSH and the model port from each allowed CIDR; nothing else."""
    return [{"protocol": "TCP", "port": port, "cidr": cidr}
            for cidr in shared.allowed_cidrs for port in (22, shared.port)]


class CtyunHccCluster(pulumi.ComponentResource):
    cluster_id: pulumi.Output[str]
    master_public_ip: pulumi.Output[str]
    master_inner_ip: pulumi.Output[str]
    nodes: pulumi.Output[list]
    scheduler_version: pulumi.Output[str]
    security_group_id: pulumi.Output[str]
    root_password: pulumi.Output[str]

    def __init__(self, name: str, config: HccConfig, shared: SharedSettings, secrets: Any = None,
                 opts: Optional[pulumi.ResourceOptions] = None):
        # absent in the offline plan: the cluster's check refuses "" at preview, naming the key
        root_password = pulumi.Config(NAMESPACE).get_secret("rootPassword") or ""
        super().__init__("kimi-k3:ctyun:HccCluster", name, None, opts)
        self.config = config
        self.queue_name = config.queue_name
        self.master_in_compute = config.master_in_compute
        child = pulumi.ResourceOptions(parent=self)
        endpoint = config.endpoint or ""
        vpc_id: Any = config.vpc_id
        subnet_id: Any = config.subnet_id
        if "create" in (config.vpc_id, config.subnet_id):
            net = HccNetwork(f"{name}-net", {
                "regionID": config.region_id or "", "vpc": config.vpc_id, "subnet": config.subnet_id,
                "vpcName": f"{config.cluster_name}-vpc",
                "subnetName": f"{config.cluster_name}-subnet", "vpcCidr": config.vpc_cidr,
                "subnetCidr": config.subnet_cidr, "endpoint": endpoint,
                "timeoutS": min(config.delete_timeout_s, 1800),
                "pollIntervalS": min(config.poll_interval_s, 10),
            }, child)
            vpc_id, subnet_id = net.vpcID, net.subnetID
        group_name = f"{config.cluster_name}-sg"
        sg = HccSecurityGroup(f"{name}-sg", {
            "regionID": config.region_id or "", "vpcID": vpc_id,
            "securityGroup": config.security_group,
            "groupName": group_name, "rules": ingress_rules(shared),
            "endpoint": endpoint, "timeoutS": min(config.delete_timeout_s, 1800),
            "pollIntervalS": min(config.poll_interval_s, 10),
        }, child)
        # a group we create has a name known now: the cluster never sees it as unknown in a
        # preview in which only the group's rules change (that would show a replacement)
        created_group = config.security_group == "create"
        sg_name: Any = group_name if created_group else sg.securityGroupName
        cluster = HccCluster(f"{name}-cluster", {
            "regionID": config.region_id or "", "azName": config.az_name or "",
            "clusterName": config.cluster_name, "clusterType": config.cluster_type,
            "vpcID": vpc_id, "subnetID": subnet_id,
            "securityGroupName": sg_name, "onDemand": config.on_demand,
            "publicIP": config.public_ip, "storageType": config.storage_type,
            "storageSizeGB": config.storage_size_gb, "storageName": config.storage_name,
            "specification": config.specification or "", "image": config.image or "",
            "queueName": config.queue_name, "computeNodeCount": config.compute_node_count,
            "rootPassword": root_password, "endpoint": endpoint,
            "createTimeoutS": config.create_timeout_s, "updateTimeoutS": config.update_timeout_s,
            "deleteTimeoutS": config.delete_timeout_s, "pollIntervalS": config.poll_interval_s,
        }, pulumi.ResourceOptions(parent=self, depends_on=[sg]))
        self.cluster_id = cluster.clusterUUID
        self.master_public_ip = cluster.masterPublicIP
        self.master_inner_ip = cluster.masterInnerIP
        self.nodes = cluster.nodes.apply(lambda ns: [
            {"name": n["name"], "inner_ip": n["innerIP"], "role": n["role"]} for n in ns or []])
        self.scheduler_version = cluster.schedulerVersion
        self.security_group_id = sg.securityGroupID
        self.vpc_id = pulumi.Output.from_input(vpc_id)
        self.subnet_id = pulumi.Output.from_input(subnet_id)
        self.root_password = pulumi.Output.secret(cluster.rootPassword)
        self.register_outputs({
            "cluster_id": self.cluster_id, "master_public_ip": self.master_public_ip,
            "master_inner_ip": self.master_inner_ip, "nodes": self.nodes,
            "scheduler_version": self.scheduler_version,
            "security_group_id": self.security_group_id, "root_password": self.root_password,
            "vpc_id": self.vpc_id, "subnet_id": self.subnet_id,
        })

    def node_shape_key(self) -> str:
        return NODE_SHAPE

    def node_count(self) -> int:
        return self.config.serving_nodes
