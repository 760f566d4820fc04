"""Shared stack settings (namespace `kimi-k3`), parsed and checked before anything is created.

`parse_settings(raw, stack)` takes the raw string config of a stack (what `pulumi.Config`
holds, `kimi-k3:` prefix stripped) and returns typed `SharedSettings`, or raises ConfigError with
the key, the value and the fix. Pure: the Pulumi side (secrets) lives in `__main__.py`.
Target-specific keys (`ctyun:*`, `aws:*`, `kimi-k3:aws*`...) are parsed by each target.
"""

from __future__ import annotations

import ipaddress
import json
import math
import re
from dataclasses import dataclass, field
from typing import List, Mapping, Optional, Sequence, Tuple

from ..inference.catalog import (
    ACCELERATORS,
    DEFAULT_IMAGE_FOR_PLATFORM,
    DEFAULT_SHAPE_FOR_ACCELERATOR,
    IMAGES,
    MODELS,
)
from . import keys as config_keys
from ..accept.sizing import parse_accept_load
from ..inference import grammar
from ..inference.errors import ConfigError
from ..inference.planner import PlanRequest

TARGETS = ("ctyun-hcc", "aws-eks")
#: accelerators each target offers
TARGET_ACCELERATORS = {
    "ctyun-hcc": ("ascend-910c",),
    "aws-eks": ("b300", "b200", "h200", "h100"),
}
KNOWN_KEYS = frozenset({
    "target", "accelerator", "nodes", "model", "maxModelLen", "maxNumSeqs", "maxNumBatchedTokens",
    "gpuMemoryUtilization", "kvCacheDtype", "weightsSource", "streamWeights", "servedModelName",
    "port", "allowedCidrs", "image", "modelOverrides", "visionChunksPerPrompt", "apiKey", "hfToken",
    "allowInternet", "acceptLoad",
})
#: a CIDR this wide is "the internet": IPv4 prefixes shorter than /8, IPv6 shorter than /16
#: (0.0.0.0/0 and ::/0, but also 0.0.0.0/1 + 128.0.0.0/1)
INTERNET_PREFIX = {4: 8, 6: 16}
#: ports vLLM itself uses besides `kimi-k3:port` (launch.Runtime.rpc_port): the endpoint cannot
#: share them
RESERVED_PORTS = ((13389, "vLLM's data-parallel RPC port, --data-parallel-rpc-port"),)


@dataclass(frozen=True)
class SharedSettings:
    stack: str
    target: str
    accelerator: str
    node_shape: str
    nodes: int
    model: str
    image: str
    port: int
    served_model_name: str
    allowed_cidrs: Tuple[str, ...]
    max_model_len: Optional[int] = None
    max_num_seqs: Optional[int] = None
    max_num_batched_tokens: Optional[int] = None
    gpu_memory_utilization: Optional[float] = None
    kv_cache_dtype: Optional[str] = None
    weights_source: Optional[str] = None
    stream_weights: bool = False
    vision_chunks_per_prompt: int = 40
    model_overrides: Mapping[str, float] = field(default_factory=dict)
    has_api_key: bool = False
    has_hf_token: bool = False
    #: `kimi-k3:allowInternet`: the explicit opt-in any internet-wide CIDR needs (check_exposure)
    allow_internet: bool = False
    #: `kimi-k3:acceptLoad`: size of the acceptance gate's load part (components/accept/sizing.py)
    accept_load: str = "auto"
    #: `kimi-k3:*` keys that are not shared, for the target's own parser (it rejects unknown ones)
    target_config: Mapping[str, object] = field(default_factory=dict)

    def plan_request(self) -> PlanRequest:
        return PlanRequest(
            model=self.model,
            node_shape=self.node_shape,
            nodes=self.nodes,
            max_model_len=self.max_model_len,
            max_num_seqs=self.max_num_seqs,
            max_num_batched_tokens=self.max_num_batched_tokens,
            gpu_memory_utilization=self.gpu_memory_utilization,
            kv_cache_dtype=self.kv_cache_dtype,
            weights_source=self.weights_source,
            stream_weights=self.stream_weights,
            model_overrides=dict(self.model_overrides),
        )


def _int(raw: Mapping[str, str], key: str, default=None, lo=None, hi=None) -> Optional[int]:
    value = raw.get(key)
    if value is None or value == "":
        return default
    text = str(value).strip()
    if not re.match(r"^[0-9]+(?:_[0-9]+)*$", text):  # ASCII digits: int() would take '²'-like
        hint = " (write 131072, not 128K)" if text[-1:] in "kKmM" else ""
        raise ConfigError(f"kimi-k3:{key}", value, f"give an integer{hint}", "is not an integer")
    n = int(text.replace("_", ""))
    if (lo is not None and n < lo) or (hi is not None and n > hi):
        raise ConfigError(f"kimi-k3:{key}", n, f"use {lo} to {hi}", "is out of range")
    return n


def _float(raw, key) -> Optional[float]:
    value = raw.get(key)
    if value is None or value == "":
        return None
    try:
        f = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"kimi-k3:{key}", value, "give a number such as 0.9", "is not a number")
    if not math.isfinite(f):
        raise ConfigError(f"kimi-k3:{key}", value, "give a finite number such as 0.9", "is not finite")
    return f


def _bool(raw, key, default=False) -> bool:
    value = raw.get(key)
    if value is None or value == "":
        return default
    s = str(value).strip().lower()
    if s in ("true", "1", "yes"):
        return True
    if s in ("false", "0", "no"):
        return False
    raise ConfigError(f"kimi-k3:{key}", value, "use true or false", "is not a boolean")


def _json_value(raw, key, default):
    value = raw.get(key)
    if value is None or value == "":
        return default
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except ValueError:
        raise ConfigError(f"kimi-k3:{key}", value, "give a JSON value", "is not valid JSON") from None


def parse_cidrs(value, key: str = "kimi-k3:allowedCidrs") -> Tuple[str, ...]:
    """CIDRs allowed to reach the endpoint; the whole internet only when spelled out."""
    fix = 'give CIDRs such as ["203.0.113.0/24"] or 203.0.113.0/24,198.51.100.7/32'
    if value in (None, "", []):
        return ()
    if isinstance(value, str):
        if value.strip().startswith("["):
            try:
                items = json.loads(value)
            except ValueError:
                raise ConfigError(key, value, fix, "is not a JSON list") from None
        else:
            items = value.split(",")
    else:
        items = value
    if not isinstance(items, (list, tuple)):
        raise ConfigError(key, value, fix, "is not a list of CIDRs")
    out = []
    for item in items:
        if not isinstance(item, str):
            raise ConfigError(key, item, fix, "is not a CIDR")
        item = item.strip()
        try:
            net = ipaddress.ip_network(item, strict=True)
        except ValueError as e:
            raise ConfigError(key, item, fix, f"is not a CIDR ({e})") from None
        out.append(str(net))
    return tuple(out)


def internet_wide(cidrs) -> Tuple[str, ...]:
    """The CIDRs of `cidrs` that cover (a large share of) the whole internet."""
    out = []
    for c in cidrs:
        net = ipaddress.ip_network(str(c), strict=False)
        if net.prefixlen < INTERNET_PREFIX[net.version]:
            out.append(str(net))
    return tuple(out)


def check_exposure(cidrs, key: str, allow_internet: bool) -> None:
    """Refuse an internet-wide CIDR in `key` unless `kimi-k3:allowInternet` is true.

    Every CIDR list that opens something (the endpoint, SSH, the Kubernetes API) goes through
    this one rule, so exposure to the world is always a decision, never an accident.
    """
    wide = internet_wide(cidrs)
    if wide and not allow_internet:
        raise ConfigError(key, list(wide), "list your own networks (e.g. 203.0.113.10/32), or set "
                          "kimi-k3:allowInternet=true if the whole internet is meant",
                          "opens to the whole internet")


def _port(raw, default: int) -> int:
    n = _int(raw, "port", default, 1024, 65535)
    return grammar.port("kimi-k3:port", n, RESERVED_PORTS)


@dataclass(frozen=True)
class Exposure:
    """Something a CIDR list opens: `what` (a phrase), the config key holding the CIDRs."""

    what: str
    key: str
    cidrs: Tuple[str, ...]
    serves_model: bool = False


#: address space that is not reachable from the internet: RFC 1918, shared (RFC 6598),
#: loopback, link-local, IPv6 ULA/link-local/loopback (documentation ranges count as public:
#: they stand for public addresses in examples)
PRIVATE_NETS = tuple(ipaddress.ip_network(n) for n in (
    "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "127.0.0.0/8",
    "169.254.0.0/16", "fc00::/7", "fe80::/10", "::1/128"))


def public_cidrs(cidrs) -> Tuple[str, ...]:
    """The CIDRs that reach beyond private address space."""
    out = []
    for c in cidrs:
        net = ipaddress.ip_network(str(c), strict=False)
        if not any(net.version == p.version and net.subnet_of(p) for p in PRIVATE_NETS):
            out.append(str(net))
    return tuple(out)


def default_exposures(shared: "SharedSettings") -> List[Exposure]:
    """What `kimi-k3:allowedCidrs` opens on any target: the endpoint."""
    return [Exposure(f"the model endpoint (TCP {shared.port})", "kimi-k3:allowedCidrs",
                     shared.allowed_cidrs, serves_model=True)]


def exposure_warnings(exposures: Sequence[Exposure], has_api_key: bool) -> List[str]:
    """One line per public opening, printed at plan and `pulumi preview` (never refused here:
    `check_exposure` already refused internet-wide lists without kimi-k3:allowInternet)."""
    out: List[str] = []
    public_model = False
    for e in exposures:
        pub = public_cidrs(e.cidrs)
        if not pub:
            continue
        wide = internet_wide(pub)
        who = (f"the whole internet ({', '.join(wide)}, kimi-k3:allowInternet=true)" if wide
               else f"public addresses {', '.join(pub)}")
        out.append(f"{e.key} opens {e.what} to {who}")
        public_model = public_model or e.serves_model
    if public_model and not has_api_key:
        out.append("the endpoint is public and kimi-k3:apiKey is not set: anyone who can reach it "
                   "can use the model (pulumi config set --secret kimi-k3:apiKey ...)")
    # with a key, every path but GET /health needs it: vLLM's own check covers only /v1, /v2,
    # /inference, /cohere, so the launch spec loads kimi-k3's guard (inference/api_guard.py)
    return out


def parse_settings(raw: Mapping[str, object], stack: str) -> SharedSettings:
    """Typed, checked shared settings from a stack's raw `kimi-k3:*` config."""
    # keys that are not shared belong to the target, which must reject those it does not know
    target_config = {k: v for k, v in raw.items() if k not in KNOWN_KEYS}
    target = str(raw.get("target") or "")
    if target not in TARGETS:
        raise ConfigError("kimi-k3:target", target or None, f"use one of {', '.join(TARGETS)}",
                          "is not a known target")
    accelerator = str(raw.get("accelerator") or TARGET_ACCELERATORS[target][0])
    if accelerator not in ACCELERATORS:
        raise ConfigError("kimi-k3:accelerator", accelerator,
                          f"use one of {', '.join(TARGET_ACCELERATORS[target])}",
                          "is not a known accelerator")
    if accelerator not in TARGET_ACCELERATORS[target]:
        raise ConfigError("kimi-k3:accelerator", accelerator,
                          f"use one of {', '.join(TARGET_ACCELERATORS[target])} on {target}",
                          f"is not offered by {target}")
    model = str(raw.get("model") or ("w4a8" if target == "ctyun-hcc" else "mxfp4"))
    if model not in MODELS:
        raise ConfigError("kimi-k3:model", model, f"use one of {', '.join(sorted(MODELS))}",
                          "is not a known Kimi K3 weight variant")
    platform = ACCELERATORS[accelerator].platform
    image = str(raw.get("image") or DEFAULT_IMAGE_FOR_PLATFORM[platform])
    if image not in IMAGES:
        raise ConfigError("kimi-k3:image", image, f"use one of {', '.join(sorted(IMAGES))}",
                          "is not a known serving image")
    overrides = _json_value(raw, "modelOverrides", {})
    if not isinstance(overrides, dict):
        raise ConfigError("kimi-k3:modelOverrides", overrides, "give a JSON object", "is not an object")
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
               for v in overrides.values()):
        raise ConfigError("kimi-k3:modelOverrides", overrides, "give finite numbers as values",
                          "has a value that is not a finite number")
    served = grammar.served_model_name("kimi-k3:servedModelName",
                                       str(raw.get("servedModelName") or "Kimi-K3"))
    kv = raw.get("kvCacheDtype") or None
    allow_internet = _bool(raw, "allowInternet")
    allowed_cidrs = parse_cidrs(raw.get("allowedCidrs"))
    check_exposure(allowed_cidrs, "kimi-k3:allowedCidrs", allow_internet)
    return SharedSettings(
        stack=stack,
        target=target,
        accelerator=accelerator,
        node_shape=DEFAULT_SHAPE_FOR_ACCELERATOR[accelerator],
        nodes=_int(raw, "nodes", 4 if target == "ctyun-hcc" else 1, 1, 64),
        model=model,
        image=image,
        port=_port(raw, 11025 if target == "ctyun-hcc" else 8000),
        served_model_name=served,
        allowed_cidrs=allowed_cidrs,
        max_model_len=_int(raw, "maxModelLen"),
        max_num_seqs=_int(raw, "maxNumSeqs"),
        max_num_batched_tokens=_int(raw, "maxNumBatchedTokens"),
        gpu_memory_utilization=_float(raw, "gpuMemoryUtilization"),
        kv_cache_dtype=str(kv) if kv else None,
        weights_source=str(raw.get("weightsSource") or "") or None,
        stream_weights=_bool(raw, "streamWeights"),
        vision_chunks_per_prompt=_int(raw, "visionChunksPerPrompt", 40, 0, 1000),
        model_overrides=overrides,
        has_api_key=bool(raw.get("apiKey")),
        has_hf_token=bool(raw.get("hfToken")),
        allow_internet=allow_internet,
        accept_load=parse_accept_load(raw.get("acceptLoad")),
        target_config=target_config,
    )


def reject_unknown(target_config: Mapping[str, object], known) -> None:
    """Raise ConfigError for the first `kimi-k3:*` key neither shared nor the target's own."""
    for key in sorted(set(target_config) - set(known)):
        raise config_keys.unknown_key("kimi-k3", key, sorted(set(known) | KNOWN_KEYS))
