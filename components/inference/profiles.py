"""Serving profiles: the tuned vLLM settings published per hardware family.

These are the published, validated settings (vLLM recipe for Blackwell and Hopper, the
vllm-ascend K3 tutorial for Atlas A3), kept as data so the planner and the launch spec read them
from one place. Numbers a person might tune live here, not in code paths.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Optional, Tuple


@dataclass(frozen=True)
class ServingProfile:
    family: str
    gpu_memory_utilization: float
    #: utilization when the layout pipelines across nodes (the recipe's TP8 x PP2 profile)
    gpu_memory_utilization_pipelined: float
    #: device memory kept out of the KV cache for activations, graphs and comm buffers
    reserve_gib_per_device: float
    #: default KV cache dtype ("auto" = the model dtype, 2 bytes)
    kv_cache_dtype: str
    #: vLLM refuses nothing here; these are the published values (None = vLLM's default)
    max_num_seqs: Optional[int]
    #: (max_model_len upper bound, max_num_batched_tokens) pairs, first match wins
    batched_tokens_by_context: Tuple[Tuple[int, Optional[int]], ...]
    #: batched tokens when pipelined across nodes (None = as above)
    batched_tokens_pipelined: Optional[int]
    #: largest context the planner picks on its own (a user may ask for more if it fits)
    max_model_len_cap: int
    #: the least VLLM_ENGINE_READY_TIMEOUT_S / startup probe budget the planner gives
    ready_timeout_floor_s: int
    #: where that floor comes from (plan.json says it next to the timeout)
    ready_timeout_floor_source: str
    #: vLLM's start after the weights are read: compile + JIT + warm-up (without and with the
    #: compile caches restored) and CUDA-graph capture; see components/inference/coldstart.py
    compile_s: int
    compile_cached_s: int
    graphs_s: int
    engine_source: str
    #: environment of every node, in this order, before `extra_env`; values may hold launch
    #: placeholders (`${NODE_ADDR}`, `${NODE_IFNAME}`: components/inference/launch.py)
    node_env: Tuple[Tuple[str, str], ...] = ()
    #: the variable that lists the node's devices (`0,1,...`), when the stack needs it set
    visible_devices_env: Optional[str] = None
    #: environment of every node, sorted by name
    extra_env: Mapping[str, str] = field(default_factory=dict)
    #: added when the layout pipelines across nodes: sorted, then the interfaces named here
    #: set to the node's own (`${NODE_IFNAME}`)
    extra_env_pipelined: Mapping[str, str] = field(default_factory=dict)
    ifname_env_pipelined: Tuple[str, ...] = ()
    #: whether workers get VLLM_ENGINE_READY_TIMEOUT_S too (vllm-ascend's headless workers do
    #: not read it: the head waits for the engines)
    ready_timeout_on_workers: bool = True
    #: `--load-format` when the runtime and the weights path leave it open (None: vLLM's)
    default_load_format: Optional[str] = None
    #: `vllm serve` flags this hardware needs (CUDA: after the load format; vllm-ascend: after
    #: --gpu-memory-utilization, as the tutorial orders them)
    extra_args: Tuple[str, ...] = ()
    #: vllm-ascend `--additional-config` switches set true, each emitted only when the image's
    #: plugin release reads it (vllm_flags.ASCEND_ADDITIONAL_CONFIG)
    additional_config: Tuple[str, ...] = ()
    #: flags after --additional-config (vllm-ascend: the multimodal encoder's layout)
    extra_args_late: Tuple[str, ...] = ()

    @property
    def warmup_s(self) -> int:
        """Everything after the weights are read, without a compile cache."""
        return self.compile_s + self.graphs_s


#: vLLM's Kimi K3 recipe runs `vllm serve` with VLLM_ENGINE_READY_TIMEOUT_S=3600 (vLLM's default
#: is 600: vllm/envs.py of 0.33.0); the CUDA profiles never give less. Source: vllm-project/recipes
#: models/moonshotai/Kimi-K3.yaml, updated 2026-08-15 (docs/planner.md, "Calibration")
RECIPE_READY_TIMEOUT_S = 3600
RECIPE_READY_TIMEOUT_SOURCE = ("the recipe's VLLM_ENGINE_READY_TIMEOUT_S=3600: vllm-project/recipes "
                               "models/moonshotai/Kimi-K3.yaml, updated 2026-08-15")

PROFILES: Mapping[str, ServingProfile] = {
    "blackwell": ServingProfile(
        family="blackwell",
        gpu_memory_utilization=0.95,
        gpu_memory_utilization_pipelined=0.90,
        reserve_gib_per_device=8.0,
        kv_cache_dtype="fp8",
        max_num_seqs=None,
        batched_tokens_by_context=((1 << 40, None),),
        batched_tokens_pipelined=8192,
        max_model_len_cap=1_048_576,
        # At least the recipe's VLLM_ENGINE_READY_TIMEOUT_S: a timeout below it kills an engine
        # the recipe lets finish, and on a LeaderWorkerSet one killed pod restarts the whole group
        # (render_k8s.py); the plan's budget wins when it is larger.
        ready_timeout_floor_s=RECIPE_READY_TIMEOUT_S,
        ready_timeout_floor_source=RECIPE_READY_TIMEOUT_SOURCE,
        compile_s=330,
        compile_cached_s=30,
        graphs_s=90,
        engine_source=("assumption from modelexpress BENCHMARKS.md (vLLM 0.23, 8 x B200): API ready "
                       "7m with weights in 11 s, so ~6.8 min of compile, autotune and graphs; "
                       "1m44s with kernel caches reused. whn09 (SGLang, p6-b300): 32 s init + "
                       "140 s JIT in weight loading + 262 s autotune (off here: the recipe's "
                       "--no-enable-flashinfer-autotune)"),
        extra_env={
            "VLLM_ALLREDUCE_USE_FLASHINFER": "1",
            "VLLM_USE_V2_MODEL_RUNNER": "1",
            "VLLM_USE_RUST_FRONTEND": "1",
        },
        extra_env_pipelined={
            "NCCL_CUMEM_ENABLE": "1",
            "VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS": "1800",
        },
        ifname_env_pipelined=("GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME"),
        default_load_format="fastsafetensors",
    ),
    "hopper": ServingProfile(
        family="hopper",
        gpu_memory_utilization=0.97,
        gpu_memory_utilization_pipelined=0.97,
        reserve_gib_per_device=6.0,
        kv_cache_dtype="auto",
        max_num_seqs=5,
        batched_tokens_by_context=((1 << 40, 4096),),
        batched_tokens_pipelined=4096,
        max_model_len_cap=32_768,
        ready_timeout_floor_s=RECIPE_READY_TIMEOUT_S,
        ready_timeout_floor_source=RECIPE_READY_TIMEOUT_SOURCE,
        compile_s=480,
        compile_cached_s=60,
        graphs_s=120,
        engine_source="assumption: no published Hopper figure; Blackwell's plus a margin",
        extra_env={
            "VLLM_USE_V2_MODEL_RUNNER": "1",
            "VLLM_USE_RUST_FRONTEND": "1",
            "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True",
        },
        extra_env_pipelined={
            "NCCL_CUMEM_ENABLE": "1",
            "VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS": "1800",
        },
        ifname_env_pipelined=("GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME"),
        # the recipe's Hopper flags: Marlin MoE kernels, no custom all-reduce, FlashMLA
        extra_args=("--moe-backend", "marlin", "--disable-custom-all-reduce",
                    "--attention-backend", "FLASHMLA"),
    ),
    "ascend-a3": ServingProfile(
        family="ascend-a3",
        gpu_memory_utilization=0.9,
        gpu_memory_utilization_pipelined=0.9,
        reserve_gib_per_device=6.0,
        kv_cache_dtype="auto",
        max_num_seqs=16,
        # tutorial: 24576 up to 128K context; 8192 for the 1M-token layout
        batched_tokens_by_context=((131_072, 24_576), (1 << 40, 8_192)),
        batched_tokens_pipelined=None,
        max_model_len_cap=1_048_576,
        ready_timeout_floor_s=7200,
        ready_timeout_floor_source="assumption: two hours for the A3 engine's start (graph capture "
                                   "and compile on Ascend; no published figure)",
        compile_s=780,
        compile_cached_s=780,  # no compile cache is kept on CTyun
        graphs_s=120,
        engine_source="assumption: 15 min of graph capture, compile and warm-up on an A3 node",
        # the vllm-ascend K3 tutorial's environment: HCCL and the socket interfaces on the
        # node's own address, HCCL's buffer, the NPU allocator, no OpenMP binding
        node_env=(
            ("HCCL_IF_IP", "${NODE_ADDR}"),
            ("GLOO_SOCKET_IFNAME", "${NODE_IFNAME}"),
            ("TP_SOCKET_IFNAME", "${NODE_IFNAME}"),
            ("HCCL_SOCKET_IFNAME", "${NODE_IFNAME}"),
            ("HCCL_BUFFSIZE", "800"),
            ("PYTORCH_NPU_ALLOC_CONF", "expandable_segments:True"),
            ("OMP_PROC_BIND", "false"),
            ("OMP_NUM_THREADS", "1"),
            ("TASK_QUEUE_ENABLE", "1"),
        ),
        visible_devices_env="ASCEND_RT_VISIBLE_DEVICES",
        ready_timeout_on_workers=False,
        # the tutorial's flags: graphs for decode only, no multimodal processor cache, the CPU
        # binding and FlashComm switches, the vision encoder data-parallel
        extra_args=("--compilation-config", '{"cudagraph_mode":"FULL_DECODE_ONLY"}',
                    "--mm-processor-cache-gb", "0"),
        additional_config=("enable_cpu_binding", "enable_flashcomm1"),
        extra_args_late=("--mm-encoder-tp-mode", "data"),
    ),
}
