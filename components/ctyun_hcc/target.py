"""The ctyun-hcc target: an E-HPC cluster, bootstrapped over SSH, serving K3 as a Slurm job.

`create(name, shared, secrets)` checks every input (the `ctyun:*` keys through config.py, the
target's `kimi-k3:*` keys through serve_config.py) before anything is registered. `render()` is
pure: it writes the five scripts of the seed guide, errata fixed (srun.sh, node.sh, bcast.sh,
mount_nvme.sh, check.sh). `serve()` declares, each step depending explicitly on the one before:

    CtyunHccCluster -> HostKeyPin -> MasterInQueue (when the master serves) -> NvmeMount
      -> ModelWeights + SifImage -> Broadcast -> SlurmService

so `pulumi destroy` runs in reverse: the service job is cancelled (and instances stopped)
before the cluster goes. The target's keys: serve_config.py.
"""

from __future__ import annotations

from typing import Any, Dict, Mapping, Optional

from ..inference.catalog import MODELS
from ..inference.curl import chat_curl
from ..inference.launch import LaunchSpec
from ..inference.planner import Plan
from ..config.shared import Exposure, SharedSettings
from ..program.contract import InferenceTarget, Served
from .scripts import API_GUARD_FILE, SlurmLayout, api_guard_files, render_all
from .serve_config import HccServeConfig, bastion_login_key, parse_serve_config

NODE_SHAPE = "atlas-800-a3"


def slurm_layout(plan: Plan, cfg: HccServeConfig, partition: str = "batch") -> SlurmLayout:
    """Where the scripts, weights and image live on the nodes; checked (ConfigError)."""
    model_dir = f"{cfg.model_root.rstrip('/')}/{MODELS[plan.model].local_dir_name}"
    return SlurmLayout(partition=partition, work_dir=cfg.work_dir, model_dir=model_dir,
                       sif_dir=cfg.sif_dir, sif_file=f"{cfg.sif_name}.sif").validate()


def curl_line(endpoint: str, served_model_name: str, api_key: bool) -> str:
    """One chat request against the endpoint (the key comes from the caller's shell)."""
    return chat_curl(endpoint, served_model_name, api_key, "Who are you?", 64)


class CtyunHccTarget(InferenceTarget):
    """InferenceTarget for CTyun E-HPC; owns the cluster component and the bootstrap chain."""

    target_name = "ctyun-hcc"

    def __init__(self, name: str, shared: SharedSettings, hcc_config, serve_cfg: HccServeConfig,
                 secrets: Any):
        self._name, self.shared, self.hcc, self.cfg, self.secrets = \
            name, shared, hcc_config, serve_cfg, secrets

    def node_shape_key(self) -> str:
        return NODE_SHAPE

    def exposures(self):
        """What the security group opens (the lists config.py gives it): the endpoint from
        kimi-k3:allowedCidrs, SSH (root login to the master) from kimi-k3:sshAllowedCidrs."""
        hcc, shared = self.hcc, self.shared
        endpoint = tuple(hcc.endpoint_cidrs) if hcc is not None else tuple(shared.allowed_cidrs)
        ssh = tuple(hcc.ssh_cidrs) if hcc is not None else ()
        return [Exposure(f"the model endpoint (TCP {shared.port})", "kimi-k3:allowedCidrs",
                         endpoint, serves_model=True),
                Exposure(f"SSH to the master (TCP {self.cfg.ssh_port}, login as {self.cfg.ssh_user})",
                         "kimi-k3:sshAllowedCidrs", ssh)]

    def node_count(self) -> int:
        return self.hcc.serving_nodes if self.hcc is not None else self.shared.nodes

    def _partition(self) -> str:
        return self.hcc.queue_name if self.hcc is not None else "batch"

    def render(self, plan: Plan, spec: LaunchSpec) -> Mapping[str, str]:
        """The five scripts, and with an API key `api-guard/kk3_api_guard.py` (the service
        writes it root-only under the work dir; node.sh binds it into the instance)."""
        return {**render_all(plan, spec, slurm_layout(plan, self.cfg, self._partition())),
                **api_guard_files(spec)}

    def serve(self, plan: Plan, spec: LaunchSpec, parent: Optional[Any] = None) -> Served:
        import pulumi

        from ..progress.program import progress_inputs
        from .bootstrap import Broadcast, HostKeyPin, MasterInQueue, ModelWeights, NvmeMount, \
            SifImage
        from .cluster import CtyunHccCluster
        from .service import SlurmService, fingerprint

        name, cfg, hcc = self._name, self.cfg, self.hcc
        layout = slurm_layout(plan, cfg, hcc.queue_name)
        files = {**render_all(plan, spec, layout), **api_guard_files(spec)}
        cluster = CtyunHccCluster(f"{name}-hcc", hcc, self.shared, self.secrets,
                                  pulumi.ResourceOptions(parent=parent))
        conf = pulumi.Config("kimi-k3")
        key = conf.get_secret("sshPrivateKey")
        bastion_key = conf.get_secret("sshBastionPrivateKey")
        master_name = cluster.nodes.apply(
            lambda ns: next((n["name"] for n in ns or [] if n.get("role") == "master"), ""))
        serving_nodes = cluster.nodes.apply(
            lambda ns: [n["name"] for n in ns or []
                        if n.get("role") != "master" or hcc.master_in_compute])
        ssh: Dict[str, Any] = {
            "sshHost": cfg.ssh_host or cluster.master_public_ip, "sshPort": cfg.ssh_port,
            "sshUser": cfg.ssh_user, "sshBastion": cfg.ssh_bastion,
            "sshBastionPrivateKey": bastion_login_key(cfg, key, bastion_key),
        }
        ssh.update(progress_inputs(plan))  # progress: steering inputs of every step (docs/progress.md)

        def opts(*deps):
            return pulumi.ResourceOptions(parent=parent, depends_on=[d for d in deps if d])

        # first contact: the only step given the root password (or the user's key); it pins the
        # host keys and installs the stack's own login key, which every later step uses
        pin = HostKeyPin(f"{name}-hostkey", {
            **ssh, "sshPrivateKey": key if key is not None else "",
            "sshPassword": "" if key is not None else cluster.root_password,
            "pinnedHostKey": cfg.ssh_host_key, "pinnedBastionHostKey": cfg.ssh_bastion_host_key,
            "loginKeyComment": f"kimi-k3:{pulumi.get_project()}/{pulumi.get_stack()}"},
            opts(cluster))
        ssh = {**ssh, "hostKey": pin.hostKey, "bastionHostKey": pin.bastionHostKey,
               "sshPrivateKey": pin.loginKey, "sshPassword": ""}
        step = pin
        if hcc.master_in_compute:
            step = MasterInQueue(f"{name}-master-in-queue", {
                **ssh, "nodeName": master_name, "queueName": hcc.queue_name}, opts(pin))
        if cfg.mount_disks:
            step = NvmeMount(f"{name}-nvme", {
                **ssh, "script": files["mount_nvme.sh"], "workDir": cfg.work_dir,
                "partition": hcc.queue_name, "nodes": serving_nodes}, opts(step))
        weights = ModelWeights(f"{name}-weights", {
            **ssh, "source": cfg.model_source, "modelName": MODELS[plan.model].local_dir_name,
            "repo": MODELS[plan.model].repo_id,
            "modelRoot": cfg.model_root}, opts(step))
        sif = SifImage(f"{name}-sif", {
            **ssh, "source": cfg.sif_source, "name": cfg.sif_name, "sifDir": cfg.sif_dir,
            "url": cfg.sif_url}, opts(step))
        bcast = Broadcast(f"{name}-bcast", {
            **ssh, "script": files["bcast.sh"], "workDir": cfg.work_dir,
            "sourceHost": master_name,
            "contentKey": pulumi.Output.all(weights.bytes, sif.bytes).apply(
                lambda b: f"weights:{b[0]} sif:{b[1]}")}, opts(weights, sif))
        api_key = self.secrets.api_key if (self.shared.has_api_key and self.secrets) else ""
        hf_token = self.secrets.hf_token if (self.shared.has_hf_token and self.secrets) else ""
        service = SlurmService(f"{name}-service", {
            **ssh, "workDir": cfg.work_dir, "jobName": layout.job_name,
            "partition": hcc.queue_name, "srunSh": files["srun.sh"], "nodeSh": files["node.sh"],
            "checkSh": files["check.sh"], "apiGuardPy": files.get(API_GUARD_FILE, ""),
            "launchFingerprint": fingerprint(spec.to_dict()),
            "devicesPerNode": plan.devices_per_node, "nodeCount": spec.nodes, "port": spec.port,
            "servedModelName": spec.served_model_name, "apiKey": api_key, "hfToken": hf_token,
            "headHost": master_name if hcc.master_in_compute else "",
            "publicHost": cluster.master_public_ip, "publicInnerIp": cluster.master_inner_ip,
            "startupTimeoutS": spec.startup_timeout_s,
            "ownerTag": f"{pulumi.get_project()}/{pulumi.get_stack()}"}, opts(bcast))
        gate = self._acceptance(name, plan, spec, ssh, service, api_key, opts(service))
        endpoint = service.endpoint
        return Served(endpoint=endpoint, outputs={
            "acceptance": gate.acceptance,
            "curl": endpoint.apply(lambda e: curl_line(e, spec.served_model_name,
                                                       bool(spec.secret_env))),
            "slurmJobId": service.jobId,
            "slurmNodes": service.nodes,
            "clusterId": cluster.cluster_id,
            "masterPublicIp": cluster.master_public_ip,
        })


    def _acceptance(self, name, plan: Plan, spec: LaunchSpec, ssh, service, api_key, opts):
        """The acceptance checks once the service answers (components/ctyun_hcc/acceptance.py)."""
        from ..accept.sizing import load_size
        from ..progress.program import progress_inputs
        from .acceptance import AcceptanceGate

        size = load_size(self.shared.accept_load, plan.max_num_seqs,
                         plan.parallelism.data_parallel)
        return AcceptanceGate(f"{name}-accept", {
            **ssh, **progress_inputs(), "endpoint": service.endpoint,
            "node0Addr": service.node0Addr, "jobId": service.jobId, "port": spec.port,
            "servedModelName": spec.served_model_name, "apiKey": api_key,
            "loadRequests": size.requests if size else 0,
            "loadConcurrency": size.concurrency if size else 1,
            "loadMaxTokens": size.max_tokens if size else 64,
            "hardware": {"accelerator": plan.accelerator, "node_shape": plan.node_shape,
                         "nodes": plan.nodes}}, opts)


def create(name: str, shared: SharedSettings, secrets: Any) -> InferenceTarget:
    """The ctyun-hcc target; every `ctyun:*` and target `kimi-k3:*` key checked first."""
    from .cluster import deploy_requirements, load_hcc_config

    serve_cfg = parse_serve_config(dict(shared.target_config), model_port=shared.port)
    hcc = load_hcc_config(shared)
    target = CtyunHccTarget(name, shared, hcc, serve_cfg, secrets)
    # what a real `pulumi up` would refuse (the offline plan records it in plan.json)
    target.deploy_requirements = deploy_requirements(hcc)
    return target
