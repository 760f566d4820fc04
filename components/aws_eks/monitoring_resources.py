"""The monitoring resources on aws-eks (the objects come from monitoring.py, pure):

- infrastructure (children of the cluster component): the kube-prometheus-stack release in
  namespace `monitoring` (awaited: the PrometheusRule, the dashboards and the PodMonitor need its
  CRDs and operator), the alert rules (PrometheusRule), the dashboards (ConfigMaps labelled for
  Grafana's sidecar), dcgm-exporter on the GPU nodes (not awaited: its DaemonSet has no pod until
  a Capacity Block's nodes join), and with `kimi-k3:ampWorkspaceId` a role Prometheus's service
  account takes through EKS Pod Identity to remote-write;
- serving (a child of K3Inference): the PodMonitor of vLLM, in the serving namespace, after the
  workload.
Everything is private (ClusterIP): the stack output `grafana` is the port-forward to Grafana.
"""

from __future__ import annotations

import json
from typing import Any, List, Optional

import pulumi

from ..program.tree import undoubled
from . import monitoring as mon
from .layout import GPU_NODE_LABEL


class Monitoring:
    """Declared by the cluster component after the add-ons (`enabled` false: nothing)."""

    def __init__(self, name: str, cluster, provider, parent, platform: str, region: str,
                 amp_workspace_id: Optional[str], depends_on: List[pulumi.Resource]):
        import pulumi_kubernetes as k8s

        self.release: Optional[pulumi.Resource] = None
        opts = pulumi.ResourceOptions(parent=parent, provider=provider, depends_on=depends_on)
        url = mon.amp_remote_write_url(amp_workspace_id, region) if amp_workspace_id else None
        deps = list(depends_on)
        if amp_workspace_id:
            # the association gives Prometheus credentials only through the agent (with weights from
            # the hub, or on HyperPod, nothing else installs it)
            deps += [cluster.pod_identity_agent(name, parent),
                     self._amp_role(name, cluster, region, amp_workspace_id, parent, depends_on)]
        self.release = k8s.helm.v3.Release(
            f"{name}-kube-prometheus-stack", name=mon.KPS_RELEASE, chart=mon.KPS["chart"],
            version=mon.KPS["version"],
            repository_opts={"repo": mon.KPS["repo"]}, namespace=mon.NAMESPACE, create_namespace=True,
            values=mon.kps_values(remote_write_url=url, region=region),
            # the operator, Prometheus and Grafana come up on the system nodes in a few minutes
            timeout=mon.KPS_INSTALL_TIMEOUT_S,
            opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=deps)))
        after = pulumi.ResourceOptions(parent=parent, provider=provider, depends_on=[self.release])
        k8s.helm.v3.Release(
            f"{name}-dcgm-exporter", name=mon.DCGM_RELEASE, chart=mon.DCGM["chart"],
            version=mon.DCGM["version"],
            repository_opts={"repo": mon.DCGM["repo"]}, namespace=mon.NAMESPACE,
            values=mon.dcgm_values({GPU_NODE_LABEL: "true"}), skip_await=True, opts=after)
        rule = mon.prometheus_rule(mon.NAMESPACE)
        k8s.apiextensions.CustomResource(f"{name}-alert-rules", api_version=rule["apiVersion"],
                                         kind=rule["kind"], metadata=rule["metadata"],
                                         spec=rule["spec"], opts=after)
        for cm in mon.dashboard_config_maps(mon.NAMESPACE, platform):
            # renamed from the doubled `kimi-k3-kimi-k3-...`: the alias keeps a deployed stack's
            # ConfigMap (updated in place). Its Kubernetes name (metadata.name) is unchanged, so
            # nothing is deleted and recreated, and Grafana's sidecar, which picks dashboards by
            # the label `grafana_dashboard: "1"` in every namespace (kube-prometheus-stack 88.5.3
            # values.yaml `grafana.sidecar.dashboards.label`/`searchNamespace: ALL`), sees no change
            rname, als = undoubled(name, mon.DASHBOARD_APP, cm["metadata"]["name"])
            k8s.core.v1.ConfigMap(
                rname, metadata=cm["metadata"], data=cm["data"],
                opts=pulumi.ResourceOptions.merge(after, pulumi.ResourceOptions(aliases=als)))

    def _amp_role(self, name, cluster, region, workspace_id, parent, depends_on):
        import pulumi_aws as aws

        from .weights import iam

        # waits like everything else for the Capacity Block's decision (through the system nodes):
        # a refused purchase leaves nothing behind (tests/integration/test_aws_order.py)
        role = aws.iam.Role(f"{name}-prometheus-role",
                            assume_role_policy=json.dumps(iam.pod_trust_policy()),
                            opts=pulumi.ResourceOptions(parent=parent, depends_on=depends_on))
        aws.iam.RolePolicy(f"{name}-prometheus-amp", role=role.name,
                           policy=json.dumps(mon.amp_policy(workspace_id, region)),
                           opts=pulumi.ResourceOptions(parent=role))
        return aws.eks.PodIdentityAssociation(
            f"{name}-prometheus-identity", cluster_name=cluster.name, namespace=mon.NAMESPACE,
            service_account=mon.PROMETHEUS_SERVICE_ACCOUNT, role_arn=role.arn,
            opts=pulumi.ResourceOptions(parent=parent, depends_on=depends_on))


def pod_monitor(name: str, deployment, serving, monitoring: Optional[Monitoring], provider, parent,
                aliases: Any = None) -> Optional[pulumi.Resource]:
    """The PodMonitor of vLLM's API server (none without monitoring)."""
    import pulumi_kubernetes as k8s

    if monitoring is None or monitoring.release is None:
        return None
    from ..inference.render_k8s import replica_selector

    layout, shared = deployment.rendered.layout, deployment.shared
    # vLLM's serving pods (with several replicas the Service selects vllm-router's pod instead)
    obj = mon.pod_monitor(layout.namespace, replica_selector(deployment.spec, layout),
                          key_secret=layout.secret_name if shared.has_api_key else None)
    return k8s.apiextensions.CustomResource(
        f"{name}-pod-monitor", api_version=obj["apiVersion"], kind=obj["kind"],
        metadata=obj["metadata"], spec=obj["spec"],
        opts=pulumi.ResourceOptions(parent=parent, provider=provider,
                                    depends_on=[serving.workload, monitoring.release]))
