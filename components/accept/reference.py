"""Published serving figures to hold a measured load against (data in reference_points.json).

Every point was checked at its source before it was kept; the file also lists what was dropped
and why. `matching(accelerator, node_shape, nodes)` returns the points measured on the same
hardware: same accelerator and node shape; same node count is an exact match, a different one
is returned as `"match": "same accelerator"` so a reader knows the scale differs.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any, Dict, List, Optional

DATA = Path(__file__).with_name("reference_points.json")


@lru_cache(maxsize=1)
def load() -> Dict[str, Any]:
    return json.loads(DATA.read_text())


def matching(accelerator: Optional[str], node_shape: Optional[str] = None,
             nodes: Optional[int] = None) -> List[Dict[str, Any]]:
    """Reference points for this hardware, exact matches first; [] when unknown or none."""
    if not accelerator:
        return []
    out = []
    for point in load()["points"]:
        hw = point["hardware"]
        if hw["accelerator"] != accelerator or (node_shape and hw["node_shape"] != node_shape):
            continue
        exact = nodes is not None and int(nodes) == hw["nodes"]
        out.append({**point, "match": "exact" if exact else "same accelerator"})
    return sorted(out, key=lambda p: p["match"] != "exact")
