"""Which stack config keys exist: misspelt keys and namespaces are refused, never ignored (pure).

A Pulumi stack's config is `namespace:key`. kimi-k3 reads `kimi-k3:*` and `ctyun:*` (refused
when unknown by their own parsers, through `unknown_key`) and `aws:region`. `check_namespaces`
looks at every key of the stack before anything else:

- a namespace that looks like ours (`kimik3`, `kimi_k3`, `Kimi-K3`, `ctyn`, `ct-yun`: equal
  after folding case and `-`/`_`/`.`, or at most two edits away) is refused: those values would
  otherwise be silently ignored;
- `aws:*` keys must be keys of the AWS provider (read from the installed pulumi-aws package's
  `pulumi_aws/config/vars.py`, the provider's own list); a near-miss of one the stack reads
  (`aws:regoin`) is refused with the key it probably meant;
- any other namespace (another provider's: `kubernetes`, `eks`, `random`...) passes.

Errors never print the value of the key: an unknown or misspelt key may be a secret.
"""

from __future__ import annotations

import difflib
import importlib.util
import re
from functools import lru_cache
from pathlib import Path
from typing import FrozenSet, Iterable, Optional, Sequence

from ..inference.errors import NOT_SHOWN, ConfigError
from ..program.registry import REGISTRY

#: the shared namespace and every registered target's own (program/registry.py `namespaces`)
OURS = ("kimi-k3",) + tuple(ns for entry in REGISTRY.values() for ns in entry.namespaces)
#: namespaces of other Pulumi packages that are near ours or aws's by spelling, yet legitimate
OTHER_PACKAGES = frozenset({"awsx", "aws-native", "aws-iam", "aws-apigateway", "eks", "kubernetes",
                            "pulumi", "random", "tls", "command", "std"})
#: `aws:*` keys the program itself reads (the rest belong to the provider)
AWS_KEYS_READ = ("region",)


def _fold(ns: str) -> str:
    return re.sub(r"[-_.\s]", "", ns.lower())


def edit_distance(a: str, b: str) -> int:
    """Optimal string alignment distance (insert, delete, substitute, swap two neighbours)."""
    d = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(len(a) + 1):
        d[i][0] = i
    for j in range(len(b) + 1):
        d[0][j] = j
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
    return d[len(a)][len(b)]


def looks_like(ns: str, ours: str) -> bool:
    """Is `ns` (not equal to `ours`) probably a misspelling of `ours`?"""
    if ns == ours:
        return False
    f, g = _fold(ns), _fold(ours)
    return f == g or edit_distance(f, g) <= (2 if len(g) >= 5 else 1)


@lru_cache(maxsize=1)
def aws_provider_keys() -> Optional[FrozenSet[str]]:
    """The AWS provider's config keys, from the installed pulumi-aws (None if not installed)."""
    spec = importlib.util.find_spec("pulumi_aws")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(list(spec.submodule_search_locations)[0]) / "config" / "vars.py"
    if not path.exists():
        return None
    return frozenset(re.findall(r"__config__\.get\w*\('([A-Za-z0-9]+)'\)", path.read_text()))


def unknown_key(namespace: str, key: str, known: Sequence[str], docs: str = "docs/configuration.md"
                ) -> ConfigError:
    """The error for `namespace:key` that no parser knows; suggests the closest known key."""
    close = difflib.get_close_matches(key, list(known), n=1, cutoff=0.75)
    hint = f"did you mean {namespace}:{close[0]}? " if close else ""
    return ConfigError(f"{namespace}:{key}", NOT_SHOWN,
                       f"{hint}remove it or check the spelling ({docs} lists the keys)",
                       "is not a known key")


def check_namespaces(keys: Iterable[str]) -> None:
    """Refuse misspelt namespaces and `aws:*` keys the AWS provider does not have."""
    aws_keys = aws_provider_keys()
    for full in sorted(keys):
        ns, sep, key = full.partition(":")
        if not sep:
            continue
        if not ns.strip() or not key.strip():  # `kimi-k3:`, `:nodes`: read by no parser
            raise ConfigError(full, NOT_SHOWN, "write namespace:key, e.g. kimi-k3:nodes",
                              "has an empty namespace or key")
        if ns in OURS or ns in OTHER_PACKAGES:
            continue
        if ns == "aws":
            if key in AWS_KEYS_READ or (aws_keys is not None and key in aws_keys):
                continue
            near = [k for k in AWS_KEYS_READ if edit_distance(key.lower(), k) <= 2]
            if near or aws_keys is not None:
                raise unknown_key("aws", key, list(AWS_KEYS_READ) + sorted(aws_keys or ()),
                                  "the AWS provider's configuration reference")
            continue
        for ours in OURS + ("aws",):
            if looks_like(ns, ours):
                raise ConfigError(full, NOT_SHOWN, f"write {ours}:{key} (kimi-k3 reads only the "
                                  f"namespaces {', '.join(OURS)} and aws)",
                                  f"is in namespace {ns!r}, which looks like {ours!r}")
