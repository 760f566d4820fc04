"""What every CTyun dynamic provider needs at call time, kept out of the pickled provider, and
`CtyunProvider`, their common base (on the shared `components.dynamic.provider.Provider`).

A dynamic provider object is pickled into the Pulumi state, so it holds nothing but code.
Credentials and the endpoint are looked up here when an operation runs: environment first
(`CTYUN_AK`, `CTYUN_SK`, `CTYUN_ENDPOINT`), then the stack config the engine hands the provider
host through `configure` (`ctyun:accessKey`, `ctyun:secretKey`, `ctyun:endpoint`), kept in this
module's process-local dict, never on the provider instance. Nothing here derives names from
the stack: the host reports it as "stack"; the program passes names in as inputs.
"""

from __future__ import annotations

import os
from typing import Any, Dict, List, Mapping

from ..dynamic.provider import UNKNOWN, Provider, is_unknown, known, redacted_logger, strip
from ..inference.errors import ConfigError
from ..progress.record import STEERING_INPUTS
from .api.ehpc import Ehpc
from .api.transport import Transport, credentials_from
from .api.vpc import VpcApi
from .api.waits import DeadlineExceeded, Waiter

__all__ = ["UNKNOWN", "RUNTIME_CONFIG", "STEERING_KEYS", "CtyunProvider", "credential_values",
           "ehpc", "is_unknown", "known", "remember_config", "strip", "transport", "vpc",
           "waiter"]

#: stack config the dynamic-provider host received (process-local; never pickled)
RUNTIME_CONFIG: Dict[str, Any] = {}

#: inputs that only steer a provider (where to call, how long to wait, where progress goes):
#: changing them alone is no update, which would otherwise turn every output unknown in preview
STEERING_KEYS = frozenset({"endpoint", "timeoutS", "pollIntervalS", "createTimeoutS",
                           "updateTimeoutS", "deleteTimeoutS", "lostAnswerWaitS",
                           *STEERING_INPUTS})


def remember_config(config: Any) -> None:
    """Keep the `ctyun:*` values of a `pulumi.dynamic.ConfigureRequest.config`."""
    raw = getattr(config, "_props", None) or {}
    for key in ("ctyun:accessKey", "ctyun:secretKey", "ctyun:endpoint"):
        if raw.get(key) is not None:
            RUNTIME_CONFIG[key] = raw[key]


def transport(props: Mapping[str, Any]) -> Transport:
    """A fresh transport for one operation, credentials resolved at each request."""
    return Transport(credentials=lambda: credentials_from(os.environ, RUNTIME_CONFIG),
                     endpoint=props.get("endpoint") or RUNTIME_CONFIG.get("ctyun:endpoint")
                     or None)


def ehpc(props: Mapping[str, Any], t: Transport = None) -> Ehpc:
    return Ehpc(t or transport(props), str(props["regionID"]))


def vpc(props: Mapping[str, Any], t: Transport = None) -> VpcApi:
    return VpcApi(t or transport(props), str(props["regionID"]))


def waiter(props: Mapping[str, Any]) -> Waiter:
    return Waiter(float(props.get("pollIntervalS") or 30))


def credential_values() -> List[str]:
    """The access key pair in use (to redact), or nothing when none is configured."""
    try:
        c = credentials_from(os.environ, RUNTIME_CONFIG)
    except ConfigError:
        return []
    return [c.ak, c.sk]


#: the CTyun client's and providers' logger: every record redacted of the running operation's
#: secrets and of the credentials in use, also outside a provider operation
LOG = redacted_logger("kimi_k3.ctyun", extra=credential_values)


class CtyunProvider(Provider):
    """A provider that calls CTyun's OpenAPI: credentials from the environment or the stack
    config the host was configured with, read at each call; waits fail with CTyun's
    `DeadlineExceeded` (api/waits.py); the endpoint and the waits' knobs are steering inputs."""

    serialize_as_secret_always = False
    STEERING_KEYS = tuple(sorted(STEERING_KEYS))
    DEADLINE_ERROR = DeadlineExceeded

    def configure(self, req: Any) -> None:
        remember_config(req.config)

    def credential_values(self) -> List[str]:
        return credential_values()
