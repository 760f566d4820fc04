"""Bootstrap steps against the real local sshd + 4-node Slurm, with the site tools as doubles.

Covers: host key pinned on first contact and a changed key refused; the master joining the
queue through `launcher` (idempotent, and converging after a failed attempt); weights whose
install fails half-way and converge on retry; the SIF image; the broadcast job (success, and a
failing node surfaced with the job's log tail); NVMe mounting that leaves a disk holding a file
system untouched (loop devices over files, never a real disk).
"""

import subprocess
from pathlib import Path

import dill
import pytest

from components.ctyun_hcc.bootstrap import (
    BroadcastProvider,
    HostKeyPinProvider,
    MasterInQueueProvider,
    ModelWeightsProvider,
    NvmeMountProvider,
    SifImageProvider,
)
from components.ctyun_hcc.slurm_jobs import JobFailed
from components.ctyun_hcc.ssh import CommandFailed, HostKeyChanged
from components.ctyun_hcc.scripts import render_bcast_sh, render_mount_nvme_sh
from tests.integration.slurm_env import (
    clear_faults,
    default_plan_spec,
    doubles_calls,
    ensure_master_in_queue,
    host_key,
    inject_fault,
    layout_for,
    password_props,
    sh,
    ssh_props,
)

OTHER_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl"


def test_providers_pickle_without_clients():
    for cls in (HostKeyPinProvider, MasterInQueueProvider, NvmeMountProvider,
                ModelWeightsProvider, SifImageProvider, BroadcastProvider):
        blob = dill.dumps(cls())
        assert b"paramiko" not in blob or b"SSHClient" not in blob
        assert isinstance(dill.loads(blob), cls)


def test_host_key_pinned_then_changed_key_refused(services):
    prov = HostKeyPinProvider()
    created = prov.create(password_props(services))
    try:
        assert created.outs["hostKey"] == host_key(services)
        # refresh with the pin: fine
        read = prov.read(created.id, created.outs)
        assert read.outs["hostKey"] == host_key(services)
        # the server now shows another key than the pin (as after a rebuild or an attack)
        with pytest.raises(HostKeyChanged, match="changed"):
            prov.read(created.id, {**created.outs, "hostKey": OTHER_KEY})
    finally:
        prov.delete(created.id, created.outs)
    # every step verifies the pin before doing anything
    with pytest.raises(HostKeyChanged):
        ModelWeightsProvider().create(ssh_props(services, hostKey=OTHER_KEY,
                                                modelRoot="/nonexistent"))


def test_master_joins_queue_idempotently_and_after_failure(services):
    sh("scontrol update PartitionName=batch Nodes=kk3n[1-3]")
    clear_faults(services)
    props = ssh_props(services, hostKey=host_key(services), nodeName="kk3n0",
                      queueName="batch", launcherConf=services["KK3_LAUNCHER_CONF"],
                      timeoutS=30, pollIntervalS=0.25)
    inject_fault(services, "launcher_add_node")
    with pytest.raises(CommandFailed, match="add_node"):
        MasterInQueueProvider().create(props)
    assert "kk3n0" not in sh("sinfo -h -N -p batch -o %N").stdout
    before = len(doubles_calls(services, "launcher"))
    out = MasterInQueueProvider().create(props).outs
    assert out["inQueue"] and out["changed"]
    assert "kk3n0" in sh("sinfo -h -N -p batch -o %N").stdout
    assert "NodeRole=server,execute" in Path(services["KK3_LAUNCHER_CONF"]).read_text()
    calls = [c["argv"][:2] for c in doubles_calls(services, "launcher")[before:]]
    assert calls == [["resource", "setup_scheduler"], ["resource", "add_node"]]
    # again: nothing to do, no launcher call
    again = MasterInQueueProvider().create(props).outs
    assert again["inQueue"] and not again["changed"]
    assert len(doubles_calls(services, "launcher")) == before + 2


def test_weights_install_fails_half_way_then_converges(services, workspace):
    clear_faults(services)
    props = ssh_props(services, hostKey=host_key(services), source="cthpc",
                      modelName="Kimi-K3-w4a8", modelRoot=str(workspace / "model"))
    inject_fault(services, "cthpc_model_install", "2")  # two shards, then the link drops
    with pytest.raises(CommandFailed, match="interrupted"):
        ModelWeightsProvider().create(props)
    shards = sorted((workspace / "model" / "Kimi-K3-w4a8").glob("*.safetensors"))
    assert len(shards) == 2  # half-way: not verified complete, so not usable
    assert ModelWeightsProvider().read("x", props).outs["bytes"] == 0
    mtimes = {s.name: s.stat().st_mtime_ns for s in shards}
    out = ModelWeightsProvider().create(props).outs
    assert out["installed"] and out["files"] == 8  # 6 shards + index + config
    for name, mtime in mtimes.items():  # resumed, not restarted
        assert (workspace / "model" / "Kimi-K3-w4a8" / name).stat().st_mtime_ns == mtime
    # re-run: verified complete, nothing installed
    n = len(doubles_calls(services, "cthpc"))
    assert ModelWeightsProvider().create(props).outs["installed"] is False
    assert len(doubles_calls(services, "cthpc")) == n


def test_sif_image_installed_and_verified(services, workspace):
    props = ssh_props(services, hostKey=host_key(services), name="vllm-ascend_kimi-k3-a3",
                      sifDir=str(workspace / "apptainer"))
    out = SifImageProvider().create(props).outs
    assert out["installed"] and out["bytes"] > 32
    (workspace / "apptainer" / "vllm-ascend_kimi-k3-a3.sif").write_bytes(b"not a sif image")
    out = SifImageProvider().create(props).outs  # a broken file is replaced, not trusted
    assert out["installed"]


def test_broadcast_job_success_and_failure_with_log_tail(services, workspace):
    ensure_master_in_queue(services)
    clear_faults(services)
    p, spec = default_plan_spec()
    lay = layout_for(workspace)
    Path(lay.model_dir).mkdir(parents=True)
    (Path(lay.model_dir) / "config.json").write_text("{}")
    Path(lay.sif_dir).mkdir(parents=True)
    props = ssh_props(services, hostKey=host_key(services), script=render_bcast_sh(p, spec, lay),
                      workDir=lay.work_dir, sourceHost=services["KK3_MASTER_HOST"],
                      contentKey="v1", timeoutS=120, pollIntervalS=0.25)
    inject_fault(services, "cthpc_model_bcast")
    with pytest.raises(JobFailed) as err:
        BroadcastProvider().create(props)
    assert "connection reset by peer" in str(err.value) and "log tail" in str(err.value)
    before = len(doubles_calls(services, "cthpc_model_bcast"))
    out = BroadcastProvider().create(props).outs
    assert out["jobId"].isdigit()
    calls = doubles_calls(services, "cthpc_model_bcast")[before:]
    assert sorted({c["host"] for c in calls}) == ["kk3n0", "kk3n1", "kk3n2", "kk3n3"]
    assert {c["argv"][0] for c in calls} == {services["KK3_MASTER_HOST"]}
    assert {c["argv"][1] for c in calls} == {lay.sif_dir, lay.model_dir}


@pytest.fixture
def loop_disks(workspace):
    """Two loop devices over files: one holding ext4 with data, one empty."""
    devs = []
    for name in ("full", "empty"):
        img = workspace / f"{name}.img"  # sparse; xfs needs at least 300 MB
        subprocess.run(["truncate", "-s", "320M", str(img)], check=True)
        devs.append(sh(f"losetup -f --show {img}").stdout.strip())
    sh(f"mkfs.ext4 -q {devs[0]}")
    data = workspace / "prep"
    data.mkdir()
    sh(f"mount {devs[0]} {data} && echo precious > {data}/keep.txt && umount {data}")
    yield devs
    for mnt in (workspace / "m0", workspace / "m1"):
        sh(f"umount {mnt}", check=False)
    for dev in devs:
        sh(f"losetup -d {dev}", check=False)


def test_nvme_mount_never_formats_a_disk_with_a_file_system(services, workspace, loop_disks):
    ensure_master_in_queue(services)
    full, empty = loop_disks
    m0, m1 = workspace / "m0", workspace / "m1"
    fstab = workspace / "fstab"
    fstab.write_text("# test fstab\n")
    lay = layout_for(workspace, disks=((full, str(m0)), (empty, str(m1))), fs_type="xfs")
    props = ssh_props(services, hostKey=host_key(services), script=render_mount_nvme_sh(lay),
                      workDir=lay.work_dir, partition="batch", nodes=["kk3n1", "kk3n2"],
                      fstab=str(fstab))
    out = NvmeMountProvider().create(props).outs
    assert out["mounted"] == ["kk3n1", "kk3n2"]
    assert sh(f"blkid -p -s TYPE -o value {full}").stdout.strip() == "ext4"  # untouched
    assert (m0 / "keep.txt").read_text() == "precious\n"
    assert sh(f"blkid -p -s TYPE -o value {empty}").stdout.strip() == "xfs"  # was empty
    assert sh(f"findmnt -rno SOURCE {m1}").stdout.strip() == empty
    assert any("already holds ext4; not formatting" in r for r in out["report"])
    # idempotent: again on the same nodes, fstab entries appear once each
    NvmeMountProvider().create(props)
    lines = [ln for ln in fstab.read_text().splitlines() if ln.startswith("UUID=")]
    assert len(lines) == 2 and {ln.split()[1] for ln in lines} == {str(m0), str(m1)}
    assert "nofail" in lines[0]


def test_nvme_mount_refuses_a_partitioned_disk(services, workspace):
    ensure_master_in_queue(services)
    img = workspace / "parted.img"
    subprocess.run(["truncate", "-s", "64M", str(img)], check=True)
    # a DOS partition table (one Linux partition): no file system on the whole disk, but data
    with open(img, "r+b") as f:
        f.seek(446)
        f.write(bytes([0, 0, 0, 0, 0x83, 0, 0, 0]) + (2048).to_bytes(4, "little")
                + (64 * 2048 - 2048).to_bytes(4, "little"))
        f.seek(510)
        f.write(b"\x55\xaa")
    dev = sh(f"losetup -f --show {img}").stdout.strip()
    try:
        lay = layout_for(workspace, disks=((dev, str(workspace / "mp")),))
        props = ssh_props(services, hostKey=host_key(services), script=render_mount_nvme_sh(lay),
                          workDir=lay.work_dir, nodes=["kk3n1"], fstab=str(workspace / "f"))
        (workspace / "f").write_text("")
        with pytest.raises(CommandFailed, match="refusing to format"):
            NvmeMountProvider().create(props)
        assert sh(f"blkid -p -s PTTYPE -o value {dev}").stdout.strip() == "dos"
    finally:
        sh(f"losetup -d {dev}", check=False)


def test_job_the_partition_can_never_run_fails_fast(services, workspace):
    """The broadcast job is sized by the nodes it targets (-N/-w); one of them outside the
    partition can never run there: the job fails at once instead of waiting its timeout."""
    sh("scontrol update PartitionName=batch Nodes=kk3n[1-3]")  # kk3n0 is not in it
    try:
        p, spec = default_plan_spec()
        lay = layout_for(workspace)
        props = ssh_props(services, hostKey=host_key(services),
                          script=render_bcast_sh(p, spec, lay), workDir=lay.work_dir,
                          nodes=["kk3n0", "kk3n1", "kk3n2", "kk3n3"],
                          method="cthpc_model_bcast", timeoutS=600, pollIntervalS=0.25)
        with pytest.raises(JobFailed, match="can never start"):
            BroadcastProvider().create(props)
        assert "kimi-k3-bcast" not in sh("squeue -h -o %j").stdout  # cancelled, not left pending
    finally:
        ensure_master_in_queue(services)


def test_sif_image_from_a_url_resumes_into_place(services, workspace):
    """sifSource=url: a real wget against a local HTTPS server; the partial file never has the
    final name; with a sha256 the sum is checked before the rename."""
    import hashlib

    from tests.integration.day2_env import https_server

    served = workspace / "www"
    served.mkdir()
    sif = b"#!/usr/bin/env run-singularity\n".ljust(32, b"\n") + b"SIF_MAGIC\0" + b"\1" * 50000
    (served / "img.sif").write_bytes(sif)
    with https_server(served, workspace / "tls") as (base, wgetrc):
        target = workspace / "sif"
        target.mkdir()
        (target / "k3.sif.part").write_bytes(sif[:1000])  # an earlier, interrupted download
        props = ssh_props(services, hostKey=host_key(services), source="url", name="k3",
                          sifDir=str(target), url=f"{base}/img.sif",
                          sha256=hashlib.sha256(sif).hexdigest(),
                          remoteEnv={"WGETRC": str(wgetrc)})
        out = SifImageProvider().create(props).outs
        assert out["installed"] and out["bytes"] == len(sif) and out["via"] == "url"
        assert (target / "k3.sif").read_bytes() == sif and not (target / "k3.sif.part").exists()
