"""Percentiles and the load figures built from per-request timings (pure)."""

from __future__ import annotations

import math
from typing import Dict, Optional, Sequence


def percentile(values: Sequence[float], q: float) -> Optional[float]:
    """The q-th percentile (0..100) by linear interpolation between closest ranks.

    The same definition as numpy's default (`np.percentile(..., method="linear")`), which is
    what vLLM's benchmark reports use; None for no values.
    """
    if not 0 <= q <= 100:
        raise ValueError(f"percentile {q} is outside 0..100")
    xs = sorted(float(v) for v in values)
    if not xs:
        return None
    rank = (len(xs) - 1) * q / 100.0
    lo, hi = math.floor(rank), math.ceil(rank)
    return xs[lo] + (xs[hi] - xs[lo]) * (rank - lo)


def p50_p95(values: Sequence[float], digits: int = 4) -> Dict[str, Optional[float]]:
    """`{"p50": ..., "p95": ...}` rounded to `digits` (None when there are no values)."""
    out = {}
    for name, q in (("p50", 50), ("p95", 95)):
        v = percentile(values, q)
        out[name] = None if v is None else round(v, digits)
    return out
