"""What this stack may touch, and the names it uses by default (pure).

The rule (issue 8): nothing is adopted, changed or deleted that this stack cannot prove it
created. The proofs, in order of strength:

1. an id recorded in this stack's state (the providers keep every id they created);
2. an ownership marker set at creation: VPCs, subnets and security groups carry the
   description `kimi-k3 owner <token>`, where the token is a random value created once per
   stack and kept in its state (`HccStackOwner`). Two people who deploy the same shipped stack
   from local backends share organization, project and stack names, but never a token;
3. for the E-HPC cluster, which has no description field: the order record (the name was free
   when this stack ordered it; `HccClusterOrder` keeps name, job and order ids in state before
   the long wait), a before/after listing inside the call whose answer was lost, a same-named
   cluster inside a VPC this stack created, or the explicit key `ctyun:adoptClusterUuid`.

Default names are computed in the program (never in a provider: the dynamic-provider host
reports the stack as "stack") from organization, project and stack, and fit CTyun's rules:
the cluster name is 2-20 characters, and the VPC, subnet, group and file system names derive
from it.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Optional

MARKER_PREFIX = "kimi-k3 owner "
TOKEN_RE = re.compile(r"^[0-9a-f]{32}$")


def owner_marker(token: str) -> str:
    """The description written on what this stack creates (fits the 128-character rule)."""
    if not TOKEN_RE.match(token or ""):
        raise ValueError("owner token must be 32 lower-case hex characters")
    return MARKER_PREFIX + token


def marker_token(description: Optional[str]) -> Optional[str]:
    text = (description or "").strip()
    if text.startswith(MARKER_PREFIX):
        token = text[len(MARKER_PREFIX):].split()[0] if text[len(MARKER_PREFIX):] else ""
        return token if TOKEN_RE.match(token) else None
    return None


def is_ours(description: Optional[str], token: str) -> bool:
    """True when `description` carries this stack's marker."""
    return bool(token) and marker_token(description) == token


def _slug(text: str, limit: int) -> str:
    s = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    s = re.sub(r"-+", "-", s)[:limit].strip("-")
    return s


@dataclass(frozen=True)
class Names:
    cluster: str
    vpc: str
    subnet: str
    security_group: str
    storage: str


def stack_hash(organization: str, project: str, stack: str) -> str:
    return hashlib.sha256(f"{organization}/{project}/{stack}".encode()).hexdigest()[:4]


def default_cluster_name(organization: str, project: str, stack: str) -> str:
    """`k3-<stack slug>-<4 hex of org/project/stack>`: at most 19 characters, starts with a
    letter, no trailing or doubled '-' (doc 23930's cluster-name rule)."""
    slug = _slug(stack, 11) or "stack"
    return f"k3-{slug}-{stack_hash(organization, project, stack)}"


def names_for(cluster: str) -> Names:
    """The names of what the stack creates around a cluster named `cluster`."""
    return Names(cluster, f"{cluster}-vpc", f"{cluster}-subnet", f"{cluster}-sg",
                 f"{cluster}-fs")
