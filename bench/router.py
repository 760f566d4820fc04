"""vllm-router (pinned, pip-installed) in front of vLLM doubles on loopback: what routing is worth
and what losing a replica costs.

Prints:
1. prefix-cache hit ratio of a multi-turn agent-like workload (C conversations of T turns at
   once; every conversation opens with the same long system prompt and its own long task, then
   each turn appends the answer and a short user message), read from the replicas' own
   `vllm:prefix_cache_{hits,queries}_total` as Prometheus would, for: the router with kimi-k3's
   settings (cache_aware), the same router without the render route (vLLM 0.33's default without
   --enable-scale-out), and round_robin; plus the share of turns that found their conversation's
   replica again;
2. one replica killed under steady load (plain and streamed requests): requests lost, how many
   were in flight on it at the kill, time until the router's circuit breaker for it opened
   (no request is sent to it after that) and until its health checks marked it unhealthy
   (route around, traffic or not), time from its restart until it served again (readmit),
   against the settings' stated bounds.

The doubles run in this process; the router (Rust) and kimi-k3's front run as processes.

    .venv/bin/python bench/router.py [--replicas 3] [--conversations 12] [--turns 6]
                                     [--product-settings]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx  # noqa: E402

from components.router.settings import RouterSettings  # noqa: E402
from tests.doubles.router_rig import (FAST_SETTINGS, RouterRig, chat,  # noqa: E402
                                      prefix_hit_ratio)
from tests.doubles.vllm_openai import DoubleConfig  # noqa: E402

SYSTEM = ("You are a coding agent working in a large repository. Follow the house rules: "
          "small modules, tests for every guard, cite upstream sources. " * 20).strip()


def task(c: int) -> str:
    return f"Task {c}: " + " ".join(f"step{c}-{k} refactor module {k} of package {c}"
                                    for k in range(250))


def tool_output(c: int, t: int) -> str:
    return f"Turn {t + 1}: the tests printed " + " ".join(
        f"case{c}.{t}.{k} passed in {k % 7} ms" for k in range(40)) + ". Continue."


async def conversation(client, base, c, turns, seen):
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": task(c)}]
    for t in range(turns):
        r = await chat(client, base, messages, max_tokens=24)
        seen.append(r["ok"])
        messages += [{"role": "assistant", "content": r["content"] or "done"},
                     {"role": "user", "content": tool_output(c, t)}]


def multi_turn(label, settings, double, args):
    with RouterRig(args.replicas, settings=settings, double=double) as rig:
        seen = []

        async def go():
            async with httpx.AsyncClient(timeout=60, limits=httpx.Limits(max_connections=64)) as cl:
                await asyncio.gather(*(conversation(cl, rig.front_url, c, args.turns, seen)
                                       for c in range(args.conversations)))
        t0 = time.monotonic()
        asyncio.run(go())
        wall = time.monotonic() - t0
        hits = prefix_hit_ratio(rig.doubles)
        homes = [{i for i, d in enumerate(rig.doubles) for s in d.served
                  if s.startswith(f"Task {c}:")} for c in range(args.conversations)]
        served = [rig.served(i) for i in range(args.replicas)]
    sticky = sum(1 for h in homes if len(h) == 1)
    print(f"  {label:<34} hit ratio {hits['ratio']:6.1%} ({int(hits['hits'])}/"
          f"{int(hits['queries'])} prompt tokens)  conversations on one replica "
          f"{sticky}/{len(homes)}  per replica {served}  failed {seen.count(False)}  "
          f"{wall:.1f} s")


def kill_once(settings, stream, args):
    cfg = DoubleConfig(enable_scale_out=True, ttft_s=0.05, tpot_s=0.02)
    with RouterRig(args.replicas, settings=settings, double=cfg) as rig:
        victim = 1
        url = rig.replica_url(victim)
        results, marks = [], {}
        span = 3 + settings.route_around_s() + settings.readmit_s() + 4

        async def load(stop_at):
            async with httpx.AsyncClient(timeout=60) as client:
                k = 0

                async def worker(w):
                    nonlocal k
                    while time.monotonic() < stop_at:
                        k += 1
                        results.append(await chat(client, rig.front_url, [
                            {"role": "user", "content": f"load {w} {k} " * (1 + k % 3)}],
                            max_tokens=20, stream=stream))
                await asyncio.gather(*(worker(w) for w in range(8)))

        async def scenario():
            t0 = time.monotonic()
            task_ = asyncio.create_task(load(t0 + span))
            await asyncio.sleep(2)
            marks["in_flight"] = rig.doubles[victim].running
            marks["kill"] = time.monotonic()
            rig.kill(victim)
            cb = f'{{worker="{url}"}}'
            while any(w["url"] == url and w["is_healthy"] for w in rig.workers()["workers"]):
                if "cb_open" not in marks and rig.router_metric("vllm_router_cb_state").get(cb, 0):
                    marks["cb_open"] = time.monotonic()
                await asyncio.sleep(0.05)
            marks["dropped"] = time.monotonic()
            marks.setdefault("cb_open", marks["dropped"])
            await asyncio.sleep(1)
            marks["revive"] = time.monotonic()
            rig.revive(victim)
            while rig.served(victim) == 0:
                await asyncio.sleep(0.05)
            marks["back"] = time.monotonic()
            await task_

        asyncio.run(scenario())
        retries = sum(rig.router_metric("vllm_router_retries_total").values())
    lost = sum(1 for r in results if not r["ok"])
    print(f"  {'streamed' if stream else 'plain':<8} requests {len(results):4d}  lost {lost} "
          f"(in flight on the killed replica: {marks['in_flight']})  router retries "
          f"{int(retries)}  circuit open (no more requests to it) after "
          f"{marks['cb_open'] - marks['kill']:.2f} s, marked unhealthy after "
          f"{marks['dropped'] - marks['kill']:.2f} s (stated <= {settings.route_around_s()} s)  "
          "served again "
          f"{marks['back'] - marks['revive']:.2f} s after restart (stated <= "
          f"{settings.readmit_s()} s)")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--replicas", type=int, default=3)
    p.add_argument("--conversations", type=int, default=12)
    p.add_argument("--turns", type=int, default=6)
    p.add_argument("--cache-tokens", type=int, default=24576,
                   help="prefix cache of each replica, tokens (24576: about the working set of "
                   "a third of the conversations, so that where a turn lands matters)")
    p.add_argument("--balance-abs", type=int, default=RouterSettings().balance_abs_threshold,
                   help="the router's --balance-abs-threshold (default: kimi-k3's)")
    p.add_argument("--product-settings", action="store_true",
                   help="kill test with kimi-k3's deployed health settings (slow: ~1.5 min)")
    a = p.parse_args(argv)
    print(f"load average {os.getloadavg()[0]:.2f}; vllm-router "
          f"{__import__('importlib.metadata').metadata.version('vllm-router')}; "
          f"{a.replicas} replicas; {a.conversations} conversations x {a.turns} turns")
    print("1. multi-turn prefix-cache hit ratio (replicas' own counters)")
    blocks = a.cache_tokens // 16
    print(f"   each replica's prefix cache holds {a.cache_tokens} tokens ({blocks} blocks of 16); "
          f"router balance threshold {a.balance_abs} requests")
    on = DoubleConfig(enable_scale_out=True, ttft_s=0.1, tpot_s=0.005, prefix_cache_blocks=blocks)
    routed = replace(FAST_SETTINGS, balance_abs_threshold=a.balance_abs)
    multi_turn("router, cache_aware (kimi-k3)", routed, on, a)
    multi_turn("router, cache_aware, no render", routed, replace(on, enable_scale_out=False), a)
    multi_turn("round_robin", replace(routed, policy="round_robin"), on, a)
    settings = RouterSettings(startup_timeout_s=60, log_level="warning") \
        if a.product_settings else FAST_SETTINGS
    print(f"2. one replica killed under load ({'kimi-k3 deployed' if a.product_settings else 'fast test'}"
          f" health settings: every {settings.health_check_interval_s} s, "
          f"{settings.health_failure_threshold} failures, cb timeout {settings.cb_timeout_s} s)")
    for stream in (False, True):
        kill_once(settings, stream, a)
    d = RouterSettings()
    print(f"   stated for the deployed settings: route around <= {d.route_around_s()} s, "
          f"readmit <= {d.readmit_s()} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
