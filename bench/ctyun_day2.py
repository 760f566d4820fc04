"""Day-two figures for ctyun-hcc (issue 19) on the local sshd + 4-node Slurm and the CTyun
emulator.

Run as root with the local services up (`.ci/services/start.sh`): `python
bench/ctyun_day2.py [--only resize|shrink|recovery|reboot|destroy|unreachable|gone]`. Prints:
- resize downtime: grow 3 -> 4 nodes and shrink 4 -> 3 while the service runs, as the steps do
  it (NVMe and broadcast on the new node only; the service stopped first where a step needs its
  nodes; the shrink through the program's HccShrink step, E-HPC's node calls answered by
  tests/ehpc_nodes_double.py; resubmitted), from the first stop to the first good answer (the
  service's `downtimeS`), with both broadcast methods for the grow (`--only shrink`: the
  shrink alone);
- time to recovery after a node failure: one node's slurmd killed while the job runs and
  started again 90 s later; from the kill to the endpoint answering again, with the moments in
  between (node DOWN, job requeued, endpoint down, job running again) (`--only recovery`);
- the same after a node reboot (`--only reboot`): every process of the node TERMed as a
  shutdown does (the job's task first: srun.sh then waits for Slurm's own requeue), KILLed 2 s
  later, slurmd started again 90 s after;
- destroy with the master unreachable: every SSH-backed resource's delete, then the cluster's
  (emulator), with the master's SSH port refused and with it black-holed (connect timeout);
  the wall time, the deletes that raised, and what the emulator still bills;
- `up` with the master unreachable (`--only unreachable`): the time a resize (HccCluster's
  probe) and an SSH step take to stop with their one line, refused and black-holed, and the
  E-HPC calls the resize made before stopping (none may order or remove);
- a cluster deleted outside Pulumi (`--only gone`, emulator): the time `pulumi up` takes to
  stop with its one line and the calls it made, then `pulumi refresh` + `pulumi up` to the new
  cluster (orders placed).
Apptainer, vLLM and CTyun's tools are the doubles (vLLM starts in KK3_VLLM_STARTUP_S, 1 s), so
the times measure orchestration and Slurm's own delays, not weight loading.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from components.ctyun_hcc.bootstrap import (  # noqa: E402
    BroadcastProvider, HostKeyPinProvider, MasterInQueueProvider, ModelWeightsProvider,
    NvmeMountProvider, SifImageProvider)
from components.ctyun_hcc.acceptance import AcceptanceGateProvider  # noqa: E402
from components.ctyun_hcc.cluster_check import ClusterCheckProvider  # noqa: E402
from components.ctyun_hcc.metrics_services import (  # noqa: E402
    MasterPrometheusProvider, NodeExportersProvider)
from components.ctyun_hcc.router_service import RouterServiceProvider  # noqa: E402
from components.ctyun_hcc.tls_step import TlsProxyProvider  # noqa: E402
from components.ctyun_hcc.scripts import render_bcast_sh, render_mount_nvme_sh  # noqa: E402
from components.ctyun_hcc.service import SlurmServiceProvider  # noqa: E402
from components.ctyun_hcc.slurm_jobs import job  # noqa: E402
from tests.integration.day2_env import node_state, start_slurmd, stop_slurmd  # noqa: E402
from tests.integration.slurm_env import (  # noqa: E402
    services_env, default_plan_spec, ensure_master_in_queue, host_key, layout_for, prepare,
    ssh_props)

OWNER = "kimi-k3/bench-day2"


def sh(cmd: str) -> str:
    return subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, check=True).stdout


def health(url: str) -> bool:
    import requests
    try:
        return requests.get(url, timeout=2).status_code == 200
    except requests.RequestException:
        return False


def steps(env, base: Path, nodes, method: str):
    p, spec = default_plan_spec(len(nodes))
    lay = layout_for(base, disks=())
    for d in (lay.sif_dir, lay.model_dir):  # what ModelWeights and SifImage leave
        Path(d).mkdir(parents=True, exist_ok=True)
        (Path(d) / "config.json").write_text("{}")
    (base / "fstab").write_text("")
    common = ssh_props(env, hostKey=host_key(env), workDir=lay.work_dir, partition="batch",
                       nodes=list(nodes), ownerTag=OWNER, pollIntervalS=1, stopTimeoutS=60)
    nvme = {**common, "script": render_mount_nvme_sh(lay), "fstab": str(base / "fstab")}
    bcast = {**common, "script": render_bcast_sh(p, spec, lay), "sourceHost": "kk3n0",
             "contentKey": "v1", "method": method, "timeoutS": 300}
    return (nvme, NvmeMountProvider().create(nvme).outs), \
        (bcast, BroadcastProvider().create(bcast).outs)


def service(env, base: Path, nodes: int):
    return {**prepare(env, base, nodes=nodes), "ownerTag": OWNER, "pollIntervalS": 1}


def grow(env, method: str) -> float:
    base = Path(env["KK3_CI_DIR"]) / "bench" / uuid.uuid4().hex[:8]
    base.mkdir(parents=True)
    sh("scontrol update PartitionName=batch Nodes=kk3n[0-2]")
    prov = SlurmServiceProvider()
    out = new = None
    try:
        (nvme, nvme_out), (bcast, bcast_out) = steps(env, base, ["kk3n0", "kk3n1", "kk3n2"],
                                                     method)
        props3 = service(env, base, 3)
        sh("scontrol update PartitionName=batch Nodes=kk3n[0-2]")
        out = prov.create(props3).outs
        sh("scontrol update PartitionName=batch Nodes=kk3n[0-3]")
        grown = ["kk3n0", "kk3n1", "kk3n2", "kk3n3"]
        NvmeMountProvider().update("x", nvme_out, {**nvme, "nodes": grown})
        BroadcastProvider().update("x", bcast_out, {**bcast, "nodes": grown})
        props4 = service(env, base, 4)
        prov.delete("x", out)
        new = prov.create(props4).outs
        return float(new["downtimeS"])
    finally:
        for o in (new, out):
            if o:
                prov.delete("x", o)


def shrink(env) -> float:
    """4 -> 3 through the program's HccShrink step (shrink_step.py): drain kk3n3, stop the
    service, E-HPC's shrink (the node double takes kk3n3 out of the partition), then the
    service's replacement on 3 nodes."""
    from components.ctyun_hcc import provider_runtime as rt
    from components.ctyun_hcc.cluster_provider import node_view
    from components.ctyun_hcc.shrink_step import HccShrinkProvider
    from tests.ehpc_nodes_double import EhpcNodesDouble

    base = Path(env["KK3_CI_DIR"]) / "bench" / uuid.uuid4().hex[:8]
    base.mkdir(parents=True)
    prov = SlurmServiceProvider()
    out = new = None
    ehpc = EhpcNodesDouble([(f"kk3n{i}", f"10.77.0.1{i}") for i in range(4)],
                           on_shrink=lambda names: sh(
                               "scontrol update PartitionName=batch Nodes=kk3n[0-2]"))
    real_ehpc, rt.ehpc = rt.ehpc, lambda p: ehpc
    try:
        ensure_master_in_queue(env)
        sh("scontrol update PartitionName=batch Nodes=kk3n[0-3]")
        (nvme, nvme_out), (bcast, bcast_out) = steps(env, base, ["kk3n0", "kk3n1", "kk3n2",
                                                                 "kk3n3"], "copy")
        props4 = service(env, base, 4)
        out = prov.create(props4).outs
        HccShrinkProvider().update("x", {}, {
            **ssh_props(env, hostKey=host_key(env)), "regionID": "cn-bench", "azName": "az1",
            "clusterUUID": ehpc.cluster.uuid, "clusterName": ehpc.cluster.name,
            "computeNodeCount": 2, "clusterNodes": [node_view(n) for n in ehpc.nodes],
            "serviceJobNames": ["kimi-k3"], "ownerTag": OWNER, "workDir": props4["workDir"],
            "pollIntervalS": 1, "updateTimeoutS": 300, "lostAnswerWaitS": 1})
        shrunk = ["kk3n0", "kk3n1", "kk3n2"]
        NvmeMountProvider().update("x", nvme_out, {**nvme, "nodes": shrunk})
        BroadcastProvider().update("x", bcast_out, {**bcast, "nodes": shrunk})
        props3 = service(env, base, 3)
        sh("scontrol update PartitionName=batch Nodes=kk3n[0-2]")
        prov.delete("x", out)
        new = prov.create(props3).outs
        return float(new["downtimeS"])
    finally:
        rt.ehpc = real_ehpc
        for o in (new, out):
            if o:
                prov.delete("x", o)
        sh("scontrol update NodeName=kk3n3 State=RESUME || true")
        ensure_master_in_queue(env)
        sh("scontrol update PartitionName=batch Nodes=kk3n[0-3]")


def _reboot_node(node: str) -> None:
    """What a node's shutdown does to its processes: TERM to all, KILL to what is left 2 s on."""
    import signal

    def pids():
        return [int(p) for p in subprocess.run(["ip", "netns", "pids", node], capture_output=True,
                                               text=True, check=True).stdout.split()]
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        time.sleep(2)


def recovery(env, down_s: float = 90.0, reboot: bool = False) -> None:
    base = Path(env["KK3_CI_DIR"]) / "bench" / uuid.uuid4().hex[:8]
    base.mkdir(parents=True)
    ensure_master_in_queue(env)
    prov = SlurmServiceProvider()
    props = service(env, base, 4)
    out = prov.create(props).outs
    url = "http://10.77.0.10:11025/health"
    marks = {}
    try:
        t0 = time.monotonic()
        if reboot:
            _reboot_node("kk3n2")
        else:
            stop_slurmd(env, "kk3n2")
        restarted = False
        while time.monotonic() - t0 < 900:
            now = time.monotonic() - t0
            state = node_state("kk3n2")[0]
            info = prov._run(lambda r, p: job(r, out["jobId"]), props)
            up = health(url)
            if state.startswith("down") and "node down" not in marks:
                marks["node down"] = now
            if info.restarts >= 1 and "job requeued" not in marks:
                marks["job requeued"] = now
            if not up and "endpoint down" not in marks:
                marks["endpoint down"] = now
            if not restarted and now >= down_s:
                start_slurmd(env, "kk3n2")
                restarted, marks["slurmd started again"] = True, now
            if restarted and info.restarts >= 1 and info.state == "RUNNING" and \
                    "job running again" not in marks:
                marks["job running again"] = now
            if up and "endpoint down" in marks:
                marks["endpoint answers again"] = now
                break
            time.sleep(1)
        what = ("kk3n2 rebooted (its processes TERMed, then KILLed)" if reboot
                else "slurmd of kk3n2 killed")
        print(f"== time to recovery after a node failure ({what} at 0 s, slurmd "
              f"started again at {down_s:.0f} s) ==")
        for what, at in sorted(marks.items(), key=lambda kv: kv[1]):
            print(f"  {at:6.0f} s  {what}")
        cfg = sh("scontrol show config | grep -E 'SlurmdTimeout|ReturnToService|AuthInfo'")
        print("  (" + "; ".join(" ".join(ln.split()) for ln in cfg.splitlines()) +
              "; cred_expire 120 s unless AuthInfo sets it)")
    finally:
        if not Path(f"/proc/{Path(env['KK3_CI_DIR'], 'run', 'slurmd.kk3n2.pid').read_text().strip()}").exists():
            start_slurmd(env, "kk3n2")
        prov.delete("x", out)


@contextlib.contextmanager
def emulator():
    from tests.emulators.ctyun.harness import EmulatorProcess
    emu = EmulatorProcess(job_seconds=0.08).start()
    old = {k: os.environ.get(k) for k in emu.env()}
    os.environ.update(emu.env())
    try:
        yield emu
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        emu.stop()


#: an unused address on the test bridge whose packets go to a MAC nobody has: dropped silently,
#: so a connection times out as towards a master behind a security group that drops SSH
BLACK_HOLE = "10.77.0.250"


@contextlib.contextmanager
def black_hole():
    subprocess.run(["ip", "neigh", "replace", BLACK_HOLE, "lladdr", "02:00:00:00:0b:0e", "dev",
                    "kk3br0", "nud", "permanent"], check=True)
    try:
        yield
    finally:
        subprocess.run(["ip", "neigh", "del", BLACK_HOLE, "dev", "kk3br0"], check=False)


def closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def destroy(env) -> None:
    """The SSH-backed resources' deletes in reverse order (the state a real `up` leaves), then
    the cluster's, with the master unreachable two ways."""
    from tests.integration.ctyun_stack import Stack

    for label, where in (("SSH port refused", {"sshHost": "127.0.0.1", "sshPort": closed_port()}),
                         ("SSH black-holed (connect timeout 20 s)",
                          {"sshHost": BLACK_HOLE, "sshPort": 22, "connectTimeoutS": 20})):
        with emulator() as emu, black_hole():
            stack = Stack()
            stack.up()
            master = {**ssh_props(env), **where, "hostKey": host_key(env)}
            state = [  # reverse order of target.py's chain, as `pulumi destroy` walks it
                (AcceptanceGateProvider(), {**master, "endpoint": "http://10.9.9.9:11025/v1",
                                            "jobId": "77", "node0Addr": "10.9.9.9"}),
                (RouterServiceProvider(), master), (TlsProxyProvider(), master),
                (MasterPrometheusProvider(), master), (NodeExportersProvider(), master),
                (SlurmServiceProvider(), {**master, "jobId": "77", "nodes": ["a", "b"],
                                          "watchdogSh": "x"}),
                (BroadcastProvider(), {**master, "jobId": "76"}),
                (SifImageProvider(), master), (ModelWeightsProvider(), master),
                (NvmeMountProvider(), {**master, "nodes": ["a", "b"]}),
                (MasterInQueueProvider(), {**master, "nodeName": "a"}),
                (ClusterCheckProvider(), master),
                (HostKeyPinProvider(), {**master, "loginKey": "k", "loginPublicKey": "ssh-ed25519 "
                                        "AAAA kimi-k3", "passwordLoginState": "off"}),
            ]
            raised = []
            t0 = time.monotonic()
            for prov, props in state:
                try:
                    prov.delete("x", props)
                except Exception as e:  # noqa: BLE001 (what would stop `pulumi destroy`)
                    raised.append(f"{type(prov).__name__}: {type(e).__name__}")
            ssh_s = time.monotonic() - t0
            stack.destroy()
            wall = time.monotonic() - t0
            report = emu.report()
            print(f"== destroy with the master unreachable ({label}) ==")
            print(f"  SSH-backed deletes {ssh_s:.1f} s, then the cluster's: {wall:.1f} s in all")
            print(f"  deletes that raised (each would stop `pulumi destroy` before the cluster): "
                  f"{raised or 'none'}")
            print(f"  left billed in the emulator: {report['leakedTotal']} "
                  f"{report['leakedItems'] or ''}")


def unreachable_up(env) -> None:
    """`pulumi up` with the master unreachable: the resize's probe (HccCluster.update against
    the emulator's cluster) and an SSH step's create, refused and black-holed."""
    from components.ctyun_hcc.cluster_provider import HccClusterProvider
    from components.ctyun_hcc.reach import MasterUnreachable
    from tests.integration.ctyun_stack import Stack

    print("== pulumi up with the master unreachable: time to the one-line error ==")
    for label, host, port in (("SSH port refused", "127.0.0.1", closed_port()),
                              ("SSH black-holed", BLACK_HOLE, 22)):
        with emulator() as emu, black_hole():
            stack = Stack()
            stack.up()
            cid, olds = stack.state["cluster"]
            news = {**olds, "computeNodeCount": int(olds["computeNodeCount"]) + 1,
                    "masterPublicIP": host, "masterProbe": {"host": host, "port": port,
                                                            "bastion": ""}}
            before = emu.calls()
            t0 = time.monotonic()
            try:
                HccClusterProvider().update(cid, {**olds, "masterPublicIP": host}, news)
                line = "no error (the probe did not stop it)"
            except MasterUnreachable as e:
                line = str(e)
            resize_s = time.monotonic() - t0
            calls = {k: n - before.get(k, 0) for k, n in emu.calls().items()
                     if n != before.get(k, 0)}
            t0 = time.monotonic()
            try:
                NvmeMountProvider().create({**ssh_props(env), "sshHost": host, "sshPort": port,
                                            "connectTimeoutS": 20, "nodes": ["a"],
                                            "script": "true", "partition": "batch"})
                step = "no error"
            except MasterUnreachable as e:
                step = type(e).__name__
            step_s = time.monotonic() - t0
            stack.destroy()
            print(f"  {label}: resize stopped in {resize_s:.1f} s (E-HPC calls before it: "
                  f"{calls or 'none'}); an SSH step (NvmeMount) in {step_s:.1f} s ({step})")
            print(f"    {line[:160]}...")


def gone() -> None:
    """A cluster deleted in the console: `pulumi up` (diff), then refresh + up."""
    from components.ctyun_hcc.cluster_ops import ClusterGone
    from tests.integration.ctyun_stack import Stack
    from tests.integration.test_ctyun_cluster_gone import delete_in_console

    print("== a cluster deleted outside Pulumi (console / end of its billing period) ==")
    with emulator() as emu:
        stack = Stack()
        out = stack.up()
        delete_in_console(out)
        before = emu.calls()
        t0 = time.monotonic()
        try:
            stack.up(kimi={"nodes": "5"})
            said = "no error"
        except ClusterGone as e:
            said = str(e)
        up_s = time.monotonic() - t0
        calls = sum(n - before.get(k, 0) for k, n in emu.calls().items())
        t0 = time.monotonic()
        stack.refresh()
        dropped = sorted({"order", "cluster"} - set(stack.state))
        new = stack.up()
        again_s = time.monotonic() - t0
        orders = [o for o in emu.report()["orders"] if o["api"] == "hpc/create-cluster"]
        stack.destroy()
        print(f"  pulumi up (a resize asked): stopped in {up_s:.2f} s after {calls} read(s): "
              f"{said[:120]}...")
        print(f"  pulumi refresh dropped {dropped}; pulumi up ordered {len(orders) - 1} new "
              f"cluster ({new['clusterUUID']}) in {again_s:.1f} s (emulator jobs 0.08 s); "
              f"left billed after destroy: {emu.report()['leakedTotal']}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", choices=("resize", "shrink", "recovery", "reboot", "destroy",
                                       "unreachable", "gone"))
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("run as root (it starts sshd and Slurm in network namespaces)")
    if args.only == "gone":  # the emulator alone
        return gone()
    if args.only not in ("destroy", "unreachable"):  # these need no live service, only files
        subprocess.run(["bash", str(ROOT / ".ci/services/start.sh")], check=True,
                       stdout=subprocess.DEVNULL)
    env = services_env()
    os.environ["SLURM_CONF"] = env["SLURM_CONF"]
    if args.only in (None, "resize", "shrink"):
        print("== resize while serving: downtime, first stop to the first good answer ==")
    if args.only in (None, "resize"):
        print(f"  grow 3 -> 4, seed's MPI broadcast (needs the serving master): "
              f"{grow(env, 'cthpc_model_bcast'):.1f} s")
        print(f"  grow 3 -> 4, copies from the master (the new node only):     "
              f"{grow(env, 'copy'):.1f} s")
    if args.only in (None, "resize", "shrink"):
        print(f"  shrink 4 -> 3, the program's HccShrink step (drain, stop, remove, resubmit): "
              f"{shrink(env):.1f} s")
    if args.only in (None, "recovery"):
        recovery(env)
    if args.only in (None, "reboot"):
        recovery(env, reboot=True)
    if args.only in (None, "destroy"):
        destroy(env)
    if args.only in (None, "unreachable"):
        unreachable_up(env)
    if args.only is None:
        gone()


if __name__ == "__main__":
    main()
