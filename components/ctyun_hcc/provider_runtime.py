"""What every CTyun dynamic provider needs at call time, kept out of the pickled provider.

A dynamic provider object is pickled (dill) into the Pulumi state, so it must hold nothing but
code. Credentials and the endpoint are looked up here when an operation runs: environment first
(`CTYUN_AK`, `CTYUN_SK`, `CTYUN_ENDPOINT`), then the stack config the engine hands the provider
host through `configure` (`ctyun:accessKey`, `ctyun:secretKey`, `ctyun:endpoint`), which is kept
in this module's process-local dict, never on the provider instance.
"""

from __future__ import annotations

import os
import time
from typing import Any, Dict, Mapping

from .client import CtyunClient, credentials_from
from .ehpc import Ehpc

PROVIDER_KEY = "__provider"
#: how an unknown value (preview) is spelled on the wire (pulumi.runtime.rpc.UNKNOWN)
UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"


def is_unknown(value: Any) -> bool:
    """True for a value not known until apply: the wire sentinel or the host's Unknown()."""
    return value == UNKNOWN or type(value).__name__ == "Unknown"

#: stack config the dynamic-provider host received (process-local; never pickled)
RUNTIME_CONFIG: Dict[str, Any] = {}


def remember_config(config: Any) -> None:
    """Keep the `ctyun:*` values of a `pulumi.dynamic.ConfigureRequest.config`."""
    raw = getattr(config, "_props", None) or {}
    for key in ("ctyun:accessKey", "ctyun:secretKey", "ctyun:endpoint"):
        if raw.get(key) is not None:
            RUNTIME_CONFIG[key] = raw[key]


def strip(props: Mapping[str, Any]) -> Dict[str, Any]:
    """Properties without the serialized provider (never sent to an API or compared)."""
    return {k: v for k, v in props.items() if k != PROVIDER_KEY}


def make_api(props: Mapping[str, Any]) -> Ehpc:
    """A fresh client for one operation, with credentials resolved at each request."""
    client = CtyunClient(
        credentials=lambda: credentials_from(os.environ, RUNTIME_CONFIG),
        endpoint=props.get("endpoint") or RUNTIME_CONFIG.get("ctyun:endpoint") or None,
    )
    return Ehpc(client, str(props["regionID"]), float(props.get("pollIntervalS") or 30))


def deadline_in(seconds: Any) -> float:
    return time.monotonic() + float(seconds)


#: inputs that only steer a provider (where to call, how long to wait): changing them alone is
#: no update, which would otherwise turn every output unknown in preview
STEERING_KEYS = frozenset({"endpoint", "timeoutS", "pollIntervalS"})


def with_defaults(props: Mapping[str, Any], defaults: Mapping[str, Any]) -> Dict[str, Any]:
    """`props` limited to the keys of `defaults`, missing or None ones filled from it."""
    return {k: props.get(k) if props.get(k) is not None else d for k, d in defaults.items()}


def changed_inputs(olds: Dict[str, Any], news: Dict[str, Any], keys) -> list:
    """Keys (other than steering ones) whose new value differs or is not known yet."""
    return [k for k in keys if k not in STEERING_KEYS and (is_unknown(news[k]) or olds[k] != news[k])]

