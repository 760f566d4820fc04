"""From the parsed weights config to render_k8s's WeightsStaging and vLLM's model path. Pure."""

from __future__ import annotations

from ...inference.render_k8s import WeightsStaging
from .settings import WeightsConfig

#: vLLM's model argument when streaming: a launch placeholder that render_k8s turns into
#: `$(KK3_MODEL_URI)`, which Kubernetes expands from the container's env (set from the source
#: ConfigMap: your bucket's URI or the mirror's)
STREAM_MODEL_REF = "${MODEL_URI}"


def weights_staging(w: WeightsConfig, stream_wait_s: int = 0) -> WeightsStaging:
    return WeightsStaging(
        stream_wait_s=stream_wait_s if w.stream and w.source == "mirror" else 0,
        source=w.source,
        repo_id=w.repo_id,
        s3_uri=str(w.s3_uri) if w.s3_uri is not None else "",
        stream=w.stream,
        revision=w.revision,
        compile_cache=w.compile_cache,
    )
