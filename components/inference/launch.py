"""The vLLM launch spec: per node role, the exact `vllm serve` argv and environment.

`launch(plan, runtime)` turns a Plan into a LaunchSpec that a target renders (Slurm scripts,
Kubernetes objects). Values known only on the node are `${NAME}` placeholders (see
PLACEHOLDERS); each renderer maps them to its own mechanism. Pure: no Pulumi, no I/O.

Errata of the seed guides are fixed here once (listed in docs/seed-mapping.md, "Errors fixed"): the port is the one
configured, `--max-model-len` is an integer the planner checked, no `--data-parallel-start-rank`
on the head, no obsolete environment variables, interfaces derived from the node's address, and
no `--allowed-local-media-path /` (it let any client make vLLM read any file of the node; vLLM's
default, no local media at all, is kept).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Dict, List, Mapping, Optional, Tuple

from . import api_guard as guard
from .catalog import IMAGES, MODELS, ServingImage
from .errors import ConfigError
from .planner import Plan
from .profiles import PROFILES
from .quoting import json_text
from .vllm_flags import ASCEND_ADDITIONAL_CONFIG, FLAGS, PARSERS, check_flags, supported, version_tuple

#: run-time values each renderer must provide
PLACEHOLDERS: Mapping[str, str] = {
    "NODE0_ADDR": "IP address of node 0 (the head), reachable from every node",
    "NODE_ADDR": "this node's own IP address on the cluster network",
    "NODE_IFNAME": "name of the network interface that owns NODE_ADDR",
    "NODE_RANK": "this node's index in the replica (0 = head)",
    # aws-eks streaming: the bucket is named by AWS at create time (components/aws_eks/weights/)
    "MODEL_URI": "the S3 URI vLLM streams the weights from, known only once the bucket exists",
}

#: a placeholder in a value: `${NAME}`
_PLACEHOLDER = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")

#: env vars whose values come from secrets; renderers inject them, never write them
SECRET_ENV = ("VLLM_API_KEY", "HF_TOKEN")


def ph(name: str) -> str:
    """The placeholder text for `name`."""
    assert name in PLACEHOLDERS, name
    return "${" + name + "}"


@dataclass(frozen=True)
class Runtime:
    """What the target decides about running the spec (not what the hardware decides)."""

    image: str
    port: int
    served_model_name: str = "Kimi-K3"
    model_path: str = "/model"  # where the weights are, as vLLM sees them
    host: str = "0.0.0.0"
    rpc_port: int = 13389
    vision_chunks_per_prompt: int = 40
    load_format: Optional[str] = None  # None = the profile's choice
    api_key: bool = False  # serve with an API key read from VLLM_API_KEY (a secret)
    hf_token: bool = False  # download with HF_TOKEN (a secret)
    extra_args: Tuple[str, ...] = ()
    #: the replica serves behind vllm-router (components/router/): vLLM must answer the render
    #: route its cache_aware policy routes on (`--enable-scale-out` where the release has it)
    behind_router: bool = False


@dataclass(frozen=True)
class RoleSpec:
    role: str  # "head" or "worker"
    node_rank: int  # for the worker template: -1 (rank is the NODE_RANK placeholder)
    argv: Tuple[str, ...]
    env: Tuple[Tuple[str, str], ...]

    @property
    def env_dict(self) -> Dict[str, str]:
        return dict(self.env)

    def for_rank(self, rank: int) -> "RoleSpec":
        """This template with NODE_RANK filled in."""
        fill = lambda s: s.replace(ph("NODE_RANK"), str(rank))  # noqa: E731
        return RoleSpec(self.role, rank, tuple(fill(a) for a in self.argv),
                        tuple((k, fill(v)) for k, v in self.env))


@dataclass(frozen=True)
class LaunchSpec:
    image: str
    vllm_version: str
    platform: str
    nodes: int
    port: int
    served_model_name: str
    model_path: str
    readiness_path: str
    startup_timeout_s: int
    head: RoleSpec
    worker: Optional[RoleSpec]  # template for every worker; NODE_RANK is a placeholder
    secret_env: Tuple[str, ...] = ()
    rpc_port: int = 13389
    #: the head loads kimi-k3's API-key guard (`--middleware kk3_api_guard.ApiKeyGuard`): the
    #: target must put kk3_api_guard.py on its PYTHONPATH (components/inference/api_guard.py)
    api_guard: bool = False

    def __post_init__(self):
        if self.head.role != "head" or self.head.node_rank != 0:
            raise ValueError("the head must be role 'head' at node rank 0")
        if "--data-parallel-start-rank" in self.head.argv:
            raise ValueError("the head must not get --data-parallel-start-rank")
        if (self.nodes > 1) != (self.worker is not None):
            raise ValueError("a multi-node spec needs a worker template, a single-node one none")
        if self.worker is not None and "--headless" not in self.worker.argv:
            raise ValueError("workers must be --headless")
        if self.api_guard != (guard.IMPORT_PATH in self.head.argv):
            raise ValueError("api_guard and the head's --middleware flag disagree")
        if self.api_guard and self.head.env_dict.get(guard.RUST_FRONTEND_ENV, "0") != "0":
            raise ValueError("vLLM's Rust front end refuses --middleware: the guard needs the "
                             "Python front end")

    def roles(self) -> List[RoleSpec]:
        """Concrete roles, node 0 first."""
        out = [self.head]
        if self.worker is not None:
            out += [self.worker.for_rank(r) for r in range(1, self.nodes)]
        return out

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping) -> "LaunchSpec":
        d = dict(data)

        def role(r):
            return None if r is None else RoleSpec(
                r["role"], r["node_rank"], tuple(r["argv"]), tuple(tuple(kv) for kv in r["env"]))

        d["head"] = role(d["head"])
        d["worker"] = role(d["worker"])
        d["secret_env"] = tuple(d.get("secret_env", ()))
        return cls(**d)


def _json(obj) -> str:
    return json_text(obj)


def _image(runtime: Runtime, plan: Plan) -> ServingImage:
    img = IMAGES.get(runtime.image.partition("@")[0])  # a digest pins one build of that tag
    if img is None:
        # an image we have not checked: assume the platform default's vLLM release
        raise ConfigError("kimi-k3:image", runtime.image,
                          f"use one of {', '.join(sorted(IMAGES))} (flags are checked per image)",
                          "is not a known serving image")
    if img.platform != plan.platform:
        raise ConfigError("kimi-k3:image", runtime.image,
                          f"use an image built for {plan.platform}", f"is built for {img.platform}")
    return img


def _ascend_argv(plan: Plan, rt: Runtime, img: ServingImage, worker: bool) -> List[str]:
    """vllm-ascend's argv: data parallel across nodes (the hardware's flags: its profile)."""
    par = plan.parallelism
    profile = PROFILES[plan.family]
    additional = {k: True for k in profile.additional_config
                  if supported(ASCEND_ADDITIONAL_CONFIG, k, img.plugin_version or "0")}
    argv = [
        "--served-model-name", rt.served_model_name,
        "--host", rt.host,
        "--port", str(rt.port),
        "--trust-remote-code",
        "--tensor-parallel-size", str(par.tensor_parallel),
        "--data-parallel-size", str(par.data_parallel),
        "--data-parallel-size-local", str(par.data_parallel_size_local),
    ]
    if worker:
        argv += ["--headless", "--data-parallel-start-rank", ph("NODE_RANK")]
    if par.data_parallel > 1:
        argv += ["--data-parallel-address", ph("NODE0_ADDR"),
                 "--data-parallel-rpc-port", str(rt.rpc_port)]
    argv += ["--enable-prefix-caching"]
    if par.enable_expert_parallel:
        argv += ["--enable-expert-parallel"]
    if plan.max_num_seqs is not None:
        argv += ["--max-num-seqs", str(plan.max_num_seqs)]
    argv += ["--max-model-len", str(plan.max_model_len)]
    if plan.max_num_batched_tokens is not None:
        argv += ["--max-num-batched-tokens", str(plan.max_num_batched_tokens)]
    argv += ["--gpu-memory-utilization", f"{plan.memory.gpu_memory_utilization:g}"]
    argv += list(profile.extra_args)
    if additional:
        argv += ["--additional-config", _json(additional)]
    argv += list(profile.extra_args_late)
    argv += ["--limit-mm-per-prompt", _json({"vision_chunk": rt.vision_chunks_per_prompt})]
    return argv


def _cuda_argv(plan: Plan, rt: Runtime, img: ServingImage, worker: bool) -> List[str]:
    par = plan.parallelism
    argv = [
        "--served-model-name", rt.served_model_name,
        "--host", rt.host,
        "--port", str(rt.port),
        "--trust-remote-code",
        "--gpu-memory-utilization", f"{plan.memory.gpu_memory_utilization:g}",
        "--tensor-parallel-size", str(par.tensor_parallel),
    ]
    if par.pipeline_parallel > 1:
        argv += ["--pipeline-parallel-size", str(par.pipeline_parallel),
                 "--nnodes", str(plan.nodes),
                 "--node-rank", ph("NODE_RANK") if worker else "0",
                 "--master-addr", ph("NODE0_ADDR"),
                 "--data-parallel-backend", "mp"]
        if worker:
            argv += ["--headless"]
    profile = PROFILES[plan.family]
    load_format = rt.load_format
    if load_format is None:
        load_format = "runai_streamer" if plan.cold_start.loading == "stream-s3" else \
            profile.default_load_format
    if load_format:
        argv += ["--load-format", load_format]
    argv += list(profile.extra_args)
    argv += ["--no-enable-flashinfer-autotune"]
    if plan.max_num_seqs is not None:
        argv += ["--max-num-seqs", str(plan.max_num_seqs)]
    argv += ["--max-model-len", str(plan.max_model_len)]
    if plan.max_num_batched_tokens is not None:
        argv += ["--max-num-batched-tokens", str(plan.max_num_batched_tokens)]
    if plan.memory.kv_cache_dtype != "auto":
        argv += ["--kv-cache-dtype", plan.memory.kv_cache_dtype]
        # FP8 KV needs prefill query quantization with an MLA prefill backend (recipe)
        argv += ["--attention-config",
                 _json({"use_prefill_query_quantization": True, "mla_prefill_backend": "flashinfer"})]
    argv += ["--enable-prefix-caching"]
    return argv


def _common_tail(img: ServingImage) -> List[str]:
    for parser in ("kimi_k3",):
        if version_tuple(img.vllm_version) < version_tuple(PARSERS[parser]):
            raise ConfigError("kimi-k3:image", img.ref, f"use an image with vLLM >= {PARSERS[parser]}",
                              f"has vLLM {img.vllm_version}, which lacks the {parser} parsers")
    return ["--enable-auto-tool-choice", "--tool-call-parser", "kimi_k3",
            "--reasoning-parser", "kimi_k3"]


def _env(plan: Plan, head: bool, startup_timeout_s: int, guarded: bool) -> List[Tuple[str, str]]:
    """The role's environment. `guarded`: the API-key guard is loaded, so vLLM must run its
    Python front end (the Rust one, VLLM_USE_RUST_FRONTEND, refuses --middleware)."""
    profile = PROFILES[plan.family]
    env: List[Tuple[str, str]] = list(profile.node_env)
    if profile.visible_devices_env:
        env += [(profile.visible_devices_env, ",".join(str(i) for i in range(plan.devices_per_node)))]
    env += sorted((k, v) for k, v in profile.extra_env.items()
                  if not (guarded and k == guard.RUST_FRONTEND_ENV))
    if plan.parallelism.pipeline_parallel > 1:
        env += sorted(profile.extra_env_pipelined.items())
        env += [(name, ph("NODE_IFNAME")) for name in profile.ifname_env_pipelined]
    if head or profile.ready_timeout_on_workers:
        env += [("VLLM_ENGINE_READY_TIMEOUT_S", str(startup_timeout_s))]
    for name, value in env:  # a profile's values may only use the placeholders renderers map
        unknown = set(_PLACEHOLDER.findall(value)) - set(PLACEHOLDERS)
        if unknown:
            raise ValueError(f"{profile.family} profile: {name} uses unknown placeholder(s) "
                             f"{', '.join(sorted(unknown))}")
    return env


def _router_args(runtime: Runtime, img: ServingImage, worker: bool) -> List[str]:
    """Behind vllm-router the head serves the render route (older releases always do)."""
    if not runtime.behind_router or worker or not supported(FLAGS, "--enable-scale-out",
                                                             img.vllm_version):
        return []
    return ["--enable-scale-out"]


def launch(plan: Plan, runtime: Runtime) -> LaunchSpec:
    """The launch spec for `plan` under `runtime`; every flag checked against the image."""
    img = _image(runtime, plan)
    build = _ascend_argv if plan.platform == "ascend" else _cuda_argv
    timeout = plan.cold_start.startup_timeout_s
    guarded = runtime.api_key  # vLLM's own key check misses most routes: kimi-k3's guard

    def role(worker: bool) -> RoleSpec:
        guard_args = guard.middleware_args() if guarded and not worker else []  # the head serves HTTP
        argv = ["vllm", "serve", runtime.model_path] + build(plan, runtime, img, worker) \
            + _common_tail(img) + guard_args + _router_args(runtime, img, worker) \
            + list(runtime.extra_args)
        check_flags(argv, img.vllm_version)
        return RoleSpec("worker" if worker else "head", -1 if worker else 0, tuple(argv),
                        tuple(_env(plan, not worker, timeout, guarded)))

    head = role(worker=False)
    worker = role(worker=True) if plan.nodes > 1 else None
    secret_env = tuple(n for n, on in (("VLLM_API_KEY", runtime.api_key),
                                       ("HF_TOKEN", runtime.hf_token)) if on)
    return LaunchSpec(
        image=runtime.image,  # the tag, or tag@sha256:... as kimi-k3:image gives it
        vllm_version=img.vllm_version,
        platform=plan.platform,
        nodes=plan.nodes,
        port=runtime.port,
        served_model_name=runtime.served_model_name,
        model_path=runtime.model_path,
        readiness_path="/health",
        startup_timeout_s=timeout,
        head=head,
        worker=worker,
        secret_env=secret_env,
        rpc_port=runtime.rpc_port,
        api_guard=guarded,
    )


def model_dir_name(plan: Plan) -> str:
    """Directory name the weights live under on a node (e.g. `Kimi-K3-w4a8`)."""
    return MODELS[plan.model].local_dir_name
