"""The real vllm-router (pinned, pip-installed) with kimi-k3's settings, in front of three vLLM
doubles on loopback, through kimi-k3's front: a conversation sticks to one replica, load
spreads, a killed replica is routed around within the settings' stated time and taken back
after, and nothing is lost beyond the requests in flight on the killed replica.

Figures (hit ratios, times, losses) are printed by bench/router.py; these tests hold the
behaviour, with the stated bounds of components/router/settings.py.
"""

import asyncio
import time

import httpx
import pytest

from tests.doubles.router_rig import FAST_SETTINGS, RouterRig, chat
from tests.doubles.vllm_openai import DoubleConfig

INTRO = ("You are helping with the harbour logistics plan. " * 40).strip()


def conversation_opening(c: int) -> str:
    return f"Conversation {c}: {INTRO} Ticket {c * 7919}."


async def converse(client, base, c: int, turns: int):
    messages = [{"role": "user", "content": conversation_opening(c)}]
    results = []
    for t in range(turns):
        r = await chat(client, base, messages, max_tokens=6)
        results.append(r)
        messages += [{"role": "assistant", "content": r["content"] or "ok"},
                     {"role": "user", "content": f"Turn {t + 1}: and then?"}]
    return results


def test_a_conversation_sticks_to_one_replica_and_conversations_spread():
    cfg = DoubleConfig(enable_scale_out=True, ttft_s=0.15, tpot_s=0.01)
    with RouterRig(replicas=3, double=cfg) as rig:
        async def go():
            async with httpx.AsyncClient(timeout=30) as client:
                return await asyncio.gather(*(converse(client, rig.front_url, c, 4)
                                              for c in range(6)))
        runs = asyncio.run(go())
        assert all(r["ok"] for run in runs for r in run)
        where = {c: {i for i, d in enumerate(rig.doubles)
                     for s in d.served if s.startswith(f"Conversation {c}:")} for c in range(6)}
    assert all(len(w) == 1 for w in where.values()), where  # every turn on one replica
    assert len(set().union(*where.values())) >= 2, where  # conversations spread


def test_without_the_render_route_there_is_no_prefix_affinity():
    """vLLM 0.33 serves the render route only with --enable-scale-out; without it the router's
    cache_aware policy has no token ids and routes by load alone (what kimi-k3 avoids by
    launching replicas behind the router with the flag)."""
    cfg = DoubleConfig(enable_scale_out=False, ttft_s=0.15, tpot_s=0.01)
    with RouterRig(replicas=3, double=cfg) as rig:
        async def go():
            async with httpx.AsyncClient(timeout=30) as client:
                return await asyncio.gather(*(converse(client, rig.front_url, c, 4)
                                              for c in range(6)))
        asyncio.run(go())
        where = {c: {i for i, d in enumerate(rig.doubles)
                     for s in d.served if s.startswith(f"Conversation {c}:")} for c in range(6)}
        decisions = rig.router_metric("vllm_router_prefix_routing_decisions_total")
    assert any(len(w) > 1 for w in where.values()), where
    assert any('outcome="missing_tokens"' in k for k in decisions), decisions


def test_load_spreads_over_the_replicas():
    cfg = DoubleConfig(enable_scale_out=True, ttft_s=0.3, tpot_s=0.01)
    with RouterRig(replicas=3, double=cfg) as rig:
        async def go():
            async with httpx.AsyncClient(timeout=30,
                                         limits=httpx.Limits(max_connections=40)) as client:
                gate = asyncio.Semaphore(15)

                async def one(k):
                    async with gate:
                        return await chat(client, rig.front_url,
                                          [{"role": "user", "content": f"Question {k} " * (1 + k % 5)
                                            + f"unique {k * 104729}"}])
                return await asyncio.gather(*(one(k) for k in range(45)))
        results = asyncio.run(go())
        counts = [rig.served(i) for i in range(3)]
    assert all(r["ok"] for r in results)
    assert sum(counts) == 45 and min(counts) >= 45 * 0.15, counts


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_a_killed_replica_is_routed_around_and_taken_back(stream):
    s = FAST_SETTINGS
    cfg = DoubleConfig(enable_scale_out=True, ttft_s=0.05, tpot_s=0.02)
    with RouterRig(replicas=3, double=cfg) as rig:
        victim = 1
        url = rig.replica_url(victim)
        results, marks = [], {}

        async def load(stop_at):
            async with httpx.AsyncClient(timeout=30) as client:
                k = 0

                async def worker(w):
                    nonlocal k
                    while time.monotonic() < stop_at:
                        k += 1
                        results.append(await chat(client, rig.front_url, [
                            {"role": "user", "content": f"load {w} {k} " * (1 + k % 3)}],
                            max_tokens=10, stream=stream))
                await asyncio.gather(*(worker(w) for w in range(6)))

        async def scenario():
            t0 = time.monotonic()
            task = asyncio.create_task(load(t0 + 3 + s.route_around_s() + s.readmit_s() + 4))
            await asyncio.sleep(2)
            marks["in_flight"] = rig.doubles[victim].running
            marks["kill"] = time.monotonic()
            rig.kill(victim)
            while any(w["url"] == url and w["is_healthy"] for w in rig.workers()["workers"]):
                await asyncio.sleep(0.1)
            marks["dropped"] = time.monotonic()
            await asyncio.sleep(1)
            marks["revive"] = time.monotonic()
            rig.revive(victim)
            while rig.served(victim) == 0:
                await asyncio.sleep(0.1)
            marks["back"] = time.monotonic()
            await task

        asyncio.run(scenario())
    lost = [r for r in results if not r["ok"]]
    assert len(results) > 50
    # the router drops it within the stated time, and takes it back within the stated time
    assert marks["dropped"] - marks["kill"] <= s.route_around_s() + 1, marks
    assert marks["back"] - marks["revive"] <= s.readmit_s() + 1, marks
    # lost: at most the requests that were on the replica when it died
    assert len(lost) <= marks["in_flight"], (lost[:3], marks)
    assert all(r["started"] <= marks["kill"] + 0.5 for r in lost), lost[:3]


# ---- past the first token: every replica down, one back, the API key rotated -----------------

def _wait_for(ok, bound_s: float):
    """Poll `ok` until true; the seconds it took (AssertionError past `bound_s`)."""
    t0 = time.monotonic()
    while not ok():
        assert time.monotonic() - t0 <= bound_s, f"not within {bound_s} s"
        time.sleep(0.05)
    return time.monotonic() - t0


BODY = {"model": "Kimi-K3", "max_tokens": 4, "messages": [{"role": "user", "content": "hi"}]}


def test_one_replica_down_keeps_the_front_healthy_and_every_replica_down_answers_at_once():
    """One replica of two dead: the front's /health stays 200 (it asks the router's /readiness:
    the router's own /health is 503 then, and names the dead replica's address). Every replica
    dead: each request gets a 5xx at once (never a hang into the client's timeout), with no
    replica address in it, and /health turns 503 (what the aws-eks readiness probe and a load
    balancer read) within the stated route-around time. One replica back serves within the
    stated readmit time, and /health says so."""
    from tests.doubles.router_rig import get, post

    s = FAST_SETTINGS
    with RouterRig(replicas=2) as rig:
        assert post(rig.front_url + "/chat/completions", BODY)[0] == 200
        rig.kill(0)
        _wait_for(lambda: not any(w["url"] == rig.replica_url(0) and w["is_healthy"]
                                  for w in rig.workers()["workers"]), s.route_around_s() + 1)
        router_health = get(rig.router_root + "/health")
        assert router_health[0] == 503 and rig.replica_url(0) in router_health[1]  # the reason
        assert get(rig.front_root + "/health") == (200, "ok\n")
        assert post(rig.front_url + "/chat/completions", BODY)[0] == 200
        rig.kill(1)
        answers = []
        _wait_for(lambda: answers.append(post(rig.front_url + "/chat/completions", BODY,
                                              timeout=20)) or answers[-1][0] == 503,
                  s.route_around_s() + 1)
        assert all(code in (500, 502, 503) for code, _ in answers), answers
        assert not any("127.0.0.1" in text for _, text in answers), answers
        _wait_for(lambda: get(rig.front_root + "/health")[0] == 503, s.route_around_s() + 1)
        assert "127.0.0.1" not in get(rig.front_root + "/health")[1]
        rig.revive(1)
        _wait_for(lambda: post(rig.front_url + "/chat/completions", BODY)[0] == 200, s.readmit_s() + 1)
        _wait_for(lambda: get(rig.front_root + "/health")[0] == 200, s.readmit_s() + 1)
        assert rig.served(1) >= 1 and rig.procs["router"].poll() is None


def test_a_rotated_key_needs_no_router_restart_and_stale_keys_do_not_trip_the_breaker():
    """The key lives on the replicas only (the router and the front hold none): restart the
    replicas with the new key and the same router serves it. Clients still sending the old
    key get 401s, many more than the circuit breaker's threshold: a 401 is an answer, not a
    replica failure, so nobody else is locked out (an attacker without a key cannot open the
    breakers either)."""
    from dataclasses import replace

    from tests.doubles.router_rig import post

    old, new = "kk3-router-old-key-0123456789abcdefgh", "kk3-router-new-key-0123456789abcdefgh"
    cfg = DoubleConfig(enable_scale_out=True, api_key=old)
    with RouterRig(replicas=2, double=cfg) as rig:
        router_pid = rig.procs["router"].pid

        def chat_as(key):
            return post(rig.front_url + "/chat/completions", BODY,
                        headers={"Authorization": f"Bearer {key}"})[0]

        assert chat_as(old) == 200
        rig.cfg = replace(cfg, api_key=new)
        for i in range(2):  # a rolling restart of the replicas with the new key
            rig.kill(i)
            rig.revive(i)
        storm = [chat_as(old) for _ in range(4 * FAST_SETTINGS.cb_failure_threshold)]
        assert set(storm) == {401}
        after = [chat_as(new) for _ in range(6)]
        assert after == [200] * 6, after
        assert all(w["is_healthy"] for w in rig.workers()["workers"])
        assert rig.procs["router"].pid == router_pid and rig.procs["router"].poll() is None
