"""A dynamic provider that tries every way of showing something (for test_provider_output.py).

Not a double of anything: it is a real provider run by Pulumi's real provider host, used to
observe which of its outputs can reach the engine (docs/progress.md, "What a dynamic provider
can show").
"""

import logging
import sys

import pulumi
from pulumi.dynamic import CreateResult, ResourceProvider

from components.progress.record import ProgressLog


class OutputProbe(ResourceProvider):
    def create(self, props):
        from pulumi.runtime import settings

        print(f"probe: engine client is {settings.get_engine()!r}", file=sys.stderr)
        pulumi.log.info("probe: pulumi.log.info")
        pulumi.log.info("probe: pulumi.log.info ephemeral", ephemeral=True)
        pulumi.log.warn("probe: pulumi.log.warn")
        pulumi.log.debug("probe: pulumi.log.debug")
        pulumi.log.error("probe: pulumi.log.error")
        logging.getLogger("kimi_k3.probe").info("probe: logging.info")
        logging.getLogger("kimi_k3.probe").warning("probe: logging.warning")
        print("probe: print to stdout", flush=True)
        print("probe: print to stderr", file=sys.stderr)
        log = ProgressLog(props.get("progressFile"), secrets=[props.get("apiKey", "")])
        with log.phase("probe-wait", "nothing, for a test", expected_s=60,
                       assumption="a test") as p:
            p.update(f"saw key {props.get('apiKey')}", force=True)
        return CreateResult("probe-1", {})
