"""The readiness gate's deadline and expectation on aws-eks, from the plan's cold-start phases. Pure.

The gate's clock starts when it starts waiting for the endpoint (the block has started). What it
must allow for depends on the S3 mirror at that moment, which only the bucket can tell (an
adopted block's start, or whether an earlier `pulumi up` already filled the mirror, is not known
when the program plans):

- no mirror, or the mirror complete: the plan's path (stage from S3, or stream);
- the mirror not complete, weights staged: each node stages from the hub meanwhile
  (stage.sh's fallback), so the hub's staging figure;
- the mirror not complete, streaming: the pods wait for it (streaming cannot fall back): the
  rest of the fill at the plan's fill rate, from what the bucket holds now, less the node's
  start, which runs meanwhile (coldstart.path's `wait` phase for a block starting now).

Deadline = `NODE_JOIN_S` (the nodes joining, with margin over the plan's node-ready figure) +
the mirror wait + staging + vLLM's startup timeout (load, compile, graphs x COLD_START_SAFETY).
Expected = the plan's node-ready figure + the same wait and staging + load and warm-up: the
plan's first-token figure for that path. So the gate never gives up while the plan's own
expectation is still running, and never waits hours past it (the mirror wait is the plan's
figure, not the pods' longer own limit, KK3_WAIT_S).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Mapping, Optional

from ..inference.coldstart import stage_seconds
from ..inference.planner import ColdStart

#: instance launch, node join, device plugins and the vLLM image pull, before staging starts
NODE_JOIN_S = 1200


@dataclass(frozen=True)
class Budget:
    deadline_s: int
    expected_s: int
    why: str  # the path the figures are for, in words
    #: at least this long from now, however long ago the block started (a refresh): streaming
    #: from a mirror still filling needs the rest of the fill and then vLLM's start
    from_now_s: int = 0


def _phase(c: ColdStart, name: str) -> int:
    return next((p.seconds for p in c.phases if p.name == name), 0)


def plan_budget(c: ColdStart) -> Budget:
    """The gate's figures for the plan's own path (what plan.json and the gate's inputs show)."""
    before = _phase(c, "wait") + c.stage_s
    return Budget(NODE_JOIN_S + before + c.startup_timeout_s, _phase(c, "node") + before + c.estimate_s,
                  f"the plan's path ({c.weights_source}, {c.loading})")


def mirror_inputs(c: ColdStart, *, checkpoint_bytes: int, fill_gb_per_s: float, stream: bool) -> Dict[str, Any]:
    """What the gate needs to recompute its figures from the bucket (input `mirror`, besides the
    bucket and prefix): the plan's figures, never a re-plan inside the provider."""
    return {"totalBytes": int(checkpoint_bytes), "fillGbPerS": float(fill_gb_per_s), "stream": bool(stream),
            "nodeReadyS": _phase(c, "node"), "startupTimeoutS": c.startup_timeout_s,
            "estimateS": c.estimate_s,
            # a full mirror: stage from it (0 when streaming); an incomplete one: from the hub
            "mirrorStageS": 0 if stream else int(round(stage_seconds(checkpoint_bytes, "mirror"))),
            "hubStageS": 0 if stream else int(round(stage_seconds(checkpoint_bytes, "hub")))}


def remaining_fill_s(m: Mapping[str, Any], bytes_done: int) -> int:
    left = max(0, int(m["totalBytes"]) - int(bytes_done))
    return int(round(left / (float(m["fillGbPerS"]) * 1e9)))


def budget_now(m: Mapping[str, Any], complete: Optional[bool], bytes_done: int = 0) -> Budget:
    """The figures for a gate starting now, given the mirror (`complete` None: unknown, read
    as not complete with nothing copied: the longest the plan would expect)."""
    node = int(m["nodeReadyS"])
    from_now = 0
    if complete:
        wait, stage = 0, int(m["mirrorStageS"])
        why = "the mirror is complete: " + ("vLLM streams it" if m["stream"] else "the nodes stage from it")
    elif m["stream"]:
        fill = remaining_fill_s(m, 0 if complete is None else bytes_done)
        wait, stage = max(0, fill - node), 0
        from_now = fill + int(m["startupTimeoutS"])
        why = (f"the mirror is not complete: streaming waits for the rest of the fill (~{fill} s at "
               f"{float(m['fillGbPerS']):g} GB/s)")
    else:
        wait, stage = 0, int(m["hubStageS"])
        why = "the mirror is not complete: the nodes stage from the hub meanwhile"
    if complete is None:
        why += " (the bucket could not be read; assumed empty)"
    before = wait + stage
    return Budget(NODE_JOIN_S + before + int(m["startupTimeoutS"]), node + before + int(m["estimateS"]), why,
                  from_now)
