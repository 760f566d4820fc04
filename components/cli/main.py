"""`python -m components COMMAND ...`: the project's command line.

Each subcommand lives in its own module (`components/cli/<name>.py` or a package of its
own) exposing `register(subparsers)`, which adds its parser and sets `func(args) -> exit code`.
COMMANDS is the explicit registry; a module is imported only to register its parser.
"""

from __future__ import annotations

import argparse
import gc
import importlib
from typing import List, Optional

#: subcommand modules, in the order `--help` lists them
COMMANDS = (
    "components.cli.plan",
    "components.cli.status",
    "components.cli.accept",
    "components.cli.logs",
)


def main(argv: Optional[List[str]] = None) -> int:
    args = parser().parse_args(argv)
    return int(args.func(args) or 0)


def parser() -> argparse.ArgumentParser:
    """The command line's parser, every subcommand imported and registered.

    Built with Python's cycle collector off, and what it made is then moved out of the
    collector's reach (`gc.freeze`), as the offline runner does for the SDKs
    (offline/runner.py `without_cycle_collection`): the modules live as long as the process,
    and the collector, triggered every 700 new objects, walked them again on each of ~25 passes
    of these imports (docs/benchmarks.md, "Offline plan speed"). It is back on (if it was)
    afterwards."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        top = argparse.ArgumentParser(prog="python -m components",
                                      description="kimi-k3: plan, check and follow a Kimi K3 deployment")
        sub = top.add_subparsers(dest="command", required=True)
        for name in COMMANDS:
            importlib.import_module(name).register(sub)
        return top
    finally:
        gc.freeze()
        if was_enabled:
            gc.enable()
