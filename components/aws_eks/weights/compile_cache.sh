#!/usr/bin/env bash
# kimi-k3 compile cache: keep vLLM's compile cache (VLLM_CACHE_ROOT) of a launch spec in S3.
#
#   compile_cache.sh restore   init container: copy the cache entry of this key and rank from S3
#                              onto the node (if S3 has one and the node does not), verified first
#   compile_cache.sh save      sidecar: wait until the endpoint answers /health with 200, then, if
#                              S3 has no entry for this key and rank yet, upload one; then idle
#                              until the pod stops
# Inputs (environment only): KK3_CACHE_URI (s3://bucket/compile-cache), KK3_CACHE_KEY (16 hex:
# image, model and launch spec), KK3_RANK (node rank in the replica), KK3_CACHE_DIR (on the node
# NVMe, as mounted), KK3_HEALTH_HOST / KK3_HEALTH_PORT / KK3_HEALTH_PATH (save), KK3_POLL_S.
# A changed image, model or spec is a new key, so a stale cache is never reused.
#
# An entry is written once and never replaced (the serving role cannot overwrite what another pod
# saved, and vLLM runs the Python a compile cache holds):
#   <uri>/<key>/rank-<r>/<attempt>/<files>            the cache, <attempt> 16 random hex digits
#   <uri>/<key>/rank-<r>/<attempt>/.kimi-k3/manifest  `sha256sum` lines of every file
#   <uri>/<key>/rank-<r>/.kimi-k3/entry               "attempt <id>" and "manifest <sha256>", last
# Every object is written with `If-None-Match: *` (S3 answers 412 when the key exists; the role's
# IAM grant allows no other write: components/aws_eks/weights/iam.py). The first entry written
# wins; a failed or losing attempt leaves only its own prefix. The restore takes only the files
# the manifest lists, each matching its sha256, or nothing at all (vLLM then compiles).
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
rest=${uri#s3://}
bucket=${rest%%/*}
base=""
[[ $rest == */* ]] && base="${rest#*/}/"
entry_prefix="${base}$key/rank-$rank/"   # object keys, without the bucket
src="s3://$bucket/$entry_prefix"
entry_key="${entry_prefix}.kimi-k3/entry"
marker="$dir/.kimi-k3-restored"
#: a cache file's path inside the entry: plain segments, never `.`/`..`, never kimi-k3's own
path_ok() { [[ $1 =~ ^[A-Za-z0-9_+=-][A-Za-z0-9._+=-]*(/[A-Za-z0-9_+=-][A-Za-z0-9._+=-]*)*$ && $1 != .kimi-k3* ]]; }

entry_exists() {  # 0 = the entry of this key and rank is in S3 (listed: a GET of a missing key is 403)
    local out
    out=$(aws s3 ls "s3://$bucket/$entry_key" 2>&1) && return 0
    [[ -z $out || $out == *404* || $out == *NoSuchKey* ]] && return 1
    die 1 "cannot read $src: $out"
}

put_once() {  # put_once <object key> <file>: create the object, never replace one (412 if it exists)
    aws s3api put-object --bucket "$bucket" --key "$1" --body "$2" --if-none-match '*' \
        --output text --query ETag >/dev/null
}

healthy() {  # one GET of the health path with bash's /dev/tcp (the image has no curl for sure)
    local status
    exec 3<>"/dev/tcp/$KK3_HEALTH_HOST/$KK3_HEALTH_PORT" 2>/dev/null || return 1
    printf 'GET %s HTTP/1.0\r\nHost: %s\r\n\r\n' "${KK3_HEALTH_PATH:-/health}" "$KK3_HEALTH_HOST" >&3
    IFS=' ' read -r -t 10 _ status _ <&3 || status=
    exec 3<&- 3>&-
    [[ $status == 200 ]]
}

# restore: every step checked; any doubt leaves the node without this entry (vLLM compiles)
refuse() { log "REFUSED the compile cache $key (rank $rank): $*; vLLM compiles instead"; exit 0; }

restore() {  # the listing of this key and rank ($1) shows the entry
    local listing=$1 text attempt want got f line entry_re
    work=$(mktemp -d)
    incoming="$dir/.kimi-k3-incoming"
    trap 'rm -rf "$work" "$incoming"' EXIT
    aws s3 cp --only-show-errors "s3://$bucket/$entry_key" "$work/entry" || refuse "its entry cannot be read"
    text=$(head -c 4096 "$work/entry")
    entry_re="^attempt ([0-9a-f]{16})"$'\n'"manifest ([0-9a-f]{64})\$"
    [[ $text =~ $entry_re ]] || refuse "its entry is not one kimi-k3 writes"
    attempt=${BASH_REMATCH[1]} want=${BASH_REMATCH[2]}
    # every object under the attempt, checked before a byte is downloaded (the AWS CLI also skips
    # keys that would leave the directory: awscli customizations/s3/s3handler.py
    # `_warn_parent_reference`)
    printf '%s\n' "$listing" | sed -n "s|^${entry_prefix}$attempt/||p" | LC_ALL=C sort >"$work/listed"
    while IFS= read -r f; do
        [[ $f == .kimi-k3/manifest ]] || path_ok "$f" || refuse "S3 holds a file name kimi-k3 does not write"
    done <"$work/listed"
    rm -rf "$incoming"
    mkdir -p "$incoming"
    aws s3 sync --only-show-errors "${src}$attempt/" "$incoming/" || refuse "the download failed"
    [[ -f $incoming/.kimi-k3/manifest ]] || refuse "it has no manifest"
    mv "$incoming/.kimi-k3/manifest" "$work/manifest"
    rmdir "$incoming/.kimi-k3" 2>/dev/null || refuse "S3 holds other files than its manifest lists"
    got=$(sha256sum "$work/manifest" | cut -d' ' -f1)
    [[ $got == "$want" ]] || refuse "its manifest's sha256 is $got, not the $want its entry records"
    : >"$work/paths"
    while IFS= read -r line; do
        f=${line:66}
        if ! [[ $line =~ ^[0-9a-f]{64}\ \  ]] || ! path_ok "$f"; then
            refuse "its manifest holds a line kimi-k3 does not write"
        fi
        printf '%s\n' "$f" >>"$work/paths"
    done <"$work/manifest"
    [[ -s $work/paths ]] || refuse "its manifest lists no file"
    LC_ALL=C sort "$work/paths" -o "$work/paths"
    (cd "$incoming" && find . -type f -o -type l) | sed 's|^\./||' | LC_ALL=C sort >"$work/got"
    grep -vx '\.kimi-k3/manifest' "$work/listed" >"$work/listed-files" || true
    if ! cmp -s "$work/paths" "$work/listed-files" || ! cmp -s "$work/paths" "$work/got"; then
        refuse "S3 holds other files than its manifest lists"
    fi
    (cd "$incoming" && sha256sum --quiet --strict -c "$work/manifest") >"$work/check" 2>&1 \
        || refuse "a file does not match its sha256 ($(head -n 1 "$work/check"))"
    cp -rlf "$incoming/." "$dir/"
    printf '%s\n' "$key" >"$marker"
    log "restored and verified $(wc -l <"$work/paths") files: $(du -sh "$dir" | cut -f1)"
}

save() {
    local attempt dest out
    if [[ -z $(find "$dir" -mindepth 1 -maxdepth 1 ! -name '.kimi-k3*' -print -quit) ]]; then
        log "the compile cache directory is empty; nothing to save"
        return 0
    fi
    # a copy, so that the manifest and the uploaded bytes are the same bytes while vLLM may still
    # write to its cache
    work="$dir/.kimi-k3-outgoing"
    rm -rf "$work"
    mkdir -p "$work/files"
    trap 'rm -rf "$work"' EXIT
    (cd "$dir" && find . -mindepth 1 -maxdepth 1 ! -name '.kimi-k3*' -exec cp -a {} "$work/files/" \;) \
        || { log "not saving: the cache could not be copied"; return 0; }
    (cd "$work/files" && find . -type f) | sed 's|^\./||' | LC_ALL=C sort >"$work/paths"
    while IFS= read -r f; do
        path_ok "$f" || { log "not saving: the cache holds a file name kimi-k3 does not upload ($f)"; return 0; }
    done <"$work/paths"
    # one PutObject takes up to 5 GB (S3 User Guide, "Uploading objects"); multipart is not allowed
    if [[ -n $(find "$work/files" -type f -size +5368709120c -print -quit) ]]; then
        log "not saving: the cache holds a file over 5 GB, more than one PutObject takes"
        return 0
    fi
    (cd "$work/files" && tr '\n' '\0' <"$work/paths" | xargs -0 sha256sum --) >"$work/manifest"
    mkdir -p "$work/files/.kimi-k3"
    cp "$work/manifest" "$work/files/.kimi-k3/manifest"
    attempt=$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')
    dest="${entry_prefix}$attempt/"
    log "the endpoint is healthy: saving the compile cache $key (rank $rank) to $src$attempt/"
    # the files and their manifest, 8 uploads at a time; each a new object (If-None-Match), never
    # a replacement; the entry only after all of them
    if ! (cd "$work/files" && { cat "$work/paths"; echo .kimi-k3/manifest; } | tr '\n' '\0' \
            | xargs -0 -P 8 -I{} aws s3api put-object --bucket "$bucket" --key "$dest{}" --body "{}" \
                --if-none-match '*' --output text --query ETag >/dev/null); then
        log "saving the compile cache failed; the next start compiles again"
        return 0
    fi
    printf 'attempt %s\nmanifest %s\n' "$attempt" "$(sha256sum "$work/manifest" | cut -d' ' -f1)" >"$work/entry"
    if out=$(put_once "$entry_key" "$work/entry" 2>&1); then
        log "saved $(wc -l <"$work/paths") files: $(du -sh "$work/files" | cut -f1) (entry: attempt $attempt)"
    elif [[ $out == *PreconditionFailed* || $out == *412* ]]; then
        log "another pod saved the compile cache $key (rank $rank) first; its entry stands"
    else
        log "saving the compile cache failed ($out); the next start compiles again"
    fi
}

mkdir -p "$dir"
if [[ $mode == restore ]]; then
    if [[ -f $marker && $(head -c 64 "$marker") == "$key" ]]; then
        log "the node already holds the compile cache $key (rank $rank)"
    elif ! listing=$(aws s3api list-objects-v2 --bucket "$bucket" --prefix "$entry_prefix" \
            --query 'Contents[].[Key]' --output text 2>&1); then
        die 1 "cannot list $src: $listing"
    elif printf '%s\n' "$listing" | grep -qxF "$entry_key"; then
        log "restoring the compile cache $key (rank $rank) from $src"
        restore "$listing"
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
if entry_exists; then
    log "S3 already holds the compile cache $key (rank $rank); nothing to save"
else
    save || log "saving the compile cache failed; the next start compiles again"
    rm -rf "$dir/.kimi-k3-outgoing"
fi
while :; do sleep 3600 & wait $!; done
