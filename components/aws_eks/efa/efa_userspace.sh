#!/usr/bin/env bash
# kimi-k3 EFA userspace: unpack libfabric (efa provider), rdma-core's libraries and aws-ofi-nccl
# from AWS's EFA installer into a directory the serving container mounts at /opt/amazon.
#
# Runs as an init container in the serving image itself (its Ubuntu release picks the packages, and
# its dpkg-deb unpacks them), as vLLM's tools/install_efa_userspace.sh does at image build
# (vllm-project/vllm commit c648b8bc2766ab29f20855cd5e83d3bed4105748): the installer's packages are
# only unpacked, never installed over the image's rdma-core; efa_check.sh puts them on the library
# path of vLLM alone. The EFA kernel driver comes from the node (EKS-optimized AL2023 AMI).
# Every input is an environment variable:
#   KK3_EFA_INSTALLER_VERSION  e.g. 1.51.0 (digits and dots)
#   KK3_EFA_INSTALLER_URL      https://efa-installer.amazonaws.com/aws-efa-installer-<version>.tar.gz
#   KK3_EFA_INSTALLER_SHA256   optional: the tarball's sha256 (64 hex digits), checked when given
#   KK3_EFA_DEST               the directory to fill (an emptyDir)
#   KK3_OS_RELEASE, KK3_ARCH   where the distribution and architecture are read (tests only)
# Exit codes: 0 installed (or already there), 2 bad input, 5 the installer cannot serve this image.
set -euo pipefail

log() { printf '%s efa-userspace: %s\n' "$(date -u +%H:%M:%S)" "$*"; }
die() { local code=$1; shift; log "ERROR: $*"; exit "$code"; }

version=${KK3_EFA_INSTALLER_VERSION:-}
url=${KK3_EFA_INSTALLER_URL:-}
sha=${KK3_EFA_INSTALLER_SHA256:-}
dest=${KK3_EFA_DEST:-}
os_release=${KK3_OS_RELEASE:-/etc/os-release}
arch=${KK3_ARCH:-$(uname -m)}

[[ $version =~ ^[0-9]{1,3}(\.[0-9]{1,3}){1,3}$ ]] || die 2 "KK3_EFA_INSTALLER_VERSION must be a version such as 1.51.0"
[[ $url =~ ^https?://[A-Za-z0-9.:-]+(/[A-Za-z0-9._-]+)+\.tar\.gz$ ]] || die 2 "KK3_EFA_INSTALLER_URL must be an http(s) URL of a .tar.gz"
[[ -z $sha || $sha =~ ^[0-9a-f]{64}$ ]] || die 2 "KK3_EFA_INSTALLER_SHA256 must be 64 lower-case hex digits"
[[ $dest =~ ^/[A-Za-z0-9._/-]+$ && /$dest/ != */../* && $dest != / ]] || die 2 "KK3_EFA_DEST must be an absolute path"
[[ $arch =~ ^(x86_64|aarch64)$ ]] || die 5 "no EFA packages for architecture $arch"

done_marker="$dest/.kimi-k3-efa-$version"
if [[ -f $done_marker ]]; then
    log "EFA userspace $version already in $dest"
    exit 0
fi

# read, never sourced: ID=ubuntu and VERSION_ID="24.04" (os-release(5))
field() { sed -n "s/^$1=//p" "$os_release" | head -n 1 | tr -d '"'"'"; }
id=$(field ID)
release=$(field VERSION_ID)
[[ $id == ubuntu && $release =~ ^[0-9]{2}\.[0-9]{2}$ ]] \
    || die 5 "the serving image is ${id:-unknown} ${release:-}; kimi-k3 unpacks the EFA installer's Ubuntu packages only"
debs="aws-efa-installer/DEBS/UBUNTU${release//./}/$arch"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
log "downloading EFA installer $version from $url"
# python3 is in every vLLM image; curl may not be
python3 - "$url" "$work/efa.tar.gz" <<'PY'
import shutil, sys, urllib.request
with urllib.request.urlopen(sys.argv[1], timeout=60) as r, open(sys.argv[2], "wb") as f:
    shutil.copyfileobj(r, f, 1 << 20)
PY
if [[ -n $sha ]]; then
    got=$(sha256sum "$work/efa.tar.gz" | cut -d' ' -f1)
    [[ $got == "$sha" ]] || die 5 "the EFA installer's sha256 is $got, not KK3_EFA_INSTALLER_SHA256"
fi
tar -xzf "$work/efa.tar.gz" -C "$work"
[[ -d $work/$debs ]] || die 5 "the EFA installer $version has no packages for Ubuntu $release on $arch ($debs)"

# the packages vLLM's script unpacks: rdma-core's user-space libraries and providers, libfabric
# (with fi_info) and aws-ofi-nccl; each must be there exactly once
mkdir -p "$work/stage"
for want in rdma-core/libibverbs1 rdma-core/ibverbs-providers rdma-core/librdmacm1 \
            libfabric1-aws libfabric-aws-bin libnccl-ofi; do
    found=("$work/$debs/${want}"_*.deb)
    [[ ${#found[@]} == 1 && -f ${found[0]} ]] || die 5 "the EFA installer $version has no single ${want##*/} package for Ubuntu $release"
    dpkg-deb -x "${found[0]}" "$work/stage"
done

mkdir -p "$dest"
cp -a "$work/stage/opt/amazon/." "$dest/"
mkdir -p "$dest/efa/lib"
# every rdma-core library from the same build as libibverbs, next to libfabric
libdir="$work/stage/usr/lib/$arch-linux-gnu"
cp -a "$libdir"/lib*.so.1* "$dest/efa/lib/"
# providers are files or symlinks to ../lib<name>.so.1: point the links at the copies beside them
for f in "$libdir"/libibverbs/*-rdmav*.so; do
    [[ -e $f || -L $f ]] || continue
    if [[ -L $f ]]; then
        ln -sf "$(basename "$(readlink "$f")")" "$dest/efa/lib/$(basename "$f")"
    else
        cp -a "$f" "$dest/efa/lib/"
    fi
done

[[ -e $dest/efa/lib/libfabric.so.1 ]] || die 5 "the EFA installer $version unpacked no libfabric.so.1"
[[ -e $dest/ofi-nccl/lib/libnccl-net-ofi.so ]] || die 5 "the EFA installer $version unpacked no aws-ofi-nccl (ofi-nccl/lib/libnccl-net-ofi.so)"
printf 'version=%s\nurl=%s\n' "$version" "$url" >"$done_marker"
log "EFA userspace $version unpacked into $dest: libfabric, rdma-core libraries, aws-ofi-nccl"
