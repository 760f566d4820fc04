"""A new API key (or hub token) rolls the pods that read it: the pod templates carry the uid of
the Secret they read. Pure: dicts in, dicts out.

Why: a container reads a `secretKeyRef` environment variable once, when it starts; a running
pod keeps the old key after the Secret changes (kubernetes.io/docs/concepts/configuration/secret/,
"Using Secrets as environment variables": an update is seen only by a restarted container;
that page could not be opened from here, the behaviour is the one every Secret-rotation guide
works around), so
vLLM (and kimi-k3's API-key guard, which reads the same variable) would go on accepting the
old key and refusing the new one until someone restarted it. A Deployment rolls its pods when
`.spec.template` changes, a LeaderWorkerSet its groups when `leaderWorkerTemplate` changes
(kubernetes-sigs/lws v0.8.0, api/leaderworkerset/v1/leaderworkerset_types.go
`RolloutStrategy`); so the template names the Secret's version.

Which version: the Secret's `metadata.uid`. pulumi-kubernetes replaces a Secret whose
`data`/`stringData`/`type` changes unless its provider sets `enableSecretMutable` (kimi-k3's
does not; tests/unit/test_secret_roll.py checks it): `forceNewProperties` in
pulumi/pulumi-kubernetes provider/pkg/provider/diff.go, commit
cafe8c4ac4de156415093291bffc63b6e1c97d1e. A replaced Secret is a new object with a new uid,
known to Pulumi only once the new Secret exists, so the pod template changes exactly when a
value in the Secret does, and not when only its metadata or its encryption at rest changes (a
`resourceVersion` would: a KMS re-encryption rewrites every Secret, and a 2.8T-parameter engine
restart is not free). The uid says nothing about the key: no key, and no hash of one (a hash of
a short key can be searched for), is ever written to a manifest or to plain state.

The renderers put `UID_PLACEHOLDER` where the uid goes (what `plan` writes to `manifests/`);
components/aws_eks/serving.py puts the Secret's uid there when it declares the objects.
HyperPod's InferenceEndpointConfig has no pod template of its own: the uid travels as the
worker's environment variable `UID_ENV`, a change of the endpoint config's spec.
"""

from __future__ import annotations

import copy
from typing import Any, Iterator, List, Mapping

#: the pod-template annotation that carries the uid of the Secret the pod reads
ANNOTATION = "kimi-k3/secret-uid"
#: HyperPod's worker environment variable that carries it (the CRD's worker has no annotations)
UID_ENV = "KK3_SECRET_UID"
#: stands for the uid in rendered objects (known once the Secret exists: serving.py fills it)
UID_PLACEHOLDER = "<the uid of the Secret, set by pulumi up>"


def pod_templates(obj: Mapping[str, Any]) -> List[dict]:
    """The pod templates of a Deployment (`spec.template`) or a LeaderWorkerSet (leader and
    worker templates); none for any other kind."""
    spec = obj.get("spec") or {}
    if obj.get("kind") == "Deployment":
        return [spec["template"]]
    if obj.get("kind") == "LeaderWorkerSet":
        lwt = spec["leaderWorkerTemplate"]
        return [t for t in (lwt.get("leaderTemplate"), lwt.get("workerTemplate")) if t]
    return []


def _containers(pod_spec: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    yield from pod_spec.get("initContainers") or ()
    yield from pod_spec.get("containers") or ()


def reads_secret(pod_spec: Mapping[str, Any], secret_name: str) -> bool:
    """Does any container (init containers too) take a value from Secret `secret_name`: an env
    `secretKeyRef`, an `envFrom.secretRef` or a `secret` volume?"""
    for c in _containers(pod_spec):
        for e in c.get("env") or ():
            ref = ((e.get("valueFrom") or {}).get("secretKeyRef") or {})
            if ref.get("name") == secret_name:
                return True
        for e in c.get("envFrom") or ():
            if (e.get("secretRef") or {}).get("name") == secret_name:
                return True
    return any((v.get("secret") or {}).get("secretName") == secret_name
               for v in pod_spec.get("volumes") or ())


def mark(obj: Mapping[str, Any], secret_name: str) -> dict:
    """`obj` with the placeholder annotation on every pod template that reads `secret_name`."""
    out = copy.deepcopy(dict(obj))
    for template in pod_templates(out):
        if reads_secret(template.get("spec") or {}, secret_name):
            template.setdefault("metadata", {}).setdefault("annotations", {})[ANNOTATION] = UID_PLACEHOLDER
    return out


def marked(obj: Mapping[str, Any]) -> bool:
    """Does any pod template of `obj` (or a HyperPod worker's env) wait for the Secret's uid?"""
    return any((t.get("metadata") or {}).get("annotations", {}).get(ANNOTATION) == UID_PLACEHOLDER
               for t in pod_templates(obj)) or any(
        e.get("name") == UID_ENV and e.get("value") == UID_PLACEHOLDER for e in _hyperpod_env(obj))


def _hyperpod_env(obj: Mapping[str, Any]) -> List[dict]:
    if obj.get("kind") != "InferenceEndpointConfig":
        return []
    return list(((obj.get("spec") or {}).get("worker") or {}).get("environmentVariables") or ())


def mark_hyperpod_env(env: List[dict], secret_name: str, token_ref: Mapping[str, Any] = None) -> List[dict]:
    """The worker env with `UID_ENV` = the placeholder when the worker or the operator's download
    (`tokenSecretRef`) reads `secret_name`."""
    reads = any(((e.get("valueFrom") or {}).get("secretKeyRef") or {}).get("name") == secret_name
                for e in env) or (token_ref or {}).get("name") == secret_name
    return [*env, {"name": UID_ENV, "value": UID_PLACEHOLDER}] if reads else list(env)


def with_uid(obj: Mapping[str, Any], uid: Any) -> dict:
    """`obj` with the placeholder replaced by `uid` (a Pulumi Output in serving.py) wherever
    `mark`/`mark_hyperpod_env` put it."""
    out = copy.deepcopy(dict(obj))
    for template in pod_templates(out):
        ann = (template.get("metadata") or {}).get("annotations") or {}
        if ann.get(ANNOTATION) == UID_PLACEHOLDER:
            ann[ANNOTATION] = uid
    for e in _hyperpod_env(out):
        if e.get("name") == UID_ENV and e.get("value") == UID_PLACEHOLDER:
            e["value"] = uid
    return out
