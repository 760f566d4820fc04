"""What kimi-k3 knows about the model and the hardware: pure data, units in the names.

Adding a weight variant, an accelerator or a node shape is adding one entry here. Architecture
numbers of Kimi K3 that are not public (layer split, KV geometry, recurrent state size) are
named assumptions, calibrated so the planner agrees with every published deployment point
(docs/planner.md, "Calibration", lists each point and its source). Each can be overridden per stack with
`kimi-k3:modelOverrides` without editing code.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Mapping, Optional, Tuple

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
    #: the model release this variant belongs to (a key of RELEASES)
    model_id: str = "kimi-k3"
    #: the repository commit kimi-k3 pins; None: no commit confirmed at its source yet
    revision: Optional[str] = None

    @property
    def weights_gib(self) -> float:
        return self.weights_bytes / GIB

    @property
    def download_bytes(self) -> int:
        return self.checkpoint_bytes if self.checkpoint_bytes is not None else self.weights_bytes


#: Kimi K3's weight variants, by `kimi-k3:model`
K3_MODELS: Mapping[str, ModelProfile] = {
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
class ModelRelease:
    """One released model (`kimi-k3:modelId`) and its published weight variants.

    `parsers_confirmed` False means the parsers are inferred (same architecture as K3), not
    stated by the publisher; `not_public` lists what could not be confirmed at a source.
    """

    key: str
    display_name: str
    released: Optional[str]  # announcement date, where a source gives one
    source: str
    variants: Mapping[str, ModelProfile]
    #: `--served-model-name` unless kimi-k3:servedModelName says otherwise
    served_model_name: str = "Kimi-K3"
    reasoning_parser: str = "kimi_k3"
    tool_call_parser: str = "kimi_k3"
    parsers_confirmed: bool = True
    not_public: Tuple[str, ...] = field(default=())


#: Kimi K3.1 Pro (announced 2026-10-23/24, Moonshot AI): a post-trained Kimi K3 with the same
#: architecture and parameter count ("every change comes from post-training", a secondary
#: source: the Awesome-AITools discussions #1413/#1415, read 2026-12-01). Weights: the
#: Hugging Face repository moonshotai/Kimi-K3.1-Pro ("Image-Text-to-Text, 2.8T",
#: huggingface.co/moonshotai, stored copy read 2026-12-01); NVIDIA NIM 2.1.5's
#: model-specific deployment notes (docs.nvidia.com/nim/large-language-models/2.1.5/): "All three
#: layouts use the same public MXFP4 checkpoint from Hugging Face". Its size is assumed equal to
#: K3's MXFP4 checkpoint (same architecture, same quantisation); no NVFP4 or Ascend W4A8
#: variant was found.
K31_PRO_MODELS: Mapping[str, ModelProfile] = {
    "mxfp4": ModelProfile(
        key="k3.1-pro-mxfp4",
        display_name="Kimi K3.1 Pro MXFP4",
        repo_id="moonshotai/Kimi-K3.1-Pro",
        hub="huggingface",
        weights_bytes=1_680 * GB,
        expert_weight_fraction=0.97,
        platforms=frozenset({"cuda"}),
        local_dir_name="Kimi-K3.1-Pro",
        checkpoint_bytes=1_561 * GB,
        model_id="kimi-k3.1-pro",
    ),
}

RELEASES: Mapping[str, ModelRelease] = {
    r.key: r
    for r in (
        ModelRelease(
            key="kimi-k3",
            display_name="Kimi K3",
            released=None,
            source="huggingface.co/moonshotai/Kimi-K3; vllm-project/recipes Kimi-K3 recipe",
            variants=K3_MODELS,
            not_public=("the pinned commit of each weight repository (none confirmed at its "
                        "source)",),
        ),
        ModelRelease(
            key="kimi-k3.1-pro",
            display_name="Kimi K3.1 Pro",
            released="2026-10-23",
            source="huggingface.co/moonshotai/Kimi-K3.1-Pro; NVIDIA NIM 2.1.5 model notes",
            variants=K31_PRO_MODELS,
            served_model_name="Kimi-K3.1-Pro",
            parsers_confirmed=False,
            not_public=("an NVFP4 or Ascend W4A8 checkpoint", "a vLLM recipe",
                        "the parsers (kimi_k3 inferred from the unchanged architecture)",
                        "the checkpoint's exact size (assumed K3 MXFP4's)",
                        "the commit to pin", "vllm-ascend support"),
        ),
    )
}
DEFAULT_MODEL_ID = "kimi-k3"

#: every weight variant of every release by its catalog key (the plan's `model`): Kimi K3's by
#: their `kimi-k3:model` names, the others' as `<release>-<variant>` (e.g. k3.1-pro-mxfp4)
MODELS: Mapping[str, ModelProfile] = {
    **K3_MODELS, **{m.key: m for r in (K31_PRO_MODELS,) for m in r.values()}}


def release_variant(model_id: str, variant: str, accelerator_key: str) -> ModelProfile:
    """The weight variant `variant` of `model_id` for `accelerator_key`, or a ConfigError whose
    one line names the key, the value and what would work."""
    from .errors import ConfigError

    release = RELEASES.get(model_id)
    if release is None:
        raise ConfigError("kimi-k3:modelId", model_id, f"use one of {', '.join(sorted(RELEASES))}",
                          "is not a known model")
    acc = ACCELERATORS.get(accelerator_key)
    if acc is None:
        raise ConfigError("kimi-k3:accelerator", accelerator_key,
                          f"use one of {', '.join(sorted(ACCELERATORS))}", "is not known")
    here = sorted(k for k, m in release.variants.items() if acc.platform in m.platforms)
    profile = release.variants.get(variant)
    if profile is not None and acc.platform in profile.platforms:
        return profile
    if not here:
        other = sorted({a.key for a in ACCELERATORS.values()
                        for m in release.variants.values() if a.platform in m.platforms})
        raise ConfigError("kimi-k3:modelId", model_id,
                          f"use an accelerator that loads it ({', '.join(other)}) or another "
                          f"kimi-k3:modelId", f"has no published weights for {acc.display_name}")
    if profile is None:
        raise ConfigError("kimi-k3:model", variant, f"use {' or '.join(here)} on {acc.key}",
                          f"is not a published {release.display_name} weight variant")
    raise ConfigError("kimi-k3:model", variant, f"use {' or '.join(here)} on {acc.key}",
                      f"({profile.display_name}) does not load on {acc.display_name}")


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
