"""Metrics on ctyun-hcc: a Prometheus on the master scraping vLLM's API server, a node exporter
and Ascend's npu-exporter on every node, as services outside the Slurm job. Pure: the config and
the systemd units as text; reaching it is an SSH tunnel to the master's loopback.

- vLLM serves `/metrics` only on node 0 (the API server; the other nodes run headless, vLLM
  `run_headless` starts no HTTP server), on the endpoint's port, behind kimi-k3's API-key guard
  when the stack has a key: Prometheus sends it from a 0600 file it alone owns (`credentials_file`).
  With several replicas (one Slurm job each, replicas.py) that is every replica's node 0, and
  every target of replica i carries the label `replica="<i>"` (`prometheus_config`).
- npu-exporter (Ascend/mind-cluster v26.1.0, component/npu-exporter; default port 8082,
  `cmd/npu-exporter/main.go` line 84 `portConst = 8082`; `-ip` "The listen ip of the
  service,0.0.0.0 is not recommended when install on Multi-NIC host"): one per node, listening
  on the node's cluster address only. The MindX DL guide runs it as a systemd service
  (https://www.hiascend.com/doc_center/source/zh/mindx-dl/300/dluserguide/clusterscheduling/dlug_installation_02_000029.html:
  `ExecStart=... -ip=... -port=8082 -logFile=...`, `Restart=always`), which the unit below follows.
- node exporter: port 9100 (the port prometheus/node_exporter listens on by default, `--web.listen-address=":9100"`).
- Prometheus listens on 127.0.0.1:9090 of the master only; `tunnel_command` is what the stack
  prints to reach it. The `vllm_` -> `vllm:` relabel rule is on the vLLM job (a 2.x Prometheus
  from the OS would otherwise store `vllm_` names: components/observability/scrape.py).
- Each is a `Service` kept running by systemd (`systemd_unit`, the shared renderer of
  components/systemd/units.py: `Restart=always`, never given up on) where systemd is the init,
  by a supervising loop otherwise (dropping root with `setpriv`), as the user its `RunAs`
  names: Prometheus and the node exporter as `METRICS_USER` (neither needs root; Prometheus
  owns its data directory and key file), npu-exporter as `hwMindX` where it exists, else root
  (`NPU_EXPORTER_USER` says why); `install_script` and
  `remove_script` are what metrics_services.py runs on the master and, through `srun -w`, on
  each node. Every value that reaches a unit line or a shell word is held to a plain grammar
  first (addresses, absolute paths of plain names, unit names, flags without `$ % ' "` or
  spaces): ValueError names it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

from ..inference.quoting import shell_word, shell_words
from ..observability import scrape
from ..systemd import units

NPU_EXPORTER_PORT = 8082
NODE_EXPORTER_PORT = 9100
PROMETHEUS_LISTEN = "127.0.0.1:9090"
_ADDR = re.compile(r"[0-9]{1,3}(\.[0-9]{1,3}){3}")


def _addr(value: str, what: str) -> str:
    if not isinstance(value, str) or not _ADDR.fullmatch(value) or \
            any(int(p) > 255 for p in value.split(".")):
        raise ValueError(f"{what} {value!r} is not an IPv4 address")
    return value


@dataclass(frozen=True)
class ReplicaTargets:
    """One replica's scrape targets: its head (node 0 of its Slurm job, the one node serving
    vLLM's `/metrics`) and the cluster addresses of every node of its job (the exporters)."""

    head: str
    nodes: Tuple[str, ...] = ()


#: the router's own metrics job (vllm-router's exporter, `--prometheus-host/--prometheus-port`,
#: on the master's loopback: components/router/settings.py); its series are named vllm_router_*
ROUTER_JOB = "vllm-router"


def prometheus_config(*, port: int, replicas: Sequence[ReplicaTargets] = (),
                      head_addr: Optional[str] = None, node_addrs: Sequence[str] = (),
                      other_nodes: Sequence[str] = (), router: Optional[str] = None,
                      key_file: Optional[str] = None, rule_files: Sequence[str] = ("alerts.yml",),
                      scrape_interval: str = "15s") -> Dict:
    """prometheus.yml for the master: vLLM on every replica's head, the node and npu exporters
    on every node of every replica, each target labelled `replica="<i>"` (scrape.REPLICA_LABEL:
    the dashboards' `replica` variable, the alerts' labels); serving nodes in no replica's job
    (`other_nodes`) are scraped without the label; with `router` ("127.0.0.1:port") the router's
    own metrics too. `head_addr` and `node_addrs` are one replica's, for a stack of one.
    A node listed twice keeps its first replica's label (the jobs are `--exclusive`: a node is in
    one job; a scrape target twice in one job would store every series twice)."""
    if head_addr is not None:
        replicas = [ReplicaTargets(head_addr, tuple(node_addrs))] + list(replicas)
    if not replicas:
        raise ValueError("no replica to scrape")
    if isinstance(port, bool) or not 1 <= int(port) <= 65535:
        raise ValueError(f"port {port!r} is out of range")
    seen: set = set()
    vllm, nodes = [], []
    for i, r in enumerate(replicas):
        lab = {scrape.REPLICA_LABEL: str(i)}
        vllm.append(([f"{_addr(r.head, f'replica {i} node 0 address')}:{int(port)}"], lab))
        mine = [a for a in (_addr(a, f"a node address of replica {i}") for a in r.nodes)
                if not (a in seen or seen.add(a))]
        nodes.append((mine, lab))
    rest = [a for a in (_addr(a, "a node's address") for a in other_nodes)
            if not (a in seen or seen.add(a))]
    nodes.append((rest, {}))
    exporters = {"npu-exporter": [([f"{a}:{NPU_EXPORTER_PORT}" for a in t], lab) for t, lab in nodes],
                 "node": [([f"{a}:{NODE_EXPORTER_PORT}" for a in t], lab) for t, lab in nodes]}
    if router:
        addr, rport = _listen(router)
        exporters[ROUTER_JOB] = [f"{addr}:{rport}"]
    doc = scrape.config(vllm=vllm, exporters=exporters, rule_files=rule_files,
                        scrape_interval=scrape_interval)
    if key_file:
        doc["scrape_configs"][0]["authorization"] = {"type": "Bearer", "credentials_file": key_file}
    return doc


# ---- the services: what runs, how it is kept running ------------------------------------------
#: the systemd unit names are kimi-k3-<name>: never the name of a unit an OS package ships
#: (Debian's `prometheus` package has its own prometheus.service listening on every address)
PROMETHEUS = "prometheus"
NODE_EXPORTER = "node-exporter"
NPU_EXPORTER = "npu-exporter"
#: where each binary may be, first found wins: the MindX DL guide installs npu-exporter to
#: /usr/local/bin; Debian/Ubuntu's packages install /usr/bin/prometheus and
#: /usr/bin/prometheus-node-exporter; the upstream release tarballs ship `prometheus` and
#: `node_exporter`, commonly copied to /usr/local/bin
CANDIDATES: Dict[str, Tuple[str, ...]] = {
    PROMETHEUS: ("/usr/local/bin/prometheus", "/usr/bin/prometheus"),
    NODE_EXPORTER: ("/usr/local/bin/node_exporter", "/usr/bin/prometheus-node-exporter"),
    NPU_EXPORTER: ("/usr/local/bin/npu-exporter",),
}
_NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,39}")
_PATH = re.compile(r"/[A-Za-z0-9._/+-]{1,250}")
#: one argument of an ExecStart line: no space, quote, `$` or `%` (systemd expands those:
#: systemd.service(5) "Command lines", systemd.unit(5) "Specifiers")
_ARG = re.compile(r"[A-Za-z0-9._/:=,@+-]{1,300}")
_HEREDOC = "KK3_METRICS_EOF"


def check_path(value: str, what: str) -> str:
    """An absolute path of plain names (it goes into a unit file and a shell script)."""
    if not isinstance(value, str) or not _PATH.fullmatch(value) or \
            any(part in (".", "..") for part in value.split("/")[1:]):
        raise ValueError(f"{what} {value!r} is not an absolute path of plain names "
                         "(letters, digits, . _ + - and /)")
    return value


_NODE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,62}")


def check_node_name(value: str) -> str:
    """A Slurm node name (it goes into `srun -w` and a file name)."""
    if not isinstance(value, str) or not _NODE_NAME.fullmatch(value):
        raise ValueError(f"node name {value!r} is not a host name")
    return value


def _listen(value: str) -> Tuple[str, int]:
    addr, sep, port = str(value).rpartition(":")
    if not sep or not port.isdigit() or not 1 <= int(port) <= 65535:
        raise ValueError(f"listen address {value!r} is not IPv4:port")
    return _addr(addr, "listen address"), int(port)


@dataclass(frozen=True)
class RunAs:
    """Who a service runs as: `user`, created as a system user when missing (`create`), else
    `fallback` (root) when that user does not exist, said in the report (`why` names the
    reason root is kept)."""

    user: str
    why: str = ""
    create: bool = True

    def __post_init__(self):
        units.check_user(self.user)
        if "\n" in self.why:
            raise ValueError(f"run-as reason {self.why!r}")


#: the metrics services' own system user (Prometheus and the node exporter: neither needs root)
METRICS_USER = "kimi-k3-metrics"
#: the MindX DL guide runs npu-exporter as `User=hwMindX` (dlug_installation_02_000029, cited in
#: the module docstring), which reads the NPUs only where the driver was installed with
#: `--install-for-all` (MindCluster 7.3.0 NPU Exporter guide, 约束说明:
#: https://www.hiascend.com/document/detail/zh/mindcluster/730/clustersched/dlug/dlug_installation_018.html
#: "为保证NPU Exporter以二进制部署时可使用非root用户安装(如hwMindX),请在安装驱动时使用
#: --install-for-all参数"). So: as hwMindX where the MindX install made that user, else root
#: (the DCMI library it calls must be root-owned and the devices the driver's; whether CTyun's
#: image installs the driver for all users is not documented)
NPU_EXPORTER_USER = RunAs("hwMindX", "no hwMindX user (the MindX DL install's): the NPU "
                          "driver's devices may need root", create=False)


@dataclass(frozen=True)
class Service:
    """One long-running process kept up on a host, outside any Slurm job: the systemd unit
    `kimi-k3-<name>` where systemd runs the host, a supervising loop otherwise."""

    name: str
    description: str
    candidates: Tuple[str, ...]
    args: Tuple[str, ...]
    listen: str
    #: who runs it (`RunAs`); root only where proven needed
    run_as: "RunAs" = None  # type: ignore[assignment]
    #: directories it writes (created, and given to its user) and files only it may read
    #: (given to its user, mode kept): e.g. Prometheus's data directory and API-key file
    owns_dirs: Tuple[str, ...] = ()
    owns_files: Tuple[str, ...] = ()

    def __post_init__(self):
        if self.run_as is None:
            object.__setattr__(self, "run_as", RunAs(units.ROOT, "", False))
        for path in self.owns_dirs + self.owns_files:
            check_path(path, f"a path {self.name} owns")
        if not isinstance(self.name, str) or not _NAME.fullmatch(self.name):
            raise ValueError(f"service name {self.name!r} is not [a-z0-9-]")
        if not self.candidates:
            raise ValueError(f"service {self.name}: no binary to look for")
        for c in self.candidates:
            check_path(c, f"the {self.name} binary")
        for a in self.args:
            if not isinstance(a, str) or not _ARG.fullmatch(a):
                raise ValueError(f"service {self.name}: argument {a!r} has a character a unit "
                                 "file or a shell would interpret")
        if "\n" in self.description or "%" in self.description:
            raise ValueError(f"service {self.name}: description {self.description!r}")
        _listen(self.listen)

    @property
    def unit(self) -> str:
        return f"kimi-k3-{self.name}"


def prometheus_service(config_file: str, data_dir: str, listen: str = PROMETHEUS_LISTEN,
                       candidates: Sequence[str] = CANDIDATES[PROMETHEUS],
                       key_files: Sequence[str] = ()) -> Service:
    """The master's Prometheus, on loopback only, as `METRICS_USER`, which owns its data
    directory and `key_files` (the API key it scrapes with, 0600). Flags: prometheus/prometheus
    cmd/prometheus/main.go (`--config.file`, `--storage.tsdb.path`, `--web.listen-address`,
    the same in 2.x and 3.x: https://prometheus.io/docs/prometheus/latest/command-line/prometheus/)."""
    addr, _ = _listen(listen)
    if not addr.startswith("127."):
        raise ValueError(f"Prometheus listen address {listen!r} is not loopback: it has no "
                         "authentication, reach it through the SSH tunnel instead")
    return Service(PROMETHEUS, "Prometheus for kimi-k3 (loopback only: reach it through an SSH tunnel)",
                   tuple(candidates),
                   (f"--config.file={check_path(config_file, 'the Prometheus config')}",
                    f"--storage.tsdb.path={check_path(data_dir, 'the Prometheus data directory')}",
                    f"--web.listen-address={listen}"), listen, RunAs(METRICS_USER),
                   owns_dirs=(data_dir,), owns_files=tuple(key_files))


def node_exporter_service(addr: str, candidates: Sequence[str] = CANDIDATES[NODE_EXPORTER]) -> Service:
    """A node's exporter on its cluster address (prometheus/node_exporter: `--web.listen-address`,
    default ":9100", https://github.com/prometheus/node_exporter#usage)."""
    a = _addr(addr, "the node's address")
    return Service(NODE_EXPORTER, "Prometheus node exporter (kimi-k3 metrics)", tuple(candidates),
                   (f"--web.listen-address={a}:{NODE_EXPORTER_PORT}",), f"{a}:{NODE_EXPORTER_PORT}",
                   RunAs(METRICS_USER))


NPU_EXPORTER_LOG = "/var/log/mindx-dl/npu-exporter/npu-exporter.log"


def npu_exporter_service(addr: str, candidates: Sequence[str] = CANDIDATES[NPU_EXPORTER]) -> Service:
    """Ascend's npu-exporter on the node's cluster address: the MindX DL guide's flags
    (`-ip`, `-port`, `-logFile`; see the module docstring)."""
    a = _addr(addr, "the node's address")
    return Service(NPU_EXPORTER, "Ascend npu exporter (kimi-k3 metrics)", tuple(candidates),
                   (f"-ip={a}", f"-port={NPU_EXPORTER_PORT}", f"-logFile={NPU_EXPORTER_LOG}"),
                   f"{a}:{NPU_EXPORTER_PORT}", NPU_EXPORTER_USER,
                   owns_dirs=(NPU_EXPORTER_LOG.rsplit("/", 1)[0],))


def systemd_unit(svc: Service, binary: str, restart_s: int = 2, user: str = "") -> str:
    """The unit (components/systemd/units.py: restarted whenever it exits, never given up on,
    started at boot, owned by systemd and not by the job or the SSH session that installed
    it), run as `user` (default: the service's)."""
    check_path(binary, f"the {svc.name} binary")
    if isinstance(restart_s, bool) or not isinstance(restart_s, int) or not 1 <= restart_s <= 300:
        # at least 1 s: the loop supervisor sleeps this long between runs (no busy loop)
        raise ValueError(f"restart delay {restart_s!r} is not 1..300 seconds")
    return units.unit(svc.description, (binary,) + svc.args, user=user or svc.run_as.user,
                      restart_s=restart_s)


def npu_exporter_unit(listen_addr: str, binary: str = "/usr/local/bin/npu-exporter") -> str:
    """The systemd unit of npu-exporter on one node (the MindX DL guide's, bound to the node's
    cluster address)."""
    return systemd_unit(npu_exporter_service(listen_addr), binary)


def _heredoc(text: str) -> str:
    if any(line == _HEREDOC for line in text.splitlines()):
        raise ValueError(f"a file holds the line {_HEREDOC}")
    return f"<<'{_HEREDOC}'\n{text.rstrip(chr(10))}\n{_HEREDOC}"


#: where systemd is not the init (a container, a test node): the one restart loop
#: (components/systemd/units.py `supervise_sh`, written to the state directory), started in its
#: own session and process group (setsid), so it outlives the SSH session or Slurm step that
#: started it and is stopped as a group; as the user in `<unit>.user` (setpriv)
_SUPERVISE = ('printf "%s\\n" "$as" > "$state/{unit}.user"; rm -f "$state/{unit}.stop"; '
              'KK3_RESTART_S={r} KK3_LOG_FILE="$state/{unit}.log" KK3_PID_FILE="$state/{unit}.pid" '
              'setsid "$state/supervise.sh" {unit} "$state" -- {argv} </dev/null >/dev/null 2>&1 &')


def _run_as_block(svc: Service) -> List[str]:
    """Resolve `$as` (who the service runs as) and `$who`/`$note` (what the report says): the
    service's user, created when it is ours and missing; root where that user cannot be had
    (not ours and missing, useradd failed, not root ourselves, no setpriv for the loop); then
    the directories and files it owns given to it."""
    r = svc.run_as
    q = shell_word(r.user)
    lines = [f"as={q}; note=", 'if [ "$as" != root ] && ! id -u "$as" >/dev/null 2>&1; then']
    if r.create:
        lines.append('  useradd --system --user-group --no-create-home --home-dir /nonexistent '
                     '--shell /usr/sbin/nologin "$as" >/dev/null 2>&1 || '
                     '{ note="useradd $as failed"; as=root; }')
    else:
        lines.append(f"  note={shell_word(r.why)}; as=root")
    lines += ['fi',
              'if [ "$as" != root ] && [ "$(id -u)" != 0 ]; then note="not root"; as=root; fi',
              'if [ "$as" != root ] && [ "$mode" != systemd ] && ! command -v setpriv >/dev/null '
              '2>&1; then note="setpriv not found"; as=root; fi',
              'who=$as; [ "$(id -u)" = 0 ] || who=$(id -un)']
    for d in svc.owns_dirs:
        lines.append(f'mkdir -p {shell_word(d)}; if [ "$as" != root ]; then chown -R "$as:$as" '
                     f'{shell_word(d)} || {{ note="chown {d} failed"; as=root; }}; fi')
    for f in svc.owns_files:
        lines.append(f'if [ "$as" != root ] && [ -e {shell_word(f)} ]; then chown "$as:$as" '
                     f'{shell_word(f)} || {{ note="chown {f} failed"; as=root; }}; fi')
    return lines


def _service_block(svc: Service, restart_s: int, wait_s: int) -> List[str]:
    """The install script's part for one service (see `install_script`)."""
    addr, port = _listen(svc.listen)
    u = svc.unit
    pick = [f'bin=; for c in {shell_words(svc.candidates)}; do [ -x "$c" ] && {{ bin=$c; break; }}; done',
            f'if [ -z "$bin" ]; then echo "missing {svc.name} {" ".join(svc.candidates)}"; else',
            *_run_as_block(svc),
            'case "$bin" in']
    for c in svc.candidates:
        supervise = _SUPERVISE.format(r=restart_s, unit=u, argv=shell_words((c,) + svc.args))
        pick.append(
            f"{shell_word(c)}) if [ \"$as\" = root ]; then "
            f"unit=$(cat {_heredoc(systemd_unit(svc, c, restart_s, units.ROOT))}\n)\n"
            f"  else unit=$(cat {_heredoc(systemd_unit(svc, c, restart_s))}\n); fi\n"
            f"  start() {{ {supervise} }} ;;")
    pick.append("esac")
    pick += [
        'uc=0',
        'if [ "$mode" = systemd ]; then',
        f'  printf "%s\\n" "$unit" > "$units/{u}.service.kk3tmp"; put "$units/{u}.service" && uc=1',
        '  if [ "$uc" = 1 ]; then systemctl daemon-reload; fi',
        f'  systemctl enable -q {u} >/dev/null 2>&1 || true',
        f'  if [ "$uc$changed" != 00 ]; then systemctl restart {u}; else systemctl start {u}; fi',
        'else',
        f'  printf "%s\\n" "$unit" > "$state/{u}.unit.kk3tmp"; put "$state/{u}.unit" && uc=1',
        f'  pid=$(cat "$state/{u}.pid" 2>/dev/null || true)',
        '  alive=0; if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then alive=1; fi',
        '  if [ "$alive" = 1 ] && [ "$uc$changed" != 00 ]; then kill -- "-$pid" 2>/dev/null || true; '
        'for i in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done; alive=0; fi',
        '  if [ "$alive" = 0 ]; then start; fi',
        'fi',
        'ok=0; for i in $(seq ' + str(wait_s * 4) + '); do '
        f'if (exec 3<>/dev/tcp/{addr}/{port}) 2>/dev/null; then ok=1; break; fi; sleep 0.25; done',
        f'if [ "$ok" = 1 ]; then echo "up {svc.name} $bin as $who${{note:+ ($note)}}"; else',
        f'  if [ "$mode" = systemd ]; then t=$(journalctl -u {u} -n 5 --no-pager 2>&1 | tr "\\n" " "); '
        f'else t=$(tail -n 5 "$state/{u}.log" 2>/dev/null | tr "\\n" " "); fi',
        f'  echo "down {svc.name} $t"; fi',
        'fi']
    return pick


def install_script(services: Sequence[Service], *, state_dir: str = "/var/lib/kimi-k3/services",
                   files: Optional[Dict[str, str]] = None, secret_file: str = "",
                   unit_dir: str = "/etc/systemd/system", restart_s: int = 2,
                   wait_s: int = 60) -> str:
    """A bash script that installs and (re)starts `services` on the host it runs on, idempotent:
    - writes `files` (path -> text, 0644) and, with `secret_file`, the first line of its stdin
      to that path (0600: the API key Prometheus scrapes with never travels in the script);
    - where systemd is the init (it is when /run/systemd/system exists: sd_booted(3),
      https://www.freedesktop.org/software/systemd/man/latest/sd_booted.html) one unit per
      service in `unit_dir`, enabled, restarted when its unit or a file changed; otherwise the
      same command under a supervising loop (`_SUPERVISE`) with its pid and log in `state_dir`;
    - a service whose binary is on none of its candidate paths is reported, not installed;
    - then waits up to `wait_s` for each to accept connections on its address.
    Prints one line per service: `up <name> <binary>`, `missing <name> <candidates>` or
    `down <name> <log tail>`; exits 0 (the caller decides what a missing or down one means)."""
    check_path(state_dir, "the state directory")
    check_path(unit_dir, "the unit directory")
    if isinstance(wait_s, bool) or not isinstance(wait_s, int) or not 1 <= wait_s <= 3600:
        raise ValueError(f"wait {wait_s!r} is not 1..3600 seconds")
    names = [s.name for s in services]
    if len(set(names)) != len(names):
        raise ValueError(f"services named twice: {names}")
    out = ["set -u", f"state={shell_word(state_dir)}; units={shell_word(unit_dir)}",
           'mkdir -p "$state"; changed=0',
           'put() { if cmp -s "$1.kk3tmp" "$1"; then rm -f "$1.kk3tmp"; return 1; fi; '
           'mv -f "$1.kk3tmp" "$1"; }',
           'if [ -d /run/systemd/system ]; then mode=systemd; else mode=supervise; fi',
           f'if [ "$mode" = supervise ]; then (umask 022; cat > "$state/supervise.sh.kk3tmp" '
           f'{_heredoc(units.supervise_sh())}\n); put "$state/supervise.sh" || true; '
           'chmod 0755 "$state/supervise.sh"; fi',
           'echo "mode $mode"']
    for path, text in sorted((files or {}).items()):
        check_path(path, "a config file")
        q = shell_word(path)
        out.append(f"mkdir -p \"$(dirname {q})\"; (umask 022; cat > {q}.kk3tmp {_heredoc(text)}\n); put {q} && changed=1")
    if secret_file:
        q = shell_word(check_path(secret_file, "the key file"))
        out.append(f"mkdir -p \"$(dirname {q})\"; key=; IFS= read -r key || true; "
                   f"(umask 077; printf '%s' \"$key\" > {q}.kk3tmp); unset key; put {q} && changed=1")
    for svc in services:
        out += _service_block(svc, restart_s, wait_s)
    return "\n".join(out) + "\n"


def remove_script(names: Sequence[str], *, state_dir: str = "/var/lib/kimi-k3/services",
                  unit_dir: str = "/etc/systemd/system") -> str:
    """Stop and remove the services `names` installed by `install_script` (idempotent: gone
    already is success)."""
    check_path(state_dir, "the state directory")
    check_path(unit_dir, "the unit directory")
    out = [f"state={shell_word(state_dir)}; units={shell_word(unit_dir)}"]
    for name in names:
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise ValueError(f"service name {name!r} is not [a-z0-9-]")
        u = f"kimi-k3-{name}"
        out += [f'if [ -d /run/systemd/system ] && [ -f "$units/{u}.service" ]; then '
                f'systemctl disable --now -q {u} || true; rm -f "$units/{u}.service"; '
                'systemctl daemon-reload; fi',
                f'pid=$(cat "$state/{u}.pid" 2>/dev/null || true); '
                'if [ -n "$pid" ]; then kill -- "-$pid" 2>/dev/null || true; fi; '
                f'rm -f "$state/{u}.pid" "$state/{u}.unit"; echo "removed {name}"']
    return "\n".join(out) + "\n"


def tunnel_command(host: str, user: str = "root", port: int = 22, bastion: str = "",
                   listen: str = PROMETHEUS_LISTEN, local_port: int = 9090) -> str:
    """What the stack prints to reach the master's Prometheus from your machine."""
    jump = f" -J {bastion}" if bastion else ""
    p = f" -p {int(port)}" if int(port) != 22 else ""
    return (f"ssh -N -L {int(local_port)}:{listen}{jump}{p} {user}@{host}  "
            f"# then open http://127.0.0.1:{int(local_port)}")
