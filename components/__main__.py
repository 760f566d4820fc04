"""Entry point: `python -m components plan ...` (see components/cli/main.py)."""

import sys

from .cli.main import main

sys.exit(main())
