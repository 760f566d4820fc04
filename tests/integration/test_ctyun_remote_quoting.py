"""Remote commands built in components/ctyun_hcc quote every value with the project's one shell
quoting function (components/inference/quoting.py: shell_word), checked against the real local
sshd: a log directory holding a space, quotes and `$(...)` is read, and nothing in it runs.
Run under `flock /tmp/kk3-services.lock` (shared services)."""

import ast
from pathlib import Path

import pytest

from components.ctyun_hcc.slurm_jobs import log_tail
from components.ctyun_hcc.ssh import SshCredentials, SshRunner, SshTarget
from tests.integration.slurm_env import host_key

ROOT = Path(__file__).resolve().parents[2]


def test_no_ctyun_module_quotes_with_anything_but_shell_word():
    for path in sorted((ROOT / "components" / "ctyun_hcc").rglob("*.py")):
        tree = ast.parse(path.read_text())
        imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        imported |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        assert "shlex" not in imported, f"{path.relative_to(ROOT)} uses shlex"


def test_log_tail_reads_a_directory_with_shell_characters_and_runs_nothing(services, tmp_path):
    canary = tmp_path / "ran"
    logs = tmp_path / f"work dir 'q' \"d\" $(touch {canary}) `touch {canary}`" / "logs"
    logs.mkdir(parents=True)
    (logs / "job_42.out").write_text("line 1\nthe job said: bye\n")
    (logs / "node_42.0.out").write_text("node 0 up\n")
    (logs / "job_43.out").write_text("another job\n")
    runner = SshRunner(SshTarget(services["KK3_SSH_HOST"], int(services["KK3_SSH_PORT"]),
                                 user=services["KK3_SSH_USER"], host_key=host_key(services)),
                       SshCredentials(private_key=Path(services["KK3_SSH_KEY"]).read_text()))
    with runner:
        tail = log_tail(runner, str(logs), ["job_42.*", "node_42.*"])
    assert f"==> {logs}/job_42.out <==" in tail and "the job said: bye" in tail
    assert "node 0 up" in tail and "another job" not in tail
    assert not canary.exists()
    with pytest.raises(ValueError, match="not a plain file-name pattern"):
        log_tail(runner, str(logs), ["job_42.* ; touch x"])
