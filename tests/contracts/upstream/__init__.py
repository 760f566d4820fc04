"""Upstream files, recorded in the repository, that our recorded facts are checked against.

components/aws_eks/chart_facts.yaml and tests/contracts/hyperpod/iec_facts.yaml say what kimi-k3
relies on in the Helm charts it installs and in the HyperPod operator's CRD. The tests hold those
facts to the upstream files themselves, kept here at `<owner>/<name>/<commit>/<path>` (index.yaml
lists each with its URL, commit and licence) so no test needs a network or a clone. Re-record
with tools/record_upstream.py when a pin changes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict

import yaml

STORE = Path(__file__).resolve().parent
INDEX = STORE / "index.yaml"
EFA_CHART_DIR = "stable/aws-efa-k8s-device-plugin"
HYPERPOD_CRD = ("aws/sagemaker-hyperpod-cli", "a00b22d17ea928a6e39a43bd2efdafe01b1005ea",
                "helm_chart/HyperPodHelmChart/charts/inference-operator/config/crd/"
                "inference.sagemaker.aws.amazon.com_inferenceendpointconfigs.yaml")

#: spec paths of the CRD whose properties are kept (the rest become {}), and whose
#: descriptions are kept (the facts quote them)
CRD_PATHS = ("", "worker", "worker.environmentVariables", "worker.environmentVariables.valueFrom",
             "worker.environmentVariables.valueFrom.secretKeyRef", "worker.modelVolumeMount",
             "worker.modelInvocationPort", "modelSourceConfig",
             "modelSourceConfig.huggingFaceModel",
             "modelSourceConfig.huggingFaceModel.tokenSecretRef",
             # the end-to-end HyperPod path (components/aws_eks/hyperpod/): ALB, metrics, TLS
             "loadBalancer", "metrics", "metrics.modelMetrics", "tlsConfig",
             "tlsConfig.customCertificateConfig", "dnsConfig")
CRD_DESCRIBED = ("worker.args", "worker.command", "modelSourceConfig.huggingFaceModel.tokenSecretRef",
                 "loadBalancer.healthCheckPath", "metrics.modelMetrics.port", "tlsConfig.tlsCertificateOutputS3Uri",
                 "tlsConfig.customCertificateConfig")
#: status paths whose properties are kept (what the readiness gate reads), prefixed `status`
CRD_STATUS_PATHS = ("status", "status.deploymentStatus", "status.tlsCertificate")
CRD_STATUS_DESCRIBED = ("status.state", "status.selector", "status.tlsCertificate.tlsCertificateS3Keys",
                        "status.tlsCertificate.certificateDomainNames")
CRD_KEYWORDS = ("type", "format", "default", "enum", "pattern", "maxLength", "required")


def read(repo: str, commit: str, path: str) -> str:
    """The recorded text of `path` in `repo` at `commit`; FileNotFoundError names what to record."""
    f = STORE / repo / commit / path
    if not f.is_file():
        raise FileNotFoundError(f"{repo}@{commit}:{path} is not recorded under {STORE}; "
                                f"run tools/record_upstream.py {repo} <clone>")
    return f.read_text(encoding="utf-8")


def load_yaml(repo: str, commit: str, path: str) -> Any:
    return yaml.safe_load(read(repo, commit, path))


def efa_history() -> Dict[str, Any]:
    return load_yaml("aws/eks-charts", "history", f"{EFA_CHART_DIR}.yaml")


def _reduce(node: Dict[str, Any], path: str, paths=CRD_PATHS, described=CRD_DESCRIBED) -> Dict[str, Any]:
    out = {k: node[k] for k in CRD_KEYWORDS if k in node}
    if path in described and "description" in node:
        out["description"] = node["description"]
    if node.get("type") == "array" and isinstance(node.get("items"), dict):
        out["items"] = _reduce(node["items"], path, paths, described)
        return out
    props = node.get("properties")
    if isinstance(props, dict):
        keep = path in paths
        out["properties"] = {
            name: (_reduce(sub, f"{path}.{name}".lstrip("."), paths, described) if keep else {})
            for name, sub in props.items()}
    return out


def reduce_crd(crd: Dict[str, Any]) -> Dict[str, Any]:
    """Each version's served/storage flags; v1's spec schema reduced along CRD_PATHS, its status
    along CRD_STATUS_PATHS."""
    out = {"kind": crd["kind"], "spec": {"group": crd["spec"]["group"],
                                         "names": {"kind": crd["spec"]["names"]["kind"]},
                                         "versions": []}}
    for v in crd["spec"]["versions"]:
        entry = {"name": v["name"], "served": v["served"], "storage": v["storage"]}
        if v["name"] == "v1":
            props = v["schema"]["openAPIV3Schema"]["properties"]
            kept = {"spec": _reduce(props["spec"], "")}
            if "status" in props:
                kept["status"] = _reduce(props["status"], "status", CRD_STATUS_PATHS, CRD_STATUS_DESCRIBED)
            entry["schema"] = {"openAPIV3Schema": {"properties": kept}}
        out["spec"]["versions"].append(entry)
    return out
