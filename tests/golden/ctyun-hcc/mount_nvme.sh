#!/bin/bash
# mount the local NVMe disks (run as root on every node; safe to re-run)
# Rendered by kimi-k3 (components/ctyun_hcc/scripts.py); do not edit by hand.
set -euo pipefail
fs_type=xfs
fstab=${FSTAB:-/etc/fstab}

if [ "$(id -u)" -ne 0 ]; then
  echo "run as root" >&2
  exit 1
fi

mount_one() {
  local dev=$1 mnt=$2 fs uuid current
  if [ ! -b "$dev" ]; then
    echo "$dev: not a block device" >&2
    return 1
  fi
  mkdir -p "$mnt"
  fs=$(blkid -p -s TYPE -o value "$dev" || true)
  if [ -z "$fs" ]; then
    if [ -n "$(blkid -p -s PTTYPE -o value "$dev" || true)" ] || [ -n "$(wipefs --noheadings "$dev")" ] \
        || [ "$(lsblk -nro NAME "$dev" | wc -l)" -gt 1 ]; then
      echo "$dev: holds a partition table or other signature; refusing to format it" >&2
      return 1
    fi
    echo "$dev: empty; creating $fs_type"
    "mkfs.$fs_type" -q "$dev"
    fs=$fs_type
  else
    echo "$dev: already holds $fs; not formatting"
  fi
  uuid=$(blkid -p -s UUID -o value "$dev")
  current=$(findmnt -rno SOURCE --mountpoint "$mnt" || true)
  if [ -z "$current" ]; then
    mount -t "$fs" UUID="$uuid" "$mnt"
    echo "$dev: mounted on $mnt"
  elif [ "$(readlink -f "$current")" != "$(readlink -f "$dev")" ]; then
    echo "$mnt: already holds $current, not $dev" >&2
    return 1
  fi
  if ! grep -q "^UUID=$uuid " "$fstab"; then
    echo "UUID=$uuid $mnt $fs defaults,nofail 0 0" >>"$fstab"
    echo "$dev: added to $fstab"
  fi
}

while read -r dev mnt; do
  [ -n "$dev" ] || continue  # no disks in the layout: nothing to mount
  mount_one "$dev" "$mnt"
done <<'DISKS'
  /dev/nvme0n1 /mnt/nvme0n1
  /dev/nvme1n1 /mnt/nvme1n1
DISKS
echo "disks mounted"
