#!/usr/bin/python3 -S
"""Double of a CTyun master's python3 of another version, for components/router/host.py's
install.sh: the test machine has one Python, the masters have 3.6-3.13.

Only the version is faked: `-c CODE` runs CODE with this (real) interpreter after setting
`sys.version_info` to $KK3_DOUBLE_PYTHON_VERSION ("3.9.18"), so install.sh's own probes run as
written; `--version` prints `Python <version>`; `-m pip ...` records its argv as one JSON line in
$KK3_DOUBLE_PYTHON_LOG and creates the `--target` directory (no package is installed: pip
itself is exercised in tests/unit/test_router_wheels.py). A version that is not X.Y.Z stands for
a broken interpreter: every `-c` prints it as it is (a hostile probe answer). `-S`: no
site-packages, so the "already installed" probe never finds the test machine's vllm-router.
"""
import json
import os
import re
import sys

version = os.environ.get("KK3_DOUBLE_PYTHON_VERSION", "")
args = sys.argv[1:]
if args[:1] == ["--version"]:
    print(f"Python {version}")
elif args[:2] == ["-m", "pip"]:
    with open(os.environ["KK3_DOUBLE_PYTHON_LOG"], "a") as log:
        log.write(json.dumps(args) + "\n")
    os.makedirs(args[args.index("--target") + 1], exist_ok=True)
elif args[:1] == ["-c"] and len(args) >= 2:
    if not re.fullmatch(r"\d+\.\d+\.\d+", version):
        print(version)
        sys.exit(0)
    major, minor, micro = (int(p) for p in version.split("."))
    sys.version_info = (major, minor, micro, "final", 0)
    exec(compile(args[1], "<string>", "exec"), {"__name__": "__main__"})
else:
    print(f"python version double: {args!r} is not implemented", file=sys.stderr)
    sys.exit(2)
