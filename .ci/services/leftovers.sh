#!/bin/bash
# Print what start.sh's services left on this machine (daemons, namespaces, links, /etc/hosts
# lines) and exit 1 if anything is left, 0 if nothing. Read-only.
set -uo pipefail
dir=${KK3_CI_DIR:-/tmp/kimi-k3-ci}
left=0
say() { echo "left: $*"; left=1; }
# daemons started with a config, key, socket or pid file under $dir (sshd, munged, slurmctld,
# slurmd) and any Slurm step daemon
while read -r pid cmd; do
  say "process $pid $cmd"
done < <(pgrep -af "$dir/|slurmstepd")
for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E '^kk3n[0-9]+$'); do
  say "network namespace $ns"
done
for link in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1 | grep -E '^kk3(br0|v[0-9]+)$'); do
  say "link $link"
done
if grep -q '# kimi-k3-ci$' /etc/hosts 2>/dev/null; then
  say "/etc/hosts lines: $(grep -c '# kimi-k3-ci$' /etc/hosts)"
fi
[ "$left" = 0 ] && echo "nothing left"
exit "$left"
