"""Double of how the Pulumi engine finds a resource's old state through aliases.

Built from the engine's own code, pulumi/pulumi at 1a16857a44f16e46a9dce29f184c511062a70f80,
pkg/resource/deploy/step_generator.go (`generateSteps`, `generateAliases`,
`collapseAliasToUrn`, `inheritedChildAlias`) and sdk/go/common/resource/urn.go (`NewURN`:
the parent's type chain, the root stack's type left out):
https://github.com/pulumi/pulumi/blob/1a16857a44f16e46a9dce29f184c511062a70f80/pkg/resource/deploy/step_generator.go

For each registered resource, in registration order, the engine looks up the old state under its
URN first, then under each alias: its own aliases collapsed to URNs (an alias spec's empty name,
type and parent default to the resource's own; an aliased parent stands for its old URN; a
parent that is the root stack, or `noParent`, means none), then the alias inherited from its
parent's matched alias (the child's name re-prefixed when it starts with the parent's name). A
match under an alias is remembered as that resource's alias, for its children. Pulumi's Python
SDK (3.272, runtime/resource.py `prepare_aliases`) sends alias specs to a monitor that supports
them, as the mock monitor does; the offline runner records them as sent
(components/offline/runner.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Mapping, Sequence, Set

ROOT_STACK_TYPE = "pulumi:pulumi:Stack"


def _parts(urn: str):
    _, rest = urn.split("urn:pulumi:", 1)
    stack, project, chain, name = rest.split("::", 3)
    return stack, project, chain, name


def qualified_type(urn: str) -> str:
    return _parts(urn)[2]


def type_of(urn: str) -> str:
    return qualified_type(urn).split("$")[-1]


def name_of(urn: str) -> str:
    return _parts(urn)[3]


def new_urn(stack: str, project: str, parent_type: str, base_type: str, name: str) -> str:
    chain = f"{parent_type}${base_type}" if parent_type and parent_type != ROOT_STACK_TYPE else base_type
    return f"urn:pulumi:{stack}::{project}::{chain}::{name}"


def create_urn(name: str, type_: str, parent: str, project: str, stack: str) -> str:
    return new_urn(stack, project, qualified_type(parent) if parent else "", type_, name)


@dataclass
class Matching:
    """What an update of the old state with these registrations would do."""

    #: new URN -> the old URN it took over (its own when unchanged)
    matched: Dict[str, str] = field(default_factory=dict)
    #: new resources with no old state: an update would create them
    created: List[str] = field(default_factory=list)
    #: old URNs nothing took over: an update would delete them
    deleted: List[str] = field(default_factory=list)
    #: engine errors (two resources claiming one old state)
    errors: List[str] = field(default_factory=list)


def match(registrations: Sequence[Mapping], olds: Set[str], stack: str, project: str) -> Matching:
    """`registrations`: {"type", "name", "urn", "parent_urn", "aliases"} in registration order."""
    out = Matching()
    aliases_of: Dict[str, str] = {}  # sg.aliases: new URN -> the old URN matched through an alias
    aliased: Dict[str, str] = {}  # sg.aliased: old URN -> the new URN that claimed it
    seen: Set[str] = set()  # sg.urns

    def collapse(goal, alias) -> str:
        if alias.get("urn"):
            return alias["urn"]
        n = alias.get("name") or goal["name"]
        t = alias.get("type") or goal["type"]
        parent = alias.get("parentUrn") or ""
        if not parent:
            parent = goal["parent_urn"]
        elif parent in aliases_of:
            parent = aliases_of[parent]
        parent_is_root = bool(parent) and qualified_type(parent) == ROOT_STACK_TYPE
        if alias.get("noParent") or parent_is_root:
            parent = ""
        return create_urn(n, t, parent, alias.get("project") or project, alias.get("stack") or stack)

    def inherited(child_type: str, child_name: str, parent_name: str, parent_alias: str) -> str:
        alias_name = child_name
        if child_name.startswith(parent_name):
            alias_name = name_of(parent_alias) + child_name[len(parent_name):]
        return new_urn(stack, project, qualified_type(parent_alias), child_type, alias_name)

    def generate(goal) -> List[str]:
        result: List[str] = []
        for alias in goal["aliases"]:
            u = collapse(goal, alias)
            if u not in result:
                result.append(u)
        parent = goal["parent_urn"]
        if parent and parent in aliases_of:
            parent_alias = aliases_of[parent]
            for u in [inherited(goal["type"], goal["name"], name_of(parent), parent_alias)] + [
                    inherited(type_of(c), name_of(c), name_of(parent), parent_alias)
                    for c in (collapse(goal, a) for a in goal["aliases"])]:
                if u not in result:
                    result.append(u)
        return result

    for goal in registrations:
        urn = goal["urn"]
        found = None
        for candidate in [urn] + generate(goal):
            if candidate in olds:
                if candidate != urn:
                    if candidate in seen:
                        out.errors.append(f"{urn} claims {candidate}, already registered")
                    if candidate in aliased:
                        out.errors.append(f"{urn} claims {candidate}, already claimed by {aliased[candidate]}")
                    aliased[candidate] = urn
                    aliases_of[urn] = candidate
                found = candidate
                break
        seen.add(urn)
        if found is None:
            out.created.append(urn)
        else:
            out.matched[urn] = found
    taken = set(out.matched.values())
    out.deleted = sorted(u for u in olds if u not in taken)
    return out
