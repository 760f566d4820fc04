"""`python -m components COMMAND ...`: the project's command line.

Each subcommand lives in its own module (`components/cli/<name>.py` or a package of its
own) exposing `register(subparsers)`, which adds its parser and sets `func(args) -> exit code`.
COMMANDS is the explicit registry; a module is imported only to register its parser.
"""

from __future__ import annotations

import argparse
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
    parser = argparse.ArgumentParser(prog="python -m components",
                                     description="kimi-k3: plan, check and follow a Kimi K3 deployment")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in COMMANDS:
        importlib.import_module(name).register(sub)
    args = parser.parse_args(argv)
    return int(args.func(args) or 0)
