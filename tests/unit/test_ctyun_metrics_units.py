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


# ---- several replicas: every head and node scraped, labelled by replica -----------------------

def _jobs(doc):
    return {j["job_name"]: j["static_configs"] for j in doc["scrape_configs"]}


def test_every_replicas_head_and_nodes_are_scraped_with_its_label():
    doc = monitoring.prometheus_config(
        port=11026, replicas=[monitoring.ReplicaTargets("10.0.0.10", ("10.0.0.10", "10.0.0.11")),
                              monitoring.ReplicaTargets("10.0.0.12", ("10.0.0.12", "10.0.0.13"))],
        other_nodes=["10.0.0.14"], router="127.0.0.1:29000", key_file="key")
    jobs = _jobs(doc)
    assert jobs["vllm"] == [{"targets": ["10.0.0.10:11026"], "labels": {"replica": "0"}},
                            {"targets": ["10.0.0.12:11026"], "labels": {"replica": "1"}}]
    assert jobs["npu-exporter"] == [
        {"targets": ["10.0.0.10:8082", "10.0.0.11:8082"], "labels": {"replica": "0"}},
        {"targets": ["10.0.0.12:8082", "10.0.0.13:8082"], "labels": {"replica": "1"}},
        {"targets": ["10.0.0.14:8082"]}]
    assert [g["targets"] for g in jobs["node"]] == [
        ["10.0.0.10:9100", "10.0.0.11:9100"], ["10.0.0.12:9100", "10.0.0.13:9100"], ["10.0.0.14:9100"]]
    assert jobs[monitoring.ROUTER_JOB] == [{"targets": ["127.0.0.1:29000"]}]
    # the key goes to the vLLM job only; the rename too (the router's names are its own)
    assert [j["job_name"] for j in doc["scrape_configs"] if "authorization" in j] == ["vllm"]
    assert [j["job_name"] for j in doc["scrape_configs"] if "metric_relabel_configs" in j] == ["vllm"]


def test_one_replica_is_replica_0():
    doc = monitoring.prometheus_config(head_addr="10.0.0.10", port=11025,
                                       node_addrs=["10.0.0.10", "10.0.0.11"])
    assert _jobs(doc)["vllm"] == [{"targets": ["10.0.0.10:11025"], "labels": {"replica": "0"}}]
    assert monitoring.ROUTER_JOB not in _jobs(doc)


def test_a_node_listed_twice_is_scraped_once_with_its_first_replica():
    doc = monitoring.prometheus_config(
        port=11026, replicas=[monitoring.ReplicaTargets("10.0.0.10", ("10.0.0.10", "10.0.0.11")),
                              monitoring.ReplicaTargets("10.0.0.12", ("10.0.0.11", "10.0.0.12"))],
        other_nodes=["10.0.0.10"])
    assert [(g["targets"], g.get("labels")) for g in _jobs(doc)["node"]] == [
        (["10.0.0.10:9100", "10.0.0.11:9100"], {"replica": "0"}),
        (["10.0.0.12:9100"], {"replica": "1"})]


@pytest.mark.parametrize("bad", [dict(replicas=[]),
                                 dict(replicas=[monitoring.ReplicaTargets("10.0.0.1;id")]),
                                 dict(replicas=[monitoring.ReplicaTargets("10.0.0.1", ("x",))]),
                                 dict(head_addr="10.0.0.1", router="0.0.0.0:29000;x"),
                                 dict(head_addr="10.0.0.1", port=True)])
def test_a_replica_set_that_is_not_one_is_refused(bad):
    with pytest.raises(ValueError, match="no replica|not an IPv4|out of range|listen address"):
        monitoring.prometheus_config(**{"port": 11025, **bad})


def test_replica_targets_map_slurm_names_to_cluster_addresses():
    nodes = [{"name": "m", "addr": "10.0.0.10"}, {"name": "c1", "addr": "10.0.0.11"},
             {"name": "c2", "addr": "10.0.0.12"}, {"name": "c3", "addr": "10.0.0.13"}]
    reps, others = metrics_services.replica_targets(
        [("10.0.0.10", ["m", "c1"]), ("10.0.0.12", ["c2", "ghost"])], nodes)
    assert reps == [monitoring.ReplicaTargets("10.0.0.10", ("10.0.0.10", "10.0.0.11")),
                    monitoring.ReplicaTargets("10.0.0.12", ("10.0.0.12",))]
    assert others == ["10.0.0.13"]  # in no job (or a name Slurm and the API spell apart)
    text = metrics_services.prometheus_yaml([("10.0.0.10", ["m", "c1"])], 11025, nodes, True,
                                            "127.0.0.1:29000")
    assert "credentials_file: key" in text and "replica: '0'" in text and "vllm-router" in text


class _Recorder:
    """Answers the exporters' one SSH command as every node's `srun` step would: `up`."""

    round_trips = connects = 0

    def __init__(self):
        self.scripts = []

    def connect(self):
        return self

    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False

    def run(self, script, **kw):
        self.scripts.append(script)
        nodes = [line.split("== kimi-k3 node ", 1)[1].split("'")[0]
                 for line in script.splitlines() if "== kimi-k3 node " in line]
        out = "".join(f"== kimi-k3 node {n}\nup node-exporter /usr/bin/x\nup npu-exporter /usr/bin/y\n"
                      for n in nodes)
        return type("Res", (), {"stdout": out, "stderr": "", "code": 0})()


@pytest.mark.parametrize("change, again", [({}, ["kk3n3"]), ({"restartS": 5}, ["kk3n1", "kk3n2", "kk3n3"])])
def test_a_grow_installs_the_exporters_on_the_new_nodes_only(monkeypatch, change, again):
    """4 -> 5 nodes while serving: the nodes the service's exclusive job holds already run
    their exporters; an `srun -w` there would wait 120 s each and report them down. Only the
    new node gets a step (a changed restart delay: every node again); the report keeps every
    node's state."""
    prov = metrics_services.NodeExportersProvider()
    rec = _Recorder()
    monkeypatch.setattr(prov.__class__, "runner", lambda self, p: rec)
    two = [{"name": "kk3n1", "addr": "10.0.0.1"}, {"name": "kk3n2", "addr": "10.0.0.2"}]
    olds = prov.create({"sshHost": "h", "nodes": two}).outs
    assert sorted(olds["exporters"]) == ["kk3n1", "kk3n2"]
    rec.scripts.clear()
    news = {"sshHost": "h", "nodes": two + [{"name": "kk3n3", "addr": "10.0.0.3"}], **change}
    outs = prov.update("x", olds, news).outs
    ran = [n for n in ("kk3n1", "kk3n2", "kk3n3") if f"-w {n} " in "".join(rec.scripts)]
    assert ran == again
    assert sorted(outs["exporters"]) == ["kk3n1", "kk3n2", "kk3n3"]
    assert all(v.startswith("up") for node in outs["exporters"].values() for v in node.values())


def test_a_node_whose_exporter_was_not_up_or_moved_is_installed_again(monkeypatch):
    prov = metrics_services.NodeExportersProvider()
    rec = _Recorder()
    monkeypatch.setattr(prov.__class__, "runner", lambda self, p: rec)
    nodes = [{"name": "kk3n1", "addr": "10.0.0.1"}, {"name": "kk3n2", "addr": "10.0.0.2"}]
    olds = {**prov.inputs({"sshHost": "h", "nodes": nodes}),
            "exporters": {"kk3n1": {"node-exporter": "up: /x", "npu-exporter": "missing: /y"},
                          "kk3n2": {"node-exporter": "up: /x", "npu-exporter": "up: /y"}}}
    news = {"sshHost": "h", "nodes": [nodes[0], {"name": "kk3n2", "addr": "10.0.0.9"}]}
    prov.update("x", olds, news)
    assert "-w kk3n1 " in rec.scripts[0] and "-w kk3n2 " in rec.scripts[0]



# --- who the services run as (components/systemd/units.py, monitoring.RunAs) -----------------

def test_prometheus_and_the_node_exporter_run_as_their_own_user_npu_exporter_as_hwmindx():
    prom = monitoring.prometheus_service("/etc/p/prometheus.yml", "/var/lib/p",
                                         key_files=["/etc/p/key"])
    assert prom.run_as.user == monitoring.METRICS_USER and prom.run_as.create
    assert prom.owns_dirs == ("/var/lib/p",) and prom.owns_files == ("/etc/p/key",)
    assert monitoring.node_exporter_service("10.0.0.5").run_as.user == monitoring.METRICS_USER
    npu = monitoring.npu_exporter_service("10.0.0.5")
    assert (npu.run_as.user, npu.run_as.create) == ("hwMindX", False)
    unit = monitoring.systemd_unit(prom, "/usr/bin/true")
    assert "User=kimi-k3-metrics\nGroup=kimi-k3-metrics\nNoNewPrivileges=yes" in unit
    assert "User=" not in monitoring.systemd_unit(prom, "/usr/bin/true", user="root")


@pytest.mark.parametrize("user", ["root;id", "a b", "$(id)", "x\ny", "", "-o"])
def test_a_user_that_is_not_a_user_name_is_refused(user):
    from components.systemd import units

    with pytest.raises(ValueError, match="is not a user name"):
        units.unit("x", ["/usr/bin/true"], user=user)
    with pytest.raises(ValueError, match="is not a user name"):
        monitoring.RunAs(user)


def test_the_shared_renderer_is_the_routers_and_the_metrics_units():
    """One renderer: the router's units (DynamicUser) and the metrics units come from
    components/systemd/units.py; a line break in any value is refused."""
    from components.router import host
    from components.systemd import units

    r = host.unit("d", "/opt/r", ["/usr/bin/python3", "-m", "x"], 2, bind_low_port=True)
    assert r == units.unit("d", ["/usr/bin/python3", "-m", "x"], user=units.DYNAMIC,
                           environment="PYTHONPATH=/opt/r/site PYTHONUNBUFFERED=1",
                           working_directory="/opt/r", bind_low_port=True,
                           rendered_by="components/router/host.py")
    assert "DynamicUser=yes\nAmbientCapabilities=CAP_NET_BIND_SERVICE\n" in r
    with pytest.raises(ValueError, match="line break"):
        units.unit("d\nExecStartPre=/bin/sh -c id", ["/usr/bin/true"])


@pytest.mark.parametrize("user_exists, create, want", [
    (True, False, "hwMindX"), (False, False, "root"), (False, True, "kk3-test-user")])
def test_the_install_script_runs_as_the_user_or_says_why_root(tmp_path, user_exists, create,
                                                                want):
    """The run-as part of the install script, in bash with `id`, `useradd`, `setpriv` and
    `chown` replaced by recorders on PATH (no user is created on this machine)."""
    import os

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "id").write_text("#!/bin/sh\ncase \"$1\" in -u) [ -n \"$2\" ] && exit %d; "
                                "echo 0;; -un) echo root;; esac\n" % (0 if user_exists else 1))
    (bin_dir / "useradd").write_text(f"#!/bin/sh\necho \"$@\" > {tmp_path}/useradd\n")
    (bin_dir / "setpriv").write_text("#!/bin/sh\n")
    (bin_dir / "chown").write_text(f"#!/bin/sh\necho \"$@\" >> {tmp_path}/chown\n")
    for f in bin_dir.iterdir():
        f.chmod(0o755)
    run_as = monitoring.RunAs("hwMindX" if not create else "kk3-test-user", "why not", create)
    svc = monitoring.Service("x", "x", ("/usr/bin/true",), (), "127.0.0.1:1", run_as,
                             owns_dirs=(str(tmp_path / "data"),))
    script = "mode=supervise\n" + "\n".join(monitoring._run_as_block(svc)) + \
        '\necho "$as|$note"\n'
    out = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=30,
                         env={**os.environ, "PATH": f"{bin_dir}:/usr/bin:/bin"})
    as_, note = out.stdout.strip().split("|")
    assert as_ == want, out
    assert (note == "why not") is (not user_exists and not create)
    assert (tmp_path / "useradd").exists() is (create and not user_exists)
    assert (tmp_path / "data").is_dir()
    assert (tmp_path / "chown").exists() is (want != "root")  # the data dir given to the user


def test_the_install_script_runs_twice_in_the_runners_strict_mode(tmp_path):
    """SshRunner runs every script under `set -euo pipefail`: a second run, where the loop
    supervisor's file is unchanged (`put` answers 1), must not stop the script there."""
    script = monitoring.install_script([], state_dir=str(tmp_path / "state"),
                                       unit_dir=str(tmp_path / "units"))
    for _ in range(2):
        done = subprocess.run(["bash", "-c", "set -euo pipefail; " + script], capture_output=True,
                              text=True, timeout=30)
        assert done.returncode == 0 and "mode " in done.stdout, done
    if "mode supervise" in done.stdout:  # no systemd here: the one loop is in the state dir
        assert (tmp_path / "state" / "supervise.sh").read_text().startswith("#!/bin/bash")
