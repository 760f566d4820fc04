#!/usr/bin/env bash
# kimi-k3 EFA check: runs in the serving container of every node of a multi-node replica, then
# execs the command it is given (`vllm serve ...`). Without NCCL_NET, NCCL falls back to TCP sockets
# without a word when it finds no network plugin; the pods set NCCL_NET=Libfabric (efa/transport.py),
# so NCCL fails instead, and this check stops first with the reason, naming what is missing:
#   - the EFA devices the pod requested (/dev/infiniband/uverbs*, from the EFA device plugin);
#   - libfabric (efa/lib/libfabric.so.1) and aws-ofi-nccl (libnccl-net-ofi.so) under the prefix;
#   - libfabric's efa provider seeing a device (fi_info -p efa), when fi_info is there.
# It prepends libfabric's and the plugin's directories to LD_LIBRARY_PATH (keeping the image's).
# Inputs (environment): KK3_EFA_DEVICES (the pod's vpc.amazonaws.com/efa), KK3_EFA_PREFIX
# (default /opt/amazon), KK3_EFA_DEV_DIR (default /dev/infiniband; tests only).
# Exit codes: 2 bad input, 3 EFA is not usable here; otherwise the command's own.
set -euo pipefail

log() { printf '%s efa-check: %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() { local code=$1; shift; log "ERROR: $*"; exit "$code"; }

want=${KK3_EFA_DEVICES:-}
prefix=${KK3_EFA_PREFIX:-/opt/amazon}
dev_dir=${KK3_EFA_DEV_DIR:-/dev/infiniband}
[[ $want =~ ^[0-9]{1,3}$ && $want -ge 1 ]] || die 2 "KK3_EFA_DEVICES must be the number of EFA devices the pod requested"
[[ $prefix =~ ^/[A-Za-z0-9._/-]+$ && /$prefix/ != */../* ]] || die 2 "KK3_EFA_PREFIX must be an absolute path"
[[ $dev_dir =~ ^/[A-Za-z0-9._/-]+$ ]] || die 2 "KK3_EFA_DEV_DIR must be an absolute path"
(( $# > 0 )) || die 2 "no command to run after the check"

shopt -s nullglob
devices=("$dev_dir"/uverbs*)
(( ${#devices[@]} >= want )) || die 3 "EFA devices absent: $dev_dir has ${#devices[@]} uverbs devices, the pod requested $want (vpc.amazonaws.com/efa); check that the EFA device plugin runs on this node and that its launch template has the EFA interfaces; or set kimi-k3:interNodeTransport=tcp"

lib="$prefix/efa/lib"
[[ -e $lib/libfabric.so.1 ]] || die 3 "libfabric missing: no $lib/libfabric.so.1 (the EFA userspace is neither in the image nor installed by the efa-userspace init container)"
plugin=
for d in "$prefix/ofi-nccl/lib" "$prefix/aws-ofi-nccl/lib" /opt/aws-ofi-nccl/install/lib; do
    if [[ -e $d/libnccl-net-ofi.so ]]; then plugin=$d; break; fi
done
[[ -n $plugin ]] || die 3 "aws-ofi-nccl missing: no libnccl-net-ofi.so under $prefix/ofi-nccl/lib, $prefix/aws-ofi-nccl/lib or /opt/aws-ofi-nccl/install/lib; NCCL (NCCL_NET=Libfabric) would fail to initialise its network (without NCCL_NET it would fall back to TCP sockets)"
export LD_LIBRARY_PATH="$lib:$plugin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

if [[ -x $prefix/efa/bin/fi_info ]]; then
    if ! out=$("$prefix/efa/bin/fi_info" -p efa -t FI_EP_RDM 2>&1); then
        die 3 "libfabric's efa provider finds no EFA device: $(head -n 1 <<<"$out")"
    fi
fi
if [[ -r /proc/meminfo ]] && grep -q '^HugePages_Total: *0$' /proc/meminfo; then
    log "warning: the node has no 2 MiB huge pages (libfabric's efa provider then uses normal pages)"
fi
log "EFA ready: ${#devices[@]} devices, libfabric in $lib, aws-ofi-nccl in $plugin; NCCL's log should say 'Using network Libfabric'"
exec "$@"
