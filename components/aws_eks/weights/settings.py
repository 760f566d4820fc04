"""aws-eks's weights keys, parsed and checked before anything is created. Pure.

`kimi-k3:weightsSource` (shared key, resolved here for aws-eks), `kimi-k3:weightsS3Uri`,
`kimi-k3:keepWeightsMirror`, `kimi-k3:streamWeights` (shared). The default on `serving: eks` is
`mirror`: the stack's own bucket, filled by a Job before the block starts; on the GPU clock it is
never slower than the hub (a node the mirror is not ready for stages from the hub), and every
later start, node replacement or second node reads in-region S3 instead of the internet.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Optional

from ...inference.catalog import MODELS
from ...inference.errors import ConfigError
from ...config.shared import SharedSettings
from . import s3uri

SOURCES = ("hub", "s3", "mirror")
#: where the mirror keeps a model, and the compile caches, inside the stack's bucket
MODELS_PREFIX = "models"
CACHE_PREFIX = "compile-cache"


@dataclass(frozen=True)
class WeightsConfig:
    source: str  # hub | s3 | mirror
    stream: bool
    repo_id: str
    s3_uri: Optional[s3uri.S3Uri] = None  # your bucket (source s3)
    keep_mirror: bool = False
    revision: str = "main"

    @property
    def mirror_prefix(self) -> str:
        return f"{MODELS_PREFIX}/{self.repo_id}"

    @property
    def uses_bucket(self) -> bool:
        """Pods read S3 (they need an identity); the mirror is the stack's own bucket."""
        return self.source in ("s3", "mirror")

    @property
    def compile_cache(self) -> bool:
        """vLLM's compile cache is kept in the stack's bucket (never in yours)."""
        return self.source == "mirror"


def _bool(raw: Mapping, key: str) -> bool:
    v = raw.get(key)
    if v in (None, ""):
        return False
    s = str(v).strip().lower()
    if s in ("true", "1", "yes"):
        return True
    if s in ("false", "0", "no"):
        return False
    raise ConfigError(f"kimi-k3:{key}", v, "use true or false", "is not a boolean")


def parse(shared: SharedSettings, raw: Mapping, serving: str) -> WeightsConfig:
    """The weights path of an aws-eks stack; ConfigError naming the key otherwise."""
    repo_id = MODELS[shared.model].repo_id
    uri_text = raw.get("weightsS3Uri")
    uri_text = None if uri_text in (None, "") else str(uri_text).strip()
    keep = _bool(raw, "keepWeightsMirror")
    if serving != "eks":
        if keep:
            raise ConfigError("kimi-k3:keepWeightsMirror", True, "unset it", "only applies to the "
                              "S3 mirror of kimi-k3:serving=eks")
        return WeightsConfig("hub", False, repo_id)
    source = shared.weights_source or ("s3" if uri_text else "mirror")
    if source not in SOURCES:
        raise ConfigError("kimi-k3:weightsSource", source, f"use one of {', '.join(SOURCES)} on aws-eks",
                          "is not a weights source here")
    uri = None
    if uri_text is not None:
        try:
            uri = s3uri.parse(uri_text)
        except ValueError as e:
            raise ConfigError("kimi-k3:weightsS3Uri", uri_text, "give s3://bucket/prefix (letters, "
                              "digits and ._=+- in the prefix)", f"is not an S3 URI: {e}")
        if source != "s3":
            raise ConfigError("kimi-k3:weightsS3Uri", uri_text, "set kimi-k3:weightsSource=s3 to use "
                              "your bucket, or unset weightsS3Uri for the stack's own mirror",
                              f"is your own bucket, but weightsSource is {source}")
    if source == "s3" and uri is None:
        raise ConfigError("kimi-k3:weightsS3Uri", None, "give s3://bucket/prefix holding the weights",
                          "is needed with kimi-k3:weightsSource=s3")
    if shared.stream_weights and source == "hub":
        raise ConfigError("kimi-k3:streamWeights", True, "use weightsSource mirror (the default) or "
                          "s3, or drop streamWeights", "needs the weights in S3, not on the hub")
    if keep and source != "mirror":
        raise ConfigError("kimi-k3:keepWeightsMirror", True, "unset it", f"only applies to "
                          f"weightsSource=mirror, not {source}")
    return WeightsConfig(source, shared.stream_weights, repo_id, uri, keep)
