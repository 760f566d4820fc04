"""The ctyun-hcc metrics services as rendered (components/ctyun_hcc/monitoring.py): the systemd
units pass `systemd-analyze verify` with no warning, Prometheus listens on loopback only, the
install script is valid bash that never carries the API key, and every guard refuses its hostile
input before anything is rendered."""

from __future__ import annotations

import subprocess

import pytest

from components.ctyun_hcc import metrics_services, monitoring


def _verify(tmp_path, unit_name: str, text: str) -> subprocess.CompletedProcess:
    path = tmp_path / f"{unit_name}.service"
    path.write_text(text)
    return subprocess.run(["systemd-analyze", "verify", str(path)], capture_output=True,
                          text=True, timeout=60)


@pytest.mark.parametrize("svc", [
    monitoring.prometheus_service("/etc/kimi-k3/prometheus/prometheus.yml", "/var/lib/kimi-k3/prometheus"),
    monitoring.node_exporter_service("192.168.0.11"),
    monitoring.npu_exporter_service("192.168.0.11"),
], ids=lambda s: s.name)
def test_each_unit_is_one_systemd_takes_without_a_warning(svc, tmp_path):
    binary = "/usr/bin/true"  # systemd-analyze checks the ExecStart binary exists
    unit = monitoring.systemd_unit(svc, binary)
    done = _verify(tmp_path, svc.unit, unit)
    assert done.returncode == 0 and done.stderr.strip() == "", done.stderr
    assert "Restart=always" in unit and "WantedBy=multi-user.target" in unit
    assert f"ExecStart={binary} " in unit


def test_a_bad_unit_is_what_systemd_analyze_complains_about(tmp_path):
    """The check above can fail: a misspelt setting is reported."""
    unit = monitoring.systemd_unit(monitoring.node_exporter_service("192.168.0.11"), "/usr/bin/true")
    done = _verify(tmp_path, "kimi-k3-bad", unit.replace("Restart=always", "Restart=alwayz"))
    assert "alwayz" in done.stderr


def test_the_services_listen_where_they_should():
    prom = monitoring.prometheus_service("/etc/p.yml", "/var/lib/p")
    assert prom.listen == "127.0.0.1:9090" and "--web.listen-address=127.0.0.1:9090" in prom.args
    assert monitoring.node_exporter_service("10.0.0.5").args == ("--web.listen-address=10.0.0.5:9100",)
    assert monitoring.npu_exporter_service("10.0.0.5").args[:2] == ("-ip=10.0.0.5", "-port=8082")


def test_install_script_is_bash_and_keeps_the_key_off_the_command_line():
    svc = monitoring.prometheus_service("/etc/kimi-k3/prometheus/prometheus.yml", "/var/lib/p")
    script = monitoring.install_script([svc], files={"/etc/kimi-k3/prometheus/prometheus.yml": "a: 1\n"},
                                       secret_file="/etc/kimi-k3/prometheus/key")
    assert subprocess.run(["bash", "-n"], input=script, text=True).returncode == 0
    assert "read -r key" in script and "umask 077" in script
    assert "if [ -d /run/systemd/system ]" in script  # sd_booted(3)
    assert "kimi-k3-prometheus.service" in script and "/prometheus.service" not in script


def test_parse_report():
    text = ("mode supervise\nup npu-exporter /usr/local/bin/npu-exporter\n"
            "missing node-exporter /usr/local/bin/node_exporter /usr/bin/prometheus-node-exporter\n"
            "down prometheus err: bind: address already in use\nnoise\n")
    assert metrics_services.parse_report(text) == {
        "npu-exporter": "up: /usr/local/bin/npu-exporter",
        "node-exporter": "missing: /usr/local/bin/node_exporter /usr/bin/prometheus-node-exporter",
        "prometheus": "down: err: bind: address already in use"}


def test_tunnel_command():
    assert monitoring.tunnel_command("203.0.113.5", port=2222, bastion="jump@198.51.100.1",
                                     listen="127.0.0.1:9091", local_port=19090) == (
        "ssh -N -L 19090:127.0.0.1:9091 -J jump@198.51.100.1 -p 2222 root@203.0.113.5  "
        "# then open http://127.0.0.1:19090")


# ---- guards: each with its hostile input -------------------------------------------------------
@pytest.mark.parametrize("listen", ["0.0.0.0:9090", "192.168.0.10:9090", "10.0.0.1:9090"])
def test_prometheus_never_listens_beyond_loopback(listen):
    with pytest.raises(ValueError, match="is not loopback"):
        monitoring.prometheus_service("/etc/p.yml", "/var/lib/p", listen)


@pytest.mark.parametrize("listen", ["127.0.0.1", "127.0.0.1:0", "127.0.0.1:99999", "localhost:9090",
                                    "127.0.0.1:90;id"])
def test_a_listen_address_that_is_not_one_is_refused(listen):
    with pytest.raises(ValueError, match="listen address|is not an IPv4"):
        monitoring.prometheus_service("/etc/p.yml", "/var/lib/p", listen)


@pytest.mark.parametrize("path", ["relative/p.yml", "/etc/../root/x", "/etc/p yml", "/etc/$(id)",
                                  "/etc/p.yml\nExecStartPre=/bin/sh", "/etc/%h", "", "/etc/./x"])
def test_a_path_that_is_not_plain_is_refused(path):
    with pytest.raises(ValueError, match="is not an absolute path of plain names"):
        monitoring.prometheus_service(path, "/var/lib/p")
    with pytest.raises(ValueError, match="is not an absolute path of plain names"):
        monitoring.systemd_unit(monitoring.node_exporter_service("10.0.0.1"), path)
    with pytest.raises(ValueError, match="is not an absolute path of plain names"):
        monitoring.install_script([], state_dir=path)


@pytest.mark.parametrize("arg", ["--x=$HOME", "--x=%h", "--x=a b", "--x='q'", "--x=a\nExecStartPre=/x"])
def test_an_argument_systemd_or_a_shell_would_expand_is_refused(arg):
    with pytest.raises(ValueError, match="would interpret"):
        monitoring.Service("x", "x", ("/usr/bin/x",), (arg,), "127.0.0.1:1")


@pytest.mark.parametrize("name", ["Prometheus", "a b", "x;id", "../x", "-x", ""])
def test_a_service_name_that_is_not_a_unit_name_is_refused(name):
    with pytest.raises(ValueError, match="is not"):
        monitoring.Service(name, "x", ("/usr/bin/x",), (), "127.0.0.1:1")
    with pytest.raises(ValueError, match="is not"):
        monitoring.remove_script([name])


@pytest.mark.parametrize("node", ["kk3n1;id", "-w", "a b", "", "x" * 70, "$(id)"])
def test_a_node_name_that_is_not_one_is_refused(node):
    with pytest.raises(ValueError, match="is not a host name"):
        monitoring.check_node_name(node)


def test_the_node_step_refuses_a_bad_node_before_running_anything():
    class NoRunner:
        def __getattr__(self, name):
            raise AssertionError(f"ran {name} before the check")

    prov = metrics_services.NodeExportersProvider()
    p = prov.inputs({"sshHost": "h", "nodes": [{"name": "kk3n1", "addr": "10.0.0.1"},
                                                {"name": "kk3n2;reboot", "addr": "10.0.0.2"}]})
    with pytest.raises(ValueError, match="is not a host name"):
        prov.apply(NoRunner(), p)
    p = prov.inputs({"sshHost": "h", "nodes": [{"name": "kk3n1", "addr": "0.0.0.0/0"}]})
    with pytest.raises(ValueError, match="is not an IPv4 address"):
        prov.apply(NoRunner(), p)


def test_a_file_holding_the_heredoc_end_is_refused():
    with pytest.raises(ValueError, match="KK3_METRICS_EOF"):
        monitoring.install_script([], files={"/etc/x.yml": "a\nKK3_METRICS_EOF\nrm -rf /\n"})


@pytest.mark.parametrize("bad", [0, 301, True, "2"])
def test_a_restart_delay_out_of_range_is_refused(bad):
    with pytest.raises(ValueError, match="restart delay"):
        monitoring.systemd_unit(monitoring.node_exporter_service("10.0.0.1"), "/usr/bin/x", bad)


def test_services_named_twice_are_refused():
    s = monitoring.node_exporter_service("10.0.0.1")
    with pytest.raises(ValueError, match="named twice"):
        monitoring.install_script([s, s])
