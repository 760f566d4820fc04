"""The router's requirements file with every wheel's sha256, so a target installs exactly the
bytes the tests ran (issue 21, "Pinned artifacts"): `pip install --require-hashes --only-binary
:all:` refuses any file whose digest is not listed, and builds nothing from source.

The digests are data (wheels.json), read from PyPI's simple index, where pip itself reads them
(PEP 503, https://peps.python.org/pep-0503/: a file link's URL "SHOULD" end in
`#<hashname>=<hashvalue>`); tools/router_wheels.py regenerates and checks them. Pure.

pip's hash-checking mode (https://pip.pypa.io/en/stable/topics/secure-installs/, read
2026-12-02): "--require-hashes ... requires that every requirement is pinned with == and has a
hash"; several `--hash` options on one requirement accept any of them (one per platform's wheel).
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path
from typing import Dict, Mapping, Optional, Sequence, Tuple

WHEELS_FILE = Path(__file__).with_name("wheels.json")
#: the pip options every router install uses with the file below
PIP_HASH_OPTIONS = ("--require-hashes", "--only-binary", ":all:")
_WHEEL = re.compile(r"^(?P<name>[A-Za-z0-9_.]+)-(?P<ver>[^-]+)-(?:\d[^-]*-)?(?P<py>[^-]+)-"
                    r"(?P<abi>[^-]+)-(?P<plat>[^-]+)\.whl$")


def keep_wheel(filename: str) -> bool:
    """A wheel a glibc Linux CPython on x86_64 or aarch64 may install: pure-Python, or a
    manylinux build for those machines (no free-threaded `cp3XXt`, PyPy, musl, macOS, Windows)."""
    m = _WHEEL.match(filename)
    if not m:
        return False
    py, abi, plat = m["py"], m["abi"], m["plat"]
    if plat == "any":
        return True
    return ("manylinux" in plat and ("x86_64" in plat or "aarch64" in plat)
            and py.startswith("cp") and not (abi.startswith("cp") and abi.endswith("t")))


@lru_cache(maxsize=1)
def _data() -> dict:
    return json.loads(WHEELS_FILE.read_text())


#: the closures, the one with the highest Python floor first (settings.ROUTER_CLOSURES' names);
#: wheels.json holds "current" at its top level and each other one under its name
CLOSURES = ("current", "legacy")


def _section(closure: str) -> dict:
    if closure not in CLOSURES:
        raise KeyError(f"no router closure {closure!r}: one of {', '.join(CLOSURES)}")
    return _data() if closure == "current" else _data()[closure]


def hashes(closure: str = "current") -> Dict[str, Dict[str, str]]:
    """{"name==version": {wheel filename: sha256}} of one closure."""
    return _section(closure)["wheels"]


def requires_python(closure: str = "current") -> Tuple[int, int]:
    """The lowest Python `closure` installs on, as (major, minor)."""
    major, minor = _section(closure)["requires_python"].lstrip(">=").split(".")
    return int(major), int(minor)


def lowest_python() -> Tuple[int, int]:
    """The lowest Python any closure installs on (below it, install.sh refuses)."""
    return min(requires_python(c) for c in CLOSURES)


def closure_for(version: Sequence[int]) -> Optional[str]:
    """The closure a Python of `version` (major, minor) installs: the one with the highest floor
    at or below it (a 3.9 gets "legacy", a 3.12 "current"); None below every floor."""
    for closure in sorted(CLOSURES, key=requires_python, reverse=True):
        if tuple(version[:2]) >= requires_python(closure):
            return closure
    return None


def requirements_txt(requirements: Sequence[str],
                      table: Optional[Mapping[str, Mapping[str, str]]] = None) -> str:
    """pip's requirements file: each pinned requirement with a `--hash` per kept wheel
    (`table`: wheels.json's, unless given).

    KeyError naming the requirement when there is no digest for it (a pin changed without
    tools/router_wheels.py): never a requirement without its hashes."""
    table = hashes() if table is None else table
    lines = [f"# {_data()['source']}"]
    for r in requirements:
        if r not in table or not table[r]:
            raise KeyError(f"no wheel digests for {r} in {WHEELS_FILE.name}: run tools/router_wheels.py")
        lines.append(f"{r} \\")
        digests = sorted(set(table[r].values()))
        lines += [f"    --hash=sha256:{d}" + (" \\" if i < len(digests) - 1 else "")
                  for i, d in enumerate(digests)]
    return "\n".join(lines) + "\n"
