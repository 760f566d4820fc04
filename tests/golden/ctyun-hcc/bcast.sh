#!/bin/bash
# broadcast job: SIF image and weights from the submit host to every node (sbatch bcast.sh)
# Rendered by kimi-k3 (components/inference/render_slurm.py); do not edit by hand.
#SBATCH --job-name=kimi-k3-bcast
#SBATCH --nodes=4
#SBATCH --ntasks-per-node=1
#SBATCH --partition=batch
#SBATCH --time=01:00:00
#SBATCH --chdir=/home/kimi-k3
#SBATCH --output=/home/kimi-k3/logs/bcast_%j.out
#SBATCH --error=/home/kimi-k3/logs/bcast_%j.err
set -euo pipefail

if [ "${1:-}" = "--node" ]; then
  # one step on one node: bind MPI to the interface that reaches the source host
  src_host=$2 path=$3
  src_addr=$(getent ahostsv4 "$src_host" | awk 'NR == 1 {print $1}')
  MPICH_NET_DEV=$(ip -o route get "$src_addr" | awk '{for (i = 1; i < NF; i++) if ($i == "dev") {print $(i + 1); exit}}')
  export MPICH_NET_DEV
  mkdir -p "$path"
  exec cthpc_model_bcast "$src_host" "$path" "$path"
fi
if [ "${1:-}" = "--size" ]; then
  echo "$(hostname -s) $(du -sb "$2" | awk '{print $1}')"
  exit 0
fi

if [ -r /etc/profile.d/modules.sh ]; then
  # shellcheck disable=SC1091
  . /etc/profile.d/modules.sh
  module load mpich/3.2.1/gcc-10.3.1
  module load cthpc_910b/2.0.0/mpich-3.2.1
fi
src_host="${BCAST_SOURCE:-$SLURM_SUBMIT_HOST}"
for path in /mnt/nvme0n1/apptainer /mnt/nvme1n1/model/Kimi-K3-w4a8; do
  echo "broadcasting $path from $src_host to $SLURM_JOB_NODELIST"
  srun --mpi=pmi2 --ntasks-per-node=1 \
    --output=/home/kimi-k3/logs/bcast_%j.%t.out \
    --error=/home/kimi-k3/logs/bcast_%j.%t.err \
    /home/kimi-k3/bcast.sh --node "$src_host" "$path"
done

# verify: every node holds the same number of bytes as the source host
for path in /mnt/nvme0n1/apptainer /mnt/nvme1n1/model/Kimi-K3-w4a8; do
  sizes=$(srun --ntasks-per-node=1 /home/kimi-k3/bcast.sh --size "$path")
  want=$(printf '%s\n' "$sizes" | awk -v h="$src_host" '$1 == h {print $2}')
  want=${want:-$(du -sb "$path" | awk '{print $1}')}
  bad=$(printf '%s\n' "$sizes" | awk -v w="$want" '$2 != w {print $1 "=" $2}')
  if [ -n "$bad" ]; then
    echo "broadcast of $path incomplete: source has $want bytes, but $bad" >&2
    exit 1
  fi
done
echo "broadcast complete"
