"""Time the known-answer checks add to the acceptance gate: estimated against real Kimi K3
deployments from token counts (components/accept/known_cost.py, its assumptions in its
docstring), and measured against the vLLM double on this machine.

Prints, per planned deployment (the planner's own layout and context length), the needle's
longest prompt (the gate's cap from the prefill budget; the accept command's default cap,
131072 tokens; or the whole context, `--needle-cap-tokens 0`) and the seconds added for a typical answer length and for answers
that use all of max_tokens, at several TPOTs: the plan has no TPOT of its own; the published
A3 reference point (4 x A3, TPOT mean 22.25 ms, components/accept/reference_points.json) is
one of them, no B300 figure could be confirmed.

    .venv/bin/python bench/accept_known.py [--tpot-ms 15,22.25,40]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from components.accept import AcceptConfig, accept  # noqa: E402
from components.accept import known as kn  # noqa: E402
from components.accept import known_cost as kc  # noqa: E402
from components.cli import accept as accept_cli  # noqa: E402
from components.inference.catalog import MODELS  # noqa: E402
from components.inference.planner import PlanRequest, plan  # noqa: E402
from tests.doubles.vllm_openai import DoubleConfig, VllmOpenAIDouble  # noqa: E402


def accept_default_cap() -> int:
    """`accept --needle-cap-tokens` when not given, read from the command's own parser."""
    sub = argparse.ArgumentParser().add_subparsers()
    accept_cli.register(sub)
    return sub.choices["accept"].get_default("needle_cap_tokens")


ACCEPT_DEFAULT_CAP = accept_default_cap()
DEPLOYMENTS = [("w4a8", "atlas-800-a3", 4), ("w4a8", "atlas-800-a3", 8),
               ("mxfp4", "p6-b300.48xlarge", 1), ("mxfp4", "p6-b300.48xlarge", 2)]


def main(argv=None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--tpot-ms", default="15,22.25,40")
    a = p.parse_args(argv)
    tpots = [float(x) / 1000 for x in a.tpot_ms.split(",")]
    print(f"known-answer requests: the needle's control ({kn.NEEDLE_CONTROL_TOKENS} tokens) "
          f"asked for 1 token to size the longer ones, then one batch: {len(kn.problems())} word "
          f"problems + {kn.REPEAT_PROBLEMS * kn.REPEAT_COPIES} greedy copies + 1 extraction + "
          f"the needle at each length [+ every replica's {len(kn.problems())}]; "
          f"max_tokens {kn.KNOWN_MAX_TOKENS}, typical answer {kc.TYPICAL_OUTPUT_TOKENS} tokens "
          "(assumed)")
    print(f"prefill: peak BF16 x {kc.PREFILL_MFU} utilisation on one data-parallel rank; "
          f"gate's needle budget {kc.NEEDLE_PREFILL_BUDGET_S:.0f} s of prefill")
    for model, shape, nodes in DEPLOYMENTS:
        pl = plan(PlanRequest(model=model, node_shape=shape, nodes=nodes))
        par = pl.parallelism
        devices = par.tensor_parallel * par.pipeline_parallel
        m = MODELS[model]
        cap = kc.needle_cap_tokens(m, pl.accelerator, devices, pl.max_model_len)
        full = kc.prefill_s(pl.max_model_len - kn.NEEDLE_ANSWER_TOKENS, m, pl.accelerator, devices)
        print(f"\n{nodes} x {shape} ({model}), TP{par.tensor_parallel} PP{par.pipeline_parallel} "
              f"DP{par.data_parallel}, context {pl.max_model_len}: prefill of the whole context "
              f"~{full:.0f} s; gate needle up to {cap or pl.max_model_len - kn.NEEDLE_ANSWER_TOKENS}"
              f" tokens")
        rows = (("gate (capped)", cap),
                # the accept command caps the needle at --needle-cap-tokens (default 131072)
                (f"accept (cap {ACCEPT_DEFAULT_CAP})",
                 ACCEPT_DEFAULT_CAP if ACCEPT_DEFAULT_CAP < pl.max_model_len else None),
                ("accept --needle-cap-tokens 0", None))  # the whole context
        for label, needle_cap in rows:
            row = []
            for tpot in tpots:
                typ = kc.estimate(m, pl.accelerator, devices, pl.max_model_len, tpot,
                                  kc.TYPICAL_OUTPUT_TOKENS, needle_cap)
                worst = kc.estimate(m, pl.accelerator, devices, pl.max_model_len, tpot,
                                    kn.KNOWN_MAX_TOKENS, needle_cap)
                row.append(f"TPOT {tpot * 1000:g} ms: {typ.total_s / 60:.1f} / {worst.total_s / 60:.1f} min")
            print(f"  {label:<31} typical / worst  " + ";  ".join(row))

    print("\nmeasured against the vLLM double (answers at once; context 131072):")
    with VllmOpenAIDouble(DoubleConfig(max_model_len=131072)) as d:
        t0 = time.monotonic()
        r = accept(AcceptConfig(d.url, "Kimi-K3", requests=0, max_tokens=16, timeout_s=60))
        took = time.monotonic() - t0
        names = [c["name"] for c in r["checks"]]
    print(f"  {len(names)} checks ({', '.join(names)}) in {took:.1f} s, "
          f"{d.chat_requests} chat requests; all passed: {r['ok']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
