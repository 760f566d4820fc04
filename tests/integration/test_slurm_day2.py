"""Day two on the real local sshd + 4-node Slurm (issue 19): a teardown that never stops on an
unreachable master or a down node, recovery from a node failure without a human, a plain
`pulumi up` that notices a dead service, resizing while serving, the network preflight, node
names read from the nodes, and the fallbacks of the seed (cthpc -> ModelScope / the ZOS URL,
cthpc_model_bcast -> copies). Apptainer, vLLM and CTyun's tools are the doubles of
tests/doubles; everything else (sshd, Slurm, srun, TCP between the node namespaces) is real.

Runs on the local services (`./run test` starts them). The figures these tests
measure (downtime, time to recovery) are printed by bench/ctyun_day2.py, not asserted here.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest
import requests

from components.ctyun_hcc.bootstrap import (
    BroadcastProvider,
    MasterInQueueProvider,
    ModelWeightsProvider,
    NvmeMountProvider,
    SifImageProvider,
)
from components.ctyun_hcc.service import SlurmServiceProvider, endpoint_host
from components.ctyun_hcc.ssh_resource import STATS
from tests.integration.day2_env import node_state, start_slurmd, wait_until
from tests.child_signals import default_signals
from tests.integration.slurm_env import (
    ensure_master_in_queue,
    host_key,
    instances,
    no_leftovers,
    prepare,
    sh,
    squeue_names,
    ssh_props,
)

OWNER = "kimi-k3/test-day2"
#: the pause between the broadcast and the replacement in the grow test (downtime counted from the first stop)
GAP_S = 3.0


def _closed_port() -> int:
    """A local TCP port nobody listens on (connections are refused at once)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


# --- teardown ---------------------------------------------------------------------------------

def test_steps_that_hold_nothing_delete_without_connecting(services):
    """Issue 19 item 4: with the master's SSH port unreachable, five steps' delete used to raise
    ConnectionRefusedError; their delete does nothing, so they no longer connect at all."""
    dead = ssh_props(services, sshPort=_closed_port(), hostKey=host_key(services))
    for cls in (MasterInQueueProvider, NvmeMountProvider, ModelWeightsProvider,
                SifImageProvider, BroadcastProvider):
        connects, ops = STATS["connects"], STATS["ops"]
        cls().delete("x", {**dead, "jobId": "123", "nodes": ["kk3n1"]})
        assert (STATS["connects"], STATS["ops"]) == (connects, ops), cls.__name__
    # the hostile side: a step that holds something still connects (and reports the failure,
    # in one line naming the master: components/ctyun_hcc/reach.py)
    from components.ctyun_hcc.reach import MasterUnreachable
    with pytest.raises(MasterUnreachable, match="ConnectionRefusedError"):
        MasterInQueueProvider()._run(lambda r, p: r.run("true"), {**dead, "nodeName": "x"})


def test_service_delete_with_the_master_unreachable_warns_and_lets_destroy_go_on(
        services, caplog):
    props = {**ssh_props(services, sshPort=_closed_port(), hostKey=host_key(services)),
             "jobId": "4242", "jobName": "kimi-k3", "partition": "batch", "workDir": "/x"}
    started = time.monotonic()
    with caplog.at_level(logging.WARNING):
        SlurmServiceProvider().delete("x", props)
    assert time.monotonic() - started < 15
    assert "Slurm job 4242 not stopped" in caplog.text and "ConnectionRefusedError" in caplog.text
    assert "It ends when the cluster is deleted" in caplog.text and "scancel 4242" in caplog.text


def test_service_delete_with_a_drained_node_stops_what_it_can_and_names_the_node(
        services, workspace, caplog):
    """One srun over every node used to fail the whole delete when one node was down or
    drained; now the job is cancelled, the instance stopped where a step can run, and the
    node that could not be checked is named."""
    prov = SlurmServiceProvider()
    props = {**prepare(services, workspace), "ownerTag": OWNER}
    out = prov.create(props).outs
    try:
        sh("scontrol update NodeName=kk3n3 State=DRAIN Reason=kk3-test-drained")
        with caplog.at_level(logging.WARNING):
            prov.delete("x", out)
        assert out["jobId"] not in squeue_names().split()
        assert "kk3n3 (drained" in caplog.text and f"kimi-k3-{out['jobId']}" in caplog.text
        # the node.sh trap stopped the instances on scancel; nothing left where it could look
        assert all(not v for h, v in instances(services).items() if h != "kk3n3")
    finally:
        sh("scontrol update NodeName=kk3n3 State=RESUME", check=False)
        sh(f"scancel {out['jobId']}", check=False)
    no_leftovers(services)


# --- recovery ---------------------------------------------------------------------------------

def _health(url: str) -> bool:
    try:
        return requests.get(url, timeout=2).status_code == 200
    except requests.RequestException:
        return False


def _reboot(node: str) -> None:
    """What a node's shutdown does: TERM to every process of the node (the job's task first
    sees it, slurmd stops), KILL to what is left a second later."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in subprocess.run(["ip", "netns", "pids", node], capture_output=True, text=True,
                                  check=True).stdout.split():
            try:
                os.kill(int(pid), sig)
            except ProcessLookupError:
                pass
        time.sleep(1)


def test_a_node_that_reboots_is_recovered_without_a_human_and_a_second_up_changes_nothing(
        services, workspace):
    """Issue 19 item 5: kk3n2 reboots (every process TERMed, then KILLed; slurmd back once
    Slurm set the node DOWN). The task's TERM ends the step first; srun.sh used to end then and
    the job ended FAILED (found with this test); now it waits, Slurm sets the node DOWN and
    requeues the job (--requeue: PENDING, Restarts=1), it starts again by itself once the node
    is back (after cred_expire) and the endpoint answers. The job id is the same, so the second
    `pulumi up` (no --refresh) finds it running and changes nothing. The requeued run appends
    to the job's log (the first run's lines stay) and the endpoint is the new run's line. (A
    slurmd that only crashes, its tasks running on, ends the same way: Slurm's own requeue.)"""
    prov = SlurmServiceProvider()
    props = {**prepare(services, workspace), "ownerTag": OWNER}
    out = prov.create(props).outs
    job_id, health = out["jobId"], "http://10.77.0.10:11025/health"
    try:
        assert _health(health)
        _reboot("kk3n2")
        try:
            wait_until(lambda: node_state("kk3n2")[0].startswith("down"), 240, "kk3n2 DOWN")
            assert node_state("kk3n2")[1].startswith("Not responding")
            info = wait_until(lambda: (lambda i: i if i.restarts >= 1 else None)(
                _job(services, props, job_id)), 60, "the job to be requeued")
            assert info.state in ("PENDING", "REQUEUED", "COMPLETING", "CONFIGURING",
                                  "RUNNING")
        finally:
            start_slurmd(services, "kk3n2")
        wait_until(lambda: _health(health), 420, "the endpoint to answer again", 1)
        info = _job(services, props, job_id)
        assert info.state == "RUNNING" and info.restarts >= 1
        assert sorted(info.nodes) == ["kk3n0", "kk3n1", "kk3n2", "kk3n3"]
        # the requeued run appended to the job's logs (--open-mode=append): the first run's
        # lines, and why it ended, are still there, before the new run's
        logs = Path(props["workDir"]) / "logs"
        lines = [ln for ln in (logs / f"job_{job_id}.out").read_text().splitlines()
                 if ln.startswith("endpoint: ")]
        assert [ln.split(" run: ")[1].split()[0] for ln in lines] == \
            [str(n) for n in range(info.restarts + 1)], lines
        assert "for Slurm to requeue it" in (logs / f"job_{job_id}.err").read_text()
        # the endpoint is read from the LAST line, and only as the current run's
        read = lambda run: SlurmServiceProvider()._run(  # noqa: E731
            lambda r, p: endpoint_host(r, p["workDir"], job_id, run), props)
        assert read(info.restarts) == "10.77.0.10" and read(info.restarts - 1) is None
        # a plain `pulumi up`: the job in the state runs, nothing to do
        d = prov.diff("x", out, props)
        assert not d.changes
    finally:
        prov.delete("x", out)
    no_leftovers(services)


def _job(services, props, job_id):
    from components.ctyun_hcc.slurm_jobs import job
    return SlurmServiceProvider()._run(lambda r, p: job(r, job_id), props)


def test_a_plain_up_notices_a_dead_service_and_submits_it_again(services, workspace):
    """`pulumi up` without --refresh: diff asks Slurm about the job in the state; a job that
    is gone (cancelled by hand here) is a change, and the update submits a new one."""
    prov = SlurmServiceProvider()
    props = {**prepare(services, workspace), "ownerTag": OWNER}
    out = prov.create(props).outs
    new = None
    try:
        assert not prov.diff("x", out, props).changes  # alive: nothing to do
        sh(f"scancel {out['jobId']}")
        wait_until(lambda: out["jobId"] not in squeue_names().split(), 60, "the job to end")
        d = prov.diff("x", out, props)
        assert d.changes and not d.replaces
        new = prov.update("x", out, props).outs
        assert new["jobId"] != out["jobId"] and new["jobId"] in squeue_names().split()
        assert _health("http://10.77.0.10:11025/health")
        # the master unreachable: nothing concluded, no change, no error
        dead = {**new, "sshPort": _closed_port()}
        assert not prov.diff("x", dead, {**props, "sshPort": dead["sshPort"]}).changes
    finally:
        prov.delete("x", new or out)
    no_leftovers(services)


def test_the_watchdog_resumes_nodes_slurm_downed_for_a_reboot_and_nothing_else(
        services, workspace):
    """ReturnToService=1 leaves a node that rebooted DOWN ("Node unexpectedly rebooted"); the
    watchdog returns it once its slurmd answers. A node DOWN for another reason (an operator's
    maintenance) stays DOWN. (The test cluster runs ReturnToService=2, which would return both
    on the next registration: `--once` is checked right after the node is set DOWN.)"""
    from components.ctyun_hcc.health_scripts import render_watchdog_sh
    from tests.integration.slurm_env import layout_for

    script = workspace / "watchdog.sh"
    script.write_text(render_watchdog_sh(layout_for(workspace, partition="all")))
    try:
        sh("scontrol update NodeName=kk3n3 State=DOWN Reason='Node unexpectedly rebooted'")
        sh("scontrol update NodeName=kk3n2 State=DOWN Reason='maintenance by the operator'")
        out = sh(f"bash {script} --once").stdout
        assert "resumed kk3n3 (was DOWN: Node unexpectedly rebooted)" in out
        assert "kk3n2" not in out
        assert node_state("kk3n3")[0] in ("idle", "idle*", "mixed", "allocated")
        assert node_state("kk3n2")[0].startswith("down")
    finally:
        sh("scontrol update NodeName=kk3n2,kk3n3 State=RESUME", check=False)


def _watchdog_group(pid: int) -> list:
    """The live (not zombie) processes of the watchdog's process group `pid`: the loop itself
    and the `sleep` it waits on."""
    alive = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # ended while we looked
        if fields[0] != "Z" and int(fields[2]) == pid:
            alive.append(int(stat.parent.name))
    return alive


def test_the_service_starts_the_watchdog_and_its_delete_stops_it_and_waits(services, workspace):
    """The update restarts the watchdog and the delete stops it; both return only once the old
    loop and the `sleep` it waits on have ended (no wait here: a stop that only signals leaves
    the orphaned `sleep`, or a loop that could still resume a node of a cluster being deleted)."""
    prov = SlurmServiceProvider()
    props = {**prepare(services, workspace), "ownerTag": OWNER}
    out = prov.create(props).outs
    pidfile = Path(props["workDir"], "logs", "kimi-k3-watchdog.pid")
    try:
        pid = int(pidfile.read_text())
        assert "watchdog.sh" in Path(f"/proc/{pid}/cmdline").read_text()
        wait_until(lambda: len(_watchdog_group(pid)) >= 2, 10, "the watchdog's sleep")
        # `pulumi up` again (an update): restarted, one watchdog, not two
        prov.update("x", out, {**props, "pollIntervalS": 2})
        pid2 = int(pidfile.read_text())
        assert pid2 != pid and _watchdog_group(pid) == []
        assert pid2 in _watchdog_group(pid2)
    finally:
        prov.delete("x", out)
    assert not pidfile.exists()
    assert _watchdog_group(pid2) == []
    no_leftovers(services)


# --- resize while serving -----------------------------------------------------------------------

def _bootstrapped(services, workspace, nodes, method="cthpc_model_bcast"):
    """NvmeMount and Broadcast as target.py declares them (no disks to format here), on
    `nodes`, with the master kk3n0 as the broadcast's source; their props and outputs."""
    from components.ctyun_hcc.scripts import render_bcast_sh, render_mount_nvme_sh
    from tests.integration.slurm_env import default_plan_spec, layout_for

    p, spec = default_plan_spec(len(nodes))
    lay = layout_for(workspace, disks=())
    for d in (lay.sif_dir, lay.model_dir):  # what ModelWeights and SifImage leave
        Path(d).mkdir(parents=True, exist_ok=True)
        (Path(d) / "config.json").write_text("{}")
    common = ssh_props(services, hostKey=host_key(services), workDir=lay.work_dir,
                       partition="batch", nodes=list(nodes), ownerTag=OWNER, pollIntervalS=0.25,
                       stopTimeoutS=60)
    nvme = {**common, "script": render_mount_nvme_sh(lay), "fstab": str(workspace / "fstab")}
    (workspace / "fstab").write_text("")
    bcast = {**common, "script": render_bcast_sh(p, spec, lay), "sourceHost": "kk3n0",
             "contentKey": "v1", "method": method, "timeoutS": 120}
    return (nvme, NvmeMountProvider().create(nvme).outs), (bcast, BroadcastProvider().create(bcast).outs)


def _bcast_hosts(services, since):
    from tests.integration.slurm_env import doubles_calls
    return sorted({c["host"] for c in doubles_calls(services, "cthpc_model_bcast")[since:]})


def test_grow_by_one_while_serving_touches_only_the_new_node_and_reports_the_downtime(
        services, workspace, caplog):
    """Issue 19 item 3: 3 -> 4 nodes. The NVMe step runs on the new node only (the serving
    nodes are never asked for, so nothing waits behind the exclusive job); the broadcast goes to
    the new node only, and since the seed's MPI broadcast needs its source (the master, which
    serves) the service is stopped first; the service is then replaced with 4 nodes and its
    create reports the downtime from that stop."""
    from tests.integration.slurm_env import doubles_calls

    sh("scontrol update PartitionName=batch Nodes=kk3n[0-2]")
    prov = SlurmServiceProvider()
    out = new = None
    try:
        (nvme, nvme_out), (bcast, bcast_out) = _bootstrapped(services, workspace,
                                                             ["kk3n0", "kk3n1", "kk3n2"])
        props3 = {**prepare(services, workspace, nodes=3), "ownerTag": OWNER}
        sh("scontrol update PartitionName=batch Nodes=kk3n[0-2]")  # prepare joins kk3n0 again
        out = prov.create(props3).outs
        assert sorted(out["nodes"]) == ["kk3n0", "kk3n1", "kk3n2"] and out["downtimeS"] is None

        sh("scontrol update PartitionName=batch Nodes=kk3n[0-3]")  # E-HPC added kk3n3
        grown = ["kk3n0", "kk3n1", "kk3n2", "kk3n3"]
        mounted = NvmeMountProvider().update("x", nvme_out, {**nvme, "nodes": grown}).outs
        assert [r.split(":")[0] for r in mounted["report"]] == ["kk3n3"]
        assert mounted["mounted"] == grown
        assert out["jobId"] in squeue_names().split()  # still serving: nothing waited on it

        before = len(doubles_calls(services, "cthpc_model_bcast"))
        stopped_at = time.monotonic()
        with caplog.at_level(logging.WARNING):
            sent = BroadcastProvider().update("x", bcast_out, {**bcast, "nodes": grown}).outs
        assert sent["copied"] == ["kk3n3"] and sent["holding"] == grown
        assert _bcast_hosts(services, before) == ["kk3n0", "kk3n3"]  # source + the new node
        assert f"stopping the service (Slurm job {out['jobId']}) for the broadcast" in caplog.text
        # the service was stopped before the broadcast returned; the gap below is downtime only
        # if it is counted from that stop (a count from the replacement would leave it out)
        bcast_done = time.monotonic()
        time.sleep(GAP_S)

        props4 = {**prepare(services, workspace, nodes=4), "ownerTag": OWNER}
        assert prov.diff("x", out, props4).replaces  # a new DP size: a new job
        replaced_at = time.monotonic()
        prov.delete("x", out)
        new = prov.create(props4).outs
        ready_at = time.monotonic()
        assert sorted(new["nodes"]) == grown
        # from the first stop (the broadcast's), not the replacement's: the mark is kept
        assert ready_at - replaced_at + GAP_S <= ready_at - bcast_done < new["downtimeS"] \
            <= ready_at - stopped_at + 1
        assert "the service was down for" in caplog.text and "stopped for the broadcast" in \
            caplog.text
        # the next `pulumi up` with the grown config changes nothing: no step runs again
        for p_, olds, news in ((prov, new, props4), (NvmeMountProvider(), mounted,
                                                     {**nvme, "nodes": grown}),
                               (BroadcastProvider(), sent, {**bcast, "nodes": grown})):
            d = p_.diff("x", olds, news)
            assert not d.changes and not d.replaces, type(p_).__name__
    finally:
        for o in (new, out):
            if o:
                prov.delete("x", o)
        ensure_master_in_queue(services)
        sh("scontrol update PartitionName=batch Nodes=kk3n[0-3]")
    no_leftovers(services)


def test_shrink_by_one_stops_the_service_first_and_removes_an_idle_node(
        services, workspace, caplog, monkeypatch):
    """4 -> 3 nodes through the program's HccShrink step (shrink_step.py) while the service
    runs: over the real sshd it drains kk3n3, stops this stack's job (marked), and only then
    calls E-HPC's shrink (the node double: tests/ehpc_nodes_double.py, which takes kk3n3 out
    of the partition as E-HPC does). At that call the job is gone and kk3n3 is drained with
    nothing on it; the steps have nothing to do; the service comes back on the 3 nodes left and
    reports the downtime, in its output and in progress."""
    from components.ctyun_hcc import provider_runtime as rt
    from components.ctyun_hcc.cluster_provider import node_view
    from components.ctyun_hcc.shrink_step import HccShrinkProvider
    from components.progress.record import read_records
    from tests.ehpc_nodes_double import EhpcNodesDouble

    prov = SlurmServiceProvider()
    progress = str(workspace / "progress.jsonl")
    out = new = None
    seen_at_shrink = {}

    def e_hpc_removes(names):  # what E-HPC's shrink does to Slurm, and what it finds there
        seen_at_shrink.update(jobs=squeue_names(), states={n: node_state(n)[0] for n in names})
        sh("scontrol update PartitionName=batch Nodes=kk3n[0-2]")

    ehpc = EhpcNodesDouble([(f"kk3n{i}", f"10.77.0.1{i}") for i in range(4)],
                           on_shrink=e_hpc_removes)
    monkeypatch.setattr(rt, "ehpc", lambda p: ehpc)
    try:
        (nvme, nvme_out), (bcast, bcast_out) = _bootstrapped(
            services, workspace, ["kk3n0", "kk3n1", "kk3n2", "kk3n3"], method="copy")
        props4 = {**prepare(services, workspace, nodes=4), "ownerTag": OWNER,
                  "progressFile": progress}
        out = prov.create(props4).outs
        assert sorted(out["nodes"]) == ["kk3n0", "kk3n1", "kk3n2", "kk3n3"]
        step = {**ssh_props(services, hostKey=host_key(services)), "regionID": "cn-test",
                "azName": "az1", "clusterUUID": ehpc.cluster.uuid,
                "clusterName": ehpc.cluster.name, "computeNodeCount": 2,
                "clusterNodes": [node_view(n) for n in ehpc.nodes],
                "serviceJobNames": ["kimi-k3"], "ownerTag": OWNER, "workDir": props4["workDir"],
                "pollIntervalS": 0.5, "updateTimeoutS": 120, "lostAnswerWaitS": 1,
                "progressFile": progress}
        with caplog.at_level(logging.WARNING):
            shrunk_out = HccShrinkProvider().update("x", {}, step).outs
        # the order: the service stopped and the node drained and idle before E-HPC's call
        assert shrunk_out["stoppedJobs"] == [out["jobId"]] and shrunk_out["removed"] == ["kk3n3"]
        assert out["jobId"] not in seen_at_shrink["jobs"].split()
        assert seen_at_shrink["states"] == {"kk3n3": "drained"}
        assert [c for c in ehpc.calls if c.startswith("shrink")] == ["shrink_cluster kk3n3"]
        assert [n["name"] for n in shrunk_out["nodes"]] == ["kk3n0", "kk3n1", "kk3n2"]
        shrunk = ["kk3n0", "kk3n1", "kk3n2"]
        nvme_shrunk = NvmeMountProvider().update("x", nvme_out, {**nvme, "nodes": shrunk}).outs
        bcast_shrunk = BroadcastProvider().update("x", bcast_out, {**bcast, "nodes": shrunk}).outs
        assert nvme_shrunk["report"] == [] and bcast_shrunk["copied"] == []
        props3 = {**prepare(services, workspace, nodes=3), "ownerTag": OWNER,
                  "progressFile": progress}
        sh("scontrol update PartitionName=batch Nodes=kk3n[0-2]")  # prepare joins kk3n0 again
        assert prov.diff("x", out, props3).replaces  # the node count: a new job
        seen = len(caplog.text)
        with caplog.at_level(logging.WARNING):
            prov.delete("x", out)
        # kk3n3 went with this stack's own shrink (recorded on the master): not named as a
        # node the delete could not check
        assert "not in the partition" not in caplog.text[seen:], caplog.text[seen:]
        new = prov.create(props3).outs
        assert sorted(new["nodes"]) == shrunk
        assert new["downtimeS"] is not None and new["downtimeS"] > 0
        assert "stopped for the shrink" in caplog.text
        details = [(r["phase"], r.get("detail") or "") for r in read_records(progress)]
        assert any(ph == "ehpc-shrink" and f"service stopped (Slurm job {out['jobId']})" in d
                   for ph, d in details)
        assert any(f"serving again after {new['downtimeS']} s down (stopped for the shrink"
                   in d for _, d in details)
        # the next `pulumi up` with the shrunk config changes nothing: no step runs again
        for p_, olds, news in ((prov, new, props3),
                               (NvmeMountProvider(), nvme_shrunk, {**nvme, "nodes": shrunk}),
                               (BroadcastProvider(), bcast_shrunk, {**bcast, "nodes": shrunk})):
            d = p_.diff("x", olds, news)
            assert not d.changes and not d.replaces, type(p_).__name__
    finally:
        for o in (new, out):
            if o:
                prov.delete("x", o)
        sh("scontrol update NodeName=kk3n3 State=RESUME", check=False)
        ensure_master_in_queue(services)
        sh("scontrol update PartitionName=batch Nodes=kk3n[0-3]")
    no_leftovers(services)


def test_replicas_two_to_one_the_shrink_stops_the_removed_replicas_job(services, workspace):
    """replicas 2 -> 1: the program declares only replica 0's job name, and replica 1's
    service is deleted by Pulumi at the end of the update, after the shrink. Its job runs on
    the leaving node: the shrink stops it (this stack's owner comment, the `<job>-r1` name)
    instead of waiting for "someone else's" job until its deadline, and leaves replica 0's
    job, which holds no leaving node, running. On the real Slurm, submitted over the real
    sshd as the step's user."""
    from components.ctyun_hcc.resize import stop_for_shrink

    ensure_master_in_queue(services)
    props = ssh_props(services, hostKey=host_key(services))
    ids = {}
    try:
        with SlurmServiceProvider().runner(props) as runner:
            for name, nodes in (("kimi-k3", "kk3n0,kk3n1"), ("kimi-k3-r1", "kk3n2,kk3n3")):
                ids[name] = runner.run(
                    f"sbatch --parsable -p batch -J {name} -N 2 -w {nodes} -o /dev/null "
                    f"--comment kk3:{OWNER}:fp --wrap 'sleep 600'").stdout.strip().split(";")[0]
            wait_until(lambda: squeue_names().count("RUNNING") >= 2, 30, "both jobs running")
            stopped = stop_for_shrink(runner, {
                "serviceJobNames": ["kimi-k3"], "ownerTag": OWNER, "workDir": str(workspace),
                "sshUser": props["sshUser"]}, ["kk3n3"], time.monotonic() + 20, 0.5)
        assert stopped == [ids["kimi-k3-r1"]]
        running = squeue_names()
        assert f"{ids['kimi-k3']} kimi-k3 RUNNING" in running
        assert ids["kimi-k3-r1"] not in running.split()
        assert not (workspace / "replica-1").exists()  # no mark for a removed replica
    finally:
        sh(f"scancel {' '.join(ids.values()) or '0'}", check=False)
        sh("scontrol update NodeName=kk3n3 State=RESUME", check=False)


# --- preflight: can the nodes talk? ------------------------------------------------------------

def test_preflight_names_the_node_and_port_that_are_blocked(services, workspace):
    """kk3n2 cannot reach the head kk3n0 (a route that refuses, in kk3n2's own namespace, as a
    security group dropping traffic between members would): nothing is submitted, and the
    error names the node, the head and each port."""
    from components.ctyun_hcc.slurm_jobs import JobFailed

    props = {**prepare(services, workspace), "ownerTag": OWNER}
    sh("nsenter --net=/run/netns/kk3n2 ip route add unreachable 10.77.0.10/32")
    try:
        with pytest.raises(JobFailed) as err:
            SlurmServiceProvider().create(props)
    finally:
        sh("nsenter --net=/run/netns/kk3n2 ip route del unreachable 10.77.0.10/32", check=False)
    msg = str(err.value)
    assert "network preflight failed before submitting the service" in msg
    assert "kk3n2 -> kk3n0 (10.77.0.10) TCP 13389 (vLLM data-parallel RPC): No route to host" \
        in msg
    assert "kk3n2 -> kk3n0 (10.77.0.10) TCP 16818 (slurmd)" in msg
    assert "kk3n1 ->" not in msg and "kk3n3 ->" not in msg  # only the blocked pair is named
    assert "a security-group rule whose source is the group itself" in msg
    assert "kimi-k3 " not in squeue_names()


def test_preflight_names_a_port_already_taken_on_the_head(services, workspace):
    from components.ctyun_hcc.slurm_jobs import JobFailed

    props = {**prepare(services, workspace), "ownerTag": OWNER}
    # another program holding the model port on the head (as a server does: SO_REUSEADDR, so
    # the last test's TIME_WAIT connections on that port do not stop it)
    squatter = subprocess.Popen(
        ["nsenter", "--net=/run/netns/kk3n0", "python3", "-c",
         "import socket, time; s = socket.socket(); "
         "s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); "
         "s.bind(('0.0.0.0', 11025)); s.listen(); print('up', flush=True); time.sleep(120)"],
        stdout=subprocess.PIPE, text=True)
    out = None
    try:
        assert squatter.stdout.readline().strip() == "up"
        with pytest.raises(JobFailed, match=r"kk3n0: TCP 11025 \(the model endpoint\) cannot be "
                                            r"opened on the head: Address already in use"):
            out = SlurmServiceProvider().create(props).outs
    finally:
        squatter.kill()
        squatter.wait()
        if out:
            SlurmServiceProvider().delete("x", out)
    assert "kimi-k3 " not in squeue_names()
    assert not Path(props["workDir"], "logs", "kimi-k3-watchdog.pid").exists()  # never started


# --- node names read from the nodes, and what the master carries --------------------------------

API_NODES = [{"name": "kk3n0", "inner_ip": "10.77.0.10", "role": "master"},
             {"name": "kk3n1", "inner_ip": "10.77.0.11", "role": "compute"},
             {"name": "kk3n2", "inner_ip": "10.77.0.12", "role": "compute"},
             {"name": "kk3n3", "inner_ip": "10.77.0.13", "role": "compute"}]


def _check_props(services, **kw):
    return ssh_props(services, hostKey=host_key(services), nodes=API_NODES,
                     masterInCompute=True, launcherConf=services["KK3_LAUNCHER_CONF"], **kw)


def test_cluster_check_reads_the_names_from_the_nodes_and_refuses_a_mismatch(services):
    from components.ctyun_hcc.cluster_check import ClusterCheckFailed, ClusterCheckProvider

    out = ClusterCheckProvider().create(_check_props(services)).outs
    assert out["masterName"] == "kk3n0" and out["nodeNames"] == ["kk3n1", "kk3n2", "kk3n3"]
    assert out["fallbacks"] == [] and "apptainer" in out["tools"]
    renamed = [dict(n) for n in API_NODES]
    renamed[2]["name"] = "a3compute0002"
    renamed[3]["inner_ip"] = "10.77.0.99"
    with pytest.raises(ClusterCheckFailed) as err:
        ClusterCheckProvider().create({**_check_props(services), "nodes": renamed})
    assert "compute at 10.77.0.12: the API calls it 'a3compute0002', the node is 'kk3n2'" in \
        str(err.value)
    assert "compute 'kk3n3' (10.77.0.99) from the API: no Slurm node has that address" in \
        str(err.value)


def test_cluster_check_refuses_a_router_python_too_old_for_the_pinned_router(services, tmp_path):
    """Several replicas: the router's python is asked over SSH by the check (the master's real
    /usr/bin/python3 passes; one that answers like 3.7, below both pinned closures, is refused
    by name)."""
    from components.ctyun_hcc.cluster_check import ClusterCheckFailed, ClusterCheckProvider

    out = ClusterCheckProvider().create(_check_props(services, routerPython="/usr/bin/python3")).outs
    assert out["masterName"] == "kk3n0"
    old = tmp_path / "python3.7"
    old.write_text("#!/bin/sh\nexec /usr/bin/python3 -c 'import sys; sys.exit(1)'\n")
    old.chmod(0o755)
    with pytest.raises(ClusterCheckFailed) as err:
        ClusterCheckProvider().create(_check_props(services, routerPython=str(old)))
    assert f"missing Python 3.8 or later as {old}" in str(err.value)


def test_cluster_check_names_everything_the_edition_lacks_in_one_error(services):
    """A master without CTyun's tools (PATH without the doubles): apptainer and launcher are
    named with the console edition and the key that avoids the launcher; cthpc and
    cthpc_model_bcast are not errors, they have fallbacks."""
    from components.ctyun_hcc.cluster_check import ClusterCheckFailed, ClusterCheckProvider
    from tests.integration.day2_env import no_doubles_path

    bare = _check_props(services, remoteEnv={"PATH": no_doubles_path()})
    with pytest.raises(ClusterCheckFailed) as err:
        ClusterCheckProvider().create(bare)
    msg = str(err.value)
    assert "missing apptainer, which runs the SIF image: choose the console edition 大模型精简版" \
        in msg
    assert "missing launcher (puts the master into the queue)" in msg
    assert "ctyun:masterInCompute=false" in msg
    assert "cthpc" not in msg  # a fallback, not an error
    out = ClusterCheckProvider().observe(
        ClusterCheckProvider().runner(ClusterCheckProvider().inputs(bare)).connect(),
        ClusterCheckProvider().inputs(bare))
    assert any("ModelScope instead" in f for f in out["fallbacks"])
    assert any("parallel copies from the master" in f for f in out["fallbacks"])


# --- the seed's fallbacks -----------------------------------------------------------------------

def test_weights_fall_back_to_modelscope_in_its_own_venv_when_cthpc_is_missing(
        services, workspace, caplog):
    from tests.doubles.modelscope_double import build_wheel
    from tests.integration.day2_env import no_doubles_path

    wheel = build_wheel(workspace)
    env = {"PATH": no_doubles_path(), "PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    props = ssh_props(services, hostKey=host_key(services), source="cthpc",
                      modelName="Kimi-K3-w4a8", modelRoot=str(workspace / "model"),
                      modelscopePip=str(wheel), pipIndexUrl="",
                      modelscopeVenv=str(workspace / "venv"), remoteEnv=env)
    with caplog.at_level(logging.WARNING):
        out = ModelWeightsProvider().create(props).outs
    assert out["via"] == "modelscope" and out["installed"] and out["files"] == 6
    assert "cthpc is not on the master" in caplog.text and "modelscope download" in caplog.text
    assert (workspace / "venv" / ".kk3-complete").exists()
    again = ModelWeightsProvider().create(props).outs
    assert again["via"] == "present" and not again["installed"]
    # -> a clear error when the fallback fails too
    with pytest.raises(RuntimeError, match="cthpc was not usable on the master; the ModelScope "
                                           "download failed.*not exists"):
        ModelWeightsProvider().create({**props, "repo": "someone/else",
                                       "modelName": "Other"})


def test_sif_falls_back_to_the_https_url_and_checks_its_sha256(services, workspace, caplog):
    import hashlib

    from tests.integration.day2_env import https_server, no_doubles_path

    served = workspace / "www"
    served.mkdir()
    sif = b"#!/usr/bin/env run-singularity\n".ljust(32, b"\n") + b"SIF_MAGIC\0" + b"\2" * 9000
    (served / "vllm-ascend_kimi-k3-a3.sif").write_bytes(sif)
    target = workspace / "sif"
    with https_server(served, workspace / "tls") as (base, wgetrc):
        props = ssh_props(services, hostKey=host_key(services), source="cthpc",
                          sifDir=str(target), url=f"{base}/vllm-ascend_kimi-k3-a3.sif",
                          sha256="0" * 64,
                          remoteEnv={"PATH": no_doubles_path(), "WGETRC": str(wgetrc)})
        with pytest.raises(Exception, match="sha256 of .* is [0-9a-f]{64}, not 0{64}"):
            SifImageProvider().create(props)
        assert not list(target.glob("*.sif")) and not list(target.glob("*.part"))
        with caplog.at_level(logging.WARNING):
            out = SifImageProvider().create({**props,
                                             "sha256": hashlib.sha256(sif).hexdigest()}).outs
    assert out["via"] == "url" and out["bytes"] == len(sif)
    assert "cthpc is not on the master" in caplog.text
    # never over plain http: refused before anything runs
    trips = STATS["round_trips"]
    with pytest.raises(ValueError, match="is not an https:// URL"):
        SifImageProvider().create({**props, "url": "http://127.0.0.1/x.sif"})
    assert STATS["round_trips"] == trips


def test_broadcast_falls_back_to_copies_when_cthpc_model_bcast_is_missing(
        services, workspace, caplog):
    from tests.integration.day2_env import no_doubles_path

    import dataclasses

    from components.ctyun_hcc.scripts import SlurmLayout, render_bcast_sh
    from tests.integration.slurm_env import default_plan_spec, layout_for

    assert not Path("/etc/profile.d/modules.sh").exists()  # as on a master without modules
    ensure_master_in_queue(services)
    p, spec = default_plan_spec()
    lay = dataclasses.replace(layout_for(workspace, disks=()),
                              bcast_modules=SlurmLayout().bcast_modules)
    for d in (lay.sif_dir, lay.model_dir):
        Path(d).mkdir(parents=True, exist_ok=True)
        (Path(d) / "f.bin").write_bytes(b"x" * 4096)
    props = ssh_props(services, hostKey=host_key(services), workDir=lay.work_dir,
                      script=render_bcast_sh(p, spec, lay), sourceHost="kk3n0",
                      nodes=["kk3n0", "kk3n1", "kk3n2", "kk3n3"], contentKey="v1",
                      remoteEnv={"PATH": no_doubles_path()}, timeoutS=120, pollIntervalS=0.25)
    with caplog.at_level(logging.WARNING):
        out = BroadcastProvider().create(props).outs
    assert out["methodUsed"] == "copy" and out["copied"] == ["kk3n1", "kk3n2", "kk3n3"]
    assert "cthpc_model_bcast is not on the master" in caplog.text
    assert "modules.sh not found" in caplog.text  # the module lines warn, never skip silently
    log = Path(lay.work_dir, "logs", "bcast_copy.out").read_text()
    assert "kk3n2: " + lay.model_dir + " is the source's own storage; nothing to copy" in log


def test_the_copy_moves_a_tree_to_a_node_over_tcp_and_checks_its_size(services, workspace):
    """bcast.sh --copy with a destination the node does not share with the source: the tree
    really crosses from the master to kk3n2's namespace over TCP, byte for byte."""
    import hashlib

    from components.ctyun_hcc.scripts import render_bcast_sh
    from tests.integration.slurm_env import default_plan_spec, layout_for

    ensure_master_in_queue(services)
    p, spec = default_plan_spec()
    lay = layout_for(workspace, disks=())
    Path(lay.work_dir).mkdir(parents=True)
    script = Path(lay.work_dir, "bcast.sh")
    script.write_text(render_bcast_sh(p, spec, lay))
    script.chmod(0o755)  # as the Broadcast step uploads it
    src, dst = workspace / "src", workspace / "dst"
    (src / "sub").mkdir(parents=True)
    (src / "big.bin").write_bytes(bytes(range(256)) * 40000)
    (src / "sub" / "a.json").write_text('{"a": 1}')
    res = sh(f"bash {script} --copy {src} {dst} kk3n2", check=False)
    assert res.returncode == 0, res.stdout + res.stderr
    assert f"copied {src} to kk3n2" in res.stdout
    for f in ("big.bin", "sub/a.json"):
        assert hashlib.sha256((dst / f).read_bytes()).digest() == \
            hashlib.sha256((src / f).read_bytes()).digest()
    # hostile: a destination that then differs is named with both sizes
    (dst / "extra").write_text("left over")
    res = sh(f"bash {script} --copy {src} {dst} kk3n2", check=False)
    assert res.returncode == 1
    assert f"broadcast of {src} incomplete: source has" in res.stderr and "kk3n2=" in res.stderr


# --- password login off once the stack's key works ----------------------------------------------

def _auth_methods(env, user: str) -> set:
    """The authentication methods the running sshd offers `user` (RFC 4252 section 5.2: the
    answer to a "none" request lists the methods that may continue)."""
    import paramiko
    end = time.monotonic() + 10
    while True:  # sshd re-executes itself on SIGHUP: its port is closed for a moment
        try:
            t = paramiko.Transport((env["KK3_SSH_HOST"], int(env["KK3_SSH_PORT"])))
            break
        except paramiko.SSHException:
            if time.monotonic() > end:
                raise
            time.sleep(0.05)
    try:
        t.start_client(timeout=10)
        try:
            t.auth_none(user)
        except paramiko.BadAuthenticationType as e:
            return set(e.allowed_types)
        return {"none"}
    finally:
        t.close()


def test_password_login_is_off_once_the_stacks_key_works_and_back_on_after_destroy(services):
    """E-HPC's root password opens the master for first contact only: HostKeyPin has sshd
    refuse the SSH user's password once the stack's key logs in (checked: the key still works,
    the running sshd no longer offers `password` to that user, other users keep it), `keep`
    takes the block out again, and delete puts sshd's config back as it was. As on E-HPC the
    SSH user is root (the one user that may change sshd's config and reload it); the test's
    root takes no password (PermitRootLogin prohibit-password), so the change is seen in the
    methods sshd offers, not in a password being refused."""
    from components.ctyun_hcc.bootstrap import HostKeyPinProvider

    conf = Path(services["KK3_CI_DIR"]) / "ssh" / "sshd_config"
    before = conf.read_text()
    user = services["KK3_SSH_USER"]
    props = ssh_props(services, passwordLogin="off", sshdConfig=str(conf),
                      sshPassword="not-root-s-password",  # exercises the must-be-refused check
                      loginKeyComment="kimi-k3:test/password-off")
    assert "password" in _auth_methods(services, user)
    prov = HostKeyPinProvider()
    created = prov.create(props)
    try:
        assert created.outs["passwordLoginState"] == "off"
        assert f"Match User {user}\n    PasswordAuthentication no\n" in conf.read_text()
        assert "password" not in _auth_methods(services, user)
        assert "password" in _auth_methods(services, services["KK3_SSH_PASSWORD_USER"])
        assert prov.read(created.id, created.outs).outs["passwordLoginState"] == "off"
        # again: the block is there once, not twice
        again = prov.update(created.id, created.outs, props).outs
        assert again["passwordLoginState"] == "off"
        assert conf.read_text().count(f"Match User {user}") == 1
        # `keep` on the next up takes the block out again
        kept = prov.update(created.id, again, {**props, "passwordLogin": "keep"}).outs
        assert kept["passwordLoginState"] == "on" and conf.read_text() == before
        assert "password" in _auth_methods(services, user)
        off = prov.update(created.id, kept, props).outs
        assert off["passwordLoginState"] == "off"
    finally:
        prov.delete(created.id, {**created.outs, "passwordLoginState": "off"})
    assert conf.read_text() == before
    assert "password" in _auth_methods(services, user)  # as E-HPC left it


def test_a_password_still_accepted_after_the_change_is_an_error(services, workspace):
    """The block is written to a config the running sshd does not read (a decoy, valid for
    `sshd -t`, whose PidFile names a process of the password user, so the "reload" succeeds):
    the check that a password login is refused catches it (the claim "off" is never made
    unverified). The hostile variant before it: the decoy names the real sshd's PidFile, which
    the password user may not signal: the step fails naming the kill, nothing claimed."""
    import pwd
    from components.ctyun_hcc.bootstrap import HostKeyPinProvider
    from components.ctyun_hcc.ssh import CommandFailed
    from tests.integration.slurm_env import password_props

    real = Path(services["KK3_CI_DIR"]) / "ssh" / "sshd_config"
    before = real.read_text()
    pw = pwd.getpwnam(services["KK3_SSH_PASSWORD_USER"])
    own = workspace / "decoy"  # a directory the password user may write (cp -p, the backup)
    own.mkdir()
    key, pidfile, decoy = own / "host_ed25519", own / "sshd.pid", own / "sshd_config"
    sh(f"ssh-keygen -q -t ed25519 -N '' -f {key}")
    stand_in = subprocess.Popen(["sleep", "120"], user=pw.pw_uid, group=pw.pw_gid,
                                preexec_fn=default_signals)
    pidfile.write_text(f"{stand_in.pid}\n")

    def write_decoy(pid_line: str) -> None:
        decoy.write_text("".join(
            f"HostKey {key}\n" if ln.startswith("HostKey ") else
            pid_line if ln.startswith("PidFile ") else ln
            for ln in before.splitlines(keepends=True)))
        for path in (own, key, decoy, pidfile):
            os.chown(path, pw.pw_uid, pw.pw_gid)

    keys = Path(pw.pw_dir) / ".ssh" / "authorized_keys"
    props = password_props(services, passwordLogin="off", sshdConfig=str(decoy),
                           loginKeyComment="kimi-k3:test/password-decoy")
    try:
        write_decoy(next(ln for ln in before.splitlines(keepends=True)
                         if ln.startswith("PidFile ")))
        with pytest.raises(CommandFailed, match="Operation not permitted"):
            HostKeyPinProvider().create(props)
        write_decoy(f"PidFile {pidfile}\n")
        with pytest.raises(RuntimeError, match="still accepts kk3pw's password"):
            HostKeyPinProvider().create(props)
        assert "Match User kk3pw" in decoy.read_text()  # written where sshd does not look
        assert stand_in.wait(timeout=10) == -1  # the stand-in got the SIGHUP
    finally:  # the creates failed, so no state: take the installed key lines out by hand
        stand_in.kill()
        keys.write_text("".join(ln for ln in keys.read_text().splitlines(keepends=True)
                                if "kimi-k3:test/password-decoy" not in ln))
    assert real.read_text() == before
