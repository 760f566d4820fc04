#!/usr/bin/env bash
# kimi-k3 stage: copy the model weights from S3 onto this node's NVMe, verified and resumable.
#
# Runs in the GPU pods' init container (the AWS CLI's own image: bash, coreutils and `aws`).
# Every input is an environment variable (never pasted into shell text):
#   KK3_S3_URI          s3://bucket/prefix holding the weights (re-checked against the grammar)
#   KK3_DEST            directory on the node's NVMe (as mounted in the pod), e.g. /models/Kimi-K3
#   KK3_REQUIRE_MARKER  1 (default): the prefix is kimi-k3's mirror and must hold
#                       .kimi-k3/complete + manifest.tsv; 0: any prefix (your own bucket), checked
#                       against its own listing
#   KK3_ON_INCOMPLETE   what to do when the mirror is not complete yet: "fallback" (exit 0 without
#                       the node marker, so the next init container stages from the hub), "wait"
#                       (poll every KK3_WAIT_POLL_S, up to KK3_WAIT_S) or "fail" (exit 4)
#   KK3_S3_CONCURRENCY  parallel ranged GETs (classic client), default 64
#   KK3_S3_CHUNK_MB     part size of the ranged GETs, default 64
#   KK3_S3_CLIENT       crt | classic | auto (AWS CLI v2's preferred_transfer_client; unset = the
#                       CLI's default; AWS CLI v1 has no such setting)
#   KK3_S3_TARGET_GBPS  the CRT client's target_bandwidth in Gb/s (unset = the CLI's default)
#   KK3_S3_MAX_BANDWIDTH_MBPS  classic client's max_bandwidth in MB/s (tests throttle with it)
#   KK3_PROGRESS_S      seconds between progress lines, default 30
#   KK3_CHECK_ONLY      1: only check (and, with "wait", wait) that the mirror is complete, copy
#                       nothing (vLLM streams from the bucket itself)
# The node keeps its bookkeeping in $KK3_DEST/.kimi-k3/: `manifest.tsv` (what was staged) and
# `staged` (a copy of the mirror's completion marker), written last, after every file's size was
# checked against the manifest. A pod on a node that already holds the same staged copy does
# nothing. Exit codes: 0 staged / already staged / handed to the hub, 2 bad input,
# 3 verification failed, 4 mirror not complete (fail mode), other = the AWS CLI's error.
set -euo pipefail

log() { printf '%s stage: %s\n' "$(date -u +%H:%M:%S)" "$*"; }
die() { local code=$1; shift; log "ERROR: $*"; exit "$code"; }
num() { [[ $2 =~ ^[0-9]+$ && $2 -ge $3 && $2 -le $4 ]] || die 2 "$1 must be an integer from $3 to $4"; }
tenths() { local t=$(( $1 / 100000000 )); printf '%d.%d' $(( t / 10 )) $(( t % 10 )); }

uri=${KK3_S3_URI:-}
dest=${KK3_DEST:-}
require_marker=${KK3_REQUIRE_MARKER:-1}
on_incomplete=${KK3_ON_INCOMPLETE:-fail}
concurrency=${KK3_S3_CONCURRENCY:-64}
chunk_mb=${KK3_S3_CHUNK_MB:-64}
client=${KK3_S3_CLIENT:-}
target_gbps=${KK3_S3_TARGET_GBPS:-}
max_bw=${KK3_S3_MAX_BANDWIDTH_MBPS:-}
progress_s=${KK3_PROGRESS_S:-30}
check_only=${KK3_CHECK_ONLY:-0}
wait_s=${KK3_WAIT_S:-0}
wait_poll_s=${KK3_WAIT_POLL_S:-30}

# the grammar of components/aws_eks/weights/s3uri.py (SHELL_ERE), plus no "." / ".." segments
[[ $uri =~ ^s3://([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])(/[A-Za-z0-9._=+-]+)*/?$ ]] \
    || die 2 "KK3_S3_URI is not s3://bucket/prefix"
bucket=${BASH_REMATCH[1]}
[[ /${uri#s3://}/ != */./* && /${uri#s3://}/ != */../* ]] || die 2 "KK3_S3_URI has a . or .. segment"
prefix=${uri#s3://"$bucket"}
prefix=${prefix#/}
prefix=${prefix%/}
src="s3://$bucket/${prefix:+$prefix/}"
[[ $check_only == 0 || $check_only == 1 ]] || die 2 "KK3_CHECK_ONLY must be 0 or 1"
if [[ $check_only == 1 && -z $dest ]]; then
    dest=/nonexistent  # nothing is written
fi
[[ $dest =~ ^/[A-Za-z0-9._/-]+$ && /$dest/ != */../* && /$dest/ != */./* && $dest != / ]] \
    || die 2 "KK3_DEST must be an absolute path of letters, digits and ._-/"
dest=${dest%/}
[[ $require_marker == 0 || $require_marker == 1 ]] || die 2 "KK3_REQUIRE_MARKER must be 0 or 1"
[[ $on_incomplete =~ ^(fallback|wait|fail)$ ]] || die 2 "KK3_ON_INCOMPLETE must be fallback, wait or fail"
num KK3_S3_CONCURRENCY "$concurrency" 1 1024
num KK3_S3_CHUNK_MB "$chunk_mb" 5 5120
num KK3_PROGRESS_S "$progress_s" 1 3600
num KK3_WAIT_S "$wait_s" 0 604800
num KK3_WAIT_POLL_S "$wait_poll_s" 1 3600
[[ -z $client || $client =~ ^(crt|classic|auto)$ ]] || die 2 "KK3_S3_CLIENT must be crt, classic or auto"
[[ -z $target_gbps ]] || num KK3_S3_TARGET_GBPS "$target_gbps" 1 3200
[[ -z $max_bw ]] || num KK3_S3_MAX_BANDWIDTH_MBPS "$max_bw" 1 100000

book="$dest/.kimi-k3"
work=$(mktemp -d)
reporter=
cleanup() { [[ -z $reporter ]] || kill "$reporter" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

# the AWS CLI's S3 transfer settings, in a config file of our own (credentials still come from
# the pod's identity: EKS Pod Identity or IRSA environment variables)
export AWS_CONFIG_FILE="$work/aws-config"
{
    echo "[default]"
    echo "s3 ="
    echo "  max_concurrent_requests = $concurrency"
    echo "  max_queue_size = $(( concurrency * 16 ))"
    echo "  multipart_threshold = ${chunk_mb}MB"
    echo "  multipart_chunksize = ${chunk_mb}MB"
    [[ -z $client ]] || echo "  preferred_transfer_client = $client"
    [[ -z $target_gbps ]] || echo "  target_bandwidth = ${target_gbps}Gb/s"
    [[ -z $max_bw ]] || echo "  max_bandwidth = ${max_bw}MB/s"
} >"$AWS_CONFIG_FILE"

# fetch one bookkeeping object; 0 = fetched, 1 = it does not exist, otherwise die with the error.
# Whether it exists is asked by listing its key (ListObjectsV2, Prefix = the key), never by the
# GET itself: without s3:ListBucket in the GET's own request context S3 answers a missing key 403,
# not 404 (S3 API Reference, GetObject "Permissions"), and the pod's role may list only under its
# prefix (components/aws_eks/weights/iam.py). The first key listed under a key is that key if it
# exists (keys list in UTF-8 binary order).
# Credentials may not be there for the first seconds of a fresh node (the EKS Pod Identity agent
# can start after the pod: aws/eks-pod-identity-agent#159): those errors are retried for a minute.
fetch() {
    local err="$work/fetch.err" try key=${1#s3://"$bucket"/} first
    for try in 1 2 3 4 5 6 7 8 9 10; do
        if first=$(aws s3api list-objects-v2 --bucket "$bucket" --prefix "$key" --page-size 1 \
                --max-items 1 --query 'Contents[0].Key' --output text 2>"$err"); then
            [[ $first == "$key" ]] || return 1
            aws s3 cp --only-show-errors "$1" "$2" 2>"$err" && return 0
            grep -qE '404|NoSuchKey|Not Found|does not exist' "$err" && return 1  # deleted since
        fi
        grep -qiE 'locate credentials|retrieving credentials|169\.254\.170\.23|connect timeout' "$err" || break
        log "no credentials yet (try $try/10); retrying in 6 s"
        sleep 6
    done
    die 1 "cannot read $1: $(tr '\n' ' ' <"$err")"
}

# sizes of the staged files against a manifest ("size<TAB>digest<TAB>path" lines); prints problems
check_sizes() {
    local manifest=$1 size path have bad=0
    while IFS=$'\t' read -r size _ path; do
        [[ -z $size || $size == \#* ]] && continue
        if [[ ! -f $dest/$path ]]; then
            (( bad < 10 )) && log "missing $path"
            bad=$(( bad + 1 ))
            continue
        fi
        have=$(stat -c %s -- "$dest/$path")
        if [[ $have != "$size" ]]; then
            (( bad < 10 )) && log "$path has $have bytes, the manifest says $size"
            bad=$(( bad + 1 ))
        fi
    done <"$manifest"
    return $(( bad > 0 ))
}

# ---------------------------------------------------------------- what the source holds
if [[ $require_marker == 1 ]]; then
    waited=0
    until fetch "${src}.kimi-k3/complete" "$work/complete"; do
        case $on_incomplete in
            fallback)
                log "the mirror $src is not complete yet; leaving this node to the hub download"
                exit 0 ;;
            fail)
                die 4 "the mirror $src is not complete (no .kimi-k3/complete); is the mirror Job done?" ;;
        esac
        (( waited < wait_s )) || die 4 "the mirror $src is still not complete after ${wait_s} s"
        log "waiting for the mirror $src to complete (${waited}/${wait_s} s)"
        sleep "$wait_poll_s"
        waited=$(( waited + wait_poll_s ))
    done
    fetch "${src}.kimi-k3/manifest.tsv" "$work/manifest.tsv" \
        || die 3 "the mirror $src has a completion marker but no manifest"
    want=$(sed -n 's/^manifest_sha256=//p' "$work/complete")
    got=$(sha256sum "$work/manifest.tsv" | cut -d' ' -f1)
    [[ -n $want && $want == "$got" ]] || die 3 "the mirror's manifest does not match its completion marker"
else
    # your own bucket: its listing is the manifest ("size<TAB>etag:<etag><TAB>path")
    aws s3api list-objects-v2 --bucket "$bucket" ${prefix:+--prefix "$prefix/"} \
        --query 'Contents[].[Size,ETag,Key]' --output text >"$work/listing" \
        || die 1 "cannot list $src"
    : >"$work/manifest.tsv"
    while IFS=$'\t' read -r size etag key; do
        [[ $size == None || -z $key ]] && continue
        path=${key#"${prefix:+$prefix/}"}
        [[ $path == .kimi-k3/* || $path == */ ]] && continue
        printf '%s\tetag:%s\t%s\n' "$size" "${etag//\"/}" "$path" >>"$work/manifest.tsv"
    done <"$work/listing"
    [[ -s $work/manifest.tsv ]] || die 3 "no objects under $src"
    printf 'source=%s\nmanifest_sha256=%s\n' "$src" "$(sha256sum "$work/manifest.tsv" | cut -d' ' -f1)" \
        >"$work/complete"
fi

files=0 total=0
while IFS=$'\t' read -r size _ path; do
    [[ -z $size || $size == \#* ]] && continue
    [[ $size =~ ^[0-9]+$ ]] || die 3 "the manifest has a bad size for $path"
    [[ -n $path && $path != /* && /$path/ != */../* && $path != .kimi-k3/* ]] \
        || die 3 "the manifest names an unsafe path"
    files=$(( files + 1 )) total=$(( total + size ))
done <"$work/manifest.tsv"

if [[ $check_only == 1 ]]; then
    log "the mirror $src is complete: $files files, $(tenths "$total") GB; vLLM reads it directly"
    exit 0
fi

# ---------------------------------------------------------------- already on this node?
if [[ -f $book/staged && -f $book/manifest.tsv ]] && cmp -s "$book/staged" "$work/complete" \
        && check_sizes "$book/manifest.tsv" >/dev/null; then
    log "already staged on this node: $files files, $(tenths "$total") GB in $dest; nothing to do"
    exit 0
fi

# ---------------------------------------------------------------- copy
mkdir -p "$book"
rm -f "$book/staged"  # from here on, this node holds no verified copy until the end
log "staging $files files, $(tenths "$total") GB from $src to $dest"
start=$(date +%s)
report() {
    # its own sleep is killed with it, so no child keeps the container's stdout open
    local napper=
    trap '[[ -z $napper ]] || kill "$napper" 2>/dev/null; exit 0' TERM
    while :; do
        sleep "$progress_s" & napper=$!
        wait "$napper" || true
        have=$(du -sb --exclude=.kimi-k3 "$dest" 2>/dev/null | cut -f1)
        el=$(( $(date +%s) - start )); (( el > 0 )) || el=1
        log "progress $(tenths "$have")/$(tenths "$total") GB ($(( have * 100 / (total > 0 ? total : 1) ))%), $(tenths $(( have / el ))) GB/s"
    done
}
report &
reporter=$!
# --delete: files of an older revision (or temporary files of an interrupted copy) would be
# loaded by vLLM's *.safetensors glob; the node copy is exactly the prefix's content
aws s3 sync --no-progress --delete --exclude '.kimi-k3/*' "$src" "$dest/"
kill "$reporter" 2>/dev/null || true
reporter=

if ! check_sizes "$work/manifest.tsv"; then
    die 3 "the staged copy in $dest does not match the manifest of $src (see above); not marking it staged"
fi
el=$(( $(date +%s) - start )); (( el > 0 )) || el=1
cp "$work/manifest.tsv" "$book/manifest.tsv.tmp" && mv "$book/manifest.tsv.tmp" "$book/manifest.tsv"
cp "$work/complete" "$book/staged.tmp" && mv "$book/staged.tmp" "$book/staged"
log "staged $files files, $(tenths "$total") GB in ${el} s ($(tenths $(( total / el ))) GB/s); marker $book/staged"
