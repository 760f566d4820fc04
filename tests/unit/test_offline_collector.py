"""An offline run turns Python's cycle collector off while the program runs and gives it back as
it found it (components/offline/runner.py `without_cycle_collection`: the collector's passes over
the SDKs' classes were about 0.5 s of an aws-eks plan's CPU, docs/benchmarks.md). A test, a
second run or the CLI after it must find the collector as it was, also when the program failed.
"""

import gc

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
