#!/usr/bin/env bash
# kimi-k3 compile cache: keep vLLM's compile cache (VLLM_CACHE_ROOT) of a launch spec in S3.
#
#   compile_cache.sh restore   init container: copy the cache of this key and rank from S3 onto the
#                              node (if S3 has a complete one and the node does not)
#   compile_cache.sh save      sidecar: wait until the endpoint answers /health with 200, then, if
#                              S3 has no complete cache for this key and rank yet, upload it and
#                              write the marker last; then idle until the pod stops
# Inputs (environment only): KK3_CACHE_URI (s3://bucket/compile-cache), KK3_CACHE_KEY (16 hex:
# image, model and launch spec), KK3_RANK (node rank in the replica), KK3_CACHE_DIR (on the node
# NVMe, as mounted), KK3_HEALTH_HOST / KK3_HEALTH_PORT / KK3_HEALTH_PATH (save), KK3_POLL_S.
# A changed image, model or spec is a new key, so a stale cache is never reused.
set -euo pipefail

log() { printf '%s compile-cache: %s\n' "$(date -u +%H:%M:%S)" "$*"; }
die() { local code=$1; shift; log "ERROR: $*"; exit "$code"; }

mode=${1:-}
uri=${KK3_CACHE_URI:-}
key=${KK3_CACHE_KEY:-}
rank=${KK3_RANK:-0}
dir=${KK3_CACHE_DIR:-}
poll_s=${KK3_POLL_S:-15}
[[ $mode == restore || $mode == save ]] || die 2 "usage: compile_cache.sh restore|save"
[[ $uri =~ ^s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](/[A-Za-z0-9._=+-]+)*$ && /$uri/ != */../* ]] \
    || die 2 "KK3_CACHE_URI is not s3://bucket/prefix"
[[ $key =~ ^[0-9a-f]{16}$ ]] || die 2 "KK3_CACHE_KEY must be 16 hex digits"
[[ $rank =~ ^[0-9]{1,3}$ ]] || die 2 "KK3_RANK must be a node rank"
[[ $dir =~ ^/[A-Za-z0-9._/-]+$ && /$dir/ != */../* && $dir != / ]] || die 2 "KK3_CACHE_DIR must be an absolute path"
[[ $poll_s =~ ^[0-9]{1,4}$ && $poll_s -ge 1 ]] || die 2 "KK3_POLL_S must be 1 to 9999 seconds"
src="$uri/$key/rank-$rank/"
marker="$dir/.kimi-k3-restored"

in_s3() {  # 0 = the complete marker of this key and rank is in S3
    local out
    out=$(aws s3 ls "${src}.kimi-k3/complete" 2>&1) && return 0
    [[ -z $out || $out == *404* || $out == *NoSuchKey* ]] && return 1
    die 1 "cannot read $src: $out"
}

healthy() {  # one GET of the health path with bash's /dev/tcp (the image has no curl for sure)
    local status
    exec 3<>"/dev/tcp/$KK3_HEALTH_HOST/$KK3_HEALTH_PORT" 2>/dev/null || return 1
    printf 'GET %s HTTP/1.0\r\nHost: %s\r\n\r\n' "${KK3_HEALTH_PATH:-/health}" "$KK3_HEALTH_HOST" >&3
    IFS=' ' read -r -t 10 _ status _ <&3 || status=
    exec 3<&- 3>&-
    [[ $status == 200 ]]
}

mkdir -p "$dir"
if [[ $mode == restore ]]; then
    if [[ -f $marker ]]; then
        log "the node already holds the compile cache $key (rank $rank)"
    elif in_s3; then
        log "restoring the compile cache $key (rank $rank) from $src"
        aws s3 sync --only-show-errors --exclude '.kimi-k3/*' "$src" "$dir/"
        date -u +%FT%TZ >"$marker"
        log "restored: $(du -sh "$dir" | cut -f1)"
    else
        log "no compile cache $key (rank $rank) yet: vLLM compiles, and the sidecar saves it"
    fi
    exit 0
fi

# save: a sidecar, so it must never end the pod; errors are logged and it idles
[[ ${KK3_HEALTH_HOST:-} =~ ^[A-Za-z0-9.-]+$ ]] || die 2 "KK3_HEALTH_HOST must be a host name"
[[ ${KK3_HEALTH_PORT:-} =~ ^[0-9]{2,5}$ ]] || die 2 "KK3_HEALTH_PORT must be a port"
[[ ${KK3_HEALTH_PATH:-/health} =~ ^/[A-Za-z0-9._/-]*$ ]] || die 2 "KK3_HEALTH_PATH must be a path"
trap 'exit 0' TERM
until healthy; do
    sleep "$poll_s" & wait $!
done
if in_s3; then
    log "S3 already holds the compile cache $key (rank $rank); nothing to save"
elif [[ -z $(find "$dir" -mindepth 1 -maxdepth 1 ! -name '.kimi-k3*' -print -quit) ]]; then
    log "the compile cache directory is empty; nothing to save"
else
    log "the endpoint is healthy: saving the compile cache $key (rank $rank) to $src"
    if aws s3 sync --only-show-errors --exclude '.kimi-k3*' "$dir/" "$src" \
            && date -u +%FT%TZ | aws s3 cp --only-show-errors - "${src}.kimi-k3/complete"; then
        log "saved: $(du -sh "$dir" | cut -f1)"
    else
        log "saving the compile cache failed; the next start compiles again"
    fi
fi
while :; do sleep 3600 & wait $!; done
