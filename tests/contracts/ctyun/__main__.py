"""`python -m tests.contracts.ctyun [--counts]`: the CTyun contract as JSON (or its size)."""

import json
import sys

from . import as_data, field_count

if __name__ == "__main__":
    doc = field_count() if "--counts" in sys.argv[1:] else as_data()
    json.dump(doc, sys.stdout, ensure_ascii=False, indent=1)
    sys.stdout.write("\n")
