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
    assert order.waves(GRAPH) == [["block", "bucket"], ["policy", "vpc"], ["eks"], ["k8s"], ["ns"]]
    assert order.waves(GRAPH[::-1]) == order.waves(GRAPH)  # by URN inside a wave, not as registered


def test_a_cycle_is_refused_by_name():
    with pytest.raises(ValueError, match="dependency cycle through"):
        order.waves([r("a", ["b"]), r("b", ["a"])])


def test_the_stable_order_does_not_depend_on_registration_order():
    """plan.json lists resources so: the mock engine registers them as inputs resolve, which
    varies from run to run, and two plans of one config must be the same file."""
    import itertools

    graph = GRAPH + [{**r("child"), "parent_urn": "vpc"}, {**r("a-first"), "parent_urn": "stack"}]
    orders = {tuple(x["urn"] for x in order.stable(list(p)))
              for p in itertools.islice(itertools.permutations(graph), 0, None, 997)}
    assert len(orders) == 1
    (got,) = orders
    for x in graph:  # each after its parent and after everything it waits for
        for d in order.waits_for(x) + [x.get("parent_urn")]:
            if d in got:
                assert got.index(d) < got.index(x["urn"]), (d, x["urn"])
    assert got.index("a-first") > got.index("stack") and got[0] == "block"  # ties by URN


def test_the_stable_order_refuses_a_cycle_by_name():
    with pytest.raises(ValueError, match="dependency cycle among"):
        order.stable([r("a", ["b"]), r("b", ["a"])])


def test_inputs_keys_are_sorted_at_every_depth_and_lists_keep_their_order():
    assert list(order.sorted_keys({"b": 1, "a": {"d": [{"z": 1, "y": 2}, 3], "c": 0}})) == ["a", "b"]
    got = order.sorted_keys({"b": 1, "a": {"d": [{"z": 1, "y": 2}, 3], "c": 0}})
    assert list(got["a"]) == ["c", "d"] and list(got["a"]["d"][0]) == ["y", "z"] and got["a"]["d"][1] == 3
