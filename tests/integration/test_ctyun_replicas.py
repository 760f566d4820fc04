"""Two replicas on the real local 4-node Slurm (2 nodes each), the pip-installed vllm-router and
kimi-k3's front on the master in front of them, and the acceptance gate through the router and
against each replica (vLLM and Apptainer are the test doubles of tests/doubles/bin).

What the program declares for `kimi-k3:replicas=2` (target.py, replicas.py), driven here
provider by provider: each replica its own Slurm job (own job name, work directory, network preflight and
resume watchdog) with
its head on the replica port, the two jobs on disjoint nodes covering the partition, the router
(RouterService) with each job's node-0 address, the gate (AcceptanceGate) with one SSH forward
per replica for greedy_replicas; then everything stopped, nothing left.
"""

import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from components.ctyun_hcc.acceptance import AcceptanceGateProvider
from components.ctyun_hcc.replicas import replica_layouts
from components.ctyun_hcc.resize import ServiceJobs, stop_service_for
from components.ctyun_hcc.router_service import RouterServiceProvider
from components.ctyun_hcc.scripts import render_all
from components.ctyun_hcc.service import SlurmServiceProvider, fingerprint
from components.inference.launch import Runtime, launch
from components.inference.planner import PlanRequest, plan
from components.router.host import worker_url
from tests.doubles.router_rig import free_port
from tests.integration.slurm_env import (IMAGE, clear_faults, ensure_master_in_queue, host_key,
                                         layout_for, no_leftovers, squeue_names, ssh_props)

REPLICA_PORT = 11026  # kimi-k3:port 11025 + 1 (replicas.py)


def _replica_props(services, lay, p, spec):
    files = render_all(p, spec, lay)
    return ssh_props(
        services, hostKey=host_key(services), workDir=lay.work_dir, jobName=lay.job_name,
        partition="batch", srunSh=files["srun.sh"], nodeSh=files["node.sh"],
        checkSh=files["check.sh"], preflightSh=files["preflight.sh"],
        watchdogSh=files["watchdog.sh"], rpcPort=spec.rpc_port, preflightWaitS=10,
        launchFingerprint=fingerprint(spec.to_dict()),
        devicesPerNode=p.devices_per_node, nodeCount=spec.nodes, port=spec.port,
        servedModelName=spec.served_model_name, headHost="kk3n0", publicHost="127.0.0.1",
        publicInnerIp="10.77.0.10", startupTimeoutS=90, pollIntervalS=0.25, cancelTimeoutS=60,
        ownerTag="kimi-k3/replicas-test")


def test_two_replicas_behind_the_router_pass_the_gate(services, workspace):
    clear_faults(services)
    ensure_master_in_queue(services)
    p = plan(PlanRequest("w4a8", "atlas-800-a3", 2, max_model_len=131072))
    spec = launch(p, Runtime(image=IMAGE, port=REPLICA_PORT))
    lays = replica_layouts(layout_for(workspace), 2)
    Path(lays[0].model_dir).mkdir(parents=True)
    (Path(lays[0].model_dir) / "config.json").write_text("{}")
    Path(lays[0].sif_dir).mkdir(parents=True)
    (Path(lays[0].sif_dir) / lays[0].sif_file).write_bytes(b"SIF")
    svc = SlurmServiceProvider()
    props = [_replica_props(services, lay, p, spec) for lay in lays]
    outs = []
    router, gate_out, router_props = RouterServiceProvider(), None, None
    try:
        with ThreadPoolExecutor(2) as pool:  # Pulumi creates the two services side by side
            for fut in [pool.submit(svc.create, pr) for pr in props]:
                outs.append(fut.result().outs)
        # two jobs, their own names, disjoint halves of the partition
        assert [o["jobName"] for o in outs] == ["kimi-k3", "kimi-k3-r1"]
        assert len({o["jobId"] for o in outs}) == 2
        nodes = [set(o["nodes"]) for o in outs]
        assert not nodes[0] & nodes[1] and nodes[0] | nodes[1] == {"kk3n0", "kk3n1", "kk3n2", "kk3n3"}
        assert all(Path(lay.log_dir).is_dir() for lay in lays)  # each job wrote its own dir
        # the router and its front on the master, in front of both heads
        front = free_port()
        router_props = ssh_props(
            services, hostKey=host_key(services), routerDir=str(workspace / "home" / "router"),
            workerUrls=[worker_url(o["node0Addr"], REPLICA_PORT) for o in outs], port=front,
            routerPort=free_port(), metricsPort=free_port(), python=sys.executable,
            startupTimeoutS=60, readyTimeoutS=60, pollIntervalS=0.2, restartS=0)
        router_out = router.create(router_props).outs
        assert router_out["supervisor"] == "loop"
        # the gate through the router, and each replica asked directly once
        gate_out = AcceptanceGateProvider().create(ssh_props(
            services, hostKey=host_key(services), endpoint=f"http://127.0.0.1:{front}/v1",
            node0Addr="127.0.0.1", port=front, jobId=",".join(o["jobId"] for o in outs),
            servedModelName="Kimi-K3", loadRequests=4, loadConcurrency=2, loadMaxTokens=16,
            requestTimeoutS=20, replicaAddrs=[o["node0Addr"] for o in outs],
            replicaPort=REPLICA_PORT)).outs["acceptance"]
        assert gate_out["ok"], gate_out
        assert gate_out["checks"]["greedy_replicas"] is True
        assert gate_out["via"] == "from the deployer"
        # a bootstrap step that needs the nodes (a broadcast after a grow) stops both jobs:
        # the chain names every replica's job (target.service_job_names)
        runner = SlurmServiceProvider().runner(props[0])
        with runner:
            stopped = stop_service_for(runner, ServiceJobs(
                ("kimi-k3", "kimi-k3-r1"), "kimi-k3/replicas-test", lays[0].work_dir,
                props[0]["sshUser"]),
                ["kk3n0", "kk3n1", "kk3n2", "kk3n3"], "the test", time.monotonic() + 60, 0.5)
        assert sorted(stopped) == sorted(o["jobId"] for o in outs)
        # each replica's stop is marked where its own service reads it (its next create
        # reports its downtime: service.py take_stop_mark)
        for lay, o in zip(lays, outs):
            mark = Path(lay.work_dir) / "logs" / "service-stopped"
            assert mark.read_text().split()[1] == o["jobId"], (lay.work_dir, mark)
    finally:
        if router_props is not None:
            router.delete("id", {**router_props})
        with ThreadPoolExecutor(2) as pool:  # Pulumi deletes the two services side by side
            for fut in [pool.submit(svc.delete, "id", {**pr, **o}) for o, pr in zip(outs, props)]:
                fut.result()
    for lay in lays:
        no_leftovers(services, lay.job_name)
    assert "kimi-k3" not in squeue_names()
