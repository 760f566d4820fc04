"""An offline run turns Python's cycle collector off while the program runs and gives it back as
it found it (components/offline/runner.py `without_cycle_collection`: the collector's passes over
the SDKs' classes were about 0.5 s of an aws-eks plan's CPU, docs/benchmarks.md). A test, a
second run or the CLI after it must find the collector as it was, also when the program failed.
A run that imported modules freezes what it leaves (they live as long as the process); a run
that imported nothing new freezes nothing, so a process running many plans keeps no garbage
per run.
"""

import gc
import uuid

import pytest

from components.offline.runner import run_program

PROBE = """
import gc
import pulumi
pulumi.export("collector_on", gc.isenabled())
"""


@pytest.fixture
def program(tmp_path):
    def write(text):
        main = tmp_path / "__main__.py"
        main.write_text(text)
        return main
    yield write
    gc.enable()


def test_the_program_runs_without_the_collector_and_gets_it_back(program):
    assert gc.isenabled()
    run = run_program("ctyun-hcc", main=program(PROBE))
    assert run.outputs == {"collector_on": False}
    assert gc.isenabled(), "the run left the cycle collector off"


def test_a_failed_program_gives_the_collector_back(program):
    main = program(PROBE + "raise RuntimeError('the program failed')\n")
    with pytest.raises(RuntimeError, match="the program failed"):
        run_program("ctyun-hcc", main=main)
    assert gc.isenabled(), "a failed run left the cycle collector off"


def test_a_collector_turned_off_before_the_run_stays_off(program):
    gc.disable()
    run_program("ctyun-hcc", main=program(PROBE))
    assert not gc.isenabled(), "the run turned on a collector its caller had turned off"


def test_a_run_that_imports_a_module_freezes_what_it_leaves(program, tmp_path):
    name = f"kk3_fresh_{uuid.uuid4().hex}"
    (tmp_path / f"{name}.py").write_text("VALUE = 1\n")
    main = program(f"import sys\nsys.path.insert(0, {str(tmp_path)!r})\nimport {name}\n" + PROBE)
    before = gc.get_freeze_count()
    run_program("ctyun-hcc", main=main)
    assert gc.get_freeze_count() > before, "a run that imported a module froze nothing"


def test_a_run_that_imports_nothing_new_freezes_nothing(program):
    main = program(PROBE)
    run_program("ctyun-hcc", main=main)  # whatever this process had not imported yet
    before = gc.get_freeze_count()
    run_program("ctyun-hcc", main=main)
    assert gc.get_freeze_count() <= before, "a run that imported nothing froze its objects"
