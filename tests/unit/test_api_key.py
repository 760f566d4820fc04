"""`kimi-k3:apiKey`: the RFC 6750 grammar, the strength floor for public endpoints, refusals that
never show the key, and check.sh's shell twin of the grammar agreeing with it."""

import secrets
import subprocess
import uuid

import pytest
from hypothesis import given, settings, strategies as st

from components.config import api_key
from components.inference.errors import ConfigError

GENERATED = [secrets.token_urlsafe(32), secrets.token_hex(16), str(uuid.uuid4()),
             "sk-proj-" + secrets.token_urlsafe(30), "dGhpcyBpcyBhIGJhc2U2NCBrZXkgb2YgMzIrIGNoYXJz+/=="]


@pytest.mark.parametrize("key", GENERATED,   # ids fixed: parallel workers collect the same ids
                         ids=["token_urlsafe", "token_hex", "uuid4", "sk-proj", "base64"])
def test_real_generators_pass_even_for_public_endpoints(key):
    assert api_key.check(key, public=True) == key


@pytest.mark.parametrize("key", [
    'ab"\nurl = "http://x/evil', "a\nb", "a\rb", "a b", "a\tb", 'a"b', "a\\b", "a'b", "$(id)",
    "`id`", "a%0a", "é", "a\x00b", "a\x1bb", "=abc", "abc===", "a=b", "", "a" * 1025,
    "line1\nline2",  # `openssl rand -base64 64` wraps at 64 characters
])
def test_keys_outside_the_grammar_are_refused_without_being_shown(key):
    with pytest.raises(ConfigError) as e:
        api_key.check(key, public=False)
    text = str(e.value)
    assert text.startswith("kimi-k3:apiKey=<not shown>") and "token_urlsafe" in text
    assert (key not in text) if len(key) > 3 else True
    assert text.count("\n") == 0


@pytest.mark.parametrize("key,words", [
    ("a", "1 characters"), ("abc123", "6 characters"), ("x" * 31 + "y", "32 characters, 2 different"),
    ("ab" * 20, "2 different"), ("1234567" * 6, "7 different")])
def test_weak_keys_are_refused_only_for_public_endpoints(key, words):
    assert api_key.check(key, public=False) == key
    with pytest.raises(ConfigError, match="too weak for an endpoint open to public addresses") as e:
        api_key.check(key, public=True)
    assert words in str(e.value)


def test_no_key_is_no_key():
    assert api_key.check(None, public=True) is None


ALPHABET = st.sampled_from(list("aZ09._~+/-=") + list(" \"'\\\n\r\t$`%é\x1b;:#@!"))


@settings(max_examples=60, deadline=None)
@given(st.text(ALPHABET, min_size=0, max_size=12))
def test_the_shell_grammar_of_check_sh_agrees(text):
    """check.sh tests the key file with BEARER_TOKEN_ERE under bash in the C locale."""
    r = subprocess.run(["bash", "-c", '(LC_ALL=C; [[ $1 =~ ' + api_key.BEARER_TOKEN_ERE + " ]])",
                        "_", text], env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"})
    python_ok = bool(text) and api_key.problem(text, public=False) is None
    assert (r.returncode == 0) == python_ok, repr(text)
