"""What the LeaderWorkerSet controller makes of a LeaderWorkerSet: names, Services, DNS.

Outside contract, read in kubernetes-sigs/lws at v0.8.0 (commit fc19b9ae9b01, the version our
chart pin installs; unchanged at the snapshot's HEAD):
- `pkg/controllers/leaderworkerset_controller.go` reconcileHeadlessServices: with no
  `spec.networkConfig` or `subdomainPolicy: Shared`, one headless Service named after the LWS,
  selector `leaderworkerset.sigs.k8s.io/name=<lws>`, via
  `pkg/utils/controller/controller_utils.go` CreateHeadlessServiceIfNotExists, which does
  nothing when a Service of that name already exists (whatever it is).
- The leader StatefulSet is named after the LWS; leader pods are `<lws>-<group>`; each group's
  worker StatefulSet is named after its leader pod, workers `<lws>-<group>-<index>` from 1;
  both StatefulSets use `serviceName: <lws>` under the Shared policy
  (`pod_controller.go`: serviceName = lws.Name), so every pod's subdomain is the LWS name.
- `pkg/utils/pod/pod_utils.go` AddLWSVariables: `LWS_LEADER_ADDRESS =
  <lws>-<group>.<subdomain>.<namespace>`.
Kubernetes DNS ("DNS for Services and Pods"): `<hostname>.<subdomain>.<namespace>.svc...`
resolves only when a *headless* Service named `<subdomain>` in that namespace selects the pod.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional

SET_NAME_LABEL = "leaderworkerset.sigs.k8s.io/name"
GROUP_INDEX_LABEL = "leaderworkerset.sigs.k8s.io/group-index"
WORKER_INDEX_LABEL = "leaderworkerset.sigs.k8s.io/worker-index"


def headless_service(lws: Mapping[str, Any], existing: List[Mapping[str, Any]]) -> Optional[Dict[str, Any]]:
    """The Service the controller creates, or None when it leaves an existing one of that name."""
    name, ns = lws["metadata"]["name"], lws["metadata"]["namespace"]
    policy = ((lws["spec"].get("networkConfig") or {}).get("subdomainPolicy")) or "Shared"
    if policy != "Shared":
        raise NotImplementedError("only the Shared subdomain policy is modelled")
    if any(s["metadata"]["name"] == name and s["metadata"].get("namespace") == ns for s in existing):
        return None
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": name, "namespace": ns, "labels": {SET_NAME_LABEL: name}},
            "spec": {"clusterIP": "None", "selector": {SET_NAME_LABEL: name}, "publishNotReadyAddresses": True}}


def pods(lws: Mapping[str, Any]) -> List[Dict[str, Any]]:
    """Every pod of the LWS: name, hostname, subdomain, labels, env the controller adds."""
    name, ns = lws["metadata"]["name"], lws["metadata"]["namespace"]
    t = lws["spec"]["leaderWorkerTemplate"]
    out = []
    for g in range(int(lws["spec"].get("replicas", 1))):
        leader = f"{name}-{g}"
        for w in range(int(t["size"])):
            tpl = t["leaderTemplate"] if w == 0 else t["workerTemplate"]
            pod_name = leader if w == 0 else f"{leader}-{w}"
            labels = {**(tpl.get("metadata", {}).get("labels") or {}), SET_NAME_LABEL: name,
                      GROUP_INDEX_LABEL: str(g), WORKER_INDEX_LABEL: str(w)}
            out.append({"name": pod_name, "hostname": pod_name, "subdomain": name, "namespace": ns,
                        "labels": labels, "leader_address": f"{name}-{g}.{name}.{ns}", "role": w})
    return out


def _selects(service: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
    sel = service["spec"].get("selector") or {}
    return bool(sel) and all(pod["labels"].get(k) == v for k, v in sel.items())


def resolves(address: str, services: List[Mapping[str, Any]], all_pods: List[Mapping[str, Any]]) -> bool:
    """Does `<hostname>.<subdomain>.<namespace>` resolve to a pod under Kubernetes DNS?"""
    hostname, subdomain, ns = address.split(".")
    for svc in services:
        if svc["metadata"]["name"] != subdomain or svc["metadata"].get("namespace") != ns:
            continue
        if svc["spec"].get("clusterIP") != "None":
            return False  # a ClusterIP Service gives no per-pod records
        return any(p["hostname"] == hostname and p["subdomain"] == subdomain and p["namespace"] == ns
                   and _selects(svc, p) for p in all_pods)
    return False
