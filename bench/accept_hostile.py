"""`accept` against hostile servers: per case, the outcome, the peak memory and the time.

Each case starts the hostile server double (tests/doubles/hostile_openai.py) in its own process
and runs the real command line, `python -m components accept ... --api-key-env KK3_BENCH_KEY`,
in another; the peak memory is that command's maximum resident set size (`wait4`'s
ru_maxrss), the time its wall time. This script's own process stays small: a child's ru_maxrss
also counts the pages it shared with its parent before `exec`. The outcome is the exit code,
the summary's last line, the failing checks, and whether the key or a terminal control
character reached the output or the `--out` report (both must be "no"); for the `redirect`
server, whether anything reached the listener its 307s point to (must be "no").

    .venv/bin/python bench/accept_hostile.py [--timeout 10] [--cases endless,slow,...]
        [--before PATH]   # also run the accept of another checkout (e.g. the code before
                          # issue 21), under a 2 GiB address-space limit
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from components.accept.scrub import decoded  # noqa: E402
from tests.doubles.hostile_openai import MODES  # noqa: E402

KEY = "kk3-bench-key-Zm9vYmFyYmF6cXV1eC0xMjM0NTY3"
#: address-space limit for `--before` runs: the unbounded client must not take the machine
BEFORE_AS_BYTES = 2 << 30


def server(mode: str):
    p = subprocess.Popen([sys.executable, "-m", "tests.doubles.hostile_openai", "--mode", mode,
                          "--api-key-env", "KK3_BENCH_KEY"], cwd=ROOT,
                         env={**os.environ, "KK3_BENCH_KEY": KEY},
                         stdout=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    url = re.search(r"(http://\S+/v1)", line).group(1)
    return p, url


def run_accept(root: Path, url: str, timeout_s: float, out: Path, limit_as: bool):
    def pre():
        if limit_as:
            resource.setrlimit(resource.RLIMIT_AS, (BEFORE_AS_BYTES, BEFORE_AS_BYTES))

    argv = [sys.executable, "-m", "components", "accept", "--endpoint", url, "--model",
            "Kimi-K3", "--api-key-env", "KK3_BENCH_KEY", "--timeout", str(timeout_s),
            "--requests", "8", "--concurrency", "4", "--out", str(out)]
    start = time.monotonic()
    p = subprocess.Popen(argv, cwd=root, env={**os.environ, "KK3_BENCH_KEY": KEY},
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, preexec_fn=pre)
    text = p.stdout.read().decode(errors="replace")
    _, status, usage = os.wait4(p.pid, 0)
    took = time.monotonic() - start
    return os.waitstatus_to_exitcode(status), text, usage.ru_maxrss / 1024, took


def outcome(code: int, text: str, out: Path) -> str:
    written = out.read_text(errors="replace") if out.exists() else ""
    leak = any(KEY in t or KEY in decoded(t) for t in (text, written))  # \\u or %XX spelled too
    ctl = bool(re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", text))
    failing = re.findall(r"^\s+FAIL (\w+)", text, re.M)
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    last = lines[-1] if lines else ""
    if "Traceback" in text:
        last = "TRACEBACK " + next((ln for ln in reversed(lines) if "Error" in ln), last)[:80]
    return (f"exit {code}; {last[:60]}; failing {','.join(failing) or '-'}; "
            f"key shown {'YES' if leak else 'no'}; control chars {'YES' if ctl else 'no'}")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--timeout", type=float, default=10.0, help="accept --timeout (10)")
    p.add_argument("--cases", default=",".join(sorted(MODES)))
    p.add_argument("--before", type=Path, help="another checkout's root to run as well")
    a = p.parse_args(argv)
    load = os.getloadavg()[0]
    print(f"accept vs hostile servers (accept --timeout {a.timeout:g} --requests 8 "
          f"--concurrency 4; load average {load:.2f}; two cores shared)")
    print(f"{'case':<13} {'code':<7} {'peak MB':>8} {'time s':>7}  outcome")
    roots = [("after", ROOT, False)] + ([("before", a.before, True)] if a.before else [])
    for mode in a.cases.split(","):
        for label, root, limit in roots:
            srv, url = server(mode)
            try:
                with tempfile.TemporaryDirectory() as tmp:
                    out = Path(tmp) / "report.json"
                    code, text, peak, took = run_accept(root, url, a.timeout, out, limit)
                    print(f"{mode:<13} {label:<7} {peak:>8.0f} {took:>7.1f}  "
                          f"{outcome(code, text, out)}", flush=True)
            finally:
                srv.terminate()
                rest, _ = srv.communicate(timeout=10)
            if mode == "redirect":
                reached = rest.count("sink got:")
                print(f"{'':<13} {'':<7} {'':>8} {'':>7}  redirect target reached: "
                      f"{f'YES ({reached} requests)' if reached else 'no'}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
