"""The `curl` line both targets print is a command a user can paste into a shell and it sends
the chat request vLLM expects.

Each line is run by a real shell (bash, and dash as a POSIX sh) with a stub `curl` (and stub
`kubectl`/`sleep` for the AWS port-forward form) first on PATH that records the argv it receives,
NUL-separated. The body is checked against the OpenAI chat-completions request that vLLM's
server parses (`ChatCompletionRequest` in vLLM 0.33.0's
`vllm/entrypoints/openai/chat_completion/protocol.py`: top-level fields as listed in
tests/doubles/vllm_openai.py KNOWN_FIELDS; a user message is `{"role": "user", "content": str}`,
`max_tokens` an integer). The API key is read from the user's shell variable, never printed.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from components.inference.curl import chat_curl
from tests.doubles.vllm_openai import KNOWN_FIELDS

SHELLS = ("bash", "dash")
#: records argv (NUL-separated) and, when told to read header lines from stdin (`-H @-`), stdin
RECORD = ('#!/bin/sh\nprintf "%s\\0" "$@" > "$KK3_ARGV_DIR/$(basename "$0")"\n'
          'for a in "$@"; do [ "$a" = @- ] && cat > "$KK3_ARGV_DIR/$(basename "$0").stdin"; done\n'
          'exit 0\n')
AWKWARD = ["Kimi-K3", "Kimi's-K3", 'say "hi"', "a$(touch $KK3_ARGV_DIR/pwned)", "`touch x`",
           "x; rm -rf ~", "back\\slash", "模型 K3", "tab\there"]
#: a key a user may well hold: the shell must pass it as one word, unexpanded further
KEY = "sk-a b$HOME'\"`x`"


@pytest.fixture(scope="module")
def stubs(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("stubs")
    for name in ("curl", "kubectl", "sleep"):
        (d / name).write_text(RECORD)
        (d / name).chmod(0o755)
    return d


def paste(line: str, stubs: Path, tmp_path: Path, shell: str = "bash", key: str = KEY) -> dict:
    """Run `line` as a user's shell would (then wait for what it started in the background);
    the argv each stub received, by stub name."""
    env = {"PATH": f"{stubs}:{os.environ['PATH']}", "KK3_ARGV_DIR": str(tmp_path),
           "VLLM_API_KEY": key, "HOME": str(tmp_path)}
    r = subprocess.run([shell, "-c", line + "\nwait"], env=env, cwd=tmp_path, capture_output=True,
                       text=True, timeout=20)
    assert r.returncode == 0, r.stderr
    got = {p.name: p.read_bytes().decode().split("\0")[:-1] for p in tmp_path.iterdir()
           if not p.name.endswith(".stdin")}
    got.update({p.name: p.read_text() for p in tmp_path.glob("*.stdin")})
    assert "pwned" not in got and not (tmp_path / "x").exists()
    return got


def chat_body(argv) -> dict:
    assert argv.count("-d") == 1
    body = json.loads(argv[argv.index("-d") + 1])
    assert set(body) <= KNOWN_FIELDS
    return body


@pytest.mark.parametrize("shell", SHELLS)
@pytest.mark.parametrize("model", AWKWARD)
def test_the_pasted_line_sends_one_chat_request_with_the_users_key(stubs, tmp_path, shell, model):
    line = chat_curl("http://10.0.0.5:8000/v1", model, True, model, 48)
    got = paste(line, stubs, tmp_path, shell)
    argv = got["curl"]
    # the key reaches curl as one header line on stdin (issue 21: never curl config, never argv)
    assert argv == ["-H", "@-", "-sS", "http://10.0.0.5:8000/v1/chat/completions",
                    "-H", "Content-Type: application/json", "-d", argv[-1]]
    assert got["curl.stdin"] == f"Authorization: Bearer {KEY}\n"
    assert chat_body(argv) == {"model": model, "messages": [{"role": "user", "content": model}],
                               "max_tokens": 48}
    assert KEY not in line


@pytest.mark.parametrize("shell", SHELLS)
def test_without_a_key_no_authorization_header_and_nothing_else_is_sent(stubs, tmp_path, shell):
    argv = paste(chat_curl("https://k3.example.com/v1", "Kimi-K3", False, "hi", 8),
                 stubs, tmp_path, shell)["curl"]
    assert argv == ["-sS", "https://k3.example.com/v1/chat/completions",
                    "-H", "Content-Type: application/json", "-d", argv[-1]]
    assert chat_body(argv) == {"model": "Kimi-K3", "messages": [{"role": "user", "content": "hi"}],
                               "max_tokens": 8}


@pytest.mark.parametrize("endpoint,url", [
    ("http://h:8000/v1/", "http://h:8000/v1/chat/completions"),
    ("http://h:8000/v1//", "http://h:8000/v1/chat/completions"),
    ("http://h:8000/v1", "http://h:8000/v1/chat/completions"),
    ("http://K3-BOX/", "http://K3-BOX/chat/completions")])
def test_an_endpoint_with_a_trailing_slash_reaches_the_same_path(stubs, tmp_path, endpoint, url):
    argv = paste(chat_curl(endpoint, "m", False, "hi", 8), stubs, tmp_path)["curl"]
    assert argv[1] == url


def test_max_tokens_is_a_json_integer():
    body = json.loads(chat_curl("http://h/v1", "m", False, "hi", 64.0).split(" -d ", 1)[1][1:-1])
    assert body["max_tokens"] == 64 and isinstance(body["max_tokens"], int)


def test_the_targets_lines(stubs, tmp_path):
    from components.aws_eks.target import curl_line as aws_line
    from components.ctyun_hcc.target import curl_line as hcc_line

    got = paste(hcc_line("http://192.0.2.7:8000/v1", "Kimi-K3", True), stubs, tmp_path)
    argv = got["curl"]
    assert argv[3] == "http://192.0.2.7:8000/v1/chat/completions"
    assert chat_body(argv)["messages"] == [{"role": "user", "content": "Who are you?"}]
    assert got["curl.stdin"] == f"Authorization: Bearer {KEY}\n"
    (tmp_path / "curl.stdin").unlink()

    pf = "kubectl -n kimi-k3 port-forward svc/kimi-k3-api 8000:8000"
    got = paste(aws_line("http://127.0.0.1:8000/v1", "Kimi-K3", False, pf), stubs, tmp_path)
    assert got["kubectl"] == ["-n", "kimi-k3", "port-forward", "svc/kimi-k3-api", "8000:8000"]
    assert got["sleep"] == ["2"]
    assert got["curl"][1] == "http://127.0.0.1:8000/v1/chat/completions"
    assert chat_body(got["curl"]) == {"model": "Kimi-K3", "max_tokens": 32,
                                      "messages": [{"role": "user", "content": "Say hello"}]}
