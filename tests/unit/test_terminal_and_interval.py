"""Issue 21 item 8: progress records cannot drive the terminal; `status --interval` takes only a
sane number of seconds. Each test holds the hostile input and fails without its guard."""

import json

import pytest

from components.cli.main import main
from components.inference.quoting import terminal_text
from components.progress.record import ProgressLog

ESC = "\x1b[2J\x1b]0;owned\x07\x9b31m\rover\x08\x7f"


def _controls(text):
    return [c for c in text if (ord(c) < 32 and c not in "\n") or 0x7f <= ord(c) <= 0x9f]


def test_terminal_text_shows_every_control_character():
    shown = terminal_text(ESC + "\n\t")
    assert _controls(shown.replace("\t", "")) == [] and "\t" in shown
    assert shown.startswith("\\x1b[2J\\x1b]0;owned\\x07\\x9b31m\\x0dover\\x08\\x7f\\x0a")
    assert terminal_text("Kimi-K3 ok: 42") == "Kimi-K3 ok: 42"


def test_the_byte_pattern_of_the_controls_matches_their_utf8_and_nothing_else():
    """`utf8_any(TERMINAL_CONTROLS)` (what the logs command matches in a byte stream) is the
    set `terminal_text` shows, encoded: every control's UTF-8 and no neighbour sharing its lead
    byte (NBSP is C2 A0, U+0100 is C4 80), no stray byte of other text."""
    import re

    from components.inference.quoting import TERMINAL_CONTROLS, utf8_any

    pattern = re.compile(utf8_any(TERMINAL_CONTROLS))
    assert [c for c in map(chr, range(0x800)) if pattern.fullmatch(c.encode())] == list(TERMINAL_CONTROLS)
    assert [c for c in map(chr, range(0x800)) if terminal_text(c) != c] == list(TERMINAL_CONTROLS)
    assert pattern.findall("é \u00a0 漢 \U0001F600 \xff".encode()) == []
    assert "\t" not in TERMINAL_CONTROLS and {"\x1b", "\r", "\x7f", "\x9b"} <= set(TERMINAL_CONTROLS)


def test_escape_sequences_in_progress_records_are_shown_not_sent(tmp_path, capsys):
    path = tmp_path / "p.jsonl"
    with ProgressLog(str(path), echo=False).phase("vllm-start", "health " + ESC, 60) as p:
        p.update("last answer: " + ESC)
    with open(path, "a") as f:  # a record written by anyone, with escapes in every text field
        f.write(json.dumps({"ts": 1.8e9, "phase": "x" + ESC, "event": "failed",
                            "waiting_for": ESC, "assumption": ESC, "detail": ESC}) + "\n")
    assert main(["status", "--file", str(path), "--once"]) == 1
    out = capsys.readouterr().out
    assert _controls(out) == [] and "\\x1b[2J" in out


def test_the_stderr_echo_of_a_phase_shows_controls(tmp_path, capsys):
    log = ProgressLog(str(tmp_path / "p.jsonl"), echo=True)
    log.say("seen " + ESC + "\nsecond line")
    err = capsys.readouterr().err
    assert _controls(err) == [] and err.count("\n") == 1


@pytest.mark.parametrize("value,problem", [
    ("nan", "'nan' is not finite"), ("inf", "'inf' is not finite"), ("-inf", "'-inf' is not finite"),
    ("0", "0 is out of range"), ("-1", "-1 is out of range"), ("1e9", "1e9 is out of range"),
    ("0.01", "0.01 is out of range"), ("٢", "'٢' is not a number"), ("2s", "'2s' is not a number")])
def test_status_interval_must_be_a_sane_number_of_seconds(value, problem, tmp_path, capsys):
    """One line quoting the value as typed (issue 18: `-1`, not Python's `-1.0`), no traceback."""
    assert main(["status", "--file", str(tmp_path / "x.jsonl"), f"--interval={value}"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: --interval={problem}; ") and err.count("\n") == 1
    assert "seconds" in err and "Traceback" not in err


def test_status_interval_as_typed_is_used(tmp_path, capsys):
    assert main(["status", "--file", str(tmp_path / "x.jsonl"), "--interval", " 0.5 "]) == 2
    assert "does not exist" in capsys.readouterr().err   # the interval passed, the file did not
