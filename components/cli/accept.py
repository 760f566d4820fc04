"""`python -m components accept`: judge any OpenAI-compatible endpoint the way a user would.

    python -m components accept --endpoint URL --model NAME [--api-key-env VAR]
        [--concurrency N] [--requests M] [--max-tokens T] [--usd-per-hour X] [--out report.json]

Runs the checks health, models, chat, stream, reasoning, tool_call, auth (when a key is
given), the known-answer checks arithmetic, json_schema, needle, greedy_repeat (and
greedy_replicas with `--replica URL`...; `--no-known` skips them) and load (M streaming
requests at concurrency N; `--requests 0` turns it off), prints a summary a person reads in
ten seconds, and writes the JSON report to `--out`. With `--usd-per-hour X` (what the
endpoint's hardware costs per hour) the load part also reports `usd_per_mtok`, the USD per
million output tokens at the rate it measured. The key is read
from the environment variable named by `--api-key-env`, never from the command line, and is
never printed. Exit 0 when every check passes, 1 when one fails (its name on the last line),
2 on bad usage.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path

from ..config import api_key, values
from ..inference.errors import ConfigError

EXIT_USAGE = 2
#: the endpoint failed (a check, or its key is not the pinned one)
EXIT_FAIL = 1


def register(sub) -> None:
    """Add the `accept` subcommand to the CLI's subparsers (argparse exits 2 on bad usage)."""
    p = sub.add_parser("accept", help="check an OpenAI-compatible endpoint: health, chat, "
                       "streaming, reasoning, tool calls, auth, and a short load test",
                       description="Judge an OpenAI-compatible endpoint the way a user would.")
    p.add_argument("--endpoint", required=True, help="OpenAI base URL ending in /v1, "
                   "e.g. http://10.0.0.5:8000/v1")
    p.add_argument("--model", required=True, help="served model name, e.g. Kimi-K3")
    p.add_argument("--api-key-env", metavar="VAR",
                   help="name of the environment variable holding the API key (enables auth)")
    p.add_argument("--concurrency", type=_whole, default=4, help="load: requests in flight (4)")
    p.add_argument("--requests", type=_whole, default=16,
                   help="load: streaming requests in all (16; 0 turns the load part off)")
    p.add_argument("--max-tokens", type=_whole, default=256, help="max_tokens of every request (256)")
    p.add_argument("--timeout", default="120", metavar="SECONDS",
                   help="seconds any single request may take (120; 1 to 86400)")
    p.add_argument("--accelerator", help="hardware, to pick the reference points shown "
                   "(e.g. ascend-910c, b300)")
    p.add_argument("--nodes", type=_whole, help="nodes serving the endpoint (for reference points)")
    p.add_argument("--usd-per-hour", metavar="X",
                   help="price per hour of what serves the endpoint (USD): the load part then "
                        "reports USD per million output tokens")
    p.add_argument("--no-known", dest="known", action="store_false",
                   help="skip the known-answer checks (arithmetic, json_schema, needle, "
                   "greedy_repeat, greedy_replicas)")
    p.add_argument("--known-max-tokens", type=_whole, default=None,
                   help="max_tokens of a known-answer request (4096: room for reasoning)")
    p.add_argument("--context-tokens", type=_whole, help="the needle's longest context, tokens "
                   "(default: the server's max_model_len from /v1/models)")
    p.add_argument("--needle-cap-tokens", type=_whole, default=131072,
                   help="ask the needle at most this many prompt tokens (131072; 0: the whole "
                   "context, which on a 1M-token deployment is minutes of prefill: raise "
                   "--timeout)")
    p.add_argument("--replica", action="append", default=[], metavar="URL",
                   help="OpenAI base URL of one replica behind --endpoint (repeat for each): "
                   "greedy_replicas asks each directly and compares with the endpoint's answers")
    p.add_argument("--out", type=Path, help="write the JSON report here")
    p.add_argument("--ca-cert", metavar="PEM", help="verify the endpoint's TLS certificate "
                   "against this file (e.g. a ctyun-hcc stack's self-signed one: pulumi stack "
                   "output tls --json | jq -r .certificate > k3.pem) instead of the public CAs")
    p.add_argument("--pin", metavar="sha256//BASE64", help="trust the https endpoint by its "
                   "public key, as the printed curl line does (a ctyun-hcc stack's self-signed "
                   "certificate: pulumi stack output tls --json | jq -r .pinSha256); checked "
                   "before anything is sent; host name not checked")
    p.set_defaults(func=run)


def _key(var):
    if var is None:
        return None, None
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", var):
        return None, f"--api-key-env {var!r} is not an environment variable name; give the " \
                     "name (e.g. VLLM_API_KEY), not the key itself"
    value = os.environ.get(var)
    if not value:
        return None, f"--api-key-env {var}: the variable is not set or empty; export it first"
    # the grammar kimi-k3:apiKey has (RFC 6750 b64token): a key with a line break, a quote or a
    # non-ASCII letter cannot travel in an Authorization header; refused here (never shown),
    # not sent and every check failed on a protocol error
    why = api_key.problem(value, public=False)
    if why:
        return None, f"--api-key-env {var}: the key {why}; export the key exactly as the " \
                     "server expects it, on one line"
    return value, None


def _whole(text: str) -> int:
    """An integer flag in the config values' grammar (ASCII digits: argparse's int() takes '١'
    as 1), quoted as typed when it is none; its bounds are checked with the rest."""
    try:
        return values.integer("flag", text)
    except ConfigError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None


def _timeout(text):
    """`--timeout`: seconds from 1 to 86400 (config/values.py grammar: the error quotes the text
    as typed, not Python's `-1.0`; no 'nan', '٥')."""
    try:
        return values.number_in("--timeout", text, 1, 86400, "120", "seconds"), None
    except ConfigError as e:
        return None, str(e)


def _usd_per_hour(text):
    """`--usd-per-hour`: a positive, finite number of USD (None when not given)."""
    if text is None:
        return None, None
    try:
        value = values.number("--usd-per-hour", text, "98.5", " of USD per hour")
    except ConfigError:
        value = None
    if value is None or value <= 0:
        return None, f"--usd-per-hour {text!r} is not a price; give USD per hour as a positive " \
                     "number, e.g. --usd-per-hour 98.5"
    return value, None


def _trust(args):
    """`--ca-cert` or `--pin` (never both): set up whom the run trusts; the problem, or None."""
    from ..accept.client import use_ca_file
    from ..accept.pin import check_pin

    try:
        use_ca_file(args.ca_cert)
        if args.pin is not None and args.ca_cert is not None:
            raise ValueError("--pin and --ca-cert both say whom to trust; give one")
        if args.pin is not None:
            check_pin(args.pin)
    except ValueError as e:
        return str(e)
    return None


def _pinned(args, timeout_s):
    """With `--pin`: compare the endpoint's key before any request, then trust only its
    certificate (accept/pin.py); the mismatch, or None."""
    if args.pin is None:
        return None
    from ..accept.client import use_pinned_certificate
    from ..accept.pin import pinned_certificate

    try:
        use_pinned_certificate(pinned_certificate(args.endpoint.strip(), args.pin, min(timeout_s, 30.0)))
    except ValueError as e:
        return str(e)
    return None


def run(args) -> int:
    from ..accept import report as rep
    from ..accept.runner import AcceptConfig, accept


    key, problem = _key(args.api_key_env)
    usd_per_hour, bad_price = _usd_per_hour(args.usd_per_hour)
    timeout_s, bad_timeout = _timeout(args.timeout)
    problem = problem or bad_price or bad_timeout
    problem = problem or _trust(args)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return EXIT_USAGE
    hardware = None
    if args.accelerator or args.nodes:
        hardware = {"accelerator": args.accelerator, "node_shape": None, "nodes": args.nodes}
    cfg = AcceptConfig(endpoint=args.endpoint, model=args.model, api_key=key,
                       concurrency=args.concurrency, requests=args.requests,
                       max_tokens=args.max_tokens, timeout_s=timeout_s, hardware=hardware,
                       known=args.known, context_tokens=args.context_tokens,
                       needle_cap_tokens=args.needle_cap_tokens or None,
                       replicas=tuple(args.replica),
                       **({"known_max_tokens": args.known_max_tokens}
                          if args.known_max_tokens is not None else {}))
    try:
        cfg.validate()
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE
    if args.out is not None and args.out.parent and not args.out.parent.is_dir():
        print(f"error: --out {str(args.out)!r}: directory {str(args.out.parent)!r} does not "
              "exist", file=sys.stderr)
        return EXIT_USAGE
    wrong_key = _pinned(args, timeout_s)
    if wrong_key:
        print(f"error: {wrong_key}\nFAIL", file=sys.stderr)
        return EXIT_FAIL
    report = rep.price(accept(cfg), usd_per_hour)
    print(rep.summary(report))
    if args.out is not None:
        try:
            args.out.write_text(json.dumps(report, indent=2) + "\n")
        except OSError as e:
            print(f"error: --out {str(args.out)!r}: {e.strerror}", file=sys.stderr)
            return EXIT_USAGE
    return rep.exit_code(report)
