"""Issue 21 item 2: hostile API keys against the rendered check.sh and the printed curl line,
run by bash with the real curl (Debian's 7.88) against a real HTTP server on loopback.

The server records every request (path and headers). A key that injects curl configuration
makes curl fetch a second URL (`url = ...`) or write a file (`output = ...`); the canary test
shows the old form (`printf 'header = "..."' | curl -K -`) doing exactly that here, so the other
tests would see it. Keys outside the grammar never leave check.sh (exit 2, no request at all);
legitimate keys, `+`, `/`, `=`, `~` and `.` included, arrive verbatim in one Authorization
header.
"""

import base64
import http.server
import os
import secrets
import subprocess
import threading
import uuid

import pytest

from components.config import api_key
from components.ctyun_hcc.scripts import SlurmLayout, render_check_sh
from components.inference.curl import chat_curl
from tests.unit.test_render_slurm import _spec


class Recorder(http.server.ThreadingHTTPServer):
    def __init__(self):
        self.seen = []
        outer = self

        class H(http.server.BaseHTTPRequestHandler):
            def _answer(self):
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else b""
                outer.seen.append((self.command, self.path, self.headers.get_all("Authorization"),
                                   dict(self.headers), body))
                data = (b'{"object":"list","data":[{"id":"Kimi-K3"}]}' if self.path == "/v1/models"
                        else b'{"choices":[{"index":0}]}')
                self.send_response(200)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = _answer

            def log_message(self, *a):
                pass

        super().__init__(("127.0.0.1", 0), H)
        threading.Thread(target=self.serve_forever, daemon=True).start()
        self.base = f"http://127.0.0.1:{self.server_port}"


@pytest.fixture
def server():
    s = Recorder()
    yield s
    s.shutdown()


def hostile_keys(base, tmp):
    """Keys that try to add curl directives, headers or shell commands."""
    return [
        f'ab"\nurl = "{base}/evil',
        f'ab"\noutput = "{tmp}/pwned"\nurl = "{base}/evil',
        'x\nX-Injected: 1',
        'sk-\r\nX-Injected: 1',
        'back\\slash-key-0123456789abcdefgh',
        '"quoted"-key-0123456789abcdefghij',
        f'$(touch {tmp}/pwned)',
        f'`touch {tmp}/pwned`',
        'has space-0123456789abcdefghijklm',
        'tab\tkey-0123456789abcdefghijklmn',
        'é' * 40,
        'abc%0d%0aX-Injected:1',
        'abc===',
        '=abc',
        'a' * (api_key.MAX_LEN + 1),
    ]


LEGIT = [
    secrets.token_urlsafe(32), secrets.token_hex(16), str(uuid.uuid4()),
    base64.b64encode(b"\xfb\xff\xbe" + secrets.token_bytes(22)).decode(),  # + / and ==
    "sk-proj-" + secrets.token_urlsafe(40), "a.b~c_d-e+f/g" * 3 + "==",
]
#: test ids named by generator, not by the fresh random key (parallel workers each collect the
#: suite and must see the same ids)
LEGIT_IDS = ["token_urlsafe", "token_hex", "uuid4", "base64", "sk-proj", "url-safe-chars"]


def run_check(server, tmp_path, key, what="all"):
    work = tmp_path / "work"
    (work / "secrets").mkdir(parents=True, exist_ok=True)
    (work / "secrets" / "VLLM_API_KEY").write_text(key)
    _, spec = _spec(api_key=True)
    script = tmp_path / "check.sh"
    script.write_text(render_check_sh(spec, SlurmLayout(work_dir=str(work))))
    return subprocess.run(["bash", str(script), server.base, what], capture_output=True,
                          text=True, timeout=60, cwd=tmp_path,
                          env={"PATH": os.environ["PATH"], "LANG": "C.UTF-8"})


def test_canary_the_old_curl_config_form_was_injectable(server, tmp_path):
    """What check.sh did before issue 21, run here: the injected `url` is fetched."""
    key = f'ab"\nurl = "{server.base}/evil'
    subprocess.run(["bash", "-c", 'printf \'header = "Authorization: Bearer %s"\\n\' "$K" | '
                    'curl -fsS --max-time 10 -K - "$1" >/dev/null', "_", server.base + "/health"],
                   env={**os.environ, "K": key}, timeout=30)
    assert "/evil" in [p for _, p, *_ in server.seen]


@pytest.mark.parametrize("i", range(15))
def test_hostile_keys_never_leave_check_sh(server, tmp_path, i):
    key = hostile_keys(server.base, tmp_path)[i]
    assert api_key.problem(key, public=False) is not None  # the config refuses it too
    r = run_check(server, tmp_path, key)
    assert r.returncode == 2 and "does not hold a bearer token" in r.stderr, r.stderr
    assert server.seen == [] and not (tmp_path / "pwned").exists()
    assert key not in r.stdout + r.stderr


@pytest.mark.parametrize("key", LEGIT, ids=LEGIT_IDS)
def test_legitimate_keys_arrive_verbatim_in_one_header(server, tmp_path, key):
    assert api_key.problem(key, public=True) is None
    r = run_check(server, tmp_path, key)
    assert r.returncode == 0, r.stderr
    assert [(m, p) for m, p, *_ in server.seen] == [
        ("GET", "/health"), ("GET", "/v1/models"), ("POST", "/v1/chat/completions")]
    for _, _, auth, headers, _ in server.seen:
        assert auth == [f"Bearer {key}"] and "X-Injected" not in headers
    assert key not in r.stdout + r.stderr


def test_a_key_file_ending_in_a_newline_is_the_key(server, tmp_path):
    key = secrets.token_urlsafe(32)
    assert run_check(server, tmp_path, key + "\n", "health").returncode == 0
    assert server.seen[0][2] == [f"Bearer {key}"]


@pytest.mark.parametrize("key", LEGIT + ['sk-"quoted"\\back'], ids=LEGIT_IDS + ["quoted"])
def test_the_printed_line_sends_the_users_key_verbatim(server, tmp_path, key):
    """The user's own shell variable, whatever it holds (a key the grammar refuses too: the
    line must not alter it), reaches the server as one header; nothing else is fetched."""
    line = chat_curl(server.base + "/v1", "Kimi-K3", True, "hi", 8)
    r = subprocess.run(["bash", "-c", line], capture_output=True, text=True, timeout=30,
                       env={"PATH": os.environ["PATH"], "VLLM_API_KEY": key}, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert [(m, p, a) for m, p, a, *_ in server.seen] == [
        ("POST", "/v1/chat/completions", [f"Bearer {key}"])]


def test_the_printed_line_with_a_hostile_shell_value_fetches_nothing_else(server, tmp_path):
    key = f'ab"\noutput = "{tmp_path}/pwned"\nurl = "{server.base}/evil'
    line = chat_curl(server.base + "/v1", "Kimi-K3", True, "hi", 8)
    subprocess.run(["bash", "-c", line], capture_output=True, text=True, timeout=30,
                   env={"PATH": os.environ["PATH"], "VLLM_API_KEY": key}, cwd=tmp_path)
    assert [p for _, p, *_ in server.seen] == ["/v1/chat/completions"]
    assert not (tmp_path / "pwned").exists()
