"""Every systemd unit the ctyun-hcc master gets comes back after the master reboots (issue 19
item 5, issue 21 item 1, issue 22 item 1, issue 23 item 2): the router and its front, the metrics
services, the TLS front and the resume watchdog, as rendered, are enabled for boot
(`WantedBy=multi-user.target`), ordered after the network is up (`After=` and `Wants=`
network-online.target: After= alone does not pull the target in, systemd.special(7)), restarted
whenever they exit (`Restart=always`) and never given up on (`StartLimitIntervalSec=0`: by
default systemd stops after 5 starts in 10 s, which a unit restarted every 2 s reaches while a
file system it reads is not mounted yet), and each passes `systemd-analyze verify`."""

from __future__ import annotations

import subprocess

import pytest

from components.ctyun_hcc import monitoring
from components.ctyun_hcc.health import watchdog_unit
from components.ctyun_hcc.router_service import STEP_INPUTS as ROUTER_INPUTS, files_of
from components.ctyun_hcc.tls_step import TlsProxyProvider

BOOT_LINES = ("WantedBy=multi-user.target", "After=network-online.target",
              "Wants=network-online.target", "Restart=always", "StartLimitIntervalSec=0")


def _router(name):
    return files_of({**ROUTER_INPUTS, "workerUrls": ["http://10.0.0.2:11026"]})[name]


def _watchdog():
    # the unit is written by an unquoted heredoc on the master: expanded as there
    text = watchdog_unit("/home/kimi-k3/watchdog.sh")
    return subprocess.run(["bash", "-c", f"cat <<UNIT\n{text}UNIT\n"], capture_output=True,
                          text=True, check=True,
                          env={"PATH": "/usr/bin:/bin", "SLURM_CONF": "/etc/slurm/slurm.conf"}
                          ).stdout


UNITS = {
    "kimi-k3-router": lambda: _router("kimi-k3-router.service"),
    "kimi-k3-front": lambda: _router("kimi-k3-front.service"),
    "kimi-k3-prometheus": lambda: monitoring.systemd_unit(monitoring.prometheus_service(
        "/etc/kimi-k3/prometheus/prometheus.yml", "/var/lib/kimi-k3/prometheus"), "/usr/bin/true"),
    "kimi-k3-node-exporter": lambda: monitoring.systemd_unit(
        monitoring.node_exporter_service("192.168.0.11"), "/usr/bin/true"),
    "kimi-k3-tls": lambda: TlsProxyProvider().unit_text(
        {"workDir": "/home/kimi-k3", "listenPort": 443, "upstreamHost": "10.0.0.5",
         "upstreamPort": 11025, "runAs": "nobody"}) + "\n",
    "kimi-k3-watchdog": _watchdog,
}


@pytest.mark.parametrize("name", sorted(UNITS))
def test_each_master_unit_comes_back_after_a_reboot(name, tmp_path):
    text = UNITS[name]()
    lines = text.splitlines()
    missing = [want for want in BOOT_LINES if want not in lines]
    assert not missing, f"{name}: {missing}"
    path = tmp_path / f"{name}.service"
    path.write_text(text)
    done = subprocess.run(["systemd-analyze", "verify", "--man=no", str(path)],
                          capture_output=True, text=True, timeout=60)
    assert f"{name}.service:" not in done.stderr, done.stderr


def test_the_watchdog_unit_carries_the_masters_path_and_slurm_conf():
    text = _watchdog()
    assert "Environment=PATH=/usr/bin:/bin SLURM_CONF=/etc/slurm/slurm.conf\n" in text
    assert "ExecStart=/bin/bash /home/kimi-k3/watchdog.sh\n" in text
    assert "User=" not in text and "DynamicUser" not in text  # scontrol update needs root
