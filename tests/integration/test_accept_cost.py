"""`accept --usd-per-hour X`: the load part reports what a million output tokens cost at the rate
it measured against the vLLM double, in the JSON report and the summary; a price that is not one
is refused in one line before any request."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from components.cli import main as cli
from tests.doubles.vllm_openai import DoubleConfig, VllmOpenAIDouble

ROOT = Path(__file__).resolve().parents[2]


def test_usd_per_mtok_from_the_measured_rate(tmp_path):
    with VllmOpenAIDouble(DoubleConfig(ttft_s=0.02, tpot_s=0.002)) as d:
        args = [sys.executable, "-m", "components", "accept", "--endpoint", d.url, "--model",
                "Kimi-K3", "--requests", "16", "--concurrency", "4", "--max-tokens", "64",
                "--timeout", "10", "--usd-per-hour", "98.5", "--out", str(tmp_path / "r.json")]
        p = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    load = json.loads((tmp_path / "r.json").read_text())["load"]
    tps = load["output_tokens_per_s"]
    assert tps > 0 and load["usd_per_hour"] == 98.5
    assert load["usd_per_mtok"] == pytest.approx(98.5 / (tps * 3600 / 1e6), rel=1e-3)
    line = next(x for x in p.stdout.splitlines() if x.startswith("  cost: "))
    assert line == (f"  cost: ${load['usd_per_mtok']:,.2f} per million output tokens at $98.50/h "
                    "and the rate measured here")


def test_without_a_price_the_fields_are_null(capsys):
    with VllmOpenAIDouble(DoubleConfig()) as d:
        assert cli.main(["accept", "--endpoint", d.url, "--model", "Kimi-K3", "--requests", "2",
                         "--max-tokens", "4", "--timeout", "5"]) == 0
    assert "  cost: " not in capsys.readouterr().out


@pytest.mark.parametrize("bad", ["0", "-1", "nan", "inf", "1e309", "infinity", "١٠", "98.5$",
                                 "", " ", "1__0", "_10", "10_", "0x10", "--5"])
def test_a_price_that_is_not_one_is_refused_before_any_request(bad, capsys):
    with VllmOpenAIDouble(DoubleConfig()) as d:
        code = cli.main(["accept", "--endpoint", d.url, "--model", "Kimi-K3",
                         f"--usd-per-hour={bad}"])
        seen = list(d.seen)
    err = capsys.readouterr().err.strip()
    assert code == 2 and seen == []
    assert err == (f"error: --usd-per-hour {bad!r} is not a price; give USD per hour as a "
                   "positive number, e.g. --usd-per-hour 98.5")


def test_the_price_takes_the_config_grammar_digit_groups():
    """--usd-per-hour reads numbers as kimi-k3:usdPerHour does (components/config/values.py
    NUMBER: `1_000.25` is 1000.25, as in Python; a stray underscore is refused above)."""
    from components.cli.accept import _usd_per_hour

    assert _usd_per_hour("1_000.25") == (1000.25, None)


def test_the_deploy_gate_prices_the_load_with_the_stacks_figure():
    from components.accept.gate import gate_config, run_gate
    from components.accept.sizing import LoadSize

    with VllmOpenAIDouble(DoubleConfig(ttft_s=0.01, tpot_s=0.001)) as d:
        cfg = gate_config(d.url, "Kimi-K3", None, LoadSize(8, 4, 16), timeout_s=5)
        priced = run_gate(cfg, usd_per_hour=40.0)["load"]
        plain = run_gate(cfg)["load"]
    assert priced["usd_per_hour"] == 40.0
    assert priced["usd_per_mtok"] == pytest.approx(40.0 / (priced["output_tokens_per_s"] * 3600 / 1e6),
                                                   rel=1e-3)
    assert plain["usd_per_hour"] is None and plain["usd_per_mtok"] is None
