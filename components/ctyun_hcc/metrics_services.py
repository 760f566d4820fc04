"""The metrics services on ctyun-hcc as steps over SSH (module ctyun): they run outside the Slurm
job, as systemd units (monitoring.py renders them), so they outlive it and come back when they die.

- `NodeExporters` (a child of the cluster, in the bootstrap chain before the service takes the
  nodes): on every serving node, one short `srun -w <node>` step installs and starts the node
  exporter and Ascend's npu-exporter, each listening on that node's cluster address only. A
  binary found on none of its paths is reported (`missing`) and the deploy goes on: metrics must
  never stop the model from serving. A changed node list (grow, shrink, replicas) installs
  only on the nodes without exporters up yet (`update`): the serving nodes are busy.
- `MasterPrometheus` (a child of K3Inference, after the service(s): it scrapes every replica's
  node 0 and every node's exporters, labelled `replica`, and the router's metrics): writes
  prometheus.yml, the alert rules and the API key (0600, sent on stdin, never in a
  command line) on the master and keeps Prometheus running on 127.0.0.1 only; reached through
  the SSH tunnel the stack prints (`metrics` output). A Prometheus that does not come up fails
  the step with its log tail; one not installed on the master is reported with the fix.

Deleting either stops and removes its services (the nodes' exporters, the master's Prometheus);
Prometheus's data directory is left in place.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, List

import pulumi
import pulumi.dynamic

from ..dynamic.provider import redacted_logger
from ..inference.quoting import shell_word
from ..observability import alerts, scrape
from . import monitoring
from .ssh_resource import SshStepProvider, step_resource

log = redacted_logger("kimi_k3.ctyun.metrics")

STATE_DIR = "/var/lib/kimi-k3/services"
CONFIG_DIR = "/etc/kimi-k3/prometheus"
DATA_DIR = "/var/lib/kimi-k3/prometheus"
UNIT_DIR = "/etc/systemd/system"
_NODE_EOF = "KK3_NODE_SCRIPT_EOF"
_MARK = "== kimi-k3 node "


def parse_report(text: str) -> Dict[str, str]:
    """The install script's lines (`up|missing|down <name> ...`) as {name: line}."""
    out: Dict[str, str] = {}
    for line in text.splitlines():
        word, _, rest = line.partition(" ")
        if word in ("up", "missing", "down") and rest:
            name, _, detail = rest.partition(" ")
            out[name] = f"{word}: {detail}".rstrip(": ")
    return out


def _wait(p) -> int:
    return max(1, min(3600, int(p.get("waitS") or 60)))


class NodeExportersProvider(SshStepProvider):
    """Inputs: `nodes` [{"name", "addr"}] (the serving nodes and their cluster addresses),
    `partition`, `stateDir`
    (the supervising loop's pid and log where systemd is not the init, per node),
    `unitDir`, `nodeExporterPaths`, `npuExporterPaths`, `restartS`, `waitS`. Outputs
    `exporters` {node: {service: "up: <binary>" | "missing: <paths>" | "down: <log>"}}."""

    PROGRESS_PHASE = "bootstrap-metrics"
    PROGRESS_WAITING = "the node and npu exporters on the serving nodes"
    STEP_INPUTS = {"nodes": [], "partition": "batch",
                   "stateDir": STATE_DIR, "unitDir": UNIT_DIR,
                   "nodeExporterPaths": list(monitoring.CANDIDATES[monitoring.NODE_EXPORTER]),
                   "npuExporterPaths": list(monitoring.CANDIDATES[monitoring.NPU_EXPORTER]),
                   "restartS": 2, "waitS": 60, "timeoutS": 900}

    def _services(self, p, addr: str) -> List[monitoring.Service]:
        return [monitoring.node_exporter_service(addr, p["nodeExporterPaths"]),
                monitoring.npu_exporter_service(addr, p["npuExporterPaths"])]

    def _state(self, p, node) -> str:
        """Per node, so that nodes sharing a file system keep apart."""
        return f"{p['stateDir'].rstrip('/')}/{monitoring.check_node_name(node['name'])}"

    def _each(self, runner, p, script_of, label: str) -> Dict[str, str]:
        """Run `script_of(node)` on every node, one `srun -w` step each (its stdin is the
        script: nothing has to be shared with the nodes), all in one SSH command. A node whose
        step fails (busy past `--immediate`, down) is reported (`srun`: "down: exit N") and the
        others still run: metrics never stop serving."""
        lines = []
        for node in p["nodes"]:
            name = monitoring.check_node_name(node["name"])
            body = script_of(node)
            if any(line == _NODE_EOF for line in body.splitlines()):
                raise ValueError(f"the script for {name} holds the line {_NODE_EOF}")
            lines.append(f"echo {shell_word(_MARK + name)}; srun -p {shell_word(p['partition'])} "
                         f"-N 1 -n 1 -w {shell_word(name)} --time=15 --immediate=120 bash -s "
                         f"2>&1 <<'{_NODE_EOF}' || echo \"down srun exit $?\"\n{body.rstrip()}\n"
                         f"{_NODE_EOF}")
        if not lines:
            return {}
        res = runner.run("\n".join(lines) + "\n", timeout_s=float(p["timeoutS"]),
                         label=f"{label} on {len(lines)} node(s)")
        out: Dict[str, str] = {}
        name = None
        for line in res.stdout.splitlines():
            if line.startswith(_MARK):
                name = line[len(_MARK):]
                out[name] = ""
            elif name is not None:
                out[name] += line + "\n"
        return out

    #: a change of any of these changes what runs on every node: all nodes again
    REDO_KEYS = ("partition", "stateDir", "unitDir", "nodeExporterPaths", "npuExporterPaths",
                 "restartS")

    def apply(self, runner, p):
        nodes = list(p["nodes"])
        for n in nodes:  # refused before anything runs: a name or address that is not one
            monitoring.check_node_name(n.get("name"))
            self._services(p, n.get("addr"))
        done = set(p.get("nodesDone") or ())
        p = {**p, "nodes": [n for n in nodes if n["name"] not in done]}
        scripts = self._each(runner, p, lambda n: monitoring.install_script(
            self._services(p, n["addr"]), state_dir=self._state(p, n), unit_dir=p["unitDir"],
            restart_s=int(p["restartS"]), wait_s=_wait(p)), "exporters")
        report = {node: parse_report(text) for node, text in scripts.items()}
        for node, services in report.items():
            for name, state in services.items():
                if not state.startswith("up"):
                    log.warning("%s on %s: %s (metrics only; serving goes on)", name, node, state)
        return {"exporters": report}

    def update(self, id_, olds, news):
        """A changed node list (a grow, a shrink, more replicas) installs on the nodes that
        have no exporters up yet, not on every node: the serving nodes are held by the
        service's `--exclusive` job, so an `srun -w` there waits its whole `--immediate` (120
        s a node, one after the other) and then reports a running exporter as down. Nodes
        whose exporters were all up, at the same address, keep their report; a change of a
        REDO_KEYS input means every node again."""
        o, n = self.inputs(olds), self.inputs(news)
        if not any(o.get(k) != n.get(k) for k in self.STEP_INPUTS) or \
                any(o.get(k) != n.get(k) for k in self.REDO_KEYS):
            return super().update(id_, olds, news)
        before = {(x.get("name"), x.get("addr")) for x in o.get("nodes") or []}
        report = olds.get("exporters") or {}
        done = {x["name"]: report[x["name"]] for x in n["nodes"] or []
                if (x.get("name"), x.get("addr")) in before and report.get(x.get("name"))
                and all(str(v).startswith("up") for v in report[x["name"]].values())}
        outs = self._apply({**n, "nodesDone": sorted(done)})
        outs = {**outs, "exporters": {**done, **outs["exporters"]}}
        return pulumi.dynamic.UpdateResult({**n, **outs})

    def remove(self, runner, p):
        try:
            self._each(runner, p, lambda n: monitoring.remove_script(
                [monitoring.NODE_EXPORTER, monitoring.NPU_EXPORTER], state_dir=self._state(p, n),
                unit_dir=p["unitDir"]), "exporters-remove")
        except Exception as e:  # noqa: BLE001 the cluster may be going away with them
            log.warning("could not remove the exporters: %s", e)

    def observe(self, runner, p):
        return {}


class MasterPrometheusProvider(SshStepProvider):
    """Inputs: `config` (prometheus.yml), `rules` (alerts.yml), `apiKey` (secret; "" = none),
    `listen` (loopback address:port), `configDir`, `dataDir`, `stateDir`, `unitDir`,
    `prometheusPaths`, `restartS`, `waitS`. Outputs `prometheus` ("up: <binary>" or
    "missing: <paths>") and `listen`."""

    PROGRESS_PHASE = "metrics"
    PROGRESS_WAITING = "Prometheus on the master"
    STEP_INPUTS = {"config": "", "rules": "", "apiKey": "", "listen": monitoring.PROMETHEUS_LISTEN,
                   "configDir": CONFIG_DIR, "dataDir": DATA_DIR, "stateDir": STATE_DIR,
                   "unitDir": UNIT_DIR,
                   "prometheusPaths": list(monitoring.CANDIDATES[monitoring.PROMETHEUS]),
                   "restartS": 5, "waitS": 60, "timeoutS": 300}
    SECRET_INPUTS = ("apiKey",)

    def apply(self, runner, p):
        conf_dir = monitoring.check_path(p["configDir"].rstrip("/"), "the config directory")
        key_file = f"{conf_dir}/key" if p.get("apiKey") else ""
        svc = monitoring.prometheus_service(f"{conf_dir}/prometheus.yml", p["dataDir"],
                                            p["listen"], p["prometheusPaths"],
                                            key_files=[key_file] if key_file else [])
        files = {f"{conf_dir}/prometheus.yml": p["config"], f"{conf_dir}/alerts.yml": p["rules"]}
        script = monitoring.install_script(
            [svc], state_dir=p["stateDir"], unit_dir=p["unitDir"], files=files,
            secret_file=key_file,
            restart_s=int(p["restartS"]), wait_s=_wait(p))
        res = runner.run(script, stdin=(p.get("apiKey") or "") + "\n",
                         timeout_s=float(p["timeoutS"]), label="Prometheus on the master")
        state = parse_report(res.stdout).get(monitoring.PROMETHEUS, "down: no report")
        if state.startswith("down"):
            raise RuntimeError(f"Prometheus on the master did not come up on {p['listen']}: "
                               f"{state[len('down: '):]}")
        if state.startswith("missing"):
            log.warning("Prometheus is not installed on the master (looked for %s): install it "
                        "(e.g. apt-get install prometheus, or the release archive from "
                        "https://github.com/prometheus/prometheus/releases, into /usr/local/bin) "
                        "and run pulumi up again", state[len("missing: "):])
        return {"prometheus": state, "listen": p["listen"]}

    def remove(self, runner, p):
        try:
            runner.run(monitoring.remove_script([monitoring.PROMETHEUS], state_dir=p["stateDir"],
                                                unit_dir=p["unitDir"]), label="remove Prometheus")
        except Exception as e:  # noqa: BLE001 the cluster may be going away with it
            log.warning("could not remove Prometheus from the master: %s", e)

    def observe(self, runner, p):
        return {}




NodeExporters = step_resource(NodeExportersProvider, "NodeExporters", ["exporters"])
MasterPrometheus = step_resource(MasterPrometheusProvider, "MasterPrometheus", ["prometheus"])
# (`listen` is an input: an output of that name would blank it, step_resource)


# ---- in the program ------------------------------------------------------------------------------
def serving_addrs(nodes, master_in_compute: bool) -> List[Dict[str, str]]:
    """[{"name", "addr"}] of the nodes that serve, from the cluster's node list
    ([{"name", "inner_ip", "role"}], CtyunHccCluster.nodes). The names are the API's, which
    ClusterCheck (earlier in the chain) has confirmed are Slurm's (`srun -w` takes them)."""
    return [{"name": n["name"], "addr": n["inner_ip"]} for n in nodes or []
            if n.get("role") != "master" or master_in_compute]


def replica_targets(replicas, nodes: List[Dict[str, str]]):
    """Each replica's `monitoring.ReplicaTargets` and the serving nodes in no replica's job.
    `replicas`: [(node0Addr, [Slurm node names])] of every SlurmService, replica 0 first (the
    names are Slurm's hostnames, `scontrol show hostnames`); `nodes`: `serving_addrs`. A name
    the cluster's list does not hold is left out (its exporters are still scraped, unlabelled,
    as a serving node in no replica)."""
    addr = {n["name"]: n["addr"] for n in nodes}
    out, used = [], set()
    for head, names in replicas:
        mine = tuple(addr[n] for n in names or () if n in addr)
        used.update(mine)
        out.append(monitoring.ReplicaTargets(head, mine))
    return out, [n["addr"] for n in nodes if n["addr"] not in used]


def prometheus_yaml(replicas, port: int, nodes: List[Dict[str, str]], has_key: bool,
                    router: str = "") -> str:
    """The master's prometheus.yml: vLLM on every replica's node 0, the exporters on every node,
    labelled by replica (`replica_targets`), the router's metrics with `router`. The key and
    rules files are named relative to it, where `MasterPrometheus` writes them: Prometheus
    resolves a config's relative file paths against the config file's directory
    (prometheus/prometheus config/config.go, `LoadFile` -> `cfg.SetDirectory(filepath.Dir(filename))`;
    tests/integration/test_ctyun_metrics_services.py runs it from another directory)."""
    targets, others = replica_targets(replicas, nodes)
    return scrape.render(monitoring.prometheus_config(
        port=port, replicas=targets, other_nodes=others, router=router or None,
        key_file="key" if has_key else None))


def after_chain(name: str, chain, cluster, master_in_compute: bool, partition: str):
    """The bootstrap chain (chain.py's `Bootstrapped`) with `NodeExporters` (`{name}-exporters`,
    a child of the cluster component like the other steps) as its last step: after the
    broadcast, before the service takes the nodes (an `srun -w` step needs them free)."""
    exporters = NodeExporters(f"{name}-exporters", {
        **chain.ssh, "partition": partition,
        "nodes": cluster.nodes.apply(lambda ns: serving_addrs(ns, master_in_compute))},
        pulumi.ResourceOptions(parent=cluster, depends_on=[chain.last]))
    return dataclasses.replace(chain, last=exporters)


def declare_prometheus(name: str, ssh: Dict[str, Any], cluster_nodes, master_in_compute: bool,
                       services, port: int, api_key, has_key: bool, parent, router=None):
    """`MasterPrometheus` (`{name}-prometheus`) under K3Inference, after every replica's
    service (and the router, with several): it scrapes each service's node 0 (`node0Addr`) and
    nodes (`nodes`), which a new job may move, and the router's metrics on the master."""
    from ..router.settings import ROUTER_METRICS_PORT

    router_at = f"127.0.0.1:{ROUTER_METRICS_PORT}" if router is not None else ""
    heads = pulumi.Output.all(*[pulumi.Output.all(s.node0Addr, s.nodes) for s in services])
    config = pulumi.Output.all(heads, cluster_nodes).apply(
        lambda v: prometheus_yaml([(h, ns) for h, ns in v[0]], port,
                                  serving_addrs(v[1], master_in_compute), has_key, router_at))
    return MasterPrometheus(f"{name}-prometheus", {
        **ssh, "config": config, "rules": alerts.render(),
        "apiKey": api_key if has_key else ""},
        pulumi.ResourceOptions(parent=parent, depends_on=list(services) +
                               ([router] if router is not None else [])))


def metrics_output(prometheus, ssh: Dict[str, Any]):
    """The stack output `metrics`: how to reach the master's Prometheus (an SSH tunnel with the
    stack's login key: see the output sshCommand) and what is running."""
    def out(v):
        state, host, port, user, bastion = v
        return {"prometheus": state, "listen": monitoring.PROMETHEUS_LISTEN,
                "tunnel": monitoring.tunnel_command(host, user, int(port), bastion or ""),
                "grafana": "no Grafana on the master: import out/<stack>/dashboards/*.json into "
                           "your Grafana with http://127.0.0.1:9090 (the tunnel) as its "
                           "Prometheus data source"}
    return pulumi.Output.all(prometheus.prometheus, ssh["sshHost"], ssh["sshPort"], ssh["sshUser"],
                             ssh["sshBastion"]).apply(out)
