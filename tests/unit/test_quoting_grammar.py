"""The quoting functions and grammars (issue 10), checked against the outside rules they claim:
bash's own reading of a word, and Kubernetes' `$(VAR)` expansion as its source defines it."""

import subprocess

import pytest
from hypothesis import given, settings, strategies as st

from components.config.keys import aws_provider_keys, check_namespaces, edit_distance
from components.config import values as grammar
from components.inference.errors import ConfigError
from components.inference.quoting import (
    QuotingError,
    ere_literal,
    json_text,
    k8s_literal,
    k8s_shell_command,
    shell_word,
)
from tests.doubles.k8s_expansion import expand

TEXT = st.text(st.characters(blacklist_characters="\0", blacklist_categories=("Cs",)), max_size=40)


@settings(max_examples=60, deadline=None)
@given(TEXT)
def test_shell_word_is_read_back_by_bash_as_itself(value):
    out = subprocess.run(["bash", "-c", f"printf '%s' {shell_word(value)}"],
                         capture_output=True, env={"PATH": "/usr/bin:/bin"})
    assert out.stdout.decode("utf-8", "surrogateescape") == value


@settings(max_examples=300, deadline=None)
@given(TEXT, st.dictionaries(st.from_regex(r"[A-Z_]{1,6}", fullmatch=True), TEXT, max_size=3))
def test_k8s_literal_survives_expansion_whatever_is_defined(value, env):
    assert expand(k8s_literal(value), env) == value


def test_k8s_expansion_model_matches_the_documented_examples():
    # core/v1 Container.args: "$(VAR_NAME)" expanded, "$$(VAR_NAME)" the literal, unknown kept
    env = {"VAR_NAME": "v", "HF_TOKEN": "hf_secret"}
    assert expand("$(VAR_NAME)", env) == "v"
    assert expand("$$(VAR_NAME)", env) == "$(VAR_NAME)"
    assert expand("$(UNKNOWN)", env) == "$(UNKNOWN)"
    assert expand("a$b$", env) == "a$b$"
    assert expand("$(HF_TOKEN", env) == "$(HF_TOKEN"
    assert expand("$(HF_TOKEN)", env) == "hf_secret"  # what an unescaped model name would serve
    assert expand(k8s_literal("$(HF_TOKEN)"), env) == "$(HF_TOKEN)"


def test_k8s_shell_command_keeps_the_script_literal():
    script = "echo $(HF_TOKEN) $$ ${X}"
    cmd = k8s_shell_command(script)
    assert cmd[:2] == ["sh", "-c"] and expand(cmd[2], {"HF_TOKEN": "t"}) == script


def test_nul_cannot_be_quoted():
    for fn in (shell_word, k8s_literal):
        with pytest.raises(QuotingError):
            fn("a\0b")


def test_json_text_and_ere_literal():
    assert json_text({"model": 'a"b'}) == '{"model":"a\\"b"}'
    with pytest.raises(ValueError):
        json_text({"x": float("nan")})
    pattern = ere_literal('"K3.x[1]^$"')
    for text, hit in (('"K3.x[1]^$"', True), ('"K3yx[1]^$"', False)):
        res = subprocess.run(["grep", "-Eq", pattern], input=text, text=True)
        assert (res.returncode == 0) is hit


@pytest.mark.parametrize("value", ["Kimi-K3", "moonshotai/Kimi-K3", "kimi-k3:w4a8", "K3.1_b"])
def test_served_model_names_accepted(value):
    assert grammar.served_model_name("k", value) == value


@pytest.mark.parametrize("value", ["K3$(touch${IFS}x)", "$(HF_TOKEN)", "a b", "K3;id", "a//b", "a/",
                                   "/abs", "-flag", "K3'", 'K3"', "K3`id`", "K3\nid", "x" * 129, ""])
def test_served_model_names_refused(value):
    with pytest.raises(ConfigError, match="^k="):
        grammar.served_model_name("k", value)


@pytest.mark.parametrize("value, norm", [("/home/kimi-k3", "/home/kimi-k3"),
                                         ("/mnt//nvme1n1/model/", "/mnt/nvme1n1/model")])
def test_data_paths_normalised(value, norm):
    assert grammar.data_path("kimi-k3:workDir", value) == norm


@pytest.mark.parametrize("value", ["//", "/.", "/", "/etc", "/home/../etc", "/home/./x", "/home",
                                   "relative", "/home/a b", "/home/$(id)", "/usr/local/x", "/root/x",
                                   "/tmp/x", "/mnt/*"])
def test_data_paths_refused_with_the_key(value):
    with pytest.raises(ConfigError) as e:
        grammar.data_path("kimi-k3:modelRoot", value)
    assert e.value.key == "kimi-k3:modelRoot"


# "2_2" is 22, as in every integer key (only ports refused it before)
@pytest.mark.parametrize("value", ["²", "99999", "0", "22a", "-1", " ", "2__2", "٢٢"])
def test_ports_refused(value):
    with pytest.raises(ConfigError, match="kimi-k3:sshPort"):
        grammar.port("kimi-k3:sshPort", value)


def test_host_key_pins():
    key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl"
    assert grammar.host_key_pin("k", key + " root@host") == key
    fp = "SHA256:" + "A" * 43
    assert grammar.host_key_pin("k", fp + "=") == fp
    for bad in ("ssh-ed25519", "AAAA", "ssh-dss AAAA", "SHA256:short", key + "'; id"):
        with pytest.raises(ConfigError):
            grammar.host_key_pin("k", bad)


# ---- namespaces ----------------------------------------------------------------------------------
@pytest.mark.parametrize("key", ["kimik3:nodes", "kimi_k3:nodes", "Kimi-K3:nodes", "kimi-k:nodes",
                                 "ctyn:rootPassword", "ct-yun:regionId", "cytun:azName",
                                 "asw:region"])
def test_misspelt_namespaces_refused_without_their_value(key):
    with pytest.raises(ConfigError) as e:
        check_namespaces(["kimi-k3:target", key])
    assert e.value.key == key and "<not shown>" in str(e.value) and "looks like" in str(e.value)


@pytest.mark.parametrize("key", ["kimi-k3:", "ctyun:", ":nodes", ":", " :x", "kimi-k3: "])
def test_an_empty_namespace_or_key_is_refused_not_ignored(key):
    """`--set kimi-k3:=x` or `--set :x=1` was read by no parser and planned as if not given."""
    with pytest.raises(ConfigError, match="has an empty namespace or key") as e:
        check_namespaces(["kimi-k3:target", key])
    assert e.value.key == key and "<not shown>" in str(e.value)


def test_aws_keys_near_misses_refused_provider_keys_pass():
    keys = aws_provider_keys()
    assert keys and {"region", "profile", "defaultTags", "skipCredentialsValidation"} <= keys
    check_namespaces(["aws:region", "aws:profile", "aws:defaultTags", "kubernetes:context",
                      "eks:x", "awsx:y", "random:z", "pulumi:tags"])
    for bad in ("aws:regoin", "aws:Region", "aws:regions", "aws:notAKey"):
        with pytest.raises(ConfigError) as e:
            check_namespaces([bad])
        assert e.value.key == bad
    with pytest.raises(ConfigError, match="did you mean aws:region"):
        check_namespaces(["aws:regoin"])


def test_edit_distance_counts_a_swap_once():
    assert edit_distance("ctyun", "ctyun") == 0
    assert edit_distance("ctyn", "ctyun") == 1
    assert edit_distance("cytun", "ctyun") == 1
    assert edit_distance("eks", "aws") == 2


@settings(max_examples=100, deadline=None)
@given(TEXT, st.booleans())
def test_chat_curl_is_one_command_whose_body_parses_back(model, key):
    import json
    import shlex

    from components.inference.curl import chat_curl
    line = chat_curl("http://h:8000/v1", model, key, "hi", 8)
    # with a key: printf's header line piped into curl -H @- (inference/curl.py)
    pipe = "printf 'Authorization: Bearer %s\\n' \"$VLLM_API_KEY\" | curl -H @- "
    assert line.startswith(pipe if key else "curl ")
    argv = shlex.split(line[len(pipe) - len("curl -H @- "):] if key else line)
    assert argv[:3] == (["curl", "-H", "@-"] if key else ["curl", "-sS", "http://h:8000/v1/chat/completions"])
    assert json.loads(argv[argv.index("-d") + 1])["model"] == model
