"""`python -m components` moves what is left out of the cycle collector's reach before the
interpreter exits (components/__main__.py: the collector's shutdown passes over the SDKs' objects
were 0.8 s of an aws-eks plan's CPU), and the command's work is all done and written by then.
A fresh interpreter runs the entry point as `-m` does, with an exit hook registered first (it
runs last) that reports what the shutdown will find."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import atexit, gc, runpy, sys
atexit.register(lambda: print("frozen objects:", gc.get_freeze_count()))
sys.argv = ["components", *sys.argv[1:]]
runpy.run_module("components", run_name="__main__", alter_sys=True)
"""


def _run(*argv):
    return subprocess.run([sys.executable, "-c", PROBE, *argv], cwd=ROOT, capture_output=True,
                          text=True)


def test_a_finished_plan_leaves_its_objects_out_of_the_shutdown_collection(tmp_path):
    out = tmp_path / "plan"
    done = _run("plan", "--stack", "ctyun-hcc", "--quiet", "--out", str(out))
    assert done.returncode == 0, done.stderr
    written, frozen = done.stdout.strip().rsplit("\n", 1)
    assert (out / "plan.json").is_file() and str(out / "plan.json") in written.split("\n")
    assert int(frozen.split(":")[1]) > 0, frozen  # 0: the shutdown walks them all again


def test_a_refused_command_still_exits_with_its_code(tmp_path):
    done = _run("plan", "--stack", "no-such-stack", "--quiet", "--out", str(tmp_path / "x"))
    assert done.returncode == 2 and "no-such-stack" in done.stderr
    assert done.stdout.startswith("frozen objects:") and int(done.stdout.split(":")[1]) > 0, done.stdout
