"""The aws-eks stack's plan request: the shared settings plus what this target knows about the
weights path (source resolved, node-ready time, compile cache, mirror fill rate, block lead). Pure."""

from __future__ import annotations

import dataclasses
import math
from datetime import datetime, timezone
from typing import Optional

from ...inference.catalog import MODELS
from ...inference.coldstart import COLD_START_SAFETY, MIRROR_FILL_RATE, mirror_fill_seconds
from ...inference.planner import PlanRequest
from ...config.shared import SharedSettings
from . import model


def _lead_s(earliest_start: Optional[str], now: Optional[datetime] = None) -> Optional[int]:
    """Seconds from now to a block bought to start at `earliest_start` (None: unknown/now)."""
    if not earliest_start:
        return None
    start = datetime.fromisoformat(earliest_start.replace("Z", "+00:00"))
    return max(0, int((start - (now or datetime.now(timezone.utc))).total_seconds()))


def plan_request(shared: SharedSettings, cfg, request: Optional[PlanRequest] = None) -> PlanRequest:
    """`request` (default: the shared settings' own) with this stack's weights path."""
    req = request if request is not None else shared.plan_request()
    w = cfg.weights
    if cfg.serving != "eks" or w is None:
        return req
    if shared.nodes > 1:
        req = dataclasses.replace(req, inter_node=_inter_node(shared, cfg))
    note = ""
    if shared.weights_source is None and w.source == "mirror":
        note = ("weightsSource: mirror (the aws-eks default): the stack's own S3 bucket in the block's "
                "region; never slower than the hub on the GPU clock, and every later start or node "
                "reads in-region S3; set kimi-k3:weightsSource=hub to download on each node instead")
    return dataclasses.replace(
        req,
        source_note=note,
        weights_source=w.source,
        node_ready_s=model.NODE_READY_S,
        compile_cache=w.compile_cache,
        mirror_fill_gb_per_s=fill_rate(cfg),
        # a bought block's earliest start bounds how long the mirror has; an adopted block's start
        # is known only once it is read (the target warns then if the mirror cannot make it)
        block_lead_s=None if cfg.capacity.adopt else _lead_s(cfg.capacity.earliest_start),
    )


def _inter_node(shared: SharedSettings, cfg) -> dict:
    """What the plan states about the replica's inter-node traffic (components/aws_eks/efa/)."""
    from ...inference.catalog import NODE_SHAPES
    from ..efa.transport import inter_node

    stated = inter_node(NODE_SHAPES[shared.node_shape], cfg.inter_node_transport)
    return {**stated.to_dict(), "summary": stated.summary()}


def fill_rate(cfg) -> Optional[float]:
    """The mirror's planned fill rate (GB/s): the hub's, bounded by the system node's network."""
    return model.mirror_fill_gb_per_s(cfg.system_instance_type, MIRROR_FILL_RATE[0])


def mirror_fill_s(shared: SharedSettings, cfg) -> int:
    """Seconds the plan gives the mirror Job to fill the bucket (the same figure as the plan's)."""
    return int(round(mirror_fill_seconds(MODELS[shared.model].download_bytes, fill_rate(cfg))))


def stream_wait_s(shared: SharedSettings, cfg) -> int:
    """How long a streaming pod waits for the mirror (it cannot fall back to the hub): the whole
    planned fill (a block that starts at once) x the cold-start safety factor, rounded up to a
    minute, at least STREAM_WAIT_S. Longer than the gate allows for the same wait (the plan's
    figure, gate_budget.py), so the pods never give up before the gate does."""
    from .render import STREAM_WAIT_S

    w = cfg.weights
    if w is None or not (w.stream and w.source == "mirror"):
        return 0
    return max(STREAM_WAIT_S, int(math.ceil(mirror_fill_s(shared, cfg) * COLD_START_SAFETY / 60.0)) * 60)
