"""The cold-start model: from a Capacity Block's start (or a node's) to the first token. Pure.

A GPU node is paid from the moment its block starts, so what matters is the time on the GPU
clock: node ready, staging the weights onto the node, loading them into device memory, compile
and warm-up, CUDA-graph capture. Filling the S3 mirror runs on the cheap system node, before the
block when the block starts later. Every phase carries the figure's source or the assumption
behind it; figures from peers are quoted only where they were read at their source:

- whn09/kimi-k3-sglang README.md (commit 381c12b, read 2026-12): Kimi K3 on p6-b300 with SGLang;
  1561 GB on disk in 96 shards; "Startup takes ~11 min: ~6 min to load 1.5 TB of weights, then
  FlashInfer autotune + CUDA graph capture"; a cold prefill container: 32 s distributed init,
  140 s in `Load weight` (mostly JIT kernel builds), 262 s FlashInfer autotune, ~2 min CUDA-graph
  capture and warm-up; persisting the JIT caches is what shortens a restart.
- ai-dynamo/modelexpress docs/BENCHMARKS.md (commit 3db6bdc): DeepSeek-V4-Pro, vLLM 0.23.0, TP8,
  8 x B200, `--enable-flashinfer-autotune`. Model loading time: cold pull from Hugging Face
  8m53s, ModelStreamer from S3 3m16s, local storage (cold page cache) 1m10s. API ready: P2P
  weights only 7m (so ~6.8 min of engine start besides weights: compile, autotune, graphs), P2P
  weights and kernel artifacts 1m44s. The document does not state the checkpoint's size, so no
  read rate is derived from it here.
Nothing else here is measured: rates are assumptions, named as such, to be replaced by the first
real run's logs (stage.sh prints its GB/s; vLLM logs its load and compile times).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Optional, Tuple

#: read rates (GB/s) of the places weights come from, per node, and why we believe them
SOURCE_RATES: Mapping[str, Tuple[float, str]] = {
    "hub": (0.5, "assumption: Hugging Face over the internet, per node (peers report anything "
                 "from 0.2 to 3 GB/s)"),
    "s3": (5.0, "assumption: in-region S3, parallel ranged GETs (AWS CLI, 64 x 64 MB); the stage "
                "log prints the real rate"),
    "mirror": (5.0, "the same S3 read as `s3`, from the stack's own bucket"),
    "cthpc": (2.0, "assumption: CTyun `cthpc model install` from the region's cache"),
    "modelscope": (0.1, "assumption: ModelScope over the cluster's EIP"),
}
#: vLLM's runai_streamer reading S3 straight into device memory (GB/s per node)
STREAM_RATE: Tuple[float, str] = (3.0, "assumption (modelexpress measured S3 streaming 2.7x faster "
                                       "than a cold hub pull, 3m16s, for a checkpoint of unstated size)")
#: filling the mirror from the hub on the system node: hub rate, bounded by the node's network
MIRROR_FILL_RATE: Tuple[float, str] = (0.5, "assumption: the hub rate; a small system node's "
                                            "baseline bandwidth may bound it (see docs/aws-eks.md)")
COLD_START_SAFETY = 1.5


@dataclass(frozen=True)
class Phase:
    name: str  # mirror | node | wait | stage | load | compile | graphs
    seconds: int
    clock: str  # "gpu" (paid block time) or "before-block" (system node, before the block starts)
    source: str  # where the figure comes from / what it assumes

    def to_dict(self) -> dict:
        return {"name": self.name, "seconds": self.seconds, "clock": self.clock, "source": self.source}


@dataclass(frozen=True)
class EngineStart:
    """What a serving profile says about vLLM's own start after the weights are read."""

    compile_s: int  # torch.compile, kernel JIT, warm-up, no cache
    compile_cached_s: int  # the same with the compile caches restored
    graphs_s: int  # CUDA-graph capture (not cached)
    source: str


def _ceil_minute(seconds: float) -> int:
    return int(math.ceil(seconds / 60.0) * 60)


def stage_seconds(checkpoint_bytes: int, source: str) -> float:
    return checkpoint_bytes / (SOURCE_RATES[source][0] * 1e9)


def mirror_fill_seconds(checkpoint_bytes: int, fill_gb_per_s: Optional[float] = None) -> float:
    return checkpoint_bytes / ((fill_gb_per_s or MIRROR_FILL_RATE[0]) * 1e9)


@dataclass(frozen=True)
class Path:
    """One way the weights reach vLLM, with its phases in order."""

    source: str  # hub | s3 | mirror | cthpc | modelscope
    loading: str  # local-nvme | stream-s3
    phases: Tuple[Phase, ...]

    def gpu_seconds(self, cached: bool = False) -> int:
        """Seconds on the GPU clock from the block (node) start to the first token."""
        total = 0
        for p in self.phases:
            if p.clock != "gpu" or (cached and p.name == "compile"):
                continue
            total += p.seconds
        return total

    def phase(self, name: str) -> Optional[Phase]:
        return next((p for p in self.phases if p.name == name), None)


def path(*, source: str, stream: bool, checkpoint_bytes: int, bytes_per_node: float,
         nvme_gb_per_s: float, engine: EngineStart, node_ready_s: int = 0,
         block_lead_s: Optional[int] = None, mirror_fill_gb_per_s: Optional[float] = None) -> Path:
    """The phases of one path. For `mirror`: if the block starts before the mirror is full
    (`block_lead_s` known and shorter), the pods stage from the hub meanwhile (stage.sh's
    fallback), so the mirror path is never slower than the hub on the GPU clock."""
    phases = []
    staged_from = source
    if source == "mirror":
        fill = mirror_fill_seconds(checkpoint_bytes, mirror_fill_gb_per_s)
        # judged on the whole seconds the plan shows, so the plan never contradicts itself
        ready = block_lead_s is None or block_lead_s >= int(round(fill))
        phases.append(Phase("mirror", int(round(fill)), "before-block",
                            f"{checkpoint_bytes / 1e9:,.0f} GB from the hub on the system node "
                            f"({MIRROR_FILL_RATE[1] if mirror_fill_gb_per_s is None else f'{mirror_fill_gb_per_s:g} GB/s'})"
                            + ("" if ready else "; the block starts before it is full, so this "
                               + ("start's pods wait for it (streaming cannot fall back to the hub)"
                                  if stream else "start stages from the hub"))))
        if not ready and not stream:
            staged_from = "hub"
    if node_ready_s:
        phases.append(Phase("node", node_ready_s, "gpu", "assumption: instance boot, EKS join, "
                            "device plugins, image pull"))
    if source == "mirror" and stream and not ready:
        # streaming reads the bucket itself: the pods wait until the mirror is complete
        wait = fill - block_lead_s - node_ready_s
        if wait > 0:
            phases.append(Phase("wait", int(round(wait)), "gpu",
                                "streaming needs the complete mirror: the pods wait for it"))
    if stream:
        phases.append(Phase("stage", 0, "gpu", "nothing staged: vLLM streams from S3"))
        load = bytes_per_node / (STREAM_RATE[0] * 1e9)
        phases.append(Phase("load", int(round(load)), "gpu",
                            f"{bytes_per_node / 1e9:,.0f} GB per node at {STREAM_RATE[0]:g} GB/s; "
                            f"{STREAM_RATE[1]}"))
    else:
        rate, why = SOURCE_RATES[staged_from]
        phases.append(Phase("stage", int(round(stage_seconds(checkpoint_bytes, staged_from))), "gpu",
                            f"{checkpoint_bytes / 1e9:,.0f} GB from {staged_from} at {rate:g} GB/s; {why}"))
        load = bytes_per_node / (nvme_gb_per_s * 1e9)
        phases.append(Phase("load", int(round(load)), "gpu",
                            f"{bytes_per_node / 1e9:,.0f} GB per node from local NVMe at "
                            f"{nvme_gb_per_s:g} GB/s (assumption; modelexpress: 1m10s from fast "
                            f"local storage)"))
    phases.append(Phase("compile", engine.compile_s, "gpu", engine.source))
    phases.append(Phase("graphs", engine.graphs_s, "gpu", "CUDA-graph capture and warm-up; "
                        "whn09: ~2 min on p6-b300 (SGLang); not cached"))
    return Path(source, "stream-s3" if stream else "local-nvme", tuple(phases))


def startup_timeout(p: Path, floor_s: int) -> int:
    """VLLM_ENGINE_READY_TIMEOUT_S and the startup probe: everything after vLLM starts (load,
    compile without cache, graphs) x COLD_START_SAFETY, rounded up to a minute, at least
    `floor_s`. Staging runs in init containers, before the probe clock starts."""
    return startup_timeout_and_reason(p, floor_s, "")[0]


def startup_timeout_and_reason(p: Path, floor_s: int, floor_source: str) -> Tuple[int, str]:
    """`startup_timeout` and why it is that number (plan.json `cold_start.startup_timeout_why`):
    the floor (`floor_source` says where it comes from) or the plan's own budget, whichever is
    larger."""
    after_start = sum(x.seconds for x in p.phases if x.name in ("load", "compile", "graphs"))
    budget = _ceil_minute(after_start * COLD_START_SAFETY)
    if budget > floor_s:
        return budget, (f"the plan's budget: load + compile + graphs = {after_start} s x "
                        f"{COLD_START_SAFETY:g}, rounded up to a minute, is more than the floor of "
                        f"{floor_s} s ({floor_source or 'the profile'})")
    return floor_s, (f"the floor of {floor_s} s ({floor_source or 'the profile'}); the plan's own "
                     f"budget is {budget} s (load + compile + graphs = {after_start} s x "
                     f"{COLD_START_SAFETY:g})")
