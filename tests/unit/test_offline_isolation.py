"""An offline run leaves the process as it found it: the next Pulumi program in the same process
(another `run_program`, or a unit test under `pulumi.runtime.test`) works whatever ran before.

The defect this pins: the runner shut down its loop's default executor and left that loop as
the thread's current loop, so the next program found it through `asyncio.get_event_loop()` and
failed with "Executor shutdown has been called"; which unit tests passed depended on the subset
and order pytest ran them in (components/offline/runner.py `_close_run_loops`).
"""

import asyncio

import pulumi

from components.offline.runner import run_program


class _Mocks(pulumi.runtime.Mocks):
    """Test double for the Pulumi engine: records the resources a program registers."""

    def __init__(self):
        self.names = []

    def new_resource(self, args: pulumi.runtime.MockResourceArgs):
        self.names.append(args.name)
        return f"{args.name}-id", dict(args.inputs)

    def call(self, args):
        return {}


def test_a_pulumi_test_after_an_offline_run_registers_its_resources():
    saved = dict(pulumi.runtime.config.CONFIG.get())
    try:
        assert run_program("ctyun-hcc").resources
        mocks = _Mocks()
        pulumi.runtime.set_mocks(mocks, project="kimi-k3", stack="isolation", preview=False)

        @pulumi.runtime.test
        def program():
            return pulumi.CustomResource("test:index:Probe", "probe", {}).urn

        program()   # raised RuntimeError("Executor shutdown has been called") before the fix
        assert mocks.names == ["probe"]
    finally:
        pulumi.runtime.config.CONFIG.set(saved)


def test_an_offline_run_leaves_a_usable_current_loop():
    """The thread's current loop after a run is neither closed nor has a shut-down executor."""
    run_program("ctyun-hcc")
    loop = asyncio.get_event_loop_policy().get_event_loop()
    assert not loop.is_closed() and not loop._executor_shutdown_called, \
        "the offline run left a spent loop as the thread's current loop"
    assert loop.run_until_complete(loop.run_in_executor(None, sum, [1, 2])) == 3
