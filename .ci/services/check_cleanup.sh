#!/bin/bash
# End-to-end check that `./run test` stops what it starts, with the real services (root):
#   1. nothing may be running before (stop shared services first: stop.sh);
#   2. `./run test ARGS` (default: one test file that uses sshd and Slurm) starts them, runs,
#      and must leave nothing behind (leftovers.sh), also when the tests fail;
#   3. the same once more, cancelled (SIGTERM to the run's process group) while pytest runs.
# Leaves the services stopped. Prints what it saw; exits 1 if anything was left.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
[ "$(id -u)" = 0 ] || { echo "check_cleanup.sh must run as root" >&2; exit 2; }
if ! "$here/leftovers.sh" >/dev/null; then
  "$here/leftovers.sh" || true
  echo "services are running: stop them first (.ci/services/stop.sh)" >&2
  exit 2
fi
args=("$@")
[ "${#args[@]}" -gt 0 ] || args=(tests/integration/test_ssh_runner.py -q -p no:cacheprovider)
cd "$root"

echo "== ./run test ${args[*]}"
rc=0
./run test "${args[@]}" || rc=$?
echo "== exit status $rc; after the run:"
"$here/leftovers.sh"

echo "== ./run test ${args[*]}, cancelled (SIGTERM to its process group) while pytest runs"
# (a background job of a script ignores SIGINT, so a cancel is played with TERM here; Ctrl-C
# and HUP are covered with stand-in services by tests/integration/test_run_services.py)
setsid ./run test "${args[@]}" &
pid=$!
for _ in $(seq 1 600); do
  pgrep -f "^[^ ]*python[0-9.]* -m pytest ${args[0]}" >/dev/null && break
  sleep 0.2
done
sleep 2
kill -TERM -- "-$pid"
rc=0
wait "$pid" || rc=$?
echo "== exit status $rc after SIGTERM; after the run:"
"$here/leftovers.sh"
