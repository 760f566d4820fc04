"""`CtyunHccCluster`: the CTyun E-HPC cluster that serves Kimi K3, as one Pulumi component.

Type token `kimi-k3:ctyun:HccCluster`. It declares, each depending on the one before:

- `<name>-owner` (`HccStackOwner`): this stack's random ownership token (ownership.py);
- `<name>-net` (`HccNetwork`, only when `ctyun:vpcId` or `ctyun:subnetId` is "create", the
  default): a VPC and/or subnet of the stack, marked with the token;
- `<name>-sg` (`HccSecurityGroup`): a group of the stack (marked) that admits TCP 22 from
  `kimi-k3:sshAllowedCidrs` and the model port from `kimi-k3:allowedCidrs`, nothing else; or a
  checked, untouched existing group (`ctyun:securityGroup`);
- `<name>-order` (`HccClusterOrder`): the create order, in state as soon as it is accepted;
- `<name>-cluster` (`HccCluster`): waits for the order, then lives (grow, refresh, delete;
  with a bootstrap the shrink is the chain's `HccShrink` step, which stops the service on the
  leaving nodes first: shrink_step.py).

Contract used by `components/ctyun_hcc/target.py` (keep these names stable):

    CtyunHccCluster(name, config: HccConfig, shared: SharedSettings, secrets: Secrets, opts=None,
                    ssh_port=22, bootstrap=None)
    Outputs: .cluster_id, .master_public_ip, .master_inner_ip,
             .nodes ([{"name", "inner_ip", "role"}], master first),
             .security_group_id, .vpc_id, .subnet_id, .root_password (secret),
             .queue_name (plain str), .master_in_compute (plain bool)
    .resources: the custom resources above (what a step after the cluster depends on)
    .bootstrapped: what `bootstrap(self)` returned (the bootstrap chain, chain.py), or None

It is the ctyun-hcc stack's component at the top: the bootstrap chain and K3Inference are its
children too, so the program registers its outputs once they are all declared
(components/program/pipeline.py).

The root password is the secret `ctyun:rootPassword`; it, `ctyun:regionId` and `ctyun:azName`
may be missing offline (plan command): `pulumi preview` then stops at the providers' `check`,
naming the key, before anything is created. API credentials are read by the provider host at
call time (CTYUN_AK/CTYUN_SK or `ctyun:accessKey`/`ctyun:secretKey`), never here.
`load_hcc_config(shared)` reads and checks the program's `ctyun:*` config, names included.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterable, List, Optional

import pulumi

from ..inference.errors import ConfigError
from ..progress.record import progress_file_for
from ..config.shared import SharedSettings
from .cluster_order import HccClusterOrder
from .cluster_provider import HccCluster
from .config import SSH_CIDRS_KEY, HccConfig, parse_hcc_config
from .network_provider import HccNetwork
from .owner_provider import HccStackOwner
from .sg_provider import HccSecurityGroup

NAMESPACE = "ctyun"


def raw_ctyun_config() -> Dict[str, object]:
    """All `ctyun:*` config of the running program, prefix stripped (secrets included as
    given by the engine: only checked against the documented rules, never printed)."""
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


def ssh_requirement(hcc: HccConfig) -> Optional[Dict[str, str]]:
    """What `pulumi up` needs for the SSH bootstrap, when the config does not give it."""
    if hcc.ssh_required and not hcc.ssh_cidrs:
        return {"key": SSH_CIDRS_KEY, "problem": "is empty and there is no kimi-k3:sshBastion "
                "(the bootstrap needs SSH to the master)",
                "fix": "set it to the address of the machine running `pulumi up`, e.g. "
                       "pulumi config set --path 'kimi-k3:sshAllowedCidrs[0]' 203.0.113.10/32"}
    return None


def load_hcc_config(shared: SharedSettings, other_known: Iterable[str] = ()) -> HccConfig:
    """The checked `HccConfig` of the running program (ConfigError on bad input). What a real
    deployment needs beyond it (SSH access) is `deploy_requirements`."""
    return parse_hcc_config(raw_ctyun_config(), shared, other_known,
                            organization=pulumi.get_organization(),
                            project=pulumi.get_project())


@dataclass(frozen=True)
class SshRequirement:
    """A requirement of a real deployment (contract.Requirement): the account settings to
    order the cluster, SSH to the master."""

    key: str
    problem: str
    fix: str
    #: the value as the user typed it, quoted by the refusal (SSH's: the empty CIDR list;
    #: None: unset)
    value: object = ()

    def error(self) -> ConfigError:
        return ConfigError(self.key, list(self.value) if isinstance(self.value, tuple)
                           else self.value, self.fix, self.problem)

    def text(self) -> str:
        return f"{self.key} {self.problem}; {self.fix}"

    def to_dict(self) -> Dict[str, str]:
        return {"key": self.key, "problem": self.problem, "fix": self.fix}


#: what ordering the cluster needs that the offline plan runs without, with its fix
ACCOUNT_KEYS = (
    ("ctyun:regionId", lambda h: h.region_id, "pulumi config set ctyun:regionId <region id from list-regions>"),
    ("ctyun:azName", lambda h: h.az_name, "pulumi config set ctyun:azName <availability zone of that region>"),
    ("ctyun:rootPassword", lambda h: h.root_password_set,
     "pulumi config set --secret ctyun:rootPassword <password by CTyun's rule, docs/ctyun-hcc.md>"),
)


def account_requirement(hcc: HccConfig) -> Optional[Dict[str, str]]:
    """Where and with what password to order the cluster, when the config does not say: one
    line naming every missing key (the providers' `check` would refuse them too, but once per
    CTyun resource that carries the key)."""
    missing = [(key, fix) for key, given, fix in ACCOUNT_KEYS if not given(hcc)]
    if not missing:
        return None
    others = [key for key, _ in missing[1:]]
    return {"key": missing[0][0],
            "problem": "is needed to order the cluster" + (f" (so are {', '.join(others)})" if others else ""),
            "fix": "; ".join(fix for _, fix in missing), "value": None}


def deploy_requirements(hcc: HccConfig) -> List[SshRequirement]:
    """What a real preview/up stops on before any resource (the offline plan warns and goes on):
    the account settings first (nothing can be ordered without them), then the SSH route."""
    return [SshRequirement(**req) for req in (account_requirement(hcc), ssh_requirement(hcc)) if req]


def _server_inputs(config: HccConfig) -> Dict[str, Any]:
    return {"onDemand": config.on_demand, "cycleType": config.cycle_type,
            "cycleCount": config.cycle_count, **dict(config.server_fields)}


# -- the inputs of each resource (plain values or Outputs; the integration tests' stack driver
# -- builds the same resources from these functions) ------------------------------------------
def _steer(config: HccConfig, progress: str) -> Dict[str, Any]:
    return {"endpoint": config.endpoint or "", "pollIntervalS": config.poll_interval_s,
            "progressFile": progress}


def _quick(config: HccConfig, progress: str) -> Dict[str, Any]:
    """Network and group calls are short: a smaller deadline and poll interval."""
    return {**_steer(config, progress), "timeoutS": min(config.delete_timeout_s, 1800),
            "pollIntervalS": min(config.poll_interval_s, 10)}


def network_inputs(config: HccConfig, owner_token: Any, progress: str) -> Dict[str, Any]:
    n = config.names
    return {"regionID": config.region_id or "", "vpc": config.vpc_id,
            "subnet": config.subnet_id, "vpcName": n.vpc, "subnetName": n.subnet,
            "vpcCidr": config.vpc_cidr, "subnetCidr": config.subnet_cidr,
            "subnetType": config.subnet_type, "ownerToken": owner_token,
            **_quick(config, progress)}


def group_inputs(config: HccConfig, shared: SharedSettings, vpc_id: Any, owner_token: Any,
                 progress: str, ssh_port: int = 22,
                 endpoint_port: Optional[int] = None) -> Dict[str, Any]:
    """The security group's inputs; `endpoint_port` is what allowedCidrs reach (the TLS port
    when the master terminates TLS: tls_step.py), kimi-k3:port by default."""
    return {"regionID": config.region_id or "", "vpcID": vpc_id,
            "securityGroup": config.security_group, "groupName": config.names.security_group,
            "ownerToken": owner_token, "sshCidrs": list(config.ssh_cidrs),
            "endpointCidrs": list(config.endpoint_cidrs), "sshPort": ssh_port,
            "endpointPort": endpoint_port or shared.port, "sshRequired": config.ssh_required,
            **_quick(config, progress)}


def _common(config: HccConfig, vpc_id: Any, subnet_id: Any, root_password: Any):
    return {"regionID": config.region_id or "", "azName": config.az_name or "",
            "clusterName": config.names.cluster, "vpcID": vpc_id, "subnetID": subnet_id,
            "queueName": config.queue_name, "rootPassword": root_password,
            "subnetType": config.subnet_type, **_server_inputs(config)}


def order_inputs(config: HccConfig, vpc_id: Any, subnet_id: Any, group_name: Any,
                 root_password: Any, progress: str) -> Dict[str, Any]:
    return {**_common(config, vpc_id, subnet_id, root_password), **_steer(config, progress),
            "clusterType": config.cluster_type, "securityGroupName": group_name,
            "ownedVpc": config.vpc_id == "create", "storageType": config.storage_type,
            "storageSizeGB": config.storage_size_gb, "storageName": config.storage_name,
            "sfsType": config.sfs_type, "storageUid": config.storage_uid,
            "specification": config.specification,
            "masterSpecification": config.master_specification, "image": config.image,
            "masterImage": config.master_image, "computeNodeCount": config.order_count,
            "eipBandwidthMbps": config.eip_bandwidth_mbps,
            "adoptClusterUuid": config.adopt_cluster_uuid,
            "timeoutS": config.create_timeout_s, "deleteTimeoutS": config.delete_timeout_s,
            "lostAnswerWaitS": config.lost_answer_wait_s}


def cluster_inputs(config: HccConfig, vpc_id: Any, subnet_id: Any, job_uuid: Any,
                   cluster_uuid: Any, ordered_at: Any, resolved: Any, group_id: Any,
                   root_password: Any, progress: str, defer_shrink: bool = False,
                   master_probe: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """`defer_shrink`: the nodes above the count are removed by the HccShrink step after the
    host-key pin, which stops the service on them first (shrink_step.py), not by the cluster.
    `master_probe`: the SSH way to the master the bootstrap uses (reach.py), probed before
    the node count changes."""
    return {**_common(config, vpc_id, subnet_id, root_password), **_steer(config, progress),
            "deferShrink": defer_shrink, **({"masterProbe": master_probe} if master_probe else {}),
            "orderJobUUID": job_uuid, "orderClusterUUID": cluster_uuid,
            "orderedAt": ordered_at, "resolved": resolved, "securityGroupID": group_id,
            "computeNodeCount": config.compute_node_count,
            # what the order bought besides servers: proven released by the destroy
            "storageType": config.storage_type, "storageName": config.storage_name,
            "storageUid": config.storage_uid, "eipBandwidthMbps": config.eip_bandwidth_mbps,
            "createTimeoutS": config.create_timeout_s, "updateTimeoutS": config.update_timeout_s,
            "deleteTimeoutS": config.delete_timeout_s,
            "lostAnswerWaitS": config.lost_answer_wait_s}


def shrink_inputs(config: HccConfig, cluster: Any, progress: str) -> Dict[str, Any]:
    """What the HccShrink step needs of the cluster (`cluster`: the HccCluster resource): its
    identity, the wanted count and its node list (shrink_step.py)."""
    return {"regionID": config.region_id or "", "azName": config.az_name or "",
            "clusterUUID": cluster.clusterUUID, "clusterName": config.names.cluster,
            "computeNodeCount": config.compute_node_count, "clusterNodes": cluster.nodes,
            "updateTimeoutS": config.update_timeout_s,
            "lostAnswerWaitS": config.lost_answer_wait_s, **_steer(config, progress)}


def node_list(nodes: Any) -> List[Dict[str, Any]]:
    """[{"name", "inner_ip", "role"}] of the providers' node views (`.nodes`, master first)."""
    return [{"name": x["name"], "inner_ip": x["innerIP"], "role": x["role"]}
            for x in nodes or []]


class CtyunHccCluster(pulumi.ComponentResource):
    cluster_id: pulumi.Output[str]
    master_public_ip: pulumi.Output[str]
    master_inner_ip: pulumi.Output[str]
    nodes: pulumi.Output[list]
    security_group_id: pulumi.Output[str]
    root_password: pulumi.Output[str]

    def __init__(self, name: str, config: HccConfig, shared: SharedSettings, secrets: Any = None,
                 opts: Optional[pulumi.ResourceOptions] = None, ssh_port: int = 22,
                 bootstrap: Optional[Callable[["CtyunHccCluster"], Any]] = None,
                 endpoint_port: Optional[int] = None,
                 master_probe: Optional[Dict[str, Any]] = None):
        # absent offline: the order's check refuses "" at preview, naming the key
        root_password = pulumi.Config(NAMESPACE).get_secret("rootPassword") or ""
        super().__init__("kimi-k3:ctyun:HccCluster", name, None, opts)
        self.config = config
        self.queue_name = config.queue_name
        self.master_in_compute = config.master_in_compute
        progress = progress_file_for(pulumi.get_stack())
        owner = HccStackOwner(f"{name}-owner", pulumi.ResourceOptions(parent=self))
        vpc_id: Any = config.vpc_id
        subnet_id: Any = config.subnet_id
        last: Any = owner
        net = None
        if "create" in (config.vpc_id, config.subnet_id):
            net = HccNetwork(f"{name}-net", network_inputs(config, owner.ownerToken, progress),
                             pulumi.ResourceOptions(parent=self, depends_on=[owner]))
            vpc_id, subnet_id, last = net.vpcID, net.subnetID, net
        sg = HccSecurityGroup(f"{name}-sg", group_inputs(config, shared, vpc_id,
                                                         owner.ownerToken, progress, ssh_port,
                                                         endpoint_port),
                              pulumi.ResourceOptions(parent=self, depends_on=[last]))
        # a group we create has a name known now: the order never sees it unknown in a preview
        # in which only the group's rules change (that would show a replacement)
        group_name: Any = config.names.security_group if config.security_group == "create" \
            else sg.securityGroupName
        order = HccClusterOrder(f"{name}-order", order_inputs(
            config, vpc_id, subnet_id, group_name, root_password, progress),
            pulumi.ResourceOptions(parent=self, depends_on=[sg]))
        # with a bootstrap, nodes that may serve leave through its HccShrink step (chain.py)
        cluster = HccCluster(f"{name}-cluster", cluster_inputs(
            config, vpc_id, subnet_id, order.jobUUID, order.clusterUUID, order.orderedAt,
            order.resolved, sg.securityGroupID, root_password, progress,
            defer_shrink=bootstrap is not None,
            master_probe=master_probe if bootstrap is not None else None),
            pulumi.ResourceOptions(parent=self, depends_on=[order]))
        from ..progress.program import BILLING_ORDER, record_billing_start

        record_billing_start(order.orderedAt, BILLING_ORDER)  # `status`'s spend counts from it
        self.cluster_id = cluster.clusterUUID
        self.master_public_ip = cluster.masterPublicIP
        self.master_inner_ip = cluster.masterInnerIP
        self.nodes = cluster.nodes.apply(node_list)
        #: what the HccShrink step needs of the cluster (shrink_step.py, declared by chain.py)
        self.shrink_inputs = shrink_inputs(config, cluster, progress)
        self.security_group_id = sg.securityGroupID
        self.vpc_id = pulumi.Output.from_input(vpc_id)
        self.subnet_id = pulumi.Output.from_input(subnet_id)
        self.root_password = pulumi.Output.secret(cluster.rootPassword)
        self.resources = [r for r in (owner, net, sg, order, cluster) if r is not None]
        #: the bootstrap chain (chain.py), declared as this component's children too
        self.bootstrapped = bootstrap(self) if bootstrap is not None else None

    def nodes_after_shrink(self, shrunk_nodes: Any) -> Any:
        """From the HccShrink step on, `.nodes` is its list (the cluster's own output still
        lists the nodes it removed until the next refresh); returns the new `.nodes`."""
        self.nodes = pulumi.Output.from_input(shrunk_nodes).apply(node_list)
        return self.nodes
