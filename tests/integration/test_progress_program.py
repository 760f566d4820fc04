"""The program's side of progress under the mock engine: the hint reaches the output, no file."""

import logging

from components.mockrun import run_program


def test_the_program_says_how_to_follow_progress_and_writes_nothing_offline(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("KK3_PROGRESS_ROOT", str(tmp_path))
    with caplog.at_level(logging.INFO):
        run_program("aws-eks", {"kimi-k3:capacityReservationId": "cr-0123456789abcdef0"})
    hints = [r.getMessage() for r in caplog.records if "components status" in r.getMessage()]
    assert hints and str(tmp_path / ".kimi-k3" / "progress" / "aws-eks.jsonl") in hints[0]
    assert not (tmp_path / ".kimi-k3").exists()   # the mock engine is not a `pulumi up`
