"""Record the upstream files the chart and CRD tests compare our facts with, from a git clone.

The tests never read outside the repository: what they check our recorded facts against
(components/aws_eks/chart_facts.yaml, tests/contracts/hyperpod/iec_facts.yaml) is itself kept
under tests/contracts/upstream/, each file at `<owner>/<name>/<commit>/<path>` exactly as the
repository holds it at that commit, or reduced (the CRD, 456 kB upstream) to the keys the tests
read. index.yaml there lists every file with its repository URL, commit and licence.

Run by hand when a pin changes (re-record, then let the tests say what moved):

    git clone https://github.com/NVIDIA/k8s-device-plugin CLONE
    python tools/record_upstream.py NVIDIA/k8s-device-plugin CLONE
    (likewise aws/eks-charts, aws/sagemaker-hyperpod-cli, prometheus-community/helm-charts,
    NVIDIA/dcgm-exporter, Ascend/mind-cluster; for vllm-project/vllm give an unpacked release
    wheel: pip download vllm==0.33.0 --no-deps && unzip -d TREE vllm-*.whl)
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.contracts.upstream import (EFA_CHART_DIR, HYPERPOD_CRD, INDEX, STORE,  # noqa: E402
                                      reduce_crd)


def git_show(clone: Path, commit: str, path: str) -> str:
    return subprocess.run(["git", "-C", str(clone), "show", f"{commit}:{path}"], check=True,
                          capture_output=True, text=True).stdout


def write(repo: str, commit: str, path: str, text: str) -> None:
    target = STORE / repo / commit / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    print(f"recorded {repo}@{commit[:12]}:{path} ({len(text)} chars)")


def chart_files(chart: str, clone: Path) -> None:
    """values, template and Chart.yaml of every recorded version of `chart`, verbatim."""
    from components.aws_eks import addons
    for version, facts in addons.facts()[chart]["versions"].items():
        src = facts["source"]
        if "commit" not in src:
            continue
        chart_yaml = src.get("chart") or str(Path(src["values"]).parent / "Chart.yaml")
        for path in (src["values"], src["template"], chart_yaml):
            write(src["repository"], src["commit"], path, git_show(clone, src["commit"], path))


def efa_history(clone: Path, types: List[str]) -> None:
    """For every commit touching the EFA chart: its chart version and which of `types` its
    default supportedInstanceLabels list (the recorded first_listed_in is checked on this)."""
    commits = subprocess.run(["git", "-C", str(clone), "log", "--format=%H %cs", "--reverse",
                              "--", EFA_CHART_DIR], check=True, capture_output=True,
                             text=True).stdout.split("\n")
    rows: List[Dict[str, Any]] = []
    for line in filter(None, commits):
        commit, date = line.split()
        chart = yaml.safe_load(git_show(clone, commit, f"{EFA_CHART_DIR}/Chart.yaml"))
        values = yaml.safe_load(git_show(clone, commit, f"{EFA_CHART_DIR}/values.yaml"))
        listed = ((values or {}).get("supportedInstanceLabels") or {}).get("values") or []
        rows.append({"commit": commit, "date": date, "version": chart["version"],
                     "listed": [t for t in types if t in listed]})
    head = ("# Every commit of aws/eks-charts touching stable/aws-efa-k8s-device-plugin, oldest first:\n"
            "# its Chart.yaml version and which of the instance types kimi-k3 offers its\n"
            "# values.yaml lists in supportedInstanceLabels.values. Written by\n"
            "# tools/record_upstream.py from a clone of https://github.com/aws/eks-charts.\n")
    write("aws/eks-charts", "history", f"{EFA_CHART_DIR}.yaml",
          head + yaml.safe_dump({"types": types, "commits": rows}, sort_keys=False, width=100))


def hyperpod_crd(clone: Path) -> None:
    repo, commit, path = HYPERPOD_CRD
    crd = yaml.safe_load(git_show(clone, commit, path))
    head = (f"# Reduced from https://github.com/{repo}/blob/{commit}/{path}:\n"
            "# version v1's served/storage flags and its spec and status schemas, keeping type, format,\n"
            "# default, enum, pattern, maxLength and required everywhere, properties only along the\n"
            "# paths the tests read (elsewhere each property is {}), and the descriptions quoted\n"
            "# there. Written by tools/record_upstream.py (reduce_crd).\n")
    write(repo, commit, path, head + yaml.safe_dump(reduce_crd(crd), sort_keys=True, width=100))


def _strip_descriptions(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _strip_descriptions(v) for k, v in node.items() if k != "description"}
    if isinstance(node, list):
        return [_strip_descriptions(v) for v in node]
    return node


def kube_prometheus_stack(clone: Path) -> None:
    """Chart.yaml verbatim; values.yaml parsed (comments dropped); the PodMonitor and
    PrometheusRule CRDs with their descriptions dropped (components/aws_eks/monitoring.py)."""
    from components.aws_eks import monitoring
    repo, commit, base = monitoring.KPS_SOURCE
    write(repo, commit, f"{base}/Chart.yaml", git_show(clone, commit, f"{base}/Chart.yaml"))
    head = (f"# Reduced from https://github.com/{repo}/blob/{commit}/{{path}}: {{what}}.\n"
            "# Written by tools/record_upstream.py.\n")
    values = yaml.safe_load(git_show(clone, commit, f"{base}/values.yaml"))
    write(repo, commit, f"{base}/values.yaml",
          head.format(path=f"{base}/values.yaml", what="parsed and dumped again (comments dropped)")
          + yaml.safe_dump(values, sort_keys=True, width=100))
    for crd in monitoring.KPS_CRDS:
        path = f"{base}/charts/crds/crds/{crd}"
        text = yaml.safe_dump(_strip_descriptions(yaml.safe_load(git_show(clone, commit, path))),
                              sort_keys=True, width=100)
        write(repo, commit, path, head.format(path=path, what="descriptions dropped") + text)


def dcgm_exporter(clone: Path) -> None:
    """The chart's values.yaml and Chart.yaml and the default counters, verbatim."""
    from components.aws_eks import monitoring
    repo, commit, paths = monitoring.DCGM_SOURCE
    for path in paths:
        write(repo, commit, path, git_show(clone, commit, path))


def npu_exporter(clone: Path) -> None:
    """The npu-exporter collector files that declare the metric names, verbatim."""
    from components.observability import metrics
    repo, commit, paths = metrics.NPU_FILES
    for path in paths:
        write(repo, commit, path, git_show(clone, commit, path))


def vllm_wheel(tree: Path) -> None:
    """vllm/v1/metrics/loggers.py of an unpacked release wheel (`pip download vllm==V
    --no-deps`, unzip), recorded under the release tag (the wheel names its commit in
    vllm/_version.py)."""
    version = re.search(r"__version__ = version = '([^']+)'",
                        (tree / "vllm" / "_version.py").read_text()).group(1)
    path = "vllm/v1/metrics/loggers.py"
    write("vllm-project/vllm", f"v{version}", path, (tree / path).read_text(encoding="utf-8"))


def main(argv: List[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    repo, clone = argv[0], Path(argv[1])
    if repo == "NVIDIA/k8s-device-plugin":
        chart_files("nvidia-device-plugin", clone)
    elif repo == "aws/eks-charts":
        chart_files("aws-efa-k8s-device-plugin", clone)
        from components.aws_eks import addons
        efa = addons.chart_facts("aws-efa-k8s-device-plugin", addons.EFA_DEVICE_PLUGIN_VERSION)
        efa_history(clone, sorted(efa["first_listed_in"]))
    elif repo == "aws/sagemaker-hyperpod-cli":
        hyperpod_crd(clone)
    elif repo == "prometheus-community/helm-charts":
        kube_prometheus_stack(clone)
    elif repo == "NVIDIA/dcgm-exporter":
        dcgm_exporter(clone)
    elif repo == "Ascend/mind-cluster":
        npu_exporter(clone)
    elif repo == "vllm-project/vllm":  # CLONE is an unpacked release wheel
        vllm_wheel(clone)
    else:
        print(f"{repo}: not a repository the tests record (see {INDEX.relative_to(ROOT)})",
              file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
