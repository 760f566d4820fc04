#!/bin/bash
# Entry point ./run test calls (as root): install and start sshd + the 4-node Slurm (see start.sh).
set -euo pipefail
exec "$(dirname "$0")/start.sh"
