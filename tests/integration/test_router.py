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
