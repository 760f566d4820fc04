"""The programs that run in the cluster, as text (for the ConfigMap that ships them verbatim)."""

from __future__ import annotations

from pathlib import Path
from typing import Dict

HERE = Path(__file__).resolve().parent
#: file name in the ConfigMap -> file next to this module
FILES = ("mirror.py", "s3uri.py", "stage.sh", "stage_hub.sh", "compile_cache.sh",
         "mirror-requirements.txt")


def path(name: str) -> Path:
    if name not in FILES:
        raise KeyError(name)
    return HERE / name


def texts() -> Dict[str, str]:
    return {name: path(name).read_text() for name in FILES}
