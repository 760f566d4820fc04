"""Check the launch spec's flag table against a vLLM wheel's own source, without importing it.

Importing vLLM needs torch and its kernels (several GB); its serve flags, though, are the
fields of `EngineArgs` and the frontend-args dataclasses, plus a few literal flags. This reads
them from the wheel and reports every flag in components/inference/vllm_flags.py that the wheel
does not define. Used by hand when a new image is added (figures in docs/planner.md):

    pip download vllm==0.33.0 --no-deps -d /tmp/w && python tools/check_vllm_flags.py /tmp/w/vllm-0.33.0-*.whl
"""

from __future__ import annotations

import ast
import re
import sys
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from components.inference.vllm_flags import FLAGS, supported  # noqa: E402

SOURCES = ("vllm/engine/arg_utils.py", "vllm/entrypoints/common/cli_args.py",
           "vllm/entrypoints/openai/cli_args.py", "vllm/entrypoints/cli/serve.py")
DATACLASSES = {"EngineArgs", "AsyncEngineArgs", "BaseFrontendArgs", "FrontendArgs"}


def wheel_flags(wheel: Path) -> set:
    flags = set()
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        for src in SOURCES:
            if src not in names:
                continue
            text = z.read(src).decode()
            flags.update(re.findall(r"""["'](--[a-z0-9][a-z0-9-]*)["']""", text))
            for node in ast.walk(ast.parse(text)):
                if isinstance(node, ast.ClassDef) and node.name in DATACLASSES:
                    for stmt in node.body:
                        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                            name = "--" + stmt.target.id.replace("_", "-")
                            flags.update({name, "--no-" + name[2:]})
    return flags


def main(wheel: str) -> int:
    version = re.search(r"vllm-([0-9][^-]*)-", Path(wheel).name).group(1)
    defined = wheel_flags(Path(wheel))
    ours = sorted(f for f in FLAGS if supported(FLAGS, f, version))
    missing = [f for f in ours if f not in defined]
    print(f"vLLM {version}: {len(defined)} flags defined; {len(ours)} in our table apply; "
          f"missing: {', '.join(missing) or 'none'}")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
