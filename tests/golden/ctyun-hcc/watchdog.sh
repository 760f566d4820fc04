#!/bin/bash
# resume watchdog: nodes Slurm set DOWN for not answering or rebooting go back to service once slurmd answers (run on the master)
# Rendered by kimi-k3 (components/ctyun_hcc/scripts.py); do not edit by hand.
set -euo pipefail
interval=${KK3_WATCHDOG_INTERVAL_S:-30}

once() {
  local node state reason
  # %T: the state, with a trailing '*' while the node does not answer; %E: the reason
  sinfo -h -N -p batch -t down -o '%N|%T|%E' | while IFS='|' read -r node state reason; do
    case "$state" in
      *'*') continue ;;         # slurmd still silent: nothing to do yet
      down) ;;                  # DOWN and answering again
      *) continue ;;            # drained, or down and draining: an operator's decision
    esac
    case "$reason" in
      'Not responding'* | 'Node unexpectedly rebooted'*)
        if scontrol update NodeName="$node" State=RESUME; then
          echo "$(date -u +%Y-%m-%dT%H:%M:%SZ) resumed $node (was DOWN: $reason)"
        fi ;;
    esac
  done
}

case "${1:-}" in
  --once) once ;;
  "") while :; do once || true; sleep "$interval"; done ;;
  *) echo "usage: watchdog.sh [--once]   (resumes nodes DOWN for: Not responding|Node unexpectedly rebooted)" >&2; exit 2 ;;
esac
