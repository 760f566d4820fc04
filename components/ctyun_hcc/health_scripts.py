"""The two scripts that keep a Slurm-served replica healthy, as plain renderers (no I/O).

- `preflight.sh`: before the service is submitted, proves that the nodes reach each other on
  the ports the replica needs, and fails naming the node and the port that are blocked. A
  security group that drops traffic between its own members (issue 19: the stack's group
  revokes what CTyun put on a new group) otherwise shows up an hour later as a vLLM start-up
  that never finishes. Checked: every worker to the head's data-parallel RPC port, the master
  to the head's model port, every node to the Slurm controller's port and to every other
  node's slurmd port (Slurm forwards step launches node to node). The head listens on its two
  ports for the length of the check (python3; without it those two checks are skipped and
  said so); a port already taken on the head is an error too.
- `watchdog.sh`: on the master, returns to service a node that Slurm set DOWN because it
  stopped answering or rebooted, once its slurmd answers again. Slurm's `ReturnToService=1`
  does not return a node that rebooted ("Node unexpectedly rebooted" stays DOWN), and the
  cluster's slurm.conf is CTyun's launcher's to manage, not ours (slurm.conf(5), 22.05,
  ReturnToService; src/slurmctld/node_mgr.c). A node DOWN or DRAINED for any other reason
  (an operator's maintenance, a failed health check) is never touched.
"""

from __future__ import annotations

from .scripts import SlurmLayout, _header, q

#: why Slurm sets a node DOWN by itself when it stops answering or comes back rebooted
#: (src/slurmctld/node_mgr.c and ping_nodes.c at slurm-22-05-8-1): the reasons the watchdog acts on
RESUMABLE_REASONS = ("Not responding", "Node unexpectedly rebooted")
#: seconds between two looks at the partition
WATCHDOG_INTERVAL_S = 30


def render_preflight_sh(layout: SlurmLayout) -> str:
    """`preflight.sh --run HEAD NODES RPC_PORT MODEL_PORT` on the master (one srun step over
    NODES nodes of the partition, `preflight.sh --node ...` on each); prints `FAIL ...` lines
    and exits 1 when something is blocked, `preflight: ok` otherwise."""
    layout.validate()
    me = q(layout.work_dir + "/preflight.sh")
    return _header("network preflight: do the nodes reach each other on the service's ports? (preflight.sh --run HEAD NODES RPC_PORT MODEL_PORT)") + f"""\
set -euo pipefail
work_dir={q(layout.work_dir)}
log_dir={q(layout.log_dir)}
wait_s=${{KK3_PREFLIGHT_WAIT_S:-30}}

# a node's Slurm NodeAddr, resolved if it is a name
addr_of() {{
  local a
  a=$(scontrol show node "$1" | tr ' ' '\\n' | awk -F= '$1 == "NodeAddr" {{print $2}}')
  case "$a" in
    *[!0-9.]* | "") a=$(getent ahostsv4 "${{a:-$1}}" | awk 'NR == 1 {{print $1}}') ;;
  esac
  echo "$a"
}}

# ADDR PORT: connect once (bash's /dev/tcp, 3 s); on failure print why
reach_once() {{
  local err
  # shellcheck disable=SC2016  # the address and port reach the inner bash as its arguments
  if err=$(timeout 3 bash -c 'exec 3<>"/dev/tcp/$1/$2"' _ "$1" "$2" 2>&1); then
    return 0
  fi
  err=$(printf '%s\\n' "$err" | awk 'NF {{line = $0}} END {{print line}}')
  err=${{err##*: }}
  echo "${{err:-timed out}}"
  return 1
}}

# ADDR PORT: retry for wait_s (the other side may not listen yet); print the last error
reach() {{
  local err="" end=$((SECONDS + wait_s))
  while :; do
    if err=$(reach_once "$1" "$2"); then return 0; fi
    [ "$SECONDS" -lt "$end" ] || break
    sleep 1
  done
  echo "$err"
  return 1
}}

config_value() {{
  scontrol show config | awk -F' *= *' -v k="$1" '$1 == k {{print $2; exit}}'
}}

# --node HEAD RPC_PORT MODEL_PORT DONE_FILE: one node's side
node_checks() {{
  local head=$1 rpc=$2 model=$3 done_file=$4 self head_addr hosts host addr err ctl ctl_addr ctl_port slurmd_port
  self=${{SLURMD_NODENAME:-$(hostname -s)}}
  hosts=$(scontrol show hostnames "$SLURM_JOB_NODELIST")
  # the head is HEAD when it is in this allocation, else the first host (as srun.sh decides)
  if ! printf '%s\\n' "$hosts" | grep -qx "$head"; then
    head=$(printf '%s\\n' "$hosts" | awk 'NR == 1')
  fi
  head_addr=$(addr_of "$head")
  if [ "$self" = "$head" ]; then
    if ! command -v python3 >/dev/null 2>&1; then
      echo "SKIP $self: python3 not found, so nothing listened on TCP $rpc and $model; those two checks were not run"
      echo "LISTENING $head $head_addr none"
      : >"$done_file.none"
    else
      python3 - "$rpc" "$model" "$done_file" "$((wait_s * 4))" "$self" "$head_addr" <<'PY'
import os, socket, sys, time
rpc, model, done, limit, me, addr = sys.argv[1:7]
names = {{int(rpc): "vLLM data-parallel RPC", int(model): "the model endpoint"}}
socks = []
for port, what in names.items():
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        s.bind(("0.0.0.0", port))
        s.listen(64)
    except OSError as e:
        print(f"FAIL {{me}}: TCP {{port}} ({{what}}) cannot be opened on the head: {{e.strerror}}",
              flush=True)
        continue
    s.settimeout(0.2)
    socks.append(s)
print(f"LISTENING {{me}} {{addr}} {{len(socks)}}", flush=True)
open(done + ".listening", "w").close()  # the workers (shared work dir) may try now
end = time.time() + float(limit)
while time.time() < end and not os.path.exists(done):
    for s in socks:
        try:
            s.accept()[0].close()
        except socket.timeout:
            pass
PY
    fi
  else
    # the head says when it listens (a file in the shared work dir), then the RPC port
    for _ in $(seq 1 $((wait_s * 2))); do
      [ ! -e "$done_file.listening" ] && [ ! -e "$done_file.none" ] || break
      sleep 0.5
    done
    if [ -e "$done_file.none" ]; then
      :  # nothing listens: said once by the head
    elif [ ! -e "$done_file.listening" ]; then
      echo "FAIL $self: the head $head never listened on TCP $rpc"
    elif ! err=$(reach "$head_addr" "$rpc"); then
      echo "FAIL $self -> $head ($head_addr) TCP $rpc (vLLM data-parallel RPC): $err"
    fi
    echo "RPC $self"
  fi
  # Slurm: every node to the controller, and to every other node's slurmd
  ctl=$(config_value 'SlurmctldHost[0]')
  ctl_addr=$(printf '%s' "$ctl" | sed -n 's/.*(\\(.*\\))$/\\1/p')
  ctl_addr=${{ctl_addr:-$(getent ahostsv4 "${{ctl%%(*}}" | awk 'NR == 1 {{print $1}}')}}
  ctl_port=$(config_value SlurmctldPort)
  ctl_port=${{ctl_port%%-*}}
  if ! err=$(reach_once "$ctl_addr" "${{ctl_port:-6817}}"); then
    echo "FAIL $self -> ${{ctl%%(*}} ($ctl_addr) TCP ${{ctl_port:-6817}} (slurmctld): $err"
  fi
  slurmd_port=$(config_value SlurmdPort)
  for host in $hosts; do
    [ "$host" != "$self" ] || continue
    addr=$(addr_of "$host")
    if ! err=$(reach_once "$addr" "${{slurmd_port:-6818}}"); then
      echo "FAIL $self -> $host ($addr) TCP ${{slurmd_port:-6818}} (slurmd): $err"
    fi
  done
  echo "DONE $self"
}}

# --run HEAD NODES RPC_PORT MODEL_PORT: on the master
run_checks() {{
  local head=$1 nodes=$2 rpc=$3 model=$4 tag out done_file pid rc=0 line head_name head_addr err
  tag="$(date +%s)-$$"
  out="$log_dir/preflight_$tag.out"
  done_file="$work_dir/.preflight_$tag.done"
  mkdir -p "$log_dir"
  srun -p {q(layout.partition)} -N "$nodes" --ntasks-per-node=1 --immediate=120 --time=10 \\
    {me} --node "$head" "$rpc" "$model" "$done_file" >"$out" 2>&1 &
  pid=$!
  line=""
  for _ in $(seq 1 $((wait_s * 2))); do
    line=$(grep -m1 '^LISTENING ' "$out" || true)
    if [ -n "$line" ] || ! kill -0 "$pid" 2>/dev/null; then
      break
    fi
    sleep 1
  done
  if [ -n "$line" ] && [ "$(echo "$line" | awk '{{print $4}}')" != none ]; then
    # the model port on the head, from the master (where the gates and the clients come from)
    head_name=$(echo "$line" | awk '{{print $2}}')
    head_addr=$(echo "$line" | awk '{{print $3}}')
    if ! err=$(reach "$head_addr" "$model"); then
      echo "FAIL $(hostname -s) -> $head_name ($head_addr) TCP $model (the model endpoint): $err" >>"$out"
    fi
  elif [ -z "$line" ]; then
    echo "FAIL preflight: the head never started listening (see the srun output above)" >>"$out"
  fi
  # the head listens until every worker has tried its RPC port
  for _ in $(seq 1 $((wait_s * 3))); do
    if [ "$(grep -c '^RPC ' "$out")" -ge $((nodes - 1)) ] || ! kill -0 "$pid" 2>/dev/null; then
      break
    fi
    sleep 1
  done
  touch "$done_file"
  wait "$pid" || rc=$?
  rm -f "$done_file" "$done_file.listening" "$done_file.none"
  cat "$out"
  if [ "$rc" -ne 0 ] || grep -q '^FAIL ' "$out" || [ "$(grep -c '^DONE ' "$out")" -ne "$nodes" ]; then
    return 1
  fi
  echo "preflight: ok"
}}

case "${{1:-}}" in
  --node) node_checks "${{@:2}}" ;;
  --run) run_checks "${{@:2}}" ;;
  *) echo "usage: preflight.sh --run HEAD NODES RPC_PORT MODEL_PORT" >&2; exit 2 ;;
esac
"""


def render_watchdog_sh(layout: SlurmLayout) -> str:
    """`watchdog.sh` (a loop) or `watchdog.sh --once`: resume the partition's nodes that are
    DOWN for one of RESUMABLE_REASONS and whose slurmd answers again; one log line each."""
    layout.validate()
    reasons = "|".join(RESUMABLE_REASONS)
    return _header("resume watchdog: nodes Slurm set DOWN for not answering or rebooting go back to service once slurmd answers (run on the master)") + f"""\
set -euo pipefail
interval=${{KK3_WATCHDOG_INTERVAL_S:-{WATCHDOG_INTERVAL_S}}}

once() {{
  local node state reason
  # %T: the state, with a trailing '*' while the node does not answer; %E: the reason
  sinfo -h -N -p {q(layout.partition)} -t down -o '%N|%T|%E' | while IFS='|' read -r node state reason; do
    case "$state" in
      *'*') continue ;;         # slurmd still silent: nothing to do yet
      down) ;;                  # DOWN and answering again
      *) continue ;;            # drained, or down and draining: an operator's decision
    esac
    case "$reason" in
      {" | ".join(q(r) + "*" for r in RESUMABLE_REASONS)})
        if scontrol update NodeName="$node" State=RESUME; then
          echo "$(date -u +%Y-%m-%dT%H:%M:%SZ) resumed $node (was DOWN: $reason)"
        fi ;;
    esac
  done
}}

case "${{1:-}}" in
  --once) once ;;
  "") while :; do once || true; sleep "$interval"; done ;;
  *) echo "usage: watchdog.sh [--once]   (resumes nodes DOWN for: {reasons})" >&2; exit 2 ;;
esac
"""
