"""The one-line `curl` a user copies from the stack outputs to try the endpoint (pure).

Both targets print it. The request body is built with `json_text` and every word is a
`shell_word`, so no configured value (the served model name, the endpoint) can end the quotes.
The API key is read from the user's own shell (`$VLLM_API_KEY`), never printed.
"""

from __future__ import annotations

from .quoting import json_text, shell_word


def chat_curl(endpoint: str, served_model_name: str, api_key: bool, prompt: str,
              max_tokens: int) -> str:
    body = json_text({"model": served_model_name,
                      "messages": [{"role": "user", "content": prompt}],
                      "max_tokens": int(max_tokens)})
    auth = ' -H "Authorization: Bearer $VLLM_API_KEY"' if api_key else ""
    return (f"curl -sS {shell_word(endpoint.rstrip('/') + '/chat/completions')}"
            f" -H 'Content-Type: application/json'{auth} -d {shell_word(body)}")
