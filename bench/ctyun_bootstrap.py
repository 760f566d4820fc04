"""Figures for the CTyun bootstrap + Slurm service against the local sshd + 4-node Slurm.

Run as root: `python bench/ctyun_bootstrap.py` (starts .ci/services/start.sh if needed).
Prints:
- wall time of a first `pulumi up`'s bootstrap + service steps (the dynamic providers' create,
  in the order target.py declares them) and the share of it spent sleeping between polls;
- SSH round trips (commands + uploads) and connections for that first up, for a refresh
  (every step's read) and for an up with nothing changed (diff only: none);
- the fault cases, each run and retried, with their outcome.
The site tools and vLLM are the test doubles (vLLM start-up KK3_VLLM_STARTUP_S=1 s), so the
times measure our orchestration, not weight loading.
"""

from __future__ import annotations

import os
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
from components.ctyun_hcc.service import SlurmServiceProvider, fingerprint  # noqa: E402
from components.ctyun_hcc.ssh_resource import STATS  # noqa: E402
from components.ctyun_hcc.scripts import render_all  # noqa: E402
from tests.integration.slurm_env import (  # noqa: E402
    services_env, default_plan_spec, inject_fault, layout_for, ssh_props)

POLL_S = 1


def sh(cmd):
    return subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, check=True).stdout


def snapshot():
    return dict(STATS)


def delta(a, b):
    return {k: b[k] - a[k] for k in a}


def main() -> None:
    if os.geteuid() != 0:
        sys.exit("run as root (it starts sshd and Slurm in network namespaces)")
    subprocess.run(["bash", str(ROOT / ".ci/services/start.sh")], check=True,
                   stdout=subprocess.DEVNULL)
    env = services_env()
    os.environ["SLURM_CONF"] = env["SLURM_CONF"]
    sh("scontrol update PartitionName=batch Nodes=kk3n[1-3]")  # a fresh cluster: master not in
    base = Path(env["KK3_CI_DIR"]) / "bench" / uuid.uuid4().hex[:8]
    base.mkdir(parents=True)
    loops = []
    for name in ("d0", "d1"):
        img = base / f"{name}.img"
        sh(f"truncate -s 320M {img}")
        loops.append(sh(f"losetup -f --show {img}").strip())
    (base / "fstab").write_text("")
    p, spec = default_plan_spec(api_key=True)
    lay = layout_for(base, disks=((loops[0], str(base / "nvme0")), (loops[1], str(base / "nvme1"))))
    files = render_all(p, spec, lay)
    common = ssh_props(env)
    steps = []
    try:
        t0 = time.monotonic()
        s0 = snapshot()
        pin = HostKeyPinProvider().create(common).outs
        ssh = {**common, "hostKey": pin["hostKey"]}
        chain = [
            (MasterInQueueProvider(), {**ssh, "nodeName": "kk3n0", "queueName": "batch",
                                       "launcherConf": env["KK3_LAUNCHER_CONF"],
                                       "pollIntervalS": POLL_S}),
            (NvmeMountProvider(), {**ssh, "script": files["mount_nvme.sh"], "workDir": lay.work_dir,
                                   "partition": "batch", "nodes": ["kk3n0", "kk3n1", "kk3n2", "kk3n3"],
                                   "fstab": str(base / "fstab")}),
            (ModelWeightsProvider(), {**ssh, "modelRoot": str(Path(lay.model_dir).parent)}),
            (SifImageProvider(), {**ssh, "sifDir": lay.sif_dir}),
            (BroadcastProvider(), {**ssh, "script": files["bcast.sh"], "workDir": lay.work_dir,
                                   "sourceHost": env["KK3_MASTER_HOST"], "pollIntervalS": POLL_S}),
            (SlurmServiceProvider(), {**ssh, "workDir": lay.work_dir, "partition": "batch",
                                      "srunSh": files["srun.sh"], "nodeSh": files["node.sh"],
                                      "checkSh": files["check.sh"],
                                      "launchFingerprint": fingerprint(spec.to_dict()),
                                      "apiKey": "sk-bench-0001", "pollIntervalS": POLL_S,
                                      "nodeCount": spec.nodes, "headHost": "kk3n0",
                                      "startupTimeoutS": 120}),
        ]
        outs = []
        for prov, props in chain:
            a = time.monotonic()
            outs.append(prov.create(props).outs)
            steps.append((type(prov).__name__.replace("Provider", ""), time.monotonic() - a))
        wall = time.monotonic() - t0
        up = delta(s0, snapshot())

        s1 = snapshot()
        HostKeyPinProvider().read("x", pin)
        for (prov, props), out in zip(chain, outs):
            prov.read("x", {**props, **out})
        refresh = delta(s1, snapshot())
        s2 = snapshot()
        for (prov, props), out in zip(chain, outs):
            assert not prov.diff("x", {**props, **out}, props).changes
        noop = delta(s2, snapshot())

        print("== first `pulumi up` of the bootstrap + service (local 4-node Slurm) ==")
        for name, secs in [("HostKeyPin", 0.0)] + steps:
            if name != "HostKeyPin":
                print(f"  {name:<14} {secs:6.2f} s")
        print(f"  wall {wall:.2f} s; sleeping between polls {up['poll_wait_s']:.1f} s "
              f"({100 * up['poll_wait_s'] / wall:.0f}% of wall, poll interval {POLL_S} s)")
        print(f"  SSH round trips {int(up['round_trips'])} over {int(up['connects'])} connections "
              f"({int(up['ops'])} provider operations)")
        print(f"  refresh (read of every step): {int(refresh['round_trips'])} round trips; "
              f"no-change up (diff only): {int(noop['round_trips'])}")

        print("== fault cases ==")
        svc_prov, svc_props = chain[-1]
        a = time.monotonic()
        svc_prov.delete("x", {**svc_props, **outs[-1]})
        print(f"  delete service (scancel + instance sweep): {time.monotonic() - a:.2f} s, "
              f"instances left: {sh('find ' + env['KK3_DOUBLES_STATE'] + '/apptainer -name *.json | wc -l').strip()}")
        faults = [
            ("weights install drops after 2 shards", "cthpc_model_install", "2",
             ModelWeightsProvider(), {**ssh, "modelRoot": str(base / "m2")}),
            ("one node's broadcast fails", "cthpc_model_bcast", "1", BroadcastProvider(),
             chain[4][1]),
            ("launcher add_node fails", "launcher_add_node", "1", MasterInQueueProvider(),
             {**chain[0][1], "nodeName": "kk3n0"}),
        ]
        for label, fault, value, prov, props in faults:
            if fault == "launcher_add_node":
                sh("scontrol update PartitionName=batch Nodes=kk3n[1-3]")
            inject_fault(env, fault, value)
            try:
                prov.create(props)
                first = "succeeded (fault not hit!)"
            except Exception as e:  # noqa: BLE001 (we report it)
                first = f"failed: {type(e).__name__}"
            try:
                prov.create(props)
                second = "converged"
            except Exception as e:  # noqa: BLE001
                second = f"still failing: {e}"
            print(f"  {label}: first run {first}; retry {second}")
        bad = {**svc_props, "nodeSh": files["node.sh"].replace(lay.model_dir, str(base / "empty"))}
        (base / "empty").mkdir()
        try:
            svc_prov.create(bad)
            print("  job dies during start-up: NOT detected")
        except Exception as e:  # noqa: BLE001
            tail = "no config.json" in str(e)
            left = sh(f"find {env['KK3_DOUBLES_STATE']}/apptainer -name '*.json' | wc -l").strip()
            print(f"  job dies during start-up: {type(e).__name__} with log tail "
                  f"({'names the cause' if tail else 'cause missing'}); instances left: {left}")
        try:
            svc_prov.create({**svc_props, "hostKey": pin["hostKey"][:-4] + "AAAA"})
            print("  changed host key: NOT detected")
        except Exception as e:  # noqa: BLE001
            print(f"  changed host key: refused ({type(e).__name__}) before any command")
    finally:
        for d in ("nvme0", "nvme1"):
            subprocess.run(["umount", str(base / d)], capture_output=True)
        for dev in loops:
            subprocess.run(["losetup", "-d", dev], capture_output=True)


if __name__ == "__main__":
    main()
