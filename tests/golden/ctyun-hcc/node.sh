#!/bin/bash
# per-node launcher, run by srun on every node of the job (see srun.sh)
# Rendered by kimi-k3 (components/ctyun_hcc/scripts.py); do not edit by hand.
set -euo pipefail
export LC_CTYPE=C.UTF-8

: "${SLURM_JOB_ID:?run me through srun.sh}" "${SLURMD_NODENAME:?run me through srun.sh}"
: "${NODE0_ADDR:?srun.sh exports NODE0_ADDR}" "${NODE_ORDER:?srun.sh exports NODE_ORDER}"
# this node's vLLM rank: its place in NODE_ORDER (head first)
node_rank=$(tr ' ' '\n' <<<"$NODE_ORDER" | awk -v h="$SLURMD_NODENAME" '$1 == h {print NR - 1}')
if [ -z "$node_rank" ]; then
  echo "$SLURMD_NODENAME is not in NODE_ORDER ($NODE_ORDER)" >&2
  exit 1
fi
sif=/mnt/nvme0n1/apptainer/vllm-ascend_kimi-k3-a3.sif
instance=kimi-k3-"${SLURM_JOB_ID}"

# this node's address is the source of its route to node 0; the interface is the one owning it
NODE_ADDR=$(ip -o route get "$NODE0_ADDR" | awk '{for (i = 1; i < NF; i++) if ($i == "src") {print $(i + 1); exit}}')
NODE_IFNAME=$(ip -o -4 addr show | awk -v a="$NODE_ADDR" '{split($4, p, "/"); if (p[1] == a) {print $2; exit}}')
if [ -z "$NODE_ADDR" ] || [ -z "$NODE_IFNAME" ]; then
  echo "node $node_rank: no route to node 0 at $NODE0_ADDR" >&2
  exit 1
fi
export NODE_ADDR NODE_IFNAME

child=""
cleanup() {
  trap - EXIT INT TERM
  if [ -n "$child" ]; then kill "$child" 2>/dev/null || true; fi
  apptainer instance stop "$instance" >/dev/null 2>&1 || true
}
trap cleanup EXIT
trap 'cleanup; exit 143' TERM
trap 'cleanup; exit 130' INT

# a requeued job (same id, after a node failed) can meet the instance of its own earlier run
# on a node that kept it: it is this job's, so it is stopped before the new start
apptainer instance stop "$instance" >/dev/null 2>&1 || true
apptainer instance start --no-home --writable-tmpfs \
  --bind /usr/local/sbin:/usr/local/sbin \
  --bind /usr/local/Ascend/driver:/usr/local/Ascend/driver \
  --bind /mnt/nvme1n1/model/Kimi-K3-w4a8:/model \
  "$sif" "$instance"

if [ "$node_rank" -eq 0 ]; then
  export HCCL_IF_IP="${NODE_ADDR}"
  export GLOO_SOCKET_IFNAME="${NODE_IFNAME}"
  export TP_SOCKET_IFNAME="${NODE_IFNAME}"
  export HCCL_SOCKET_IFNAME="${NODE_IFNAME}"
  export HCCL_BUFFSIZE=800
  export PYTORCH_NPU_ALLOC_CONF=expandable_segments:True
  export OMP_PROC_BIND=false
  export OMP_NUM_THREADS=1
  export TASK_QUEUE_ENABLE=1
  export ASCEND_RT_VISIBLE_DEVICES=0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15
  export VLLM_ENGINE_READY_TIMEOUT_S=7200
  argv=(
    vllm serve /model
    --served-model-name Kimi-K3
    --host 0.0.0.0
    --port 11025
    --trust-remote-code
    --tensor-parallel-size 16
    --data-parallel-size 4
    --data-parallel-size-local 1
    --data-parallel-address "${NODE0_ADDR}"
    --data-parallel-rpc-port 13389
    --enable-prefix-caching
    --enable-expert-parallel
    --max-num-seqs 16
    --max-model-len 131072
    --max-num-batched-tokens 24576
    --gpu-memory-utilization 0.9
    --compilation-config '{"cudagraph_mode":"FULL_DECODE_ONLY"}'
    --mm-processor-cache-gb 0
    --additional-config '{"enable_cpu_binding":true,"enable_flashcomm1":true}'
    --mm-encoder-tp-mode data
    --limit-mm-per-prompt '{"vision_chunk":40}'
    --enable-auto-tool-choice
    --tool-call-parser kimi_k3
    --reasoning-parser kimi_k3
  )
else
  export HCCL_IF_IP="${NODE_ADDR}"
  export GLOO_SOCKET_IFNAME="${NODE_IFNAME}"
  export TP_SOCKET_IFNAME="${NODE_IFNAME}"
  export HCCL_SOCKET_IFNAME="${NODE_IFNAME}"
  export HCCL_BUFFSIZE=800
  export PYTORCH_NPU_ALLOC_CONF=expandable_segments:True
  export OMP_PROC_BIND=false
  export OMP_NUM_THREADS=1
  export TASK_QUEUE_ENABLE=1
  export ASCEND_RT_VISIBLE_DEVICES=0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15
  argv=(
    vllm serve /model
    --served-model-name Kimi-K3
    --host 0.0.0.0
    --port 11025
    --trust-remote-code
    --tensor-parallel-size 16
    --data-parallel-size 4
    --data-parallel-size-local 1
    --headless
    --data-parallel-start-rank "${node_rank}"
    --data-parallel-address "${NODE0_ADDR}"
    --data-parallel-rpc-port 13389
    --enable-prefix-caching
    --enable-expert-parallel
    --max-num-seqs 16
    --max-model-len 131072
    --max-num-batched-tokens 24576
    --gpu-memory-utilization 0.9
    --compilation-config '{"cudagraph_mode":"FULL_DECODE_ONLY"}'
    --mm-processor-cache-gb 0
    --additional-config '{"enable_cpu_binding":true,"enable_flashcomm1":true}'
    --mm-encoder-tp-mode data
    --limit-mm-per-prompt '{"vision_chunk":40}'
    --enable-auto-tool-choice
    --tool-call-parser kimi_k3
    --reasoning-parser kimi_k3
  )
fi

echo "node $node_rank ($SLURMD_NODENAME, $NODE_ADDR on $NODE_IFNAME): starting ${argv[0]} in instance $instance"
apptainer exec "instance://$instance" "${argv[@]}" &
child=$!
wait "$child"
