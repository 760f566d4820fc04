#!/bin/bash
# Start the real local services the CTyun bootstrap/service integration tests run against:
#   - sshd on 127.0.0.1:${KK3_SSH_PORT:-2222} with generated host and user keys (root login by key)
#   - munge + slurmctld in the root namespace + four slurmd "nodes" kk3n0..kk3n3, each in its own
#     network namespace with its own hostname, address 10.77.0.1{0..3} and a differently named NIC,
#     declaring GRES gpu:16 backed by mknod'd character devices.
# Installs openssh-server, slurm-wlm and munge with apt when missing (fails loudly).
# Idempotent: running it again with everything up changes nothing. Stop with stop.sh.
# Writes ${KK3_CI_DIR:-/tmp/kimi-k3-ci}/env.sh describing what it started.
set -euo pipefail

# The daemons started below must not inherit the caller's open files: run as
# `flock LOCK .ci/services/start.sh`, munged (which keeps what it inherits) would hold LOCK for as
# long as it runs, and every later `flock LOCK` would wait for ever. Keep stdin/out/err and the
# script itself (bash reads it from fd 255).
script=$(readlink -f "${BASH_SOURCE[0]}")
for fd in "/proc/$$/fd/"*; do
  fd=${fd##*/}
  if [ "$fd" -gt 2 ] && [ "$fd" -ne 255 ] && [ "$(readlink "/proc/$$/fd/$fd" 2>/dev/null)" != "$script" ]; then
    eval "exec $fd>&-" 2>/dev/null || true
  fi
done

dir=${KK3_CI_DIR:-/tmp/kimi-k3-ci}
ssh_port=${KK3_SSH_PORT:-2222}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
doubles=$(cd "$here/../../tests/doubles" && pwd)
host=$(hostname -s)
nodes=(kk3n0 kk3n1 kk3n2 kk3n3)
nics=(ens3 enp0s4 eth5 ib6)   # deliberately different per node: nothing may assume eno0
bridge=kk3br0
bridge_ip=10.77.0.1

if [ "$(id -u)" -ne 0 ]; then
  echo "start.sh must run as root (network namespaces, sshd, slurmd)" >&2
  exit 1
fi

# One start.sh at a time per KK3_CI_DIR: two at once would both see a daemon missing and start
# it twice, and race on the files they rewrite (slurm.conf.new, /etc/hosts, env.sh). The second
# waits here, then finds everything up and changes nothing. flock -o: the lock stays with the
# flock process, the script (and the daemons it starts) never holds it; the marker says this
# copy runs under it and is dropped at once, so no daemon inherits it.
if [ "${KK3_START_LOCKED:-}" != "$dir" ]; then
  mkdir -p "$dir/run"
  KK3_START_LOCKED=$dir exec flock -o "$dir/run/start.lock" bash "$script" "$@"
fi
unset KK3_START_LOCKED

need=()
for tool in sshd munged slurmctld slurmd sbatch ip nsenter unshare mknod curl wget mkfs.xfs mkfs.ext4 \
    losetup wipefs findmnt lsblk prometheus promtool systemd-analyze; do
  command -v "$tool" >/dev/null 2>&1 || need+=("$tool")
done
if [ "${#need[@]}" -gt 0 ]; then
  echo "installing openssh-server slurm-wlm munge and tools (missing: ${need[*]})"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq openssh-server slurm-wlm munge iproute2 util-linux mount xfsprogs \
    e2fsprogs curl wget >/dev/null
  # the dashboards' and alert rules' tests (tests/integration/test_observability_prometheus.py)
  # run Debian's Prometheus server and promtool themselves, on loopback ports of their own: the
  # package's own service (on :9090, where an init system starts it) is not wanted
  apt-get install -y -qq --no-install-recommends prometheus >/dev/null
  # systemd-analyze checks the units kimi-k3 installs on a CTyun master and nodes
  # (tests/unit/test_ctyun_metrics_units.py); systemd itself is never started here
  apt-get install -y -qq --no-install-recommends systemd >/dev/null
  if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet prometheus 2>/dev/null; then
    systemctl disable --now prometheus >/dev/null 2>&1 || true
  fi
fi
for tool in sshd munged slurmctld slurmd sbatch curl mkfs.xfs prometheus promtool systemd-analyze; do
  command -v "$tool" >/dev/null 2>&1 || { echo "FATAL: $tool still missing after apt-get" >&2; exit 1; }
done

mkdir -p "$dir"/{ssh,munge,slurm,dev,log,state,spool,run,home}
chmod 700 "$dir/ssh" "$dir/munge"

# ---- network: a bridge and one namespace per node ---------------------------------------------
if ! ip link show "$bridge" >/dev/null 2>&1; then
  ip link add "$bridge" type bridge
fi
ip addr replace "$bridge_ip/24" dev "$bridge"
ip link set "$bridge" up
for i in "${!nodes[@]}"; do
  n=${nodes[$i]} nic=${nics[$i]} addr="10.77.0.1$i"
  [ -e "/run/netns/$n" ] || ip netns add "$n"
  if ! ip link show "kk3v$i" >/dev/null 2>&1; then
    ip link add "kk3v$i" type veth peer name "$nic" netns "$n"
  fi
  ip link set "kk3v$i" master "$bridge" up
  nsenter --net="/run/netns/$n" ip link set lo up
  nsenter --net="/run/netns/$n" ip addr replace "$addr/24" dev "$nic"
  nsenter --net="/run/netns/$n" ip link set "$nic" up
  nsenter --net="/run/netns/$n" ip route replace default via "$bridge_ip"
done

# ---- names: every node and the controller/master resolve to their cluster address -----------
tmp=$(mktemp)
grep -v '# kimi-k3-ci$' /etc/hosts >"$tmp" || true
[ -z "$(tail -c1 "$tmp")" ] || echo >>"$tmp"
{
  echo "$bridge_ip kk3master # kimi-k3-ci"
  for i in "${!nodes[@]}"; do echo "10.77.0.1$i ${nodes[$i]} # kimi-k3-ci"; done
} >>"$tmp"
cat "$tmp" >/etc/hosts
rm -f "$tmp"

# ---- sshd with generated keys -------------------------------------------------------------------
[ -f "$dir/ssh/host_ed25519" ] || ssh-keygen -q -t ed25519 -N '' -f "$dir/ssh/host_ed25519"
[ -f "$dir/ssh/user_ed25519" ] || ssh-keygen -q -t ed25519 -N '' -f "$dir/ssh/user_ed25519"
cp "$dir/ssh/user_ed25519.pub" "$dir/ssh/authorized_keys"
# a password-only login (E-HPC's default is the root password): user kk3pw, password generated
if [ ! -f "$dir/ssh/password" ]; then
  (umask 077; head -c 18 /dev/urandom | base64 | tr -d '/+=' | sed 's/$/-Kk3/' >"$dir/ssh/password")
fi
id kk3pw >/dev/null 2>&1 || useradd -m -s /bin/bash kk3pw
echo "kk3pw:$(cat "$dir/ssh/password")" | chpasswd
chmod 600 "$dir/ssh/authorized_keys"
mkdir -p /run/sshd
# AuthorizedKeysFile: the CI user key, and each user's own ~/.ssh/authorized_keys (sshd's
# default, as on E-HPC nodes), where the HostKeyPin step installs the stack's login key.
# SetEnv SHLVL=1: sshd runs each command as `$SHELL -c CMD`, and bash sources ~/.bashrc for that
# when it is a top-level shell (shell_level < 2) started by sshd (bash's shell.c,
# run_startup_files; Debian builds bash with SSH_SOURCE_BASHRC). Root's ~/.bashrc here is this
# CI machine's own (pyenv and cargo set-up for its tools: 0.3-0.6 s a command, ~1000 commands a
# test run), not a cluster master's, and put pyenv's python3 before the system one on the
# commands' PATH. With SHLVL=1 that shell is at level 2 and sources nothing: the commands see
# the PATH below and none of this machine's set-up (what a site puts in a master's ~/.bashrc is
# not something the tests model).
cat >"$dir/ssh/sshd_config" <<CONF
Port $ssh_port
ListenAddress 127.0.0.1
HostKey $dir/ssh/host_ed25519
PidFile $dir/run/sshd.pid
AuthorizedKeysFile $dir/ssh/authorized_keys .ssh/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication yes
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
MaxStartups 50:30:100
MaxSessions 50
Subsystem sftp /usr/lib/openssh/sftp-server
SetEnv SHLVL=1 SLURM_CONF=$dir/slurm/slurm.conf PATH=$doubles/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin KK3_DOUBLES_LOG=$dir/log/doubles.log KK3_DOUBLES_STATE=$dir/state/doubles
CONF
running() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }
if running "$dir/run/sshd.pid"; then
  "$(command -v sshd)" -t -f "$dir/ssh/sshd_config" && kill -HUP "$(cat "$dir/run/sshd.pid")"
else
  "$(command -v sshd)" -f "$dir/ssh/sshd_config" -E "$dir/log/sshd.log"
fi

# ---- munge ----------------------------------------------------------------------------------------
if [ ! -f "$dir/munge/munge.key" ]; then
  dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
  chmod 400 "$dir/munge/munge.key"
fi
chown -R root:root "$dir/munge"
if ! running "$dir/run/munged.pid"; then
  munged --force -S "$dir/munge/munge.socket" --key-file="$dir/munge/munge.key" \
    --pid-file="$dir/run/munged.pid" --log-file="$dir/log/munged.log" --seed-file="$dir/munge/seed"
fi

# ---- slurm -----------------------------------------------------------------------------------------
for d in $(seq 0 15); do
  [ -c "$dir/dev/npu$d" ] || mknod "$dir/dev/npu$d" c 1 3
done
cat >"$dir/slurm/slurm.conf.new" <<CONF
ClusterName=kk3
SlurmctldHost=$host($bridge_ip)
SlurmctldPort=16817
SlurmdPort=16818
AuthType=auth/munge
# cred_expire (default 120 s) is also how long a requeued job waits before it starts again
# (slurm.conf(5), AuthInfo, Slurm 22.05.8 as Debian 12 ships it): the recovery test waits it
# out, so it is short here: 10 s, twice Slurm's floor (a value under 5 is refused and 120 used:
# SchedMD/slurm src/common/slurm_cred.c, _slurm_cred_init, slurm-22-05 branch, read 2026-12-02),
# still far longer than a credential takes from slurmctld to a slurmd on this machine.
# A change here needs the daemons restarted (stop.sh, then start.sh): reconfigure keeps it.
AuthInfo=socket=$dir/munge/munge.socket,cred_expire=10
CryptoType=crypto/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$dir/state/slurmctld
SlurmdSpoolDir=$dir/spool/%n
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd.%n.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
SchedulerType=sched/backfill
# a requeued job becomes startable once cred_expire has passed, an event no scheduler pass
# waits for: the backfill pass starts it (every bf_interval, default 30 s, min 1) or the main
# one (sched_interval, default 60 s) (slurm.conf(5), SchedulerParameters). The recovery test
# waited up to 30 s more for that pass; with four nodes and a handful of jobs a pass is cheap.
SchedulerParameters=bf_interval=2
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
ReturnToService=2
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
KillWait=5
MinJobAge=30
InactiveLimit=0
# how long slurmctld waits for a silent slurmd before marking it DOWN (slurm.conf(5); default 300):
# the recovery test kills one and waits for that. A live slurmd answers a ping in milliseconds,
# and runs in a session (an autogroup, sched(7)) of its own, so a busy test run does not starve
# it: 10 s is still long on a loaded CI machine (20 before; the test's wait went with it)
SlurmdTimeout=10
NodeName=kk3n0 NodeAddr=10.77.0.10 CPUs=1 RealMemory=500 Gres=gpu:16 State=UNKNOWN
NodeName=kk3n1 NodeAddr=10.77.0.11 CPUs=1 RealMemory=500 Gres=gpu:16 State=UNKNOWN
NodeName=kk3n2 NodeAddr=10.77.0.12 CPUs=1 RealMemory=500 Gres=gpu:16 State=UNKNOWN
NodeName=kk3n3 NodeAddr=10.77.0.13 CPUs=1 RealMemory=500 Gres=gpu:16 State=UNKNOWN
# as on a fresh E-HPC cluster: the compute nodes are in the queue, the "master" kk3n0 is not
# until the bootstrap runs the seed's launcher commands (the launcher double adds it)
PartitionName=batch Nodes=kk3n[1-3] Default=YES MaxTime=INFINITE State=UP
PartitionName=all Nodes=kk3n[0-3] Default=NO MaxTime=INFINITE State=UP
CONF
reconfigure=no
if ! cmp -s "$dir/slurm/slurm.conf.new" "$dir/slurm/slurm.conf"; then
  mv "$dir/slurm/slurm.conf.new" "$dir/slurm/slurm.conf"
  reconfigure=yes
else
  rm -f "$dir/slurm/slurm.conf.new"
fi
echo "NodeName=kk3n[0-3] Name=gpu File=$dir/dev/npu[0-15]" >"$dir/slurm/gres.conf"
# the galaxy launcher's config as the seed edits it (the path is an input of MasterInQueue)
[ -f "$dir/launcher.conf" ] || printf '[node]\nnoderole = server\n' >"$dir/launcher.conf"
mkdir -p "$dir/state/slurmctld"
for n in "${nodes[@]}"; do mkdir -p "$dir/spool/$n"; done
export SLURM_CONF=$dir/slurm/slurm.conf
if ! running "$dir/run/slurmctld.pid"; then
  # a fresh start: the doubles' per-host state (Apptainer instances, ...) described processes
  # of the previous run, none of which outlive a stop; kept, a record left by an interrupted run
  # would fail every later no-leftovers check of this one
  rm -rf "$dir/state/doubles"
  slurmctld -f "$SLURM_CONF"
elif [ "$reconfigure" = yes ]; then
  scontrol reconfigure
fi
for n in "${nodes[@]}"; do
  if ! running "$dir/run/slurmd.$n.pid"; then
    PATH="$doubles/bin:$PATH" KK3_DOUBLES_LOG="$dir/log/doubles.log" KK3_DOUBLES_STATE="$dir/state/doubles" \
      nsenter --net="/run/netns/$n" unshare --uts sh -c "hostname $n; exec slurmd -f '$SLURM_CONF' -N $n"
  fi
done

# ---- wait until the four nodes are up (idle, or running a job left by an earlier run) ---------------
for _ in $(seq 1 60); do
  idle=$(sinfo -h -N -p all -t idle,alloc,mix -o '%N' 2>/dev/null | sort -u | wc -l)
  [ "$idle" -eq 4 ] && break
  sleep 1
done
if [ "$idle" -ne 4 ]; then
  echo "FATAL: only $idle of 4 Slurm nodes came up" >&2
  sinfo -N -l >&2 || true
  tail -n 20 "$dir/log/slurmctld.log" >&2 || true
  exit 1
fi

cat >"$dir/env.sh" <<ENV
export KK3_CI_DIR=$dir
export KK3_SSH_HOST=127.0.0.1
export KK3_SSH_PORT=$ssh_port
export KK3_SSH_USER=root
export KK3_SSH_KEY=$dir/ssh/user_ed25519
export KK3_SSH_HOST_PUB=$dir/ssh/host_ed25519.pub
export KK3_SSH_PASSWORD_USER=kk3pw
export KK3_SSH_PASSWORD_FILE=$dir/ssh/password
export KK3_SSHD_LOG=$dir/log/sshd.log
export KK3_SLURM_NODES="${nodes[*]}"
export KK3_MASTER_HOST=kk3master
export SLURM_CONF=$SLURM_CONF
export KK3_DOUBLES_STATE=$dir/state/doubles
export KK3_DOUBLES_LOG=$dir/log/doubles.log
export KK3_LAUNCHER_CONF=$dir/launcher.conf
ENV
echo "services up: sshd 127.0.0.1:$ssh_port, slurm nodes ${nodes[*]} (env: $dir/env.sh)"
