"""What vLLM receives inside each rendered pod, resolved the way the cluster resolves it.

A pod's command/args/env are not what runs: the kubelet builds the environment (k8s.io/kubernetes
pkg/kubelet/kubelet_pods.go makeEnvironmentVariables: `env` in order, each value `$(VAR)`-expanded
against the entries before it, `valueFrom` read from the pod's fields or a ConfigMap) and then
expands `command`/`args` against all of it (tests/doubles/k8s_expansion.py, from the kubelet's
expansion.go). On a LeaderWorkerSet the LWS webhook first puts LWS_LEADER_ADDRESS,
LWS_GROUP_SIZE and LWS_WORKER_INDEX at the front of every container's env
(kubernetes-sigs/lws pkg/utils/pod/pod_utils.go AddLWSVariables, addEnvVarsIfNotExists), the
leader address being `<lws>-<group>.<subdomain>.<namespace>`.

Every launch placeholder (components/inference/launch.py PLACEHOLDERS) must arrive as what it
documents: NODE0_ADDR the head's address (127.0.0.1 on one node), NODE_ADDR the pod's own IP,
NODE_IFNAME the pod's interface, NODE_RANK the node's index (0 on one node), MODEL_URI the bucket
URI the stack's ConfigMap holds.
"""

from __future__ import annotations

import dataclasses
import json
import re

import pytest
import yaml

from components.aws_eks import config as c, layout as lay
from components.aws_eks.weights import render as wr
from components.aws_eks.weights.plan import plan_request
from components.inference import render_k8s as rk
from components.inference.launch import launch
from components.inference.planner import plan
from components.config.shared import parse_settings
from tests.doubles.k8s_expansion import expand

POD_IP = "10.1.2.3"
LEADER = "kimi-k3-0.kimi-k3.kimi-k3"
S3_URI = "s3://kk3-mirror-7f3a/models/moonshotai/Kimi-K3"
#: one env entry per placeholder, as a launch spec may carry them
PROBE = (("KK3_T_HEAD", "${NODE0_ADDR}:13389"), ("KK3_T_SELF", "${NODE_ADDR}"),
         ("KK3_T_IF", "${NODE_IFNAME}"), ("KK3_T_RANK", "rank-${NODE_RANK}"),
         ("KK3_T_LITERAL", "$(HF_TOKEN) ${NOT_A_PLACEHOLDER}"))


def _built(**kw):
    shared = parse_settings({"target": "aws-eks", **kw}, "aws-eks")
    cfg = c.parse(shared)
    p = plan(plan_request(shared, cfg))
    return p, launch(p, lay.runtime(shared, cfg)), lay.k8s_layout(shared, cfg)


def _probed(spec):
    def role(r):
        return None if r is None else dataclasses.replace(
            r, env=tuple(r.env) + PROBE, argv=tuple(r.argv) + ("--kk3-probe=${NODE0_ADDR}/${NODE_RANK}/${MODEL_URI}",))
    return dataclasses.replace(spec, head=role(spec.head), worker=role(spec.worker))


def _resolve(container, labels=None, lws=None, configmaps=None):
    """The container's environment and argv as the kubelet starts it."""
    env = {}
    entries = list(container.get("env", []))
    if lws is not None:  # the LWS webhook's variables, first, unless the container has them
        first = [{"name": k, "value": v} for k, v in lws.items()]
        entries = first + [e for e in entries if e["name"] not in lws]
    for e in entries:
        src = e.get("valueFrom")
        if src is None:
            env[e["name"]] = expand(e.get("value", ""), env)
        elif "fieldRef" in src:
            path = src["fieldRef"]["fieldPath"]
            if path == "status.podIP":
                env[e["name"]] = POD_IP
            else:
                label = re.fullmatch(r"metadata\.labels\['(.+)'\]", path).group(1)
                assert label in (labels or {}), f"{e['name']} reads label {label} the pod does not carry"
                env[e["name"]] = labels[label]
        elif "configMapKeyRef" in src:
            ref = src["configMapKeyRef"]
            env[e["name"]] = configmaps[ref["name"]]["data"][ref["key"]]
        else:
            env[e["name"]] = "<secret>"
    argv = [expand(a, env) for a in container.get("command", []) + container.get("args", [])]
    return env, argv


def _cms(layout):
    """The stack's weights source ConfigMap (the target declares it once the bucket exists)."""
    return {wr.names(layout.name)["source"]: wr.source_configmap(layout, S3_URI, "s3://c", "us-east-2")}


def _vllm(pod):
    (ct,) = [x for x in pod["containers"] if x["name"] in ("vllm", "leader", "worker")] or pod["containers"][:1]
    return ct


def _lws_pods(objs):
    (lws,) = [o for o in objs if o["kind"] == "LeaderWorkerSet"]
    t = lws["spec"]["leaderWorkerTemplate"]
    return t["leaderTemplate"]["spec"], t["workerTemplate"]["spec"]


def _deployment_pod(objs):
    (d,) = [o for o in objs if o["kind"] == "Deployment"]
    return d["spec"]["template"]["spec"]


def _expect(env, head, rank):
    assert env["KK3_T_HEAD"] == f"{head}:13389"
    assert env["KK3_T_SELF"] == POD_IP
    assert env["KK3_T_IF"] == rk.POD_IFNAME
    assert env["KK3_T_RANK"] == f"rank-{rank}"
    assert env["KK3_T_LITERAL"] == "$(HF_TOKEN) ${NOT_A_PLACEHOLDER}"  # text, never a variable


def test_on_one_node_every_placeholder_is_the_pods_own():
    p, spec, layout = _built(streamWeights="true")
    objs = rk.render(p, _probed(spec), layout)
    env, argv = _resolve(_vllm(_deployment_pod(objs)), configmaps=_cms(layout))
    _expect(env, "127.0.0.1", 0)
    assert f"--kk3-probe=127.0.0.1/0/{S3_URI}" in argv
    assert argv[argv.index("serve") + 1] == S3_URI  # vLLM streams from the stack's bucket
    assert not any("${" in a or "$(" in a for a in argv)


@pytest.mark.parametrize("nodes,rank", [("1", "0"), ("2", "1")])
def test_the_compile_cache_is_keyed_by_the_pods_own_rank(nodes, rank):
    p, spec, layout = _built(nodes=nodes)
    assert layout.weights.compile_cache
    objs = rk.render(p, spec, layout)
    pod = _deployment_pod(objs) if nodes == "1" else _lws_pods(objs)[1]
    (restore,) = [x for x in pod["initContainers"] if x["name"] == "restore-compile-cache"]
    lws = {"LWS_LEADER_ADDRESS": LEADER, "LWS_GROUP_SIZE": nodes, "LWS_WORKER_INDEX": rank}
    labels = {rk.LWS_INDEX_LABEL: rank} if nodes != "1" else {}  # a Deployment's pod has no LWS label
    env, _ = _resolve(restore, labels=labels, lws=lws if nodes != "1" else None, configmaps=_cms(layout))
    assert env["KK3_RANK"] == rank


def test_across_nodes_the_head_is_the_leaders_address_and_the_rank_the_workers_index():
    p, spec, layout = _built(nodes="2")
    objs = rk.render(p, _probed(spec), layout)
    leader, worker = _lws_pods(objs)
    lws = {"LWS_LEADER_ADDRESS": LEADER, "LWS_GROUP_SIZE": "2", "LWS_WORKER_INDEX": "1"}
    env, argv = _resolve(_vllm(worker), labels={rk.LWS_INDEX_LABEL: "1"}, lws=lws, configmaps=_cms(layout))
    _expect(env, LEADER, 1)
    assert any(a.startswith(f"--kk3-probe={LEADER}/1/") for a in argv)
    assert LEADER in argv and "1" in argv  # the worker's own flags: the head's address, its rank
    # the real flags resolved too (the probe's MODEL_URI exists only when streaming)
    assert not any("${" in a or "$(" in a for a in argv if not a.startswith("--kk3-probe"))
    env, argv = _resolve(_vllm(leader), labels={rk.LWS_INDEX_LABEL: "0"}, lws={**lws, "LWS_WORKER_INDEX": "0"},
                         configmaps=_cms(layout))
    _expect(env, LEADER, 0)
    assert not any("${" in a or "$(" in a for a in argv if not a.startswith("--kk3-probe"))


def test_hyperpod_runs_one_node_so_the_head_is_the_pod_itself():
    p, spec, layout = _built(serving="hyperpod", hyperpodClusterName="hp", hfToken="hf_x")
    ep = rk.render_hyperpod(p, _probed(spec), layout)
    worker = ep["spec"]["worker"]
    env = {e["name"]: e.get("value") for e in worker["environmentVariables"]}
    resolved = {k: expand(v, env) for k, v in env.items() if v is not None}
    assert resolved["KK3_T_HEAD"] == "127.0.0.1:13389" and resolved["KK3_T_RANK"] == "rank-0"
    assert resolved["KK3_T_LITERAL"] == "$(HF_TOKEN) ${NOT_A_PLACEHOLDER}"
    args = [expand(a, env) for a in worker["args"]]
    assert any(a.startswith("--kk3-probe=127.0.0.1/0/") for a in args)
    # the operator's CRD: the token comes from the secret, the object name is a DNS-1123 label
    assert ep["spec"]["modelSourceConfig"]["huggingFaceModel"]["tokenSecretRef"] == {
        "name": layout.secret_name, "key": "HF_TOKEN"}
    assert ep["metadata"]["name"] == "kimik3"


def test_an_obsolete_variable_anywhere_in_the_spec_drops_only_itself():
    p, spec, layout = _built()
    (obsolete,) = rk.OBSOLETE_ENV
    head = dataclasses.replace(spec.head, env=((obsolete, "1"),) + tuple(spec.head.env) + PROBE[:1])
    objs = rk.render(p, dataclasses.replace(spec, head=head), layout)
    names = [e["name"] for e in _vllm(_deployment_pod(objs))["env"]]
    assert obsolete not in names
    assert [k for k, _ in spec.head.env if k != obsolete] + ["KK3_T_HEAD"] == [
        n for n in names if n in dict(spec.head.env) or n == "KK3_T_HEAD"]


#: the API group/version of each kind we render (Kubernetes API reference; LWS's CRD
#: config/crd/bases/leaderworkerset.x-k8s.io_leaderworkersets.yaml)
API_VERSIONS = {"Namespace": "v1", "ConfigMap": "v1", "Service": "v1", "ServiceAccount": "v1",
                "Deployment": "apps/v1", "Job": "batch/v1", "LeaderWorkerSet": "leaderworkerset.x-k8s.io/v1"}


@pytest.mark.parametrize("kw", [{}, {"nodes": "2"}, {"streamWeights": "true"}, {"apiKey": "k"}])
def test_each_manifest_file_is_the_yaml_of_its_object(kw):
    p, spec, layout = _built(**kw)
    objs = rk.render(p, spec, layout) + rk.render_weights(spec, layout) + rk.render_api_guard(spec, layout)
    assert bool(rk.render_api_guard(spec, layout)) == ("apiKey" in kw)
    for o in objs:
        assert o["apiVersion"] == API_VERSIONS[o["kind"]], o["kind"]
    files = rk.manifest_files(objs)
    assert sorted(files) == sorted(rk.object_file_name(o) for o in objs)
    for o in objs:
        assert yaml.safe_load(files[rk.object_file_name(o)]) == json.loads(json.dumps(o))


def test_inconsistent_inputs_are_refused_saying_what_is_wrong():
    """Programming errors between planner, launch and renderer fail before any object exists."""
    p1, one, layout = _built()
    p2, two, _ = _built(nodes="2")
    cases = [
        (lambda: rk.render(p2, one, layout), "plan and launch spec disagree on nodes per replica"),
        (lambda: rk.render_deployment(two, layout),
         "a Deployment runs one node per replica; use render_leader_worker_set"),
        (lambda: rk.render_leader_worker_set(one, layout), "a LeaderWorkerSet needs a multi-node spec"),
        (lambda: rk.render_hyperpod(p2, two, layout),
         "HyperPod's InferenceEndpointConfig runs one node per replica"),
        (lambda: rk.render_hyperpod(p1, dataclasses.replace(
            one, head=dataclasses.replace(one.head, argv=("python3", "-m", "vllm"))), layout),
         "the HyperPod worker runs `vllm serve`; the launch spec starts ['python3', '-m']"),
        (lambda: rk.K8sLayout(namespace="Prod_NS"), "namespace 'Prod_NS' is not a DNS label"),
        (lambda: rk.K8sLayout(name="k3."), "name 'k3.' is not a DNS label"),
        (lambda: rk.K8sLayout(replicas=0), "replicas must be at least 1"),
        (lambda: rk.WeightsStaging("ftp", repo_id="m/k"), "unknown weights source 'ftp'"),
        (lambda: rk.WeightsStaging("hub"),
         "weights staging needs repo_id (the hub fallback and the cache key use it)"),
        (lambda: rk.WeightsStaging("hub", repo_id="m/k", compile_cache=True),
         "the compile cache lives in the stack's mirror bucket"),
    ]
    for call, message in cases:
        with pytest.raises(ValueError) as e:
            call()
        assert str(e.value) == message
