"""The common base of every CTyun dynamic resource that works over SSH (bootstrap, service).

A subclass declares its own inputs (`STEP_INPUTS`, with defaults), which of them force a
replacement (`REPLACE_KEYS`), and implements `apply` (make it so; idempotent) and `observe`
(what is there now). This base handles the SSH plumbing the same way for all of them:

- the SSH inputs (`SSH_INPUTS`) are resolved at call time into a fresh `SshRunner`; the
  provider object keeps nothing (it is pickled into the state);
- what every dynamic provider gets from components/dynamic/provider.py: `__provider` stripped,
  inputs with their defaults, the diff (step inputs in `REPLACE_KEYS` replace, the others update
  in place), whatever an operation raises or logs redacted of its secrets (the SSH password and
  keys, the step's secret inputs);
- changing only SSH inputs (a new bastion, a rotated key) updates in place without re-running
  the step; `hostKey`/`bastionHostKey` are the pins from `HostKeyPin`, verified on every
  connection before any credential is sent;
- outputs are the inputs plus what the step reports; `sshPrivateKey`, `sshPassword` and
  `sshBastionPrivateKey` are secret. After `HostKeyPin` every step logs in with the stack's own
  key (its `loginKey` output) and gets no password at all;
- progress (docs/progress.md): `apply` runs inside a progress phase named by `PROGRESS_PHASE`
  in the file the program passes as `progressFile`; the progress inputs are steering inputs
  (a change of only them is no change).
"""

from __future__ import annotations

import time
from typing import Any, Dict, List, Mapping, Optional, Tuple

import pulumi
import pulumi.dynamic
from pulumi.dynamic import CreateResult, DiffResult, ReadResult, UpdateResult

from ..dynamic.provider import Provider, is_unknown, redacted_logger
from .reach import MasterUnreachable, unreachable_message
from .ssh import (CommandFailed, SshError, SshRunner, credentials_from_props, remote_errors,
                  target_from_props)

log = redacted_logger("kimi_k3.ctyun.bootstrap")
SSH_INPUTS: Dict[str, Any] = {
    "sshHost": None, "sshPort": 22, "sshUser": "root", "sshBastion": "", "hostKey": "",
    "bastionHostKey": "", "sshPrivateKey": "", "sshPassword": "", "sshBastionPrivateKey": "",
    "remoteEnv": {}, "connectTimeoutS": 20, "commandTimeoutS": 600,
    # the cluster the master belongs to (HccCluster's UUID): another one replaces the step
    "clusterUUID": "",
}
SECRET_OUTPUTS = ["sshPrivateKey", "sshPassword", "sshBastionPrivateKey"]
#: steering inputs of every step: where to record progress, what the plan expects
PROGRESS_INPUTS: Dict[str, Any] = {"progressFile": "", "progressExpect": {}}
#: the step inputs that bound its wait, first found wins (the progress phase's deadline)
DEADLINE_INPUTS = ("startupTimeoutS", "installTimeoutS", "timeoutS")
#: counters of the last operations in this process (read by bench/ctyun_bootstrap.py)
STATS: Dict[str, float] = {"round_trips": 0, "connects": 0, "poll_wait_s": 0.0, "ops": 0}


class SshStepProvider(Provider):
    """Base provider: a step on the cluster, run through the master over SSH."""

    STEP_INPUTS: Dict[str, Any] = {}
    #: step inputs whose change replaces the step; a change of any other input re-runs `apply`
    #: in place (`update`), one of only the SSH inputs just reconnects
    REPLACE_KEYS: Tuple[str, ...] = ()
    DELETE_BEFORE_REPLACE = True
    #: the progress phase of `apply` and what it waits for (formatted with the inputs)
    PROGRESS_PHASE = ""
    PROGRESS_WAITING = "{step} on {sshHost}"
    #: a step done node by node names the output listing the nodes it has done; an update
    #: passes them to `apply` as `nodesDone` unless one of REDO_KEYS changed (then every node
    #: again): a grow runs the step on the new nodes only, never on the nodes that serve
    NODES_DONE_OUTPUT = ""
    REDO_KEYS: Tuple[str, ...] = ()

    # ---- helpers ---------------------------------------------------------------------------
    def input_defaults(self) -> Mapping[str, Any]:
        return {**SSH_INPUTS, **PROGRESS_INPUTS, **self.STEP_INPUTS}

    def runner(self, p: Mapping[str, Any]) -> SshRunner:
        return SshRunner(target_from_props(p), credentials_from_props(p), redact=self.secrets(p))

    def _apply(self, p: Dict[str, Any]) -> Dict[str, Any]:
        """`apply`, recorded as a progress phase (docs/progress.md)."""
        step = type(self).__name__.removesuffix("Provider")
        phase = self.progress_phase(p)
        try:
            waiting = self.PROGRESS_WAITING.format(step=step, **p)
        except (KeyError, IndexError, ValueError):
            waiting = f"{step} on {p.get('sshHost')}"
        deadline = next((p[k] for k in DEADLINE_INPUTS if k in p and p[k]), None)
        with self.progress(p).phase(phase, waiting, deadline_s=deadline):
            return self._run(self.apply, p)

    def progress_phase(self, p: Mapping[str, Any]) -> str:
        """The progress phase `apply` is recorded as: PROGRESS_PHASE, else `bootstrap-<step>`.
        Resources of one type that run side by side override it with distinct names (one
        phase name is one wait in the status view)."""
        step = type(self).__name__.removesuffix("Provider")
        return self.PROGRESS_PHASE or "bootstrap-" + "".join(
            "-" + c.lower() if c.isupper() else c for c in step).lstrip("-")

    def _run(self, fn, p: Dict[str, Any]):
        runner = self.runner(p)
        try:
            self._reach_master(runner, p)
            with runner:
                return fn(runner, p)
        finally:
            STATS["round_trips"] += runner.round_trips
            STATS["connects"] += runner.connects
            STATS["ops"] += 1

    def _reach_master(self, runner: SshRunner, p: Dict[str, Any]) -> None:
        """Connect, or say in one line which master could not be reached and what to check
        (reach.py) instead of a bare socket error: nothing has been sent yet. A refused login
        or a changed host key keeps its own message (the master answered)."""
        try:
            runner.connect()
        except SshError:
            raise
        except remote_errors() as e:
            step = type(self).__name__.removesuffix("Provider")
            raise MasterUnreachable(unreachable_message(
                str(p.get("sshHost")), int(p.get("sshPort") or 22), e,
                user=str(p.get("sshUser") or "root"), bastion=str(p.get("sshBastion") or ""),
                doing=step), e) from None

    # ---- to implement ---------------------------------------------------------------------
    def apply(self, runner: SshRunner, p: Dict[str, Any]) -> Dict[str, Any]:
        """Make the step true on the cluster (idempotent); return its outputs."""
        raise NotImplementedError

    def observe(self, runner: SshRunner, p: Dict[str, Any]) -> Dict[str, Any]:
        """The step's outputs as the cluster shows them now (for refresh)."""
        return {}

    def remove(self, runner: SshRunner, p: Dict[str, Any]) -> None:
        """Undo the step (idempotent: gone already is success)."""

    def resource_id(self, p: Dict[str, Any], outs: Dict[str, Any]) -> str:
        return f"{p['sshHost']}:{type(self).__name__}"

    # ---- the dynamic provider protocol -----------------------------------------------------
    def create(self, props):
        p = self.inputs(props)
        outs = self._apply(p)
        return CreateResult(self.resource_id(p, outs), {**p, **outs})

    def read(self, id_, props):
        """What the step's `observe` sees; with the master unreachable (down, released with
        its cluster, an address no longer allowed) the record is kept as it is and the
        warning says so: a refresh must not fail where the cluster's own refresh tells what
        happened (a cluster deleted outside Pulumi leaves the state there)."""
        p = self.inputs(props)
        try:
            outs = self._run(self.observe, p)
        except MasterUnreachable as e:
            log.warning("refresh of %s kept as recorded: %s", id_, e)
            return ReadResult(id_, props)
        return ReadResult(id_, {**props, **outs})

    # diff: the base's (every input but the steering ones; REPLACE_KEYS replace), and:
    def changed(self, olds, news):
        return [k for k in super().changed(olds, news) if k != "clusterUUID"]

    def diff(self, id_, olds, news):
        """The base's, plus: a step done on another cluster is replaced. A cluster ordered
        anew (the old one deleted in the console or released at the end of its billing
        period, issue 19 day two) has a new master and empty disks, but every step's inputs
        but the SSH ones (address, pinned key) may be the same, and a change of only those
        reconnects without re-running: the weights, the image and the service would never
        reach the new cluster. A state from before this input (no UUID recorded) is not
        replaced for its absence."""
        base = super().diff(id_, olds, news)
        old, new = olds.get("clusterUUID") or "", news.get("clusterUUID")
        if not old or not (is_unknown(new) or (new and new != old)):
            return base
        log.info("%s: cluster %s is not %s: the step is done again", id_, new, old)
        return DiffResult(changes=True, replaces=sorted(set(base.replaces or []) | {"clusterUUID"}),
                          delete_before_replace=self.DELETE_BEFORE_REPLACE)

    def update(self, id_, olds, news):
        o, n = self.inputs(olds), self.inputs(news)
        step_changed = any(o.get(k) != n.get(k) for k in self.STEP_INPUTS)
        if step_changed:
            done = []
            if self.NODES_DONE_OUTPUT and not any(o.get(k) != n.get(k) for k in self.REDO_KEYS):
                done = list(olds.get(self.NODES_DONE_OUTPUT) or [])
            outs = self._apply({**n, "nodesDone": done} if self.NODES_DONE_OUTPUT else n)
        else:  # only how we reach the cluster changed: keep the step's outputs
            outs = {k: v for k, v in olds.items() if k not in n}
        return UpdateResult({**n, **outs})

    def holds_something(self) -> bool:
        """Does this step leave anything on the cluster that `remove` takes back? A step whose
        data goes with the cluster (mounts, weights, image, queue membership) has nothing to
        undo, so its delete never connects: an unreachable master cannot stop a destroy on its
        way to the billed cluster."""
        return type(self).remove is not SshStepProvider.remove

    def delete(self, id_, props):
        """Undo the step; a master that cannot be reached (refused, timed out, a changed host
        key: nothing is sent) is said, not raised: what the step left there goes with the
        cluster, and a destroy must reach the billed cluster (issue 19 item 4; the TLS front
        and the router hold processes on the master). A command that ran and failed is raised:
        the master answered, and the operator has to see why."""
        if not self.holds_something():
            return
        p = self.inputs(props)
        try:
            self._run(self.remove, p)
        except CommandFailed:
            raise
        except remote_errors() as e:
            step = type(self).__name__.removesuffix("Provider")
            log.warning("%s: could not undo it on %s:%s (%s: %s); what it left on the master "
                        "goes when the cluster is deleted; if the cluster stays, run `pulumi "
                        "up` once the master answers and remove it by hand", step,
                        p.get("sshHost"), p.get("sshPort"), type(e).__name__, e)


def poll(label: str, fn, deadline: float, interval_s: float):
    """Call `fn()` until it returns a truthy value or `deadline` (monotonic) passes.

    Time spent sleeping is added to STATS["poll_wait_s"]; on timeout raises TimeoutError with
    `label` and the last value seen.
    """
    last = None
    while True:
        last = fn()
        if last:
            return last
        if time.monotonic() + interval_s > deadline:
            raise TimeoutError(f"gave up waiting for {label}")
        time.sleep(interval_s)
        STATS["poll_wait_s"] += interval_s


def step_resource(provider_cls, type_name: str, output_names: List[str],
                  secret_outputs: Optional[List[str]] = None):
    """The Pulumi resource class of one SSH step: type `pulumi-python:dynamic/ctyun:<type_name>`,
    every SSH and step input present (None when unset) so that the engine diffs them all, the
    step's outputs declared, and the connection secrets (with `secret_outputs`, by default the
    provider's `SECRET_INPUTS`) kept secret in state. One factory for every module's steps: the
    classes differ only in these arguments."""
    secrets = SECRET_OUTPUTS + list(provider_cls.SECRET_INPUTS if secret_outputs is None
                                    else secret_outputs)
    # an output named like an input would blank that input here (outputs start as None) and
    # overwrite it in the state: the Broadcast's output `method` did both (the config's method
    # never reached the step, and every later diff saw the input changed). Only an input the
    # step never diffs on may share its output's name (HostKeyPin's pins: IGNORED_KEYS)
    clash = sorted(set(output_names) & set({**SSH_INPUTS, **provider_cls.STEP_INPUTS})
                   - set(provider_cls.IGNORED_KEYS))
    if clash:
        raise ValueError(f"{type_name}: output(s) {', '.join(clash)} are also input names")

    class _Step(pulumi.dynamic.Resource, module="ctyun", name=type_name):
        def __init__(self, resource_name: str, inputs: Dict[str, Any],
                     opts: Optional[pulumi.ResourceOptions] = None):
            keys = {**SSH_INPUTS, **provider_cls.STEP_INPUTS}
            props = {**{k: None for k in keys}, **inputs, **{k: None for k in output_names}}
            opts = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(
                additional_secret_outputs=secrets))
            super().__init__(provider_cls(), resource_name, props, opts)

    _Step.__name__ = _Step.__qualname__ = type_name
    _Step.__doc__ = provider_cls.__doc__ or f"{type_name} (an SSH step of the CTyun bootstrap)"
    return _Step
