"""The ctyun-hcc target: an E-HPC cluster, bootstrapped over SSH, serving K3 as a Slurm job.

`create(name, shared, secrets)` checks every input (the `ctyun:*` keys through config.py, this
module's `kimi-k3:*` keys below) before anything is registered. `render()` is pure: it writes
the five scripts of the seed guide, errata fixed (srun.sh, node.sh, bcast.sh, mount_nvme.sh,
check.sh). `serve()` declares, each step depending explicitly on the one before:

    CtyunHccCluster -> HostKeyPin -> MasterInQueue (when the master serves) -> NvmeMount
      -> ModelWeights + SifImage -> Broadcast -> SlurmService

so `pulumi destroy` runs in reverse: the service job is cancelled (and instances stopped)
before the cluster goes. Target keys (namespace kimi-k3; defaults are the seed's):
`sshUser` (root), `sshPort` (22), `sshHost` (the master's public IP), `sshHostKey` (pin; none =
first contact), `sshBastion` (user@host:port, none), `sshBastionHostKey`, `sshBastionPrivateKey`
(secret), `sshPrivateKey` (secret; without it the root password is used, once, by HostKeyPin),
`workDir` (/home/kimi-k3), `modelRoot` (/mnt/nvme1n1/model), `sifDir` (/mnt/nvme0n1/apptainer),
`sifName` (vllm-ascend_kimi-k3-a3), `modelSource` (cthpc | modelscope), `sifSource`
(cthpc | url), `sifUrl`, `mountDisks` (true). Grammars: docs/security.md.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Dict, Mapping, Optional

from ..inference import grammar
from ..inference.catalog import MODELS
from ..inference.curl import chat_curl
from ..inference.errors import NOT_SHOWN, ConfigError
from ..inference.launch import LaunchSpec
from ..inference.planner import Plan
from ..inference.render_slurm import API_GUARD_FILE, SlurmLayout, api_guard_files, render_all
from ..inference.target import InferenceTarget, Served
from ..settings import Exposure, SharedSettings, reject_unknown

TARGET_KEYS = ("sshUser", "sshPort", "sshHost", "sshHostKey", "sshBastion", "sshBastionHostKey",
               "sshBastionPrivateKey", "sshPrivateKey", "workDir", "modelRoot", "sifDir", "sifName",
               "modelSource", "sifSource", "sifUrl", "mountDisks",
               # CIDRs that may reach SSH (parsed with the cluster's keys in config.py)
               "sshAllowedCidrs")
#: secret target keys: never parsed into HccServeConfig, never printed
SECRET_KEYS = ("sshPrivateKey", "sshBastionPrivateKey")
NODE_SHAPE = "atlas-800-a3"


@dataclass(frozen=True)
class HccServeConfig:
    """This target's own `kimi-k3:*` keys (the cluster's `ctyun:*` keys live in HccConfig)."""

    ssh_user: str = "root"
    ssh_port: int = 22
    ssh_host: str = ""
    #: pinned host key of the master (`TYPE BASE64` or `SHA256:...`); "" = pin on first contact
    ssh_host_key: str = ""
    ssh_bastion: str = ""
    ssh_bastion_host_key: str = ""
    work_dir: str = "/home/kimi-k3"
    model_root: str = "/mnt/nvme1n1/model"
    sif_dir: str = "/mnt/nvme0n1/apptainer"
    sif_name: str = "vllm-ascend_kimi-k3-a3"
    model_source: str = "cthpc"
    sif_source: str = "cthpc"
    sif_url: str = ""
    mount_disks: bool = True


def parse_bastion(key: str, value: str) -> str:
    """`[user@]host[:port]`, each part by its grammar; returned normalised."""
    m = re.match(r"^(?:([^@]*)@)?(\[[0-9A-Fa-f:.]+\]|[^:\[\]]+)(?::([^:]*))?$", value)
    if not m:
        raise ConfigError(key, value, "write user@host:port, e.g. jump@203.0.113.5:22", "is not a host")
    user, host, port = m.group(1), m.group(2).strip("[]"), m.group(3)
    user = grammar.user_name(key, user) if user is not None else "root"
    host = grammar.host(key, host)
    port_n = grammar.port(key, port) if port is not None else 22
    return f"{user}@{'[' + host + ']' if ':' in host else host}:{port_n}"


def parse_serve_config(raw: Mapping[str, object],
                       model_port: Optional[int] = None) -> HccServeConfig:
    """Typed HccServeConfig from the target's `kimi-k3:*` keys; ConfigError on bad input.

    `model_port` (kimi-k3:port) is the vLLM endpoint's port, also on the master: SSH cannot
    listen on it too (one of the two would fail to bind, or the security group would open the
    model port to the SSH CIDRs and SSH to the endpoint's).

    Every value that reaches a script or a remote command is held to a grammar here (paths
    under the data roots, plain names, hosts, an http(s) URL), so the refusal names the key the
    user set. The secret keys are only checked for presence elsewhere, never read into this.
    """
    reject_unknown(raw, TARGET_KEYS)
    s = {k: str(v).strip() for k, v in raw.items()
         if v not in (None, "") and k not in SECRET_KEYS + ("sshAllowedCidrs",)}

    def choice(key, options, default):
        v = s.get(key, default)
        if v not in options:
            raise ConfigError(f"kimi-k3:{key}", v, f"use one of {', '.join(options)}",
                              "is not a supported source")
        return v

    def k(name):
        return f"kimi-k3:{name}"

    mount = s.get("mountDisks", "true").lower()
    if mount not in ("true", "false"):
        raise ConfigError("kimi-k3:mountDisks", mount, "use true or false", "is not a boolean")
    cfg = HccServeConfig(
        ssh_user=grammar.user_name(k("sshUser"), s.get("sshUser", "root")),
        ssh_port=grammar.port(k("sshPort"), s.get("sshPort", "22")),
        ssh_host=grammar.optional(grammar.host, k("sshHost"), s.get("sshHost")) or "",
        ssh_host_key=grammar.optional(grammar.host_key_pin, k("sshHostKey"), s.get("sshHostKey")) or "",
        ssh_bastion=(parse_bastion(k("sshBastion"), s["sshBastion"]) if s.get("sshBastion") else ""),
        ssh_bastion_host_key=grammar.optional(grammar.host_key_pin, k("sshBastionHostKey"),
                                              s.get("sshBastionHostKey")) or "",
        work_dir=grammar.data_path(k("workDir"), s.get("workDir", "/home/kimi-k3")),
        model_root=grammar.data_path(k("modelRoot"), s.get("modelRoot", "/mnt/nvme1n1/model")),
        sif_dir=grammar.data_path(k("sifDir"), s.get("sifDir", "/mnt/nvme0n1/apptainer")),
        sif_name=grammar.file_name(k("sifName"), s.get("sifName", "vllm-ascend_kimi-k3-a3")),
        model_source=choice("modelSource", ("cthpc", "modelscope"), "cthpc"),
        sif_source=choice("sifSource", ("cthpc", "url"), "cthpc"),
        sif_url=grammar.optional(grammar.http_url, k("sifUrl"), s.get("sifUrl")) or "",
        mount_disks=mount == "true")
    if model_port is not None and cfg.ssh_port == model_port:
        raise ConfigError("kimi-k3:sshPort", cfg.ssh_port,
                          "give kimi-k3:sshPort or kimi-k3:port another value",
                          f"is also kimi-k3:port={model_port} (SSH and the model endpoint are "
                          "both on the master)")
    if cfg.sif_source == "url" and not cfg.sif_url:
        raise ConfigError("kimi-k3:sifUrl", None, "give the SIF download URL (https://...)",
                          "is required for sifSource=url")
    if cfg.ssh_bastion_host_key and not cfg.ssh_bastion:
        raise ConfigError("kimi-k3:sshBastionHostKey", cfg.ssh_bastion_host_key,
                          "set kimi-k3:sshBastion too, or remove it", "pins a bastion that is not used")
    if cfg.ssh_bastion and not (raw.get("sshBastionPrivateKey") or raw.get("sshPrivateKey")):
        raise ConfigError("kimi-k3:sshBastionPrivateKey", NOT_SHOWN,
                          "set it (pulumi config set --secret kimi-k3:sshBastionPrivateKey < key) "
                          "or kimi-k3:sshPrivateKey: the bastion is never sent the root password",
                          "is needed with kimi-k3:sshBastion")
    return cfg


def bastion_login_key(cfg: HccServeConfig, private_key, bastion_private_key):
    """The key the bastion logs in with: kimi-k3:sshBastionPrivateKey, else kimi-k3:sshPrivateKey
    (values or secret Outputs; None = unset); "" without a bastion.

    Chosen here once and passed to every SSH step as `sshBastionPrivateKey`, because after first
    contact the steps' `sshPrivateKey` is the stack's generated login key (installed on the
    master only) and the root password never goes to a bastion: no step may fall back to them.
    """
    if not cfg.ssh_bastion:
        return ""
    for key in (bastion_private_key, private_key):
        if key is not None and key != "":
            return key
    raise ConfigError("kimi-k3:sshBastionPrivateKey", NOT_SHOWN,
                      "set it (pulumi config set --secret kimi-k3:sshBastionPrivateKey < key) "
                      "or kimi-k3:sshPrivateKey: the bastion is never sent the root password",
                      "is needed with kimi-k3:sshBastion")


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

        from ..progress_program import progress_inputs
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
        from ..progress_program import progress_inputs
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
