"""kimi-k3's vllm-router command line (components/router/settings.py), checked by the pinned
router's own argument parser, and the times it states."""

import re
from pathlib import Path

import pytest
from vllm_router.launch_router import parse_router_args

from components.router.settings import ROUTER_VERSION, RouterSettings, front_argv

ROOT = Path(__file__).resolve().parents[2]


def test_the_pinned_router_is_the_one_installed_and_in_requirements():
    from importlib.metadata import version

    assert version("vllm-router") == ROUTER_VERSION
    assert f"vllm-router=={ROUTER_VERSION}" in (ROOT / "requirements-dev.txt").read_text()


def test_static_workers_argv_parses_with_the_routers_own_parser():
    s = RouterSettings(startup_timeout_s=5400)
    argv = s.argv(["http://10.0.0.5:11025", "http://10.0.0.9:11025"])
    assert argv[0] == "vllm-router"
    a = parse_router_args(argv[1:])
    assert a.worker_urls == ["http://10.0.0.5:11025", "http://10.0.0.9:11025"]
    assert (a.host, a.port, a.policy) == ("127.0.0.1", 30000, "cache_aware")
    assert a.worker_startup_timeout_secs == 5400  # longer than K3's load, not the 600 default
    assert (a.health_check_interval_secs, a.health_failure_threshold,
            a.health_success_threshold, a.health_check_timeout_secs) == (10, 3, 2, 5)
    assert (a.cb_failure_threshold, a.cb_success_threshold, a.cb_timeout_duration_secs) == (3, 1, 15)
    assert a.health_check_endpoint == "/health" and a.prometheus_host == "127.0.0.1"
    assert a.balance_abs_threshold == 16 and a.balance_rel_threshold == 1.5


def test_service_discovery_argv_parses():
    argv = RouterSettings().argv(selector={"app.kubernetes.io/name": "kimi-k3",
                                           "leaderworkerset.sigs.k8s.io/worker-index": "0"},
                                 namespace="kimi-k3", discovery_port=8000)
    a = parse_router_args(argv[1:])
    assert a.service_discovery and a.service_discovery_namespace == "kimi-k3"
    assert a.selector == {"app.kubernetes.io/name": "kimi-k3",
                          "leaderworkerset.sigs.k8s.io/worker-index": "0"}
    assert a.service_discovery_port == 8000 and not a.worker_urls


@pytest.mark.parametrize("kw", [dict(), dict(worker_urls=["http://a:1"], selector={"a": "b"}),
                                dict(selector={"a": "b"}), dict(selector={"a": "b"}, namespace="n")])
def test_either_workers_or_a_complete_selector(kw):
    urls = kw.pop("worker_urls", ())
    with pytest.raises(ValueError):
        RouterSettings().argv(urls, **kw)


@pytest.mark.parametrize("field,value", [("health_check_interval_s", 0), ("cb_timeout_s", -1),
                                         ("startup_timeout_s", 0), ("policy", "kv_aware")])
def test_hostile_settings_refused(field, value):
    with pytest.raises(ValueError, match=field.split("_")[0]):
        RouterSettings(**{field: value})


def test_stated_times():
    s = RouterSettings()
    assert s.route_around_s() == 10 * 3 + 5
    assert s.readmit_s() == max(15, 10 * 2) + 10
    fast = RouterSettings(health_check_interval_s=1, health_failure_threshold=2,
                          health_check_timeout_s=1, cb_timeout_s=3, health_success_threshold=1)
    assert (fast.route_around_s(), fast.readmit_s()) == (3, 4)


def test_front_argv():
    assert front_argv("0.0.0.0:8000", "http://127.0.0.1:30000") == [
        "python3", "kk3_front.py", "--listen", "0.0.0.0:8000", "--upstream",
        "http://127.0.0.1:30000"]


def test_the_front_is_one_file_that_imports_nothing_of_kimi_k3():
    text = (ROOT / "components" / "router" / "kk3_front.py").read_text()
    imports = re.findall(r"^(?:from|import) ([\w.]+)", text, re.M)
    assert not [m for m in imports if m.startswith(("components", "."))], imports


def test_the_targets_install_exactly_what_the_tests_ran():
    """ROUTER_REQUIREMENTS = vllm-router's installed dependency closure, version for version."""
    import importlib.metadata as md

    from packaging.requirements import Requirement

    from components.router.settings import ROUTER_REQUIREMENTS

    seen, todo = {}, ["vllm-router"]
    while todo:
        name = todo.pop()
        key = name.lower().replace("_", "-")
        if key in seen:
            continue
        dist = md.distribution(name)
        seen[key] = dist.version
        for r in dist.requires or ():
            req = Requirement(r)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(req.name)
    assert sorted(ROUTER_REQUIREMENTS) == sorted(f"{k}=={v}" for k, v in seen.items())
