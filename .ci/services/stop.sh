#!/bin/bash
# Stop what start.sh started (by the pid files it wrote) and remove the namespaces and bridge.
set -euo pipefail
dir=${KK3_CI_DIR:-/tmp/kimi-k3-ci}
if [ -f "$dir/slurm/slurm.conf" ]; then
  SLURM_CONF=$dir/slurm/slurm.conf scancel --full --quiet --user=root 2>/dev/null || true
fi
for pidfile in "$dir"/run/slurmd.*.pid "$dir/run/slurmctld.pid" "$dir/run/munged.pid" "$dir/run/sshd.pid"; do
  [ -f "$pidfile" ] || continue
  pid=$(cat "$pidfile")
  if kill -0 "$pid" 2>/dev/null; then
    kill "$pid"
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  fi
  rm -f "$pidfile"
done
for i in 0 1 2 3; do
  ip link del "kk3v$i" 2>/dev/null || true
  ip netns del "kk3n$i" 2>/dev/null || true
done
ip link del kk3br0 2>/dev/null || true
tmp=$(mktemp)
grep -v '# kimi-k3-ci$' /etc/hosts >"$tmp" || true
cat "$tmp" >/etc/hosts
rm -f "$tmp"
echo "services stopped"
