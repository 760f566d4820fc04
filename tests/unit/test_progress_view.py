"""The status view of a progress record: a snapshot of its text, the verdicts, the CLI."""

import json
from pathlib import Path

import pytest

from components.cli.main import main
from components.progress.record import ProgressLog, read_records
from components.progress.view import latest_run, plain, summarize, view_lines

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "progress" / "status.txt"
T0 = 1_800_000_000.0


class Clock:
    def __init__(self):
        self.t = T0

    def __call__(self):
        return self.t


def write_story(path: str) -> Clock:
    """A first `pulumi up` on CTyun: an order done, a failed mount, a slow start on node 0 while
    the last node still downloads (fictitious figures)."""
    clock = Clock()
    old = ProgressLog(path, clock=clock, echo=False)
    with old.phase("ehpc-order", "an earlier run's order"):
        clock.t += 30
    log = ProgressLog(path, clock=clock, echo=False,
                      expect={"weights-stage": {"expected_s": 3360,
                                                "assumption": "~1680 GB from cthpc at 0.5 GB/s per node"},
                              "vllm-start": {"expected_s": 600,
                                             "assumption": "load 300 s (local-nvme) + warm-up 300 s"}})
    log.run_started("ctyun-hcc")
    with log.phase("ehpc-order", "E-HPC cluster kimi-k3 to reach RUNNING", 1200,
                   "typical order time", deadline_s=7200) as p:
        clock.t += 600
        p.update("order state: creating")
        clock.t += 480
        p.update("order state: running")
    with pytest.raises(RuntimeError):
        with log.phase("bootstrap-mount", "NVMe mounted on 4 nodes", 60) as p:
            clock.t += 25
            p.update("kk3n1: mkfs done")
            raise RuntimeError("kk3n2: mount /dev/nvme0n1 /mnt/nvme failed: exit 32")
    with log.phase("bootstrap-mount", "NVMe mounted on 4 nodes", 60) as p:   # the retry
        clock.t += 20
    with pytest.raises(RuntimeError):
        with log.phase("weights-stage-kk3n2", "cthpc model install on kk3n2") as p:
            clock.t += 40
            raise RuntimeError("kk3n2: cthpc model install exit 1: No space left on device")
    stage = log.phase("weights-stage", "cthpc model install on 3 nodes").start()
    clock.t += 300
    stage.update("kk3n0 410 of 1680 GB", fraction=410 / 1680)
    start = log.phase("vllm-start", "/health on kk3n0:11025", deadline_s=3600).start()
    for i in range(20):  # 20 min of the same log line: 2x the plan, unchanged for long
        clock.t += 60
        start.update("Loading safetensors checkpoint shards: 12/64")
        stage.update(f"kk3n3 {410 + 30 * i} of 1680 GB", fraction=(410 + 30 * i) / 1680)
    clock.t += 5
    return clock


def snapshot_text(path: str, now: float) -> str:
    marker, recs = latest_run(read_records(path))
    views = summarize(recs, now, alive=lambda pid, host: True)
    return plain(view_lines("kimi-k3 progress of stack ctyun-hcc", marker, views, now))


def test_status_snapshot_of_a_record(tmp_path, golden):
    path = str(tmp_path / "ctyun-hcc.jsonl")
    clock = write_story(path)
    text = snapshot_text(path, clock.t)
    golden.check(GOLDEN, text)
    assert "\x1b[" not in text
    assert "an earlier run" not in text                       # only the latest run
    assert "[SLOW]" in text and "over by" in text             # past the plan's expectation
    assert "it may be stuck" in text                          # and nothing new for 20 min
    assert "[FAILED]" in text and "No space left on device" in text


def test_a_failed_attempt_then_a_good_retry_shows_the_retry(tmp_path):
    path = str(tmp_path / "s.jsonl")
    clock = write_story(path)
    views = {v.name: v for v in summarize(latest_run(read_records(path))[1], clock.t,
                                          alive=lambda *_: True)}
    assert views["bootstrap-mount"].state == "done"
    assert views["weights-stage"].state == "running"
    assert views["weights-stage"].bar_fraction() == pytest.approx(980 / 1680)
    assert views["vllm-start"].state == "slow"


def test_a_failed_phase_is_shown_with_its_error(tmp_path):
    path = str(tmp_path / "s.jsonl")
    clock = Clock()
    with pytest.raises(TimeoutError):
        with ProgressLog(path, clock=clock, echo=False).phase(
                "accept-gate", "a chat completion from /v1", 120, "first token within 2 min") as p:
            clock.t += 130
            p.update("HTTP 503 from /v1/chat/completions")
            clock.t += 200
            raise TimeoutError("gave up waiting for a chat completion after 330 s")
    text = snapshot_text(path, clock.t + 50)
    assert "[FAILED]" in text and "failed with: TimeoutError: gave up waiting" in text
    assert "plan assumed: first token within 2 min" in text
    assert "left" not in text and "gives up" not in text    # nobody waits any more


def test_quiet_and_interrupted_waits_are_told_apart(tmp_path):
    path = str(tmp_path / "s.jsonl")
    clock = Clock()
    ProgressLog(path, clock=clock, echo=False).phase("block-start", "Capacity Block to start").start()
    recs = read_records(path)
    quiet = summarize(recs, clock.t + 600, alive=lambda *_: True)[0]
    gone = summarize(recs, clock.t + 600, alive=lambda *_: False)[0]
    assert quiet.state == "quiet" and quiet.elapsed_s == 600
    assert gone.state == "interrupted" and gone.elapsed_s == 0
    text = plain(view_lines("t", None, [quiet, gone], clock.t + 600))
    assert "no news for 10m" in text and "the process that waited is gone" in text


def test_status_command_once_and_its_exit_codes(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["status", "--stack", "aws-eks", "--once"]) == 0
    assert "no long wait recorded yet" in capsys.readouterr().out
    path = tmp_path / ".kimi-k3" / "progress" / "aws-eks.jsonl"
    with ProgressLog(str(path), echo=False).phase("block-start", "Capacity Block to start", 60):
        pass
    assert main(["status", "--stack", "aws-eks", "--once"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("kimi-k3 progress of stack aws-eks") and "\x1b[" not in out
    assert "[DONE]" in out and "block-start" in out
    with open(path, "a") as f:
        f.write(json.dumps({"ts": T0 + 9999, "phase": "readiness-gate", "event": "failed",
                            "detail": "pods CrashLoopBackOff"}) + "\n")
    assert main(["status", "--file", str(path), "--once"]) == 1     # a failed phase
    assert "pods CrashLoopBackOff" in capsys.readouterr().out
    assert main(["status", "--file", str(tmp_path / "nope.jsonl"), "--once"]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_the_live_view_redraws_every_interval_until_ctrl_c(tmp_path, monkeypatch, fake_clock):
    """In simulated time: a redraw at start, one after each --interval, Ctrl-C leaves with 0."""
    from argparse import Namespace

    from components.cli import status
    path = str(tmp_path / "s.jsonl")
    ProgressLog(path, clock=fake_clock, echo=False).phase("vllm-start", "/health on node 0", 600).start()
    drawn = []
    real = status.snapshot
    monkeypatch.setattr(status, "snapshot", lambda reader, title, now, *a, **kw:
                        drawn.append(now) or real(reader, title, now, *a, **kw))

    def sleep(s):
        fake_clock.sleep(s)
        if len(fake_clock.slept) == 3:
            raise KeyboardInterrupt

    args = Namespace(interval="2.5", all=False, once=False, stack="aws-eks", file=None)
    assert status._live(path, "t", args, 2.5, fake_clock, sleep) == 0
    t0 = fake_clock.start
    assert drawn == [t0, t0 + 2.5, t0 + 5.0] and fake_clock.slept == [2.5] * 3


def test_the_live_view_is_compact_and_fits_the_terminal_keeping_the_newest(tmp_path):
    from components.progress.view import fit
    path = str(tmp_path / "s.jsonl")
    clock = write_story(path)
    marker, recs = latest_run(read_records(path))
    views = summarize(recs, clock.t, alive=lambda *_: True)
    full = view_lines("t", marker, views, clock.t)
    compact = view_lines("t", marker, views, clock.t, compact=True)
    text = plain(compact)
    assert "E-HPC cluster kimi-k3 to reach RUNNING" not in text      # done as planned: one line
    assert "[DONE]        ehpc-order" in text and len(compact) < len(full)
    fitted = fit(compact, 12)
    assert len(fitted) == 12 and "earlier lines (--once shows all)" in plain(fitted)
    assert plain(fitted).rstrip().endswith("it may be stuck")        # the newest phase stays


#: lines a progress file can hold after a crash, an edit or another version's writer: each one
#: made `status` end in a traceback before (RecursionError, OverflowError, AttributeError)
HOSTILE_LINES = [
    b"\xff\xfe not UTF-8\n",
    b"[" * 100_000 + b"\n",                                        # nested past json's depth
    b'{"event":"start","phase":"inf-phase","ts":1e400,"elapsed_s":1e400,"expected_s":1e400}\n',
    b'{"event":"update","phase":"nan-phase","ts":NaN,"expected_s":NaN,"deadline_s":-Infinity}\n',
    b'{"event":"update","phase":"big","expected_s":' + b"9" * 400 + b"}\n",     # int beyond float
    json.dumps({"event": "update", "phase": "long", "detail": "x" * 1_000_000}).encode() + b"\n",
    b'{"event":"billing","phase":"b","billing_start":1e400,"basis":"block"}\n',
]
MARKER = {"event": "run", "phase": "", "ts": T0, "stack": "s", "usd_per_hour": 1e400,
          "clock": {"phases": [5, {"name": "order", "estimate_s": 1e400, "measured_by": 7},
                               {"name": "engine", "estimate_s": 60, "measured_by": ["nan-phase"]},
                               {"estimate_s": 3}]}}


def test_status_reads_a_hostile_progress_file_without_a_traceback(tmp_path, capsys):
    path = tmp_path / "s.jsonl"
    path.write_bytes(json.dumps(MARKER).encode() + b"\n" + b"".join(HOSTILE_LINES))
    assert main(["status", "--file", str(path), "--once"]) == 0
    out = capsys.readouterr().out
    assert "inf-phase" in out and "nan-phase" in out and "big" in out
    assert max(len(line) for line in out.splitlines()) < 2100     # the megabyte detail is cut
    assert "more characters)" in out
    # the marker's clock: its two phases kept, without the impossible estimate, no spend line
    assert "  order " in out and "  engine " in out and "spend" not in out


def test_the_writer_cuts_a_huge_detail_after_scrubbing(tmp_path):
    path = tmp_path / "p.jsonl"
    key = "sk-" + "k" * 40
    with ProgressLog(str(path), secrets=[key], echo=False).phase("x", "y") as p:
        p.update("y" * 1998 + key + "z" * 5000, force=True)
    detail = [json.loads(line) for line in path.read_text().splitlines()][-1]["detail"]
    assert len(detail) < 2100 and detail.endswith("more characters)")
    assert "sk-k" not in detail    # scrubbed whole first: no prefix of the key is left


def test_a_progress_path_that_is_a_directory_is_one_line_not_a_traceback(tmp_path, capsys):
    d = tmp_path / "s.jsonl"
    d.mkdir()
    assert main(["status", "--file", str(d), "--once"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "is not a progress file" in err


def test_a_file_removed_between_stat_and_open_reads_as_empty(tmp_path, monkeypatch):
    """A stack's files cleaned up while `status` reads them (a destroy finishing)."""
    from components.progress import record

    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps(MARKER) + "\n")
    reader = record.RecordReader(str(path))
    real_open = open

    def vanishing_open(p, *a, **kw):
        if str(p) == str(path):
            path.unlink()
            raise FileNotFoundError(2, "No such file or directory", str(p))
        return real_open(p, *a, **kw)

    monkeypatch.setattr("builtins.open", vanishing_open)
    assert reader.read() == []


def test_records_whose_phase_or_event_is_not_text_are_skipped(tmp_path):
    path = tmp_path / "s.jsonl"
    good = {"phase": "p", "event": "start", "ts": 1.0, "waiting_for": "x"}
    path.write_text("\n".join(json.dumps(r) for r in [
        {"phase": 5, "event": "start", "ts": 1.0}, {"phase": ["a"], "event": "start", "ts": 1.0},
        {"phase": {"a": 1}, "event": "done", "ts": 1.0}, {"phase": "p", "event": 7, "ts": 1.0},
        good]) + "\n")
    assert read_records(str(path)) == [good]
