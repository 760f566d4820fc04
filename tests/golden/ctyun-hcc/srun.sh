#!/bin/bash
# sbatch script: one vLLM replica over all allocated nodes (submit: sbatch srun.sh)
# Rendered by kimi-k3 (components/ctyun_hcc/scripts.py); do not edit by hand.
#SBATCH --job-name=kimi-k3
#SBATCH --nodes=4
#SBATCH --ntasks-per-node=1
#SBATCH --partition=batch
#SBATCH --exclusive
#SBATCH --chdir=/home/kimi-k3
#SBATCH --output=/home/kimi-k3/logs/job_%j.out
#SBATCH --error=/home/kimi-k3/logs/job_%j.err
set -euo pipefail
export LC_CTYPE=C.UTF-8

# node 0 (the vLLM head) is $KK3_HEAD_HOST when it is part of the allocation (the master,
# which holds the public address), else the first host; the others follow in allocation order
hosts=$(scontrol show hostnames "$SLURM_JOB_NODELIST")
node0_host=$(printf '%s\n' "$hosts" | awk 'NR == 1')
if [ -n "${KK3_HEAD_HOST:-}" ] && printf '%s\n' "$hosts" | grep -x "$KK3_HEAD_HOST" >/dev/null; then
  node0_host=$KK3_HEAD_HOST
fi
NODE_ORDER=$({ echo "$node0_host"; printf '%s\n' "$hosts" | grep -vx "$node0_host" || true; } | tr '\n' ' ')
export NODE_ORDER

# node 0's address: its Slurm NodeAddr, resolved if it is a name
node0_addr=$(scontrol show node "$node0_host" | tr ' ' '\n' | awk -F= '$1 == "NodeAddr" {print $2}')
case "$node0_addr" in
  *[!0-9.]* | "") node0_addr=$(getent ahostsv4 "${node0_addr:-$node0_host}" | awk 'NR == 1 {print $1}') ;;
esac
case "$node0_addr" in
  "" | 127.*)
    echo "cannot find a cluster address for node 0 ($node0_host): got '$node0_addr'" >&2
    exit 1 ;;
esac
export NODE0_ADDR="$node0_addr"

served_model=Kimi-K3
echo "endpoint: http://$NODE0_ADDR:11025/v1 served model: $served_model"
echo "nodes: $SLURM_JOB_NODELIST (vLLM ranks in order: $NODE_ORDER)"

srun --ntasks-per-node=1 --kill-on-bad-exit=1 \
  --output=/home/kimi-k3/logs/node_%j.%t.out \
  --error=/home/kimi-k3/logs/node_%j.%t.err \
  /home/kimi-k3/node.sh
