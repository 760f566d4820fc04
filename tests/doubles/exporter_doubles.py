"""Doubles of the accelerator exporters' `/metrics`: NVIDIA dcgm-exporter and Ascend npu-exporter.

Neither exporter runs without its hardware, so these serve the Prometheus text format with the
names, labels and kinds the exporters declare, for the dashboards' tests (a real Prometheus
scrapes them). Written from the upstream sources, not from kimi-k3's metric table:

- dcgm-exporter, NVIDIA/dcgm-exporter tag 4.5.3-4.8.2 (commit
  691c92762eb551313c825f6efe4ceeee20982801, 2026-05-06): names, kinds and help from
  `etc/default-counters.csv` ("# DCGM FIELD, Prometheus metric type, help message": lines 11
  GPU_TEMP, 14 POWER_USAGE, 23 GPU_UTIL, 45 FB_FREE, 46 FB_USED); labels as README.md's sample
  with Kubernetes pod mapping: `DCGM_FI_DEV_SM_CLOCK{gpu="0", UUID="GPU-...",container="",
  namespace="",pod=""} 139`;
- npu-exporter, Ascend/mind-cluster tag v26.1.0 (commit 9e132e216bb7b81f4a2742a4ac6d3b50754e8a77,
  2026-07-29), `component/npu-exporter`: names and help from the `BuildDesc` calls in
  `collector/metrics/collector_for_utilization.go` (line 48 npu_chip_info_utilization),
  `collector_for_hbm.go` (31-32 hbm used/total memory), `collector_for_npu.go` (64 temperature,
  65 power, 70 health_status, 61 machine_npu_nums); the label set and sample layout as in
  `collector/testdata/prometheus_metrics` (`{container_name="",id="0",model_name="...",
  namespace="",pcie_bus_info="",pod_name="",vdie_id=""} <value> <timestamp ms>`: the exporter
  stamps each sample with the time it read the chip).
Values are plausible and fixed; only names, labels and format matter here.
"""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable


def dcgm_text(gpus: int = 8) -> str:
    rows = (("DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C).", 41),
            ("DCGM_FI_DEV_POWER_USAGE", "Power draw (in W).", 712.5),
            ("DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %).", 87),
            ("DCGM_FI_DEV_FB_FREE", "Framebuffer memory free (in MiB).", 20480),
            ("DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB).", 254976))
    out = []
    for name, doc, value in rows:
        out += [f"# HELP {name} {doc}", f"# TYPE {name} gauge"]
        for g in range(gpus):
            uuid = f"GPU-00000000-0000-0000-0000-00000000000{g}"
            out.append(f'{name}{{gpu="{g}", UUID="{uuid}",container="",namespace="",pod=""}} {value}')
    return "\n".join(out) + "\n"


def npu_text(npus: int = 16, model_name: str = "Ascend910") -> str:
    ts = int(time.time() * 1000)
    rows = (("npu_chip_info_utilization", "the ai core utilization", 83),
            ("npu_chip_info_hbm_used_memory", "the npu hbm used memory", 58000),
            ("npu_chip_info_hbm_total_memory", "the npu hbm total memory", 65536),
            ("npu_chip_info_temperature", "the npu temperature", 45),
            ("npu_chip_info_power", "the npu power", 310.4),
            ("npu_chip_info_health_status", "the npu health status", 1))
    out = ["# HELP machine_npu_nums Amount of npu installed on the machine.",
           "# TYPE machine_npu_nums gauge", f"machine_npu_nums {npus}"]
    for name, doc, value in rows:
        out += [f"# HELP {name} {doc}", f"# TYPE {name} gauge"]
        for i in range(npus):
            out.append(f'{name}{{container_name="",id="{i}",model_name="{model_name}",'
                       f'namespace="",pcie_bus_info="",pod_name="",vdie_id=""}} {value} {ts}')
    return "\n".join(out) + "\n"


class ExporterDouble:
    """`GET /metrics` answering `text()` (Prometheus text format 0.0.4) on `host` (loopback)."""

    def __init__(self, text: Callable[[], str], host: str = "127.0.0.1", port: int = 0):
        body_of = text

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 (http.server's name)
                if self.path.split("?")[0] != "/metrics":
                    self.send_error(404)
                    return
                body = body_of().encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self._server = ThreadingHTTPServer((host, port), Handler)
        self.port = self._server.server_address[1]
        self.target = f"{host}:{self.port}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> "ExporterDouble":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()


def main(argv=None) -> int:
    """`python -m tests.doubles.exporter_doubles npu|dcgm --host H --port P`: serve in the
    foreground (e.g. inside a test node's network namespace)."""
    import argparse

    p = argparse.ArgumentParser(description="accelerator exporter doubles (tests only)")
    p.add_argument("kind", choices=("npu", "dcgm"))
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0)
    a = p.parse_args(argv)
    d = ExporterDouble(npu_text if a.kind == "npu" else dcgm_text, a.host, a.port)
    print(f"(double) {a.kind} exporter on {d.target}", flush=True)
    try:
        d._server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
