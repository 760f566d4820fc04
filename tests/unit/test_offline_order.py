"""components/offline/order.py on graphs made up here: what waits for what, and the waves."""

import pytest

from components.offline import order


def r(name, deps=(), provider=None, custom=True, remote=False, type_="t"):
    return {"name": name, "urn": name, "type": type_, "dependency_urns": list(deps), "provider_urn": provider,
            "custom": custom, "remote": remote}


GRAPH = [r("stack", custom=False), r("block"), r("vpc", ["block"]), r("eks", ["vpc"], custom=False, remote=True),
         r("k8s", ["eks"]), r("ns", [], provider="k8s"), r("bucket"), r("policy", ["bucket"])]


def test_waits_for_counts_dependencies_and_the_provider():
    assert order.waits_for(r("ns", ["a"], provider="k8s")) == ["a", "k8s"]
    assert order.waits_for(r("x", ["x", None, ""])) == []


def test_a_resource_that_waits_for_nothing_before_the_block_is_found():
    assert order.not_waiting_for(GRAPH, "block") == ["bucket", "policy"]
    assert order.not_waiting_for(GRAPH, "block", exempt_types={"t"}) == []
    fixed = [g if g["name"] != "bucket" else r("bucket", ["block"]) for g in GRAPH]
    assert order.not_waiting_for(fixed, "block") == []  # the provider edge carries ns through


def test_waves_put_each_step_after_what_it_waits_for():
    assert order.waves(GRAPH) == [["block", "bucket"], ["vpc", "policy"], ["eks"], ["k8s"], ["ns"]]


def test_a_cycle_is_refused_by_name():
    with pytest.raises(ValueError, match="dependency cycle through"):
        order.waves([r("a", ["b"]), r("b", ["a"])])
