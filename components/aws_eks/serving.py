"""Declare the rendered Kubernetes objects (render_k8s) with pulumi_kubernetes.

The dicts are exactly those the plan command writes to `manifests/`; here they become typed
resources on the cluster's provider. The Secret holding VLLM_API_KEY / HF_TOKEN is built from
Pulumi secret config (its values never appear in files, logs or plain state). The workload is
not awaited, and neither is the Service (the Kubernetes provider would wait for its endpoints,
i.e. for Ready pods, hours away with weight staging, and give up after 10 minutes): on a
Capacity Block that starts later the pods stay Pending until the scheduled scale-up brings the
nodes, and `pulumi up` must not fail meanwhile. What waits is the readiness gate
(readiness.py), which knows the plan's budget and reports what it sees.

A new `kimi-k3:apiKey` (or hub token) replaces the Secret (pulumi-kubernetes treats a Secret's
data as immutable) and the pod templates that read it carry its uid (`secret_uid`,
components/inference/secret_roll.py), so the same `pulumi up` rolls the vLLM pods (the
Deployment recreates its pod, a LeaderWorkerSet rolls group by group) and the gate then checks
the new key.
"""

from __future__ import annotations

import copy
from typing import Any, Dict, List, Mapping, Optional

import pulumi
import pulumi_kubernetes as k8s

from ..inference import secret_roll
from ..inference.render_k8s import K8sLayout
from ..program.tree import undoubled


def secret_data(api_key: Optional[Any], hf_token: Optional[Any]) -> Dict[str, Any]:
    data = {}
    if api_key is not None:
        data["VLLM_API_KEY"] = pulumi.Output.secret(api_key)
    if hf_token is not None:
        data["HF_TOKEN"] = pulumi.Output.secret(hf_token)
    return data


def secret_uid(secret: "k8s.core.v1.Secret") -> pulumi.Output:
    """The Secret's `metadata.uid`, which the Kubernetes API sets on every object it creates; a
    Secret without one would leave the pods on the old key after a rotation: stop instead. At a
    preview a Secret still to be made may have none yet: the placeholder stands for it there."""
    def uid(meta) -> str:
        value = getattr(meta, "uid", None) if meta is not None else None
        if not value and pulumi.runtime.is_dry_run():
            return secret_roll.UID_PLACEHOLDER
        if not value:
            name = getattr(meta, "name", None) or "of the serving pods"
            raise RuntimeError(f"the Kubernetes API returned Secret {name} without a "
                               "metadata.uid: the pods that read it would not roll on a new key")
        return value

    return secret.metadata.apply(uid)


def declared(obj: Mapping, uid: Optional[Any]) -> dict:
    """`obj` as declared: the Secret's uid where the renderer left its placeholder
    (secret_roll.py); an object that waits for a uid without a Secret is a wiring error."""
    if not secret_roll.marked(obj):
        return dict(obj)
    if uid is None:
        raise ValueError(f"{obj['kind']} {obj['metadata']['name']} reads a Secret the stack does not declare")
    return secret_roll.with_uid(obj, uid)


def _skip_await(obj: Mapping) -> dict:
    obj = copy.deepcopy(dict(obj))
    obj["metadata"].setdefault("annotations", {})["pulumi.com/skipAwait"] = "true"
    return obj


class Serving:
    """Namespace, Secret, `config_maps` (the API-key guard), workload (Deployment or
    LeaderWorkerSet), `router` (vllm-router's account, role, binding, ConfigMap and Deployment:
    components/router/k8s.py) and Service."""

    def __init__(self, name: str, objs: List[dict], layout: K8sLayout, secrets: Dict[str, Any],
                 provider: k8s.Provider, parent: pulumi.Resource, depends_on: List[pulumi.Resource],
                 service_depends_on: List[pulumi.Resource] = (),
                 before_workload=None, config_maps: List[dict] = (),
                 aliases: List[pulumi.Alias] = (), service_annotations: Mapping[str, Any] = None,
                 router: List[dict] = ()):
        """Every object a child of `parent` (K3Inference), with `aliases` (its place before:
        components/program/tree.py)."""
        aliases = list(aliases)
        base = pulumi.ResourceOptions(parent=parent, provider=provider, depends_on=depends_on,
                                      aliases=aliases)
        by_kind = {o["kind"]: o for o in objs}
        ns = by_kind["Namespace"]
        self.namespace = k8s.core.v1.Namespace(f"{name}-ns", metadata=ns["metadata"], opts=base)
        in_ns = pulumi.ResourceOptions(parent=parent, provider=provider, depends_on=[self.namespace],
                                       aliases=aliases)
        waits: List[pulumi.Resource] = [self.namespace]
        self.secret, uid = None, None
        if secrets:
            self.secret = k8s.core.v1.Secret(
                f"{name}-secrets", metadata={"name": layout.secret_name, "namespace": layout.namespace},
                type="Opaque", string_data=secrets,
                opts=pulumi.ResourceOptions.merge(in_ns, pulumi.ResourceOptions(
                    additional_secret_outputs=["stringData", "data"])))
            waits.append(self.secret)
            uid = secret_uid(self.secret)
        for cm in config_maps:  # the API-key guard the serving pod mounts (render_api_guard), EFA scripts
            # not `kimi-k3-kimi-k3-...`: the old name aliased (components/program/tree.py `undoubled`)
            rname, als = undoubled(name, layout.name, cm["metadata"]["name"], aliases)
            waits.append(k8s.core.v1.ConfigMap(rname, metadata=cm["metadata"], data=cm["data"],
                                               opts=pulumi.ResourceOptions(parent=parent, provider=provider,
                                                                           depends_on=[self.namespace],
                                                                           aliases=als)))
        if before_workload is not None:
            # the weights objects (components/aws_eks/weights/resources.py) the pods refer to
            waits += before_workload(provider, self.namespace, parent, aliases)
        after = pulumi.ResourceOptions(parent=parent, provider=provider, depends_on=waits,
                                       aliases=aliases)
        if "Deployment" in by_kind:
            d = declared(_skip_await(by_kind["Deployment"]), uid)
            self.workload = k8s.apps.v1.Deployment(f"{name}-vllm", metadata=d["metadata"], spec=d["spec"],
                                                   opts=after)
        else:
            lws = declared(_skip_await(by_kind["LeaderWorkerSet"]), uid)
            self.workload = k8s.apiextensions.CustomResource(
                f"{name}-vllm", api_version=lws["apiVersion"], kind=lws["kind"], metadata=lws["metadata"],
                spec=lws["spec"], opts=after)
        self.router = _declare_router(name, router, after, uid) if router else []
        svc = _skip_await(by_kind["Service"])
        # values known only at deploy time (a requested certificate's ARN: aws_eks/tls.py)
        svc["metadata"]["annotations"].update(service_annotations or {})
        self.service_object = svc
        self.service = k8s.core.v1.Service(f"{name}-svc", metadata=svc["metadata"], spec=svc["spec"],
                                           opts=pulumi.ResourceOptions(parent=parent, provider=provider,
                                                                       depends_on=[self.namespace,
                                                                                   *service_depends_on],
                                                                       aliases=aliases))
        self.workload_object = by_kind.get("Deployment") or by_kind.get("LeaderWorkerSet")
        port = svc["spec"]["ports"][0]["port"]
        in_cluster = f"http://{svc['metadata']['name']}.{layout.namespace}.svc.cluster.local:{port}/v1"
        if svc["spec"]["type"] == "LoadBalancer":
            self.endpoint = self.service.status.apply(lambda st: _lb_url(st, port) or in_cluster)
        else:
            self.endpoint = pulumi.Output.from_input(in_cluster)


def _declare_router(name: str, objs: List[dict], opts: pulumi.ResourceOptions,
                    uid: Optional[Any] = None) -> List[pulumi.Resource]:
    """The router's objects in order (the Deployment not awaited: it becomes Ready only once a
    replica serves, which the readiness gate waits for; with the Secret's uid if its pods read
    the Secret)."""
    out: List[pulumi.Resource] = []
    for o in objs:
        kind, meta, res_name = o["kind"], o["metadata"], f"{name}-router-{o['kind'].lower()}"
        step = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=list(out)))
        if kind == "ServiceAccount":
            out.append(k8s.core.v1.ServiceAccount(res_name, metadata=meta, opts=step))
        elif kind == "Role":
            out.append(k8s.rbac.v1.Role(res_name, metadata=meta, rules=o["rules"], opts=step))
        elif kind == "RoleBinding":
            out.append(k8s.rbac.v1.RoleBinding(res_name, metadata=meta, role_ref=o["roleRef"],
                                               subjects=o["subjects"], opts=step))
        elif kind == "ConfigMap":
            out.append(k8s.core.v1.ConfigMap(res_name, metadata=meta, data=o["data"], opts=step))
        elif kind == "Deployment":
            d = declared(_skip_await(o), uid)
            out.append(k8s.apps.v1.Deployment(res_name, metadata=d["metadata"], spec=d["spec"],
                                              opts=step))
        else:
            raise ValueError(f"unexpected router object {kind}")
    return out


def _lb_url(status, port: int) -> Optional[str]:
    try:
        ingress = status.load_balancer.ingress[0]
    except (AttributeError, IndexError, TypeError):
        return None
    host = getattr(ingress, "hostname", None) or getattr(ingress, "ip", None)
    return f"http://{host}:{port}/v1" if host else None
