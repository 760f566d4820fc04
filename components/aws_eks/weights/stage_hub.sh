#!/usr/bin/env bash
# kimi-k3 stage from the hub: `hf download` of the model onto this node's NVMe, in the vLLM image
# (which carries huggingface_hub's `hf`). Used when the weights source is the hub, and as the
# fallback of a node the S3 mirror was not complete for (stage.sh leaves no marker then).
# Inputs (environment only): KK3_REPO_ID, KK3_REVISION (default main), KK3_DEST, HF_TOKEN
# (optional, from the Secret), KK3_HUB_WORKERS (default 16).
set -euo pipefail

log() { printf '%s stage-hub: %s\n' "$(date -u +%H:%M:%S)" "$*"; }
die() { local code=$1; shift; log "ERROR: $*"; exit "$code"; }

repo=${KK3_REPO_ID:-}
revision=${KK3_REVISION:-main}
dest=${KK3_DEST:-}
workers=${KK3_HUB_WORKERS:-16}
[[ $repo =~ ^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$ ]] || die 2 "KK3_REPO_ID is not owner/name"
[[ $revision =~ ^[A-Za-z0-9][A-Za-z0-9._/-]*$ && $revision != *..* ]] || die 2 "KK3_REVISION is not a revision"
[[ $dest =~ ^/[A-Za-z0-9._/-]+$ && /$dest/ != */../* && $dest != / ]] || die 2 "KK3_DEST must be an absolute path"
[[ $workers =~ ^[0-9]{1,3}$ && $workers -ge 1 ]] || die 2 "KK3_HUB_WORKERS must be 1 to 999"
book="$dest/.kimi-k3"
if [[ -f $book/staged ]]; then
    log "already staged on this node ($(head -n1 "$book/staged")); nothing to do"
    exit 0
fi
mkdir -p "$book"
log "downloading $repo@$revision from the hub to $dest ($workers workers)"
start=$(date +%s)
hf download "$repo" --revision "$revision" --local-dir "$dest" --max-workers "$workers"
printf 'source=hub\nrepo=%s\nrevision=%s\n' "$repo" "$revision" >"$book/staged.tmp"
mv "$book/staged.tmp" "$book/staged"
log "staged from the hub in $(( $(date +%s) - start )) s; marker $book/staged"
