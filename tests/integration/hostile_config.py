"""The harness of the hostile-config property test (issue 10), shared with bench/hostile_config.py.

For one (stack, config key, value): run the real program under the mock engine, then either
- the value is refused: one line, naming the key the user set, never printing a secret; or
- it is accepted, and everything it reaches is run or expanded as the cluster would:
  ctyun-hcc: srun.sh (which runs node.sh as the head), node.sh as a worker, bcast.sh, check.sh,
  the printed curl line, and every command line the bootstrap/service providers would send over
  SSH (recorded from the providers themselves, wrapped exactly as SshRunner sends them), all in a
  sandbox (tests/integration/sandbox.py); aws-eks: every container's command/args/env expanded
  by a model of Kubernetes' `$(VAR)` expansion (tests/doubles/k8s_expansion.py), every `sh -c`
  script of an init container run in the sandbox, and the printed curl line;
  then: no canary (nothing ran that no script means to run: `executed` must be 0), and the value
  arrived where it goes as exactly the configured text ("inert").
`Verdict` says which happened, with the counts the figures report.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from components.ctyun_hcc.fetch_commands import SEED_SIF_URL
from components.ctyun_hcc import bootstrap, service
from components.ctyun_hcc.ssh import Result, SshCredentials, SshRunner, SshTarget
from components.ctyun_hcc.tls_step import TlsProxyProvider
from components.inference import api_guard
from components.inference.errors import KimiK3Error
from components.offline.runner import SECRET, run_program
from tests.doubles.k8s_expansion import expand
from tests.integration.sandbox import Sandbox

#: ctyun keys that reach the command lines the SSH steps send (the rest only reach scripts)
PROVIDER_KEYS = {"kimi-k3:workDir", "kimi-k3:modelRoot", "kimi-k3:sifDir", "kimi-k3:sifName",
                 "kimi-k3:sifUrl", "kimi-k3:sifSource", "kimi-k3:modelSource", "ctyun:queueName",
                 "kimi-k3:servedModelName", "kimi-k3:modelRevision", "kimi-k3:tlsCertificate"}
#: what a placeholder is on the sandbox node / in the pod (head: node0, address 10.0.0.1)
NODE = {"NODE0_ADDR": "10.0.0.1", "NODE_ADDR": "10.0.0.1", "NODE_IFNAME": "eth0"}
POD = {"NODE_ADDR": "10.9.9.9", "LWS_LEADER_ADDRESS": "10.9.9.1", "NODE_RANK": "1",
       "HF_TOKEN": "hf-secret-from-the-pod", "VLLM_API_KEY": "key-from-the-pod"}
HOSTS = ("node0", "node1", "node2", "node3")
CANARY = "kk3canary"


@dataclass
class Verdict:
    refused: bool
    message: str = ""
    executed: int = 0
    problems: List[str] = field(default_factory=list)  # broken inertness or refusal rules

    @property
    def inert(self) -> bool:
        return not self.refused and not self.problems and self.executed == 0


class RecordingRunner(SshRunner):
    """An SshRunner that records the exact remote command lines instead of sending them.

    Answers: exit 1 to the checks a provider runs with check=False (nothing is there yet, so it
    goes on to install), exit 0 with empty output otherwise."""

    def __init__(self):
        super().__init__(SshTarget("sandbox"), SshCredentials())
        self.sent: List[Tuple[str, bytes]] = []

    def connect(self):
        return self

    def run(self, cmd, check=True, timeout_s=None, stdin=None, label=None):
        data = stdin.encode() if isinstance(stdin, str) else bytes(stdin or b"")
        self.sent.append((self.wrap(cmd), data))
        return Result(0 if check else 1, "", "")


def _placeholders(text: str, values: Dict[str, str]) -> str:
    for k, v in values.items():
        text = text.replace("${" + k + "}", v)
    return text


def _refusal(key: str, value: str, secret: bool, message: str) -> List[str]:
    problems = []
    if "\n" in message.strip():
        problems.append("refusal is more than one line")
    if key not in message and key.split(":", 1)[1] not in message:
        problems.append(f"refusal does not name {key}: {message[:200]}")
    if secret and value and len(value) >= 4 and value in message:
        problems.append("refusal prints the secret value")
    return problems


def judge(sandbox: Sandbox, stack: str, key: str, value: str, extra: Dict[str, str],
          secret: bool = False, inputs_only: bool = False, seed: Optional[str] = None) -> Verdict:
    """`inputs_only`: the key only reaches resource inputs (an SSH host, a login user): it must
    arrive there as one whole value and appear in no script or manifest; nothing is run."""
    config = {**extra, key: value}
    try:
        run = run_program(stack, config)
    except KimiK3Error as e:
        return Verdict(True, str(e), problems=_refusal(key, value, secret, str(e)))
    except Exception as e:  # pulumi.RunError carries the ConfigError's one line
        if type(e).__name__ != "RunError":
            raise
        return Verdict(True, str(e), problems=_refusal(key, value, secret, str(e)))
    verdict = Verdict(False)
    if secret:  # a secret reaches nothing at all: checked everywhere, nothing to run
        _check_secret(run, value, verdict)
        return verdict
    if inputs_only:
        _check_inputs_only(run, key, value, verdict, {**extra, key: seed} if seed else extra)
    elif stack == "ctyun-hcc":
        _ctyun(sandbox, run, key, value, verdict)
    else:
        _aws(sandbox, run, key, value, verdict, {**extra, key: seed} if seed else None)
    return verdict


def _check_secret(run, value: str, v: Verdict) -> None:
    blob = json.dumps([run.resources, run.outputs, run.warnings, dict(run.inference.artifacts)],
                      default=str)
    if len(value) >= 4 and value in blob and value != SECRET:
        v.problems.append("a secret value reached a file, a resource input or an output")


def _check_inputs_only(run, key: str, value: str, v: Verdict, base_config) -> None:
    values = set()

    def walk(x):
        if isinstance(x, dict):
            for val in x.values():
                walk(val)
        elif isinstance(x, list):
            for val in x:
                walk(val)
        elif isinstance(x, str):
            values.add(x)

    walk([r["inputs"] for r in run.resources])
    value = value.strip()  # surrounding whitespace is dropped when keys are read (documented)
    if not value:
        return  # blank is the same as unset
    if key == "kimi-k3:sshBastion":  # normalised to user@host:port when read
        from components.config.values import bastion as parse_bastion
        value = parse_bastion(key, value)
    if key.startswith("kimi-k3:ssh") and key != "kimi-k3:sshHostKey" and not any(
            value == x or value in x.split("@")[:1] + x.rsplit(":", 1)[:1] for x in values):
        v.problems.append(f"{key} reached no resource input as a whole value")
    base = _baseline(run.stack, base_config)
    for name, text in run.inference.artifacts.items():
        if value and text.count(value) > base.get(name, "").count(value):
            v.problems.append(f"{key} reached {name}")


_BASELINES: Dict[Tuple, Dict[str, str]] = {}


def _baseline(stack: str, config: Dict[str, str]) -> Dict[str, str]:
    """The stack's files with the same config and a known-good value for the key, to tell a
    value's own text from words that are there anyway ('root' in "run as root")."""
    k = (stack, tuple(sorted(config.items())))
    if k not in _BASELINES:
        _BASELINES[k] = dict(run_program(stack, config).inference.artifacts)
    return _BASELINES[k]


# ---- ctyun-hcc -----------------------------------------------------------------------------------
def _resource(run, name):
    return next((r["inputs"] for r in run.resources if r["name"] == name), None)


def _provider_commands(run) -> List[Tuple[str, bytes]]:
    """The remote command lines of the SSH steps, from the providers, with the program's inputs."""
    rec = RecordingRunner()
    steps = [("kimi-k3-master-in-queue", bootstrap.MasterInQueueProvider()),
             ("kimi-k3-nvme", bootstrap.NvmeMountProvider()),
             ("kimi-k3-weights", bootstrap.ModelWeightsProvider()),
             ("kimi-k3-sif", bootstrap.SifImageProvider()),
             ("kimi-k3-bcast", bootstrap.BroadcastProvider()),
             ("kimi-k3-service", service.SlurmServiceProvider()),
             ("kimi-k3-tls", TlsProxyProvider())]
    for name, prov in steps:
        props = _resource(run, name)
        if props is None:
            continue
        p = prov.inputs({k: (None if v == SECRET else v) for k, v in props.items()})
        try:
            prov.apply(rec, p)
        except Exception:  # noqa: BLE001 the recorded answers are not a cluster's; the lines are
            pass
    return rec.sent


def _router_files(run):
    """(router directory, {path: text}) the RouterService step writes on the master, or None
    with one replica (components/ctyun_hcc/router_service.py files_of, the step's own)."""
    from components.ctyun_hcc.router_service import RouterServiceProvider, files_of

    props = _resource(run, "kimi-k3-router")
    if props is None:
        return None
    p = RouterServiceProvider().inputs({k: (None if v == SECRET else v) for k, v in props.items()})
    d = p["routerDir"]
    return d, {f"{d}/{name}": text for name, text in files_of(p).items()}, p


def _check_router(out, router, first: int, v: Verdict) -> None:
    """install.sh and service.sh start ran to their end; with an interpreter that answers
    (the sandbox's python3) pip got the pinned, hash-checked install; each supervisor loop got
    its service's argv with the interpreter as one argument."""
    d, _, p = router
    install, start = out.results[first], out.results[first + 1]
    python = p["python"]
    if python == "/sb/bin/python3":
        if install[0] != 0:
            v.problems.append(f"the router's install.sh failed in the sandbox: {install[2][-300:]}")
        pips = [a for a in out.called("python3") if a[:3] == ("-m", "pip", "install")]
        if len(pips) != 1 or "--require-hashes" not in pips[0] or pips[0][-1] != "requirements.txt":
            v.problems.append(f"the router's pip install differs: {pips!r}")
    if start[0] != 0:
        v.problems.append(f"the router's service.sh start failed in the sandbox: {start[2][-300:]}")
    # started in the background (`&`): a loop may record after the sandbox is read, so each
    # one recorded is checked, not their number
    loops = [a for a in out.called("setsid") if a[:2] == ("nohup", f"{d}/supervise.sh")]
    if any(a[2] not in ("router", "front") or a[a.index("--") + 1] != python for a in loops):
        v.problems.append(f"the router's supervisor loops got {loops!r}")


def _ctyun(sandbox: Sandbox, run, key: str, value: str, v: Verdict) -> None:
    spec = run.inference.spec
    svc = _resource(run, "kimi-k3-service")
    wd = svc["workDir"]
    files = {f"{wd}/{name}": text for name, text in run.inference.artifacts.items()}
    for name in spec.secret_env:
        files[f"{wd}/secrets/{name}"] = "sandbox-secret"
    env = ["env", "SLURM_JOB_NODELIST=node[0-3]", "SLURM_JOB_ID=42", "SLURM_SUBMIT_HOST=node0"]
    worker_env = env + ["SLURMD_NODENAME=node1", "NODE0_ADDR=10.0.0.1",
                        "NODE_ORDER=" + " ".join(HOSTS)]
    commands = [env + ["bash", f"{wd}/srun.sh"],
                env + ["bash", f"{wd}/check.sh", f"http://10.0.0.1:{spec.port}", "all"],
                env + ["bash", f"{wd}/bcast.sh"],
                ["bash", "-c", run.outputs["curl"]]]
    if spec.worker is not None:
        commands.insert(1, worker_env + ["bash", f"{wd}/node.sh"])
    router = _router_files(run)  # several replicas: the router's install and start (master)
    if router:
        files.update(router[1])
        commands += [["bash", f"{router[0]}/install.sh"], ["bash", f"{router[0]}/service.sh", "start"]]
    sent = _provider_commands(run) if key in PROVIDER_KEYS else []
    stdin = [b""] * len(commands) + [data for _, data in sent]
    commands += [["sh", "-c", line] for line, _ in sent]
    out = sandbox.run(commands, files, stdin=stdin, hosts=HOSTS,
                      model_json=json.dumps(spec.served_model_name))
    v.executed = out.executed
    srun, check = out.results[0], out.results[2 if spec.worker is not None else 1]
    if srun[0] != 0:
        v.problems.append(f"srun.sh failed in the sandbox: {srun[2][-300:]}")
    if check[0] != 0:
        v.problems.append(f"check.sh failed in the sandbox: {check[2][-300:]}")
    # node.sh: vLLM gets exactly the spec's argv (head, then worker 1)
    execs = [a[2:] for a in out.called("apptainer") if a[:1] == ("exec",)]
    # with a key the head runs through the API-key guard's PYTHONPATH wrapper (api_guard.py)
    wrap = api_guard.PREPEND_COMMAND if spec.api_guard else ()
    want = [wrap + tuple(_placeholders(x, {**NODE, "NODE_RANK": "0"}) for x in spec.head.argv)]
    if spec.worker is not None:
        want.append(tuple(_placeholders(x, {**NODE, "NODE_RANK": "1"})
                          for x in spec.worker.for_rank(1).argv))
    if execs[:len(want)] != want:
        v.problems.append(f"vLLM argv differs from the spec: {execs[:1]!r}")
    starts = [a for a in out.called("apptainer") if a[:2] == ("instance", "start")]
    model_dir = svc.get("nodeSh", "") and _resource(run, "kimi-k3-weights")
    if model_dir and starts and f"{model_dir['modelRoot'].rstrip('/')}/{model_dir['modelName']}:" \
            f"{spec.model_path}" not in starts[0]:
        v.problems.append(f"the weights bind mount differs: {starts[0]!r}")
    # JSON bodies: check.sh's and the printed curl line's, parsed back
    for args in out.called("curl"):
        if "-d" in args:
            body = json.loads(args[args.index("-d") + 1])
            if body.get("model") != spec.served_model_name:
                v.problems.append(f"a request body carries model {body.get('model')!r}")
    # values given to the site tools arrive as single, unchanged arguments
    sif = _resource(run, "kimi-k3-sif")
    weights = _resource(run, "kimi-k3-weights")
    for args in out.called("cthpc"):
        if args[:2] == ("model", "install") and args[2:] != (
                weights["modelName"], "--dir", weights["modelRoot"] + "/"):
            v.problems.append(f"cthpc model install got {args!r}")
        if args[:2] == ("apptainer", "install") and args[2:] != (
                sif["name"], "--dir", sif["sifDir"] + "/"):
            v.problems.append(f"cthpc apptainer install got {args!r}")
    for args in out.called("wget"):  # the configured URL, else the seed's (the default)
        if args[-1] != (sif["url"] or SEED_SIF_URL):
            v.problems.append(f"wget got {args[-1]!r}, not the configured URL")
    if router:
        _check_router(out, router, len(commands) - len(sent) - 2, v)
    bcasts = out.called("cthpc_model_bcast")
    if {a[1] for a in bcasts} != {sif["sifDir"], f"{weights['modelRoot']}/{weights['modelName']}"}:
        v.problems.append(f"bcast paths differ: {bcasts!r}")


# ---- aws-eks -------------------------------------------------------------------------------------
def _pod_specs(obj) -> List[dict]:
    """Every pod spec in an object (Deployment, LWS leader/worker templates, Job)."""
    found = []

    def walk(x):
        if isinstance(x, dict):
            if isinstance(x.get("containers"), list):
                found.append(x)
            for val in x.values():
                walk(val)
        elif isinstance(x, list):
            for val in x:
                walk(val)

    walk(obj)
    return found


def _containers(obj) -> List[dict]:
    return [c for ps in _pod_specs(obj) for c in (ps.get("initContainers") or []) + ps["containers"]]


def _config_maps(run, objs) -> Dict[str, Dict[str, str]]:
    """ConfigMap name -> data, from the manifests and from what the program creates."""
    maps = {o["metadata"]["name"]: dict(o.get("data") or {}) for o in objs
            if o.get("kind") == "ConfigMap"}
    for r in run.resources:
        if r["type"] == "kubernetes:core/v1:ConfigMap":
            meta = r["inputs"].get("metadata") or {}
            maps.setdefault(meta.get("name") or r["name"], dict(r["inputs"].get("data") or {}))
    return maps


def _pod_env(container, maps) -> Dict[str, str]:
    """The container's environment as the kubelet builds it, in order (a value may refer to
    earlier entries); secrets and the downward API get stand-in values."""
    env = dict(POD)
    for e in container.get("env") or []:
        if "value" in e:
            env[e["name"]] = expand(e["value"], env)
        else:
            ref = e.get("valueFrom") or {}
            cm = ref.get("configMapKeyRef")
            if cm:
                env[e["name"]] = maps.get(cm["name"], {}).get(cm["key"], "")
            elif ref.get("secretKeyRef"):
                env[e["name"]] = POD.get(e["name"], "sandbox-secret")
            else:
                env[e["name"]] = POD.get(e["name"], "10.9.9.9")
    return env


def _mounted_files(pod_spec, container, maps) -> Dict[str, str]:
    vols = {v["name"]: v["configMap"]["name"] for v in pod_spec.get("volumes") or []
            if "configMap" in v}
    files = {}
    for m in container.get("volumeMounts") or []:
        for key, text in maps.get(vols.get(m["name"], ""), {}).items():
            files[f"{m['mountPath'].rstrip('/')}/{key}"] = text
    return files


def _mounted_scripts(run) -> Dict[str, str]:
    import yaml

    objs = [yaml.safe_load(text) for text in run.inference.artifacts.values()]
    maps = _config_maps(run, objs)
    return {path: text for o in objs for ps in _pod_specs(o)
            for c in (ps.get("initContainers") or []) + ps["containers"]
            for path, text in _mounted_files(ps, c, maps).items()}


def _aws(sandbox: Sandbox, run, key: str, value: str, v: Verdict,
         base_config: Optional[Dict[str, str]] = None) -> None:
    import yaml

    from components.aws_eks.efa.render import SCRIPTS_MOUNT as EFA_SCRIPTS_MOUNT

    spec = run.inference.spec
    objs = [(rel, yaml.safe_load(text)) for rel, text in run.inference.artifacts.items()]
    maps = _config_maps(run, [o for _, o in objs])
    base_scripts = None
    if base_config is not None:
        k = ("scripts", run.stack, tuple(sorted(base_config.items())))
        if k not in _BASELINES:
            _BASELINES[k] = _mounted_scripts(run_program(run.stack, base_config))
        base_scripts = _BASELINES[k]
    commands: List[List[str]] = []
    files: Dict[str, str] = {}
    head = {**NODE, "NODE_ADDR": POD["NODE_ADDR"], "NODE_IFNAME": "eth0"}
    for rel, obj in objs:
        for ps in _pod_specs(obj):
            for c in (ps.get("initContainers") or []) + ps["containers"]:
                env = _pod_env(c, maps)
                argv = [expand(a, env) for a in (c.get("command") or []) + (c.get("args") or [])]
                if c.get("name") == "vllm":
                    # several nodes on EFA: efa_check.sh (a ConfigMap script, checked below) execs
                    # the rest of the argv (components/aws_eks/efa/render.py `command`)
                    efa_check = ["bash", f"{EFA_SCRIPTS_MOUNT}/efa_check.sh"]
                    if argv[:2] == efa_check:
                        argv = argv[2:]
                    single = spec.nodes == 1
                    subst = {**head, "NODE0_ADDR": "127.0.0.1" if single else POD["LWS_LEADER_ADDRESS"]}
                    roles = [(spec.head, "0")] + ([(spec.worker, POD["NODE_RANK"])] if spec.worker else [])
                    candidates = [tuple(_placeholders(x, {**subst, "NODE_RANK": r}) for x in role.argv)
                                  for role, r in roles]
                    if tuple(argv) not in candidates:
                        v.problems.append(f"{rel}: vLLM argv after Kubernetes expansion differs: "
                                          f"{argv[:8]!r}")
                    for e in c.get("env") or []:
                        want = dict(spec.head.env).get(e["name"])
                        if want is not None and "${" not in want and env[e["name"]] != want:
                            v.problems.append(f"{rel}: env {e['name']} expands to {env[e['name']]!r}")
                elif argv[:2] in (["sh", "-c"], ["bash", "-c"]):
                    # an inline script: the kubelet runs it with this environment
                    commands.append(["env", "-i", "PATH=/sb/bin", "HOME=/tmp"]
                                    + [f"{k}={val}" for k, val in env.items()] + argv)
                    files.update(_mounted_files(ps, c, maps))
                elif argv and argv[0] in ("sh", "bash"):
                    # a mounted script (weights' stage.sh...): values reach it only through its
                    # environment: the script is the same text whatever the value
                    for path, text in _mounted_files(ps, c, maps).items():
                        if base_scripts is not None and base_scripts.get(path, text) != text:
                            v.problems.append(f"{rel}: {key} changes the mounted script {path}")
                    for e in c.get("env") or []:
                        if key == "kimi-k3:weightsS3Uri" and e["name"] == "KK3_S3_URI" \
                                and env[e["name"]].rstrip("/") != value.strip().rstrip("/"):
                            v.problems.append(f"{rel}: KK3_S3_URI is {env[e['name']]!r}")
        if obj.get("kind") == "InferenceEndpointConfig":
            w = obj["spec"]["worker"]
            args = [expand(a, dict(POD)) for a in w["args"]]
            if tuple(args) != tuple(_placeholders(x, {**NODE, "NODE0_ADDR": "127.0.0.1",
                                                      "NODE_RANK": "0"})
                                    for x in spec.head.argv[2:]):
                v.problems.append(f"{rel}: HyperPod args differ: {args[:6]!r}")
            if obj["spec"]["modelName"] != spec.served_model_name:
                v.problems.append(f"{rel}: modelName differs")
    curl = run.outputs.get("curl") or ""
    if curl.startswith(("curl", "kubectl")):
        commands.append(["bash", "-c", curl])
    if not commands:
        return
    out = sandbox.run(commands, files, model_json=json.dumps(spec.served_model_name))
    v.executed = out.executed
    for args in out.called("curl"):
        if "-d" in args:
            body = json.loads(args[args.index("-d") + 1])
            if body.get("model") != spec.served_model_name:
                v.problems.append(f"the curl body carries model {body.get('model')!r}")
    if key == "kimi-k3:weightsS3Uri":
        uri = value.strip().rstrip("/")
        for args in out.called("aws"):
            for a in args:
                if a.startswith("s3://") and not (a == uri or a.startswith(uri + "/")):
                    v.problems.append(f"aws got {a!r}, not under the configured URI")


# ---- hostile values ------------------------------------------------------------------------------
#: what every hostile value tries: run the canary command, or expand a secret
PAYLOADS = (f"$({CANARY})", f"`{CANARY}`", f";{CANARY}", f"|{CANARY}", f"&{CANARY}&",
            f"&&{CANARY}", f"||{CANARY}", f"\n{CANARY}\n", f"'$({CANARY})'", f'"$({CANARY})"',
            f"$({CANARY}${{IFS}}x)", f"';{CANARY};'", f'";{CANARY};"', f"\\\n{CANARY}",
            f"$(touch${{IFS}}/tmp/x;{CANARY})", "$(HF_TOKEN)", "$(VLLM_API_KEY)", "$(NODE_ADDR)",
            "$$(HF_TOKEN)", "${HOME}", "$HOME", "$((6*7))", "*", "?", "[a]", "~", "#", "-rf", "--x",
            " ", "\t", "\r", "'", '"', "\\", "%", "../..", "//", "/.", "\u00b2", "\u202e", "\x7f",
            "\x1b[31m", ",", "=", ":", "@", "{a,b}", "!!")
