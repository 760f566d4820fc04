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
    if grep -qxF "repo=$repo" "$book/staged" && grep -qxF "revision=$revision" "$book/staged"; then
        log "already staged on this node ($repo@$revision); nothing to do"
        exit 0
    fi
    # another model or revision (kimi-k3:modelRevision changed): never served as this one
    log "this node holds $(grep -m1 '^revision=' "$book/staged" || echo 'another copy'); downloading $repo@$revision over it"
    rm -f "$book/staged"
fi
mkdir -p "$book"
# The revision resolved to its commit first, so an unknown one (or an unreachable hub) fails
# here: `hf download` itself (huggingface_hub 2.4.0, snapshot_download) answers a 404 listing
# with "Returning existing local_dir ... as remote repo cannot be accessed" and exit 0, even for
# an empty directory, which would be marked staged.
commit=$(python3 -c 'import os; from huggingface_hub import HfApi
print(HfApi().model_info(os.environ["KK3_REPO_ID"], revision=os.environ.get("KK3_REVISION") or "main").sha)' \
    2>"$book/resolve.err") && [[ $commit =~ ^[0-9a-f]{40}$ ]] \
    || { tail -n 3 "$book/resolve.err" >&2; die 3 "the hub has no $repo@$revision (or cannot be reached)"; }
log "downloading $repo@$revision (commit $commit) from the hub to $dest ($workers workers)"
start=$(date +%s)
hf download "$repo" --revision "$commit" --local-dir "$dest" --max-workers "$workers" 2>"$book/download.err" \
    || { cat "$book/download.err" >&2; die 3 "hf download of $repo@$commit failed"; }
cat "$book/download.err" >&2
if grep -q "cannot be accessed" "$book/download.err"; then
    die 3 "hf download could not list $repo@$commit and kept what $dest held; not marking it staged"
fi
printf 'source=hub\nrepo=%s\nrevision=%s\ncommit=%s\n' "$repo" "$revision" "$commit" >"$book/staged.tmp"
mv "$book/staged.tmp" "$book/staged"
log "staged from the hub in $(( $(date +%s) - start )) s; marker $book/staged"
