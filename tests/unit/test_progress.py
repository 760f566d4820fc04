"""The progress record: phases, rate-limited updates, slow flag, failure, secrets scrubbed."""

import json

import pytest

from components.progress.record import ProgressLog, progress_file_for, read_records


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


def test_no_path_records_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a relative default would land here
    log = ProgressLog(None)
    with log.phase("x", "y") as p:
        p.update("z", force=True)
    assert log.path == "" and not log.broken
    assert list(tmp_path.rglob("*")) == []


def test_progress_file_is_per_stack_and_safe(tmp_path):
    a = progress_file_for("ctyun-hcc", tmp_path)
    assert a == str(tmp_path / ".kimi-k3" / "progress" / "ctyun-hcc.jsonl")
    assert "/" not in progress_file_for("org/../x", tmp_path).rsplit("progress/", 1)[1]


def test_a_torn_last_line_is_skipped(tmp_path):
    path = tmp_path / "s.jsonl"
    ProgressLog(str(path)).phase("a", "b").start()
    with open(path, "a") as f:
        f.write('{"phase": "a", "ev')
    assert len(read_records(str(path))) == 1


def test_an_unchanged_detail_is_written_as_a_heartbeat_with_how_long_it_stayed(tmp_path):
    clock = Clock()
    path = str(tmp_path / "s.jsonl")
    with ProgressLog(path, clock=clock, echo=False).phase("weights-stage", "cthpc install", 600) as p:
        for _ in range(13):             # every 10 s for 130 s: the same state
            clock.t += 10
            p.update("job RUNNING")
        clock.t += 10
        p.update("job RUNNING, 40/64 shards", fraction=0.625)
    recs = read_records(path)
    updates = [r for r in recs if r["event"] == "update"]
    # the change at 10 s, heartbeats at 70 s and 130 s, the new detail at 140 s
    assert [r["elapsed_s"] for r in updates] == [10.0, 70.0, 130.0, 140.0]
    assert [r["unchanged_s"] for r in updates] == [0.0, 60.0, 120.0, 0.0]
    assert updates[-1]["fraction"] == 0.625 and recs[-1]["detail"] == "job RUNNING, 40/64 shards"


def test_the_plans_expectation_is_found_by_phase_name_or_prefix(tmp_path):
    expect = {"weights-stage": {"expected_s": 840, "assumption": "~1680 GB from cthpc at 2 GB/s"}}
    log = ProgressLog(str(tmp_path / "s.jsonl"), expect=expect, echo=False)
    with log.phase("weights-stage-kk3n1", "install on kk3n1", deadline_s=3600):
        pass
    with log.phase("weights-stage", "install", expected_s=10, assumption="own figure"):
        pass
    with log.phase("vllm-start", "/health"):
        pass
    first, own, none = [r for r in read_records(str(tmp_path / "s.jsonl")) if r["event"] == "start"]
    assert (first["expected_s"], first["assumption"], first["deadline_s"]) == \
        (840, "~1680 GB from cthpc at 2 GB/s", 3600)
    assert (own["expected_s"], own["assumption"]) == (10, "own figure")
    assert none["expected_s"] is None and none["assumption"] == ""


def test_a_write_error_switches_the_log_off_and_never_fails_the_wait(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    log = ProgressLog(str(blocker / "sub" / "s.jsonl"))
    with log.phase("ehpc-order", "E-HPC job") as p:
        p.update("wait", force=True)
    assert log.broken and "NotADirectoryError" in log.broken
    err = capsys.readouterr().err
    assert err.count("cannot write") == 1   # said once, then silent


def test_sparse_lines_reach_stderr_which_pulumi_up_shows(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    clock = Clock()
    path = progress_file_for("ctyun-hcc")
    with ProgressLog(path, clock=clock).phase("vllm-start", "/health on node 0", 100, "load + warm-up") as p:
        for _ in range(100):            # 1000 s, 10 x the plan
            clock.t += 10
            p.update("Loading shards 12/64")
    err = capsys.readouterr().err.splitlines()
    assert all(line.startswith("kimi-k3 progress: vllm-start: ") for line in err)
    assert "follow: python -m components status --stack ctyun-hcc" in err[0]
    assert "plan expects ~1m40s: load + warm-up" in err[0]
    assert sum("SLOW" in line for line in err) == 1           # said once when it turns slow
    assert "done after 16m40s" in err[-1]
    assert len(err) <= 5                                       # not one line per poll


def test_steering_inputs_are_dropped_for_diff():
    from components.progress.record import STEERING_INPUTS, without_steering
    props = {"progressFile": "/a/b.jsonl", "progressExpect": {}, "port": 11025}
    assert without_steering(props) == {"port": 11025}
    assert STEERING_INPUTS == ("progressFile", "progressExpect")


CANARIES = ("canary-api-key-3f9a1c", "canary-hf-token-77b2e0", "canary-ssh-password-0d4e")


def test_canary_no_secret_reaches_the_record_or_stderr(tmp_path, capsys):
    """Every text a waiter can hand over carries a secret: none is in the file or on stderr."""
    clock = Clock()
    path = tmp_path / "s.jsonl"
    log = ProgressLog(str(path), secrets=CANARIES, clock=clock,
                      expect={"gate": {"expected_s": 5, "assumption": f"key {CANARIES[0]}"}})
    with pytest.raises(RuntimeError):
        with log.phase("gate", f"chat completion with {CANARIES[0]}") as p:
            for i in range(3):
                clock.t += 700
                p.update(f"tail: token {CANARIES[1]} pass {CANARIES[2]} #{i}")
            raise RuntimeError(f"401 for key {CANARIES[0]} / {CANARIES[1]}")
    text, err = path.read_text(), capsys.readouterr().err
    assert "[secret]" in text and "[secret]" in err
    for canary in CANARIES:
        assert canary not in text and canary not in err


def test_a_blocking_wait_still_shows_a_live_writer(tmp_path, fake_clock):
    """One SSH command that runs for an hour: a heartbeat thread writes while it blocks (in
    simulated time: the thread's waits move the clock, HEARTBEAT_S = 60 s between records)."""
    path = str(tmp_path / "s.jsonl")
    log = ProgressLog(path, echo=False, clock=fake_clock, wait=fake_clock.wait)
    with log.phase("weights-stage", "cthpc model install") as p:
        p.update("cthpc model install started", force=True)
        fake_clock.until(fake_clock() + 3600)       # the blocking call, an hour long
    p._thread.join(5)
    assert not p._thread.is_alive()                  # the thread stopped with the phase
    recs = read_records(path)
    beats = [r for r in recs if r["event"] == "update"][1:]
    assert len(beats) == 60 and all(r["detail"] == "cthpc model install started" for r in beats)
    assert [b["ts"] - a["ts"] for a, b in zip(beats, beats[1:])] == [60.0] * (len(beats) - 1)
    assert beats[-1]["unchanged_s"] >= 3540 and recs[-1]["event"] == "done"


def test_no_heartbeat_thread_on_a_simulated_clock_without_its_wait(tmp_path, fake_clock):
    with ProgressLog(str(tmp_path / "s.jsonl"), echo=False, clock=fake_clock).phase("x", "y") as p:
        assert p._thread is None


def test_shared_helpers_reach_the_current_phase(tmp_path):
    from components.progress.record import current_phase
    path = str(tmp_path / "s.jsonl")
    current_phase().update("outside any phase: recorded nowhere", force=True)
    with ProgressLog(path, echo=False, clock=Clock()).phase("bootstrap-nvme-mount", "mounts"):
        current_phase().update("kk3n1 mounted", force=True)
    current_phase().update("after: nowhere", force=True)
    assert [r["detail"] for r in read_records(path)] == ["", "kk3n1 mounted", "kk3n1 mounted"]
    opened = ProgressLog(path, echo=False, clock=Clock()).phase("block-start", "the block").start()
    current_phase().update("not the started phase: it is not entered", force=True)
    opened.done("started")
    assert [r["event"] for r in read_records(path)][-2:] == ["start", "done"]


def test_the_reader_parses_only_what_was_appended_and_restarts_on_a_new_file(tmp_path):
    from components.progress.record import RecordReader
    path = tmp_path / "s.jsonl"
    reader = RecordReader(str(path))
    assert reader.read() == []
    log = ProgressLog(str(path), echo=False, clock=Clock())
    with log.phase("a", "x"):
        pass
    assert [r["event"] for r in reader.read()] == ["start", "done"]
    with open(path, "a") as f:
        f.write('{"phase": "b", "event": "start"')        # a writer mid-line
    assert len(reader.read()) == 2
    with open(path, "a") as f:
        f.write(', "ts": 1}\n')
    assert [r["phase"] for r in reader.read()] == ["a", "a", "b"]
    path.unlink()
    with ProgressLog(str(path), echo=False).phase("c", "y"):
        pass
    assert [r["phase"] for r in reader.read()] == ["c", "c"]
