#!/bin/bash
# broadcast: SIF image and weights from the master to the nodes (sbatch bcast.sh, or bcast.sh --copy)
# Rendered by kimi-k3 (components/ctyun_hcc/scripts.py); do not edit by hand.
#SBATCH --job-name=kimi-k3-bcast
#SBATCH --nodes=4
#SBATCH --ntasks-per-node=1
#SBATCH --partition=batch
#SBATCH --time=01:00:00
#SBATCH --chdir=/home/kimi-k3
#SBATCH --output=/home/kimi-k3/logs/bcast_%j.out
#SBATCH --error=/home/kimi-k3/logs/bcast_%j.err
set -euo pipefail

load_modules() {
  if [ -r /etc/profile.d/modules.sh ]; then
    set +u  # environment-modules' init reads unset variables
    # shellcheck disable=SC1091
    . /etc/profile.d/modules.sh
    module load mpich/3.2.1/gcc-10.3.1
    module load cthpc_910b/2.0.0/mpich-3.2.1
    set -u
  else
    echo "warning: /etc/profile.d/modules.sh not found on $(hostname -s): modules mpich/3.2.1/gcc-10.3.1 cthpc_910b/2.0.0/mpich-3.2.1 not loaded (cthpc_model_bcast is found on PATH or not at all)" >&2
  fi
}

# one short step on one node of the partition (outside a job: the --copy method)
on_node() {
  local node=$1
  shift
  srun -p batch -N 1 -n 1 -w "$node" --immediate=120 "$@"
}

# a node's Slurm NodeAddr, resolved if it is a name
addr_of() {
  local a
  a=$(scontrol show node "$1" | tr ' ' '\n' | awk -F= '$1 == "NodeAddr" {print $2}')
  case "$a" in
    *[!0-9.]* | "") a=$(getent ahostsv4 "${a:-$1}" | awk 'NR == 1 {print $1}') ;;
  esac
  echo "$a"
}

# --copy SRC DST NODE...: on the master, one tar stream per node over TCP, in parallel, then
# the sizes. A one-off server on the master (python3) hands each node that shows the run's
# token one `tar -c` of SRC; the node (bash's /dev/tcp and tar, nothing else) unpacks it in
# DST. Slurm's own step I/O (tar | srun) would need no port, but moves ~25 MB/s: hours per TB.
copy_to_nodes() {
  local src=$1 dst=$2 node marker want got token port_file port server addr
  shift 2
  if [ ! -d "$src" ]; then
    echo "broadcast source $src is not a directory on $(hostname -s)" >&2
    return 1
  fi
  # a node that already sees the source at DST (shared storage) needs no copy
  marker=".kk3-bcast-$$-$RANDOM"
  : >"$src/$marker"
  local need=() pids=() failed=() short=()
  for node in "$@"; do
    if [ "$(on_node "$node" --time=5 stat -c shared "$dst/$marker" 2>/dev/null)" = shared ]; then
      echo "$node: $dst is the source's own storage; nothing to copy"
    else
      need+=("$node")
    fi
  done
  rm -f "$src/$marker"
  if [ "${#need[@]}" -gt 0 ]; then
    token=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
    port_file=$(mktemp)
    python3 - "$src" "$token" "${#need[@]}" >"$port_file" <<'PY' &
import socket, subprocess, sys
src, token, count = sys.argv[1], sys.argv[2].encode(), int(sys.argv[3])
srv = socket.socket()
srv.bind(("0.0.0.0", 0))
srv.listen(count)
print(srv.getsockname()[1], flush=True)
srv.settimeout(900)  # a node that never comes does not hold the master for ever
tars = []
while len(tars) < count:
    conn, _ = srv.accept()
    conn.settimeout(30)
    if conn.recv(len(token) + 1).strip() != token:
        conn.close()  # not one of this run's nodes
        continue
    conn.settimeout(None)
    tars.append(subprocess.Popen(["tar", "-C", src, "-cf", "-", "."], stdout=conn.fileno()))
    conn.close()
sys.exit(max(t.wait() for t in tars))
PY
    server=$!
    for _ in $(seq 1 50); do
      port=$(head -n 1 "$port_file")
      [ -z "$port" ] || break
      sleep 0.1
    done
    rm -f "$port_file"
    if [ -z "$port" ]; then
      echo "the copy server did not start on $(hostname -s) (python3 missing?)" >&2
      kill "$server" 2>/dev/null || true
      return 1
    fi
    for node in "${need[@]}"; do
      # the master's own address on the way to that node
      addr=$(ip -o route get "$(addr_of "$node")" | awk '{for (i = 1; i < NF; i++) if ($i == "src") {print $(i + 1); exit}}')
      echo "copying $src to $node:$dst (from $addr:$port)"
      on_node "$node" /home/kimi-k3/bcast.sh --receive "$addr" "$port" "$token" "$dst" &
      pids+=("$!")
    done
    for i in "${!pids[@]}"; do
      wait "${pids[$i]}" || failed+=("${need[$i]}")
    done
    if [ "${#failed[@]}" -gt 0 ]; then
      kill "$server" 2>/dev/null || true
      echo "copy of $src failed on ${failed[*]}" >&2
      return 1
    fi
    wait "$server" || { echo "copy of $src: tar failed on $(hostname -s)" >&2; return 1; }
  fi
  want=$(du -sb "$src" | awk '{print $1}')
  for node in "$@"; do
    got=$(on_node "$node" --time=5 /home/kimi-k3/bcast.sh --size "$dst" | awk '{print $2}')
    [ "$got" = "$want" ] || short+=("$node=${got:-unknown}")
  done
  if [ "${#short[@]}" -gt 0 ]; then
    echo "broadcast of $src incomplete: source has $want bytes, but ${short[*]}" >&2
    return 1
  fi
  echo "copied $src to $*"
}

case "${1:-}" in
  --node)
    # one step on one node: bind MPI to the interface that reaches the source host
    src_host=$2 path=$3
    src_addr=$(getent ahostsv4 "$src_host" | awk 'NR == 1 {print $1}')
    MPICH_NET_DEV=$(ip -o route get "$src_addr" | awk '{for (i = 1; i < NF; i++) if ($i == "dev") {print $(i + 1); exit}}')
    export MPICH_NET_DEV
    mkdir -p "$path"
    exec cthpc_model_bcast "$src_host" "$path" "$path" ;;
  --size)
    echo "$(hostname -s) $(du -sb "$2" | awk '{print $1}')"
    exit 0 ;;
  --probe)
    # which method this host offers: the seed's cthpc_model_bcast, else plain copies
    load_modules
    if command -v cthpc_model_bcast >/dev/null 2>&1; then echo "method cthpc_model_bcast"; else echo "method copy"; fi
    exit 0 ;;
  --receive)
    # one node's side of --copy: ADDR PORT TOKEN DST
    mkdir -p "$5"
    exec 3<>"/dev/tcp/$2/$3"
    printf '%s\n' "$4" >&3
    exec tar -xf - -C "$5" <&3 ;;
  --copy)
    copy_to_nodes "${@:2}"
    exit ;;
  --copy-all)
    for path in /mnt/nvme0n1/apptainer /mnt/nvme1n1/model/Kimi-K3-w4a8; do
      copy_to_nodes "$path" "$path" "${@:2}"
    done
    echo "broadcast complete"
    exit ;;
esac

load_modules
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
