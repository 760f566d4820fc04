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


#: the plan command in a fresh interpreter, counting the collector's passes from its start
PASSES = """
import gc, sys
from components.cli.main import main
passes = []
gc.collect()  # the count of new objects starts from 0, as after any pass
gc.callbacks.append(lambda phase, info: phase == "start" and passes.append(info["generation"]))
code = main(sys.argv[1:])
print("passes:", len(passes), "collector on after:", gc.isenabled(), "code:", code)
"""


def test_a_plan_makes_no_cycle_collector_pass(tmp_path):
    # the commands' imports (components/cli/main.py) and the whole plan command
    # (components/cli/plan.py) run with the collector off: each pass walked every module object
    # imported so far; the collector is on again when the command returns
    done = subprocess.run([sys.executable, "-c", PASSES, "plan", "--stack", "ctyun-hcc", "--quiet",
                           "--out", str(tmp_path / "plan")], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().rsplit("\n", 1)[-1] == "passes: 0 collector on after: True code: 0"


def test_building_the_parser_gives_the_collector_back_as_it_found_it():
    import gc

    from components.cli.main import parser

    for enabled in (False, True):
        (gc.enable if enabled else gc.disable)()
        try:
            assert parser().parse_args(["plan"]).command == "plan"
            assert gc.isenabled() is enabled
        finally:
            gc.enable()
