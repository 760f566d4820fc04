#!/bin/bash
# Run a command with the local services up (start.sh: sshd, munge, a 4-node Slurm in network
# namespaces) and leave the machine as it was found. `./run test` runs the test suite through it.
#   - nothing running: start them, marked as started by a session (run/session-started);
#   - something running: use what runs (start.sh fills in anything missing), leave it up;
#   - on the command's end, failure or interrupt (INT, TERM, HUP): services a session started are
#     stopped (stop.sh) by the last session using them; services started otherwise (start.sh by
#     hand, another tool) are never stopped here.
# Sessions register in run/sessions/ under run/session.lock, so concurrent runs share safely;
# a session killed outright (SIGKILL) leaves its mark, and the next session to end cleans up.
# A TERM sent to this script alone takes effect when the command returns; send it to the process
# group to end both at once.
# Usage: session.sh COMMAND [ARGS...]   (as root; KK3_CI_DIR as start.sh)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
dir=${KK3_CI_DIR:-/tmp/kimi-k3-ci}
run=$dir/run
mkdir -p "$run/sessions"

lock() { exec 9>"$run/session.lock" && flock 9; }
unlock() { flock -u 9 && exec 9>&-; }
alive() { [ -f "$1" ] && kill -0 "$(cat "$1" 2>/dev/null)" 2>/dev/null; }
# how many of the seven daemons (sshd, munged, slurmctld, four slurmd) are alive
running() {
  local n=0 f
  for f in "$run/sshd.pid" "$run/munged.pid" "$run/slurmctld.pid" "$run"/slurmd.*.pid; do
    if alive "$f"; then n=$((n + 1)); fi
  done
  echo "$n"
}
# another live session is registered (entries of dead sessions are removed on the way)
others() {
  local s pid found=1
  for s in "$run"/sessions/*; do
    [ -e "$s" ] || continue
    pid=${s##*/}
    [ "$pid" = "$$" ] && continue
    if kill -0 "$pid" 2>/dev/null; then found=0; else rm -f "$s"; fi
  done
  return "$found"
}

finish() {
  local rc=$?
  trap - EXIT INT TERM HUP
  lock
  rm -f "$run/sessions/$$"
  if [ -f "$run/session-started" ] && ! others; then
    echo "stopping the services this test run started"
    if "$here/stop.sh" 9>&-; then rm -f "$run/session-started"; fi
  fi
  unlock
  exit "$rc"
}

lock
up=$(running)
echo "$$" >"$run/sessions/$$"
trap finish EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP
if [ "$up" -eq 0 ]; then
  : >"$run/session-started"
fi
if [ "$up" -lt 7 ]; then
  "$here/start.sh" 9>&-   # the daemons it starts must not inherit the lock
else
  echo "services already running: using them and leaving them up"
fi
unlock

"$@"
