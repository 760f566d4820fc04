"""A provider on components/dynamic/provider.py's base, for the tests of what the base promises
(tests/unit/test_dynamic_provider.py in process, tests/integration/test_provider_base_grpc.py
through Pulumi's real provider host).

Not a double of anything: a real provider whose operations report what they were handed and
misbehave on request (`fail`: log and raise text full of secrets; `waitS`: wait on something
that never comes). It keeps nothing: what it saw goes into its outputs or its error text.
"""

from __future__ import annotations

import os

from pulumi.dynamic import CreateResult, UpdateResult

from components.dynamic.provider import Provider, redacted_logger

log = redacted_logger("kimi_k3.probe")
#: the environment variable the probe reads its "credential" from, at call time
CREDENTIAL_ENV = "KK3_PROBE_CREDENTIAL"


class BaseProbe(Provider):
    RENAMED = {"old_name": "newName", "size_gb": "sizeGb"}
    DIFF_KEYS = ("newName", "sizeGb", "rootPassword")
    REPLACE_KEYS = ("newName",)
    SECRET_INPUTS = ("extraSecret",)
    TIMEOUT_INPUTS = {"create": "createTimeoutS"}
    DEFAULT_TIMEOUT_S = 5.0

    def credential_values(self):
        value = os.environ.get(CREDENTIAL_ENV)
        return [value] if value else []

    def _misbehave(self, p, what: str) -> None:
        secrets = [p.get("rootPassword"), p.get("extraSecret"), *self.credential_values()]
        shown = " ".join(str(s) for s in secrets if s)
        log.warning("%s: about to fail with %s", what, shown)
        self.warn(f"{what}: warning with {shown}")
        with self.progress(p).phase("probe-wait", f"{what} with {shown}") as ph:
            ph.update(f"saw {shown}", force=True)
        try:
            raise ValueError(f"inner cause: {shown}")
        except ValueError as inner:
            raise RuntimeError(f"{what} failed: keys {sorted(p)}; secrets {shown}") from inner

    def create(self, props):
        if props.get("fail"):
            self._misbehave(props, "create")
        if props.get("waitS") is not None:
            seen = f"still nothing for {props.get('rootPassword')}"
            self.deadline(props, "create").until("something that never comes",
                                                 lambda: (False, None, seen), float(props["waitS"]))
        return CreateResult("probe-1", {**props, "seen": sorted(props)})

    def update(self, id_, olds, news):
        if news.get("fail"):
            self._misbehave(news, "update")
        return UpdateResult({**news, "seen": sorted(news), "seenOlds": sorted(olds)})

    def delete(self, id_, props):
        if props.get("fail"):
            self._misbehave(props, "delete")
