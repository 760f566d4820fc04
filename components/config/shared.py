"""Shared stack settings (namespace `kimi-k3`), parsed and checked before anything is created.

`parse_settings(raw, stack)` takes the raw string config of a stack (what `pulumi.Config`
holds, `kimi-k3:` prefix stripped) and returns typed `SharedSettings`, or raises ConfigError with
the key, the value and the fix. Pure: the Pulumi side (secrets) lives in `__main__.py`.
Target-specific keys (`ctyun:*`, `aws:*`, `kimi-k3:aws*`...) are parsed by each target.
"""

from __future__ import annotations

import ipaddress
import math
from dataclasses import dataclass, field
from typing import List, Mapping, Optional, Sequence, Tuple

from ..inference.catalog import (
    ACCELERATORS,
    DEFAULT_IMAGE_FOR_PLATFORM,
    DEFAULT_SHAPE_FOR_ACCELERATOR,
    DEFAULT_MODEL_ID,
    IMAGES,
    MODELS,
    RELEASES,
)
from . import api_key as api_keys
from . import keys as config_keys
from ..accept.sizing import parse_accept_load
from .values import IMAGE_DIGEST, MODEL_COMMIT, RawConfig, model_revision, served_model_name
from ..inference.errors import ConfigError
from ..inference.planner import PlanRequest
from ..program.registry import REGISTRY

#: the targets and the accelerators each offers, from the one registry (components/program)
TARGETS = tuple(REGISTRY)
TARGET_ACCELERATORS = {name: entry.accelerators for name, entry in REGISTRY.items()}
KNOWN_KEYS = frozenset({
    "target", "accelerator", "nodes", "model", "maxModelLen", "maxNumSeqs", "maxNumBatchedTokens",
    "gpuMemoryUtilization", "kvCacheDtype", "weightsSource", "streamWeights", "servedModelName",
    "port", "allowedCidrs", "image", "modelOverrides", "visionChunksPerPrompt", "apiKey", "hfToken",
    "allowInternet", "acceptLoad", "usdPerHour", "allowPlaintext", "replicas", "modelId",
    "modelRevision",
})
#: shared keys whose values are never quoted (nor kept in `SharedSettings.source`)
SECRET_KEYS = frozenset({"apiKey", "hfToken"})
#: per target: (model, nodes, port) when unset, from the registry
TARGET_DEFAULTS = {name: entry.defaults for name, entry in REGISTRY.items()}
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
    #: why the key would be too weak for an endpoint open to public addresses (config/api_key.py;
    #: never the key), or None: for a target whose exposure is not `allowedCidrs` (a load
    #: balancer an operator decides) to apply the same floor
    api_key_public_problem: Optional[str] = None
    has_hf_token: bool = False
    #: `kimi-k3:allowInternet`: the explicit opt-in any internet-wide CIDR needs (check_exposure)
    allow_internet: bool = False
    #: `kimi-k3:allowPlaintext`: the explicit opt-in a public endpoint without TLS needs
    allow_plaintext: bool = False
    #: `kimi-k3:acceptLoad`: size of the acceptance gate's load part (components/accept/sizing.py)
    accept_load: str = "auto"
    #: `kimi-k3:usdPerHour`: the stack's contracted price per hour (US dollars), for plan.json's
    #: cost and the acceptance gate's USD per million tokens (components/cost/estimate.py)
    usd_per_hour: Optional[float] = None
    #: `kimi-k3:modelId`: the released model (components/inference/catalog.py RELEASES); `model`
    #: is its weight variant's catalog key
    model_id: str = "kimi-k3"
    #: `kimi-k3:modelRevision` as given ("": the catalog's commit, else `main`): `revision()`
    model_revision: str = ""
    #: `kimi-k3:replicas`: serving replicas of `nodes` nodes each; more than one are served behind
    #: vllm-router (components/router/)
    replicas: int = 1
    #: `kimi-k3:*` keys that are not shared, for the target's own parser (it rejects unknown ones)
    target_config: Mapping[str, object] = field(default_factory=dict)
    #: the shared keys as written (secrets left out), so a later refusal quotes what the user
    #: wrote (`refuse`, `requote`), not the typed value
    source: RawConfig = field(default_factory=lambda: RawConfig("kimi-k3", {}, known=()),
                              repr=False, compare=False)

    def refuse(self, name: str, fix: str, problem: str) -> ConfigError:
        """The refusal of shared key `name` by a later rule (a target's), quoting it as written."""
        return self.source.refuse(name, fix, problem, default=_typed(self, name))

    def requote(self, err: ConfigError) -> ConfigError:
        """`err` (raised from typed values, e.g. by the planner) quoting the key as written."""
        return self.source.requote(err)

    def revision(self) -> str:
        """The weights' revision every download takes: kimi-k3:modelRevision, else the commit the
        catalog pins for the variant, else "" (the hub's default branch; warned:
        `revision_warning`)."""
        return self.model_revision or MODELS[self.model].revision or ""

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


def _typed(shared: "SharedSettings", name: str) -> object:
    """The typed value of shared key `name` (its default when unset), or None."""
    attr = {"nodes": "nodes", "port": "port", "model": "model", "accelerator": "accelerator",
            "servedModelName": "served_model_name", "acceptLoad": "accept_load",
            "replicas": "replicas", "modelId": "model_id"}.get(name)
    return getattr(shared, attr) if attr else None


def internet_wide(cidrs) -> Tuple[str, ...]:
    """The CIDRs of `cidrs` that cover (a large share of) the whole internet."""
    out = []
    for c in cidrs:
        net = ipaddress.ip_network(str(c), strict=False)
        if net.prefixlen < INTERNET_PREFIX[net.version]:
            out.append(str(net))
    return tuple(out)


def check_exposure(cidrs, key: str, allow_internet: bool, written: object = None) -> None:
    """Refuse an internet-wide CIDR in `key` unless `kimi-k3:allowInternet` is true.

    Every CIDR list that opens something (the endpoint, SSH, the Kubernetes API) goes through
    this one rule, so exposure to the world is always a decision, never an accident. The
    refusal quotes `written` (the list as the user wrote it), else the wide CIDRs.
    """
    wide = internet_wide(cidrs)
    if wide and not allow_internet:
        raise ConfigError(key, written if written is not None else list(wide),
                          "list your own networks (e.g. 203.0.113.10/32), or set "
                          "kimi-k3:allowInternet=true if the whole internet is meant",
                          "opens to the whole internet")


@dataclass(frozen=True)
class Exposure:
    """Something a CIDR list opens: `what` (a phrase), the config key holding the CIDRs."""

    what: str
    key: str
    cidrs: Tuple[str, ...]
    serves_model: bool = False
    #: said on a line of its own when the list reaches the whole internet (what anyone can do)
    internet_risk: str = ""


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


def public_endpoint(shared: "SharedSettings") -> bool:
    """Does `kimi-k3:allowedCidrs` reach a public address (the endpoint is public)?"""
    return bool(public_cidrs(shared.allowed_cidrs))


def refuse_plaintext(shared: "SharedSettings", tls_fix: str) -> None:
    """A public endpoint serves TLS, or the user said `kimi-k3:allowPlaintext: true` (then it is
    warned about): the API key and every prompt would otherwise cross the internet in clear.
    ConfigError naming allowedCidrs, with the target's way to get TLS (`tls_fix`)."""
    if public_endpoint(shared) and not shared.allow_plaintext:
        raise ConfigError("kimi-k3:allowedCidrs", shared.source.written("allowedCidrs"),
                          f"{tls_fix}, or set kimi-k3:allowPlaintext=true to serve plain HTTP "
                          "knowingly", "opens the endpoint to public addresses without TLS")


def plaintext_warning(shared: "SharedSettings") -> List[str]:
    """The line a public plain-HTTP endpoint gets at every plan and preview."""
    if public_endpoint(shared) and shared.allow_plaintext:
        return ["the endpoint is public and plain HTTP (kimi-k3:allowPlaintext=true): the API key "
                "and every prompt and answer cross the network in clear"]
    return []


def revision_warning(shared: "SharedSettings", unpinned: str = "") -> List[str]:
    """The line a plan and preview get when the weights are not pinned to a commit: vLLM runs
    with --trust-remote-code, so the repository's Python runs on every node, and a branch can
    change under the same name between two downloads (issue 21). `unpinned`: why the target's
    download cannot take a revision at all (Target.unpinned_weights)."""
    rev, repo = shared.revision(), MODELS[shared.model].repo_id
    if unpinned:
        return [f"{unpinned}: the weights and the repository code vLLM runs with "
                "--trust-remote-code are not pinned to a commit"]
    if MODEL_COMMIT.fullmatch(rev):
        return []
    why = (f"kimi-k3:modelRevision={rev} is a name, not a commit" if shared.model_revision else
           f"kimi-k3:modelRevision is not set and kimi-k3 pins no commit of {repo}")
    at = f"{repo}@{rev}" if rev else f"{repo}'s default branch"
    return [f"{why}: the weights and the repository code vLLM runs with --trust-remote-code are "
            f"whatever {at} holds when a node downloads them; pin one with pulumi config "
            "set kimi-k3:modelRevision <40-hex commit from the repository's history>"]


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
        if wide and e.internet_risk:
            out.append(f"{e.key} is open to the whole internet: {e.internet_risk} "
                       "(kimi-k3:allowInternet=true opens every list that asks; give this one "
                       "your own networks instead)")
        public_model = public_model or e.serves_model
    if public_model and not has_api_key:
        out.append("the endpoint is public and kimi-k3:apiKey is not set: anyone who can reach it "
                   "can use the model (pulumi config set --secret kimi-k3:apiKey ...)")
    # with a key, every path but GET /health needs it: vLLM's own check covers only /v1, /v2,
    # /inference, /cohere, so the launch spec loads kimi-k3's guard (inference/api_guard.py)
    return out


def _usd_per_hour(src: RawConfig) -> Optional[float]:
    """`kimi-k3:usdPerHour`: a positive, finite number of US dollars per hour, or unset."""
    value = src.number("usdPerHour", None, "98.5", " of US dollars per hour")
    if value is not None and value <= 0:
        raise src.refuse("usdPerHour", "give the stack's contracted price per hour in US dollars, "
                         "e.g. 98.5 (unset: the list prices)", "is not a price")
    return value


def _api_key(value: object, allowed_cidrs: Sequence[str]) -> Optional[str]:
    """kimi-k3:apiKey checked (config/api_key.py: the bearer-token grammar; the strength floor
    when the endpoint's CIDRs reach a public address); None when unset. The offline plan
    cannot read an encrypted value (`[secret]`): it is taken as set, and checked at deploy."""
    if value in (None, ""):
        return None
    text = str(value)
    if text == api_keys.OFFLINE_PLACEHOLDER:
        return text
    return api_keys.check(text, public=bool(public_cidrs(allowed_cidrs)))


def _public_problem(value: object) -> Optional[str]:
    """The strength floor's complaint about a set key (None when unset, strong, or encrypted in
    the offline plan, where it is checked at deploy)."""
    if value in (None, "") or str(value) == api_keys.OFFLINE_PLACEHOLDER:
        return None
    return api_keys.problem(str(value), public=True)


def parse_settings(raw: Mapping[str, object], stack: str) -> SharedSettings:
    """Typed, checked shared settings from a stack's raw `kimi-k3:*` config."""
    src = RawConfig("kimi-k3", {k: v for k, v in raw.items() if k in KNOWN_KEYS - SECRET_KEYS},
                    secret=SECRET_KEYS, known=KNOWN_KEYS)
    target, accelerator, model_id, model, image = _hardware(src)
    overrides = _model_overrides(src)
    served = src.checked("servedModelName", served_model_name, RELEASES[model_id].served_model_name)
    kv = src.text("kvCacheDtype")
    allow_internet = src.boolean("allowInternet")
    allowed_cidrs = src.cidrs("allowedCidrs")
    check_exposure(allowed_cidrs, "kimi-k3:allowedCidrs", allow_internet, src.written("allowedCidrs"))
    _, default_nodes, default_port = TARGET_DEFAULTS[target]
    return SharedSettings(
        stack=stack,
        target=target,
        accelerator=accelerator,
        node_shape=DEFAULT_SHAPE_FOR_ACCELERATOR[accelerator],
        nodes=src.integer("nodes", default_nodes, 1, 64),
        replicas=src.integer("replicas", 1, 1, 64),
        model_revision=src.checked("modelRevision", model_revision, ""),
        model=model,
        model_id=model_id,
        image=image,
        port=src.port("port", default_port, RESERVED_PORTS, lo=1024),
        served_model_name=served,
        allowed_cidrs=allowed_cidrs,
        max_model_len=src.integer("maxModelLen"),
        max_num_seqs=src.integer("maxNumSeqs"),
        max_num_batched_tokens=src.integer("maxNumBatchedTokens"),
        gpu_memory_utilization=src.number("gpuMemoryUtilization"),
        kv_cache_dtype=kv,
        weights_source=src.text("weightsSource"),
        stream_weights=src.boolean("streamWeights"),
        vision_chunks_per_prompt=src.integer("visionChunksPerPrompt", 40, 0, 1000),
        model_overrides=overrides,
        has_api_key=bool(_api_key(raw.get("apiKey"), allowed_cidrs)),
        api_key_public_problem=_public_problem(raw.get("apiKey")),
        has_hf_token=bool(raw.get("hfToken")),
        allow_internet=allow_internet,
        allow_plaintext=src.boolean("allowPlaintext"),
        accept_load=parse_accept_load(raw.get("acceptLoad")),
        usd_per_hour=_usd_per_hour(src),
        # keys that are not shared belong to the target, which must reject those it does not know
        target_config={k: v for k, v in raw.items() if k not in KNOWN_KEYS},
        source=src,
    )


def _hardware(src: RawConfig) -> Tuple[str, str, str, str, str]:
    """(target, accelerator, model id, model, image): each known, and offered together; `model`
    is the weight variant's catalog key (components/inference/catalog.py MODELS)."""
    target = src.text("target")
    if target not in TARGETS:
        raise src.refuse("target", f"use one of {', '.join(TARGETS)}", "is not a known target")
    offered = TARGET_ACCELERATORS[target]
    accelerator = src.text("accelerator", offered[0])
    if accelerator not in ACCELERATORS:
        raise src.refuse("accelerator", f"use one of {', '.join(offered)}", "is not a known accelerator")
    if accelerator not in offered:
        raise src.refuse("accelerator", f"use one of {', '.join(offered)} on {target}",
                         f"is not offered by {target}")
    model_id, model = _model(src, target, accelerator)
    image = src.text("image", DEFAULT_IMAGE_FOR_PLATFORM[ACCELERATORS[accelerator].platform])
    tag, at, digest = image.partition("@")
    if tag not in IMAGES:
        raise src.refuse("image", f"use one of {', '.join(sorted(IMAGES))}, optionally pinned "
                         "as <image>@sha256:<digest>", "is not a known serving image")
    if at and not IMAGE_DIGEST.fullmatch(digest):
        raise src.refuse("image", f"pin it as {tag}@sha256:<64 hex digits> (docker buildx "
                         "imagetools inspect, crane digest or skopeo inspect print it)",
                         "is not an image digest")
    return target, accelerator, model_id, model, image


def _model(src: RawConfig, target: str, accelerator: str) -> Tuple[str, str]:
    """(`modelId`, the catalog key of its `model` variant). A release without weights for the
    accelerator is refused here; a known variant on the wrong hardware by the planner."""
    model_id = src.text("modelId", DEFAULT_MODEL_ID)
    release = RELEASES.get(model_id)
    if release is None:
        raise src.refuse("modelId", f"use one of {', '.join(sorted(RELEASES))}", "is not a known model")
    platform = ACCELERATORS[accelerator].platform
    here = sorted(k for k, v in release.variants.items() if platform in v.platforms)
    if not here:
        loads = sorted({a for a, acc in ACCELERATORS.items() for v in release.variants.values()
                        if acc.platform in v.platforms})
        raise src.refuse("modelId", f"use an accelerator that loads it ({', '.join(loads)}) or "
                         "another kimi-k3:modelId",
                         f"has no published weights for {ACCELERATORS[accelerator].display_name}")
    default = TARGET_DEFAULTS[target][0]
    model = src.text("model", default if default in release.variants else here[0])
    if model not in release.variants:
        raise src.refuse("model", f"use one of {', '.join(sorted(release.variants))}",
                         f"is not a known {release.display_name} weight variant")
    return model_id, release.variants[model].key


def _model_overrides(src: RawConfig) -> Mapping[str, float]:
    """`modelOverrides`: a JSON object of finite numbers (docs/planner.md names the fields)."""
    overrides = src.json("modelOverrides", {})
    if not isinstance(overrides, dict):
        raise src.refuse("modelOverrides", "give a JSON object", "is not an object")
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
               for v in overrides.values()):
        raise src.refuse("modelOverrides", "give finite numbers as values",
                         "has a value that is not a finite number")
    return overrides


def reject_unknown(target_config: Mapping[str, object], known) -> None:
    """Raise ConfigError for the first `kimi-k3:*` key neither shared nor the target's own."""
    for key in sorted(set(target_config) - set(known)):
        raise config_keys.unknown_key("kimi-k3", key, sorted(set(known) | KNOWN_KEYS))
