"""The ctyun-hcc target: an E-HPC cluster, bootstrapped over SSH, serving K3 as a Slurm job.

`CtyunHcc` implements the target contract (components/program/contract.py). `parse_config`
checks every input (the `ctyun:*` keys through config.py, the target's `kimi-k3:*` keys through
serve_config.py) before anything is registered. `render()` is pure: it writes the five scripts
of the seed guide, errata fixed (srun.sh, node.sh, bcast.sh, mount_nvme.sh, check.sh). The
stack's tree, each step depending explicitly on the one before:

    CtyunHccCluster (infrastructure)       cluster resources, then the bootstrap chain (chain.py):
                                           HostKeyPin -> MasterInQueue (when the master serves)
                                           -> NvmeMount -> ModelWeights + SifImage -> Broadcast
      K3Inference (serve, gates)           SlurmService -> AcceptanceGate

so `pulumi destroy` runs in reverse: the service job is cancelled (and instances stopped)
before the cluster goes. With `kimi-k3:replicas` > 1 (replicas.py, docs/router.md): one
SlurmService per replica (`-service`, `-service-r1`, ...), then RouterService (vllm-router and
the front on the master, router_service.py) -> AcceptanceGate through the router and against
each replica.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Dict, List, Mapping, Tuple

from ..config.shared import Exposure, SharedSettings
from ..inference.catalog import MODELS
from ..inference.curl import chat_curl
from ..inference.errors import ConfigError
from ..inference.launch import LaunchSpec, Runtime
from ..inference.planner import Plan, PlanRequest
from ..program.contract import Deployment, Gates, MockOutputs, Rendered, Served, StackSettings, Target
from . import raid
from .config import HccConfig
from .replicas import file_prefix, replica_layouts, replica_port, resource_suffix, router_dir
from .scripts import API_GUARD_FILE, SlurmLayout, api_guard_files, render_all
from .serve_config import HccServeConfig, parse_serve_config

NODE_SHAPE = "atlas-800-a3"
#: scripts of the whole cluster, run once from replica 0's work directory (the others' are per job)
CLUSTER_SCRIPTS = ("bcast.sh", "mount_nvme.sh")


def slurm_layout(plan: Plan, cfg: HccServeConfig, partition: str = "batch") -> SlurmLayout:
    """Where the scripts, weights and image live on the nodes; checked (ConfigError)."""
    model_dir = f"{cfg.model_root.rstrip('/')}/{MODELS[plan.model].local_dir_name}"
    return SlurmLayout(partition=partition, work_dir=cfg.work_dir, model_dir=model_dir,
                       sif_dir=cfg.sif_dir, sif_file=f"{cfg.sif_name}.sif").validate()


def check_disks_agree(serve: HccServeConfig, cluster: HccConfig) -> None:
    """The RAID the orders ask for and the disks the mount step mounts must agree, before
    anything is ordered. A data-disk RAID (`ctyun:localDataRaid` a name or uuid) makes the
    local data disks one volume whose block device the OS names in a way CTyun does not
    document (open question 16; docs/ctyun-hcc.md, 'Local disks'), while the mount step
    (mount_nvme.sh) mounts /dev/nvme0n1 and /dev/nvme1n1 apart: it would fail on every node
    after the cluster is billed. So that choice needs `kimi-k3:mountDisks=false` (the operator
    mounts the volume and points modelRoot/sifDir at it); ConfigError otherwise."""
    data = dict(cluster.server_fields).get("localDataRaid", "")
    if serve.mount_disks and data and data.lower() != raid.NONE:
        raise ConfigError(
            "ctyun:localDataRaid", data,
            "leave it unset (or none) for NVMe disks mounted apart, or mount the RAID volume "
            "yourself and set kimi-k3:mountDisks=false with kimi-k3:modelRoot and "
            "kimi-k3:sifDir on it (docs/ctyun-hcc.md, 'Local disks')",
            "makes the data disks one RAID volume whose device name CTyun does not document, "
            "but the mount step (kimi-k3:mountDisks, on by default) mounts /dev/nvme0n1 and "
            "/dev/nvme1n1")


def curl_line(endpoint: str, served_model_name: str, api_key: bool, pin: str = "") -> str:
    """One chat request against the endpoint (the key comes from the caller's shell; a
    self-signed certificate's key pinned)."""
    return chat_curl(endpoint, served_model_name, api_key, "Who are you?", 64, pin)


@dataclass(frozen=True)
class HccTargetConfig:
    """The ctyun-hcc target's typed config: its `kimi-k3:*` keys and the cluster's `ctyun:*`."""

    serve: HccServeConfig
    cluster: HccConfig


@dataclass(frozen=True)
class SlurmRendered(Rendered):
    """The scripts (and the API-key guard) and where they, the weights and the image live;
    with several replicas each one's scripts too (under `replica-<i>/`, replicas.py)."""

    layout: SlurmLayout
    #: every replica's layout, replica 0's (`layout`) first
    layouts: Tuple[SlurmLayout, ...] = ()


@dataclass(frozen=True)
class SlurmServed(Served):
    """The Slurm service job (replica 0's), the API key it serves with ("" without one) and the
    master's Prometheus (None with kimi-k3:monitoring=false)."""

    service: Any
    api_key: Any
    #: the TLS front on the master (tls_step.TlsProxy), None for plain HTTP
    tls: Any = None
    #: the master's Prometheus (metrics_services.MasterPrometheus), None with monitoring off
    prometheus: Any = None
    #: every replica's SlurmService, replica 0's first
    services: Tuple[Any, ...] = ()
    #: the router on the master (router_service.RouterService), None for one replica
    router: Any = None


@dataclass(frozen=True)
class HccGates(Gates):
    gate: Any = None


Settings = StackSettings[HccTargetConfig]
HccDeployment = Deployment[HccTargetConfig, SlurmRendered]


class CtyunHcc(Target[HccTargetConfig, SlurmRendered, Any, SlurmServed, HccGates]):
    """CTyun E-HPC: the cluster component at the top, K3Inference attached, Slurm serving."""

    name = "ctyun-hcc"

    def parse_config(self, shared: SharedSettings) -> HccTargetConfig:
        from .cluster import load_hcc_config

        from ..config.shared import public_endpoint

        serve_cfg = parse_serve_config(dict(shared.target_config), model_port=shared.port,
                                       public=public_endpoint(shared),
                                       allow_plaintext=shared.allow_plaintext)
        _check_pins(shared, serve_cfg)
        replica_port(shared, serve_cfg)  # the replicas' port is free (ConfigError otherwise)
        if serve_cfg.model_source == "modelscope":
            serve_cfg = replace(serve_cfg, model_revision=shared.revision())
        cluster = load_hcc_config(shared)
        check_disks_agree(serve_cfg, cluster)
        return HccTargetConfig(serve=serve_cfg, cluster=cluster)

    def pins(self, settings: Settings, rendered) -> list:
        """The Apptainer image every node runs as root: pinned by `kimi-k3:sifSha256` (checked
        before first use whatever its source); the seed's sources publish no digest (CTyun
        replaces its image in place), so the default is unverified and warned."""
        from ..config.pins import PINNED, UNPINNED, Pin
        from .fetch_commands import SEED_SIF_URL

        cfg = settings.target.serve
        source = (f"cthpc's {cfg.sif_name} (else {cfg.sif_url or SEED_SIF_URL})" if cfg.sif_source == "cthpc"
                  else cfg.sif_url or SEED_SIF_URL)
        path = f"{cfg.sif_dir}/{cfg.sif_name}.sif"
        how = (f"sha256sum {path} on the master (an image you reviewed), then pulumi config set "
               "kimi-k3:sifSha256 <its 64 hex digits>")
        if cfg.sif_sha256:
            out = [Pin("the Apptainer image (SIF)", source, PINNED, "kimi-k3:sifSha256", how)]
        else:
            out = [Pin("the Apptainer image (SIF)", source, UNPINNED, "kimi-k3:sifSha256", how,
                       f"the Apptainer image {cfg.sif_name} runs as root on every node and is not checked "
                       f"against a sha256 (kimi-k3:sifSha256 is not set; its source {source} publishes "
                       f"none); pin it: {how}")]
        return out + _service_pins(settings)

    def unpinned_weights(self, settings: Settings) -> str:
        """`cthpc model install` (the default source) takes no revision: CTyun's copy."""
        return ("kimi-k3:modelSource=cthpc installs CTyun's copy of the weights (cthpc model "
                "install takes no revision)" if settings.target.serve.model_source == "cthpc"
                else "")

    def node_shape(self, settings: Settings) -> str:
        return NODE_SHAPE

    def node_count(self, settings: Settings) -> int:
        """One replica's nodes: the plan is per replica, the cluster holds every replica's."""
        return settings.target.cluster.replica_nodes

    def plan_request(self, settings: Settings, request: PlanRequest) -> PlanRequest:
        return request

    def runtime(self, settings: Settings) -> Runtime:
        """The weights at /model (the seed's bind mount of the model directory, node.sh)."""
        shared = settings.shared
        return Runtime(image=shared.image, port=replica_port(shared, settings.target.serve),
                       served_model_name=shared.served_model_name, model_path="/model",
                       vision_chunks_per_prompt=shared.vision_chunks_per_prompt,
                       api_key=shared.has_api_key, hf_token=shared.has_hf_token)

    def render(self, settings: Settings, plan: Plan, spec: LaunchSpec) -> SlurmRendered:
        """The five scripts, and with an API key `api-guard/kk3_api_guard.py` (the service
        writes it root-only under the work dir; node.sh binds it into the instance)."""
        layout = slurm_layout(plan, settings.target.serve, settings.target.cluster.queue_name)
        layouts = replica_layouts(layout, settings.shared.replicas)
        # the broadcast and the disks are the cluster's (replica 0's work dir), the job's
        # scripts each replica's
        files = {file_prefix(i) + k: v for i, lay in enumerate(layouts)
                 for k, v in render_all(plan, spec, lay).items()
                 if i == 0 or k not in CLUSTER_SCRIPTS}
        return SlurmRendered(files={**files, **api_guard_files(spec)}, layout=layout,
                             layouts=layouts)

    def exposures(self, settings: Settings) -> List[Exposure]:
        """What the security group opens (the lists config.py gives it): the endpoint from
        kimi-k3:allowedCidrs, SSH (root login to the master) from kimi-k3:sshAllowedCidrs."""
        hcc, cfg, shared = settings.target.cluster, settings.target.serve, settings.shared
        what = (f"the model endpoint over TLS (TCP {cfg.tls_port})" if cfg.tls
                else f"the model endpoint (TCP {shared.port})")
        return [Exposure(what, "kimi-k3:allowedCidrs", tuple(hcc.endpoint_cidrs), serves_model=True),
                Exposure(f"SSH to the master (TCP {cfg.ssh_port}, login as {cfg.ssh_user})",
                         "kimi-k3:sshAllowedCidrs", tuple(hcc.ssh_cidrs),
                         internet_risk=f"anyone can try to log in to the master as "
                                       f"{cfg.ssh_user} (password or key guessing, sshd flaws)")]

    def deploy_requirements(self, settings: Settings):
        from .cluster import deploy_requirements

        return deploy_requirements(settings.target.cluster)

    def infrastructure(self, name: str, deployment: HccDeployment):
        """`CtyunHccCluster` at the top (`{name}-hcc`) with the bootstrap chain as its children."""
        import pulumi

        from ..program.tree import moved_from, old_inference_urn
        from .cluster import CtyunHccCluster

        cfg, hcc = deployment.config.serve, deployment.config.cluster
        before = moved_from(old_inference_urn(name))  # both were K3Inference's children
        return CtyunHccCluster(
            f"{name}-hcc", hcc, deployment.shared, deployment.secrets,
            pulumi.ResourceOptions(aliases=before), ssh_port=cfg.ssh_port,
            endpoint_port=cfg.tls_port if cfg.tls else None,
            master_probe={"host": cfg.ssh_host, "port": cfg.ssh_port, "bastion": cfg.ssh_bastion},
            bootstrap=lambda cluster: self._chain(name, cluster, deployment, before))

    @staticmethod
    def _chain(name: str, cluster, deployment: HccDeployment, aliases):
        """The bootstrap chain (chain.py), then the node exporters (metrics_services.py)."""
        from .chain import declare_chain
        from .metrics_services import after_chain

        cfg, hcc = deployment.config.serve, deployment.config.cluster
        chain = declare_chain(name, cluster, hcc, cfg, deployment.plan, deployment.rendered.files,
                              aliases, service_job_names(deployment.rendered))
        if not cfg.monitoring:
            return chain
        return after_chain(name, chain, cluster, hcc.master_in_compute, hcc.queue_name)

    def serve(self, name: str, deployment: HccDeployment, infrastructure, parent) -> SlurmServed:
        """The Slurm service job(s) after the broadcast (service.py); with several replicas the
        router on the master after all of them (router_service.py)."""
        import pulumi

        from .service import SlurmService

        cfg, shared, secrets = deployment.config.serve, deployment.shared, deployment.secrets
        chain = infrastructure.bootstrapped
        api_key = secrets.api_key if (shared.has_api_key and secrets) else ""
        hf_token = secrets.hf_token if (shared.has_hf_token and secrets) else ""
        layouts = deployment.rendered.layouts or (deployment.rendered.layout,)
        services = tuple(
            SlurmService(f"{name}-service{resource_suffix(i)}",
                         _service_inputs(deployment, infrastructure, i, lay, api_key, hf_token),
                         pulumi.ResourceOptions(parent=parent, depends_on=[chain.last]))
            for i, lay in enumerate(layouts))
        service = services[0]
        router = _router(name, deployment, infrastructure, services, parent, api_key)
        tls = _tls_proxy(name, deployment, infrastructure, service, parent, router)
        if tls is not None:
            endpoint = infrastructure.master_public_ip.apply(
                lambda ip: f"https://{ip}:{int(cfg.tls_port)}/v1")
        else:
            endpoint = service.endpoint if router is None else \
                _front_endpoint(deployment, infrastructure)
        prometheus = None
        if cfg.monitoring:  # outside the job: metrics_services.py (every replica scraped)
            from .metrics_services import declare_prometheus

            prometheus = declare_prometheus(
                name, chain.ssh, infrastructure.nodes, deployment.config.cluster.master_in_compute,
                services, deployment.spec.port, api_key, bool(api_key), parent, router)
        return SlurmServed(endpoint=endpoint, service=service, api_key=api_key, tls=tls,
                           prometheus=prometheus, services=services, router=router)

    def gates(self, name: str, deployment: HccDeployment, infrastructure, served: SlurmServed,
              parent) -> HccGates:
        """The acceptance checks once the service answers (acceptance.py)."""
        import pulumi

        from ..accept.gate import known_input, price_input
        from ..accept.sizing import load_size
        from ..progress.program import progress_inputs
        from .acceptance import AcceptanceGate

        plan, spec, service = deployment.plan, deployment.spec, served.service
        size = load_size(deployment.shared.accept_load, plan.max_num_seqs,
                         plan.parallelism.data_parallel)
        target = {"endpoint": service.endpoint, "node0Addr": service.node0Addr,
                  "jobId": service.jobId, "port": spec.port}
        if served.router is not None:  # through the router, then each replica once
            target = _router_gate_inputs(deployment, infrastructure, served)
        gate = AcceptanceGate(f"{name}-accept", {
            **infrastructure.bootstrapped.ssh, **progress_inputs(), **target,
            "servedModelName": spec.served_model_name, "apiKey": served.api_key,
            "loadRequests": size.requests if size else 0,
            "loadConcurrency": size.concurrency if size else 1,
            "loadMaxTokens": size.max_tokens if size else 64,
            "hardware": {"accelerator": plan.accelerator, "node_shape": plan.node_shape,
                         "nodes": plan.nodes},
            **price_input(deployment.shared.usd_per_hour), **known_input(plan)},
            pulumi.ResourceOptions(parent=parent, depends_on=[
                served.router if served.router is not None else service]))
        return HccGates(acceptance=gate.acceptance, gate=gate)

    def outputs(self, deployment: HccDeployment, infrastructure, served: SlurmServed,
                gates: HccGates) -> Mapping[str, Any]:
        import pulumi

        spec, service, tls = deployment.spec, served.service, served.tls
        endpoint = served.endpoint
        pin = tls.pinSha256 if tls is not None and deployment.config.serve.tls == "self-signed" \
            else ""
        return {
            **ssh_outputs(infrastructure.bootstrapped.ssh, deployment.rendered.layout.log_dir),
            **_metrics_outputs(served, infrastructure),
            "logs": _logs_output(infrastructure.bootstrapped.ssh,
                                 deployment.rendered.layout.log_dir, service.jobId),
            **({} if tls is None else {"tls": pulumi.Output.all(
                tls.fingerprintSha256, tls.pinSha256, tls.certificate, tls.selfSigned).apply(
                lambda t: {"fingerprintSha256": t[0], "pinSha256": t[1], "certificate": t[2],
                           "selfSigned": t[3], "port": deployment.config.serve.tls_port})}),
            "acceptance": gates.acceptance,
            "curl": pulumi.Output.all(endpoint, pin).apply(
                lambda a: curl_line(a[0], spec.served_model_name, bool(spec.secret_env), a[1])),
            "slurmJobId": service.jobId,
            "slurmNodes": service.nodes,
            **_replica_outputs(served),
            "clusterId": infrastructure.cluster_id,
            "masterPublicIp": infrastructure.master_public_ip,
        }

    def mock_outputs(self) -> MockOutputs:
        from .mock_outputs import MOCK_OUTPUTS

        return MOCK_OUTPUTS

    def clock_phases(self, deployment: HccDeployment, block_start=None) -> list:
        """Order -> cluster ready -> bootstrap -> weights and image -> broadcast -> engine -> gate."""
        from ..accept.known_cost import gate_clock
        from ..inference.catalog import NODE_SHAPES
        from ..progress.clock import ctyun_phases

        plan = deployment.plan
        return ctyun_phases(plan.to_dict()["cold_start"],
                            checkpoint_bytes=MODELS[plan.model].download_bytes,
                            nvme_gb_per_s=NODE_SHAPES[plan.node_shape].nvme_read_gb_per_s,
                            order_timeout_s=deployment.config.cluster.create_timeout_s,
                            known=gate_clock(plan))

    def cost_parts(self, resources, node_shape: str, nodes: int) -> list:
        from .cost_parts import ctyun_parts

        return ctyun_parts(resources, node_shape, nodes)


def _tls_proxy(name: str, deployment, infrastructure, service, parent, router=None):
    """The TLS front on the master (tls_step.py) when the endpoint serves TLS, else None; in
    front of vLLM on node 0, or of the router's front on the master (several replicas)."""
    import pulumi

    from .tls_step import TlsProxy

    cfg, spec = deployment.config.serve, deployment.spec
    if not cfg.tls:
        return None
    key = pulumi.Config("kimi-k3").get_secret("tlsPrivateKey") if cfg.tls == "given" else ""
    proxy_py = (Path(__file__).with_name("tls_proxy.py")).read_text()
    return TlsProxy(f"{name}-tls", {
        **infrastructure.bootstrapped.ssh, "workDir": cfg.work_dir, "listenPort": cfg.tls_port,
        "upstreamHost": service.node0Addr if router is None else "127.0.0.1",
        "upstreamPort": spec.port if router is None else deployment.shared.port,
        "publicHost": infrastructure.master_public_ip, "certificatePem": cfg.tls_certificate,
        "privateKeyPem": key or "", "proxyPy": proxy_py},
        pulumi.ResourceOptions(parent=parent, depends_on=[service if router is None else router]))


def service_job_names(rendered: SlurmRendered) -> List[str]:
    """Every replica's Slurm job name, replica 0's first: the bootstrap steps that need nodes
    stop whichever of this stack's jobs holds them (resize.py)."""
    return [lay.job_name for lay in rendered.layouts or (rendered.layout,)]


def _service_inputs(deployment, infrastructure, i: int, layout: SlurmLayout, api_key,
                    hf_token) -> Dict[str, Any]:
    """Replica i's SlurmService inputs: its job name, work directory and scripts (replicas.py);
    the head on the master when the master is in that job's allocation."""
    import pulumi

    from .service import fingerprint

    plan, spec, files = deployment.plan, deployment.spec, deployment.rendered.files
    hcc, chain = deployment.config.cluster, infrastructure.bootstrapped
    pre = file_prefix(i)
    return {
        **chain.ssh, "workDir": layout.work_dir, "jobName": layout.job_name,
        "partition": hcc.queue_name, "srunSh": files[pre + "srun.sh"],
        "nodeSh": files[pre + "node.sh"], "checkSh": files[pre + "check.sh"],
        "apiGuardPy": files.get(API_GUARD_FILE, ""),
        "preflightSh": files[pre + "preflight.sh"], "watchdogSh": files[pre + "watchdog.sh"],
        "rpcPort": spec.rpc_port,
        "launchFingerprint": fingerprint(spec.to_dict()),
        "devicesPerNode": plan.devices_per_node, "nodeCount": spec.nodes, "port": spec.port,
        "servedModelName": spec.served_model_name, "apiKey": api_key, "hfToken": hf_token,
        "headHost": chain.master_name if hcc.master_in_compute else "",
        "publicHost": infrastructure.master_public_ip,
        "publicInnerIp": infrastructure.master_inner_ip,
        "startupTimeoutS": spec.startup_timeout_s,
        "ownerTag": f"{pulumi.get_project()}/{pulumi.get_stack()}",
        "serviceJobNames": service_job_names(deployment.rendered)}


def _router(name: str, deployment, infrastructure, services, parent, api_key=None):
    """vllm-router and the front on the master in front of every replica (several replicas),
    else None."""
    import pulumi

    from ..router.host import worker_url
    from .router_service import RouterService

    if len(services) < 2:
        return None
    spec, shared = deployment.spec, deployment.shared
    urls = pulumi.Output.all(*[s.node0Addr for s in services]).apply(
        lambda addrs: [worker_url(a, spec.port) for a in addrs])
    router = RouterService(f"{name}-router", {
        **infrastructure.bootstrapped.ssh, "routerDir": router_dir(deployment.config.serve),
        "jobName": deployment.rendered.layout.job_name, "workerUrls": urls,
        "port": shared.port, "startupTimeoutS": spec.startup_timeout_s,
        "python": deployment.config.serve.router_python, "apiKey": api_key or None},
        pulumi.ResourceOptions(parent=parent, depends_on=list(services)))
    return router


def _front_endpoint(deployment, infrastructure):
    """The router's front on the master's public address (plain HTTP; TLS is in front of it
    when the endpoint serves TLS)."""
    port = int(deployment.shared.port)
    return infrastructure.master_public_ip.apply(lambda ip: f"http://{ip}:{port}/v1")


def _router_gate_inputs(deployment, infrastructure, served) -> Dict[str, Any]:
    """The gate's target behind the router: the front on the master (forwarded to as the
    master sees it), every replica's head for greedy_replicas, every job id (a new one runs the
    checks again)."""
    import pulumi

    services = served.services
    return {"endpoint": _front_endpoint(deployment, infrastructure), "node0Addr": "127.0.0.1",
            "port": deployment.shared.port,
            "jobId": pulumi.Output.all(*[s.jobId for s in services]).apply(
                lambda ids: ",".join(str(i) for i in ids)),
            "replicaAddrs": pulumi.Output.all(*[s.node0Addr for s in services]),
            "replicaPort": deployment.spec.port}


def _replica_outputs(served) -> Dict[str, Any]:
    """With several replicas: `replicas` (each one's Slurm job, nodes and head address) and
    `router` (where the router runs and how it is supervised)."""
    import pulumi

    if served.router is None:
        return {}
    return {"replicas": pulumi.Output.all(*[pulumi.Output.all(s.jobId, s.nodes, s.node0Addr)
                                            for s in served.services]).apply(
                lambda rs: [{"jobId": r[0], "nodes": r[1], "head": r[2]} for r in rs]),
            "router": pulumi.Output.all(served.router.supervisor,
                                        served.router.workerUrls).apply(
                lambda r: {"supervisor": r[0], "workers": r[1]})}


def _service_pins(settings: Settings) -> list:
    """The router's PyPI packages (several replicas) and the metrics programs the master and
    nodes run (monitoring.CANDIDATES: found there, never fetched by kimi-k3)."""
    from ..config.pins import found_binary_pins, router_pin
    from . import monitoring

    out = []
    if settings.shared.replicas > 1:
        from ..router.settings import ROUTER_REQUIREMENTS, ROUTER_REQUIREMENTS_LEGACY
        from ..router.wheels import hashes, requires_python
        # the master installs one of the two by its python3's version (router/host.py)
        below = "%d.%d" % requires_python("current")
        out.append(router_pin(ROUTER_REQUIREMENTS, hashes(), legacy=(
            ROUTER_REQUIREMENTS_LEGACY, hashes("legacy"),
            "a python3 %d.%d to below %s" % (*requires_python("legacy"), below))))
    if settings.target.serve.monitoring:
        out += found_binary_pins(sorted(monitoring.CANDIDATES.items()))
    if settings.target.serve.model_source == "modelscope":
        from ..config.pins import UNPINNED, Pin
        from .fetch_commands import MODELSCOPE_PIP, SEED_PIP_INDEX
        out.append(Pin("the ModelScope CLI (pip, only when the master has no `modelscope`)",
                       f"{MODELSCOPE_PIP} and the dependencies pip resolves, from {SEED_PIP_INDEX}",
                       UNPINNED, "", "install the CLI you reviewed on the master first: a "
                       "`modelscope` on its PATH is used as it is (fetch_commands.py)"))
    return out


def _check_pins(shared: SharedSettings, cfg: HccServeConfig) -> None:
    """What ctyun-hcc cannot pin is refused rather than ignored: the nodes run the SIF image,
    not the OCI image kimi-k3:image names (a digest there would pin nothing), and `cthpc
    model install` takes no revision."""
    if "@" in shared.image:
        raise shared.refuse("image", "drop the @sha256 part: ctyun-hcc runs the SIF image "
                            "(kimi-k3:sifName), not this OCI image", "pins nothing on ctyun-hcc")
    if shared.model_revision and cfg.model_source == "cthpc":
        raise shared.refuse("modelRevision", "set kimi-k3:modelSource=modelscope to download a "
                            "pinned revision, or unset it", "cannot be pinned with "
                            "kimi-k3:modelSource=cthpc (cthpc model install takes no revision)")


def _logs_output(ssh: Mapping[str, Any], log_dir: str, job_id):
    """The stack output `logs` (logs.logs_output): the command and its ssh equivalent."""
    import pulumi

    from .logs import logs_output

    return pulumi.Output.all(ssh["sshHost"], ssh["sshPort"], ssh["sshUser"], ssh["sshBastion"],
                             job_id).apply(lambda v: logs_output(
                                 pulumi.get_stack(), v[0], int(v[1]), v[2], v[3] or "", log_dir,
                                 str(v[4])))


def _metrics_outputs(served: SlurmServed, infrastructure) -> Dict[str, Any]:
    """`metrics` (metrics_services.metrics_output) when the stack runs its Prometheus."""
    if served.prometheus is None:
        return {}
    from .metrics_services import metrics_output

    return {"metrics": metrics_output(served.prometheus, infrastructure.bootstrapped.ssh)}


def ssh_outputs(ssh: Mapping[str, Any], log_dir: str) -> Dict[str, Any]:
    """How to reach the master after `pulumi up` (the `logs` command reads these; docs/day-two.md):
    `ssh` (where, the pinned host keys, the Slurm log directory), `sshLoginKey` (the stack's own
    login key, secret) and `sshCommand` (a shell on the master with that key)."""
    import pulumi

    def where(v):
        host, port, user, host_key, bastion, bastion_key = v
        return {"host": host, "port": int(port), "user": user, "hostKey": host_key,
                "bastion": bastion or "", "bastionHostKey": bastion_key or "", "logDir": log_dir}

    def command(v):
        host, port, user, bastion = v
        jump = f" -J {bastion}" if bastion else ""
        p = f" -p {int(port)}" if int(port) != 22 else ""
        return (f"pulumi stack output --show-secrets sshLoginKey > k3.key && chmod 600 k3.key && "
                f"ssh -i k3.key{jump}{p} {user}@{host}")

    parts = [ssh["sshHost"], ssh["sshPort"], ssh["sshUser"], ssh["hostKey"], ssh["sshBastion"],
             ssh["bastionHostKey"]]
    return {"ssh": pulumi.Output.all(*parts).apply(where),
            "sshLoginKey": pulumi.Output.secret(ssh["sshPrivateKey"]),
            "sshCommand": pulumi.Output.all(*(parts[:3] + parts[4:5])).apply(command)}


TARGET = CtyunHcc()
