"""The weights parts of the Kubernetes objects: init containers, the compile-cache sidecar, their
volumes and environment, the scripts ConfigMap, the service accounts and the mirror Job. Pure
dicts (render_k8s.py places them into the pods; the plan command writes them).

No value is pasted into shell text: every container runs a script from the scripts ConfigMap
(`bash /kk3/<script>`), and every value reaches it as an environment variable; the mirror's
bucket (named by AWS at create time) comes from the source ConfigMap through `configMapKeyRef`.
"""

from __future__ import annotations

import hashlib
import json
from typing import Dict, List, Optional

from . import scripts

#: the AWS CLI's own image (bash, coreutils, `aws` v2 with the CRT transfer client and EKS Pod
#: Identity credentials, >= 2.15); pinned by tag: its digest could not be confirmed from here
AWS_CLI_IMAGE = "public.ecr.aws/aws-cli/aws-cli:2.27.50"
#: Docker's official Python image as ECR Public mirrors it (no Docker Hub pull limits); boto3 is
#: installed into it by pinned hash (mirror-requirements.txt); pinned by tag, digest unconfirmed
PYTHON_IMAGE = "public.ecr.aws/docker/library/python:3.12.11-slim-bookworm"
SCRIPTS_MOUNT = "/kk3"
CACHE_MOUNT = "/kk3-cache"
SYSTEM_NODE_LABEL = "kimi-k3/system-node"
#: S3 transfer settings of the stage script (AWS CLI v2: CRT client, target bandwidth)
STAGE_S3 = {"KK3_S3_CLIENT": "crt", "KK3_S3_TARGET_GBPS": "100", "KK3_S3_CONCURRENCY": "64",
            "KK3_S3_CHUNK_MB": "64"}
#: how long a streaming pod waits for the mirror to complete (it cannot fall back to the hub), at
#: least; the layout sets it to the planned fill time x the safety factor (weights/plan.py)
STREAM_WAIT_S = 3600


def names(app: str) -> Dict[str, str]:
    return {"scripts": f"{app}-weights-scripts", "source": f"{app}-weights-source",
            "serving_sa": f"{app}-serving", "mirror_sa": f"{app}-mirror", "job": f"{app}-mirror"}


def cache_key(image: str, repo_id: str, revision: str, argv, env) -> str:
    """16 hex digits over what a compiled artifact depends on: image, model, launch spec."""
    doc = json.dumps({"image": image, "model": [repo_id, revision], "argv": list(argv),
                      "env": sorted([k, v] for k, v in env)}, sort_keys=True)
    return hashlib.sha256(doc.encode()).hexdigest()[:16]


def _env(name: str, value: str) -> dict:
    return {"name": name, "value": value}


def _from_source(name: str, key: str, app: str) -> dict:
    return {"name": name, "valueFrom": {"configMapKeyRef": {"name": names(app)["source"], "key": key}}}


def _script(name: str, image: str, script: str, env: List[dict], mounts: List[dict],
            args: Optional[List[str]] = None) -> dict:
    return {"name": name, "image": image, "command": ["bash", f"{SCRIPTS_MOUNT}/{script}", *(args or [])],
            "env": env, "volumeMounts": [{"name": "weights-scripts", "mountPath": SCRIPTS_MOUNT,
                                          "readOnly": True}, *mounts]}


def _uri_env(w, app: str) -> List[dict]:
    """KK3_S3_URI from the source ConfigMap (your bucket's URI, or the mirror's once AWS named it)."""
    return [_from_source("KK3_S3_URI", "s3Uri", app)]


def _region_env(w, app: str) -> List[dict]:
    """AWS_REGION: the CLI's CRT client does not follow region redirects, so it must be right."""
    return [_from_source("AWS_REGION", "region", app)] if w.uses_bucket else []


def init_containers(spec, layout, role, single_node: bool, serving: bool) -> List[dict]:
    """Staging (unless streamed), compile-cache restore, and the compile-cache save sidecar."""
    w, app = layout.weights, layout.name
    dest = spec.model_path
    models = [{"name": "models", "mountPath": layout.models_mount}]
    out: List[dict] = []
    hub_env = [_env("KK3_REPO_ID", w.repo_id), _env("KK3_REVISION", w.revision), _env("KK3_DEST", dest)]
    if "HF_TOKEN" in spec.secret_env:
        hub_env.append({"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {
            "name": layout.secret_name, "key": "HF_TOKEN"}}})
    if w.stream:
        if w.source == "mirror":
            out.append(_script("wait-for-mirror", AWS_CLI_IMAGE, "stage.sh", [
                *_uri_env(w, app), *_region_env(w, app), _env("KK3_CHECK_ONLY", "1"),
                _env("KK3_ON_INCOMPLETE", "wait"), _env("KK3_WAIT_S", str(w.stream_wait_s or STREAM_WAIT_S))], []))
    elif w.source == "hub":
        out.append(_script("stage-weights", spec.image, "stage_hub.sh", hub_env, models))
    else:
        out.append(_script("stage-weights", AWS_CLI_IMAGE, "stage.sh", [
            *_uri_env(w, app), *_region_env(w, app), _env("KK3_DEST", dest),
            _env("KK3_REQUIRE_MARKER", "1" if w.source == "mirror" else "0"),
            _env("KK3_ON_INCOMPLETE", "fallback" if w.source == "mirror" else "fail"),
            *[_env(k, v) for k, v in STAGE_S3.items()]], models))
        if w.source == "mirror":
            # a node the mirror was not complete for stages from the hub (it skips a staged node)
            out.append(_script("stage-weights-hub", spec.image, "stage_hub.sh", hub_env, models))
    if w.compile_cache:
        rank = [_env("KK3_RANK", "0")] if single_node else [
            {"name": "KK3_RANK", "valueFrom": {"fieldRef": {
                "fieldPath": "metadata.labels['leaderworkerset.sigs.k8s.io/worker-index']"}}}]
        cache = [_from_source("KK3_CACHE_URI", "cacheUri", app), *_region_env(w, app),
                 _env("KK3_CACHE_KEY", cache_key(spec.image, w.repo_id, w.revision, role.argv, role.env)),
                 *rank, _env("KK3_CACHE_DIR", CACHE_MOUNT)]
        mount = [{"name": "compile-cache", "mountPath": CACHE_MOUNT}]
        out.append(_script("restore-compile-cache", AWS_CLI_IMAGE, "compile_cache.sh", cache, mount,
                           ["restore"]))
        health = [_env("KK3_HEALTH_HOST", f"{layout.api_service}.{layout.namespace}.svc"),
                  _env("KK3_HEALTH_PORT", str(spec.port)), _env("KK3_HEALTH_PATH", spec.readiness_path)]
        sidecar = _script("save-compile-cache", AWS_CLI_IMAGE, "compile_cache.sh", cache + health, mount,
                          ["save"])
        sidecar["restartPolicy"] = "Always"  # a native sidecar: runs beside vLLM, never blocks it
        out.append(sidecar)
    return out


def vllm_env(spec, layout, role) -> List[dict]:
    """What the vLLM container needs from the weights path (cache root, region, streamed URI)."""
    w, app = layout.weights, layout.name
    env: List[dict] = []
    env += _region_env(w, app)
    if w.stream:
        env += _uri_env(w, app)[:1]
        env[-1] = {**env[-1], "name": "KK3_MODEL_URI"}
    if w.compile_cache:
        env.append(_env("VLLM_CACHE_ROOT", CACHE_MOUNT))
    return env


def volumes(layout) -> List[dict]:
    w = layout.weights
    out = []
    if not (w.stream and w.source == "s3"):  # streaming from your bucket runs no script
        out.append({"name": "weights-scripts", "configMap": {"name": names(layout.name)["scripts"],
                                                             "defaultMode": 0o555}})
    if not w.stream:
        out.append({"name": "models", "hostPath": {"path": layout.node_cache_path,
                                                   "type": "DirectoryOrCreate"}})
    if w.compile_cache:
        out.append({"name": "compile-cache", "hostPath": {"path": layout.node_compile_cache_path,
                                                          "type": "DirectoryOrCreate"}})
    return out


def vllm_mounts(layout) -> List[dict]:
    w = layout.weights
    out = [] if w.stream else [{"name": "models", "mountPath": layout.models_mount}]
    if w.compile_cache:
        out.append({"name": "compile-cache", "mountPath": CACHE_MOUNT})
    return out


def service_account(layout) -> Optional[str]:
    """The pods' service account (EKS Pod Identity gives it the serving role) when they read S3."""
    return names(layout.name)["serving_sa"] if layout.weights.uses_bucket else None


# ---------------------------------------------------------------- objects of their own

def _meta(layout, name: str) -> dict:
    return {"name": name, "namespace": layout.namespace, "labels": dict(layout.labels)}


def scripts_configmap(layout) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": _meta(layout, names(layout.name)["scripts"]),
            "data": scripts.texts()}


def source_configmap(layout, s3_uri, cache_uri, region) -> dict:
    """Where the weights and compile caches are, and their region; values may be Pulumi Outputs
    (the mirror's bucket is named by AWS). Declared by the target, not in the plan's files."""
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": _meta(layout, names(layout.name)["source"]),
            "data": {"s3Uri": s3_uri, "cacheUri": cache_uri, "region": region}}


def service_accounts(layout) -> List[dict]:
    w, n = layout.weights, names(layout.name)
    out = []
    if w.uses_bucket:
        out.append({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(layout, n["serving_sa"]),
                    "automountServiceAccountToken": False})
    if w.source == "mirror":
        out.append({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(layout, n["mirror_sa"]),
                    "automountServiceAccountToken": False})
    return out


def mirror_job(layout, hf_token: bool = False) -> dict:
    """The Job on the system node group that fills the mirror from the hub (mirror.py).

    The command is constant text; values come from the environment. pip installs boto3 by
    pinned hash into /tmp (the image's file system stays read-only)."""
    w, n = layout.weights, names(layout.name)
    install = ("python -m pip install --quiet --no-cache-dir --disable-pip-version-check "
               "--require-hashes --only-binary=:all: --target /tmp/pylib "
               f"-r {SCRIPTS_MOUNT}/mirror-requirements.txt && exec python {SCRIPTS_MOUNT}/mirror.py")
    env = [_env("KK3_REPO_ID", w.repo_id), _env("KK3_REVISION", w.revision),
           _from_source("KK3_S3_URI", "s3Uri", layout.name), *_region_env(w, layout.name), _env("KK3_PRUNE", "1"),
           _env("PYTHONPATH", "/tmp/pylib"), _env("HOME", "/tmp"), _env("PYTHONUNBUFFERED", "1")]
    if hf_token:
        env.append({"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": layout.secret_name,
                                                                       "key": "HF_TOKEN"}}})
    container = {
        "name": "mirror", "image": PYTHON_IMAGE, "command": ["sh", "-c", install], "env": env,
        "resources": {"requests": {"cpu": "1", "memory": "3Gi"}, "limits": {"memory": "4Gi"}},
        "securityContext": {"runAsNonRoot": True, "runAsUser": 65534, "allowPrivilegeEscalation": False,
                            "readOnlyRootFilesystem": True, "capabilities": {"drop": ["ALL"]}},
        "volumeMounts": [{"name": "weights-scripts", "mountPath": SCRIPTS_MOUNT, "readOnly": True},
                         {"name": "tmp", "mountPath": "/tmp"}],
    }
    return {
        "apiVersion": "batch/v1", "kind": "Job", "metadata": _meta(layout, n["job"]),
        "spec": {
            "backoffLimit": 6,  # each retry resumes where the last one stopped
            "template": {"metadata": {"labels": {**layout.labels, "kimi-k3/role": "mirror"}},
                         "spec": {"serviceAccountName": n["mirror_sa"], "restartPolicy": "Never",
                                  "nodeSelector": {SYSTEM_NODE_LABEL: "true"},
                                  "containers": [container],
                                  "volumes": [{"name": "weights-scripts", "configMap": {
                                      "name": n["scripts"], "defaultMode": 0o444}},
                                      {"name": "tmp", "emptyDir": {"sizeLimit": "2Gi"}}]}},
        },
    }


def objects(layout, spec) -> List[dict]:
    """The weights objects in apply order (before the workload). The mirror's source ConfigMap is
    declared by the target (its bucket name is known only once AWS has created the bucket)."""
    out = [scripts_configmap(layout), *service_accounts(layout)]
    if layout.weights.source == "mirror":
        out.append(mirror_job(layout, hf_token="HF_TOKEN" in spec.secret_env))
    return out


class S3Staging:
    """This module's pieces as render_k8s's WeightsStager (handed in with the layout: layout.py)."""

    init_containers = staticmethod(init_containers)
    vllm_env = staticmethod(vllm_env)
    volumes = staticmethod(volumes)
    vllm_mounts = staticmethod(vllm_mounts)
    service_account = staticmethod(service_account)
    objects = staticmethod(objects)


STAGER = S3Staging()
