"""Metrics on aws-eks: Prometheus and Grafana (kube-prometheus-stack), NVIDIA's dcgm-exporter on
the GPU nodes, a PodMonitor for vLLM, the alert rules and the dashboards. Pure: values and
objects as dicts, the target turns them into Helm releases and Kubernetes resources.

Sources (read at their tags; the facts the tests check are recorded under tests/contracts/upstream):
- kube-prometheus-stack 88.5.3, prometheus-community/helm-charts tag kube-prometheus-stack-88.5.3
  (commit ea930baeebeba39f56d6b44e351f23b2a072a600, 2026-08-21), values.yaml: Prometheus
  `v3.14.0-distroless` (line 4347); `podMonitorSelectorNilUsesHelmValues: true` (line 4499, the
  same for ServiceMonitors 4476 and rules 4451): left true, the Prometheus it creates selects only
  objects carrying the release's label, so ours are set to false and it takes every PodMonitor,
  ServiceMonitor and PrometheusRule of the cluster; the Grafana sidecar provisions every ConfigMap
  labelled `grafana_dashboard: "1"` in any namespace (lines 1537-1542); `remoteWrite: []` (line
  4658); every Service is ClusterIP (private: reach Grafana with `kubectl port-forward`).
- the PodMonitor CRD of the same tag (crd-podmonitors.yaml): `podMetricsEndpoints[].port` is the
  pod's port *name* ("If the pod doesn't expose a port with the same name, it will result in no
  targets being discovered": only the API server, the Deployment's pod or the LeaderWorkerSet's
  leader, declares `http`; the headless workers serve no /metrics), `authorization.credentials`
  a Secret key (vLLM's key when the stack has one: kimi-k3's guard covers /metrics),
  `metricRelabelings` (the `vllm_` -> `vllm:` rule, components/observability/scrape.py), and
  without `jobLabel` the job would be `<namespace>/<name>`: a relabeling sets `job="vllm"`, the
  job the dashboards and alerts query.
- dcgm-exporter chart 4.8.2, NVIDIA/dcgm-exporter tag 4.5.3-4.8.2 (commit
  691c92762eb551313c825f6efe4ceeee20982801, 2026-05-06), deployment/values.yaml: image
  `nvcr.io/nvidia/k8s/dcgm-exporter:4.5.3-4.8.2-distroless`, `serviceMonitor.enabled: true`,
  tolerations only for the control plane: the GPU nodes' `nvidia.com/gpu` taint is tolerated here
  and the DaemonSet is kept to the GPU nodes. The exporter reads `-f
  /etc/dcgm-exporter/default-counters.csv` (`arguments`), but the chart mounts its own list
  there (`extraConfigMapVolumes`/`extraVolumeMounts`: the ConfigMap of
  templates/metrics-configmap.yaml, its built-in list unless `customMetrics` is set; ours is
  not), so the names the dashboards may query are that template's (metrics.py cites both).
- Amazon Managed Service for Prometheus: remote write to
  `https://aps-workspaces.<region>.amazonaws.com/workspaces/<workspace id>/api/v1/remote_write`
  with SigV4 (`remoteWrite[].sigv4.region`, the Prometheus CRD: "It requires Prometheus >= v2.26.0").
"""

from __future__ import annotations

import json
import re
from typing import Any, Dict, List, Mapping, Optional

from ..observability import alerts, dashboards, scrape

KPS = {"chart": "kube-prometheus-stack", "version": "88.5.3",
       "repo": "https://prometheus-community.github.io/helm-charts"}
DCGM = {"chart": "dcgm-exporter", "version": "4.8.2",
        "repo": "https://nvidia.github.io/dcgm-exporter/helm-charts"}
#: where the facts above were read (tools/record_upstream.py records them for the tests)
KPS_SOURCE = ("prometheus-community/helm-charts", "ea930baeebeba39f56d6b44e351f23b2a072a600",
              "charts/kube-prometheus-stack")
KPS_CRDS = ("crd-podmonitors.yaml", "crd-prometheusrules.yaml")
DCGM_SOURCE = ("NVIDIA/dcgm-exporter", "691c92762eb551313c825f6efe4ceeee20982801",
               ("deployment/values.yaml", "deployment/Chart.yaml", "etc/default-counters.csv",
                "deployment/templates/metrics-configmap.yaml"))
#: how long Helm may take to install kube-prometheus-stack (its default is 300 s)
KPS_INSTALL_TIMEOUT_S = 900
#: the namespace the monitoring releases live in
NAMESPACE = "monitoring"
#: fixed Helm release names (Pulumi would add a random suffix), so the Services have known names:
#: the Grafana subchart's Service is `<release>-grafana`, port 80
KPS_RELEASE = "kimi-k3-monitoring"
DCGM_RELEASE = "kimi-k3-dcgm-exporter"
GRAFANA_PORT_FORWARD = (f"kubectl -n {NAMESPACE} port-forward svc/{KPS_RELEASE}-grafana 3000:80  "
                        "# then http://127.0.0.1:3000, user admin, password: kubectl -n "
                        f"{NAMESPACE} get secret {KPS_RELEASE}-grafana -o "
                        "jsonpath='{.data.admin-password}' | base64 -d")
#: Prometheus's service account (fixed, so an AMP remote-write role can be bound to it)
PROMETHEUS_SERVICE_ACCOUNT = "kimi-k3-prometheus"
GPU_TAINT = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
#: Amazon Managed Prometheus workspace ids as AWS shows them (ws- and a UUID)
WORKSPACE_ID = re.compile(r"ws-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
#: the app prefix the dashboards' uids (and so their ConfigMaps' names) carry
DASHBOARD_APP = dashboards.UID_PREFIX.removesuffix("-")
_REGION = re.compile(r"[a-z]{2}(-[a-z]+)+-[0-9]")


def amp_remote_write_url(workspace_id: str, region: str) -> str:
    """The remote-write URL of an Amazon Managed Prometheus workspace (ValueError if the id or
    region is not one)."""
    if not WORKSPACE_ID.fullmatch(workspace_id or ""):
        raise ValueError(f"kimi-k3:ampWorkspaceId {workspace_id!r} is not an AMP workspace id; "
                         "give it as AWS shows it, e.g. ws-12345678-abcd-1234-abcd-123456789012")
    if not _REGION.fullmatch(region or ""):
        raise ValueError(f"region {region!r} is not an AWS region")
    return f"https://aps-workspaces.{region}.amazonaws.com/workspaces/{workspace_id}/api/v1/remote_write"


def kps_values(*, remote_write_url: Optional[str] = None, region: Optional[str] = None,
               retention: str = "15d") -> Dict[str, Any]:
    """kube-prometheus-stack values: private, selects every monitor and rule, no Alertmanager
    (the rules are evaluated and shown; where to send alerts is the user's choice)."""
    spec: Dict[str, Any] = {
        "podMonitorSelectorNilUsesHelmValues": False,
        "serviceMonitorSelectorNilUsesHelmValues": False,
        "ruleSelectorNilUsesHelmValues": False,
        "retention": retention,
    }
    if remote_write_url:
        spec["remoteWrite"] = [{"url": remote_write_url, "sigv4": {"region": region}}]
    return {
        "alertmanager": {"enabled": False},
        "prometheus": {"prometheusSpec": spec,
                       "serviceAccount": {"name": PROMETHEUS_SERVICE_ACCOUNT}},
        "grafana": {
            # no admin password given: the Grafana chart generates one into its Secret
            # (`kubectl -n monitoring get secret <release>-grafana`, docs/observability.md)
            "sidecar": {"dashboards": {"enabled": True, "label": "grafana_dashboard",
                                       "labelValue": "1", "searchNamespace": "ALL"}},
        },
    }


def dcgm_values(gpu_node_selector: Mapping[str, str]) -> Dict[str, Any]:
    """dcgm-exporter values: on the GPU nodes only, tolerating their taint."""
    return {"nodeSelector": dict(gpu_node_selector),
            "tolerations": [dict(GPU_TAINT)],
            "serviceMonitor": {"enabled": True}}


def pod_monitor(namespace: str, selector: Mapping[str, str], *, port_name: str = "http",
                key_secret: Optional[str] = None, key_field: str = "VLLM_API_KEY",
                interval: str = "15s") -> Dict[str, Any]:
    """The PodMonitor of vLLM's API server (job `vllm`, the `vllm_` -> `vllm:` rename)."""
    endpoint: Dict[str, Any] = {
        "port": port_name, "path": "/metrics", "interval": interval,
        "relabelings": [{"targetLabel": "job", "replacement": dashboards.VLLM_JOB}],
        "metricRelabelings": [dict(scrape.VLLM_RELABEL_OPERATOR)],
    }
    if key_secret:
        endpoint["authorization"] = {"type": "Bearer",
                                     "credentials": {"name": key_secret, "key": key_field}}
    return {"apiVersion": "monitoring.coreos.com/v1", "kind": "PodMonitor",
            "metadata": {"name": "kimi-k3-vllm", "namespace": namespace},
            "spec": {"selector": {"matchLabels": dict(selector)},
                     "podMetricsEndpoints": [endpoint]}}


def prometheus_rule(namespace: str) -> Dict[str, Any]:
    """The alert rules (components/observability/alerts.py) as a PrometheusRule."""
    return {"apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule",
            "metadata": {"name": "kimi-k3-alerts", "namespace": namespace},
            "spec": alerts.rules_document()}


def dashboard_config_maps(namespace: str, platform: str) -> List[Dict[str, Any]]:
    """One ConfigMap per dashboard, labelled for Grafana's sidecar; its name is the dashboard's
    uid (`kimi-k3-serving`) and `-dashboard`; its Pulumi name drops the uid's `DASHBOARD_APP`
    prefix (components/program/tree.py `undoubled`, the rule of every cluster object's name)."""
    out = []
    for name, text in sorted(dashboards.build(platform).items()):
        uid = name.removesuffix(".json")
        json.loads(text)  # a dashboard that is not JSON is a bug here
        out.append({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": f"{uid}-dashboard", "namespace": namespace,
                                 "labels": {"grafana_dashboard": "1"}},
                    "data": {name: text}})
    return out


def amp_policy(workspace_id: str, region: str) -> Dict[str, Any]:
    """What Prometheus's role may do: remote-write to that one workspace (any account's ARN of
    that id in the region: the account is the stack's, known only at run time)."""
    amp_remote_write_url(workspace_id, region)  # checks both
    return {"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Action": ["aps:RemoteWrite"],
        "Resource": f"arn:aws:aps:{region}:*:workspace/{workspace_id}"}]}
