"""Metrics on ctyun-hcc: a Prometheus on the master scraping vLLM's API server, a node exporter
and Ascend's npu-exporter on every node, as services outside the Slurm job. Pure: the config and
the systemd units as text; reaching it is an SSH tunnel to the master's loopback.

- vLLM serves `/metrics` only on node 0 (the API server; the other nodes run headless, vLLM
  `run_headless` starts no HTTP server), on the endpoint's port, behind kimi-k3's API-key guard
  when the stack has a key: Prometheus sends it from a root-only file (`credentials_file`).
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
"""

from __future__ import annotations

import re
from typing import Dict, Optional, Sequence

from ..observability import scrape

NPU_EXPORTER_PORT = 8082
NODE_EXPORTER_PORT = 9100
PROMETHEUS_LISTEN = "127.0.0.1:9090"
_ADDR = re.compile(r"[0-9]{1,3}(\.[0-9]{1,3}){3}")


def _addr(value: str, what: str) -> str:
    if not isinstance(value, str) or not _ADDR.fullmatch(value) or \
            any(int(p) > 255 for p in value.split(".")):
        raise ValueError(f"{what} {value!r} is not an IPv4 address")
    return value


def prometheus_config(*, head_addr: str, port: int, node_addrs: Sequence[str],
                      key_file: Optional[str] = None, rule_files: Sequence[str] = ("alerts.yml",),
                      scrape_interval: str = "15s") -> Dict:
    """prometheus.yml for the master: vLLM on node 0, node and npu exporters on every node."""
    head = _addr(head_addr, "node 0's address")
    nodes = [_addr(a, "a node's address") for a in node_addrs]
    if not 1 <= int(port) <= 65535:
        raise ValueError(f"port {port!r} is out of range")
    doc = scrape.config(
        vllm=[f"{head}:{port}"],
        exporters={"npu-exporter": [f"{a}:{NPU_EXPORTER_PORT}" for a in nodes],
                   "node": [f"{a}:{NODE_EXPORTER_PORT}" for a in nodes]},
        rule_files=rule_files, scrape_interval=scrape_interval)
    if key_file:
        doc["scrape_configs"][0]["authorization"] = {"type": "Bearer", "credentials_file": key_file}
    return doc


def npu_exporter_unit(listen_addr: str, binary: str = "/usr/local/bin/npu-exporter") -> str:
    """The systemd unit of npu-exporter on one node (the MindX DL guide's, bound to the node's
    cluster address)."""
    addr = _addr(listen_addr, "the node's address")
    return f"""[Unit]
Description=Ascend npu exporter (kimi-k3 metrics)
After=network-online.target

[Service]
ExecStart={binary} -ip={addr} -port={NPU_EXPORTER_PORT} -logFile=/var/log/mindx-dl/npu-exporter/npu-exporter.log
Restart=always
RestartSec=2
Environment=GOGC=50

[Install]
WantedBy=multi-user.target
"""


def prometheus_unit(config: str, data_dir: str, binary: str) -> str:
    return f"""[Unit]
Description=Prometheus for kimi-k3 (loopback only: reach it through an SSH tunnel)
After=network-online.target

[Service]
ExecStart={binary} --config.file={config} --storage.tsdb.path={data_dir} --web.listen-address={PROMETHEUS_LISTEN}
Restart=always
RestartSec=5

[Install]
WantedBy=multi-user.target
"""


def tunnel_command(host: str, user: str = "root", port: int = 22, bastion: str = "") -> str:
    """What the stack prints to reach the master's Prometheus from your machine."""
    jump = f" -J {bastion}" if bastion else ""
    p = f" -p {int(port)}" if int(port) != 22 else ""
    return (f"ssh -N -L 9090:{PROMETHEUS_LISTEN}{jump}{p} {user}@{host}  "
            "# then open http://127.0.0.1:9090")
