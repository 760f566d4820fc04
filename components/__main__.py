"""Entry point: `python -m components plan ...` (see components/cli.py)."""

import sys

from .cli import main

sys.exit(main())
