"""The progress record: phases, rate-limited updates, slow flag, failure, secrets scrubbed."""

import json

import pytest

from components.progress import ProgressLog, progress_file_for, read_records, scrub


class Clock:
    def __init__(self):
        self.t = 1000.0

    def __call__(self):
        return self.t


def test_a_phase_writes_start_updates_and_done(tmp_path):
    clock = Clock()
    path = tmp_path / "p" / "s.jsonl"
    log = ProgressLog(str(path), clock=clock)
    with log.phase("cluster-order", "E-HPC job job-1", expected_s=100, assumption="p50 of orders") as p:
        clock.t += 2
        p.update("job is submitted")          # inside the rate limit: not written
        clock.t += 10
        p.update("job is wait")
        clock.t += 200
        p.update("job is still wait")
    recs = read_records(str(path))
    assert [r["event"] for r in recs] == ["start", "update", "update", "done"]
    assert recs[1]["detail"] == "job is wait" and recs[1]["elapsed_s"] == 12.0
    assert recs[1]["slow"] is False and recs[2]["slow"] is True   # 212 s > 1.5 x 100 s
    assert recs[0]["expected_s"] == 100 and recs[0]["assumption"] == "p50 of orders"
    assert oct(path.stat().st_mode & 0o777) == "0o600"


def test_an_exception_marks_the_phase_failed_and_is_not_swallowed(tmp_path):
    log = ProgressLog(str(tmp_path / "s.jsonl"))
    with pytest.raises(RuntimeError):
        with log.phase("vllm-start", "/health"):
            raise RuntimeError("job 7 ended FAILED")
    last = read_records(str(tmp_path / "s.jsonl"))[-1]
    assert last["event"] == "failed" and "job 7 ended FAILED" in last["detail"]


def test_secrets_never_reach_the_file(tmp_path):
    path = tmp_path / "s.jsonl"
    log = ProgressLog(str(path), secrets=["hunter2-Very-Secret"])
    with log.phase("gate", "chat completion") as p:
        p.update("curl -H 'Authorization: Bearer sk-abc123def' said hunter2-Very-Secret", force=True)
    text = path.read_text()
    assert "hunter2-Very-Secret" not in text and "sk-abc123def" not in text
    assert "[secret]" in json.loads(text.splitlines()[1])["detail"]


def test_no_path_records_nothing(tmp_path):
    with ProgressLog(None).phase("x", "y") as p:
        p.update("z", force=True)
    assert scrub("Bearer abc.def") == "Bearer [secret]"


def test_progress_file_is_per_stack_and_safe(tmp_path):
    a = progress_file_for("ctyun-hcc", tmp_path)
    assert a == str(tmp_path / ".kimi-k3" / "progress" / "ctyun-hcc.jsonl")
    assert "/" not in progress_file_for("org/../x", tmp_path).rsplit("progress/", 1)[1]


def test_a_torn_last_line_is_skipped(tmp_path):
    path = tmp_path / "s.jsonl"
    ProgressLog(str(path)).phase("a", "b").__enter__()
    with open(path, "a") as f:
        f.write('{"phase": "a", "ev')
    assert len(read_records(str(path))) == 1
