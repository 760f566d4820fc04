"""`python -m components logs` on ctyun-hcc against the real sshd and 4-node Slurm: a job laid out
as srun.sh lays out the serving job (job_%j.out/.err, node_%j.%t.out/.err, node.sh's first line
naming the rank and host), read whole, per node by host name and by rank, followed live, and a
hostile --node refused before any connection."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests.child_signals import default_signals
from tests.integration.slurm_env import sh

ROOT = Path(__file__).resolve().parents[2]

JOB = """#!/bin/bash
#SBATCH --job-name=kk3-logs-test
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=1
#SBATCH --output={d}/job_%j.out
#SBATCH --error={d}/job_%j.err
echo "nodes: $SLURM_JOB_NODELIST"
echo "job stderr line" >&2
srun --ntasks-per-node=1 --output={d}/node_%j.%t.out --error={d}/node_%j.%t.err \\
  bash -c 'rank=$((1 - SLURM_PROCID)); echo "node $rank ($SLURMD_NODENAME, 10.77.0.1x on eth0): starting vllm serve"; echo "loading"; echo "last line of $SLURMD_NODENAME"; echo "INFO vLLM API server on $SLURMD_NODENAME rank $rank" >&2; sleep 120'
"""


@pytest.fixture(scope="module")
def job(services, tmp_path_factory):
    """One job for the module (each costs a submission and a start on the real Slurm): the
    tests read its logs; the one that appends a line takes it out again."""
    tmp_path = tmp_path_factory.mktemp("logs")
    d = Path(f"/tmp/kk3-logs-{uuid.uuid4().hex[:8]}/logs")
    d.mkdir(parents=True)
    script = d.parent / "job.sh"
    script.write_text(JOB.format(d=d))
    job_id = sh(f"sbatch --parsable {script}").stdout.strip().split(";")[0]
    try:
        deadline = time.time() + 60
        while time.time() < deadline:
            outs = list(d.glob(f"node_{job_id}.*.out"))
            if len(outs) == 2 and all("starting" in p.read_text() for p in outs):
                break
            time.sleep(0.5)
        else:
            pytest.fail(f"the test job did not start: {sh(f'scontrol show job {job_id}', False).stdout}")
        hosts = {}
        for p in outs:
            first = p.read_text().splitlines()[0]
            rank, host = first.split()[1], first.split("(")[1].split(",")[0]
            hosts[rank] = (host, p)
        key = Path(services["KK3_SSH_KEY"]).read_text()
        host_key = " ".join(Path(services["KK3_SSH_HOST_PUB"]).read_text().split()[:2])
        outputs = {"ssh": {"host": services["KK3_SSH_HOST"], "port": int(services["KK3_SSH_PORT"]),
                           "user": services["KK3_SSH_USER"], "hostKey": host_key, "logDir": str(d)},
                   "sshLoginKey": key, "slurmJobId": job_id}
        f = tmp_path / "outputs.json"
        f.write_text(json.dumps(outputs))
        yield {"dir": d, "id": job_id, "hosts": hosts, "outputs": f, "data": outputs}
    finally:
        sh(f"scancel {job_id}", check=False)
        sh(f"rm -rf {d.parent}", check=False)


def logs(outputs, *args, timeout=60):
    return subprocess.run([sys.executable, "-m", "components", "logs", "--stack", "ctyun-hcc",
                           "--outputs", str(outputs), *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout)


def test_the_jobs_own_log(job):
    p = logs(job["outputs"])
    assert p.returncode == 0, p.stderr
    assert "nodes: " in p.stdout and "job stderr line" in p.stdout
    assert f"==> {job['dir']}/job_{job['id']}.out <==" in p.stdout


def test_one_node_by_host_name_and_by_rank(job):
    for rank, (host, path) in job["hosts"].items():
        by_host = logs(job["outputs"], "--node", host)
        by_rank = logs(job["outputs"], "--node", rank)
        for p in (by_host, by_rank):
            assert p.returncode == 0, p.stderr
            assert f"node {rank} ({host}," in p.stdout
            assert f"INFO vLLM API server on {host} rank {rank}" in p.stdout
            assert str(path) in p.stdout
        other = next(h for r, (h, _) in job["hosts"].items() if r != rank)
        assert other not in by_host.stdout


def test_lines_limits_what_is_shown(job):
    p = logs(job["outputs"], "--node", "0", "--lines", "1")
    assert p.returncode == 0, p.stderr
    assert "starting vllm serve" not in p.stdout and "loading" not in p.stdout
    assert "last line of " in p.stdout and "INFO vLLM" in p.stdout


def test_an_unknown_node_says_which_nodes_have_logs(job):
    p = logs(job["outputs"], "--node", "kk3n9")
    assert p.returncode == 3
    assert "no log of node kk3n9 in job" in p.stderr
    for rank, (host, _) in job["hosts"].items():
        assert f"node {rank} ({host}, 10.77.0.1x on eth0)" in p.stderr
    p = logs(job["outputs"], "--job", "999999")
    assert p.returncode == 3 and "no log of job 999999" in p.stderr


def test_follow_prints_new_lines_and_leaves_nothing_running(job):
    rank, (host, path) = sorted(job["hosts"].items())[0]
    size = path.stat().st_size
    proc = subprocess.Popen([sys.executable, "-m", "components", "logs", "--stack", "ctyun-hcc",
                             "--outputs", str(job["outputs"]), "--node", rank, "--follow"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=default_signals)
    try:
        marker = f"new line {uuid.uuid4().hex}"
        os.set_blocking(proc.stdout.fileno(), False)
        got = b""

        def read_until(text: bytes, deadline: float) -> bool:
            nonlocal got
            while text not in got and time.time() < deadline:
                got += proc.stdout.read() or b""
                time.sleep(0.1)
            return text in got

        # the remote tail printed the log's last line: it is following now, so what is
        # appended next is a new line
        assert read_until(f"last line of {host}".encode(), time.time() + 30), got
        with path.open("a") as f:
            f.write(marker + "\n")
        assert read_until(marker.encode(), time.time() + 20), got
    finally:
        proc.send_signal(signal.SIGINT)
        code = proc.wait(20)
        with path.open("r+") as f:  # the module's other tests read the log as the job wrote it
            f.truncate(size)
    assert code == 0
    time.sleep(1)  # the remote tail was hung up with the session
    left = sh(f"pgrep -f 'tail -n 200 -F -- {job['dir']}'", check=False)
    assert left.stdout.strip() == "", f"tail still running on the master: {left.stdout}"


def test_escape_sequences_in_a_log_are_shown_not_acted_on(job):
    """A line a client put in vLLM's log (clear screen, retitle, OSC 52 clipboard write, a bare
    carriage return over the line) comes out of the real sshd as \\xNN text (cli/logs.py)."""
    rank, (host, path) = sorted(job["hosts"].items())[0]
    size = path.stat().st_size
    try:
        with path.open("a") as f:
            f.write("\x1b[2J\x1b]0;owned\x07\x1b]52;c;cm0gLXJmIH4=\x07 rm -rf ~\rall fine\n")
        p = logs(job["outputs"], "--node", rank, "--lines", "1")
    finally:
        with path.open("r+") as f:  # the module's other tests read the log as the job wrote it
            f.truncate(size)
    assert p.returncode == 0, p.stderr
    assert "\x1b" not in p.stdout and "\x07" not in p.stdout
    assert "\\x1b[2J\\x1b]0;owned\\x07\\x1b]52;c;cm0gLXJmIH4=\\x07 rm -rf ~\\x0dall fine\n" in p.stdout


@pytest.mark.parametrize("node", ["x;id", "$(id)", "a b", "-n", "../x", "a'b", "é", "x" * 64, "a\nb"])
def test_a_hostile_node_is_refused_before_connecting(job, tmp_path, node):
    data = dict(job["data"], ssh=dict(job["data"]["ssh"], host="203.0.113.1"))  # unroutable
    f = tmp_path / "bad.json"
    f.write_text(json.dumps(data))
    t = time.monotonic()
    p = logs(f, f"--node={node}", timeout=30)
    assert p.returncode == 2 and time.monotonic() - t < 20
    assert p.stderr.strip() == (f"error: --node {node!r} is not a node; give a host name from the "
                                "stack output slurmNodes (e.g. a3compute0001) or a vLLM node rank "
                                "(0 is the head)")


def test_a_changed_host_key_is_refused(job, tmp_path):
    data = dict(job["data"])
    data["ssh"] = dict(data["ssh"], hostKey="ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIPmT8gkXt4N3Ls8bYQvWqj0d4Q4hA8nVh2dJ1y7a3Qm0")
    f = tmp_path / "changed.json"
    f.write_text(json.dumps(data))
    p = logs(f)
    assert p.returncode == 1 and "host key" in p.stderr.lower() and "nodes: " not in p.stdout


def test_through_a_bastion_with_the_users_key_given_as_a_file(job, services, tmp_path):
    """Through kimi-k3:sshBastion the bastion takes the user's own key (stack config, never an
    output): without --bastion-key the command stops in one line before connecting; with a file
    that is no key, likewise; with the key, the job's log comes through the bastion (the same
    sshd, as root, here)."""
    port = int(services["KK3_SSH_PORT"])
    host_key = job["data"]["ssh"]["hostKey"]
    data = dict(job["data"], ssh=dict(job["data"]["ssh"], bastion=f"root@127.0.0.1:{port}",
                                      bastionHostKey=host_key))
    f = tmp_path / "bastion.json"
    f.write_text(json.dumps(data))
    p = logs(f)
    assert p.returncode == 2 and p.stderr.strip() == (
        f"error: the stack reaches its master through the bastion 'root@127.0.0.1:{port}': give "
        "the private key the bastion takes with --bastion-key FILE (the key "
        "kimi-k3:sshBastionPrivateKey, else kimi-k3:sshPrivateKey, holds)")
    not_a_key = tmp_path / "not-a-key"
    not_a_key.write_text("ssh-ed25519 AAAA... a public key\n")
    p = logs(f, "--bastion-key", str(not_a_key))
    assert p.returncode == 2 and "does not hold a PEM/OpenSSH private key" in p.stderr
    p = logs(f, "--bastion-key", services["KK3_SSH_KEY"])
    assert p.returncode == 0, p.stderr
    assert "nodes: " in p.stdout and f"job_{job['id']}.out" in p.stdout
