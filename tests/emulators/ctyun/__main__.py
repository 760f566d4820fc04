"""`python -m tests.emulators.ctyun --port PORT --credentials AK:SK [--job-seconds S]`.

Prints `listening on http://127.0.0.1:PORT` once ready (PORT 0 picks a free port), then serves
until killed.
"""

import argparse
import sys

from .server import make_server
from .state import Settings, State


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.emulators.ctyun")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--credentials", action="append", required=True,
                   help="AK:SK accepted by the gateway (repeatable)")
    p.add_argument("--job-seconds", type=float, default=1.0,
                   help="simulated provisioning time of each job")
    args = p.parse_args(argv)
    creds = {}
    for pair in args.credentials:
        ak, sep, sk = pair.partition(":")
        if not sep or not ak or not sk:
            p.error("--credentials takes AK:SK")
        creds[ak] = sk
    server = make_server(args.port, creds, args.host,
                         State(Settings(job_seconds=args.job_seconds)))
    print(f"listening on http://{args.host}:{server.server_address[1]}", flush=True)
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
