"""The few Kubernetes API calls the readiness gate makes, as the deployer, with an EKS token.

- `eks_token`: what `aws eks get-token` returns, built with botocore: a presigned STS
  GetCallerIdentity URL (60 s expiry) signed over the `x-k8s-aws-id: <cluster>` header,
  base64url without padding, prefixed `k8s-aws-v1.` (the aws-iam-authenticator token format EKS
  accepts). A fresh token per connection: a wait of hours outlives any one token.
- `KubeApi`: GET the Service and the serving pods (httpx, the cluster's CA, bounded timeouts).
- `pod_summary` (pure): one line saying where a pod is (Pending and why, staging weights,
  waiting for its image, crash-looping, running and ready or not): what the gate reports as
  the last thing it saw when the endpoint is not answering yet.
"""

from __future__ import annotations

import base64
import ssl
from typing import Any, Dict, List, Mapping, Optional

TOKEN_PREFIX = "k8s-aws-v1."
CLUSTER_ID_HEADER = "x-k8s-aws-id"
TOKEN_EXPIRES_S = 60


def eks_token(session, cluster_name: str, region: str) -> str:
    """A bearer token for `cluster_name` from the session's credentials (never logged)."""
    from botocore.signers import RequestSigner

    sts = session.client("sts", region_name=region)
    signer = RequestSigner(sts.meta.service_model.service_id, region, "sts", "v4",
                           session.get_credentials(), sts.meta.events)
    url = signer.generate_presigned_url(
        {"method": "GET", "body": {}, "context": {}, "headers": {CLUSTER_ID_HEADER: cluster_name},
         "url": f"https://sts.{region}.amazonaws.com/?Action=GetCallerIdentity&Version=2011-06-15"},
        region_name=region, expires_in=TOKEN_EXPIRES_S, operation_name="")
    return TOKEN_PREFIX + base64.urlsafe_b64encode(url.encode()).decode().rstrip("=")


def ssl_context(ca_data_b64: str) -> ssl.SSLContext:
    """TLS verification against the cluster's own CA (base64 PEM, as EKS reports it)."""
    pem = base64.b64decode(ca_data_b64).decode()
    return ssl.create_default_context(cadata=pem)


class KubeApi:
    """GETs against one cluster's API; `token()` is called for every request."""

    def __init__(self, endpoint: str, ca_data_b64: Optional[str], token, timeout_s: float = 20.0,
                 verify: Any = None):
        self.endpoint = endpoint.rstrip("/")
        self.token = token
        self.timeout_s = timeout_s
        self.verify = verify if verify is not None else (ssl_context(ca_data_b64) if ca_data_b64 else True)

    def get(self, path: str, params: Optional[Mapping[str, str]] = None) -> Dict[str, Any]:
        import httpx

        r = httpx.get(self.endpoint + path, params=params, timeout=self.timeout_s, verify=self.verify,
                      headers={"Authorization": f"Bearer {self.token()}", "Accept": "application/json"},
                      trust_env=False)
        if r.status_code != 200:
            raise RuntimeError(f"GET {path}: HTTP {r.status_code} {r.text[:200]}")
        return r.json()

    def service(self, namespace: str, name: str) -> Dict[str, Any]:
        return self.get(f"/api/v1/namespaces/{namespace}/services/{name}")

    def pods(self, namespace: str, selector: Mapping[str, str]) -> List[Dict[str, Any]]:
        sel = ",".join(f"{k}={v}" for k, v in sorted(selector.items()))
        return self.get(f"/api/v1/namespaces/{namespace}/pods", {"labelSelector": sel}).get("items", [])


def load_balancer_host(service: Mapping[str, Any]) -> Optional[str]:
    ingress = ((service.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
    return (ingress[0].get("hostname") or ingress[0].get("ip")) if ingress else None


def _waiting(statuses) -> Optional[str]:
    for s in statuses or []:
        state = s.get("state") or {}
        if "waiting" in state:
            w = state["waiting"]
            return f"container {s.get('name')} waiting: {w.get('reason', '')} {w.get('message', '')}".strip()
        if "terminated" in state and s.get("restartCount"):
            t = state["terminated"]
            return f"container {s.get('name')} exited {t.get('exitCode')} ({t.get('reason', '')}), " \
                   f"{s.get('restartCount')} restarts"
    return None


def pod_summary(pod: Mapping[str, Any]) -> str:
    """One line: the pod's name and where it is on its way to serving."""
    name = (pod.get("metadata") or {}).get("name", "?")
    status = pod.get("status") or {}
    phase = status.get("phase", "Unknown")
    conditions = {c.get("type"): c for c in status.get("conditions") or []}
    sched = conditions.get("PodScheduled")
    if phase == "Pending" and sched and sched.get("status") == "False":
        return f"pod {name} Pending, not scheduled: {sched.get('reason', '')} {sched.get('message', '')}".strip()
    for s in status.get("initContainerStatuses") or []:
        state = s.get("state") or {}
        if "running" in state:
            return f"pod {name} {phase}: init container {s.get('name')} running (staging weights)"
    detail = _waiting(status.get("initContainerStatuses")) or _waiting(status.get("containerStatuses"))
    if detail:
        return f"pod {name} {phase}: {detail}"
    ready = conditions.get("Ready", {}).get("status") == "True"
    return f"pod {name} {phase}, {'ready' if ready else 'not ready yet (startup probe)'}"


def serving_pod(pods: List[Mapping[str, Any]]) -> Optional[Mapping[str, Any]]:
    """The pod to reach: a Running one whose vLLM container has started, else None."""
    for p in sorted(pods, key=lambda p: (p.get("metadata") or {}).get("name", "")):
        status = p.get("status") or {}
        if status.get("phase") != "Running" or (p.get("metadata") or {}).get("deletionTimestamp"):
            continue
        if any("running" in (s.get("state") or {}) for s in status.get("containerStatuses") or []):
            return p
    return None
