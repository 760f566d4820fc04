"""What kimi-k3 knows about the model and the hardware: pure data, units in the names.

Adding a weight variant, an accelerator or a node shape is adding one entry here. Architecture
numbers of Kimi K3 that are not public (layer split, KV geometry, recurrent state size) are
named assumptions, calibrated so the planner agrees with every published deployment point
(docs/planner.md, "Calibration", lists each point and its source). Each can be overridden per stack with
`kimi-k3:modelOverrides` without editing code.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Mapping, Optional

GIB = 1024**3
GB = 1000**3
TB = 1000**4


@dataclass(frozen=True)
class ModelArchitecture:
    """Assumed Kimi K3 geometry (not public). Only what memory planning needs.

    - `mla_layers`: full-attention (gated MLA) layers; they keep a KV cache that grows with
      the context. KDA replaces 75% of full attention, so `kda_layers = 3 * mla_layers`.
    - `kv_lora_rank + qk_rope_head_dim`: elements cached per token per MLA layer. MLA's latent
      KV is replicated on every tensor-parallel rank (it is not split by heads).
    - `kda_state_bytes_per_seq`: recurrent state of all KDA layers for one sequence, fp32;
      split across tensor-parallel ranks (it is per head). Constant in the context length.
    """

    mla_layers: int = 33
    kda_layers: int = 99
    kv_lora_rank: int = 512
    qk_rope_head_dim: int = 64
    kda_state_bytes_per_seq: int = 99 * 32 * 128 * 128 * 4
    total_params: int = 2_780_000_000_000
    routed_experts: int = 896
    active_experts: int = 16

    def kv_bytes_per_token(self, kv_dtype_bytes: float) -> float:
        """KV bytes one token adds on one device holding all MLA layers."""
        return self.mla_layers * (self.kv_lora_rank + self.qk_rope_head_dim) * kv_dtype_bytes


@dataclass(frozen=True)
class ModelProfile:
    """One published weight variant of Kimi K3."""

    key: str
    display_name: str
    repo_id: str  # where the weights are published
    hub: str  # "huggingface" or "modelscope"
    weights_bytes: int  # bytes the checkpoint occupies in device memory
    expert_weight_fraction: float  # share of weights_bytes in routed experts (assumption)
    platforms: frozenset  # accelerator platforms that load it ("cuda", "ascend")
    local_dir_name: str  # directory name under the model root on a node
    max_context_tokens: int = 1_048_576
    architecture: ModelArchitecture = ModelArchitecture()
    #: bytes of the published checkpoint (what is copied and staged); None = weights_bytes
    checkpoint_bytes: Optional[int] = None

    @property
    def weights_gib(self) -> float:
        return self.weights_bytes / GIB

    @property
    def download_bytes(self) -> int:
        return self.checkpoint_bytes if self.checkpoint_bytes is not None else self.weights_bytes


MODELS: Mapping[str, ModelProfile] = {
    m.key: m
    for m in (
        ModelProfile(
            key="mxfp4",
            display_name="Kimi K3 MXFP4",
            repo_id="moonshotai/Kimi-K3",
            hub="huggingface",
            # vLLM recipe's serving estimate: 2.8T x 0.5 byte x 1.2 headroom.
            weights_bytes=1_680 * GB,
            expert_weight_fraction=0.97,
            platforms=frozenset({"cuda"}),
            local_dir_name="Kimi-K3",
            # whn09/kimi-k3-sglang README.md: "On-disk 1561 GB / 96 shards"
            checkpoint_bytes=1_561 * GB,
        ),
        ModelProfile(
            key="nvfp4",
            display_name="Kimi K3 NVFP4",
            repo_id="RedHatAI/Kimi-K3-NVFP4",
            hub="huggingface",
            weights_bytes=1_650 * GB,
            expert_weight_fraction=0.96,
            platforms=frozenset({"cuda"}),
            local_dir_name="Kimi-K3-NVFP4",
        ),
        ModelProfile(
            key="w4a8",
            display_name="Kimi K3 W4A8",
            repo_id="Eco-Tech/Kimi-K3-w4a8",
            hub="modelscope",
            # ModelSlim W4A8: 4-bit routed experts, 8-bit elsewhere (1.56 TB on disk).
            weights_bytes=1_560 * GB,
            expert_weight_fraction=0.97,
            # The HF MXFP4 checkpoint is reported not to load on Ascend; W4A8 is Ascend's.
            platforms=frozenset({"ascend"}),
            local_dir_name="Kimi-K3-w4a8",
        ),
    )
}


@dataclass(frozen=True)
class Accelerator:
    """One accelerator model. `hbm_gib` is what the runtime can allocate, not the nameplate."""

    key: str
    display_name: str
    platform: str  # "cuda" or "ascend"
    family: str  # serving profile family: "blackwell", "hopper", "ascend-a3"
    hbm_gib: float
    kv_cache_dtypes: tuple  # KV cache dtypes the serving stack supports here


ACCELERATORS: Mapping[str, Accelerator] = {
    a.key: a
    for a in (
        Accelerator("b300", "NVIDIA B300", "cuda", "blackwell", 268.0, ("auto", "fp8")),
        Accelerator("b200", "NVIDIA B200", "cuda", "blackwell", 179.0, ("auto", "fp8")),
        Accelerator("h200", "NVIDIA H200", "cuda", "hopper", 140.0, ("auto", "fp8")),
        Accelerator("h100", "NVIDIA H100", "cuda", "hopper", 79.6, ("auto", "fp8")),
        Accelerator("ascend-910c", "Ascend 910C", "ascend", "ascend-a3", 64.0, ("auto",)),
    )
}


@dataclass(frozen=True)
class NodeShape:
    """A machine with `devices` accelerators, as a cloud sells it.

    `nvme_read_gb_per_s` is the sequential read of the local disk(s) that hold the weights
    (what the planner's cold-start budget uses); `usd_per_hour` is None where no public price
    is known to us.
    """

    key: str
    accelerator_key: str
    devices: int
    vcpus: int
    memory_gib: int
    local_nvme_bytes: int
    nvme_read_gb_per_s: float
    network_gbps: int
    efa_network_cards: int = 0
    usd_per_hour: Optional[float] = None

    @property
    def accelerator(self) -> Accelerator:
        return ACCELERATORS[self.accelerator_key]

    @property
    def hbm_gib_per_node(self) -> float:
        return self.devices * self.accelerator.hbm_gib


NODE_SHAPES: Mapping[str, NodeShape] = {
    n.key: n
    for n in (
        # 8 x 3.84 TB NVMe, RAID0 by nodeadm; 16 EFA-only cards (cards 1-16) + card 0 ENA.
        NodeShape("p6-b300.48xlarge", "b300", 8, 192, 4096, 8 * 3840 * GB, 20.0, 6400, 16),
        NodeShape("p6-b200.48xlarge", "b200", 8, 192, 2048, 8 * 3840 * GB, 20.0, 3200, 8),
        NodeShape("p5en.48xlarge", "h200", 8, 192, 2048, 8 * 3840 * GB, 16.0, 3200, 16),
        NodeShape("p5.48xlarge", "h100", 8, 192, 2048, 8 * 3840 * GB, 16.0, 3200, 32),
        # Atlas 800 A3 bare metal on CTyun: 16 x 64 GB 910C, 2 x 3.2 TB NVMe; the weights sit on
        # one of them (/mnt/nvme1n1), so one disk's read rate bounds loading.
        NodeShape("atlas-800-a3", "ascend-910c", 16, 320, 1536, 2 * 3200 * GB, 3.0, 400, 0),
    )
}

#: the node shape each accelerator comes in, for the targets that sell it
DEFAULT_SHAPE_FOR_ACCELERATOR: Mapping[str, str] = {
    "b300": "p6-b300.48xlarge",
    "b200": "p6-b200.48xlarge",
    "h200": "p5en.48xlarge",
    "h100": "p5.48xlarge",
    "ascend-910c": "atlas-800-a3",
}


@dataclass(frozen=True)
class ServingImage:
    """A container image and the vLLM release inside it (flags are checked against it)."""

    ref: str
    platform: str
    vllm_version: str  # vLLM release the image's engine corresponds to
    plugin_version: Optional[str] = None  # vllm-ascend release for Ascend images


IMAGES: Mapping[str, ServingImage] = {
    i.ref: i
    for i in (
        ServingImage("vllm/vllm-openai:kimi-k3", "cuda", "0.33.0"),
        ServingImage("quay.io/ascend/vllm-ascend:kimi-k3-a3", "ascend", "0.23.0", "0.23.0"),
    )
}

DEFAULT_IMAGE_FOR_PLATFORM: Mapping[str, str] = {
    "cuda": "vllm/vllm-openai:kimi-k3",
    "ascend": "quay.io/ascend/vllm-ascend:kimi-k3-a3",
}


def with_architecture_overrides(model: ModelProfile, overrides: Mapping[str, object]) -> ModelProfile:
    """Return `model` with named assumptions replaced (`kimi-k3:modelOverrides`).

    Keys are the field names of ModelArchitecture, plus `weights_bytes` and
    `expert_weight_fraction`; unknown keys raise KeyError naming the key.
    """
    arch_fields = set(ModelArchitecture.__dataclass_fields__)
    arch_changes = {}
    model_changes = {}
    for key, value in overrides.items():
        if key in arch_fields:
            arch_changes[key] = type(getattr(model.architecture, key))(value)
        elif key in ("weights_bytes", "expert_weight_fraction", "max_context_tokens",
                     "checkpoint_bytes"):
            model_changes[key] = int(value) if key == "checkpoint_bytes" else \
                type(getattr(model, key))(value)
        else:
            raise KeyError(key)
    if arch_changes:
        model_changes["architecture"] = replace(model.architecture, **arch_changes)
    return replace(model, **model_changes) if model_changes else model
