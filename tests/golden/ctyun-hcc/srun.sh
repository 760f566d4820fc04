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
#SBATCH --open-mode=append
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
# one line per run of the job: a requeue appends the next run's (with its count) to this log
echo "endpoint: http://$NODE0_ADDR:11025/v1 run: ${SLURM_RESTART_COUNT:-0} served model: $served_model"
echo "nodes: $SLURM_JOB_NODELIST (vLLM ranks in order: $NODE_ORDER)"

# srun's own messages (which task ended first, and how) are kept to tell a lost node from a
# failed engine below; they still reach the job's error log
srun_err=$(mktemp)
set +e
srun --ntasks-per-node=1 --kill-on-bad-exit=1 --open-mode=append \
  --output=/home/kimi-k3/logs/node_%j.%t.out \
  --error=/home/kimi-k3/logs/node_%j.%t.err \
  /home/kimi-k3/node.sh 2>&1 | tee "$srun_err" >&2
rc=${PIPESTATUS[0]}
set -e
first=$(grep -m1 -oE 'task [0-9]+: (Exited with exit code [0-9]+|Terminated|Killed)' "$srun_err" || true)
rm -f "$srun_err"
[ "$rc" -eq 0 ] && exit 0

# a node that reboots or fails: its shutdown TERMs the task there (that task is the first to end,
# with 143), or its slurmd stops answering. The task's exit ends the step; if this script ended
# too, the job would end FAILED before Slurm sets the node DOWN, and only a node of a running
# job makes Slurm requeue it (--requeue). So the script waits (SlurmdTimeout and a minute) for
# Slurm's own requeue, which ends it; if the node answered again in time (Slurm never set it
# DOWN) and every node runs a step again, it requeues the job itself (same id either way: the
# stack's state stays right). A self-requeue while a node is still silent is not done: Slurm
# 22.05 then left the restarted job unable to create a step ("Invalid generic resource") and
# pending for ever (seen on the local cluster). The first task to end is the cause:
# --kill-on-bad-exit TERMs the others after it, so srun's own exit code (the highest) says 143
# for a failed engine too. Nothing is waited for or requeued when the job is no longer RUNNING
# (cancelled), the stack's stop mark names it (a resize or destroy stopped it), it is not
# requeueable, or it restarted 5 times already (then an operator should look).
probe() { timeout 120 srun --overlap --ntasks-per-node=1 --kill-on-bad-exit=0 true >/dev/null 2>&1; }
requeueable() {
  ! grep -qs "^[^ ]* $SLURM_JOB_ID " /home/kimi-k3/logs/service-stopped \
    && [ "${SLURM_RESTART_COUNT:-0}" -lt 5 ] \
    && scontrol -o show job "$SLURM_JOB_ID" | grep -q 'JobState=RUNNING .* Requeue=1 '
}
lost=""
case "$first" in
  *"exit code 143" | *Terminated) lost="$first first (SIGTERM from outside the job, as a node's shutdown sends)" ;;
esac
if [ -z "$lost" ] && ! probe; then
  lost="a node of the job does not run a step any more (its slurmd is gone)"
fi
if [ -n "$lost" ] && requeueable; then
  # (a slurmctld that does not answer now must not end the script under set -e: the default)
  slurmd_timeout=$(scontrol show config 2>/dev/null | awk '$1 == "SlurmdTimeout" {print $3}' || true)
  case "$slurmd_timeout" in "" | *[!0-9]*) slurmd_timeout=300 ;; esac
  wait_s=$(( slurmd_timeout + 60 ))
  echo "job $SLURM_JOB_ID: srun ended with $rc: $lost; waiting up to $wait_s s for Slurm to requeue it" >&2
  sleep "$wait_s"  # Slurm's requeue ends this script
  if probe && requeueable; then
    echo "job $SLURM_JOB_ID: every node answers again; requeueing it (restart $(( ${SLURM_RESTART_COUNT:-0} + 1 )) of 5)" >&2
    if scontrol requeue "$SLURM_JOB_ID"; then
      sleep 600  # the requeue ends this script
    fi
  fi
fi
exit "$rc"
