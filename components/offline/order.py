"""What each registered resource waits for, and the order a real `pulumi up` creates them in.

Pure functions over the runner's records (runner.py), keyed by engine URN (names are not unique:
a subnet and its route table association share one). A resource waits for the resources it
depends on explicitly (`depends_on`) and through its inputs (the engine's RegisterResource
`dependencies`: the SDK sends both), and for its provider (a resource is not created before the
provider it is created with). A component of this program is no step of its own (it creates
nothing itself), so it is left out of the order; a remote (multi-language) component such as
pulumi-eks's Cluster is one: its provider creates cloud resources for it.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Mapping, Sequence, Set


def waits_for(resource: Mapping[str, Any]) -> List[str]:
    """URNs of what `resource` waits for (plan.json `dependsOn`)."""
    urns = set(resource.get("dependency_urns") or ())
    if resource.get("provider_urn"):
        urns.add(resource["provider_urn"])
    urns.discard(resource.get("urn"))
    return sorted(u for u in urns if u)


def creates(resource: Mapping[str, Any]) -> bool:
    """Is registering `resource` a step that creates something (custom, or a remote component)?"""
    return bool(resource.get("custom") or resource.get("remote"))


def _by_urn(resources: Sequence[Mapping[str, Any]]) -> Dict[str, Mapping[str, Any]]:
    return {r["urn"]: r for r in resources}


def reaches(resources: Sequence[Mapping[str, Any]], urn: str, target: str) -> bool:
    """Does the resource `urn` wait for `target`, directly or through what it waits for?"""
    by = _by_urn(resources)
    seen: Set[str] = set()
    todo = [urn]
    while todo:
        u = todo.pop()
        if u in seen:
            continue
        seen.add(u)
        for d in waits_for(by.get(u, {})):
            if d == target:
                return True
            todo.append(d)
    return False


def not_waiting_for(resources: Sequence[Mapping[str, Any]], target: str,
                    exempt_types: Iterable[str] = ()) -> List[str]:
    """URNs of the resources that create something (`creates`) and could be created before
    `target` is: those that do not wait for it, `target` itself and `exempt_types` aside."""
    exempt = set(exempt_types)
    return [r["urn"] for r in resources
            if creates(r) and r["urn"] != target and r["type"] not in exempt
            and not reaches(resources, r["urn"], target)]


def waves(resources: Sequence[Mapping[str, Any]]) -> List[List[str]]:
    """URNs of the resources that create something, grouped by when the engine can create them:
    wave 0 waits for none of them, wave k for something in wave k-1 at the latest."""
    steps = {r["urn"]: r for r in resources if creates(r)}
    level: Dict[str, int] = {}

    def depth(u: str, stack: Set[str]) -> int:
        if u in level:
            return level[u]
        if u in stack:
            raise ValueError(f"dependency cycle through {u}")
        deps = [d for d in waits_for(steps[u]) if d in steps]
        level[u] = 1 + max((depth(d, stack | {u}) for d in deps), default=-1)
        return level[u]

    for u in steps:
        depth(u, set())
    out: List[List[str]] = [[] for _ in range(max(level.values(), default=-1) + 1)]
    for u in sorted(steps):  # by URN inside a wave (registration order varies from run to run)
        out[level[u]].append(u)
    return out


def stable(resources: Sequence[Mapping[str, Any]]) -> List[Mapping[str, Any]]:
    """The records in an order that does not depend on when the engine saw them: each after
    its parent and after what it waits for (so plan.json reads in creation order), ties by URN.

    The mock engine registers resources as their inputs resolve, which varies from run to run;
    plan.json is reviewed and diffed, so two plans of one config must be the same file."""
    import heapq

    by = _by_urn(resources)
    before: Dict[str, Set[str]] = {}
    for u, r in by.items():
        deps = set(waits_for(r))
        if r.get("parent_urn"):
            deps.add(r["parent_urn"])
        before[u] = {d for d in deps if d in by and d != u}
    after: Dict[str, List[str]] = {u: [] for u in by}
    for u, deps in before.items():
        for d in deps:
            after[d].append(u)
    ready = [u for u, deps in before.items() if not deps]
    heapq.heapify(ready)
    out: List[Mapping[str, Any]] = []
    while ready:
        u = heapq.heappop(ready)
        out.append(by[u])
        for v in after[u]:
            before[v].discard(u)
            if not before[v]:
                heapq.heappush(ready, v)
    if len(out) < len(by):
        left = sorted(set(by) - {r["urn"] for r in out})
        raise ValueError(f"dependency cycle among {left[:3]}")
    return out


def sorted_keys(value: Any) -> Any:
    """`value` with every mapping's keys sorted (inputs arrive in resolution order)."""
    if isinstance(value, Mapping):
        return {k: sorted_keys(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [sorted_keys(v) for v in value]
    return value


def portable(value: Any, root: str) -> Any:
    """`value` with absolute paths below the project directory `root` written relative to it.

    The program names a few files by absolute path (the progress file: `pulumi up` runs the
    providers in another process), so a plan written from another checkout, or on another
    machine, would differ only there; plan.json shows them as `pulumi up` would find them from
    the project directory."""
    prefix = root.rstrip("/") + "/"
    if isinstance(value, str) and value.startswith(prefix):
        return value[len(prefix):]
    if isinstance(value, dict):
        return {k: portable(v, root) for k, v in value.items()}
    if isinstance(value, list):
        return [portable(v, root) for v in value]
    return value

