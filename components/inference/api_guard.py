"""How kimi-k3's API-key guard (kk3_api_guard.py, next to this file) reaches vLLM: pure facts.

With an API key the launch spec's head gets `--middleware kk3_api_guard.ApiKeyGuard` (vLLM
imports the class and wraps its app in it; the flag exists in vLLM 0.23.0 and 0.33.0, checked
with tools/check_vllm_flags.py against both wheels) and `LaunchSpec.api_guard` is set; each target
then puts the file in `CONTAINER_DIR` and that directory on vLLM's `PYTHONPATH`:

- aws-eks: a ConfigMap (`configmap_name`) mounted read-only at CONTAINER_DIR in the serving pod,
  env `PYTHONPATH=CONTAINER_DIR` (the vLLM CUDA image sets no PYTHONPATH of its own:
  vllm-project/vllm `docker/Dockerfile`, stage vllm-openai);
- HyperPod: the InferenceEndpointConfig's worker has no volumes (tests/contracts/hyperpod/
  iec_facts.yaml), so the file travels as the env value `SOURCE_ENV` and `HYPERPOD_WRITER`
  writes it to a fresh private temp directory, prepends that to PYTHONPATH and execs vLLM;
- ctyun-hcc: the SlurmService writes it root-only to `<workDir>/api-guard/` (dir 0700, file
  0600), node.sh bind-mounts that directory read-only at CONTAINER_DIR and runs vLLM through
  `PREPEND_WRAPPER`, which prepends CONTAINER_DIR to the image's own PYTHONPATH (the Ascend
  image's CANN packages may need theirs) and execs vLLM.

The wrappers are Python (`python3 -c`), not shell: no `$` for Kubernetes to expand, no quoting,
and vLLM's argv reaches `os.execvp` as separate arguments.
"""

from __future__ import annotations

from pathlib import Path
from typing import List

MODULE = "kk3_api_guard"
CLASS = "ApiKeyGuard"
#: the `--middleware` value
IMPORT_PATH = f"{MODULE}.{CLASS}"
FILE_NAME = f"{MODULE}.py"
#: where the file is inside the serving container (and PYTHONPATH points)
CONTAINER_DIR = "/opt/kimi-k3/api-guard"
#: CTyun: the directory under the work dir that holds it (root-only), bind-mounted read-only
HOST_SUBDIR = "api-guard"
#: HyperPod: the env variable carrying the module's text to the writer
SOURCE_ENV = "KK3_API_GUARD_PY"
#: the first vLLM release the flag was checked in (the oldest image kimi-k3 serves with)
FIRST_VLLM = "0.23.0"
#: vLLM's Rust front end (VLLM_USE_RUST_FRONTEND=1, vllm-rs) refuses `--middleware`: "The
#: following arguments are not implemented in Rust frontend yet: - middleware" (vllm 0.33.0's
#: vllm/vllm-rs, `frontend --args-json`, run here): a guarded spec runs the Python front end
RUST_FRONTEND_ENV = "VLLM_USE_RUST_FRONTEND"

PREPEND_WRAPPER = (
    "import os, sys; "
    f'os.environ["PYTHONPATH"] = os.pathsep.join(["{CONTAINER_DIR}"] + '
    '[p for p in [os.environ.get("PYTHONPATH")] if p]); '
    "os.execvp(sys.argv[1], sys.argv[1:])")

HYPERPOD_WRITER = (
    "import os, sys, tempfile; "
    'd = tempfile.mkdtemp(prefix="kk3-api-guard-"); '
    f'f = open(os.path.join(d, "{FILE_NAME}"), "x"); '
    f'f.write(os.environ.pop("{SOURCE_ENV}")); f.close(); '
    'os.environ["PYTHONPATH"] = os.pathsep.join([d] + '
    '[p for p in [os.environ.get("PYTHONPATH")] if p]); '
    "os.execvp(sys.argv[1], sys.argv[1:])")

#: the command that runs vLLM's argv with CONTAINER_DIR in front of the image's PYTHONPATH
PREPEND_COMMAND = ("python3", "-c", PREPEND_WRAPPER)
#: HyperPod's worker command; the args are vLLM's argv
HYPERPOD_COMMAND = ("python3", "-c", HYPERPOD_WRITER)


def source() -> str:
    """The guard module's text, exactly as shipped."""
    return (Path(__file__).resolve().parent / FILE_NAME).read_text()


def middleware_args() -> List[str]:
    return ["--middleware", IMPORT_PATH]


def configmap_name(workload: str) -> str:
    return f"{workload}-api-guard"
