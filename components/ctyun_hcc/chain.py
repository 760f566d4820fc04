"""The bootstrap chain after the cluster exists, declared as children of the cluster component:

    HostKeyPin -> HccShrink -> ClusterCheck -> MasterInQueue (when the master serves) -> NvmeMount
      -> ModelWeights + SifImage -> Broadcast

each step depending explicitly on the one before (bootstrap.py has the steps), so `pulumi destroy`
runs in reverse. The steps' SSH inputs (`Bootstrapped.ssh`: the pinned host keys, the stack's own
login key) are what the Slurm service and the acceptance gate use after them (target.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Sequence

import pulumi

from ..inference.catalog import MODELS
from ..inference.planner import Plan
from ..progress.program import progress_inputs
from .bootstrap import Broadcast, HostKeyPin, MasterInQueue, ModelWeights, NvmeMount, SifImage
from .cluster_check import ClusterCheck
from .router_service import STEP_INPUTS as ROUTER_STEP_INPUTS
from .config import HccConfig
from .serve_config import HccServeConfig, bastion_login_key
from .shrink_step import HccShrink


@dataclass(frozen=True)
class Bootstrapped:
    """What the steps after the chain need: its SSH inputs, the master's node name, the last step."""

    ssh: Mapping[str, Any]
    master_name: Any
    last: pulumi.Resource
    #: the node names read from the nodes (ClusterCheck), the ones that serve
    serving_nodes: Any = None


#: the python RouterService installs vllm-router with by default (router_service.STEP_INPUTS;
#: kimi-k3:routerPython names another)
ROUTER_PYTHON = ROUTER_STEP_INPUTS["python"]


def declare_chain(prefix: str, cluster, hcc: HccConfig, cfg: HccServeConfig, plan: Plan,
                  files: Mapping[str, str], aliases: List[pulumi.Alias],
                  job_names: Sequence[str] = ("kimi-k3",)) -> Bootstrapped:
    """The steps, named `f"{prefix}-..."`, children of `cluster` (CtyunHccCluster), each with
    `aliases` (their place before issue 18: components/program/tree.py). `job_names`:
    every replica's Slurm job, replica 0's first, which the steps that need their nodes stop
    first (resize.py)."""
    name = prefix
    conf = pulumi.Config("kimi-k3")
    key = conf.get_secret("sshPrivateKey")
    bastion_key = conf.get_secret("sshBastionPrivateKey")
    owner_tag = f"{pulumi.get_project()}/{pulumi.get_stack()}"
    ssh: Dict[str, Any] = {
        "sshHost": cfg.ssh_host or cluster.master_public_ip, "sshPort": cfg.ssh_port,
        "sshUser": cfg.ssh_user, "sshBastion": cfg.ssh_bastion,
        "sshBastionPrivateKey": bastion_login_key(cfg, key, bastion_key),
        # a cluster ordered anew (the old one deleted outside Pulumi) redoes every step
        "clusterUUID": cluster.cluster_id,
    }
    ssh.update(progress_inputs(plan))  # progress: steering inputs of every step (docs/progress.md)

    def opts(*deps, new: bool = False):
        return pulumi.ResourceOptions(parent=cluster, depends_on=[d for d in deps if d],
                                      aliases=None if new else aliases)

    # first contact: the only step given the root password (or the user's key); it pins the
    # host keys and installs the stack's own login key, which every later step uses
    pin = HostKeyPin(f"{name}-hostkey", {
        **ssh, "sshPrivateKey": key if key is not None else "",
        "sshPassword": "" if key is not None else cluster.root_password,
        "pinnedHostKey": cfg.ssh_host_key, "pinnedBastionHostKey": cfg.ssh_bastion_host_key,
        "loginKeyComment": f"kimi-k3:{owner_tag}", "passwordLogin": cfg.ssh_password_login},
        opts(*cluster.resources))
    ssh = {**ssh, "hostKey": pin.hostKey, "bastionHostKey": pin.bastionHostKey,
           "sshPrivateKey": pin.loginKey, "sshPassword": ""}
    # the steps that need nodes stop this stack's service first when it holds them (resize)
    service = {"serviceJobNames": list(job_names), "ownerTag": owner_tag}
    # a shrink: the service off the leaving nodes, drained, then removed (the cluster, before
    # the pin, cannot reach the master with the pinned key: shrink_step.py)
    shrink = HccShrink(f"{name}-shrink", {
        **cluster.shrink_inputs, **ssh, **service, "workDir": cfg.work_dir}, opts(pin, new=True))
    # what the master carries (the console edition) and the nodes' names, read from the nodes:
    # every later step uses these names, never the API's
    check = ClusterCheck(f"{name}-check", {
        **ssh, "nodes": cluster.nodes_after_shrink(shrink.nodes),
        "masterInCompute": hcc.master_in_compute, "modelSource": cfg.model_source,
        "sifSource": cfg.sif_source, "bcastMethod": cfg.bcast_method,
        # several replicas: the router's python checked now, not after the jobs run
        **({"routerPython": cfg.router_python} if len(job_names) > 1 else {})}, opts(shrink, new=True))
    master_name = check.masterName
    serving_nodes = pulumi.Output.all(check.masterName, check.nodeNames).apply(
        lambda mn: ([mn[0]] if hcc.master_in_compute else []) + list(mn[1] or []))
    step = check
    if hcc.master_in_compute:
        step = MasterInQueue(f"{name}-master-in-queue", {
            **ssh, "nodeName": master_name, "queueName": hcc.queue_name}, opts(check))
    if cfg.mount_disks:
        step = NvmeMount(f"{name}-nvme", {
            **ssh, **service, "script": files["mount_nvme.sh"], "workDir": cfg.work_dir,
            "partition": hcc.queue_name, "nodes": serving_nodes}, opts(step))
    weights = ModelWeights(f"{name}-weights", {
        **ssh, "source": cfg.model_source, "modelName": MODELS[plan.model].local_dir_name,
        "repo": MODELS[plan.model].repo_id, "revision": cfg.model_revision,
        "modelRoot": cfg.model_root}, opts(step))
    sif = SifImage(f"{name}-sif", {
        **ssh, "source": cfg.sif_source, "name": cfg.sif_name, "sifDir": cfg.sif_dir,
        "url": cfg.sif_url, "sha256": cfg.sif_sha256}, opts(step))
    bcast = Broadcast(f"{name}-bcast", {
        **ssh, **service, "script": files["bcast.sh"], "workDir": cfg.work_dir,
        "sourceHost": master_name, "partition": hcc.queue_name, "nodes": serving_nodes,
        "method": cfg.bcast_method,
        "contentKey": pulumi.Output.all(weights.bytes, sif.bytes).apply(
            lambda b: f"weights:{b[0]} sif:{b[1]}")}, opts(weights, sif))
    return Bootstrapped(ssh=ssh, master_name=master_name, last=bcast,
                        serving_nodes=serving_nodes)
