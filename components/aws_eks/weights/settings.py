"""aws-eks's weights keys, parsed and checked before anything is created. Pure.

`kimi-k3:weightsSource` (shared key, resolved here for aws-eks), `kimi-k3:weightsS3Uri`,
`kimi-k3:keepWeightsMirror`, `kimi-k3:streamWeights` (shared). The default on `serving: eks` is
`mirror`: the stack's own bucket, filled by a Job before the block starts; on the GPU clock it is
never slower than the hub (a node the mirror is not ready for stages from the hub), and every
later start, node replacement or second node reads in-region S3 instead of the internet.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ...config.values import MODEL_COMMIT, RawConfig
from ...inference.catalog import MODELS
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
    #: what the mirror Job and the hub staging download (kimi-k3:modelRevision, SharedSettings.revision)
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


def parse(shared: SharedSettings, src: RawConfig, serving: str) -> WeightsConfig:
    """The weights path of an aws-eks stack (`src`: its own `kimi-k3:*` keys); ConfigError
    naming the key otherwise."""
    repo_id = MODELS[shared.model].repo_id
    uri_text = src.text("weightsS3Uri")
    keep = src.boolean("keepWeightsMirror")
    if serving != "eks":
        _check_revision(shared, "hyperpod")
        if keep:
            raise src.refuse("keepWeightsMirror", "unset it", "only applies to the S3 mirror of "
                             "kimi-k3:serving=eks")
        return WeightsConfig("hub", False, repo_id, revision=shared.revision() or "main")
    source = shared.weights_source or ("s3" if uri_text else "mirror")
    if source not in SOURCES:
        raise shared.refuse("weightsSource", f"use one of {', '.join(SOURCES)} on aws-eks",
                            "is not a weights source here")
    uri = None
    if uri_text is not None:
        try:
            uri = s3uri.parse(uri_text)
        except ValueError as e:
            raise src.refuse("weightsS3Uri", "give s3://bucket/prefix (letters, digits and ._=+- in "
                             "the prefix)", f"is not an S3 URI: {e}")
        if source != "s3":
            raise src.refuse("weightsS3Uri", "set kimi-k3:weightsSource=s3 to use your bucket, or "
                             "unset weightsS3Uri for the stack's own mirror",
                             f"is your own bucket, but weightsSource is {source}")
    if source == "s3" and uri is None:
        raise src.refuse("weightsS3Uri", "give s3://bucket/prefix holding the weights",
                         "is needed with kimi-k3:weightsSource=s3")
    if shared.stream_weights and source == "hub":
        raise shared.refuse("streamWeights", "use weightsSource mirror (the default) or s3, or drop "
                            "streamWeights", "needs the weights in S3, not on the hub")
    _check_revision(shared, source)
    if keep and source != "mirror":
        raise src.refuse("keepWeightsMirror", "unset it", f"only applies to weightsSource=mirror, "
                         f"not {source}")
    return WeightsConfig(source, shared.stream_weights, repo_id, uri, keep, shared.revision() or "main")


def _check_revision(shared: SharedSettings, where: str) -> None:
    """kimi-k3:modelRevision where the weights come from (`where`: a source, or hyperpod):
    HyperPod's operator takes a commit only (huggingFaceModel.commitSHA, ^[0-9a-f]{40}$ in its
    CRD); your own bucket has nothing kimi-k3 could pin."""
    rev = shared.model_revision
    if rev and where == "hyperpod" and not MODEL_COMMIT.fullmatch(rev):
        raise shared.refuse("modelRevision", "give a commit (40 hex digits): HyperPod's operator "
                            "takes huggingFaceModel.commitSHA, a commit only", "is not a commit")
    if rev and where == "s3":
        raise shared.refuse("modelRevision", "unset it: weightsSource=s3 serves your bucket as it "
                            "is (pin what you copy there)", "has nothing to pin")
