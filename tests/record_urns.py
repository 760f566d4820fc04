"""Record the URNs a deployed stack holds, per config variant, under the mock engine.

Issue 18 moved resources to new parents (one component tree per stack). A stack deployed before
keeps its resources only if every URN in its state is still registered or aliased by the
resource that replaced it; tests/integration/test_urn_aliases.py proves that against the files
this script wrote from the tree before the move (main at cc32064), one per variant below:

    .venv/bin/python tests/record_urns.py            # writes tests/golden/urns/<variant>.txt

The files are a record of what was deployed, not a golden of today's tree: the script refuses to
overwrite them (a later tree change keeps them and adds aliases). `--force` is for a variant that
did not exist before. URNs are the engine's (components/offline/runner.py: engine_urn).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Dict, List, Mapping, Tuple

ROOT = Path(__file__).resolve().parent.parent
URNS_DIR = ROOT / "tests" / "golden" / "urns"

#: variant -> (stack, config overrides): the defaults and the layouts that change the tree
#: (2 nodes: EFA and LeaderWorkerSet; 2 replicas; HyperPod; a public endpoint on H200; 8 CTyun
#: nodes with a 1M context; an API key on a public CTyun endpoint)
VARIANTS: Mapping[str, Tuple[str, Dict[str, str]]] = {
    "ctyun-default": ("ctyun-hcc", {}),
    "ctyun-8": ("ctyun-hcc", {"kimi-k3:nodes": "8", "kimi-k3:maxModelLen": "1048576"}),
    # (issue 21: plain HTTP chosen, so the tree is the one recorded; TLS adds a proxy step)
    "ctyun-key": ("ctyun-hcc", {"kimi-k3:allowedCidrs": "203.0.113.0/24", "kimi-k3:allowPlaintext": "true",
                                "kimi-k3:apiKey": "kk3-urns-key-0123456789abcdefghij"}),
    "aws-default": ("aws-eks", {}),
    "aws-2node": ("aws-eks", {"kimi-k3:nodes": "2"}),
    "aws-2rep": ("aws-eks", {"kimi-k3:replicas": "2"}),
    "aws-hyperpod": ("aws-eks", {"kimi-k3:serving": "hyperpod", "kimi-k3:hyperpodClusterName": "hp1"}),
    "aws-h200": ("aws-eks", {"kimi-k3:allowedCidrs": "203.0.113.0/24", "kimi-k3:accelerator": "h200",
                             "kimi-k3:nodes": "2", "kimi-k3:allowPlaintext": "true"}),
}


def urns_of(variant: str) -> List[str]:
    """The URNs the program registers for `variant` now (sorted)."""
    sys.path.insert(0, str(ROOT))
    from components.offline.runner import run_program

    stack, overrides = VARIANTS[variant]
    return sorted(r["urn"] for r in run_program(stack, overrides).resources)


def recorded(variant: str) -> List[str]:
    """The URNs recorded for `variant` before issue 18's tree change."""
    return (URNS_DIR / f"{variant}.txt").read_text().split()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("variants", nargs="*", default=list(VARIANTS))
    ap.add_argument("--force", action="store_true", help="overwrite an existing record")
    args = ap.parse_args(argv)
    URNS_DIR.mkdir(parents=True, exist_ok=True)
    for v in args.variants:
        path = URNS_DIR / f"{v}.txt"
        if path.exists() and not args.force:
            print(f"{path} exists: it records a deployed tree; not overwritten", file=sys.stderr)
            continue
        path.write_text("\n".join(urns_of(v)) + "\n")
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
