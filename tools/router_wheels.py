"""Regenerate components/router/wheels.json: the sha256 of every wheel the router's pinned
requirements may install, for each closure (components/router/settings.py ROUTER_CLOSURES:
"current" = ROUTER_REQUIREMENTS for Python 3.11+, "legacy" = ROUTER_REQUIREMENTS_LEGACY for
3.8-3.10), read from PyPI's simple index (PEP 503: each file link ends in `#sha256=<hex>`, the
digest pip itself checks), with each file's Requires-Python (PEP 503/PEP 345
`data-requires-python`, what pip reads before downloading).

Run by hand when a pin changes, then let the tests say what moved:

    .venv/bin/python tools/router_wheels.py            # rewrites components/router/wheels.json
    .venv/bin/python tools/router_wheels.py --check    # exit 1 if the file differs from PyPI

Kept: CPython wheels for glibc Linux (manylinux) on x86_64 and aarch64, and pure-Python wheels
(the master's python3 and the aws-eks router pod's python image); no sdists (`pip install
--only-binary :all:`: nothing is built, so no build code runs unverified on the master).
To confirm one digest by its bytes: `pip download vllm-router==0.1.17 --no-deps --only-binary
:all: --platform manylinux_2_28_x86_64 -d /tmp/w && sha256sum /tmp/w/*`.
"""

from __future__ import annotations

import argparse
import html
import json
import re
import sys
import urllib.request
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from components.router.wheels import WHEELS_FILE, keep_wheel  # noqa: E402
from components.router.settings import ROUTER_CLOSURES  # noqa: E402

INDEX = "https://pypi.org/simple"
_LINK = re.compile(r'<a href="([^"]+)"([^>]*)>([^<]+)</a>')


def files_of(requirement: str):
    """{filename: sha256} of the pinned release's kept wheels, and {filename: Requires-Python}
    of those that declare one."""
    name, version = requirement.split("==")
    norm = re.sub(r"[-_.]+", "-", name).lower()
    stem = re.sub(r"[-_.]+", "_", name).lower()
    page = urllib.request.urlopen(f"{INDEX}/{norm}/", timeout=60).read().decode()
    out, requires = {}, {}
    for href, attrs, filename in _LINK.findall(page):
        if not filename.lower().startswith(f"{stem}-{version}-") or not keep_wheel(filename):
            continue
        digest = re.search(r"#sha256=([0-9a-f]{64})$", href)
        if not digest:
            raise SystemExit(f"{filename}: the index gives no sha256")
        out[filename] = digest.group(1)
        rp = re.search(r'data-requires-python="([^"]*)"', attrs)
        if rp:
            requires[filename] = html.unescape(rp.group(1))
    if not out:
        raise SystemExit(f"{requirement}: no wheel kept on {INDEX}/{norm}/")
    return out, requires


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args(argv)
    read = {}
    for closure, requirements in ROUTER_CLOSURES.items():
        wheels, floors = {}, {}
        for r in requirements:
            wheels[r], found = files_of(r)
            floors.update(found)
        read[closure] = {"wheels": wheels, "file_requires_python": floors}
    current = json.loads(WHEELS_FILE.read_text())

    def section(closure):
        return current if closure == "current" else current.setdefault(closure, {})

    if a.check:
        differ = [c for c, got in read.items()
                  if any(section(c).get(k) != v for k, v in got.items())]
        print("components/router/wheels.json matches PyPI" if not differ else
              f"components/router/wheels.json differs from PyPI ({', '.join(differ)}): "
              "rerun without --check")
        return 0 if not differ else 1
    for closure, got in read.items():
        section(closure).update(got)
    current["source"] = (f"PyPI's simple index (PEP 503: each file's #sha256= fragment and "
                         f"data-requires-python), {INDEX}/<name>/, read "
                         f"{date.today().isoformat()}; regenerate with tools/router_wheels.py")
    WHEELS_FILE.write_text(json.dumps(current, indent=1) + "\n")
    for closure, got in read.items():
        print(f"{closure}: {sum(len(v) for v in got['wheels'].values())} wheels of "
              f"{len(got['wheels'])} requirements; Requires-Python:",
              sorted(set(got["file_requires_python"].values())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
