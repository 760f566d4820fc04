"""Turn (model, hardware, topology, serving knobs) into a deployment plan, or refuse.

Pure arithmetic; imports no Pulumi and does no I/O. The formulas are explained in
docs/planner.md. A plan either fits by construction or `plan()` raises PlanError naming the
config key, the value and the smallest change that would fit.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Mapping, Optional, Tuple

from .catalog import (
    GIB,
    K3_MODELS,
    MODELS,
    NODE_SHAPES,
    ModelProfile,
    NodeShape,
    with_architecture_overrides,
)
from . import coldstart as cs
from .errors import ConfigError, PlanError
from .profiles import PROFILES, ServingProfile

#: contexts the planner chooses from when `max_model_len` is not set (largest that fits wins)
CONTEXT_LADDER = (1_048_576, 524_288, 262_144, 131_072, 65_536, 32_768, 16_384, 8_192)
MIN_MAX_MODEL_LEN = 1_024
MAX_NODES = 64
#: where the weights come from, and the read rate the cold-start model assumes (GB/s);
#: sources and assumptions in components/inference/coldstart.py
WEIGHT_SOURCES: Mapping[str, float] = {k: v[0] for k, v in cs.SOURCE_RATES.items()}
#: `mirror` = the stack's own S3 bucket, filled from the hub by a Job (aws-eks)
SOURCES_BY_PLATFORM = {"cuda": ("hub", "s3", "mirror"), "ascend": ("cthpc", "modelscope")}
STREAM_READ_GB_PER_S = cs.STREAM_RATE[0]
COLD_START_SAFETY = cs.COLD_START_SAFETY
KV_DTYPE_BYTES = {"auto": 2.0, "fp8": 1.0}


@dataclass(frozen=True)
class PlanRequest:
    """Everything `plan()` needs; defaults are the planner's choice."""

    model: str
    node_shape: str
    nodes: int
    max_model_len: Optional[int] = None
    max_num_seqs: Optional[int] = None
    max_num_batched_tokens: Optional[int] = None
    gpu_memory_utilization: Optional[float] = None
    kv_cache_dtype: Optional[str] = None
    weights_source: Optional[str] = None
    stream_weights: bool = False
    model_overrides: Mapping[str, float] = field(default_factory=dict)
    #: seconds the mirror has before the block starts (None = unknown: assume it is full)
    block_lead_s: Optional[int] = None
    #: seconds from the block's start until a GPU node runs pods (the target's figure; 0 = none)
    node_ready_s: int = 0
    #: the target keeps vLLM's compile cache between starts (a second start skips compiling)
    compile_cache: bool = False
    #: how fast the mirror fills from the hub (GB/s; None = coldstart.MIRROR_FILL_RATE)
    mirror_fill_gb_per_s: Optional[float] = None
    #: why the target chose the weights source (shown in the plan's notes; "" = nothing to say)
    source_note: str = ""
    #: what the target says about traffic between the nodes of a replica (nodes > 1): a dict with
    #: at least `transport` and `summary`, and `warning` when there is one (aws-eks: efa/transport.py)
    inter_node: Optional[Mapping[str, Any]] = None
    #: what the GPU clock starts at, in the plan's words ("the training plan starts"); "" = the
    #: default by weights source (a Capacity Block's start, or the nodes being up)
    clock_start: str = ""


@dataclass(frozen=True)
class Parallelism:
    tensor_parallel: int
    data_parallel: int
    pipeline_parallel: int
    expert_parallel: int  # EP size; 1 when expert parallelism is off
    enable_expert_parallel: bool
    data_parallel_size_local: int

    @property
    def devices(self) -> int:
        return self.tensor_parallel * self.data_parallel * self.pipeline_parallel


@dataclass(frozen=True)
class Memory:
    device_memory_gib: float
    gpu_memory_utilization: float
    usable_gib_per_device: float
    weights_gib_per_device: float
    reserve_gib_per_device: float
    kv_cache_gib_per_device: float
    kv_cache_dtype: str
    kv_bytes_per_token_per_device: float
    kv_tokens_per_replica: int  # tokens of KV one data-parallel rank can hold


@dataclass(frozen=True)
class ColdStart:
    weights_source: str
    loading: str  # "local-nvme" or "stream-s3"
    stage_s: int  # fetching weights onto the node(s), before vLLM starts
    load_s: int  # reading weights into device memory
    warmup_s: int  # compile + graphs, no compile cache
    estimate_s: int  # load + warm-up (what the engine's timeout must cover)
    startup_timeout_s: int  # VLLM_ENGINE_READY_TIMEOUT_S and the readiness deadline
    #: why `startup_timeout_s` is that number: the profile's floor (the recipe's) or the plan's budget
    startup_timeout_why: str = ""
    #: every phase of the chosen path, in order, with its clock and its source
    phases: Tuple[cs.Phase, ...] = ()
    #: block (node) start -> first token on the GPU clock, first start (no compile cache)
    first_token_s: int = 0
    #: the same for a later start with the compile cache restored (None: no cache here)
    first_token_cached_s: Optional[int] = None
    #: the hub path's first token, for comparison (cuda only; None elsewhere)
    hub_first_token_s: Optional[int] = None
    #: (hub - chosen) x nodes of a replica: GPU node-seconds saved per replica start
    gpu_node_s_saved: int = 0
    #: filling the mirror (before the block starts, on the system node); None: no mirror
    mirror_fill_s: Optional[int] = None
    #: what the GPU clock starts at as the target says it (PlanRequest.clock_start; "": default)
    clock_start: str = ""


@dataclass(frozen=True)
class Plan:
    model: str
    model_display_name: str
    model_repo_id: str
    node_shape: str
    accelerator: str
    platform: str
    family: str
    devices_per_node: int
    nodes: int
    parallelism: Parallelism
    memory: Memory
    max_model_len: int
    max_num_seqs: Optional[int]
    max_num_batched_tokens: Optional[int]
    full_length_seqs_per_replica: int
    cold_start: ColdStart
    usd_per_hour: Optional[float]
    notes: Tuple[str, ...] = ()
    #: traffic between the nodes of a replica as the target states it (None: one node, or a
    #: target that says nothing): transport, links, the bandwidth it assumes and its source
    inter_node: Optional[Mapping[str, Any]] = None

    def to_dict(self) -> dict:
        d = asdict(self)
        if not d["cold_start"].get("clock_start"):  # said only when a target words it
            d["cold_start"].pop("clock_start", None)
        return d

    @classmethod
    def from_dict(cls, data: Mapping) -> "Plan":
        d = dict(data)
        d["parallelism"] = Parallelism(**d["parallelism"])
        d["memory"] = Memory(**d["memory"])
        c = dict(d["cold_start"])
        c["phases"] = tuple(cs.Phase(**ph) for ph in c.get("phases", ()))
        d["cold_start"] = ColdStart(**c)
        d["notes"] = tuple(d.get("notes", ()))
        return cls(**d)

    def explain(self) -> str:
        """A table a person reads in ten seconds."""
        p, m, c = self.parallelism, self.memory, self.cold_start
        layout = f"TP{p.tensor_parallel}"
        if p.data_parallel > 1:
            layout = f"DP{p.data_parallel} x " + layout
        if p.pipeline_parallel > 1:
            layout += f" x PP{p.pipeline_parallel}"
        if p.enable_expert_parallel:
            layout += f", EP{p.expert_parallel}"
        seqs = "vLLM default" if self.max_num_seqs is None else str(self.max_num_seqs)
        rows = [
            ("model", f"{self.model_display_name} ({self.model_repo_id})"),
            ("hardware", f"{self.nodes} x {self.node_shape} ({self.devices_per_node} x "
                         f"{self.accelerator}, {m.device_memory_gib:g} GiB each)"),
            ("layout", f"{layout} on {p.devices} devices"),
            ("memory/device", f"{m.weights_gib_per_device:.1f} GiB weights + "
                              f"{m.reserve_gib_per_device:g} GiB reserve + "
                              f"{m.kv_cache_gib_per_device:.1f} GiB KV "
                              f"(of {m.usable_gib_per_device:.1f} at {m.gpu_memory_utilization:g})"),
            ("context", f"{self.max_model_len:,} tokens, KV {m.kv_cache_dtype}; "
                        f"{self.full_length_seqs_per_replica} full-length seqs per replica, "
                        f"max-num-seqs {seqs}"),
            ("KV capacity", f"{m.kv_tokens_per_replica:,} tokens per replica"),
            *([("inter-node", str(self.inter_node.get("summary")))] if self.inter_node else []),
            ("cold start", f"stage {c.stage_s} s ({c.weights_source}), load {c.load_s} s "
                           f"({c.loading}) + warm-up {c.warmup_s} s; timeout {c.startup_timeout_s} s"),
            ("first token", _first_token_text(c, self.usd_per_hour)),
            ("cost", "unknown" if self.usd_per_hour is None
             else f"${self.usd_per_hour * self.nodes:,.2f}/h"),
        ]
        width = max(len(k) for k, _ in rows)
        lines = [f"{k:<{width}}  {v}" for k, v in rows]
        lines += [f"{'note':<{width}}  {n}" for n in self.notes]
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.explain()


def _minutes(s: int) -> str:
    return f"{s / 60:.0f} min" if s >= 600 else f"{s / 60:.1f} min"


def _first_token_text(c: ColdStart, usd_per_hour: Optional[float]) -> str:
    """Block (or node) start -> first token of the chosen path, next to the hub's, with the GPU time
    saved. On a target without Capacity Blocks (CTyun) the clock starts when the nodes are up."""
    start = c.clock_start or ("the block starts" if c.weights_source in ("hub", "s3", "mirror")
                              else "the nodes are up")
    text = f"{_minutes(c.first_token_s)} after {start} ({c.weights_source}"
    if c.loading == "stream-s3":
        text += ", streamed"
    text += ")"
    if c.first_token_cached_s is not None and c.first_token_cached_s < c.first_token_s:
        text += f", {_minutes(c.first_token_cached_s)} with the compile cache"
    if c.hub_first_token_s is not None and c.weights_source != "hub":
        text += f"; hub path {_minutes(c.hub_first_token_s)}"
        if c.gpu_node_s_saved > 0:
            hours = c.gpu_node_s_saved / 3600
            text += f", saves {hours:.1f} GPU node-h per start"
            if usd_per_hour is not None:
                text += f" (${hours * usd_per_hour:,.0f})"
    return text


def _is_power_of_two(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def _layout(model: ModelProfile, shape: NodeShape, nodes: int) -> Parallelism:
    devices = shape.devices
    if shape.accelerator.platform == "ascend":
        # One DP rank per node, TP across the node's NPUs, experts across all NPUs (the seed).
        return Parallelism(devices, nodes, 1, devices * nodes, True, 1)
    # NVIDIA: TP within a node, pipeline stages across nodes (the recipe's TP8 x PP2).
    return Parallelism(devices, 1, nodes, 1, False, 1)


def _weights_gib_per_device(model: ModelProfile, par: Parallelism) -> float:
    weights = model.weights_bytes / GIB
    experts = weights * model.expert_weight_fraction
    dense = weights - experts
    if par.enable_expert_parallel:
        return experts / par.expert_parallel + dense / (par.tensor_parallel * par.pipeline_parallel)
    return weights / (par.tensor_parallel * par.pipeline_parallel)


@dataclass(frozen=True)
class _Fit:
    par: Parallelism
    util: float
    usable: float
    weights: float
    kv_gib: float
    kv_bytes_per_token: float
    state_bytes_per_seq: float

    def seq_bytes(self, tokens: int) -> float:
        return self.kv_bytes_per_token * tokens + self.state_bytes_per_seq

    def holds(self, tokens: int) -> bool:
        return self.kv_gib > 0 and self.seq_bytes(tokens) <= self.kv_gib * GIB


def _fit(model, shape, nodes, profile: ServingProfile, req: PlanRequest, kv_dtype: str) -> _Fit:
    par = _layout(model, shape, nodes)
    if req.gpu_memory_utilization is not None:
        util = req.gpu_memory_utilization
    elif par.pipeline_parallel > 1:
        util = profile.gpu_memory_utilization_pipelined
    else:
        util = profile.gpu_memory_utilization
    usable = shape.accelerator.hbm_gib * util
    weights = _weights_gib_per_device(model, par)
    kv = usable - weights - profile.reserve_gib_per_device
    arch = model.architecture
    per_token = arch.kv_bytes_per_token(KV_DTYPE_BYTES[kv_dtype]) / par.pipeline_parallel
    state = arch.kda_state_bytes_per_seq / (par.tensor_parallel * par.pipeline_parallel)
    return _Fit(par, util, usable, weights, kv, per_token, state)


def _valid_node_counts(shape: NodeShape):
    for n in range(1, MAX_NODES + 1):
        if shape.accelerator.platform == "ascend" or _is_power_of_two(n):
            yield n


def _check_request(req: PlanRequest) -> Tuple[ModelProfile, NodeShape, ServingProfile, str]:
    """The request's model, node shape, serving profile and KV dtype, or the first refusal."""
    model, shape = _check_model(req)
    acc = shape.accelerator
    _check_nodes(req, acc)
    profile = PROFILES[acc.family]
    kv_dtype = _check_knobs(req, model, acc, profile)
    _check_weights(req, acc)
    return model, shape, profile, kv_dtype


def _check_model(req: PlanRequest) -> Tuple[ModelProfile, NodeShape]:
    if req.model not in MODELS:
        raise ConfigError("kimi-k3:model", req.model, f"use one of {', '.join(sorted(K3_MODELS))}",
                          "is not a known Kimi K3 weight variant")
    if req.node_shape not in NODE_SHAPES:
        raise ConfigError("kimi-k3:accelerator", req.node_shape,
                          f"use one of {', '.join(sorted(NODE_SHAPES))}", "is not a known node shape")
    model = MODELS[req.model]
    if req.model_overrides:
        try:
            model = with_architecture_overrides(model, req.model_overrides)
        except KeyError as e:
            raise ConfigError("kimi-k3:modelOverrides", e.args[0],
                              "use field names listed in docs/planner.md", "is not a known assumption")
        except (TypeError, ValueError):
            raise ConfigError("kimi-k3:modelOverrides", dict(req.model_overrides),
                              "give numbers", "has a non-numeric value")
    shape = NODE_SHAPES[req.node_shape]
    acc = shape.accelerator
    if acc.platform not in model.platforms:
        ok = sorted(k for k, m in MODELS.items()  # the same release's variants that load here
                    if acc.platform in m.platforms and m.model_id == model.model_id)
        raise ConfigError("kimi-k3:model", req.model, f"use {' or '.join(ok)} on {acc.key}",
                          f"({model.display_name}) does not load on {acc.display_name}")
    return model, shape


def _check_nodes(req: PlanRequest, acc) -> None:
    if not isinstance(req.nodes, int) or not 1 <= req.nodes <= MAX_NODES:
        raise ConfigError("kimi-k3:nodes", req.nodes, f"use 1 to {MAX_NODES}", "is out of range")
    if acc.platform == "cuda" and not _is_power_of_two(req.nodes):
        lower = 1 << (req.nodes.bit_length() - 1)
        raise ConfigError("kimi-k3:nodes", req.nodes,
                          f"use {lower} or {lower * 2} (one pipeline stage per node, stages split "
                          f"the layers evenly)", "is not a power of two")


def _check_knobs(req: PlanRequest, model: ModelProfile, acc, profile: ServingProfile) -> str:
    """The serving knobs' ranges; returns the KV cache dtype (the request's or the profile's)."""
    kv_dtype = req.kv_cache_dtype or profile.kv_cache_dtype
    if kv_dtype not in acc.kv_cache_dtypes:
        raise ConfigError("kimi-k3:kvCacheDtype", kv_dtype,
                          f"use one of {', '.join(acc.kv_cache_dtypes)} on {acc.key}",
                          "is not supported here")
    u = req.gpu_memory_utilization
    if u is not None and not 0.5 <= u <= 0.98:
        raise ConfigError("kimi-k3:gpuMemoryUtilization", u, "use a value from 0.5 to 0.98",
                          "is out of range")
    if req.max_model_len is not None and not (
        MIN_MAX_MODEL_LEN <= req.max_model_len <= model.max_context_tokens
    ):
        raise ConfigError("kimi-k3:maxModelLen", req.max_model_len,
                          f"use {MIN_MAX_MODEL_LEN} to {model.max_context_tokens} (an integer; "
                          f"131072 is 128K)", "is out of range")
    if req.max_num_seqs is not None and not 1 <= req.max_num_seqs <= 4096:
        raise ConfigError("kimi-k3:maxNumSeqs", req.max_num_seqs, "use 1 to 4096", "is out of range")
    if req.max_num_batched_tokens is not None and req.max_num_batched_tokens < 256:
        raise ConfigError("kimi-k3:maxNumBatchedTokens", req.max_num_batched_tokens,
                          "use at least 256", "is too small")
    return kv_dtype


def _check_weights(req: PlanRequest, acc) -> None:
    source = req.weights_source or SOURCES_BY_PLATFORM[acc.platform][0]
    if source not in SOURCES_BY_PLATFORM[acc.platform]:
        raise ConfigError("kimi-k3:weightsSource", source,
                          f"use one of {', '.join(SOURCES_BY_PLATFORM[acc.platform])} on {acc.key}",
                          "is not available here")
    if req.stream_weights and source not in ("s3", "mirror"):
        raise ConfigError("kimi-k3:streamWeights", True, "set kimi-k3:weightsSource=s3 or mirror, "
                          "or drop streamWeights", f"needs weights in S3, not {source}")
    if req.block_lead_s is not None and req.block_lead_s < 0:
        raise ConfigError("kimi-k3:capacityEarliestStart", req.block_lead_s,
                          "give a start in the future", "is in the past")
    if req.mirror_fill_gb_per_s is not None and not req.mirror_fill_gb_per_s > 0:
        raise ConfigError("kimi-k3:systemInstanceType", req.mirror_fill_gb_per_s,
                          "use an instance type with network bandwidth", "gives no mirror bandwidth")


def _cold_start(req: PlanRequest, model: ModelProfile, shape: NodeShape, profile: ServingProfile,
                par: Parallelism) -> ColdStart:
    """The chosen path's phases, its first token, and the hub path's for comparison."""
    source = req.weights_source or SOURCES_BY_PLATFORM[shape.accelerator.platform][0]
    engine = cs.EngineStart(profile.compile_s, profile.compile_cached_s, profile.graphs_s,
                            profile.engine_source)
    common = dict(checkpoint_bytes=model.download_bytes,
                  bytes_per_node=model.download_bytes / par.pipeline_parallel,
                  nvme_gb_per_s=shape.nvme_read_gb_per_s, engine=engine,
                  node_ready_s=req.node_ready_s)
    chosen = cs.path(source=source, stream=req.stream_weights, block_lead_s=req.block_lead_s,
                     mirror_fill_gb_per_s=req.mirror_fill_gb_per_s, **common)
    hub = cs.path(source="hub", stream=False, **common) \
        if shape.accelerator.platform == "cuda" else None
    cached = req.compile_cache and profile.compile_cached_s < profile.compile_s
    first = chosen.gpu_seconds()
    first_cached = None
    if cached:
        # a cached start skips compiling, keeps everything else (graphs are captured again)
        first_cached = first - profile.compile_s + profile.compile_cached_s
    stage = chosen.phase("stage")
    load = chosen.phase("load")
    mirror = chosen.phase("mirror")
    estimate = load.seconds + profile.warmup_s
    timeout, timeout_why = cs.startup_timeout_and_reason(chosen, profile.ready_timeout_floor_s,
                                                         profile.ready_timeout_floor_source)
    return ColdStart(
        weights_source=source,
        loading=chosen.loading,
        stage_s=stage.seconds,
        load_s=load.seconds,
        warmup_s=profile.warmup_s,
        estimate_s=estimate,
        startup_timeout_s=timeout,
        startup_timeout_why=timeout_why,
        phases=chosen.phases,
        first_token_s=first,
        first_token_cached_s=first_cached,
        hub_first_token_s=None if hub is None else hub.gpu_seconds(),
        gpu_node_s_saved=0 if hub is None else max(0, hub.gpu_seconds() - first) * par.pipeline_parallel,
        mirror_fill_s=None if mirror is None else mirror.seconds,
        clock_start=req.clock_start,
    )


def _minimum_nodes(model, shape, profile, req, kv_dtype, tokens: int) -> Optional[int]:
    for n in _valid_node_counts(shape):
        if _fit(model, shape, n, profile, req, kv_dtype).holds(tokens):
            return n
    return None


def _refuse_unfit(model, shape, profile, req: PlanRequest, kv_dtype: str, fit: _Fit) -> None:
    """PlanError when not even one sequence of the wanted length fits next to the weights."""
    wanted = req.max_model_len or MIN_MAX_MODEL_LEN
    if fit.holds(wanted):
        return
    need = _minimum_nodes(model, shape, profile, req, kv_dtype, wanted)
    have = f"{shape.hbm_gib_per_node / 1024:.2f} TiB" if shape.hbm_gib_per_node >= 1024 \
        else f"{shape.hbm_gib_per_node:.0f} GiB"
    what = (f"cannot hold {model.display_name} ({model.weights_bytes / 1e12:.2f} TB)"
            if fit.weights + profile.reserve_gib_per_device >= fit.usable
            else f"cannot hold one {wanted}-token sequence of {model.display_name} next to "
                 f"its weights")
    what += f" on {req.nodes} x {shape.key} ({have} of {shape.accelerator.key} per node)"
    if need is None:
        fix = "lower kimi-k3:maxModelLen or use an accelerator with more memory"
        if req.max_model_len:
            raise PlanError("kimi-k3:maxModelLen", req.max_model_len, fix, what)
        raise PlanError("kimi-k3:nodes", req.nodes, fix, what)
    raise PlanError("kimi-k3:nodes", req.nodes, f"use at least {need}", what)


def _context(model: ModelProfile, profile: ServingProfile, req: PlanRequest, fit: _Fit) -> int:
    """max-model-len: the request's, else the largest rung of the ladder that fits."""
    if req.max_model_len is not None:
        return req.max_model_len
    cap = min(profile.max_model_len_cap, model.max_context_tokens)
    return next((t for t in CONTEXT_LADDER if t <= cap and fit.holds(t)), MIN_MAX_MODEL_LEN)


def _batched_tokens(profile: ServingProfile, req: PlanRequest, par: Parallelism,
                    max_model_len: int) -> int:
    if req.max_num_batched_tokens is not None:
        return req.max_num_batched_tokens
    if par.pipeline_parallel > 1 and profile.batched_tokens_pipelined is not None:
        return profile.batched_tokens_pipelined
    return next(b for limit, b in profile.batched_tokens_by_context if max_model_len <= limit)


def _mirror_note(req: PlanRequest, cold: ColdStart) -> Optional[str]:
    if cold.mirror_fill_s is None:
        return None
    fill = _minutes(cold.mirror_fill_s)
    # streaming reads the bucket itself: its first start waits for the mirror instead
    late = "waits for it on the GPU clock (streaming cannot fall back to the hub)" \
        if req.stream_weights else "stages from the hub"
    if req.block_lead_s is not None and req.block_lead_s < cold.mirror_fill_s:
        return (f"the S3 mirror needs ~{fill} to fill but the block starts in "
                f"{_minutes(req.block_lead_s)}: this first start {late}, later starts from the mirror")
    return (f"the S3 mirror fills in ~{fill} on the system node: run `pulumi up` "
            f"at least that long before the block starts, or its first start {late}")


def _notes(model: ModelProfile, req: PlanRequest, par: Parallelism, max_num_seqs: Optional[int],
           full_seqs: int, cold: ColdStart) -> Tuple[str, ...]:
    """What the plan's reader should know: idle experts, queued sequences, the weights' path."""
    notes = []
    if par.enable_expert_parallel and par.expert_parallel > model.architecture.routed_experts:
        notes.append(f"EP{par.expert_parallel} exceeds the {model.architecture.routed_experts} "
                     f"routed experts: some devices hold none")
    if max_num_seqs is not None and full_seqs < max_num_seqs:
        notes.append(f"only {full_seqs} of max-num-seqs {max_num_seqs} sequences fit at full "
                     f"length; vLLM queues the rest")
    if req.source_note:
        notes.append(req.source_note)
    if req.nodes > 1 and req.inter_node and req.inter_node.get("warning"):
        notes.append(str(req.inter_node["warning"]))
    mirror = _mirror_note(req, cold)
    if mirror:
        notes.append(mirror)
    return tuple(notes)


def _memory(shape: NodeShape, profile: ServingProfile, fit: _Fit, kv_dtype: str,
            kv_tokens: int) -> Memory:
    return Memory(
        device_memory_gib=shape.accelerator.hbm_gib,
        gpu_memory_utilization=fit.util,
        usable_gib_per_device=round(fit.usable, 3),
        weights_gib_per_device=round(fit.weights, 3),
        reserve_gib_per_device=profile.reserve_gib_per_device,
        kv_cache_gib_per_device=round(fit.kv_gib, 3),
        kv_cache_dtype=kv_dtype,
        kv_bytes_per_token_per_device=fit.kv_bytes_per_token,
        kv_tokens_per_replica=kv_tokens,
    )


def plan(req: PlanRequest) -> Plan:
    """Plan `req` or raise ConfigError/PlanError with the key, the value and the fix."""
    model, shape, profile, kv_dtype = _check_request(req)
    fit = _fit(model, shape, req.nodes, profile, req, kv_dtype)
    _refuse_unfit(model, shape, profile, req, kv_dtype, fit)
    max_model_len = _context(model, profile, req, fit)
    par = fit.par
    kv_tokens = int(fit.kv_gib * GIB // fit.kv_bytes_per_token)
    full_seqs = int(fit.kv_gib * GIB // fit.seq_bytes(max_model_len))
    max_num_seqs = req.max_num_seqs if req.max_num_seqs is not None else profile.max_num_seqs
    cold = _cold_start(req, model, shape, profile, par)
    return Plan(
        model=model.key,
        model_display_name=model.display_name,
        model_repo_id=model.repo_id,
        node_shape=shape.key,
        accelerator=shape.accelerator.key,
        platform=shape.accelerator.platform,
        family=profile.family,
        devices_per_node=shape.devices,
        nodes=req.nodes,
        parallelism=par,
        memory=_memory(shape, profile, fit, kv_dtype, kv_tokens),
        max_model_len=max_model_len,
        max_num_seqs=max_num_seqs,
        max_num_batched_tokens=_batched_tokens(profile, req, par, max_model_len),
        full_length_seqs_per_replica=full_seqs,
        cold_start=cold,
        usd_per_hour=shape.usd_per_hour,
        notes=_notes(model, req, par, max_num_seqs, full_seqs, cold),
        inter_node=dict(req.inter_node) if req.nodes > 1 and req.inter_node else None,
    )
