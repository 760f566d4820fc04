"""`ClusterCheck`: as soon as the cluster is reachable, does the master carry what the bootstrap
needs, and are the nodes called what the API says? (dynamic resource, module ctyun)

Why: E-HPC's API creates the `SCHEDULER` cluster type; whether it is the console edition the
seed (`000_22ac33c13a335847`) uses, "大模型精简版" (large-model lite: Slurm, Apptainer, the
galaxy `launcher`, `cthpc`, `cthpc_model_bcast` and its environment modules), no API field says.
Finding out an hour later, half-way through the bootstrap, wastes the hour; so one look at the
master, right after the host key is pinned, names everything missing in one error, each with the
console edition to choose or the config key that avoids the need. What has a fallback
(cthpc -> ModelScope / the ZOS download, cthpc_model_bcast -> copies) is not an error; it is
reported in the output `fallbacks`, and the steps say so again when they fall back.

Node names: Slurm's NodeName is "typically what /bin/hostname -s returns" (slurm.conf(5), 22.05)
and the seed tells the operator to read the master's host name ("master0001为管控节点hostname，
按实际修改"); the API's `nodeName` is only assumed to be the same. Each API node is found in Slurm
by its address (`scontrol show node -o`: NodeAddr, resolved when it is a name); a node whose
Slurm name differs from the API's, or that Slurm does not know, is an error naming both. The
outputs `masterName` and `nodeNames` are the names as the nodes carry them, for every later step.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import pulumi
import pulumi.dynamic

from ..dynamic.provider import redacted_logger
from ..inference.quoting import shell_word
from .ssh_resource import SECRET_OUTPUTS, SSH_INPUTS, SshStepProvider

log = redacted_logger("kimi_k3.ctyun.check")

SLURM_TOOLS = ("sinfo", "sbatch", "srun", "scontrol", "squeue", "scancel")
TOOLS = SLURM_TOOLS + ("apptainer", "launcher", "cthpc", "cthpc_model_bcast", "modelscope",
                       "python3", "wget", "tar")
EDITION = "大模型精简版 (large-model lite)"


class ClusterCheckFailed(RuntimeError):
    """The master lacks what the bootstrap needs, or a node is not called what the API says."""


@dataclass(frozen=True)
class MasterReport:
    """What the master showed: tools found (name -> path), module init, launcher config, Python
    3.8+, its host name and addresses, and Slurm's nodes (name, address, host name, resolved)."""

    hostname: str = ""
    addresses: Tuple[str, ...] = ()
    tools: Mapping[str, str] = field(default_factory=dict)
    modules: bool = False
    launcher_conf: bool = False
    python38: bool = False
    #: the router's python (`routerPython`) is new enough for one of vllm-router's pinned
    #: closures (3.8 or later: components/router/wheels.py lowest_python)
    router_python: bool = False
    slurm_nodes: Tuple[Tuple[str, str, str, str], ...] = ()


def report_command(launcher_conf: str, router_python: str = "") -> str:
    """One remote command printing the report, a fact per line (`router_python`: the python
    the router will be installed with, when the stack runs one)."""
    tools = " ".join(TOOLS)
    router = ""
    if router_python:
        from ..router.wheels import lowest_python

        py = shell_word(router_python)
        router = (f"if {py} -c 'import sys; sys.exit(sys.version_info < {lowest_python()})' "
                  "2>/dev/null; then echo 'PYROUTER yes'; else echo 'PYROUTER no'; fi\n")
    return router + (
        "echo \"HOSTNAME $(hostname -s)\"\n"
        "echo \"ADDRESSES $(hostname -I 2>/dev/null || true)\"\n"
        # cthpc_model_bcast may come from the seed's environment modules: load them first
        "if [ -r /etc/profile.d/modules.sh ]; then echo 'MODULES yes'; set +u; "
        ". /etc/profile.d/modules.sh; module load mpich/3.2.1/gcc-10.3.1 "
        "cthpc_910b/2.0.0/mpich-3.2.1 >/dev/null 2>&1 || true; set -u; else echo 'MODULES no'; fi\n"
        f"for t in {tools}; do echo \"TOOL $t $(command -v \"$t\" || echo -)\"; done\n"
        f"if [ -f {shell_word(launcher_conf)} ]; then echo 'LAUNCHERCONF yes'; "
        "else echo 'LAUNCHERCONF no'; fi\n"
        "if python3 -c 'import sys; sys.exit(sys.version_info < (3, 8))' 2>/dev/null; then "
        "echo 'PY38 yes'; else echo 'PY38 no'; fi\n"
        "if command -v scontrol >/dev/null; then scontrol show node -o 2>/dev/null | "
        "while read -r line; do n=$(printf '%s\\n' \"$line\" | tr ' ' '\\n' | "
        "awk -F= '$1 == \"NodeName\" {print $2}'); a=$(printf '%s\\n' \"$line\" | tr ' ' '\\n' | "
        "awk -F= '$1 == \"NodeAddr\" {print $2}'); h=$(printf '%s\\n' \"$line\" | tr ' ' '\\n' | "
        "awk -F= '$1 == \"NodeHostName\" {print $2}'); r=$(getent ahostsv4 \"$a\" 2>/dev/null | "
        "awk 'NR == 1 {print $1}'); echo \"NODE $n ${a:--} ${h:--} ${r:--}\"; done; fi")


def parse_report(text: str) -> MasterReport:
    tools: Dict[str, str] = {}
    nodes: List[Tuple[str, str, str, str]] = []
    facts: Dict[str, str] = {}
    addresses: Tuple[str, ...] = ()
    for line in text.splitlines():
        word, _, rest = line.strip().partition(" ")
        if word == "TOOL":
            name, _, path = rest.partition(" ")
            if path and path != "-":
                tools[name] = path
        elif word == "NODE":
            parts = rest.split()
            if len(parts) == 4:
                nodes.append((parts[0], parts[1], parts[2], parts[3]))
        elif word == "ADDRESSES":
            addresses = tuple(rest.split())
        elif word:
            facts[word] = rest.strip()
    return MasterReport(facts.get("HOSTNAME", ""), addresses, tools,
                        facts.get("MODULES") == "yes", facts.get("LAUNCHERCONF") == "yes",
                        facts.get("PY38") == "yes", facts.get("PYROUTER") == "yes", tuple(nodes))


def problems(r: MasterReport, p: Mapping[str, Any]) -> Tuple[List[str], List[str]]:
    """(what is missing with no way around it, each with its fix; the fallbacks that will be
    taken). `p`: masterInCompute, modelSource, sifSource, bcastMethod, launcherConf."""
    hard = _edition(r, p) + _fetch(r, p)
    if p.get("routerPython") and not r.router_python:
        from ..router.wheels import lowest_python

        hard.append("Python {}.{} or later as {} (vllm-router's pinned dependencies, for "
                    "kimi-k3:replicas > 1): install it there, name another with "
                    "kimi-k3:routerPython, or serve one replica (kimi-k3:replicas=1)"
                    .format(*lowest_python(), p["routerPython"]))
    soft: List[str] = []
    if not r.tools.get("cthpc"):
        if p.get("modelSource") == "cthpc":
            soft.append("weights: cthpc missing, ModelScope instead (slower: the EIP's bandwidth)")
        if p.get("sifSource") == "cthpc":
            soft.append("SIF: cthpc missing, the download from the ZOS URL instead")
    if not r.tools.get("cthpc_model_bcast"):
        if p.get("bcastMethod") == "cthpc_model_bcast":
            hard.append("cthpc_model_bcast (the seed: only on some resource pools): set "
                        "kimi-k3:bcastMethod=auto or copy, or ask CTyun for it")
        else:
            soft.append("broadcast: cthpc_model_bcast missing, parallel copies from the master "
                        "instead" + ("" if r.modules else " (no /etc/profile.d/modules.sh)"))
    return hard, soft


def _edition(r: MasterReport, p: Mapping[str, Any]) -> List[str]:
    """What only the console edition (or a config key) provides: Slurm, Apptainer, launcher."""
    hard: List[str] = []
    slurm = [t for t in SLURM_TOOLS if not r.tools.get(t)]
    if slurm:
        hard.append(f"Slurm's commands ({', '.join(slurm)}): the cluster must be E-HPC's Slurm "
                    f"scheduler type (the console edition {EDITION} has it)")
    if not r.tools.get("apptainer"):
        hard.append(f"apptainer, which runs the SIF image: choose the console edition {EDITION}")
    if p.get("masterInCompute") and not (r.tools.get("launcher") and r.launcher_conf):
        what = "launcher (puts the master into the queue)" if not r.tools.get("launcher") else \
            f"the launcher's config {p.get('launcherConf')}"
        hard.append(f"{what}: choose the console edition {EDITION}, or set "
                    "ctyun:masterInCompute=false (one more compute node)")
    if not r.tools.get("tar"):
        hard.append("tar (copies the image and the weights to the nodes): install tar")
    return hard


def _fetch(r: MasterReport, p: Mapping[str, Any]) -> List[str]:
    """What the fallbacks need when cthpc is not there (or not chosen)."""
    hard: List[str] = []
    no_cthpc = not r.tools.get("cthpc")
    if (p.get("modelSource") == "modelscope" or no_cthpc) and \
            not (r.python38 or r.tools.get("modelscope")):
        hard.append("Python 3.8 or later (for the ModelScope CLI, the weights' source without "
                    f"cthpc): install python3 on the master, or choose {EDITION} (has cthpc)")
    if (p.get("sifSource") == "url" or no_cthpc) and not r.tools.get("wget"):
        hard.append(f"wget (downloads the SIF image without cthpc): install wget, or choose "
                    f"{EDITION} (has cthpc)")
    return hard


def slurm_name_at(r: MasterReport, address: str) -> Optional[str]:
    """The Slurm node whose NodeAddr is `address`, or resolves to it."""
    for name, addr, _host, resolved in r.slurm_nodes:
        if address and address in (addr, resolved):
            return name
    return None


def check_names(r: MasterReport, nodes: Sequence[Mapping[str, Any]]) -> Tuple[str, List[str],
                                                                              List[str]]:
    """(the master's name, the compute nodes' names, mismatches) with the names read from the
    nodes: Slurm's node at each API address; the master, before it is a Slurm node, by its host
    name when the SSH host holds the master's address."""
    master, compute, bad = "", [], []
    for n in nodes:
        api, addr = str(n.get("name") or ""), str(n.get("inner_ip") or n.get("innerIP") or "")
        found = slurm_name_at(r, addr)
        if n.get("role") == "master" and found is None and addr in r.addresses:
            found = r.hostname  # not a Slurm node yet: the seed reads its host name
        if found is None:
            bad.append(f"{n.get('role') or 'node'} {api!r} ({addr}) from the API: no Slurm node "
                       "has that address" + ("" if n.get("role") != "master" else
                                             f" and the SSH host is {r.hostname!r}"))
        elif found != api:
            bad.append(f"{n.get('role') or 'node'} at {addr}: the API calls it {api!r}, the node "
                       f"is {found!r} (Slurm's NodeName / host name)")
        if n.get("role") == "master":
            master = found or api
        else:
            compute.append(found or api)
    return master, compute, bad


class ClusterCheckProvider(SshStepProvider):
    """See the module docstring. Inputs: `nodes` (the API's [{name, inner_ip, role}]),
    `masterInCompute`, `modelSource`, `sifSource`, `bcastMethod`, `launcherConf`,
    `routerPython` (the python the router is installed with; "" without a router). Outputs:
    `masterName`, `nodeNames`, `fallbacks`, `tools`."""

    STEP_INPUTS = {"nodes": [], "masterInCompute": False, "modelSource": "cthpc",
                   "sifSource": "cthpc", "bcastMethod": "auto", "routerPython": "",
                   "launcherConf": "/usr/local/galaxy/cluster/default/galaxy-launcher/etc/launcher.conf"}
    REPLACE_KEYS = ()

    def _look(self, runner, p):
        return parse_report(runner.run(report_command(p["launcherConf"], p.get("routerPython") or ""),
                                       label="what the master carries").stdout)

    def apply(self, runner, p):
        r = self._look(runner, p)
        hard, soft = problems(r, p)
        master, compute, bad = check_names(r, p.get("nodes") or [])
        if hard or bad:
            raise ClusterCheckFailed(
                f"the cluster cannot be bootstrapped as it is ({runner.target.host}): "
                + "; ".join([f"missing {h}" for h in hard] + bad))
        for line in soft:
            log.warning("cluster check: %s", line)
        return {"masterName": master, "nodeNames": compute, "fallbacks": soft,
                "tools": dict(sorted(r.tools.items()))}

    def observe(self, runner, p):
        r = self._look(runner, p)
        master, compute, _bad = check_names(r, p.get("nodes") or [])
        return {"masterName": master, "nodeNames": compute, "fallbacks": problems(r, p)[1],
                "tools": dict(sorted(r.tools.items()))}


class ClusterCheck(pulumi.dynamic.Resource, module="ctyun", name="ClusterCheck"):
    """The edition and node-name check; see the module docstring."""

    masterName: pulumi.Output[str]
    nodeNames: pulumi.Output[list]
    fallbacks: pulumi.Output[list]

    def __init__(self, resource_name: str, inputs: Dict[str, Any],
                 opts: Optional[pulumi.ResourceOptions] = None):
        keys = {**SSH_INPUTS, **ClusterCheckProvider.STEP_INPUTS}
        props = {**{k: None for k in keys}, "progressFile": None, "progressExpect": None,
                 **inputs, "masterName": None, "nodeNames": None, "fallbacks": None,
                 "tools": None}
        opts = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(
            additional_secret_outputs=SECRET_OUTPUTS))
        super().__init__(ClusterCheckProvider(), resource_name, props, opts)

