#!/bin/bash
# check the endpoint: check.sh [BASE_URL] [health|models|chat|all]
# Rendered by kimi-k3 (components/ctyun_hcc/scripts.py); do not edit by hand.
set -euo pipefail
base=${1:-http://127.0.0.1:11025}
what=${2:-all}
key_file=/home/kimi-k3/secrets/VLLM_API_KEY
model=Kimi-K3
use_key=no

key=""
if [ "$use_key" = yes ]; then
  key=$(cat "$key_file")
  # the grammar of kimi-k3:apiKey (RFC 6750 b64token); C locale: ranges are ASCII only
  if ! (LC_ALL=C; [[ $key =~ ^[A-Za-z0-9._~+/-]{1,1024}={0,2}$ ]]); then
    echo "check.sh: $key_file does not hold a bearer token (RFC 6750 characters); not sent" >&2
    exit 2
  fi
fi

call() {
  # the key goes to curl as a header line on stdin (-H @-), never argv, never curl config
  if [ "$use_key" = yes ]; then
    printf 'Authorization: Bearer %s\n' "$key" | curl -H @- -fsS --max-time 60 "$@"
  else
    curl -fsS --max-time 60 "$@"
  fi
}

health() {
  call -o /dev/null "$base"/health
  echo "health: ok"
}

models() {
  local out
  out=$(call "$base/v1/models")
  if ! printf '%s' "$out" | grep -E '"id" *: *"Kimi-K3"' >/dev/null; then
    echo "models: $model not served: $out" >&2
    return 1
  fi
  echo "models: $model listed"
}

chat() {
  local out
  out=$(call -H 'Content-Type: application/json' "$base/v1/chat/completions" \
    -d '{"model":"Kimi-K3","messages":[{"role":"user","content":"Reply with one word: ready"}],"max_tokens":16,"temperature":0}')
  if ! printf '%s' "$out" | grep '"choices"' >/dev/null; then
    echo "chat: no completion: $out" >&2
    return 1
  fi
  echo "chat: $out"
}

case "$what" in
  health) health ;;
  models) models ;;
  chat) chat ;;
  all) health && models && chat ;;
  *) echo "usage: check.sh [BASE_URL] [health|models|chat|all]" >&2; exit 2 ;;
esac
