"""The router on Kubernetes (aws-eks): the objects, as plain dicts (pure; serving.py declares them).

With `kimi-k3:replicas` > 1 the user-facing Service (render_k8s.render_service) selects the
router pod instead of the vLLM pods:

    Service kimi-k3-api :PORT --> pod kimi-k3-router [front :PORT --> router 127.0.0.1:30000]
                                                     --> every vLLM head pod :PORT (discovered)

- one Deployment (one replica: the cache_aware tree lives in the router's memory; Kubernetes
  restarts it with back-off if it dies), on the system nodes (it requests no GPU and tolerates
  no GPU taint);
- an init container installs vllm-router and what it pulls in, at ROUTER_REQUIREMENTS' pinned
  versions and wheels.json's sha256 of each wheel (`--require-hashes --only-binary :all:`), from
  PyPI into a shared emptyDir (the nodes reach PyPI through the VPC's NAT), into
  the stock Python image PYTHON_IMAGE; the router and kimi-k3's front (kk3_front.py, from a
  ConfigMap) run from there;
- the router finds the replicas by Kubernetes service discovery (`--service-discovery`): Running
  and Ready pods matching the vLLM head pods' labels in the namespace (vllm-router 0.1.17
  `src/service_discovery.rs`), so it needs to get/list/watch pods there (a Role, namespaced)
  and it never waits for workers at start (no start-up timeout to outlast Kimi K3's load);
- the router listens on 127.0.0.1 inside the pod: only the front's port is a container port, and
  the Service targets it. Readiness is the front's `/health` (the router's `/readiness`: 200
  while a replica is healthy, kk3_front.py); liveness asks the router's `/liveness` from inside the container.
"""

from __future__ import annotations

from pathlib import Path
from typing import Dict, List, Mapping, Optional, Tuple

from .settings import FRONT_KEY_ENV, ROUTER_PORT, ROUTER_REQUIREMENTS, RouterSettings, front_argv
from .wheels import PIP_HASH_OPTIONS, requirements_txt

#: the stock Python image the router pod installs into (the version the tests ran under)
PYTHON_IMAGE = "python:3.11-slim-bookworm"
FRONT_FILE = "kk3_front.py"
REQUIREMENTS_FILE = "router-requirements.txt"
SITE_DIR = "/opt/router/site"
FRONT_DIR = "/opt/router/front"
ROUTER_STARTUP_S = 600  # the init container's pip install and the router's start, at most


def router_name(name: str) -> str:
    return f"{name}-router"


def router_labels(name: str) -> Dict[str, str]:
    """The router pod's labels: never those of the vLLM pods (the router would discover itself)."""
    return {"app.kubernetes.io/name": "kimi-k3-router", "app.kubernetes.io/instance": name}


def front_source() -> str:
    return (Path(__file__).with_name(FRONT_FILE)).read_text()


def _meta(namespace: str, name: str, labels: Mapping[str, str]) -> dict:
    return {"name": name, "namespace": namespace, "labels": dict(labels)}


def render(namespace: str, name: str, port: int, replica_selector: Mapping[str, str],
           settings: RouterSettings = RouterSettings(),
           api_key_secret: Optional[Tuple[str, str]] = None) -> List[dict]:
    """ServiceAccount, Role, RoleBinding, ConfigMap (front + pins) and the router Deployment.

    `replica_selector`: the labels of the vLLM pods that serve HTTP (each replica's head);
    `port`: theirs, and the front's (the Service keeps the port clients know);
    `api_key_secret`: (Secret, key) of the API key: the front gets it as FRONT_KEY_ENV (a
    `secretKeyRef`, read when the container starts) and checks it before reading a body."""
    rname, labels = router_name(name), router_labels(name)
    account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(namespace, rname, labels)}
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": _meta(namespace, rname, labels),
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]}]}
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
               "metadata": _meta(namespace, rname, labels),
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": rname},
               "subjects": [{"kind": "ServiceAccount", "name": rname, "namespace": namespace}]}
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": _meta(namespace, rname, labels),
              "data": {FRONT_FILE: front_source(),
                       REQUIREMENTS_FILE: requirements_txt(ROUTER_REQUIREMENTS)}}
    s = RouterSettings(**{**settings.__dict__, "host": "127.0.0.1", "port": ROUTER_PORT})
    argv = s.argv(selector=dict(replica_selector), namespace=namespace, discovery_port=port)
    env = [{"name": "PYTHONPATH", "value": SITE_DIR}, {"name": "PYTHONUNBUFFERED", "value": "1"}]
    mounts = [{"name": "site", "mountPath": SITE_DIR, "readOnly": True},
              {"name": "front", "mountPath": FRONT_DIR, "readOnly": True}]
    install = {
        "name": "install-router", "image": PYTHON_IMAGE,
        "command": ["python", "-m", "pip", "install", "--no-cache-dir", "--no-deps",
                    "--disable-pip-version-check", *PIP_HASH_OPTIONS, "--target", SITE_DIR, "-r",
                    f"{FRONT_DIR}/{REQUIREMENTS_FILE}"],
        "volumeMounts": [{"name": "site", "mountPath": SITE_DIR},
                         {"name": "front", "mountPath": FRONT_DIR, "readOnly": True}],
        "resources": {"requests": {"cpu": "250m", "memory": "256Mi"}},
    }
    liveness_cmd = ("import urllib.request as u; "
                    f"u.urlopen('http://127.0.0.1:{ROUTER_PORT}/liveness', timeout=3)")
    router = {
        "name": "router", "image": PYTHON_IMAGE,
        "command": ["python", "-m", "vllm_router.launch_router", *argv[1:]],
        "env": env, "volumeMounts": mounts,
        "resources": {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"memory": "4Gi"}},
        "livenessProbe": {"exec": {"command": ["python", "-c", liveness_cmd]},
                          "periodSeconds": 15, "timeoutSeconds": 5, "failureThreshold": 4},
    }
    front_env = list(env)
    if api_key_secret:
        front_env.append({"name": FRONT_KEY_ENV, "valueFrom": {"secretKeyRef": {
            "name": api_key_secret[0], "key": api_key_secret[1]}}})
    front = {
        "name": "front", "image": PYTHON_IMAGE,
        "command": front_argv(f"0.0.0.0:{port}", f"http://127.0.0.1:{ROUTER_PORT}",
                              python="python", script=f"{FRONT_DIR}/{FRONT_FILE}",
                              api_key=bool(api_key_secret)),
        "env": front_env, "volumeMounts": mounts,
        "ports": [{"name": "http", "containerPort": port, "protocol": "TCP"}],
        "resources": {"requests": {"cpu": "500m", "memory": "256Mi"}, "limits": {"memory": "2Gi"}},
        "readinessProbe": {"httpGet": {"path": "/health", "port": "http"}, "periodSeconds": 10,
                           "timeoutSeconds": 5, "failureThreshold": 3},
    }
    deployment = {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": _meta(namespace, rname, labels),
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": dict(labels)},
            "template": {"metadata": {"labels": dict(labels)}, "spec": {
                "serviceAccountName": rname,
                "initContainers": [install],
                "containers": [router, front],
                "volumes": [{"name": "site", "emptyDir": {}},
                            {"name": "front", "configMap": {"name": rname, "defaultMode": 0o444}}],
            }},
        },
    }
    return [account, role, binding, config, deployment]


def service_selector(name: str) -> Dict[str, str]:
    """What the user-facing Service selects when the router is in front."""
    return router_labels(name)


def kinds(objs: List[dict]) -> Tuple[str, ...]:
    return tuple(o["kind"] for o in objs)
