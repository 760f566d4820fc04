"""Which `vllm serve` flags exist in which vLLM release.

The launch spec only emits flags listed here, and only for images whose vLLM release is at least
the flag's first release (every flag below exists in the parser of vLLM 0.33.0,
https://pypi.org/project/vllm/0.33.0/, `make_arg_parser` in `vllm/entrypoints/common/cli_args.py`;
those the Ascend seed uses ran on its vllm-ascend 0.23 image; tools/check_vllm_flags.py re-checks
the table against a downloaded wheel). An emitted flag missing from this table is a bug caught
by `check_flags`, not a surprise on the cluster.
"""

from __future__ import annotations

from typing import Iterable, Mapping, Optional, Tuple

from packaging.version import InvalidVersion, Version

#: flag -> (first vLLM release that has it, last release that has it or None)
FLAGS: Mapping[str, Tuple[str, Optional[str]]] = {
    "--served-model-name": ("0.4.0", None),
    "--host": ("0.4.0", None),
    "--port": ("0.4.0", None),
    "--trust-remote-code": ("0.4.0", None),
    "--allowed-local-media-path": ("0.6.0", None),
    "--tensor-parallel-size": ("0.4.0", None),
    "--pipeline-parallel-size": ("0.5.0", None),
    "--data-parallel-size": ("0.8.0", None),
    "--data-parallel-size-local": ("0.9.0", None),
    "--data-parallel-address": ("0.9.0", None),
    "--data-parallel-rpc-port": ("0.9.0", None),
    "--data-parallel-start-rank": ("0.9.0", None),
    "--data-parallel-backend": ("0.9.0", None),
    "--headless": ("0.9.0", None),
    "--nnodes": ("0.11.0", None),
    "--node-rank": ("0.11.0", None),
    "--master-addr": ("0.11.0", None),
    "--enable-expert-parallel": ("0.8.0", None),
    "--enable-prefix-caching": ("0.4.0", None),
    "--max-num-seqs": ("0.4.0", None),
    "--max-model-len": ("0.4.0", None),
    "--max-num-batched-tokens": ("0.4.0", None),
    "--gpu-memory-utilization": ("0.4.0", None),
    "--compilation-config": ("0.7.0", None),
    "--mm-processor-cache-gb": ("0.10.0", None),
    "--additional-config": ("0.8.0", None),
    "--mm-encoder-tp-mode": ("0.10.0", None),
    "--limit-mm-per-prompt": ("0.5.0", None),
    "--enable-auto-tool-choice": ("0.6.0", None),
    "--tool-call-parser": ("0.6.0", None),
    "--reasoning-parser": ("0.7.0", None),
    "--load-format": ("0.4.0", None),
    "--kv-cache-dtype": ("0.4.0", None),
    "--attention-config": ("0.27.1", None),
    "--attention-backend": ("0.11.0", None),
    "--moe-backend": ("0.27.1", None),
    "--no-enable-flashinfer-autotune": ("0.27.1", None),
    "--disable-custom-all-reduce": ("0.4.0", None),
    "--speculative-config": ("0.8.0", None),
    "--api-key": ("0.4.0", None),
    # kimi-k3's API-key guard (components/inference/api_guard.py): read in 0.23.0 and 0.33.0
    "--middleware": ("0.23.0", None),
    # the render route vllm-router's cache_aware policy routes on (components/router/): in 0.33.0
    # `enable_scale_out` (vllm/entrypoints/common/cli_args.py; without it the route answers 403,
    # vllm/entrypoints/scale_out/factories.py); 0.23.0 has no such flag and serves the route
    # always (vllm/entrypoints/serve/render/api_router.py). The first release with the flag
    # between the two was not looked up: 0.33.0 is the oldest kimi-k3 emits it for
    "--enable-scale-out": ("0.33.0", None),
}

#: flags that take no value
BOOLEAN_FLAGS = frozenset({
    "--trust-remote-code", "--headless", "--enable-expert-parallel", "--enable-prefix-caching",
    "--enable-auto-tool-choice", "--no-enable-flashinfer-autotune", "--disable-custom-all-reduce",
    "--enable-scale-out",
})

#: vllm-ascend `--additional-config` keys -> (first plugin release, last plugin release or None)
ASCEND_ADDITIONAL_CONFIG: Mapping[str, Tuple[str, Optional[str]]] = {
    "enable_cpu_binding": ("0.9.0", None),
    # read by vllm-ascend 0.23, 0.24 and 0.25 (vllm-project/vllm-ascend
    # `vllm_ascend/ascend_config.py` in the v0.23.0, v0.24.0rc1 and v0.25.1rc1 tags); on main
    # since commit 92616f3a64 (2026-08-21) it only logs a deprecation warning, so a release after
    # the 0.25 line is not known to use it: emitted up to 0.25.x, gated by the image's version
    "enable_flashcomm1": ("0.11.0", "0.25.99"),
}

#: reasoning / tool parsers by first release
PARSERS: Mapping[str, str] = {"kimi_k3": "0.23.0"}


def version_tuple(v: str) -> Version:
    """A vLLM version, comparable by PEP 440 (packaging): `0.23.0rc1` sorts before `0.23.0`, so a
    release candidate never unlocks the flags of the release it precedes. Raises ValueError for
    text that is not a version (catalog data is ours: a typo there must fail loudly)."""
    try:
        return Version(v)
    except InvalidVersion:
        raise ValueError(f"{v!r} is not a vLLM version (PEP 440)") from None


def supported(table: Mapping[str, Tuple[str, Optional[str]]], key: str, version: str) -> bool:
    if key not in table:
        return False
    first, last = table[key]
    v = version_tuple(version)
    return version_tuple(first) <= v and (last is None or v <= version_tuple(last))


def check_flags(argv: Iterable[str], vllm_version: str) -> None:
    """Raise ValueError naming the first flag this vLLM release does not have."""
    for arg in argv:
        if arg.startswith("--") and not supported(FLAGS, arg, vllm_version):
            raise ValueError(f"flag {arg} is not known to exist in vLLM {vllm_version}")
