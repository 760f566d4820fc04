"""How a key reaches curl, and the one-line `curl` a user copies from the stack outputs (pure).

`curl_with_bearer(var)` is the one way kimi-k3 hands an API key to curl, in the scripts it runs
(ctyun_hcc/scripts.py: check.sh) and in the lines it prints: the key, held in a shell variable,
is written by `printf` (a bash builtin: never in a process list) as one header line to curl's
standard input, which `-H @-` reads ("This option can take an argument in @filename style,
which then adds a header for each line in the input file. Using @- makes curl read the header
file from stdin. (Added in 7.55.0)", curl/curl docs/cmdline-opts/header.md, tag curl-8_21_0).
A header line is sent verbatim, so `"` and `\\` arrive unchanged. The earlier form, a curl
config (`-K -`) line `header = "Authorization: Bearer KEY"`, let a key with a quote and a line
break add directives of its own (`url`, `output`: curl wrote a file of the key's choosing) and
rewrote `\\` escapes (curl docs/cmdline-opts/config.md; src/tool_parsecfg.c `unslashquote`).
The key grammar (config/api_key.py) keeps line breaks out, so the line is one header, and
check.sh checks the key file against the same grammar before it is used.

The printed line's body is built with `json_text` and every word is a `shell_word`, so no
configured value (the served model name, the endpoint) can end the quotes; the key is read from
the user's own shell (`$VLLM_API_KEY`), never printed.
"""

from __future__ import annotations

import re

from ..config.api_key import BEARER_TOKEN_ERE
from .quoting import json_text, shell_word

__all__ = ["BEARER_TOKEN_ERE", "chat_curl", "curl_with_bearer"]


def curl_with_bearer(var: str) -> str:
    """Shell text `printf 'Authorization: Bearer %s\\n' "$VAR" | curl -H @-`: append curl's
    other arguments (which must not read stdin: no `-d @-`, no `-K -`)."""
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", var):
        raise ValueError(f"{var!r} is not a shell variable name")
    return f"printf 'Authorization: Bearer %s\\n' \"${var}\" | curl -H @-"


def chat_curl(endpoint: str, served_model_name: str, api_key: bool, prompt: str,
              max_tokens: int, pin: str = "") -> str:
    """`pin` (`sha256//<base64>`): a self-signed endpoint's public key, which curl then checks
    instead of a CA. curl/curl docs/cmdline-opts/pinnedpubkey.md (commit 0060f16a924d): when the
    key "does not exactly match ... curl aborts the connection before sending or receiving any
    data", and the option "is independent of option --insecure. If you use both options
    together then the peer is still verified by public key"; sha256 pins since 7.44.0."""
    body = json_text({"model": served_model_name,
                      "messages": [{"role": "user", "content": prompt}],
                      "max_tokens": int(max_tokens)})
    curl = curl_with_bearer("VLLM_API_KEY") if api_key else "curl"
    tls = f" -k --pinnedpubkey {shell_word(pin)}" if pin else ""
    return (f"{curl}{tls} -sS {shell_word(endpoint.rstrip('/') + '/chat/completions')}"
            f" -H 'Content-Type: application/json' -d {shell_word(body)}")
