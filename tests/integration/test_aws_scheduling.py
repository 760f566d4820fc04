"""Scheduling test: do the DaemonSets we install land on the GPU nodes, and does every vLLM pod fit?

Runs the real program (mock engine) for every accelerator aws-eks offers and 1, 2 and 4 nodes
per replica, then reads what it registered: the GPU and system node groups and launch template
(-> Node objects, tests/contracts/kubernetes/eks_nodes.py), the Helm releases' chart, version
and values (-> the DaemonSet pod specs the charts render, tests/contracts/kubernetes/charts.py,
with Helm's value merging), and the Deployment / LeaderWorkerSet pod templates. A model of
kube-scheduler's filters (tests/contracts/kubernetes/scheduler.py) then decides: each device
plugin lands on every GPU node, the nodes advertise what the plugins that landed advertise, and
every vLLM pod is bound, its GPU and EFA requests equal to what a node advertises.
"""

import pulumi
import pytest
import yaml

from components.aws_eks import addons
from components.inference.catalog import DEFAULT_SHAPE_FOR_ACCELERATOR, NODE_SHAPES
from components.offline.runner import run_program
from components.config.shared import TARGET_ACCELERATORS
from tests.contracts.kubernetes.charts import advertised, daemonset_pod_spec
from tests.contracts.kubernetes.eks_nodes import efa_interfaces, node_from_node_group
from tests.contracts.kubernetes.helm_values import coalesce
from tests.contracts import upstream
from tests.contracts.kubernetes.scheduler import Node, as_daemon_pod, place, pod_request, why_not

CR = "cr-0123456789abcdef0"
DEVICE_PLUGIN_CHARTS = ("nvidia-device-plugin", "aws-efa-k8s-device-plugin")
#: vCPUs / GiB of the system node type (EC2 instance type facts)
SYSTEM_SIZES = {"m7i.xlarge": (4, 16)}
ZONE = "us-east-2b"


def one(run, type_token, name=None):
    found = [r for r in run.of_type(type_token) if name is None or r["name"] == name]
    assert len(found) == 1, (type_token, name)
    return found[0]["inputs"]


def cluster_of(run, shape):
    gpu_ng = one(run, "aws:eks/nodeGroup:NodeGroup", "kimi-k3-gpu")
    sys_ng = one(run, "aws:eks/nodeGroup:NodeGroup", "kimi-k3-system")
    lt = one(run, "aws:ec2/launchTemplate:LaunchTemplate")
    assert lt["instanceType"] == shape.key
    gpus = [node_from_node_group(f"gpu-{i}", gpu_ng, lt["instanceType"], ZONE, shape.vcpus, shape.memory_gib,
                                 efa=efa_interfaces(lt) > 0)
            for i in range(int(gpu_ng["scalingConfig"]["maxSize"]))]
    sys_type = sys_ng["instanceTypes"][0]
    systems = [node_from_node_group(f"system-{i}", sys_ng, sys_type, "us-east-2a", *SYSTEM_SIZES[sys_type])
               for i in range(int(sys_ng["scalingConfig"]["desiredSize"]))]
    return gpus, systems, lt


def releases(run):
    return [r["inputs"] for r in run.of_type("kubernetes:helm.sh/v3:Release")]


def vllm_pods(run):
    deps = [d for d in run.of_type("kubernetes:apps/v1:Deployment")
            if d["name"].endswith("-vllm")]
    if deps:
        spec = deps[0]["inputs"]["spec"]
        return [(f"vllm-{i}", spec["template"]["spec"]) for i in range(int(spec["replicas"]))]
    lws = one(run, "kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet")["spec"]
    t = lws["leaderWorkerTemplate"]
    pods = []
    for g in range(int(lws["replicas"])):
        pods.append((f"vllm-{g}-leader", t["leaderTemplate"]["spec"]))
        pods += [(f"vllm-{g}-worker-{w}", t["workerTemplate"]["spec"]) for w in range(1, int(t["size"]))]
    return pods


def land_device_plugins(run, gpus, systems, lt, shape):
    """Every device plugin lands on every GPU node (and no system node); nodes then advertise."""
    landed = []
    for rel in releases(run):
        if rel["chart"] not in DEVICE_PLUGIN_CHARTS:
            continue
        spec = daemonset_pod_spec(rel["chart"], rel["version"], rel.get("values") or {})
        assert spec is not None, f"{rel['chart']} renders no DaemonSet with our values"
        for node in gpus:
            reason = why_not(as_daemon_pod(spec, node), node)
            assert reason is None, f"{rel['chart']} {rel['version']} does not land on {node.name}: {reason}"
        for node in systems:
            assert why_not(as_daemon_pod(spec, node), node) is not None, f"{rel['chart']} lands on {node.name}"
        landed.append(rel)
    devices = {"per-gpu": shape.devices, "per-efa-interface": efa_interfaces(lt)}
    for node in gpus:
        for rel in landed:
            node.allocatable.update(advertised(rel["chart"], rel["version"], devices))
    return landed


CASES = [(acc, n) for acc in TARGET_ACCELERATORS["aws-eks"] for n in (1, 2, 4)]


@pytest.mark.parametrize("accelerator,nodes", CASES, ids=[f"{a}-{n}node" for a, n in CASES])
def test_every_daemonset_lands_and_every_vllm_pod_fits(accelerator, nodes):
    shape = NODE_SHAPES[DEFAULT_SHAPE_FOR_ACCELERATOR[accelerator]]
    overrides = {"kimi-k3:accelerator": accelerator, "kimi-k3:nodes": str(nodes),
                 "kimi-k3:capacityReservationId": CR, "kimi-k3:apiAccessCidrs": "198.51.100.7/32"}
    try:
        run = run_program("aws-eks", overrides)
    except pulumi.RunError as e:  # the model does not fit in that many nodes: refused up front, one line
        assert str(e).startswith(f"kimi-k3:nodes={nodes} cannot hold") and "use at least" in str(e)
        # still check the placement of that layout, with weights small enough to plan
        overrides["kimi-k3:modelOverrides"] = '{"weights_bytes": 400000000000}'
        run = run_program("aws-eks", overrides)
    gpus, systems, lt = cluster_of(run, shape)
    landed = {r["chart"] for r in land_device_plugins(run, gpus, systems, lt, shape)}
    assert "nvidia-device-plugin" in landed
    assert ("aws-efa-k8s-device-plugin" in landed) == (nodes > 1)

    pods = vllm_pods(run)
    assert len(pods) == nodes  # one replica
    for name, spec in pods:
        req = pod_request(spec)
        assert req["nvidia.com/gpu"] == gpus[0].allocatable["nvidia.com/gpu"] == shape.devices, name
        if nodes > 1:
            assert req["vpc.amazonaws.com/efa"] == gpus[0].allocatable["vpc.amazonaws.com/efa"] \
                == shape.efa_network_cards, name
        else:
            assert "vpc.amazonaws.com/efa" not in req, name
        for r in req:  # every extended resource a vLLM pod asks for is advertised by a plugin
            if "/" in r:
                assert gpus[0].allocatable.get(r, 0) >= req[r], (name, r)
        # over EFA, the huge pages AWS's guide requests, within what the EFA driver pre-allocates
        assert ("hugepages-2Mi" in req) == (nodes > 1), name
        if nodes > 1:
            assert req["hugepages-2Mi"] <= gpus[0].allocatable["hugepages-2Mi"], name
    bound = place(pods, gpus)
    assert len(set(bound.values())) == nodes  # one vLLM pod per GPU node

    if nodes > 1:  # the LWS controller (a Deployment on the system nodes) fits there
        rel = next(r for r in releases(run) if r["chart"].endswith("/lws"))
        lws_defaults = addons.chart_facts("lws", rel["version"])["defaults"]
        values = coalesce(lws_defaults, rel.get("values") or {})
        controller = {"nodeSelector": values["nodeSelector"], "tolerations": values["tolerations"],
                      "containers": [{"resources": values["resources"]}]}
        place([("lws-controller", controller)], systems)


def test_two_replicas_take_two_nodes_each():
    run = run_program("aws-eks", {"kimi-k3:nodes": "2", "kimi-k3:replicas": "2",
                                  "kimi-k3:capacityReservationId": CR, "kimi-k3:apiAccessCidrs": "198.51.100.7/32"})
    shape = NODE_SHAPES["p6-b300.48xlarge"]
    gpus, systems, lt = cluster_of(run, shape)
    assert len(gpus) == 4
    land_device_plugins(run, gpus, systems, lt, shape)
    assert len(set(place(vllm_pods(run), gpus).values())) == 4


# ---------------------------------------------------------------- the model can say no

def b300_cluster():
    run = run_program("aws-eks", {"kimi-k3:nodes": "2", "kimi-k3:capacityReservationId": CR,
                                  "kimi-k3:apiAccessCidrs": "198.51.100.7/32"})
    shape = NODE_SHAPES["p6-b300.48xlarge"]
    return run, shape, *cluster_of(run, shape)


def test_without_the_gpu_present_label_the_nvidia_plugin_never_lands():
    """The bug of issue 9 item 2: chart default affinity, a node without any of its labels."""
    run, shape, gpus, _, _ = b300_cluster()
    rel = next(r for r in releases(run) if r["chart"] == "nvidia-device-plugin")
    spec = daemonset_pod_spec(rel["chart"], rel["version"], rel["values"])
    node = gpus[0]
    del node.labels[addons.NVIDIA_PRESENT_LABEL]
    assert "required node affinity" in why_not(as_daemon_pod(spec, node), node)


def test_an_efa_chart_that_does_not_list_the_instance_type_never_lands():
    """v0.5.21/v0.5.22 lacked p6-b300 in supportedInstanceLabels (chart_facts first_listed_in)."""
    run, shape, gpus, _, _ = b300_cluster()
    rel = next(r for r in releases(run) if r["chart"] == "aws-efa-k8s-device-plugin")
    old = addons.chart_facts(rel["chart"], rel["version"])["defaults"]
    old = {**old, "supportedInstanceLabels": {**old["supportedInstanceLabels"], "values": [
        t for t in old["supportedInstanceLabels"]["values"] if t != "p6-b300.48xlarge"]}}
    spec = daemonset_pod_spec(rel["chart"], rel["version"], rel["values"], defaults_override=old)
    assert "required node affinity" in why_not(as_daemon_pod(spec, gpus[0]), gpus[0])
    # ... and then a pod asking for EFA fits nowhere
    pod = vllm_pods(run)[0][1]
    gpus[0].allocatable["nvidia.com/gpu"] = 8
    assert "insufficient vpc.amazonaws.com/efa" in why_not(pod, gpus[0])


def test_without_our_toleration_the_efa_plugin_is_kept_off_the_tainted_node():
    run, shape, gpus, _, _ = b300_cluster()
    rel = next(r for r in releases(run) if r["chart"] == "aws-efa-k8s-device-plugin")
    values = {k: v for k, v in rel["values"].items() if k != "tolerations"}
    spec = daemonset_pod_spec(rel["chart"], rel["version"], values)
    assert "untolerated taint nvidia.com/gpu" in why_not(as_daemon_pod(spec, gpus[0]), gpus[0])


def test_helm_value_merging_as_the_chart_sees_it():
    defaults = addons.chart_facts("nvidia-device-plugin", addons.NVIDIA_DEVICE_PLUGIN_VERSION)["defaults"]
    ours = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "kimi-k3/gpu-node", "operator": "In", "values": ["true"]}]}]}}}
    merged = coalesce(defaults, {"affinity": ours})
    # a list is replaced, not merged: overriding the terms drops all three chart defaults
    terms = merged["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms == ours["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    # tables merge key by key, null deletes
    assert coalesce(defaults, {"affinity": None}).get("affinity") is None
    assert "affinity" in coalesce(defaults, {"nodeSelector": {"a": "b"}})
    assert coalesce({"a": {"x": 1, "y": 2}}, {"a": {"y": None, "z": 3}}) == {"a": {"x": 1, "z": 3}}
    # a pod with our own affinity and no gpu.present label would still land (the deliberate override)
    node = Node("n", {"kimi-k3/gpu-node": "true"}, [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}])
    spec = daemonset_pod_spec("nvidia-device-plugin", addons.NVIDIA_DEVICE_PLUGIN_VERSION, {"affinity": ours})
    assert why_not(as_daemon_pod(spec, node), node) is None


def test_an_unrecorded_chart_version_is_refused():
    with pytest.raises(KeyError) as e:
        addons.chart_facts("aws-efa-k8s-device-plugin", "v0.5.21")
    assert "add them before pinning it" in str(e.value)


def test_multi_node_on_an_instance_type_the_efa_chart_does_not_list_is_refused(monkeypatch):
    facts = addons.chart_facts("aws-efa-k8s-device-plugin", addons.EFA_DEVICE_PLUGIN_VERSION)
    monkeypatch.setitem(facts["defaults"]["supportedInstanceLabels"], "values", ["p5.48xlarge"])
    with pytest.raises(pulumi.RunError) as e:
        run_program("aws-eks", {"kimi-k3:nodes": "2", "kimi-k3:capacityReservationId": CR})
    # the accelerator as the user wrote it (the default, b300), then its instance type (3392f0e)
    assert ("kimi-k3:accelerator='b300' (instance type p6-b300.48xlarge) is not in the pinned EFA device "
            "plugin") in str(e.value)


# ---------------------------------------------------------------- the facts, re-read at the source

# The upstream files themselves are recorded in tests/contracts/upstream (tools/record_upstream.py)


def _git_show(repo: str, rev: str, path: str) -> str:
    return upstream.read(repo, rev, path)


def test_nvidia_chart_facts_match_upstream():
    f = addons.chart_facts("nvidia-device-plugin", addons.NVIDIA_DEVICE_PLUGIN_VERSION)
    src = f["source"]
    assert src["repository"] == "NVIDIA/k8s-device-plugin"
    values = yaml.safe_load(_git_show(src["repository"], src["commit"], src["values"]))
    for key in ("nodeSelector", "affinity", "tolerations", "priorityClassName"):
        assert values[key] == f["defaults"][key], key
    assert values["devicePlugin"]["enabled"] is True and values["gfd"]["enabled"] is False
    chart = yaml.safe_load(_git_show(src["repository"], src["commit"],
                                     "deployments/helm/nvidia-device-plugin/Chart.yaml"))
    assert chart["version"] == addons.NVIDIA_DEVICE_PLUGIN_VERSION
    tpl = _git_show(src["repository"], src["commit"], src["template"])
    for key in ("nodeSelector", "affinity", "tolerations"):
        assert f"{{{{- with .Values.{key} }}}}\n      {key}:" in tpl, key
    assert "{{- if .Values.devicePlugin.enabled }}" in tpl


def test_efa_chart_facts_match_upstream():
    f = addons.chart_facts("aws-efa-k8s-device-plugin", addons.EFA_DEVICE_PLUGIN_VERSION)
    src = f["source"]
    assert src["repository"] == "aws/eks-charts"
    values = yaml.safe_load(_git_show(src["repository"], src["commit"], src["values"]))
    assert values["nodeSelector"] == f["defaults"]["nodeSelector"]
    assert values["tolerations"] == f["defaults"]["tolerations"]
    labels = values["supportedInstanceLabels"]
    assert labels["keys"] == f["defaults"]["supportedInstanceLabels"]["keys"]
    offered = {NODE_SHAPES[s].key for a, s in DEFAULT_SHAPE_FOR_ACCELERATOR.items() if a in TARGET_ACCELERATORS["aws-eks"]}
    assert offered <= set(labels["values"])
    assert set(f["defaults"]["supportedInstanceLabels"]["values"]) == offered
    chart = yaml.safe_load(_git_show(src["repository"], src["commit"], src["chart"]))
    assert chart["version"] == addons.EFA_DEVICE_PLUGIN_VERSION
    tpl = _git_show(src["repository"], src["commit"], src["template"])
    assert "- key: CriticalAddonsOnly\n          operator: Exists\n        {{- with .Values.tolerations }}" in tpl
    assert "{{- range .Values.supportedInstanceLabels.keys }}" in tpl
    assert "key: eks.amazonaws.com/compute-type\n                  operator: NotIn" in tpl
    assert ".Values.affinity" not in tpl


def test_efa_first_listed_versions_match_upstream():
    facts = addons.chart_facts("aws-efa-k8s-device-plugin", addons.EFA_DEVICE_PLUGIN_VERSION)
    history = upstream.efa_history()
    assert sorted(history["types"]) == sorted(facts["first_listed_in"])
    # the history ends at the pinned commit, whose list is the one recorded in values.yaml
    assert history["commits"][-1]["commit"] == facts["source"]["commit"]
    assert history["commits"][-1]["version"] == addons.EFA_DEVICE_PLUGIN_VERSION
    first = {}
    for c in history["commits"]:
        for t in c["listed"]:
            first.setdefault(t, c["version"])
    for t, v in facts["first_listed_in"].items():
        assert first[t] == v, t
